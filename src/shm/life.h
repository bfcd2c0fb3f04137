/*
 * life.h - the table's live word, writer word and in-place policy records
 * (protocol.h, L1; life.c).
 */
#ifndef TKSHM_SHM_LIFE_H
#define TKSHM_SHM_LIFE_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/algorithm.h"
#include "shm/layout.h"
#include "tkshm.h"

struct tkshm_table;

/* The mapping of one attach, shared by the instances made from it
 * (life_api.c): unmapped when the last one lets go. */
struct tk_mapping {
	uint8_t *base;
	size_t size;
	uint64_t refs; /* process-local, atomic */
};

/* True when a policy change from (a, pa) to (b, pb) can be made in place:
 * the same kind, state words, layout and cross-host mode. */
bool tk_algo_same_shape(const struct tk_algo *a, const tkshm_policy *pa,
			const struct tk_algo *b, const tkshm_policy *pb);

/* The policy of generation `gen`, read from its record and validated
 * against the table's shape.  TKSHM_EBUSY: the record is being rewritten
 * (reload the live word); TKSHM_ECORRUPT: it does not validate. */
int tk_life_read_policy(const struct tkshm_table *t, uint64_t gen,
			tkshm_policy *p, struct tk_algo *algo);

/* Takes the table's writer word, waiting up to wait_ms for a live holder,
 * taking it over from a dead one.  TKSHM_OK or TKSHM_EBUSY. */
int tk_writer_take(struct tkshm_table *t, long wait_ms);
void tk_writer_release(struct tkshm_table *t);

/* Sets / clears live-word flags (TK_LIFE_REPLACED, TK_LIFE_DRAINING);
 * tk_life_or returns the word with them set. */
uint64_t tk_life_or(struct tkshm_table *t, uint64_t flags);
void tk_life_clear(struct tkshm_table *t, uint64_t flags);

/* Writer-word holder only: publishes `p` as the next generation (L1). */
int tk_life_publish(struct tkshm_table *t, const tkshm_policy *p);

#endif /* TKSHM_SHM_LIFE_H */
