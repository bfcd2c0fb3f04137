/*
 * calendar.c - validation of period definitions (the date arithmetic and the
 * period computation are in calendar.h so that they inline into the check
 * path).
 *
 * ThrottleKit's quota() validates, in this order: offsetMinutes an integer
 * within +-840 (+-14 h), weekStartsOn an integer 0..6, anchor an integer,
 * and for the fixed cadence periodMs finite and > 0.  A fixed period whose
 * boundaries would overflow for some now in [0, 2^42] (a subnormal periodMs,
 * an anchor near the largest double) is refused too (decision-finiteness);
 * the boundaries are monotone in now, so the two ends of the range decide.
 */
#include <math.h>

#include "algorithms/calendar.h"
#include "algorithms/param_check.h"

/* True when the fixed period's boundaries are finite at `now`. */
static bool
tk_fixed_period_finite(const struct tk_calendar *c, double now)
{
	double q = (now - c->anchor) / c->period_ms;
	double start, reset;

	if (!isfinite(q))
		return false;
	tk_calendar_period(c, now, &start, &reset);
	return isfinite(start) && isfinite(reset);
}

int
tk_calendar_init(struct tk_calendar *c, const char *who,
		 enum tk_cadence cadence, double offset_minutes,
		 double week_starts_on, double period_ms, double anchor,
		 char *err, size_t err_len)
{
	struct tk_calendar tmp;

	if (cadence != TK_CADENCE_MONTH && cadence != TK_CADENCE_WEEK &&
	    cadence != TK_CADENCE_DAY && cadence != TK_CADENCE_FIXED) {
		TK_ERR("%s: resetCadence %d is not calendar-month, "
		       "calendar-week, calendar-day or fixed",
		       who, (int)cadence);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_integer(offset_minutes) || offset_minutes < -840 ||
	    offset_minutes > 840) {
		TK_ERR("%s: offsetMinutes must be an integer within -840..840 "
		       "(got %g)",
		       who, offset_minutes);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_integer(week_starts_on) || week_starts_on < 0 ||
	    week_starts_on > 6) {
		TK_ERR("%s: weekStartsOn must be an integer 0..6 (0 = Sunday; "
		       "got %g)",
		       who, week_starts_on);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_integer(anchor)) {
		TK_ERR("%s: anchor must be an integer (got %g)", who, anchor);
		return TKSHM_EPOLICY;
	}
	tmp.cadence = cadence;
	tmp.offset_ms = offset_minutes * 60000;
	tmp.week_starts_on = (int64_t)week_starts_on;
	tmp.period_ms = 0;
	tmp.anchor = anchor;
	if (cadence == TK_CADENCE_FIXED) {
		if (!tk_param_positive(period_ms)) {
			TK_ERR("%s: periodMs must be a finite number > 0 "
			       "(got %g)",
			       who, period_ms);
			return TKSHM_EPOLICY;
		}
		tmp.period_ms = period_ms;
		if (!tk_fixed_period_finite(&tmp, 0) ||
		    !tk_fixed_period_finite(&tmp, TK_ALGO_NOW_MAX)) {
			TK_ERR("%s: periodMs = %g with anchor %g would make a "
			       "period boundary non-finite",
			       who, period_ms, anchor);
			return TKSHM_EPOLICY;
		}
	}
	*c = tmp;
	return TKSHM_OK;
}
