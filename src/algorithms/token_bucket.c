/*
 * token_bucket.c - validation of token-bucket parameters (the transition is
 * in token_bucket.h so that it inlines into the check path).
 *
 * ThrottleKit's tokenBucket() requires capacity and refillPerSec finite and
 * > 0 (requirePositive).  As for GCRA, parameters that would make a decision
 * field non-finite are refused too: a refill rate so small that
 * refillPerSec / 1000 is subnormal, or that the time to refill the bucket or
 * to earn the largest cost (2^53 - 1) overflows.
 */
#include <float.h>
#include <math.h>

#include "algorithms/param_check.h"
#include "algorithms/token_bucket.h"

int
tk_token_bucket_init(struct tk_token_bucket *a, double capacity,
		     double refill_per_sec, char *err, size_t err_len)
{
	double r;

	if (!tk_param_positive(capacity)) {
		TK_ERR("tokenBucket: capacity must be a finite number > 0 "
		       "(got %g)",
		       capacity);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(refill_per_sec)) {
		TK_ERR("tokenBucket: refillPerSec must be a finite number > 0 "
		       "(got %g)",
		       refill_per_sec);
		return TKSHM_EPOLICY;
	}
	r = refill_per_sec / 1000;
	/* resetAt = now + ceil((capacity - tokens) / r) and retryAfterMs =
	 * ceil((cost - tokens) / r) must stay finite for every now <= 2^42
	 * and cost <= 2^53 - 1. */
	if (!(r >= DBL_MIN) || !(TKSHM_COST_MAX / r < 1e300) ||
	    !(capacity / r < 1e300)) {
		TK_ERR("tokenBucket: refillPerSec = %g (capacity %g) is outside "
		       "the range that keeps every decision field finite",
		       refill_per_sec, capacity);
		return TKSHM_EPOLICY;
	}
	a->capacity = capacity;
	a->refill_per_ms = r;
	return TKSHM_OK;
}
