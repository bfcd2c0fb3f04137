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

#include "algorithms/concurrency.h"
#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "algorithms/leaky_bucket.h"
#include "algorithms/lease.h"
#include "algorithms/quota.h"
#include "algorithms/sliding_log.h"
#include "algorithms/sliding_window.h"
#include "algorithms/token_budget.h"
#include "algorithms/token_bucket.h"
#include "tkshm.h"

/* The most state words of any algorithm: a concurrency limit of 256
 * permits (6 + 256); a sliding window of 64 buckets (64 + 2) and a log of
 * 128 stamps (129) fit in it. */
#define TK_ALGO_MAX_WORDS TK_CONC_MAX_WORDS
_Static_assert(TK_ALGO_MAX_WORDS >= 1u + TK_SLIDING_LOG_MAX_LIMIT &&
		       TK_ALGO_MAX_WORDS >= TK_SLIDING_WINDOW_MAX_BUCKETS + 2u,
	       "every state fits the largest");

/* A policy's derived constants, fixed for the life of a handle.  `words` is
 * the state size: 1 for GCRA (kept in the slot word itself), more for the
 * others (kept in the slot's wide records, src/shm/wide.h). */
struct tk_algo {
	tkshm_kind kind;
	unsigned words;
	union {
		struct tk_gcra gcra;
		struct tk_token_bucket token_bucket;
		struct tk_fixed_window fixed_window;
		struct tk_sliding_window sliding_window;
		struct tk_sliding_log sliding_log;
		struct tk_quota quota;
		struct tk_token_budget token_budget;
		struct tk_leaky_bucket leaky_bucket;
		struct tk_conc conc; /* both concurrency kinds */
	} u;
	/* The smallest cost the check family accepts: below it a cost would
	 * add nothing to the state (resolution.h).  > 0, so `cost >=
	 * min_cost` also refuses 0, negatives and NaN. */
	double min_cost;
	/* Lease mode (tkshm_global_mode): the key's state is a lease state
	 * (lease.h) over the base kind in `kind`; `words` is
	 * TK_LEASE_WORDS. */
	bool leased;
	struct tk_lease lease;
};

/* True when the state is kept in the slot's wide records (src/shm/wide.h):
 * every kind but GCRA and the shaper (one departure time), even a log of
 * limit < 1 whose state is one word. */
static inline bool
tk_algo_is_wide(const struct tk_algo *a)
{
	return a->leased || (a->kind != TKSHM_KIND_GCRA &&
			     a->kind != TKSHM_KIND_LEAKY_BUCKET);
}

/* True when the wide state is a pair (src/shm/pair.h, protocol.h P1-P9):
 * two doubles whose second is a finite number >= 0 (a token bucket's
 * last, a window's count, a budget's served), not leased. */
static inline bool
tk_algo_is_pair(const struct tk_algo *a)
{
	if (a->leased || a->words != 2)
		return false;
	return a->kind == TKSHM_KIND_TOKEN_BUCKET ||
	       a->kind == TKSHM_KIND_FIXED_WINDOW ||
	       a->kind == TKSHM_KIND_QUOTA ||
	       a->kind == TKSHM_KIND_TOKEN_BUDGET;
}

/* True for the kinds checked with tkshm_check (the limiters); the shaper
 * reserves and concurrency limits acquire. */
static inline bool
tk_algo_is_limiter(const struct tk_algo *a)
{
	return a->kind < TKSHM_KIND_LEAKY_BUCKET;
}

static inline bool
tk_algo_is_concurrency(const struct tk_algo *a)
{
	return a->kind == TKSHM_KIND_CONCURRENCY ||
	       a->kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY;
}

/* Validates `p` and derives its constants.  TKSHM_OK or TKSHM_EPOLICY. */
int tk_algo_init(struct tk_algo *a, const tkshm_policy *p, char *err,
		 size_t err_len);

/* Wide kinds: gives back from `st` (in place) what is provably still owed
 * of an admission of `cost` made at `at`; false when nothing is (refund.c).
 * Never gives back more than was taken. */
bool tk_algo_refund_w(const struct tk_algo *a, uint64_t *st, double cost,
		      double at);

/* The most units a key holds: Decision.limit before truncation (GCRA's
 * burst, a bucket's capacity, a window's limit, a budget's tokens). */
double tk_algo_capacity(const struct tk_algo *a);

/* Fills st (a->words words) with a state that denies every check of cost
 * >= 1 before `until`, for the kinds that have one (GCRA, token bucket);
 * false for the others. */
bool tk_algo_blocked_state(const struct tk_algo *a, double until, uint64_t *st);

static inline bool
tk_algo_check(const struct tk_algo *a, bool present, uint64_t st, double now,
	      double cost, uint64_t *st_out, tkshm_decision *d)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_check(&a->u.gcra, present, st, now, cost, st_out,
				     d);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_leaky_bucket_check(&a->u.leaky_bucket, present, st,
					     now, cost, st_out, d);
	default: /* wide kinds: tk_algo_check_w */
		break;
	}
	/* Not reached (a one-word table is GCRA or a leaky bucket): still a
	 * denial with every field written, never a decision left unset. */
	*d = (tkshm_decision){ .allowed = false };
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
	case TKSHM_KIND_LEAKY_BUCKET:
		tk_leaky_bucket_peek(&a->u.leaky_bucket, present, st, now, d);
		return;
	default: /* wide kinds: the _w forms */
		break;
	}
}

static inline bool
tk_algo_is_idle(const struct tk_algo *a, uint64_t st, double now)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET: /* a departure time, like a TAT */
		return tk_gcra_is_idle(st, now);
	default: /* wide kinds: the _w forms */
		break;
	}
	return true;
}

static inline double
tk_algo_debt(const struct tk_algo *a, uint64_t st, double now)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET: /* a departure time, like a TAT */
		return tk_gcra_debt(st, now);
	default: /* wide kinds: the _w forms */
		break;
	}
	return 0.0;
}

static inline bool
tk_algo_state_valid(const struct tk_algo *a, uint64_t st)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET: /* a departure time, like a TAT */
		return tk_gcra_state_valid(st);
	default: /* wide kinds: the _w forms */
		break;
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
	default: /* wide kinds: the _w forms */
		break;
	}
	return st;
}

static inline uint64_t
tk_algo_debt_merge(const struct tk_algo *a, uint64_t x, uint64_t y)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET: /* a departure time, like a TAT */
		return tk_gcra_debt_merge(x, y);
	default: /* wide kinds: the _w forms */
		break;
	}
	return x;
}

/* ------------------------------------------------------------------------
 * The same operations over a state of a->words words (every kind; the wide
 * store, src/shm/wide.c, uses these).  `st` is read only when `present`.
 * ---------------------------------------------------------------------- */

static inline bool
tk_algo_check_w(const struct tk_algo *a, bool present, const uint64_t *st,
		double now, double cost, uint64_t *st_out, tkshm_decision *d)
{
	if (a->leased) {
		/* Lease tables are checked through the lease path
		 * (src/global/lease_check.c), which knows whether Redis is
		 * up; here, as if it were. */
		static const struct tk_lease_env up = { false, 0, 1, 1, 0 };
		enum tk_lease_how how;

		return tk_lease_spend(&a->lease, present, st, now, cost, &up,
				      st_out, d, &how);
	}
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_check(&a->u.gcra, present, present ? st[0] : 0,
				     now, cost, st_out, d);
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_check(&a->u.token_bucket, present, st,
					     now, cost, st_out, d);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_check(&a->u.fixed_window, present, st,
					     now, cost, st_out, d);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_sliding_window_check(&a->u.sliding_window, present,
					       st, now, cost, st_out, d);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_sliding_log_check(&a->u.sliding_log, present, st, now,
					    cost, st_out, d);
	case TKSHM_KIND_QUOTA:
		return tk_quota_check(&a->u.quota, present, st, now, cost,
				      st_out, d);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_check(&a->u.token_budget, present, st,
					     now, cost, st_out, d);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_leaky_bucket_check(&a->u.leaky_bucket, present,
					     present ? st[0] : 0, now, cost,
					     st_out, d);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		/* Permits are acquired (src/shaper/permit.c), never checked:
		 * the API refuses a check first.  Decide as a denial. */
		tk_conc_peek(&a->u.conc, present, st, now, d);
		d->allowed = false;
		return false;
	}
	return false;
}

static inline void
tk_algo_peek_w(const struct tk_algo *a, bool present, const uint64_t *st,
	       double now, tkshm_decision *d)
{
	if (a->leased) {
		tk_lease_peek(&a->lease, present, st, now, d);
		return;
	}
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		tk_gcra_peek(&a->u.gcra, present, present ? st[0] : 0, now, d);
		return;
	case TKSHM_KIND_TOKEN_BUCKET:
		tk_token_bucket_peek(&a->u.token_bucket, present, st, now, d);
		return;
	case TKSHM_KIND_FIXED_WINDOW:
		tk_fixed_window_peek(&a->u.fixed_window, present, st, now, d);
		return;
	case TKSHM_KIND_SLIDING_WINDOW:
		tk_sliding_window_peek(&a->u.sliding_window, present, st, now,
				       d);
		return;
	case TKSHM_KIND_SLIDING_LOG:
		tk_sliding_log_peek(&a->u.sliding_log, present, st, now, d);
		return;
	case TKSHM_KIND_QUOTA:
		tk_quota_peek(&a->u.quota, present, st, now, d);
		return;
	case TKSHM_KIND_TOKEN_BUDGET:
		tk_token_budget_peek(&a->u.token_budget, present, st, now, d);
		return;
	case TKSHM_KIND_LEAKY_BUCKET:
		tk_leaky_bucket_peek(&a->u.leaky_bucket, present,
				     present ? st[0] : 0, now, d);
		return;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		tk_conc_peek(&a->u.conc, present, st, now, d);
		return;
	}
}

static inline bool
tk_algo_is_idle_w(const struct tk_algo *a, const uint64_t *st, double now)
{
	if (a->leased)
		return tk_lease_is_idle(&a->lease, st, now);
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_is_idle(st[0], now);
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_is_idle(&a->u.token_bucket, st, now);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_is_idle(&a->u.fixed_window, st, now);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_sliding_window_is_idle(&a->u.sliding_window, st, now);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_sliding_log_is_idle(&a->u.sliding_log, st, now);
	case TKSHM_KIND_QUOTA:
		return tk_quota_is_idle(&a->u.quota, st, now);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_is_idle(&a->u.token_budget, st, now);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_gcra_is_idle(st[0], now);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		return tk_conc_is_idle(&a->u.conc, st, now);
	}
	return false;
}

static inline double
tk_algo_debt_w(const struct tk_algo *a, const uint64_t *st, double now)
{
	if (a->leased)
		return tk_lease_debt(&a->lease, st, now);
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_debt(st[0], now);
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_debt(&a->u.token_bucket, st, now);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_debt(&a->u.fixed_window, st, now);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_sliding_window_debt(&a->u.sliding_window, st, now);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_sliding_log_debt(&a->u.sliding_log, st, now);
	case TKSHM_KIND_QUOTA:
		return tk_quota_debt(&a->u.quota, st, now);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_debt(&a->u.token_budget, st, now);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_gcra_debt(st[0], now);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		/* No time makes a held permit free: never evicted (W9). */
		return 0.0;
	}
	return 0.0;
}

static inline bool
tk_algo_state_valid_w(const struct tk_algo *a, const uint64_t *st)
{
	if (a->leased)
		return tk_lease_state_valid(&a->lease, st);
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_state_valid(st[0]);
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_state_valid(&a->u.token_bucket, st);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_state_valid(&a->u.fixed_window, st);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_sliding_window_state_valid(&a->u.sliding_window, st);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_sliding_log_state_valid(&a->u.sliding_log, st);
	case TKSHM_KIND_QUOTA:
		return tk_quota_state_valid(&a->u.quota, st);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_state_valid(&a->u.token_budget, st);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_gcra_state_valid(st[0]);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		return tk_conc_state_valid(&a->u.conc, st);
	}
	return false;
}

/* ------------------------------------------------------------------------
 * The same over a pair's two words (tk_algo_is_pair: a table's kind is one
 * of these four for its whole life, protocol.h P1-P9), for the pair
 * table's check path: a switch over four cases that the compiler keeps
 * small.
 * ---------------------------------------------------------------------- */

static inline bool
tk_algo_check_pair(const struct tk_algo *a, const uint64_t *st, double now,
		   double cost, uint64_t *st_out, tkshm_decision *d)
{
	switch (a->kind) {
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_check(&a->u.token_bucket, true, st, now,
					     cost, st_out, d);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_check(&a->u.fixed_window, true, st, now,
					     cost, st_out, d);
	case TKSHM_KIND_QUOTA:
		return tk_quota_check(&a->u.quota, true, st, now, cost, st_out,
				      d);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_check(&a->u.token_budget, true, st, now,
					     cost, st_out, d);
	default:
		break;
	}
	/* Not reached (a pair table's kind is one of the four): still a
	 * denial with every field written. */
	*d = (tkshm_decision){ .allowed = false };
	return false;
}

static inline bool
tk_algo_state_valid_pair(const struct tk_algo *a, const uint64_t *st)
{
	switch (a->kind) {
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_state_valid(&a->u.token_bucket, st);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_state_valid(&a->u.fixed_window, st);
	case TKSHM_KIND_QUOTA: /* calendar or fixed: a rolling one is no pair */
		return tk_quota_period_state_valid(st);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_state_valid(&a->u.token_budget, st);
	default:
		return false;
	}
}

#endif /* TKSHM_ALGORITHMS_ALGORITHM_H */
