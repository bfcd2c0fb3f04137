/*
 * global_shm.h - what the cross-host tier does with a table's shared
 * page: its accessors.  The page's bytes (struct tk_global_shm, its
 * fields and counters) are shm/layout_global.h's, with the rest of the
 * segment's layout.  Every field is read and written only through
 * shm/atomic.h; readers clamp what they use (the page is never trusted).
 */
#ifndef TKSHM_GLOBAL_GLOBAL_SHM_H
#define TKSHM_GLOBAL_GLOBAL_SHM_H

#include <stdint.h>

#include "shm/atomic.h"
#include "shm/layout.h"

/* The live host count last read from Redis, or `fallback` (the policy's
 * hosts) when none was read or the value is out of range (the region is
 * never trusted). */
static inline double
tk_global_hosts(struct tk_global_shm *g, double fallback)
{
	/* Relaxed: a hint read on its own. */
	uint64_t h = tk_load_relaxed(&g->hosts);

	return h >= 1 && h <= 1000000 ? (double)h : fallback;
}

/* Counters are statistics: relaxed, as the table's shard counters. */
static inline void
tk_gcount(struct tk_global_shm *g, enum tk_gcounter c, uint64_t n)
{
	/* relaxed: a tally; nothing is ordered by it. */
	(void)tk_fetch_add_relaxed(&g->c[c], n);
}

#endif /* TKSHM_GLOBAL_GLOBAL_SHM_H */
