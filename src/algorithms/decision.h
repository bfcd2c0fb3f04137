/*
 * decision.h - turning ThrottleKit's double-valued fields into integers.
 *
 * Every decision field is integral by construction (floor, ceil) except
 * `limit`, which Redis truncates on reply; tk_field() truncates the same way
 * and saturates instead of overflowing, so no input can make it undefined.
 */
#ifndef TKSHM_ALGORITHMS_DECISION_H
#define TKSHM_ALGORITHMS_DECISION_H

#include <math.h>
#include <stdint.h>

static inline int64_t
tk_field(double x)
{
	if (x != x)
		return 0;
	if (x >= 9223372036854774784.0)
		return INT64_MAX;
	if (x <= -9223372036854774784.0)
		return INT64_MIN;
	return (int64_t)x;
}

/* ThrottleKit's `if r < 0 then r = 0`. */
static inline double
tk_clamp0(double x)
{
	return x < 0 ? 0 : x;
}

#endif /* TKSHM_ALGORITHMS_DECISION_H */
