/*
 * forecast.h - a non-consuming projection of one key, for every algorithm:
 * ThrottleKit's Strategy.forecast(state, now, cost) (docs/semantics.md,
 * "Forecast").
 *
 * A pure function, like the transitions it projects: it reads no clock,
 * touches no shared memory, allocates nothing and never writes the state.
 *
 * DEFINITIONS (the same for every kind).  R(t) is the `remaining` that the
 * algorithm's own peek reports at time t on the state as it is (nothing
 * consumed), and idle(t) the algorithm's is_idle at t (an absent key is
 * idle).  All three fields are integers; a time is a whole epoch ms.
 *
 *   spendable_now      The number of consecutive checks of `cost` at `now`
 *                      that the algorithm's check admits, each one run on
 *                      the state the previous one wrote, before the first
 *                      denial (a denial writes nothing, so every later
 *                      check at `now` is denied too).  Bit-exact with
 *                      iterating the check, in its double arithmetic, up
 *                      to TK_FORECAST_SPENDABLE_MAX, which it saturates
 *                      at: a sequence that never denies (a cost below half
 *                      an ulp of the counter, a window narrower than the
 *                      clock's ulp) reports the maximum.
 *   full_at            The least whole ms t >= now at which idle(t): from
 *                      then on the key decides exactly as an absent key.
 *                      ceil(now) for an absent or idle key.
 *   next_replenish_at  The least whole ms t >= now with R(t) > R(now): the
 *                      first moment a peek shows at least one more whole
 *                      unit than now.  When no t <= full_at has one (the
 *                      key is idle, or its remaining is already at its
 *                      ceiling, as with a fractional capacity or burst),
 *                      full_at.  So ceil(now) <= next_replenish_at <=
 *                      full_at, and both are ceil(now) when idle, which is
 *                      ThrottleKit's "now if nothing is live"
 *                      ("Forecast").
 *
 * FORMULAS per kind, in real arithmetic (the code evaluates every one in
 * the algorithm's own double operations, see "Exactness" below).  `now` is
 * the forecast's time; every kind's deliberate regression rule (a state
 * newer than now) is honoured because the check's own view is used.
 *
 *   gcra      x = max(TAT, now), inc = T*cost:
 *               spendable = max(0, floor((tau - (x - now)) / inc)), the
 *               k >= 1 with now >= x + k*inc - tau (0 when cost > burst);
 *             full_at = ceil(TAT) (the peek's resetAt);
 *             next_replenish_at = ceil(TAT - tau + (r + 1)*T), r = R(now),
 *               the moment the (r+1)-th cell drains; full_at when
 *               r = floor(burst) already.
 *   token     tokens = the refilled level at now, base = max(now, last):
 *   bucket      spendable = floor(tokens / cost);
 *             full_at = base + ceil((capacity - tokens)/refillPerMs),
 *               ThrottleKit's resetAt (capacity 5 at 1/s, drained:
 *               now + 5000, ThrottleKit's test example).  Pinned to the
 *               first whole ms the refill reaches capacity, this is up to
 *               1 ms earlier than ThrottleKit's expression for a
 *               fractional now (which rounds the interval, not the
 *               instant) and may differ by 1 ms where the refill product
 *               rounds; for whole-ms nows they agree otherwise;
 *             next_replenish_at = base + ceil((floor(tokens) + 1 - tokens)
 *               / refillPerMs) (drained: now + 1000, the same example);
 *               full_at when floor(tokens) + 1 > capacity.
 *   fixed     count = the units counted in now's window:
 *   window      spendable = floor((limit - count) / cost);
 *             full_at = ceil(start + windowMs), the first ms of a later
 *               window than the state's (the decision's resetAt);
 *             next_replenish_at = full_at (a window's count only drops by
 *               expiring whole).
 *   sliding   estimate = full + oldest*weight at now's tick c ("Sliding
 *   window      window"), newest = the newest tick stored:
 *               spendable = floor((limit - estimate) / cost) (only tick
 *               c's count grows; the other terms are fixed at `now`);
 *             full_at = ceil((newest + S + 1) * w), the first ms whose
 *               tick no longer sees any stored bucket (the decision's
 *               resetAt ceil((c + 1)*w + windowMs) when c = newest);
 *             next_replenish_at = the first ms at which
 *               floor(limit - estimate(t)) grows, as the oldest bucket's
 *               weight decays within a tick and whole buckets leave at
 *               tick boundaries: found tick by tick up to full_at, a
 *               search within each tick (where estimate(t) is monotone).
 *   sliding   ThrottleKit's formulas ("Forecast"), live = the stamps
 *   log         the check counts (at max(now, newest stamp)):
 *               spendable = floor(max(0, limit - count) / units) with
 *               units = ceil(cost), the units the check charges; for an
 *               integral cost that is ThrottleKit's floor(max(0, limit -
 *               count)/cost), for a fractional one ThrottleKit's formula
 *               over-reports what its own check admits (it still divides
 *               by the raw cost) and the check wins;
 *             next_replenish_at = ceil(live[0] + windowMs);
 *             full_at = ceil(newest + windowMs); both ceil(now) when
 *               nothing is live.  These two are ThrottleKit's formulas as
 *               given, not re-derived from R and idle (they agree whenever
 *               stamp + windowMs is exact, e.g. whole-ms stamps and
 *               windows), clamped to >= ceil(now).
 *   quota     calendar-month/-week/-day and fixed: the fixed window's
 *               formulas over the period [start, reset): spendable =
 *               floor((limit - count) / cost), full_at = ceil(reset of the
 *               state's period), next_replenish_at = full_at;
 *             rolling: the sliding window's.
 *   token     served = the tokens served in the window a debit at now
 *   budget      falls in (after the roll):
 *               spendable = ceil((L - served) / tokens) while served < L
 *               (the debit that crosses L is admitted whole), else 0;
 *             full_at = ceil(w + windowMs) (the decision's resetAt);
 *             next_replenish_at = full_at.
 *
 * Exactness.  The check's double arithmetic rounds (docs/semantics.md,
 * "Absolute-time rounding": GCRA {3, 1000 ms, burst 3} admits 3 cells near
 * now = 1000 but 2 near now = 1e6), so no division reproduces it.
 * spendable_now is computed on the check's own recurrence: each kind's
 * counter advances by a constant addend (x <- x + inc, or x <- x - cost for
 * the bucket) and every other input of its admission test is fixed at
 * `now`.  Within one binade of the counter that recurrence has a constant
 * stride, so the walk takes a binade at a time (a bounded binary search on
 * the admission test inside the last one): O(binades crossed), never
 * O(spendable).  The times search whole ms with the algorithm's own
 * is_idle and peek, starting from the formula's value and confirming it,
 * so every property above holds bit for bit (the sliding log excepted, as
 * noted).
 */
#ifndef TKSHM_ALGORITHMS_FORECAST_H
#define TKSHM_ALGORITHMS_FORECAST_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/algorithm.h"

/* The most spendable_now reports: 2^31. */
#define TK_FORECAST_SPENDABLE_MAX (INT64_C(1) << 31)

/* ThrottleKit's Forecast, in whole units and whole epoch ms. */
struct tk_forecast {
	int64_t spendable_now;	   /* checks of `cost` admitted at now */
	int64_t next_replenish_at; /* first ms with one more unit */
	int64_t full_at;	   /* first ms the key is idle */
};

/*
 * Projects the key {present, st} (st: a->words words, read only when
 * present; it may be NULL when not) at `now` for requests of `cost`, as
 * defined at the top of this file, into *f.
 *
 * @param[in]  a        a policy's constants (tk_algo_init).
 * @param[in]  present  whether the key has a state.
 * @param[in]  st       the state; never written.
 * @param[in]  now      epoch ms, finite and >= 0 (as the API checks it).
 * @param[in]  cost     finite, > 0, at most TKSHM_COST_MAX and accepted by
 *                      tk_check_cost() in src/shm/validate.h (tokenBudget: whole
 *                      tokens).
 * @param[out] f        the forecast.
 *
 * A cost or now outside that contract gives an unspecified but finite
 * forecast (no loop runs unbounded, no field overflows: times saturate at
 * INT64_MAX).
 *
 * Threads: safe (pure).  Processes: n/a (no shared memory).
 * Async-signal-safe: yes.  Crash: n/a (writes only *f).  Allocates: no.
 */
void tk_algo_forecast(const struct tk_algo *a, bool present, const uint64_t *st,
		      double now, double cost, struct tk_forecast *f);

#endif /* TKSHM_ALGORITHMS_FORECAST_H */
