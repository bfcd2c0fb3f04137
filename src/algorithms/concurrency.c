/*
 * concurrency.c - validation of concurrency and adaptive concurrency
 * policies (the transitions are in concurrency.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/concurrency.h"
#include "algorithms/param_check.h"

/* A whole number of permits within [lo, TK_CONC_MAX_LIMIT]. */
static bool
tk_conc_count_ok(double x, double lo)
{
	return tk_param_integer(x) && x >= lo && x <= TK_CONC_MAX_LIMIT;
}

static int
tk_conc_init_adaptive(struct tk_conc *c, const tkshm_policy *p, char *err,
		      size_t err_len)
{
	double alg = p->u.adaptive.algorithm;
	double lo = p->u.adaptive.min_limit, hi = p->u.adaptive.max_limit;
	double init = p->u.adaptive.initial_limit;

	if (alg != TKSHM_ADAPTIVE_GRADIENT2 && alg != TKSHM_ADAPTIVE_AIMD) {
		TK_ERR("adaptiveConcurrency: algorithm %g is not gradient2 (1) "
		       "or aimd (2)",
		       alg);
		return TKSHM_EPOLICY;
	}
	if (!tk_conc_count_ok(lo, 1) || !tk_conc_count_ok(hi, 1) || lo > hi) {
		TK_ERR("adaptiveConcurrency: minLimit %g and maxLimit %g must be "
		       "integers with 1 <= minLimit <= maxLimit <= %u",
		       lo, hi, (unsigned)TK_CONC_MAX_LIMIT);
		return TKSHM_EPOLICY;
	}
	if (!isfinite(init) || init < lo || init > hi) {
		TK_ERR("adaptiveConcurrency: initialLimit %g must lie within "
		       "minLimit..maxLimit (%g..%g)",
		       init, lo, hi);
		return TKSHM_EPOLICY;
	}
	/* Every option is validated, read or not (as a quota's are). */
	if (!(p->u.adaptive.smoothing > 0 && p->u.adaptive.smoothing <= 1)) {
		TK_ERR("adaptiveConcurrency: smoothing must lie in (0, 1] "
		       "(got %g)",
		       p->u.adaptive.smoothing);
		return TKSHM_EPOLICY;
	}
	if (!(isfinite(p->u.adaptive.tolerance) &&
	      p->u.adaptive.tolerance >= 1)) {
		TK_ERR("adaptiveConcurrency: tolerance must be a finite number "
		       ">= 1 (got %g)",
		       p->u.adaptive.tolerance);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(p->u.adaptive.rtt_window_ms) ||
	    !(p->u.adaptive.rtt_window_ms < 1e15)) {
		TK_ERR("adaptiveConcurrency: rttWindowMs must be a number > 0 "
		       "and < 1e15 (got %g)",
		       p->u.adaptive.rtt_window_ms);
		return TKSHM_EPOLICY;
	}
	if (!(p->u.adaptive.backoff_ratio >= 0.5 &&
	      p->u.adaptive.backoff_ratio < 1)) {
		TK_ERR("adaptiveConcurrency: backoffRatio must lie in [0.5, 1) "
		       "(got %g)",
		       p->u.adaptive.backoff_ratio);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(p->u.adaptive.timeout_ms) ||
	    !(p->u.adaptive.timeout_ms < 1e15)) {
		TK_ERR("adaptiveConcurrency: timeoutMs must be a number > 0 and "
		       "< 1e15 (got %g)",
		       p->u.adaptive.timeout_ms);
		return TKSHM_EPOLICY;
	}
	c->adaptive = true;
	c->algorithm = (unsigned)alg;
	c->cap = (uint32_t)hi;
	c->limit = init;
	c->min_limit = lo;
	c->max_limit = hi;
	c->smoothing = p->u.adaptive.smoothing;
	c->tolerance = p->u.adaptive.tolerance;
	c->rtt_window_ms = p->u.adaptive.rtt_window_ms;
	c->backoff_ratio = p->u.adaptive.backoff_ratio;
	c->timeout_ms = p->u.adaptive.timeout_ms;
	c->forget_ms = TK_ADAPTIVE_FORGET_PERIODS *
		       (c->algorithm == TKSHM_ADAPTIVE_AIMD ? c->timeout_ms :
							      c->rtt_window_ms);
	return TKSHM_OK;
}

int
tk_conc_init(struct tk_conc *c, const tkshm_policy *p, char *err,
	     size_t err_len)
{
	struct tk_conc tmp;
	int rc;

	memset(&tmp, 0, sizeof tmp);
	tmp.host = 1; /* the store sets this process's boot */
	if (p->kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY) {
		rc = tk_conc_init_adaptive(&tmp, p, err, err_len);
		if (rc != TKSHM_OK)
			return rc;
	} else {
		double l = p->u.concurrency.limit;

		if (!tk_conc_count_ok(l, 1)) {
			TK_ERR("concurrency: limit must be an integer 1..%u "
			       "(got %g)",
			       (unsigned)TK_CONC_MAX_LIMIT, l);
			return TKSHM_EPOLICY;
		}
		tmp.cap = (uint32_t)l;
		tmp.limit = l;
		tmp.min_limit = tmp.max_limit = l;
	}
	*c = tmp;
	return TKSHM_OK;
}
