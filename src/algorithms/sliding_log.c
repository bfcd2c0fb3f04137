/*
 * sliding_log.c - validation of sliding-window-log parameters (the
 * transition is in sliding_log.h so that it inlines into the check path).
 *
 * ThrottleKit's slidingWindowLog() requires limit and windowMs finite and
 * > 0 (requirePositive).  This port also refuses a limit above
 * TK_SLIDING_LOG_MAX_LIMIT: each key keeps one stamp word per unit of its
 * limit.  Every decision field is then finite for any windowMs (a stamp is
 * at most 2^42 and stamp + windowMs rounds to at most DBL_MAX).
 */
#include "algorithms/param_check.h"
#include "algorithms/sliding_log.h"
#include "algorithms/rounding.h"

int
tk_sliding_log_init(struct tk_sliding_log *a, double limit, double window_ms,
		    char *err, size_t err_len)
{
	if (!tk_param_positive(limit)) {
		TK_ERR("slidingWindowLog: limit must be a finite number > 0 "
		       "(got %g)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(window_ms)) {
		TK_ERR("slidingWindowLog: windowMs must be a finite number > 0 "
		       "(got %g)",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	if (limit > TK_SLIDING_LOG_MAX_LIMIT) {
		TK_ERR("slidingWindowLog: limit must be at most %d in tkshm, "
		       "which keeps one timestamp per unit of the limit for "
		       "each key (got %g; use slidingWindow for larger limits)",
		       TK_SLIDING_LOG_MAX_LIMIT, limit);
		return TKSHM_EPOLICY;
	}
	a->limit = limit;
	a->window_ms = window_ms;
	a->cap = (unsigned)tk_floor(limit);
	return TKSHM_OK;
}
