/*
 * rounding.h - floor and ceil without a call into libm.
 *
 * Without SSE4.1 (the x86-64 baseline the library is built for) the compiler
 * turns floor() and ceil() into calls, and a GCRA check needs two of them.
 * These give the same double as libm for every input, -0.0, infinities and
 * NaN included (tests/unit/test_rounding.c compares them bit for bit):
 *
 *   |x| >= 2^52, inf, NaN   x is already integral (or NaN): returned as is
 *   otherwise               truncate through int64 (exact below 2^52), step
 *                           one toward -inf (floor) or +inf (ceil) if the
 *                           truncation went the other way, and give the
 *                           result x's sign (floor(-0.0) = -0.0,
 *                           ceil(-0.5) = -0.0), which is always the sign of
 *                           the true result or of a zero result.
 */
#ifndef TKSHM_ALGORITHMS_ROUNDING_H
#define TKSHM_ALGORITHMS_ROUNDING_H

#include <math.h>
#include <stdint.h>

#define TK_TWO_POW_52 4503599627370496.0

static inline double
tk_floor(double x)
{
	double r;

	if (!(fabs(x) < TK_TWO_POW_52))
		return x;
	r = (double)(int64_t)x;
	if (r > x)
		r -= 1.0;
	return copysign(r, x);
}

static inline double
tk_ceil(double x)
{
	double r;

	if (!(fabs(x) < TK_TWO_POW_52))
		return x;
	r = (double)(int64_t)x;
	if (r < x)
		r += 1.0;
	return copysign(r, x);
}

#endif /* TKSHM_ALGORITHMS_ROUNDING_H */
