/*
 * param_check.h - helpers for validating algorithm parameters the way
 * ThrottleKit's constructors do (docs/semantics.md, "Parameter
 * validation"), shared by the .c files of src/algorithms/.
 *
 * ThrottleKit throws a RangeError naming the parameter; tkshm returns
 * TKSHM_EPOLICY with one sentence in the caller's buffer.  Beyond
 * ThrottleKit's own checks, a parameter is refused when some `now` the API
 * accepts (0 <= now <= TK_NOW_MAX = 2^42 ms) would make a window boundary, and so a
 * decision field or a state word, stop being finite (ThrottleKit's
 * decision-finiteness rule).
 */
#ifndef TKSHM_ALGORITHMS_PARAM_CHECK_H
#define TKSHM_ALGORITHMS_PARAM_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include "algorithms/rounding.h"
#include "tkshm.h"

/*
 * The largest now_ms the API accepts: 2^42 ms, 2109-05-15 UTC.  Far
 * enough ahead of any real clock in ms, and far below the same clock in
 * microseconds (1.7e15 today) or nanoseconds (1.7e18), the likely unit
 * mistakes, which it refuses with TKSHM_ENOW.  It also keeps every time
 * below 2^43, where doubles are 2^-10 ms apart (resolution.h).
 */
#define TK_NOW_MAX	TKSHM_NOW_MAX
#define TK_ALGO_NOW_MAX TK_NOW_MAX

/* Writes a sentence to err (err_len bytes) when the caller gave a buffer. */
#define TK_ERR(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

/* ThrottleKit's requirePositive: finite and > 0. */
static inline bool
tk_param_positive(double x)
{
	return isfinite(x) && x > 0;
}

/* ThrottleKit's requireInteger (Number.isInteger): finite and integral. */
static inline bool
tk_param_integer(double x)
{
	return isfinite(x) && x == tk_floor(x);
}

/*
 * True when the epoch-aligned window `floor(now / w) * w` and its end
 * `start + w` are finite for every now in [0, TK_ALGO_NOW_MAX].  Both are
 * monotone in now, so checking the two ends suffices; at now = 0 they are
 * 0 and w.
 */
static inline bool
tk_param_window_finite(double w)
{
	double q = TK_ALGO_NOW_MAX / w;
	double start = tk_floor(q) * w;

	return isfinite(q) && isfinite(start) && isfinite(start + w);
}

#endif /* TKSHM_ALGORITHMS_PARAM_CHECK_H */
