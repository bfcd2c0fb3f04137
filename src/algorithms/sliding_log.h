/*
 * sliding_log.h - ThrottleKit's sliding-window log (exact), as a pure
 * transition.
 *
 * (state, now, cost) -> (state', decision); no clock, no shared memory.  The
 * arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Sliding window log"); the build uses
 * -ffp-contract=off so no step is fused.
 *
 *   windowStart = now - windowMs
 *   live = the stamps > windowStart, ascending (stamps <= windowStart are
 *          pruned: a hit leaves the window exactly windowMs after it)
 *   count = |live|     units = ceil(cost)    Decision.limit = limit
 *   allow iff count + units <= limit: append `units` copies of now
 *     remaining = max(0, limit - count - units), retryAfterMs = 0
 *     resetAt = ceil((count > 0 ? live[0] : now) + windowMs)
 *   deny: remaining = max(0, limit - count)
 *     resetAt = ceil((count > 0 ? live[0] : now) + windowMs)
 *     count == 0 (units > limit, unsatisfiable): retryAfterMs = windowMs
 *     else kMin = clamp(count + units - limit, 1, count), ref = live[kMin-1]
 *          retryAfterMs = max(1, ceil(ref + windowMs - now))
 *   (remaining and the retry of an unsatisfiable request are not floored
 *   in ThrottleKit; they are integral unless limit or windowMs has a
 *   fraction, and are then truncated as Redis truncates its reply.)
 *
 * retryAfterMs is exact: it is the time until the kMin-th live hit leaves
 * the window, after which count + units <= limit.  ThrottleKit indexes
 * live[] with kMin itself, which for a fractional limit need not be an
 * integer and so not a valid index (in JS live[0.5] is undefined, making
 * the retry NaN); here kMin is rounded up first, which is ThrottleKit's
 * formula for every integral limit and the exact time for any other.
 *
 * One deliberate difference from ThrottleKit, for clock regressions.  A
 * `now` earlier than the newest stamp would append out of order (the JS
 * array is then no longer ascending and its prefix walk prunes wrongly).
 * Here such a request is decided AT THE NEWEST STAMP: t = max(now, newest)
 * replaces now in the pruning, the appended stamps and resetAt.  Stamps
 * therefore stay ascending, a hit is never counted twice nor pruned before
 * windowMs has passed on this monotone clock, and no window
 * (t - windowMs, t] of the stamps ever holds more than `limit` units; a
 * regression may deny early.  retryAfterMs stays relative to the caller's
 * own now, ceil(ref + windowMs - now), and so stays exact for that caller:
 * a check at now + retryAfterMs has t >= ref + windowMs, and one a
 * millisecond earlier still sees ref (live stamps are within windowMs of
 * newest).
 * (Times as the callers' clocks read them are a different matter: a clock
 * that jumps forward past windowMs and back lets the jump forward prune
 * hits that the clock, once back, would still count.  No bounded log can
 * recall them.)  newest <= now on a forward timeline, so forward timelines
 * are bit-identical to ThrottleKit's.
 *
 * Limits of this port: limit <= TK_SLIDING_LOG_MAX_LIMIT (128), refused by
 * tk_sliding_log_init; the state keeps one stamp per unit.
 *
 * State: tk_sliding_log_words() = 1 + floor(limit) words (no more than
 * floor(limit) stamps are ever live):
 *   st[0]        = n, the number of stamps kept (0 <= n <= floor(limit));
 *   st[1 .. n]   = the stamps, ascending, bit patterns of finite doubles
 *                  >= 0 (the `now`s the API accepts);
 *   st[n+1 ..]   = 0.
 * n is at most 128 and the stamps are finite and >= 0 (-0.0 at worst), so
 * no word has its top 13 bits all set (I4).  The functions take `now`
 * finite and >= 0, as the API checks it.
 */
#ifndef TKSHM_ALGORITHMS_SLIDING_LOG_H
#define TKSHM_ALGORITHMS_SLIDING_LOG_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

/* The largest limit a sliding-log table takes: one stamp word per unit. */
#define TK_SLIDING_LOG_MAX_LIMIT 128

/* Derived once per table from the policy. */
struct tk_sliding_log {
	double limit;	  /* units per window; Decision.limit */
	double window_ms; /* the window */
	unsigned cap;	  /* floor(limit): the most stamps ever kept */
};

/* Validates limit (finite, > 0 and at most TK_SLIDING_LOG_MAX_LIMIT) and
 * windowMs (finite and > 0).  Returns TKSHM_OK or TKSHM_EPOLICY with a
 * sentence naming the parameter in err. */
int tk_sliding_log_init(struct tk_sliding_log *a, double limit,
			double window_ms, char *err, size_t err_len);

/* The state size in 64-bit words: 1 + floor(limit). */
static inline unsigned
tk_sliding_log_words(const struct tk_sliding_log *a)
{
	return 1 + a->cap;
}

static inline double
tk_sliding_log_stamp(const uint64_t *st, unsigned i)
{
	return tk_word_f64(st[1 + i]);
}

/* Everything a decision at `now` reads from the log. */
struct tk_sliding_log_view {
	double t;	/* the time decided at: max(now, newest stamp) */
	unsigned first; /* index of the first live stamp */
	unsigned n;	/* stamps kept (live ones are first .. n-1) */
	double count;	/* n - first */
};

static inline void
tk_sliding_log_eval(const struct tk_sliding_log *a, const uint64_t *st,
		    double now, struct tk_sliding_log_view *v)
{
	unsigned n = 0, first = 0;
	double t = now, window_start;

	if (st) {
		/* Never past the array, even for an invalid state. */
		n = st[0] < a->cap ? (unsigned)st[0] : a->cap;
		/* The one difference (see the top of this file). */
		if (n > 0 && tk_sliding_log_stamp(st, n - 1) > t)
			t = tk_sliding_log_stamp(st, n - 1);
	}
	window_start = t - a->window_ms;
	while (first < n && !(tk_sliding_log_stamp(st, first) > window_start))
		first++;
	v->t = t;
	v->first = first;
	v->n = n;
	v->count = (double)(n - first);
}

/* The deny fields of a request of `units` units at `now`: remaining,
 * resetAt and retryAfterMs. */
static inline void
tk_sliding_log_deny(const struct tk_sliding_log *a, const uint64_t *st,
		    const struct tk_sliding_log_view *v, double now,
		    double units, tkshm_decision *d)
{
	double count = v->count;

	d->remaining = tk_field(tk_clamp0(a->limit - count));
	/* No live stamp (count == 0; st may then be NULL): tested on the
	 * integers, which say so exactly. */
	if (v->n == v->first) {
		d->reset_at = tk_field_ceil(v->t + a->window_ms);
		d->retry_after_ms = tk_denial_retry(tk_field(a->window_ms));
		return;
	}
	{
		double k = tk_ceil(count + units - a->limit);
		double kmin = k < 1 ? 1 : k > count ? count : k;
		double ref =
			tk_sliding_log_stamp(st, v->first + (unsigned)kmin - 1);
		double retry = tk_ceil(ref + a->window_ms - now);

		d->reset_at = tk_field_ceil(tk_sliding_log_stamp(st, v->first) +
					    a->window_ms);
		d->retry_after_ms = tk_field(retry > 1 ? retry : 1);
	}
}

/* One check.  `present` says whether a state exists (st may be NULL when it
 * does not).  Returns true when the request is admitted, with st_out (all
 * tk_sliding_log_words() words; it may be st itself) the new state: the
 * live stamps followed by `units` copies of t.  A denial returns false,
 * leaves st_out untouched and consumes nothing. */
static inline bool
tk_sliding_log_check(const struct tk_sliding_log *a, bool present,
		     const uint64_t *st, double now, double cost,
		     uint64_t *st_out, tkshm_decision *d)
{
	struct tk_sliding_log_view v;
	double units = tk_ceil(cost);

	if (!present)
		st = NULL;
	tk_sliding_log_eval(a, st, now, &v);
	d->limit = tk_field(a->limit);
	d->flags = 0;
	if (v.count + units <= a->limit) {
		/* No state, no stamps (v.n is 0): said so that st is
		 * visibly read only when it exists. */
		unsigned live = st ? v.n - v.first : 0;
		unsigned m = live + (unsigned)units; /* <= floor(limit) */
		double oldest =
			live > 0 ? tk_sliding_log_stamp(st, v.first) : v.t;

		d->allowed = true;
		d->remaining = tk_field(tk_clamp0(a->limit - v.count - units));
		d->reset_at = tk_field_ceil(oldest + a->window_ms);
		d->retry_after_ms = 0;
		if (live > 0 && (st_out != st || v.first > 0))
			memmove(st_out + 1, st + 1 + v.first,
				sizeof *st_out * live);
		for (unsigned i = live; i < m; i++)
			st_out[1 + i] = tk_f64_word(v.t);
		for (unsigned i = m; i < a->cap; i++)
			st_out[1 + i] = 0;
		st_out[0] = m;
		return true;
	}
	d->allowed = false;
	tk_sliding_log_deny(a, st, &v, now, units, d);
	return false;
}

/* What a cost-1 request would see, writing nothing: allowed iff
 * count + 1 <= limit; remaining is what is left before it
 * (max(0, limit - count)); resetAt and the deny retryAfterMs are those of a
 * cost-1 check. */
static inline void
tk_sliding_log_peek(const struct tk_sliding_log *a, bool present,
		    const uint64_t *st, double now, tkshm_decision *d)
{
	struct tk_sliding_log_view v;

	if (!present)
		st = NULL;
	tk_sliding_log_eval(a, st, now, &v);
	d->limit = tk_field(a->limit);
	d->flags = 0;
	if (v.count + 1 <= a->limit) {
		d->allowed = true;
		d->remaining = tk_field(tk_clamp0(a->limit - v.count));
		d->reset_at = tk_field(tk_ceil(
			(v.count > 0 ? tk_sliding_log_stamp(st, v.first) :
				       v.t) +
			a->window_ms));
		d->retry_after_ms = 0;
		return;
	}
	d->allowed = false;
	tk_sliding_log_deny(a, st, &v, now, 1, d);
}

/* Idle: no stamp is live at now (the newest one is <= now - windowMs, so
 * it is not after now either): the state decides exactly as an absent key,
 * now and at every later time. */
static inline bool
tk_sliding_log_is_idle(const struct tk_sliding_log *a, const uint64_t *st,
		       double now)
{
	unsigned n = st[0] < a->cap ? (unsigned)st[0] : a->cap;

	return n == 0 || tk_sliding_log_stamp(st, n - 1) <= now - a->window_ms;
}

/* How far from idle, in units: the live stamps, i.e. what eviction would
 * forgive (the same measure as the sliding and fixed windows').  0 exactly
 * when idle. */
static inline double
tk_sliding_log_debt(const struct tk_sliding_log *a, const uint64_t *st,
		    double now)
{
	struct tk_sliding_log_view v;

	if (tk_sliding_log_is_idle(a, st, now))
		return 0.0;
	tk_sliding_log_eval(a, st, now, &v);
	/* Positive whenever not idle, even when a windowMs below half an
	 * ulp of the newest stamp prunes it at once (t - windowMs == t). */
	return v.count > 0 ? v.count : DBL_MIN;
}

/* I4: n <= floor(limit); stamps finite, >= 0 and ascending; the rest 0. */
static inline bool
tk_sliding_log_state_valid(const struct tk_sliding_log *a, const uint64_t *st)
{
	double prev = 0;

	if (st[0] > a->cap)
		return false;
	for (unsigned i = 0; i < a->cap; i++) {
		double s = tk_sliding_log_stamp(st, i);

		if (i >= st[0]) {
			if (st[1 + i] != 0)
				return false;
			continue;
		}
		if (!isfinite(s) || !(s >= prev))
			return false;
		prev = s;
	}
	return true;
}

#endif /* TKSHM_ALGORITHMS_SLIDING_LOG_H */
