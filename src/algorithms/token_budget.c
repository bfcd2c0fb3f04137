/*
 * token_budget.c - validation of token-budget parameters (the transition is
 * in token_budget.h so that it inlines into the check path).
 *
 * ThrottleKit's tokenBudget() requires budget >= 1, floored to the integer
 * L, and windowMs finite and > 0.  A windowMs so small that a window start
 * overflows for some now <= 2^42 is refused too (decision-finiteness).
 */
#include <math.h>

#include "algorithms/param_check.h"
#include "algorithms/token_budget.h"
#include "algorithms/rounding.h"

int
tk_token_budget_init(struct tk_token_budget *a, double budget, double window_ms,
		     char *err, size_t err_len)
{
	if (!isfinite(budget) || !(budget >= 1)) {
		TK_ERR("tokenBudget: budget must be a finite number >= 1 "
		       "(got %g)",
		       budget);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_positive(window_ms)) {
		TK_ERR("tokenBudget: windowMs must be a finite number > 0 "
		       "(got %g)",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	if (!tk_param_window_finite(window_ms)) {
		TK_ERR("tokenBudget: windowMs = %g is too small to keep every "
		       "window boundary finite",
		       window_ms);
		return TKSHM_EPOLICY;
	}
	a->L = tk_floor(budget);
	a->window_ms = window_ms;
	return TKSHM_OK;
}
