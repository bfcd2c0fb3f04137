/*
 * refund.c - giving back an admission that a multi-dimension check undoes,
 * for the algorithms whose state is wider than one word.
 *
 * The store restores the exact earlier state when nobody wrote the key
 * since the admission (src/shm/wide.c).  Otherwise these functions remove
 * from the current state what is provably still the admission's, and
 * nothing they cannot prove: a give-back must never let a later request
 * through that the policy would deny had the admission not happened.  The
 * admission was made at `at` (its check's now); with a forward clock each
 * algorithm put it somewhere it can be found again:
 *
 *   fixed window, quota period, token budget: the count of the window that
 *     starts where `at`'s window starts -> subtract cost from that count;
 *   sliding window (and rolling quota): the count of tick(at), while that
 *     tick is in the window -> subtract from that count (if a regression put
 *     the admission in a later tick, taking it from an earlier one only
 *     leaves the later, longer lived count in place: conservative); a count
 *     emptied at the newest tick steps the newest back to the newest tick
 *     still holding units (or to empty), as the ring's newest did;
 *   sliding-window log: ceil(cost) stamps equal to `at` -> remove that many;
 *   token bucket: tokens taken at `at` -> give them back only while the
 *     bucket's `last` is still `at`, i.e. no time has passed for it since,
 *     so no refill can have been capped at capacity in between.
 *
 * Subtractions round up and additions round down, so rounding never gives
 * back more than was taken.
 */
#include <math.h>
#include <string.h>

#include "algorithms/algorithm.h"
#include "algorithms/rounding.h"

/* x - y, never below the exact difference, and never below 0. */
static double
tk_sub_up(double x, double y)
{
	double r = x - y;

	if (r + y < x)
		r = nextafter(r, INFINITY);
	return r > 0 ? r : 0;
}

/* {start, count} states: give back from the count of the window at `at`. */
static bool
tk_refund_count(uint64_t *st, double start, double cost)
{
	double count = tk_word_f64(st[1]);

	if (tk_word_f64(st[0]) != start || !(count > 0))
		return false;
	st[1] = tk_f64_word(tk_sub_up(count, cost));
	return true;
}

/* After the newest tick's count went to 0: the newest tick left with units
 * becomes the newest (the canonical form, sliding_window.h), or the state
 * empties.  The positions skipped hold 0, as they must for ticks beyond
 * the newest. */
static void
tk_sliding_window_step_back(const struct tk_sliding_window *a, uint64_t *st,
			    int64_t newest)
{
	for (int64_t t = newest - 1; t >= 0 && t >= newest - (int64_t)a->S;
	     t--) {
		if (st[1 + (unsigned)(t % a->slots)] != 0) {
			st[0] = tk_i64_word(t + 1);
			return;
		}
	}
	st[0] = 0;
}

static bool
tk_refund_sliding_window(const struct tk_sliding_window *a, uint64_t *st,
			 double cost, double at)
{
	int64_t c = tk_sliding_window_tick(a, at);
	int64_t newest = tk_sliding_window_stored_newest(st);
	unsigned p = (unsigned)(c % a->slots);
	double n = tk_word_f64(st[1 + p]);
	double left;

	if (c > newest || c < newest - (int64_t)a->S || !(n > 0))
		return false;
	left = tk_sub_up(n, cost);
	st[1 + p] = tk_f64_word(left);
	if (!(left > 0) && c == newest)
		tk_sliding_window_step_back(a, st, newest);
	return true;
}

static bool
tk_refund_sliding_log(const struct tk_sliding_log *a, uint64_t *st, double cost,
		      double at)
{
	unsigned n = st[0] < a->cap ? (unsigned)st[0] : a->cap;
	unsigned take = (unsigned)fmin(tk_ceil(cost), (double)a->cap);
	unsigned kept = 0, removed = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t s = st[1 + i];
		if (removed < take && tk_word_f64(s) == at) {
			removed++;
			continue;
		}
		st[1 + kept++] = s;
	}
	for (unsigned i = kept; i < n; i++)
		st[1 + i] = 0;
	st[0] = kept;
	return removed > 0;
}

static bool
tk_refund_token_bucket(const struct tk_token_bucket *a, uint64_t *st,
		       double cost, double at)
{
	double tokens = tk_word_f64(st[0]), back;

	if (tk_word_f64(st[1]) != at || !(tokens < a->capacity))
		return false;
	back = tokens + cost;
	if (back - cost > tokens)
		back = nextafter(back, 0);
	st[0] = tk_f64_word(back < a->capacity ? back : a->capacity);
	return true;
}

bool
tk_algo_refund_w(const struct tk_algo *a, uint64_t *st, double cost, double at)
{
	double start, reset;

	switch (a->kind) {
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_refund_token_bucket(&a->u.token_bucket, st, cost, at);
	case TKSHM_KIND_FIXED_WINDOW:
		start = tk_floor(at / a->u.fixed_window.window_ms) *
			a->u.fixed_window.window_ms;
		return tk_refund_count(st, start, cost);
	case TKSHM_KIND_TOKEN_BUDGET:
		start = tk_floor(at / a->u.token_budget.window_ms) *
			a->u.token_budget.window_ms;
		return tk_refund_count(st, start, cost);
	case TKSHM_KIND_QUOTA:
		if (a->u.quota.cadence == TK_QUOTA_ROLLING)
			return tk_refund_sliding_window(&a->u.quota.sw, st,
							cost, at);
		tk_calendar_period(&a->u.quota.cal, at, &start, &reset);
		return tk_refund_count(st, start, cost);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_refund_sliding_window(&a->u.sliding_window, st, cost,
						at);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_refund_sliding_log(&a->u.sliding_log, st, cost, at);
	case TKSHM_KIND_GCRA: /* one word: tk_gcra_refund */
	case TKSHM_KIND_LEAKY_BUCKET:
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		/* The last three: never in a multi-dimension check, nothing to
		 * undo. */
		break;
	}
	return false;
}
