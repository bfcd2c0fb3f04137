/*
 * fixed_window.c - validation of fixed-window parameters (the transition is
 * in fixed_window.h so that it inlines into the check path).
 *
 * ThrottleKit's fixedWindow() requires limit and windowMs finite and > 0
 * (requirePositive).  A windowMs so small that floor(now / windowMs) *
 * windowMs overflows for some now <= 2^42 is refused too: the window start
 * would stop being finite (decision-finiteness).
 */
#include "algorithms/fixed_window.h"
#include "algorithms/param_check.h"

int
tk_fixed_window_init(struct tk_fixed_window *a, double limit, double window_ms,
		     char *err, size_t err_len)
{
	if (!tk_param_positive(limit)) {
		TK_ERR("fixedWindow: limit must be a finite number > 0 (got %g)",
		       limit);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(window_ms)) {
		TK_ERR("fixedWindow: windowMs must be a finite number > 0 "
		       "(got %g)",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_window_finite(window_ms)) {
		TK_ERR("fixedWindow: windowMs = %g is too small to keep every "
		       "window boundary finite",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	a->limit = limit;
	a->window_ms = window_ms;
	return TKSHM_OK;
}
