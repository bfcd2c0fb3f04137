/*
 * quota.h - ThrottleKit's billing-period quota, as a pure transition.
 *
 * (state, now, cost) -> (state', decision); no clock, no shared memory.  The
 * arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Quota").
 *
 * A quota is a budget of `limit` units per period that resets on a calendar
 * boundary ("1,000,000 calls a month, resetting on the 1st").  The cadences
 * calendar-month, calendar-week, calendar-day and fixed share the fixed-
 * window logic over the period [start, reset) that calendar.h computes:
 *
 *   count = (state && state.start == start) ? state.count : 0
 *   allow iff count + cost <= limit; state' = {start, count + cost}
 *     remaining = max(0, floor(limit - (count + cost))), retryAfterMs = 0
 *   deny: remaining = max(0, floor(limit - count)),
 *     retryAfterMs = ceil(reset - now)
 *   Decision.resetAt = ceil(reset), Decision.limit = limit (truncated)
 *
 * Like the fixed window (fixed_window.h), up to 2 x limit can pass across a
 * single boundary, and there is the same one deliberate difference for
 * clock regressions: when now's period starts before state.start, the
 * request is decided within the STATE's (later) period, whose reset is
 * recomputed from state.start.  A regression may deny early but never
 * charges more than `limit` to any period; period starts are monotone in
 * now, so forward timelines are bit-identical to ThrottleKit's.
 *
 * The `rolling` cadence is ThrottleKit's slidingWindow({limit, windowMs:
 * periodMs, buckets}) under the quota name: every function here delegates
 * to sliding_window.h (its decisions, its state of buckets + 2 words, its
 * own regression rule).
 *
 * State (calendar and fixed cadences): TK_QUOTA_PERIOD_WORDS = 2 words, the
 * exact bit patterns of two doubles: st[0] = start (a period start, finite;
 * negative near the epoch with a positive offset or an anchor), st[1] =
 * count (0 <= count <= limit; 0 when a give-back took back every unit of
 * the period, src/algorithms/refund.c).  No word has its top 13 bits set
 * (I4).
 * tk_quota_words() gives the word count for any cadence (rolling: the
 * sliding window's).
 */
#ifndef TKSHM_ALGORITHMS_QUOTA_H
#define TKSHM_ALGORITHMS_QUOTA_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/calendar.h"
#include "algorithms/decision.h"
#include "algorithms/sliding_window.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

/* The reset cadences (values 1..4 are ThrottleKit's Lua mode numbers). */
enum tk_quota_cadence {
	TK_QUOTA_CALENDAR_MONTH = TK_CADENCE_MONTH,
	TK_QUOTA_CALENDAR_WEEK = TK_CADENCE_WEEK,
	TK_QUOTA_CALENDAR_DAY = TK_CADENCE_DAY,
	TK_QUOTA_FIXED = TK_CADENCE_FIXED,
	TK_QUOTA_ROLLING = 5,
};

#define TK_QUOTA_PERIOD_WORDS 2

/* ThrottleKit's default number of sub-buckets for the rolling cadence. */
#define TK_QUOTA_BUCKETS_DEFAULT TK_SLIDING_WINDOW_DEFAULT_BUCKETS

/* Derived once per table from the policy. */
struct tk_quota {
	double limit; /* units per period; reported as Decision.limit */
	enum tk_quota_cadence cadence;
	struct tk_calendar cal;	     /* the period (calendar and fixed) */
	struct tk_sliding_window sw; /* rolling only */
};

/*
 * Validates a quota as ThrottleKit's quota() does, in its order: limit
 * finite and > 0; for rolling, periodMs finite and > 0, then the sliding
 * window's own checks (tk_sliding_window_init: buckets an integer >= 1,
 * ...), the calendar options being ignored; for calendar-* and fixed,
 * offsetMinutes an integer within +-840, weekStartsOn an integer 0..6,
 * anchor an integer, and for fixed periodMs finite and > 0 (see
 * tk_calendar_init).  Unused parameters take ThrottleKit's defaults:
 * offsetMinutes 0, weekStartsOn 1, anchor 0, buckets 10; periodMs is
 * ignored by the calendar cadences and `buckets` by all but rolling.
 * Returns TKSHM_OK or TKSHM_EPOLICY with a sentence in err.
 */
int tk_quota_init(struct tk_quota *q, double limit,
		  enum tk_quota_cadence cadence, double offset_minutes,
		  double week_starts_on, double period_ms, double anchor,
		  double buckets, char *err, size_t err_len);

/* The number of state words for this quota. */
static inline size_t
tk_quota_words(const struct tk_quota *q)
{
	if (q->cadence == TK_QUOTA_ROLLING)
		return tk_sliding_window_words(&q->sw);
	return TK_QUOTA_PERIOD_WORDS;
}

/* The period a request at `now` is decided in and the units already
 * counted in it (the regression rule above included). */
static inline double
tk_quota_count(const struct tk_quota *q, bool present, const uint64_t *st,
	       double now, double *start, double *reset)
{
	double s;

	tk_calendar_period(&q->cal, now, start, reset);
	if (!present)
		return 0;
	s = tk_word_f64(st[0]);
	if (s == *start)
		return tk_word_f64(st[1]);
	if (*start < s) {
		/* Clock regression: stay in the state's later period. */
		double s2;

		if (q->cal.cadence == TK_CADENCE_FIXED)
			*reset = s + q->cal.period_ms;
		else
			tk_calendar_period(&q->cal, s, &s2, reset);
		*start = s;
		return tk_word_f64(st[1]);
	}
	return 0; /* a stale (earlier) period */
}

/* One check.  Returns true when the request is admitted, with st_out the
 * new state; a denial returns false, leaves st_out untouched and consumes
 * nothing.  `st` is read only when `present`; st_out may be st itself. */
static inline bool
tk_quota_check(const struct tk_quota *q, bool present, const uint64_t *st,
	       double now, double cost, uint64_t *st_out, tkshm_decision *d)
{
	double start, reset, count;

	if (q->cadence == TK_QUOTA_ROLLING)
		return tk_sliding_window_check(&q->sw, present, st, now, cost,
					       st_out, d);
	count = tk_quota_count(q, present, st, now, &start, &reset);
	d->limit = tk_field(q->limit);
	d->flags = 0;
	d->reset_at = tk_field_ceil(reset);
	if (count + cost <= q->limit) {
		double n = count + cost;

		d->allowed = true;
		d->remaining = tk_field_floor0(q->limit - n);
		d->retry_after_ms = 0;
		st_out[0] = tk_f64_word(start);
		st_out[1] = tk_f64_word(n);
		return true;
	}
	d->allowed = false;
	d->remaining = tk_field_floor0(q->limit - count);
	d->retry_after_ms = tk_denial_retry(tk_field_ceil(reset - now));
	return false;
}

/* ThrottleKit's peek: what a cost-1 request would see (remaining is what is
 * left before it), writing nothing. */
static inline void
tk_quota_peek(const struct tk_quota *q, bool present, const uint64_t *st,
	      double now, tkshm_decision *d)
{
	double start, reset, count;

	if (q->cadence == TK_QUOTA_ROLLING) {
		tk_sliding_window_peek(&q->sw, present, st, now, d);
		return;
	}
	count = tk_quota_count(q, present, st, now, &start, &reset);
	d->limit = tk_field(q->limit);
	d->flags = 0;
	d->allowed = count + 1 <= q->limit;
	d->remaining = tk_field_floor0(q->limit - count);
	d->reset_at = tk_field_ceil(reset);
	d->retry_after_ms =
		d->allowed ? 0 : tk_denial_retry(tk_field_ceil(reset - now));
}

/* A state from a period before now's decides exactly as an absent key
 * (rolling: the sliding window's rule). */
static inline bool
tk_quota_is_idle(const struct tk_quota *q, const uint64_t *st, double now)
{
	double start, reset;

	if (q->cadence == TK_QUOTA_ROLLING)
		return tk_sliding_window_is_idle(&q->sw, st, now);
	tk_calendar_period(&q->cal, now, &start, &reset);
	return start > tk_word_f64(st[0]);
}

/* How far from idle, in units: the count eviction would forgive (all keys
 * share the same periods; rolling: the sliding window's units).  0 when
 * idle. */
static inline double
tk_quota_debt(const struct tk_quota *q, const uint64_t *st, double now)
{
	if (q->cadence == TK_QUOTA_ROLLING)
		return tk_sliding_window_debt(&q->sw, st, now);
	return tk_quota_is_idle(q, st, now) ? 0.0 : tk_word_f64(st[1]);
}

/* I4 for a calendar or fixed quota's two words: a finite period start
 * and a finite count >= 0 (a count above the limit is a state, as a fixed
 * window's). */
static inline bool
tk_quota_period_state_valid(const uint64_t *st)
{
	double start = tk_word_f64(st[0]);
	double count = tk_word_f64(st[1]);

	return isfinite(start) && count >= 0 && isfinite(count);
}

/* I4: a finite period start and a count in [0, limit] (rolling: the
 * sliding window's rule). */
static inline bool
tk_quota_state_valid(const struct tk_quota *q, const uint64_t *st)
{
	if (q->cadence == TK_QUOTA_ROLLING)
		return tk_sliding_window_state_valid(&q->sw, st);
	return tk_quota_period_state_valid(st);
}

#endif /* TKSHM_ALGORITHMS_QUOTA_H */
