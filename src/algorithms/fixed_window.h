/*
 * fixed_window.h - ThrottleKit's fixed-window counter, as a pure transition.
 *
 * (state, now, cost) -> (state', decision); no clock, no shared memory.  The
 * arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Fixed window"):
 *
 *   windowStart = floor(now / windowMs) * windowMs      (epoch-aligned)
 *   resetAt     = windowStart + windowMs
 *   count = (state && state.start == windowStart) ? state.count : 0
 *   allow iff count + cost <= limit; state' = {windowStart, count + cost}
 *     remaining = max(0, floor(limit - (count + cost))), retryAfterMs = 0
 *   deny: remaining = max(0, floor(limit - count)),
 *     retryAfterMs = ceil(resetAt - now)
 *   Decision.resetAt = ceil(resetAt), Decision.limit = limit (truncated)
 *
 * By design a client can spend the whole `limit` at the end of one window
 * and the whole `limit` again at the start of the next: up to 2 x limit
 * across a single boundary (ThrottleKit documents this; use GCRA, the token
 * bucket or a sliding window for smooth pacing).
 *
 * One deliberate difference from ThrottleKit, for clock regressions.
 * ThrottleKit recomputes the window from `now` alone, so a backward jump
 * into an earlier window sees a count of 0, admits, and overwrites the
 * state with the older window; returning to the later window then starts
 * from 0 again (over-admission).  Here, when windowStart < state.start, the
 * request is decided within the STATE's (later) window: its count, its
 * start (kept in state'), its resetAt = state.start + windowMs and
 * retryAfterMs = ceil(resetAt - now).  A regression may therefore deny
 * early, but the units charged to any window never exceed `limit`.
 * windowStart is monotone in now, so on a forward timeline the case never
 * arises and decisions are bit-identical to ThrottleKit's.
 *
 * State: TK_FIXED_WINDOW_WORDS = 2 words, the exact bit patterns of two
 * doubles: st[0] = start (a window start, finite, >= 0), st[1] = count
 * (0 <= count <= limit; 0 when a give-back took back every unit of the
 * window, src/algorithms/refund.c).  No word has its top 13 bits set
 * (I4).
 */
#ifndef TKSHM_ALGORITHMS_FIXED_WINDOW_H
#define TKSHM_ALGORITHMS_FIXED_WINDOW_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

#define TK_FIXED_WINDOW_WORDS 2

/* Derived once per table from the policy. */
struct tk_fixed_window {
	double limit;	  /* units per window; reported as Decision.limit */
	double window_ms; /* window width */
};

/* Validates limit and windowMs (finite and > 0; windowMs also such that
 * every window boundary up to now = 2^42 is finite).  Returns TKSHM_OK or
 * TKSHM_EPOLICY with a sentence in err. */
int tk_fixed_window_init(struct tk_fixed_window *a, double limit,
			 double window_ms, char *err, size_t err_len);

/* The window a request at `now` is decided in: its start, its end and the
 * units already counted in it (the regression rule above included). */
static inline double
tk_fixed_window_count(const struct tk_fixed_window *a, bool present,
		      const uint64_t *st, double now, double *start,
		      double *reset)
{
	double ws = tk_floor(now / a->window_ms) * a->window_ms;

	*start = ws;
	*reset = ws + a->window_ms;
	if (!present)
		return 0;
	if (tk_word_f64(st[0]) == ws)
		return tk_word_f64(st[1]);
	if (ws < tk_word_f64(st[0])) {
		/* Clock regression: stay in the state's later window. */
		*start = tk_word_f64(st[0]);
		*reset = *start + a->window_ms;
		return tk_word_f64(st[1]);
	}
	return 0; /* a stale (earlier) window */
}

/* One check.  Returns true when the request is admitted, with st_out[0..1]
 * the new state; a denial returns false, leaves st_out untouched and
 * consumes nothing.  `st` is read only when `present`; st_out may be st
 * itself. */
static inline bool
tk_fixed_window_check(const struct tk_fixed_window *a, bool present,
		      const uint64_t *st, double now, double cost,
		      uint64_t *st_out, tkshm_decision *d)
{
	double start, reset;
	double count =
		tk_fixed_window_count(a, present, st, now, &start, &reset);

	d->limit = tk_field(a->limit);
	d->flags = 0;
	d->reset_at = tk_field_ceil(reset);
	if (count + cost <= a->limit) {
		double n = count + cost;

		d->allowed = true;
		d->remaining = tk_field_floor0(a->limit - n);
		d->retry_after_ms = 0;
		st_out[0] = tk_f64_word(start);
		st_out[1] = tk_f64_word(n);
		return true;
	}
	d->allowed = false;
	d->remaining = tk_field_floor0(a->limit - count);
	d->retry_after_ms = tk_denial_retry(tk_field_ceil(reset - now));
	return false;
}

/* ThrottleKit's peek: what a cost-1 request would see (remaining is what is
 * left before it), writing nothing. */
static inline void
tk_fixed_window_peek(const struct tk_fixed_window *a, bool present,
		     const uint64_t *st, double now, tkshm_decision *d)
{
	double start, reset;
	double count =
		tk_fixed_window_count(a, present, st, now, &start, &reset);

	d->limit = tk_field(a->limit);
	d->flags = 0;
	d->allowed = count + 1 <= a->limit;
	d->remaining = tk_field_floor0(a->limit - count);
	d->reset_at = tk_field_ceil(reset);
	d->retry_after_ms =
		d->allowed ? 0 : tk_denial_retry(tk_field_ceil(reset - now));
}

/* A state from a window before now's decides exactly as an absent key
 * (count 0, and the same state' after). */
static inline bool
tk_fixed_window_is_idle(const struct tk_fixed_window *a, const uint64_t *st,
			double now)
{
	return tk_floor(now / a->window_ms) * a->window_ms > tk_word_f64(st[0]);
}

/* How far from idle, in units: the count eviction would forgive.  Every key
 * of a table shares the same epoch-aligned windows, so the time until idle
 * would not tell keys apart.  0 when idle. */
static inline double
tk_fixed_window_debt(const struct tk_fixed_window *a, const uint64_t *st,
		     double now)
{
	return tk_fixed_window_is_idle(a, st, now) ? 0.0 : tk_word_f64(st[1]);
}

/* I4: a finite window start >= 0 and a finite count >= 0.  A count above
 * the limit is a state: the limit may have been lowered in place since it
 * was written (protocol.h, L1), and a check reads it as "denied". */
static inline bool
tk_fixed_window_state_valid(const struct tk_fixed_window *a, const uint64_t *st)
{
	(void)a; /* every limit reads every count (see above) */
	double start = tk_word_f64(st[0]);
	double count = tk_word_f64(st[1]);

	return isfinite(start) && start >= 0 && count >= 0 && isfinite(count);
}

#endif /* TKSHM_ALGORITHMS_FIXED_WINDOW_H */
