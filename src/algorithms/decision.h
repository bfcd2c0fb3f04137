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

/* tk_field(tk_clamp0(floor(x))), the shape of every `remaining`, in one
 * comparison on the common path: for x >= 0 truncation is floor, and
 * below 2^63 the conversion is exact; NaN and negatives give 0 as the long
 * form does (tests/unit/test_rounding.c compares the two). */
static inline __attribute__((always_inline)) int64_t
tk_field_floor0(double x)
{
	if (!(x >= 0))
		return 0;
	if (x >= 9223372036854774784.0)
		return INT64_MAX;
	return (int64_t)x;
}

/* tk_field(ceil(x)), the shape of resetAt and retryAfterMs: below 2^52 in
 * magnitude, truncate and step up if that went down; elsewhere x is
 * integral (or not finite) and tk_field() takes it as is. */
static inline __attribute__((always_inline)) int64_t
tk_field_ceil(double x)
{
	if (fabs(x) < 4503599627370496.0) {
		int64_t i = (int64_t)x;
		return i + ((double)i < x);
	}
	return tk_field(x);
}

/* A denial's retryAfterMs, ThrottleKit's field r, made at least 1.  Where
 * its formula rounds to 0 or below (a resetAt within an ulp of now at a
 * window's edge, a log window under 1 ms), a client told "retry in 0 ms"
 * would retry at once, forever; 1 ms errs late, never early. */
static inline int64_t
tk_denial_retry(int64_t r)
{
	return r < 1 ? 1 : r;
}

#endif /* TKSHM_ALGORITHMS_DECISION_H */
