/*
 * convert.c - a state of one algorithm as a state of another (convert.h).
 */
#include <math.h>
#include <string.h>

#include "algorithms/convert.h"
#include "base/words.h"

static bool
tk_is_window(const struct tk_algo *a)
{
	return a->kind == TKSHM_KIND_FIXED_WINDOW ||
	       a->kind == TKSHM_KIND_SLIDING_WINDOW;
}

/* The sub-bucket width a sliding window's ticks count in, or 0. */
static double
tk_tick_width(const struct tk_algo *a)
{
	if (a->kind == TKSHM_KIND_SLIDING_WINDOW)
		return a->u.sliding_window.w;
	if (a->kind == TKSHM_KIND_QUOTA &&
	    a->u.quota.cadence == TK_QUOTA_ROLLING)
		return a->u.quota.sw.w;
	return 0;
}

/* A state of `from` reads the same under `to`: the same kind and words,
 * and ticks of the same width. */
bool
tk_algo_same_reading(const struct tk_algo *from, const struct tk_algo *to)
{
	return from->kind == to->kind && from->words == to->words &&
	       from->leased == to->leased &&
	       tk_tick_width(from) == tk_tick_width(to);
}

bool
tk_algo_converts(const struct tk_algo *from, const struct tk_algo *to)
{
	if (tk_algo_same_reading(from, to))
		return true;
	if (from->leased || to->leased)
		return false;
	if ((from->kind == TKSHM_KIND_GCRA &&
	     to->kind == TKSHM_KIND_TOKEN_BUCKET) ||
	    (from->kind == TKSHM_KIND_TOKEN_BUCKET &&
	     to->kind == TKSHM_KIND_GCRA))
		return true;
	return tk_is_window(from) && tk_is_window(to);
}

/* A GCRA key as a bucket at `now`: it owes (TAT - now) / T units then,
 * paid at the bucket's pace from now on (as a change in place pays a debt
 * at the new pace).  A debt beyond the capacity puts the refill's start
 * that much later, so no unit of it is forgotten. */
static void
tk_gcra_to_bucket(const struct tk_gcra *g, uint64_t st,
		  const struct tk_token_bucket *b, double now, uint64_t *out)
{
	double tat = tk_word_f64(st);
	double at = fmax(now, 0);
	double owed = fmax(0, tat - at) / g->T;

	if (owed > b->capacity) {
		out[0] = tk_f64_word(0);
		out[1] = tk_f64_word(at +
				     (owed - b->capacity) / b->refill_per_ms);
		return;
	}
	/* One rounding of a difference: within half an ulp of the tokens
	 * the key had, never a whole one more. */
	out[0] = tk_f64_word(b->capacity - owed);
	out[1] = tk_f64_word(at);
}

/* A bucket as a GCRA key at `now` (or at its last refill, if later): it
 * owes what the bucket lacks then, paid at the new pace. */
static void
tk_bucket_to_gcra(const struct tk_token_bucket *b, const uint64_t *st,
		  const struct tk_gcra *g, double now, uint64_t *out)
{
	double last = tk_word_f64(st[1]);
	double at = fmax(now, last);
	double tokens =
		fmin(b->capacity,
		     tk_word_f64(st[0]) + (at - last) * b->refill_per_ms);

	out[0] = tk_f64_word(at + (b->capacity - tokens) * g->T);
}

/* One counted span of a window state: `n` units counted from time `at`. */
struct tk_span {
	double at, n;
};

/* The latest time a span's units can have been admitted: its end, or
 * `now` if earlier.  A unit placed at that time in the target expires
 * last: the key never owes less than it did. */
static double
tk_span_latest(double at, double width, double now)
{
	double end = at + width;

	/* The end itself belongs to the next span: the last instant in
	 * this one is the double just below it. */
	return now < end ? fmax(now, at) : nextafter(end, at);
}

/* The counted spans of a window state (at most 65), each at the latest
 * time its units can have been admitted, not later than now. */
static unsigned
tk_window_spans(const struct tk_algo *a, const uint64_t *st, double now,
		struct tk_span *s)
{
	unsigned k = 0;

	if (a->kind == TKSHM_KIND_FIXED_WINDOW) {
		s[0].at = tk_span_latest(tk_word_f64(st[0]),
					 a->u.fixed_window.window_ms, now);
		s[0].n = tk_word_f64(st[1]);
		return s[0].n > 0 ? 1 : 0;
	}
	for (unsigned p = 0; p < a->u.sliding_window.slots; p++) {
		const struct tk_sliding_window *sw = &a->u.sliding_window;
		int64_t newest = tk_sliding_window_stored_newest(st);

		if (st[1 + p] == 0)
			continue;
		s[k].at = tk_span_latest(
			(double)tk_sliding_window_pos_tick(sw, newest, p) *
				sw->w,
			sw->w, now);
		s[k].n = tk_word_f64(st[1 + p]);
		k++;
	}
	return k;
}

/* Window spans into a fixedWindow state: every count in the window of the
 * newest span (older ones added too: owing more, never less). */
static void
tk_spans_to_fixed(const struct tk_span *s, unsigned k,
		  const struct tk_fixed_window *f, uint64_t *out)
{
	double newest = 0, sum = 0;

	for (unsigned i = 0; i < k; i++) {
		newest = fmax(newest, s[i].at);
		sum += s[i].n;
	}
	out[0] = tk_f64_word(floor(newest / f->window_ms) * f->window_ms);
	out[1] = tk_f64_word(sum);
}

/* The tick holding a span's time. */
static double
tk_span_tick(const struct tk_span *s, const struct tk_sliding_window *w)
{
	double tick = floor(s->at / w->w);

	return tick < TK_SLIDING_WINDOW_TICK_MAX ? tick :
						   TK_SLIDING_WINDOW_TICK_MAX;
}

/* Window spans into a slidingWindow state: each at the tick holding its
 * time; two ticks that meet in one ring position keep the newer tick and
 * both counts, as a ring entry did.  A position whose newest tick is older
 * than the window (newest - S) is one the ring kept at an older lap, which
 * no decision reads: it stays 0. */
static void
tk_spans_to_sliding(const struct tk_span *s, unsigned k,
		    const struct tk_sliding_window *w, uint64_t *out)
{
	double top[TK_SLIDING_WINDOW_MAX_BUCKETS + 1];
	double newest = -1;

	memset(out, 0, sizeof(uint64_t) * tk_sliding_window_words(w));
	for (unsigned p = 0; p < w->slots; p++)
		top[p] = -1; /* no span at p */
	for (unsigned i = 0; i < k; i++)
		newest = fmax(newest, tk_span_tick(&s[i], w));
	for (unsigned i = 0; i < k; i++) {
		double tick = tk_span_tick(&s[i], w);
		unsigned p = (unsigned)fmod(tick, w->slots);
		double n = s[i].n;

		if (out[1 + p] != 0) {
			n += tk_word_f64(out[1 + p]);
			tick = fmax(tick, top[p]);
		}
		top[p] = tick;
		out[1 + p] = tk_f64_word(n);
	}
	for (unsigned p = 0; p < w->slots; p++)
		if (top[p] < newest - w->S)
			out[1 + p] = 0;
	if (newest >= 0)
		out[0] = (uint64_t)newest + 1;
}

bool
tk_algo_convert(const struct tk_algo *from, const uint64_t *st,
		const struct tk_algo *to, double now, uint64_t *out)
{
	struct tk_span spans[TK_SLIDING_WINDOW_MAX_BUCKETS + 1];
	unsigned k;

	if (!tk_algo_converts(from, to))
		return false;
	if (tk_algo_same_reading(from, to)) {
		/* The same state read under the new policy, as in place. */
		memcpy(out, st, sizeof(uint64_t) * to->words);
	} else if (from->kind == TKSHM_KIND_GCRA) {
		tk_gcra_to_bucket(&from->u.gcra, st[0], &to->u.token_bucket,
				  now, out);
	} else if (from->kind == TKSHM_KIND_TOKEN_BUCKET) {
		tk_bucket_to_gcra(&from->u.token_bucket, st, &to->u.gcra, now,
				  out);
	} else {
		k = tk_window_spans(from, st, now, spans);
		if (to->kind == TKSHM_KIND_FIXED_WINDOW)
			tk_spans_to_fixed(spans, k, &to->u.fixed_window, out);
		else
			tk_spans_to_sliding(spans, k, &to->u.sliding_window,
					    out);
	}
	return to->words == 1 ? tk_algo_state_valid(to, out[0]) :
				tk_algo_state_valid_w(to, out);
}
