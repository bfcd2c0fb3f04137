/*
 * param_check.h - helpers for validating algorithm parameters the way
 * ThrottleKit's constructors do (shared/notes/throttlekit-semantics.md
 * section 2.1), shared by the .c files of src/algorithms/.
 *
 * ThrottleKit throws a RangeError naming the parameter; tkshm returns
 * TKSHM_EPOLICY with one sentence in the caller's buffer.  Beyond
 * ThrottleKit's own checks, a parameter is refused when some `now` the API
 * accepts (0 <= now <= 2^62 ms) would make a window boundary, and so a
 * decision field or a state word, stop being finite (ThrottleKit's
 * decision-finiteness rule).
 */
#ifndef TKSHM_ALGORITHMS_PARAM_CHECK_H
#define TKSHM_ALGORITHMS_PARAM_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include "algorithms/rounding.h"

/* The largest now_ms the API accepts: 2^62 ms (TK_NOW_MAX in
 * src/api/table_api.c). */
#define TK_ALGO_NOW_MAX 4611686018427387904.0

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
