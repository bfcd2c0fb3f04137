/*
 * resolution.c - the resolution rule of resolution.h, kind by kind.
 *
 * Each kind names its time steps with the horizon it adds to now (how far
 * past now the values it adds a step to can reach), and the largest count
 * a cost is added to (what bounds min_cost).  The shapes:
 *
 *   kind                 step                 horizon          count
 *   gcra                 T = periodMs/limit   tau + T          (a TAT)
 *   leakyBucket          T = 1000/ratePerSec  maxQueueMs + T   (a time)
 *   tokenBucket          -                    -                capacity
 *   fixedWindow          windowMs             windowMs         limit
 *   slidingWindow        windowMs/buckets     windowMs + w     2 * limit
 *   slidingWindowLog     windowMs             windowMs         (whole units)
 *   quota fixed          periodMs             |anchor|+period  limit
 *   quota rolling        periodMs/buckets     periodMs + w     2 * limit
 *   quota calendar       (a day or more)      -                limit
 *   tokenBudget          windowMs             windowMs         (whole tokens)
 *
 * A sliding window's estimate adds a weighted share of the oldest bucket
 * to the full ones, so its count can reach twice the limit.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "algorithms/algorithm.h"
#include "algorithms/param_check.h"
#include "algorithms/resolution.h"

double
tk_ulp(double x)
{
	/* ilogb of an infinity is INT_MAX: ldexp then gives an infinity,
	 * which no step reaches. */
	return ldexp(1.0, ilogb(x) - (DBL_MANT_DIG - 1));
}

/* The smallest step the rule admits for a value reaching now + horizon. */
static double
tk_min_step(double horizon)
{
	return TK_RESOLUTION_ULPS * tk_ulp(TK_NOW_MAX + horizon);
}

double
tk_min_cost_for_count(double count)
{
	return TK_RESOLUTION_ULPS * tk_ulp(count);
}

static int
tk_step_ok(const char *what, double step, double horizon, char *err,
	   size_t err_len)
{
	double min = tk_min_step(horizon);

	if (step >= min)
		return TKSHM_OK;
	TK_ERR("%s = %.17g ms is finer than doubles resolve at the times "
	       "tkshm accepts (now <= 2^42 ms): it must be at least %.17g ms",
	       what, step, min);
	return TKSHM_EPOLICY;
}

static int
tk_resolve_quota(struct tk_algo *a, char *err, size_t err_len)
{
	const struct tk_quota *q = &a->u.quota;

	a->min_cost = tk_min_cost_for_count(q->limit);
	switch (q->cadence) {
	case TK_QUOTA_FIXED:
		return tk_step_ok("quota: periodMs", q->cal.period_ms,
				  fabs(q->cal.anchor) + q->cal.period_ms, err,
				  err_len);
	case TK_QUOTA_ROLLING:
		a->min_cost = tk_min_cost_for_count(2 * q->limit);
		return tk_step_ok("quota: periodMs / buckets", q->sw.w,
				  q->sw.window_ms + q->sw.w, err, err_len);
	default: /* calendar periods: a day or longer */
		return TKSHM_OK;
	}
}

int
tk_algo_resolve(struct tk_algo *a, char *err, size_t err_len)
{
	/* The kinds with whole units (or no cost) refuse only costs <= 0. */
	a->min_cost = DBL_TRUE_MIN;
	switch (a->kind) {
	case TKSHM_KIND_GCRA: {
		const struct tk_gcra *g = &a->u.gcra;

		a->min_cost = tk_min_step(g->tau) / g->T;
		return tk_step_ok("gcra: periodMs / limit", g->T, g->tau + g->T,
				  err, err_len);
	}
	case TKSHM_KIND_LEAKY_BUCKET: {
		const struct tk_leaky_bucket *l = &a->u.leaky_bucket;

		a->min_cost = tk_min_step(l->max_queue) / l->T;
		return tk_step_ok("leakyBucket: 1000 / ratePerSec", l->T,
				  l->max_queue + l->T, err, err_len);
	}
	case TKSHM_KIND_TOKEN_BUCKET:
		a->min_cost = tk_min_cost_for_count(a->u.token_bucket.capacity);
		return TKSHM_OK;
	case TKSHM_KIND_FIXED_WINDOW: {
		const struct tk_fixed_window *f = &a->u.fixed_window;

		a->min_cost = tk_min_cost_for_count(f->limit);
		return tk_step_ok("fixedWindow: windowMs", f->window_ms,
				  f->window_ms, err, err_len);
	}
	case TKSHM_KIND_SLIDING_WINDOW: {
		const struct tk_sliding_window *s = &a->u.sliding_window;

		a->min_cost = tk_min_cost_for_count(2 * s->limit);
		return tk_step_ok("slidingWindow: windowMs / buckets", s->w,
				  s->window_ms + s->w, err, err_len);
	}
	case TKSHM_KIND_SLIDING_LOG:
		return tk_step_ok("slidingWindowLog: windowMs",
				  a->u.sliding_log.window_ms,
				  a->u.sliding_log.window_ms, err, err_len);
	case TKSHM_KIND_QUOTA:
		return tk_resolve_quota(a, err, err_len);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_step_ok("tokenBudget: windowMs",
				  a->u.token_budget.window_ms,
				  a->u.token_budget.window_ms, err, err_len);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		return TKSHM_OK;
	}
	return TKSHM_OK;
}
