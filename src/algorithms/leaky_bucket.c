/*
 * leaky_bucket.c - validation of the shaper's parameters (the transition is
 * in leaky_bucket.h so that it inlines into the reservation path).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "algorithms/leaky_bucket.h"
#include "algorithms/param_check.h"

int
tk_leaky_bucket_init(struct tk_leaky_bucket *l, double rate_per_sec,
		     double max_queue_ms, char *err, size_t err_len)
{
	double T;

	if (!tk_param_positive(rate_per_sec)) {
		TK_ERR("leakyBucket: ratePerSec must be a finite number > 0 "
		       "(got %g)",
		       rate_per_sec);
		return TKSHM_EPOLICY;
	}
	if (!isfinite(max_queue_ms) || !(max_queue_ms >= 0)) {
		TK_ERR("leakyBucket: maxQueueMs must be a finite number >= 0 "
		       "(got %g)",
		       max_queue_ms);
		return TKSHM_EPOLICY;
	}
	T = 1000 / rate_per_sec;
	/* The next departure is at most now + maxQueueMs + T * cost: finite
	 * for every now and cost the API accepts (decision-finiteness). */
	if (!(T >= DBL_MIN) || !isfinite(T * TKSHM_COST_MAX) ||
	    !(max_queue_ms < 1e300) ||
	    !isfinite(TK_ALGO_NOW_MAX + max_queue_ms + T * TKSHM_COST_MAX)) {
		TK_ERR("leakyBucket: 1000/ratePerSec = %g ms or maxQueueMs = %g "
		       "is outside the range that keeps every departure finite",
		       T, max_queue_ms);
		return TKSHM_EPOLICY;
	}
	l->T = T;
	l->max_queue = max_queue_ms;
	l->limit_field = tk_leaky_room(l, 0);
	return TKSHM_OK;
}
