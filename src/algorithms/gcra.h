/*
 * gcra.h - the Generic Cell Rate Algorithm, as ThrottleKit computes it.
 *
 * A pure transition: (TAT, now, cost) -> (TAT', decision).  It reads no clock
 * and touches no memory but its arguments.  The arithmetic is IEEE-754
 * double in ThrottleKit's exact order (docs/semantics.md, "GCRA"); the
 * build uses -ffp-contract=off so no step is fused.
 *
 *   T = periodMs / limit          tau = T * burst
 *   inc = T * cost                tatEff = max(TAT or now, now)
 *   newTat = tatEff + inc         allowAt = newTat - tau
 *   allow iff now >= allowAt      (equality allows)
 *
 * The state is the TAT, one double stored as its 64-bit pattern.  A TAT at or
 * before `now` decides as an absent key does: that state is idle.
 */
#ifndef TKSHM_ALGORITHMS_GCRA_H
#define TKSHM_ALGORITHMS_GCRA_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

/* Derived once per table from the policy. */
struct tk_gcra {
	double T;	     /* emission interval, ms per unit */
	double tau;	     /* burst tolerance, ms */
	double burst;	     /* reported as Decision.limit */
	int64_t limit_field; /* tk_field(burst), computed once */
};

/* Validates a GCRA policy's parameters and derives T and tau.  Returns
 * TKSHM_OK or TKSHM_EPOLICY with a sentence in err. */
int tk_gcra_init(struct tk_gcra *g, double limit, double period_ms,
		 double burst, char *err, size_t err_len);

static inline double
tk_gcra_tat(uint64_t st)
{
	return tk_word_f64(st);
}

static inline uint64_t
tk_gcra_state(double tat)
{
	return tk_f64_word(tat);
}

/* One check.  `present` says whether a state exists; `st` is its TAT bits.
 * Returns true when the request is admitted, with *st_out the new TAT to
 * persist; a denial returns false and leaves *st_out untouched. */
static inline bool
tk_gcra_check(const struct tk_gcra *g, bool present, uint64_t st, double now,
	      double cost, uint64_t *st_out, tkshm_decision *d)
{
	double inc = g->T * cost;
	double tat = present ? tk_gcra_tat(st) : now;
	double tat_eff = tat > now ? tat : now;
	double new_tat = tat_eff + inc;
	double allow_at = new_tat - g->tau;

	d->limit = g->limit_field;
	d->flags = 0;
	/* ThrottleKit's formula admits a cost above burst only through a
	 * rounding edge at large `now`; such a cost is never admitted here. */
	if (now < allow_at || cost > g->burst) {
		d->allowed = false;
		d->remaining =
			tk_field_floor0((g->tau - (tat_eff - now)) / g->T);
		d->reset_at = tk_field_ceil(tat_eff);
		/* At least 1: only the cost-above-burst guard can deny with
		 * allow_at <= now, and a client told "retry in 0 ms" would
		 * retry at once, forever. */
		d->retry_after_ms =
			tk_denial_retry(tk_field_ceil(allow_at - now));
		return false;
	}
	d->allowed = true;
	d->remaining = tk_field_floor0((g->tau - (new_tat - now)) / g->T);
	d->reset_at = tk_field_ceil(new_tat);
	d->retry_after_ms = 0;
	*st_out = tk_gcra_state(new_tat);
	return true;
}

/* ThrottleKit's peek: what a cost-1 request would see, without consuming. */
static inline void
tk_gcra_peek(const struct tk_gcra *g, bool present, uint64_t st, double now,
	     tkshm_decision *d)
{
	double tat = present ? tk_gcra_tat(st) : now;
	double tat_eff = tat > now ? tat : now;
	double remaining =
		tk_clamp0(tk_floor((g->tau - (tat_eff - now)) / g->T));

	d->limit = g->limit_field;
	d->flags = 0;
	d->remaining = tk_field(remaining);
	d->allowed = remaining >= 1;
	d->reset_at = tk_field_ceil(tat_eff);
	d->retry_after_ms = d->allowed ?
				    0 :
				    tk_denial_retry(tk_field_ceil(
					    tat_eff + g->T - g->tau - now));
}

/* A TAT at or before now is equivalent to an absent key. */
static inline bool
tk_gcra_is_idle(uint64_t st, double now)
{
	return tk_gcra_tat(st) <= now;
}

/* How far in debt the key is, in ms: 0 when idle. */
static inline double
tk_gcra_debt(uint64_t st, double now)
{
	double tat = tk_gcra_tat(st);
	return tat > now ? tat - now : 0.0;
}

/* I4: a valid TAT is a finite, non-negative double. */
static inline bool
tk_gcra_state_valid(uint64_t st)
{
	double tat = tk_gcra_tat(st);
	return isfinite(tat) && tat >= 0.0;
}

/* Gives back what is still owed of an admission of `cost` that wrote TAT
 * `next`, from the current TAT `st`, at time `now_r`.  That admission owns
 * the stretch [next - T*cost, next] of the TAT line; the part before now_r
 * has drained, and an admission that restarted the key from its `now`
 * (later than that stretch) must keep all of its own.  So give back at most
 * next - max(next - T*cost, now_r), rounded so as never to give back more
 * than taken (a refund must not let anything over the limit). */
static inline uint64_t
tk_gcra_refund(const struct tk_gcra *g, uint64_t st, uint64_t next, double cost,
	       double now_r)
{
	double tat = tk_gcra_tat(st), end = tk_gcra_tat(next);
	double start = end - g->T * cost;
	double owed = end - (start > now_r ? start : now_r);
	double back;

	if (!(owed > 0) || !(tat > now_r))
		return st;
	back = nextafter(tat - owed, INFINITY);
	return tk_gcra_state(back < now_r ? now_r : back);
}

/* I9: the conservative union of two remembered debts is the later TAT.
 * Non-negative doubles order like their bit patterns, so this is also the
 * unsigned maximum the debt cell's CAS loop computes. */
static inline uint64_t
tk_gcra_debt_merge(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

#endif /* TKSHM_ALGORITHMS_GCRA_H */
