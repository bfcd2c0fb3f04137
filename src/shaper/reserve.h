/*
 * reserve.h - the shaper's reservation and its sleep (reserve.c), on
 * arguments the caller has checked: the public calls that take them
 * (tkshm_reserve, tkshm_schedule) are src/api/shaper_api.c's.
 */
#ifndef TKSHM_SHAPER_RESERVE_H
#define TKSHM_SHAPER_RESERVE_H

#include <time.h>

#include "shm/table.h"
#include "tkshm.h"

/* What follows the arguments' checks (tkshm_check_at's, in its order):
 * the table's kind, then the handle's mode.  TKSHM_OK, TKSHM_ENOTSUP or
 * TKSHM_EREADONLY. */
static inline int
tk_reserve_check_table(const struct tkshm_table *t)
{
	if (t->algo.kind != TKSHM_KIND_LEAKY_BUCKET)
		return TKSHM_ENOTSUP;
	if (t->readonly)
		return TKSHM_EREADONLY;
	return TKSHM_OK;
}

/* A reservation in the table itself, whatever its mode (arguments
 * already valid): a local table's, and the strict shaper's safe share
 * (src/redis/strict.c). */
int tk_reserve_ref(struct tkshm_table *t, const struct tk_keyref *k,
		   double cost, double now, tkshm_reservation *out);

/* tkshm_schedule's wait for an accepted reservation `out`: sleeps until
 * `start` (CLOCK_MONOTONIC, read before the reservation) plus
 * out->wait_ms.  TKSHM_OK once the departure is reached; TKSHM_EINTR,
 * with out->wait_ms the time still to wait, when a signal handler
 * interrupted the sleep; TKSHM_ESYSTEM (errno set) if the clock cannot be
 * slept on. */
int tk_schedule_wait(struct timespec start, tkshm_reservation *out);

#endif /* TKSHM_SHAPER_RESERVE_H */
