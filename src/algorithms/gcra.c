/*
 * gcra.c - validation of GCRA parameters (the transition is in gcra.h so
 * that it inlines into the check path).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "algorithms/gcra.h"

#define TK_ERR(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

int
tk_gcra_init(struct tk_gcra *g, double limit, double period_ms, double burst,
	     char *err, size_t err_len)
{
	double T, tau;

	if (!isfinite(limit) || !(limit > 0)) {
		TK_ERR("gcra: limit must be a finite number > 0 (got %g)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (!isfinite(period_ms) || !(period_ms > 0)) {
		TK_ERR("gcra: periodMs must be a finite number > 0 (got %g)",
		       period_ms);
		return TKSHM_EPOLICY;
	}
	if (!isfinite(burst) || !(burst >= 1)) {
		TK_ERR("gcra: burst must be a finite number >= 1 (got %g)",
		       burst);
		return TKSHM_EPOLICY;
	}
	T = period_ms / limit;
	tau = T * burst;
	/* A subnormal or overflowing emission interval would make remaining
	 * or retryAfterMs non-finite (ThrottleKit's decision-finiteness). */
	if (!(T >= DBL_MIN) || !isfinite(T * TKSHM_COST_MAX) ||
	    !isfinite(tau) || !(tau < 1e300)) {
		TK_ERR("gcra: periodMs/limit = %g ms is outside the range that "
		       "keeps every decision field finite",
		       T);
		return TKSHM_EPOLICY;
	}
	g->T = T;
	g->tau = tau;
	g->burst = burst;
	g->limit_field = tk_field(burst);
	return TKSHM_OK;
}
