/*
 * algorithm.h - the one interface between algorithms and the store.
 *
 * An algorithm is a pure transition over a 64-bit state word:
 *   check  (state or absent, now, cost) -> (admitted, state', decision)
 *   peek   (state or absent, now)       -> decision, writing nothing
 *   idle   state decides exactly as an absent key would
 *   debt   how far from idle a state is (least-debt eviction picks the min)
 *   merge  the conservative union of two states (remembered debt, I8/I9)
 *   refund a state with a cost given back (undoing a multi-dimension commit)
 * The store (src/shm/table.c) applies a transition with one CAS and never
 * looks inside the state; the algorithm never touches shared memory.
 *
 * Dispatch is a switch on the kind, so the compiler inlines the transition
 * into the check path.  A new algorithm adds a case to each function here.
 */
#ifndef TKSHM_ALGORITHMS_ALGORITHM_H
#define TKSHM_ALGORITHMS_ALGORITHM_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/gcra.h"
#include "tkshm.h"

/* A policy's derived constants, fixed for the life of a handle. */
struct tk_algo {
	tkshm_kind kind;
	union {
		struct tk_gcra gcra;
	} u;
};

/* Validates `p` and derives its constants.  TKSHM_OK or TKSHM_EPOLICY. */
int tk_algo_init(struct tk_algo *a, const tkshm_policy *p, char *err,
		 size_t err_len);

static inline bool
tk_algo_check(const struct tk_algo *a, bool present, uint64_t st, double now,
	      double cost, uint64_t *st_out, tkshm_decision *d)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_check(&a->u.gcra, present, st, now, cost, st_out,
				     d);
	}
	/* tk_algo_init admits no other kind. */
	return false;
}

static inline void
tk_algo_peek(const struct tk_algo *a, bool present, uint64_t st, double now,
	     tkshm_decision *d)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		tk_gcra_peek(&a->u.gcra, present, st, now, d);
		return;
	}
}

static inline bool
tk_algo_is_idle(const struct tk_algo *a, uint64_t st, double now)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_is_idle(st, now);
	}
	return true;
}

static inline double
tk_algo_debt(const struct tk_algo *a, uint64_t st, double now)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_debt(st, now);
	}
	return 0.0;
}

static inline bool
tk_algo_state_valid(const struct tk_algo *a, uint64_t st)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_state_valid(st);
	}
	return false;
}

/* State `st` with what is still owed at `now_r` of an admission of `cost`
 * (which wrote `next`) given back; never more than was taken. */
static inline uint64_t
tk_algo_refund(const struct tk_algo *a, uint64_t st, uint64_t next, double cost,
	       double now_r)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_refund(&a->u.gcra, st, next, cost, now_r);
	}
	return st;
}

static inline uint64_t
tk_algo_debt_merge(const struct tk_algo *a, uint64_t x, uint64_t y)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_debt_merge(x, y);
	}
	return x;
}

#endif /* TKSHM_ALGORITHMS_ALGORITHM_H */
