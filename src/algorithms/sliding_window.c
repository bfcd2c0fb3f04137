/*
 * sliding_window.c - validation of sliding-window parameters (the
 * transition is in sliding_window.h so that it inlines into the check
 * path).
 *
 * ThrottleKit's slidingWindow() requires limit and windowMs finite and > 0
 * (requirePositive) and buckets an integer >= 1 (requireInteger).  This
 * port also refuses, each with a sentence naming the parameter:
 * - buckets above TK_SLIDING_WINDOW_MAX_BUCKETS (the state is S + 2
 *   words per key);
 * - a sub-bucket windowMs / buckets narrower than 1/64 ms, whose ticks
 *   would pass 2^51 before now = 2^45 ms (year 3084);
 * - limit or windowMs at or above 1e300, for which a sum of counts, D*w or
 *   resetAt could stop being finite (decision-finiteness).
 */
#include "algorithms/param_check.h"
#include "algorithms/sliding_window.h"

int
tk_sliding_window_init(struct tk_sliding_window *a, double limit,
		       double window_ms, double buckets, char *err,
		       size_t err_len)
{
	double w;

	if (!tk_param_positive(limit)) {
		TK_ERR("slidingWindow: limit must be a finite number > 0 "
		       "(got %g)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(window_ms)) {
		TK_ERR("slidingWindow: windowMs must be a finite number > 0 "
		       "(got %g)",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_integer(buckets) || !(buckets >= 1)) {
		TK_ERR("slidingWindow: buckets must be an integer >= 1 "
		       "(got %g)",
		       buckets);
		return TKSHM_EPOLICY;
	}
	if (buckets > TK_SLIDING_WINDOW_MAX_BUCKETS) {
		TK_ERR("slidingWindow: buckets must be at most %d in tkshm "
		       "(got %g)",
		       TK_SLIDING_WINDOW_MAX_BUCKETS, buckets);
		return TKSHM_EPOLICY;
	}
	if (!(limit < 1e300)) {
		TK_ERR("slidingWindow: limit = %g is outside the range that "
		       "keeps every decision field finite (below 1e300)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (!(window_ms < 1e300)) {
		TK_ERR("slidingWindow: windowMs = %g is outside the range that "
		       "keeps every decision field finite (below 1e300)",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	w = window_ms / buckets;
	if (!(w >= TK_SLIDING_WINDOW_MIN_WIDTH_MS)) {
		TK_ERR("slidingWindow: windowMs / buckets = %g ms is below the "
		       "1/64 ms sub-bucket tkshm supports (use a longer "
		       "windowMs or fewer buckets)",
		       w);
		return TKSHM_EPOLICY;
	}
	/* D*w in the retry formula: D <= oldest <= limit. */
	if (!isfinite(limit * w)) {
		TK_ERR("slidingWindow: limit * windowMs / buckets = %g is "
		       "outside the range that keeps every decision field "
		       "finite",
		       limit * w);
		return TKSHM_EPOLICY;
	}
	a->limit = limit;
	a->window_ms = window_ms;
	a->w = w;
	a->S = (unsigned)buckets;
	a->slots = a->S + 1;
	return TKSHM_OK;
}
