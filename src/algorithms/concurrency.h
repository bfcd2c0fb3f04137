/*
 * concurrency.h - concurrency limits and adaptive concurrency, as pure
 * transitions over a key's permit state.
 *
 * State words (TK_CONC_HEAD + cap of them; cap = limit, or maxLimit for an
 * adaptive limit):
 *   [0] host       the boot the cells were written in (tk_conc.host); cells
 *                  written in another boot hold nobody
 *   [1] limit      adaptive: the limit's current value (a double in
 *                  [minLimit, maxLimit]); fixed: the policy's limit
 *   [2] prev_min   gradient2: the least latency of the previous window
 *                  (0: none)
 *   [3] cur_min    gradient2: the least latency of the current window
 *                  (0: none yet)
 *   [4] win_start  gradient2: when the current window began
 *   [5] last_use   the last acquire or sample, for idleness
 *   [6 ..]         one cell per permit: 0 when free, else the holder word
 *                  of the process holding it (tk_holder_word: pid and start
 *                  time, src/base/proc.h)
 *
 * C1  A permit exists exactly when a cell holds a holder word, so the
 *     permits held are the non-zero cells: never more than cap, and an
 *     acquire is granted only while fewer than the limit in force are
 *     held (the whole state moves in one wide transition, protocol.h W2-W4,
 *     so two acquires never both see the last free permit).
 * C2  A release clears only the cell its permit names, and only while that
 *     cell still holds the releasing process's word.
 * C3  A reap clears only cells whose holder word is in the list of
 *     processes the store found dead; a holder word never comes back to
 *     life (pid and start time name one process of one boot).
 * C4  Denials (refused acquires, releases of a permit not held) write
 *     nothing (I7).
 *
 * Adaptive limits (gradient2, after Netflix's Gradient2Limit):
 *   rttNoLoad = min(prev_min, cur_min), windows of rttWindowMs
 *   when fewer than limit / 2 were in flight, the limit stays (app-limited)
 *   gradient  = clamp(tolerance * rttNoLoad / rtt, 0.5, 1.0)
 *   new       = limit * gradient + sqrt(limit)
 *   limit'    = clamp(limit * (1 - smoothing) + new * smoothing, min, max)
 * AIMD: a drop or rtt > timeoutMs: limit * backoffRatio; else, while at
 * least half the limit is in flight, limit + 1; clamped to [min, max].
 * The limit in force is floor(limit).
 */
#ifndef TKSHM_ALGORITHMS_CONCURRENCY_H
#define TKSHM_ALGORITHMS_CONCURRENCY_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "algorithms/decision.h"
#include "algorithms/rounding.h"
#include "base/words.h"
#include "tkshm.h"

#define TK_CONC_HEAD	  6u
#define TK_CONC_MAX_LIMIT TKSHM_CONCURRENCY_MAX_LIMIT
#define TK_CONC_MAX_WORDS (TK_CONC_HEAD + TK_CONC_MAX_LIMIT)

#define TK_CONC_W_HOST	    0
#define TK_CONC_W_LIMIT	    1
#define TK_CONC_W_PREV_MIN  2
#define TK_CONC_W_CUR_MIN   3
#define TK_CONC_W_WIN_START 4
#define TK_CONC_W_LAST_USE  5

/* ThrottleKit-style defaults of adaptiveConcurrency (policy.c). */
#define TK_ADAPTIVE_INITIAL_LIMIT_DEFAULT 20
#define TK_ADAPTIVE_MIN_LIMIT_DEFAULT	  1
#define TK_ADAPTIVE_MAX_LIMIT_DEFAULT	  200
#define TK_ADAPTIVE_SMOOTHING_DEFAULT	  0.2
#define TK_ADAPTIVE_TOLERANCE_DEFAULT	  1.5
#define TK_ADAPTIVE_RTT_WINDOW_MS_DEFAULT 10000
#define TK_ADAPTIVE_BACKOFF_RATIO_DEFAULT 0.9
#define TK_ADAPTIVE_TIMEOUT_MS_DEFAULT	  5000

/* An adaptive key with no permit held forgets what it learned (and its slot
 * may be reclaimed) after this long without use, in windows (gradient2) or
 * timeouts (aimd). */
#define TK_ADAPTIVE_FORGET_PERIODS 6

struct tk_conc {
	bool adaptive;
	unsigned algorithm; /* tkshm_adaptive_algorithm (adaptive only) */
	uint32_t cap;	    /* cells */
	double limit;	    /* fixed: the limit; adaptive: initialLimit */
	double min_limit, max_limit;
	double smoothing, tolerance, rtt_window_ms;
	double backoff_ratio, timeout_ms;
	double forget_ms; /* idle after this long unused (adaptive) */
	/* The boot this process runs in (never 0); set by the store when a
	 * table is attached, since an algorithm reads no files. */
	uint64_t host;
};

/* Validates a policy's parameters (policy.c's ranges) into *c.  TKSHM_OK or
 * TKSHM_EPOLICY with a sentence in err. */
int tk_conc_init(struct tk_conc *c, const tkshm_policy *p, char *err,
		 size_t err_len);

static inline unsigned
tk_conc_words(const struct tk_conc *c)
{
	return TK_CONC_HEAD + c->cap;
}

/* The state of an absent key. */
static inline void
tk_conc_fresh(const struct tk_conc *c, uint64_t *w)
{
	w[TK_CONC_W_HOST] = c->host;
	w[TK_CONC_W_LIMIT] = tk_f64_word(c->limit);
	for (unsigned i = TK_CONC_W_PREV_MIN; i < TK_CONC_HEAD; i++)
		w[i] = 0; /* 0.0 */
	for (unsigned i = 0; i < c->cap; i++)
		w[TK_CONC_HEAD + i] = 0; /* free cells */
}

/* Copies the key's state into w, as it stands in this boot: cells written
 * in another boot are free. */
static inline void
tk_conc_load(const struct tk_conc *c, bool present, const uint64_t *st,
	     uint64_t *w)
{
	if (!present) {
		tk_conc_fresh(c, w);
		return;
	}
	bool other_boot = st[TK_CONC_W_HOST] != c->host;

	w[TK_CONC_W_HOST] = c->host;
	for (unsigned i = TK_CONC_W_LIMIT; i < TK_CONC_HEAD; i++)
		w[i] = st[i];
	for (unsigned i = 0; i < c->cap; i++)
		w[TK_CONC_HEAD + i] = other_boot ? 0 : st[TK_CONC_HEAD + i];
}

static inline uint32_t
tk_conc_held(const struct tk_conc *c, const uint64_t *w)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < c->cap; i++)
		n += w[TK_CONC_HEAD + i] != 0;
	return n;
}

/* The limit in force: whole permits. */
static inline uint32_t
tk_conc_limit_now(const struct tk_conc *c, const uint64_t *w)
{
	double l = c->adaptive ? tk_word_f64(w[TK_CONC_W_LIMIT]) : c->limit;

	return (uint32_t)tk_floor(l);
}

static inline void
tk_conc_decision(const struct tk_conc *c, const uint64_t *w, uint32_t held,
		 bool allowed, double now, tkshm_decision *d)
{
	uint32_t lim = tk_conc_limit_now(c, w);

	d->allowed = allowed;
	d->limit = lim;
	d->remaining = held < lim ? (int64_t)(lim - held) : 0;
	d->reset_at = tk_field_ceil(now);
	d->retry_after_ms = 0;
	d->flags = 0;
}

/* An acquire by `holder` (non-zero), trying cells from `hint` on.  True
 * when granted: *next is the state with the permit in cell *cell.  A
 * refusal leaves *next unspecified (nothing is written, C4). */
static inline bool
tk_conc_acquire(const struct tk_conc *c, bool present, const uint64_t *st,
		double now, uint64_t holder, uint32_t hint, uint64_t *next,
		uint32_t *cell, tkshm_decision *d)
{
	uint32_t held;

	tk_conc_load(c, present, st, next);
	held = tk_conc_held(c, next);
	if (held >= tk_conc_limit_now(c, next)) {
		tk_conc_decision(c, next, held, false, now, d);
		return false;
	}
	for (uint32_t k = 0; k < c->cap; k++) {
		uint32_t i = (hint + k) % c->cap;

		if (next[TK_CONC_HEAD + i] == 0) {
			next[TK_CONC_HEAD + i] = holder;
			*cell = i;
			break;
		}
	}
	/* C1: held < limit <= cap, so a free cell was found. */
	next[TK_CONC_W_LAST_USE] = tk_f64_word(now);
	tk_conc_decision(c, next, held + 1, true, now, d);
	return true;
}

/* One latency sample of an adaptive limit, `inflight` permits being held
 * when it was taken (this one included). */
static inline void
tk_conc_sample(const struct tk_conc *c, uint64_t *w, double now, double rtt,
	       uint32_t inflight, bool dropped)
{
	double limit = tk_word_f64(w[TK_CONC_W_LIMIT]);

	if (c->algorithm == TKSHM_ADAPTIVE_AIMD) {
		if (dropped || rtt > c->timeout_ms)
			limit = limit * c->backoff_ratio;
		else if ((double)inflight * 2 >= limit)
			limit = limit + 1;
	} else {
		double prev = tk_word_f64(w[TK_CONC_W_PREV_MIN]);
		double cur = tk_word_f64(w[TK_CONC_W_CUR_MIN]);
		double start = tk_word_f64(w[TK_CONC_W_WIN_START]);
		double since = now - start;
		double noload;

		/* A caller whose `now` lags the window's start (clocks of
		 * processes differ a little) samples into the current
		 * window rather than erase the history. */
		if (cur == 0 || since >= c->rtt_window_ms) {
			/* A new window; the last one counts only if it was
			 * the one just before. */
			prev = since < 2 * c->rtt_window_ms ? cur : 0;
			cur = rtt;
			start = now;
		} else if (rtt < cur) {
			cur = rtt;
		}
		w[TK_CONC_W_PREV_MIN] = tk_f64_word(prev);
		w[TK_CONC_W_CUR_MIN] = tk_f64_word(cur);
		w[TK_CONC_W_WIN_START] = tk_f64_word(start);
		noload = prev > 0 && prev < cur ? prev : cur;
		if ((double)inflight >= limit / 2) {
			double g = c->tolerance * noload / rtt;
			double nl;

			g = g < 0.5 ? 0.5 : (g > 1.0 ? 1.0 : g);
			nl = limit * g + sqrt(limit);
			limit = limit * (1 - c->smoothing) + nl * c->smoothing;
		}
	}
	if (limit < c->min_limit)
		limit = c->min_limit;
	if (limit > c->max_limit)
		limit = c->max_limit;
	w[TK_CONC_W_LIMIT] = tk_f64_word(limit);
	w[TK_CONC_W_LAST_USE] = tk_f64_word(now);
}

/* A release of cell `cell` by `holder`.  True when the permit was held
 * (C2): *next is the state without it, and for an adaptive limit with a
 * sample (`sample` true and rtt finite and > 0, or an AIMD drop) the limit
 * has moved. */
static inline bool
tk_conc_release(const struct tk_conc *c, bool present, const uint64_t *st,
		double now, uint64_t holder, uint32_t cell, bool sample,
		double rtt, bool dropped, uint64_t *next)
{
	uint32_t held;

	tk_conc_load(c, present, st, next);
	if (cell >= c->cap || holder == 0 ||
	    next[TK_CONC_HEAD + cell] != holder)
		return false;
	held = tk_conc_held(c, next);
	next[TK_CONC_HEAD + cell] = 0;
	if (c->adaptive && sample) {
		bool timed = isfinite(rtt) && rtt > 0;

		/* gradient2 needs a latency; AIMD backs off on a drop even
		 * when it came at once (an immediate 503). */
		if (timed || (dropped && c->algorithm == TKSHM_ADAPTIVE_AIMD))
			tk_conc_sample(c, next, now, timed ? rtt : 0, held,
				       dropped);
	}
	return true;
}

/* A reap: frees every cell whose holder is among dead[0..n).  Returns the
 * number freed (0: nothing to write, C4). */
static inline uint32_t
tk_conc_reap(const struct tk_conc *c, bool present, const uint64_t *st,
	     const uint64_t *dead, uint32_t n, uint64_t *next)
{
	uint32_t freed = 0;

	tk_conc_load(c, present, st, next);
	for (unsigned i = 0; i < c->cap; i++) {
		uint64_t h = next[TK_CONC_HEAD + i];

		for (uint32_t k = 0; h != 0 && k < n; k++) {
			if (dead[k] == h) {
				next[TK_CONC_HEAD + i] = 0;
				freed++;
				break;
			}
		}
	}
	/* A state from another boot also changes (its cells were freed by
	 * the load); that is written with the first real reap. */
	return freed;
}

/* What an acquire would decide now, writing nothing. */
static inline void
tk_conc_peek(const struct tk_conc *c, bool present, const uint64_t *st,
	     double now, tkshm_decision *d)
{
	uint64_t w[TK_CONC_MAX_WORDS];
	uint32_t held;

	tk_conc_load(c, present, st, w);
	held = tk_conc_held(c, w);
	tk_conc_decision(c, w, held, held < tk_conc_limit_now(c, w), now, d);
}

/* Idle: no permit held, and an adaptive limit unused for forget_ms (what
 * it learned is then stale), so an absent key decides the same. */
static inline bool
tk_conc_is_idle(const struct tk_conc *c, const uint64_t *st, double now)
{
	uint64_t w[TK_CONC_MAX_WORDS];

	tk_conc_load(c, true, st, w);
	if (tk_conc_held(c, w) != 0)
		return false;
	return !c->adaptive ||
	       now - tk_word_f64(w[TK_CONC_W_LAST_USE]) >= c->forget_ms;
}

/* A state this table accepts: finite, non-negative doubles, and an
 * adaptive limit within [min, max]. */
static inline bool
tk_conc_state_valid(const struct tk_conc *c, const uint64_t *st)
{
	for (unsigned i = TK_CONC_W_LIMIT; i <= TK_CONC_W_LAST_USE; i++) {
		double x = tk_word_f64(st[i]);

		if (!isfinite(x) || !(x >= 0))
			return false;
	}
	if (c->adaptive) {
		double l = tk_word_f64(st[TK_CONC_W_LIMIT]);

		/* Not min_limit: it may have been raised in place since
		 * (protocol.h, L1); the next update moves the limit in. */
		return l >= 1 && l <= c->max_limit;
	}
	return true;
}

#endif /* TKSHM_ALGORITHMS_CONCURRENCY_H */
