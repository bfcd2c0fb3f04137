/*
 * deny_bound.c - a denial's fields for a state that may be missing
 * consumption (deny_bound.h).
 *
 * Each bound is the algorithm's own check, run on the worst state the
 * true one can be: the check's arithmetic is monotone in that state (every
 * IEEE operation rounds monotonically), so no true state gives a later
 * field, to the last bit.  The one exception is the sliding window's
 * weighted retry, whose rounding is its own: there the bound is computed
 * with a margin (below).
 */
#include <math.h>

#include "algorithms/deny_bound.h"
#include "algorithms/rounding.h"

/* The latest TAT an admission at or before `now` can have written: the
 * largest double x whose allowAt, x - tau, is at most now (tkshm and
 * ThrottleKit admit iff allowAt <= now).  x - tau grows with x, so the
 * walk from now + tau is a few steps; false if it is not (no bound). */
static bool
tk_gcra_latest_tat(const struct tk_gcra *g, double now, double *tat)
{
	double x = now + g->tau;

	for (int i = 0; i < 64; i++) {
		double up;

		if (!(x - g->tau <= now)) {
			x = nextafter(x, -INFINITY);
			continue;
		}
		up = nextafter(x, INFINITY);
		if (!(up - g->tau <= now)) {
			*tat = x;
			return true;
		}
		x = up;
	}
	return false;
}

static bool
tk_gcra_bound(const struct tk_gcra *g, const uint64_t *st, double now,
	      double cost, tkshm_decision *d)
{
	double tat, cached = tk_gcra_tat(st[0]);
	uint64_t unused;

	if (!tk_gcra_latest_tat(g, now, &tat))
		return false;
	return !tk_gcra_check(g, true,
			      tk_gcra_state(cached > tat ? cached : tat), now,
			      cost, &unused, d);
}

/* Empty, refilling from now on (or from a `last` ahead of now, which no
 * admission moves back). */
static bool
tk_token_bucket_bound(const struct tk_token_bucket *a, const uint64_t *st,
		      double now, double cost, tkshm_decision *d)
{
	double last = tk_word_f64(st[1]);
	uint64_t worst[TK_TOKEN_BUCKET_WORDS], unused[TK_TOKEN_BUCKET_WORDS];

	worst[0] = tk_f64_word(0.0);
	worst[1] = tk_f64_word(last > now ? last : now);
	return !tk_token_bucket_check(a, true, worst, now, cost, unused, d);
}

/* The retry of every state is at most the time to the next sub-bucket
 * boundary, ceil((c + 1)*w - now): ThrottleKit's weighted retry,
 * ceil(D*w / oldest) with D <= oldest*weight, is that time in real
 * numbers, but its own rounding can put it a few ulps above an integral
 * boundary time (and so 1 ms above).  The margin covers those ulps: a few
 * of now's and of the boundary's magnitude for the subtraction, a few
 * relative ones of w for the products.  resetAt depends on the tick only. */
static bool
tk_sliding_window_bound(const struct tk_sliding_window *a, const uint64_t *st,
			double now, double cost, tkshm_decision *d)
{
	struct tk_sliding_window_view v;
	uint64_t unused[TK_SLIDING_WINDOW_MAX_BUCKETS + 2];
	double boundary, retry;

	if (tk_sliding_window_check(a, true, st, now, cost, unused, d))
		return false;
	tk_sliding_window_eval(a, st, now, &v);
	boundary = (v.cw + 1) * a->w;
	retry = tk_ceil((boundary - now) +
			((fabs(now) + boundary) * 0x1p-50 + a->w * 0x1p-49));
	d->retry_after_ms = tk_field(retry >= 1 ? retry : 1);
	return true;
}

/* The live stamps, then stamps at t = max(now, newest) up to the most the
 * log holds: what others appended since can only be later than the cached
 * stamps and no later than t. */
static bool
tk_sliding_log_bound(const struct tk_sliding_log *a, const uint64_t *st,
		     double now, double cost, tkshm_decision *d)
{
	struct tk_sliding_log_view v;
	uint64_t worst[1 + TK_SLIDING_LOG_MAX_LIMIT];
	uint64_t unused[1 + TK_SLIDING_LOG_MAX_LIMIT];
	unsigned m = 0;

	tk_sliding_log_eval(a, st, now, &v);
	for (unsigned i = v.first; i < v.n; i++)
		worst[1 + m++] = st[1 + i];
	while (m < a->cap)
		worst[1 + m++] = tk_f64_word(v.t);
	worst[0] = m;
	return !tk_sliding_log_check(a, true, worst, now, cost, unused, d);
}

/* Fixed window, quota period, token budget: a window's end does not move
 * with what is consumed in it, nor (on a forward clock) does the window.
 * The shaper: its rejection does not depend on the cost, so while the
 * cached departure rejects at now it rejected every reservation since
 * (made at or before now) and is still the true one.  Either way the
 * cached state's own denial has the true retry and reset. */
static bool
tk_cached_fields_bound(const struct tk_algo *a, const uint64_t *st, double now,
		       double cost, tkshm_decision *d)
{
	uint64_t unused[TK_ALGO_MAX_WORDS];

	return !tk_algo_check_w(a, true, st, now, cost, unused, d);
}

bool
tk_algo_deny_bound_w(const struct tk_algo *a, const uint64_t *st, double now,
		     double cost, tkshm_decision *d)
{
	bool bounded = false;

	if (a->leased)
		return false;
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		bounded = tk_gcra_bound(&a->u.gcra, st, now, cost, d);
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
		bounded = tk_token_bucket_bound(&a->u.token_bucket, st, now,
						cost, d);
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		bounded = tk_sliding_window_bound(&a->u.sliding_window, st, now,
						  cost, d);
		break;
	case TKSHM_KIND_QUOTA:
		bounded = a->u.quota.cadence == TK_QUOTA_ROLLING ?
				  tk_sliding_window_bound(&a->u.quota.sw, st,
							  now, cost, d) :
				  tk_cached_fields_bound(a, st, now, cost, d);
		break;
	case TKSHM_KIND_FIXED_WINDOW:
	case TKSHM_KIND_TOKEN_BUDGET:
	case TKSHM_KIND_LEAKY_BUCKET:
		bounded = tk_cached_fields_bound(a, st, now, cost, d);
		break;
	case TKSHM_KIND_SLIDING_LOG:
		bounded = tk_sliding_log_bound(&a->u.sliding_log, st, now, cost,
					       d);
		break;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		break;
	}
	if (bounded)
		d->remaining = 0;
	return bounded;
}
