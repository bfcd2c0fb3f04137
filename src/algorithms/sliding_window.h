/*
 * sliding_window.h - ThrottleKit's sub-bucketed sliding window, as a pure
 * transition.
 *
 * (state, now, cost) -> (state', decision); no clock, no shared memory.  The
 * arithmetic is IEEE-754 double in ThrottleKit's exact order
 * (docs/semantics.md, "Sliding window"); the build uses
 * -ffp-contract=off so no step is fused.
 *
 *   w = windowMs / S   (S = buckets)        slots = S + 1
 *   c = floor(now / w)                       elapsed = max(0, now - c*w)
 *   weight = (w - elapsed) / w, then < 0 -> 0, then > 1 -> 1
 *   get(idx) = 0 if idx < 0, else the count of ring entry idx mod slots
 *              if that entry's tick is idx, else 0 (an older lap)
 *   full = sum of get(j) for j = c-S+1 .. c, in ascending j
 *   oldest = get(c - S)
 *   estimate = full + oldest*weight          projected = estimate + cost
 *   resetAt = ceil((c + 1)*w + windowMs)     Decision.limit = limit
 *   allow iff projected <= limit (the fractional estimate, never floored):
 *     entry c mod slots := {c, get(c) + cost}
 *     remaining = max(0, floor(limit - projected)), retryAfterMs = 0
 *   deny: D = projected - limit
 *     retry = (oldest > 0 && D <= oldest*weight) ? ceil(D*w / oldest)
 *                                                : ceil((c + 1)*w - now)
 *     retryAfterMs = max(retry, 1) (advisory)
 *     remaining = max(0, floor(limit - estimate))
 *
 * Only the oldest of the S + 1 sub-buckets is approximated (linearly), so
 * the estimate errs by at most that bucket's count.  buckets = 1 is the
 * classic two-counter estimator: Cloudflare's example, 42 in the previous
 * minute and 18 in this one, 15 s in, estimates 42*0.75 + 18 = 49.5.
 *
 * One deliberate difference from ThrottleKit, for clock regressions.
 * ThrottleKit recomputes c from `now` alone, so a backward jump into an
 * earlier tick reads an older lap of the ring as 0, admits, and overwrites
 * a newer entry with the older tick (the newer units are forgotten).  Here,
 * when c is below the newest tick stored in the ring, the request is
 * decided AT THAT NEWEST TICK (c := newest; `now` itself is kept, so
 * elapsed clamps to 0 and the oldest bucket weighs fully): the window never
 * moves back, a regression may deny early, and the units charged to the S
 * ticks ending at any (effective) tick never exceed `limit`.  c is monotone
 * in now, so on a forward timeline the case never arises and decisions are
 * bit-identical to ThrottleKit's.
 *
 * Limits of this port (refused by tk_sliding_window_init):
 * - buckets <= TK_SLIDING_WINDOW_MAX_BUCKETS (64): the state is S + 2
 *   words per key, at most 66 (528 bytes);
 * - the sub-bucket width w >= TK_SLIDING_WINDOW_MIN_WIDTH_MS (1/64 ms), so
 *   that ticks stay below 2^51 until now = TK_SLIDING_WINDOW_TICK_MAX * w
 *   >= 2^45 ms (year 3084).  A `now` beyond that horizon is decided at tick
 *   TK_SLIDING_WINDOW_TICK_MAX (the window stops moving: conservative);
 * - limit and windowMs below 1e300, so every decision field stays finite.
 *
 * State: tk_sliding_window_words() = S + 2 words.  ThrottleKit's ring
 * keeps a tick per entry, but every read above is of ticks c-S .. c with
 * c >= the newest tick stored, so only the entries holding one of the S + 1
 * ticks newest-S .. newest can ever be read: those are kept, one count per
 * position, and the newest tick once:
 *   st[0]     = newest + 1, an integer in [1, 2^51), or 0 when empty;
 *   st[1 + p] = the count of the one tick t = p (mod S+1) with
 *               newest-S <= t <= newest, the bit pattern of a double > 0,
 *               or 0 when that tick holds no units (or t < 0).
 * So get(idx) = count[idx mod (S+1)] if newest-S <= idx <= newest, else 0:
 * what ThrottleKit's get() reads for every idx a decision looks at.  The
 * form is canonical (state_valid refuses any other): the newest tick holds
 * units (count[newest mod (S+1)] > 0, so newest is the newest tick with
 * units, as in the ring), and positions without units are 0.  An admission
 * at c > newest zeroes the positions of the ticks newest+1 .. c (they held
 * ticks c-S-1 and older, which leave the window), sets st[0] and adds to
 * count[c mod (S+1)]; at c = newest it changes that count only.
 *
 * What the narrower state gives up: the ring's entries older than
 * newest-S, which no decision reads.  They showed only after a refund
 * (refund.c) emptied the newest tick, when the ring's newest stepped back
 * to them; here it steps back to the newest tick left with units in the
 * window, or to empty.  Forward decisions are unchanged; after such a
 * refund, a clock regression can be decided at a different tick.
 *
 * No word is ever negative, so no state word has its top 13 bits all set
 * (I4).  The functions take `now` finite and >= 0, as the API checks it; a
 * negative now is decided at tick 0.
 */
#ifndef TKSHM_ALGORITHMS_SLIDING_WINDOW_H
#define TKSHM_ALGORITHMS_SLIDING_WINDOW_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/decision.h"
#include "base/words.h"
#include "tkshm.h"
#include "algorithms/rounding.h"

#define TK_SLIDING_WINDOW_DEFAULT_BUCKETS 10 /* ThrottleKit's default */
#define TK_SLIDING_WINDOW_MAX_BUCKETS	  64 /* this port's maximum */
/* The largest tick: tick + 1 stays below 2^51. */
#define TK_SLIDING_WINDOW_TICK_MAX INT64_C(2251799813685246) /* 2^51 - 2 */
/* The narrowest sub-bucket, in ms: keeps the tick horizon >= 2^45 ms. */
#define TK_SLIDING_WINDOW_MIN_WIDTH_MS 0.015625 /* 2^-6 */

/* Derived once per table from the policy. */
struct tk_sliding_window {
	double limit;	  /* compared with the estimate; Decision.limit */
	double window_ms; /* the window */
	double w;	  /* windowMs / S, one tick */
	unsigned S;	  /* buckets */
	unsigned slots;	  /* S + 1 ring entries */
};

/* Validates limit and windowMs (finite, > 0, below 1e300) and buckets (an
 * integer in [1, 64]; ThrottleKit's default, applied by the caller, is
 * TK_SLIDING_WINDOW_DEFAULT_BUCKETS), with windowMs / buckets >= 1/64 ms,
 * and derives the constants.  Returns TKSHM_OK or TKSHM_EPOLICY with a
 * sentence naming the parameter in err. */
int tk_sliding_window_init(struct tk_sliding_window *a, double limit,
			   double window_ms, double buckets, char *err,
			   size_t err_len);

/* The state size in 64-bit words: buckets + 2. */
static inline unsigned
tk_sliding_window_words(const struct tk_sliding_window *a)
{
	return 1 + a->slots;
}

/* The newest tick stored, or -1 when the state is empty.  In [-1,
 * TICK_MAX] even for an invalid state (the subtraction is unsigned), so no
 * tick arithmetic overflows. */
static inline int64_t
tk_sliding_window_stored_newest(const uint64_t *st)
{
	int64_t t = tk_word_i64(st[0] - 1);

	if (t < 0)
		return -1;
	return t < TK_SLIDING_WINDOW_TICK_MAX ? t : TK_SLIDING_WINDOW_TICK_MAX;
}

/* The newest tick stored, or -1 when empty or absent (st NULL). */
static inline int64_t
tk_sliding_window_newest(const struct tk_sliding_window *a, const uint64_t *st)
{
	(void)a;
	return st ? tk_sliding_window_stored_newest(st) : -1;
}

/* The tick position p stands for when the newest tick is `newest`: the one
 * t = p (mod S+1) in newest-S .. newest (negative when newest < S and p >
 * newest: no tick). */
static inline int64_t
tk_sliding_window_pos_tick(const struct tk_sliding_window *a, int64_t newest,
			   unsigned p)
{
	int64_t back = (newest - (int64_t)p) % (int64_t)a->slots;

	if (back < 0)
		back += (int64_t)a->slots; /* newest = -1 */
	return newest - back;
}

/* ThrottleKit's get(idx); st is NULL for an absent key. */
static inline double
tk_sliding_window_get(const struct tk_sliding_window *a, const uint64_t *st,
		      int64_t idx)
{
	int64_t newest;

	if (!st || idx < 0)
		return 0;
	newest = tk_sliding_window_stored_newest(st);
	if (idx > newest || idx < newest - (int64_t)a->S)
		return 0;
	return tk_word_f64(st[1 + (unsigned)(idx % a->slots)]);
}

/* Everything a decision at `now` reads from the ring. */
struct tk_sliding_window_view {
	int64_t c;	 /* the tick decided at (the regression rule applied) */
	double cw;	 /* c as a double */
	double weight;	 /* of the oldest bucket */
	double oldest;	 /* get(c - S) */
	double estimate; /* full + oldest*weight */
};

/* The tick of `now`: floor(now / w), kept within [0, TICK_MAX]. */
static inline int64_t
tk_sliding_window_tick(const struct tk_sliding_window *a, double now)
{
	double q = tk_floor(now / a->w);

	if (!(q <= (double)TK_SLIDING_WINDOW_TICK_MAX))
		return TK_SLIDING_WINDOW_TICK_MAX; /* beyond the horizon */
	if (!(q >= 0))
		return 0; /* a negative now, outside the contract */
	return (int64_t)q;
}

static inline void
tk_sliding_window_eval(const struct tk_sliding_window *a, const uint64_t *st,
		       double now, struct tk_sliding_window_view *v)
{
	int64_t c = tk_sliding_window_tick(a, now);
	int64_t newest = tk_sliding_window_newest(a, st);
	double elapsed, weight, full = 0;

	/* The one difference (see the top of this file): never decide at a
	 * tick before the newest one stored. */
	if (newest > c)
		c = newest;
	v->c = c;
	v->cw = (double)c;
	elapsed = now - v->cw * a->w;
	if (!(elapsed > 0))
		elapsed = 0; /* Math.max(0, now - c*w) */
	weight = (a->w - elapsed) / a->w;
	if (weight < 0)
		weight = 0;
	if (weight > 1)
		weight = 1;
	for (int64_t j = c - (int64_t)a->S + 1; j <= c; j++)
		full += tk_sliding_window_get(a, st, j);
	v->weight = weight;
	v->oldest = tk_sliding_window_get(a, st, c - (int64_t)a->S);
	v->estimate = full + v->oldest * weight;
}

/* ThrottleKit's advisory retryAfterMs for a denial with `projected`. */
static inline int64_t
tk_sliding_window_retry(const struct tk_sliding_window *a,
			const struct tk_sliding_window_view *v,
			double projected, double now)
{
	double D = projected - a->limit;
	double retry;

	if (v->oldest > 0 && D <= v->oldest * v->weight)
		retry = tk_ceil(D * a->w / v->oldest);
	else
		retry = tk_ceil((v->cw + 1) * a->w - now);
	if (!(retry >= 1))
		retry = 1;
	return tk_field(retry);
}

/* st (NULL: empty) moved to newest tick c >= its own into st_out (it may be
 * st itself): the positions of the ticks newest+1 .. c are zeroed, for the
 * ticks they held (c-S-1 and older) leave the window, and st_out[0] = c+1.
 * At c = newest, a copy. */
static inline void
tk_sliding_window_advance(const struct tk_sliding_window *a, const uint64_t *st,
			  int64_t c, uint64_t *st_out)
{
	int64_t newest = st ? tk_sliding_window_stored_newest(st) : -1;

	if (!st || c - newest >= (int64_t)a->slots) {
		memset(st_out, 0, sizeof *st_out * tk_sliding_window_words(a));
	} else {
		if (st_out != st)
			memcpy(st_out, st,
			       sizeof *st_out * tk_sliding_window_words(a));
		for (int64_t t = newest + 1; t <= c; t++)
			st_out[1 + (unsigned)(t % a->slots)] = 0;
	}
	st_out[0] = tk_i64_word(c + 1);
}

/* One check.  `present` says whether a state exists (st may be NULL when it
 * does not).  Returns true when the request is admitted, with st_out (all
 * tk_sliding_window_words() words; it may be st itself) the new state: st
 * (or an empty state) moved to tick c, with c's count raised by cost.  A
 * denial returns false, leaves st_out untouched and consumes nothing. */
static inline bool
tk_sliding_window_check(const struct tk_sliding_window *a, bool present,
			const uint64_t *st, double now, double cost,
			uint64_t *st_out, tkshm_decision *d)
{
	struct tk_sliding_window_view v;
	double projected;

	if (!present)
		st = NULL;
	tk_sliding_window_eval(a, st, now, &v);
	projected = v.estimate + cost;
	d->limit = tk_field(a->limit);
	d->flags = 0;
	d->reset_at = tk_field_ceil((v.cw + 1) * a->w + a->window_ms);
	if (projected <= a->limit) {
		double count = tk_sliding_window_get(a, st, v.c) + cost;

		d->allowed = true;
		d->remaining = tk_field_floor0(a->limit - projected);
		d->retry_after_ms = 0;
		tk_sliding_window_advance(a, st, v.c, st_out);
		st_out[1 + (unsigned)(v.c % a->slots)] = tk_f64_word(count);
		return true;
	}
	d->allowed = false;
	d->remaining = tk_field_floor0(a->limit - v.estimate);
	d->retry_after_ms = tk_sliding_window_retry(a, &v, projected, now);
	return false;
}

/* What a cost-1 request would see, writing nothing: allowed iff
 * estimate + 1 <= limit; remaining is what is left before it
 * (max(0, floor(limit - estimate))); resetAt and the deny retryAfterMs are
 * those of a cost-1 check. */
static inline void
tk_sliding_window_peek(const struct tk_sliding_window *a, bool present,
		       const uint64_t *st, double now, tkshm_decision *d)
{
	struct tk_sliding_window_view v;
	double projected;

	tk_sliding_window_eval(a, present ? st : NULL, now, &v);
	projected = v.estimate + 1;
	d->limit = tk_field(a->limit);
	d->flags = 0;
	d->allowed = projected <= a->limit;
	d->remaining = tk_field_floor0(a->limit - v.estimate);
	d->reset_at = tk_field_ceil((v.cw + 1) * a->w + a->window_ms);
	d->retry_after_ms =
		d->allowed ? 0 : tk_sliding_window_retry(a, &v, projected, now);
}

/* Idle: every stored tick is before c - S (c = now's tick), so get() reads
 * 0 for every tick a decision at now or later looks at, and the regression
 * rule does not apply: the state decides exactly as an absent key, now and
 * at every later time. */
static inline bool
tk_sliding_window_is_idle(const struct tk_sliding_window *a, const uint64_t *st,
			  double now)
{
	int64_t newest = tk_sliding_window_newest(a, st);

	return newest < 0 ||
	       newest < tk_sliding_window_tick(a, now) - (int64_t)a->S;
}

/* How far from idle, in units: the counts of the S + 1 ticks a decision at
 * now reads (full + oldest, unweighted), i.e. what eviction would forgive.
 * Every key of a table shares the same tick boundaries, so the time until
 * idle would hardly tell keys apart.  0 exactly when idle (counts are > 0).
 */
static inline double
tk_sliding_window_debt(const struct tk_sliding_window *a, const uint64_t *st,
		       double now)
{
	struct tk_sliding_window_view v;
	double units = 0;

	if (tk_sliding_window_is_idle(a, st, now))
		return 0.0;
	tk_sliding_window_eval(a, st, now, &v);
	for (int64_t j = v.c - (int64_t)a->S; j <= v.c; j++)
		units += tk_sliding_window_get(a, st, j);
	return units;
}

/* I4 and the canonical form: empty (all words 0), or newest in [0,
 * TICK_MAX] with a count > 0 at its position, every count 0 or a finite
 * double > 0, and 0 at the positions that stand for no tick (t < 0). */
static inline bool
tk_sliding_window_state_valid(const struct tk_sliding_window *a,
			      const uint64_t *st)
{
	int64_t newest = tk_word_i64(st[0] - 1);

	if (st[0] != 0 && (newest < 0 || newest > TK_SLIDING_WINDOW_TICK_MAX))
		return false;
	if (st[0] != 0 && st[1 + (unsigned)(newest % a->slots)] == 0)
		return false; /* the newest tick holds no units */
	for (unsigned p = 0; p < a->slots; p++) {
		double n = tk_word_f64(st[1 + p]);

		if (st[1 + p] == 0)
			continue;
		if (st[0] == 0 || tk_sliding_window_pos_tick(a, newest, p) < 0)
			return false;
		if (!(n > 0) || !isfinite(n))
			return false;
	}
	return true;
}

#endif /* TKSHM_ALGORITHMS_SLIDING_WINDOW_H */
