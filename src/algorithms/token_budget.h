/*
 * token_budget.h - ThrottleKit's streaming token-budget meter (TALE layer
 * 1, `tokenBudget`), as a pure transition.
 *
 * (state, now, tokens) -> (state', decision); no clock, no shared memory.
 * The arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Token budget").  L = floor(budget).
 *
 *   roll: if no state or now >= w + windowMs:
 *           w = floor(now / windowMs) * windowMs, served = 0
 *   resetAt = ceil(w + windowMs)
 *   served >= L: DENY  {remaining 0, retryAfterMs max(0, ceil(resetAt - now))}
 *   otherwise:   ALLOW, served += tokens
 *                {remaining max(0, L - served), retryAfterMs 0}
 *   Decision.limit = L
 *
 * Stop-at-boundary: a debit is admitted while budget remains BEFORE it
 * (served < L), and the debit that crosses L is counted in full, so the
 * overshoot is at most tokens - 1 (0 when debiting one token at a time);
 * every later debit in the window is refused.  A single debit larger than L
 * is admitted when the window is fresh (budget 100: 80 then 50 are both
 * admitted, served = 130, the next is denied).
 *
 * Unlike the fixed window, the window only rolls FORWARD: after a backward
 * clock jump the state's (later) window and its count still apply, so a
 * regression can never re-open a spent budget.  This is ThrottleKit's own
 * behaviour; there is no deliberate difference here.
 *
 * The cost is ThrottleKit's `tokens`: a positive integer (requireInteger) no
 * larger than 2^53 - 1.  tk_token_budget_cost_valid() tells the caller
 * whether to refuse a cost with TKSHM_ECOST before calling check.
 *
 * State: TK_TOKEN_BUDGET_WORDS = 2 words, the exact bit patterns of two
 * doubles: st[0] = w (a window start, finite, >= 0), st[1] = served
 * (finite, >= 0; 0 when a give-back took back every token of the window,
 * src/algorithms/refund.c).  No word has its top 13 bits set (I4).
 */
#ifndef TKSHM_ALGORITHMS_TOKEN_BUDGET_H
#define TKSHM_ALGORITHMS_TOKEN_BUDGET_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

#define TK_TOKEN_BUDGET_WORDS 2

/* Derived once per table from the policy. */
struct tk_token_budget {
	double L; /* tk_floor(budget): tokens per window, Decision.limit */
	double window_ms; /* window width */
};

/* Validates budget (finite and >= 1) and windowMs (finite and > 0, with
 * every window boundary up to now = 2^42 finite) and derives L.  Returns
 * TKSHM_OK or TKSHM_EPOLICY with a sentence in err. */
int tk_token_budget_init(struct tk_token_budget *a, double budget,
			 double window_ms, char *err, size_t err_len);

/* ThrottleKit's tokens check: a positive integer (and, as every tkshm cost,
 * at most 2^53 - 1). */
static inline bool
tk_token_budget_cost_valid(double tokens)
{
	return tokens >= 1 && tokens <= TKSHM_COST_MAX &&
	       tokens == tk_floor(tokens);
}

/*
 * The window a debit at `now` falls in (after the forward-only roll) and
 * the tokens already served in it.
 *
 * ThrottleKit rolls whenever `now >= w + windowMs`, to floor(now/windowMs)
 * * windowMs.  Within an ulp below a boundary that start can round to the
 * state's own w (windowMs = 100.1 at now = 930839729987.6 and many
 * others): its end is still <= now, so every debit at that now rolled
 * again and was admitted, without bound.  tkshm rolls only to a LATER
 * start, so a roll always moves forward; where ThrottleKit would have
 * rolled in place the spent budget stands (a denial where it admits).
 */
static inline double
tk_token_budget_served(const struct tk_token_budget *a, bool present,
		       const uint64_t *st, double now, double *w)
{
	double start = present ? tk_word_f64(st[0]) : 0;

	if (!present || now >= start + a->window_ms) {
		*w = floor(now / a->window_ms) * a->window_ms;
		if (!present || *w > start)
			return 0;
	}
	*w = start;
	return tk_word_f64(st[1]);
}

/* One debit of `tokens` (the cost).  Returns true when admitted, with
 * st_out[0..1] the new state; a denial returns false, leaves st_out
 * untouched and consumes nothing.  `st` is read only when `present`;
 * st_out may be st itself. */
static inline bool
tk_token_budget_check(const struct tk_token_budget *a, bool present,
		      const uint64_t *st, double now, double tokens,
		      uint64_t *st_out, tkshm_decision *d)
{
	double w;
	double served = tk_token_budget_served(a, present, st, now, &w);
	double reset_at = tk_ceil(w + a->window_ms);

	d->limit = tk_field(a->L);
	d->flags = 0;
	d->reset_at = tk_field(reset_at);
	if (served >= a->L) {
		d->allowed = false;
		d->remaining = 0;
		d->retry_after_ms = tk_denial_retry(
			tk_field(tk_clamp0(tk_ceil(reset_at - now))));
		return false;
	}
	served += tokens;
	d->allowed = true;
	d->remaining = tk_field(tk_clamp0(a->L - served));
	d->retry_after_ms = 0;
	st_out[0] = tk_f64_word(w);
	st_out[1] = tk_f64_word(served);
	return true;
}

/* What a one-token debit would see (remaining is what is left before it),
 * writing nothing.  ThrottleKit's meter has no peek; this follows the
 * peeks of its rate limiters and its remaining(). */
static inline void
tk_token_budget_peek(const struct tk_token_budget *a, bool present,
		     const uint64_t *st, double now, tkshm_decision *d)
{
	double w;
	double served = tk_token_budget_served(a, present, st, now, &w);
	double reset_at = tk_ceil(w + a->window_ms);

	d->limit = tk_field(a->L);
	d->flags = 0;
	d->allowed = served < a->L;
	d->remaining = tk_field(tk_clamp0(a->L - served));
	d->reset_at = tk_field(reset_at);
	d->retry_after_ms = d->allowed ? 0 :
					 tk_denial_retry(tk_field(tk_clamp0(
						 tk_ceil(reset_at - now))));
}

/* A state whose window has ended rolls exactly as an absent key does (and
 * one that would roll in place is not idle: tk_token_budget_served). */
static inline bool
tk_token_budget_is_idle(const struct tk_token_budget *a, const uint64_t *st,
			double now)
{
	double start = tk_word_f64(st[0]);

	return now >= start + a->window_ms &&
	       floor(now / a->window_ms) * a->window_ms > start;
}

/* How far from idle, in tokens: what eviction would forgive (all keys share
 * the epoch-aligned windows, so time until idle would not tell them apart).
 * 0 when idle. */
static inline double
tk_token_budget_debt(const struct tk_token_budget *a, const uint64_t *st,
		     double now)
{
	return tk_token_budget_is_idle(a, st, now) ? 0.0 : tk_word_f64(st[1]);
}

/* I4: a finite window start >= 0 and a finite served >= 0 (a whole number
 * when every cost passed tk_token_budget_cost_valid). */
static inline bool
tk_token_budget_state_valid(const struct tk_token_budget *a, const uint64_t *st)
{
	double w = tk_word_f64(st[0]);
	double served = tk_word_f64(st[1]);

	(void)a;
	return isfinite(w) && w >= 0 && isfinite(served) && served >= 0;
}

#endif /* TKSHM_ALGORITHMS_TOKEN_BUDGET_H */
