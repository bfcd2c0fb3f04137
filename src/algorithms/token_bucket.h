/*
 * token_bucket.h - ThrottleKit's token bucket, as a pure transition.
 *
 * (state, now, cost) -> (state', decision); no clock, no shared memory.  The
 * arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Token bucket"); the build uses
 * -ffp-contract=off so no step is fused.
 *
 *   refillPerMs = refillPerSec / 1000
 *   prev = state ? tokens : capacity        last = state ? last : now
 *   elapsed = now > last ? now - last : 0    (jump-safe)
 *   tokens = min(capacity, prev + elapsed * refillPerMs)
 *   allow iff tokens >= cost, then tokens' = tokens - cost
 *     remaining = max(0, floor(tokens'))
 *     resetAt   = now + ceil((capacity - tokens') / refillPerMs)
 *   deny: remaining = max(0, floor(tokens)),
 *     resetAt = now + ceil((capacity - tokens) / refillPerMs),
 *     retryAfterMs = ceil((cost - tokens) / refillPerMs)
 *   Decision.limit = capacity (truncated, as Redis truncates its reply)
 *
 * The bucket is refilled lazily and starts full on a cold key.  A cost above
 * capacity is never admitted and gets ThrottleKit's finite (misleading)
 * retryAfterMs, e.g. capacity 5 at 1/s with cost 6 -> 1000 ms.
 *
 * One deliberate difference from ThrottleKit: on a BACKWARD clock jump
 * (now < last) an admission persists last = max(last, now) = last, where
 * ThrottleKit persists last = now.  ThrottleKit's choice lets a later
 * forward step refill the interval [now, last] a second time (admit 5 at
 * t=10000, jump back to 5000 and admit 5, return to 10000: ThrottleKit has
 * refilled 5000 ms that were already counted).  Keeping the later `last`
 * refills every instant at most once.  The decision itself is unchanged, and
 * on a forward timeline (now >= last) max(last, now) = now, so forward
 * timelines are bit-identical to ThrottleKit's.
 *
 * State: TK_TOKEN_BUCKET_WORDS = 2 words, the exact bit patterns of two
 * doubles: st[0] = tokens (0 <= tokens <= capacity), st[1] = last (>= 0).
 * Both are finite, so no state word has its top 13 bits set (I4).
 */
#ifndef TKSHM_ALGORITHMS_TOKEN_BUCKET_H
#define TKSHM_ALGORITHMS_TOKEN_BUCKET_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

#define TK_TOKEN_BUCKET_WORDS 2

/* Derived once per table from the policy. */
struct tk_token_bucket {
	double capacity;      /* the bucket size; reported as Decision.limit */
	double refill_per_ms; /* refillPerSec / 1000 */
};

/* Validates capacity and refillPerSec (finite and > 0, and a rate that keeps
 * every decision field finite) and derives the constants.  Returns TKSHM_OK
 * or TKSHM_EPOLICY with a sentence in err. */
int tk_token_bucket_init(struct tk_token_bucket *a, double capacity,
			 double refill_per_sec, char *err, size_t err_len);

/* The tokens present at `now` (ThrottleKit's refill step); *last gets the
 * refill reference time. */
static inline double
tk_token_bucket_level(const struct tk_token_bucket *a, bool present,
		      const uint64_t *st, double now, double *last)
{
	double prev = present ? tk_word_f64(st[0]) : a->capacity;
	double l = present ? tk_word_f64(st[1]) : now;
	double elapsed = now > l ? now - l : 0;
	double x = prev + elapsed * a->refill_per_ms;

	*last = l;
	return x < a->capacity ? x : a->capacity; /* Math.min(capacity, x) */
}

/* One check.  Returns true when the request is admitted, with st_out[0..1]
 * the new state; a denial returns false, leaves st_out untouched and
 * consumes nothing.  `st` is read only when `present`; st_out may be st
 * itself. */
static inline bool
tk_token_bucket_check(const struct tk_token_bucket *a, bool present,
		      const uint64_t *st, double now, double cost,
		      uint64_t *st_out, tkshm_decision *d)
{
	double last;
	double tokens = tk_token_bucket_level(a, present, st, now, &last);
	/* Refill resumes at a `last` ahead of now (a clock regression, or an
	 * operator's block, tkshm_block_at).  0 on every forward timeline,
	 * where ceil(0 + x) is ceil(x): ThrottleKit's fields, bit for bit. */
	double wait = last > now ? last - now : 0;

	d->limit = tk_field(a->capacity);
	d->flags = 0;
	if (tokens >= cost) {
		double left = tokens - cost;

		d->allowed = true;
		d->remaining = tk_field_floor0(left);
		d->reset_at = tk_field(
			now + tk_ceil(wait +
				      (a->capacity - left) / a->refill_per_ms));
		d->retry_after_ms = 0;
		st_out[0] = tk_f64_word(left);
		/* The one difference (see the top of this file): never move
		 * `last` backwards. */
		st_out[1] = tk_f64_word(last > now ? last : now);
		return true;
	}
	d->allowed = false;
	d->remaining = tk_field_floor0(tokens);
	d->reset_at = tk_field(now + tk_ceil(wait + (a->capacity - tokens) /
							    a->refill_per_ms));
	d->retry_after_ms = tk_denial_retry(
		tk_field_ceil(wait + (cost - tokens) / a->refill_per_ms));
	return false;
}

/* ThrottleKit's peek: what a cost-1 request would see (remaining is the
 * whole tokens present now), writing nothing. */
static inline void
tk_token_bucket_peek(const struct tk_token_bucket *a, bool present,
		     const uint64_t *st, double now, tkshm_decision *d)
{
	double last;
	double tokens = tk_token_bucket_level(a, present, st, now, &last);
	double wait = last > now ? last - now : 0; /* as in the check */

	d->limit = tk_field(a->capacity);
	d->flags = 0;
	d->allowed = tokens >= 1;
	d->remaining = tk_field_floor0(tokens);
	d->reset_at = tk_field(now + tk_ceil(wait + (a->capacity - tokens) /
							    a->refill_per_ms));
	d->retry_after_ms =
		d->allowed ? 0 :
			     tk_denial_retry(tk_field_ceil(
				     wait + (1 - tokens) / a->refill_per_ms));
}

/* A full bucket whose `last` is not in the future decides exactly as an
 * absent key: the same tokens (capacity) now and the same state after. */
static inline bool
tk_token_bucket_is_idle(const struct tk_token_bucket *a, const uint64_t *st,
			double now)
{
	double last;
	double tokens = tk_token_bucket_level(a, true, st, now, &last);

	return last <= now && tokens == a->capacity;
}

/* How far from idle, in ms: the time until the bucket is full again (the
 * missing tokens at the refill rate, plus any wait until a future `last`).
 * 0 when idle. */
static inline double
tk_token_bucket_debt(const struct tk_token_bucket *a, const uint64_t *st,
		     double now)
{
	double last;
	double tokens = tk_token_bucket_level(a, true, st, now, &last);
	double wait = last > now ? last - now : 0;
	double debt;

	if (last <= now && tokens == a->capacity)
		return 0.0;
	debt = wait + (a->capacity - tokens) / a->refill_per_ms;
	/* Positive whenever not idle, even if the quotient underflows. */
	return debt > 0 ? debt : DBL_MIN;
}

/* I4: tokens in [0, capacity] and last a finite time >= 0. */
static inline bool
tk_token_bucket_state_valid(const struct tk_token_bucket *a, const uint64_t *st)
{
	/* Tokens above the capacity are a state: the capacity may have been
	 * lowered in place (protocol.h, L1); the refill clamps them. */
	(void)a;
	double tokens = tk_word_f64(st[0]);
	double last = tk_word_f64(st[1]);

	return isfinite(tokens) && tokens >= 0 && isfinite(last) && last >= 0;
}

#endif /* TKSHM_ALGORITHMS_TOKEN_BUCKET_H */
