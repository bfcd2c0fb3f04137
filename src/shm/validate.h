/*
 * validate.h - the argument checks every public call shares.
 *
 * Inline, and shaped so that a valid argument costs one or two compares:
 * they run before every check, on the path the benchmarks hold to a few
 * nanoseconds.  Comparisons with NaN are false, so `!(lo <= x && x <= hi)`
 * refuses NaN and both infinities along with the out-of-range values.
 */
#ifndef TKSHM_SHM_VALIDATE_H
#define TKSHM_SHM_VALIDATE_H

#include <stddef.h>

#include "algorithms/param_check.h"
#include "algorithms/token_budget.h"
#include "shm/table.h"
#include "tkshm.h"

/* TKSHM_OK or the error naming what is wrong with the argument. */
static inline int
tk_check_key(const void *key, size_t len)
{
	if (!key)
		return TKSHM_ENULL;
	/* len - 1 wraps for 0: one compare for both ends of the range. */
	if (len - 1 >= TKSHM_KEY_MAX)
		/* cppcheck-suppress knownConditionTrueFalse ; misses the wrap */
		return len == 0 ? TKSHM_EKEYEMPTY : TKSHM_EKEYLONG;
	return TKSHM_OK;
}

/* The cost check includes the table's kind (tokenBudget: whole tokens) and
 * the smallest cost its state can resolve (min_cost > 0, resolution.h). */
static inline int
tk_check_cost(const tkshm_table *t, double cost)
{
	if (!(cost >= t->algo.min_cost && cost <= TKSHM_COST_MAX))
		return TKSHM_ECOST;
	if (t->algo.kind == TKSHM_KIND_TOKEN_BUDGET &&
	    !tk_token_budget_cost_valid(cost))
		return TKSHM_ECOST;
	return TKSHM_OK;
}

/* The check family (check, check_many, hashed checks, multi) serves the
 * limiter kinds; a shaper reserves and a concurrency limit acquires. */
static inline int
tk_check_limiter(const tkshm_table *t)
{
	return tk_algo_is_limiter(&t->algo) ? TKSHM_OK : TKSHM_ENOTSUP;
}

/* 0 <= now <= TK_NOW_MAX (2^42 ms, param_check.h): NaN and a clock in
 * microseconds or nanoseconds are refused. */
static inline int
tk_check_now(double now)
{
	return now >= 0 && now <= TK_NOW_MAX ? TKSHM_OK : TKSHM_ENOW;
}

#endif /* TKSHM_SHM_VALIDATE_H */
