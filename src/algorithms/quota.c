/*
 * quota.c - validation of quota parameters (the transition is in quota.h so
 * that it inlines into the check path).
 *
 * ThrottleKit's quota() checks limit first (finite and > 0).  The rolling
 * cadence then checks periodMs (finite and > 0) and returns
 * slidingWindow({limit, windowMs: periodMs, buckets}), whose constructor
 * validates the rest, without looking at the calendar options; here
 * tk_sliding_window_init does the same.  The other cadences validate
 * offsetMinutes, weekStartsOn, anchor and (fixed) periodMs, in that order
 * (tk_calendar_init).
 */
#include <string.h>

#include "algorithms/param_check.h"
#include "algorithms/quota.h"

int
tk_quota_init(struct tk_quota *q, double limit, enum tk_quota_cadence cadence,
	      double offset_minutes, double week_starts_on, double period_ms,
	      double anchor, double buckets, char *err, size_t err_len)
{
	struct tk_quota tmp;
	int rc;

	if (!tk_param_positive(limit)) {
		TK_ERR("quota: limit must be a finite number > 0 (got %g)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (cadence < TK_QUOTA_CALENDAR_MONTH || cadence > TK_QUOTA_ROLLING) {
		TK_ERR("quota: resetCadence %d is not calendar-month, "
		       "calendar-week, calendar-day, fixed or rolling",
		       (int)cadence);
		return TKSHM_EPOLICY;
	}
	if (cadence == TK_QUOTA_ROLLING) {
		if (!tk_param_positive(period_ms)) {
			TK_ERR("quota: periodMs must be a finite number > 0 "
			       "(got %g)",
			       period_ms);
			return TKSHM_EPOLICY;
		}
		memset(&tmp, 0, sizeof tmp);
		rc = tk_sliding_window_init(&tmp.sw, limit, period_ms, buckets,
					    err, err_len);
		if (rc != TKSHM_OK)
			return rc;
		tmp.limit = limit;
		tmp.cadence = cadence;
		*q = tmp;
		return TKSHM_OK;
	}
	memset(&tmp, 0, sizeof tmp);
	rc = tk_calendar_init(&tmp.cal, "quota", (enum tk_cadence)cadence,
			      offset_minutes, week_starts_on, period_ms, anchor,
			      err, err_len);
	if (rc != TKSHM_OK)
		return rc;
	tmp.limit = limit;
	tmp.cadence = cadence;
	*q = tmp;
	return TKSHM_OK;
}
