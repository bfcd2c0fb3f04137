/*
 * sleep.h - the shaper's deadline arithmetic: milliseconds (a double) to a
 * CLOCK_MONOTONIC timespec and back, pure so that it can be unit tested.
 *
 * tkshm_schedule() sleeps until an absolute deadline (clock_nanosleep with
 * TIMER_ABSTIME), so a signal or a spurious wake-up never makes it lose or
 * gain time.  The deadline is `start` plus the reservation's wait, and the
 * wait may be anything a policy allows: a fraction of a millisecond or,
 * with a large maxQueueMs, years (1e13 ms is 317 years).  Two things must
 * hold for every such wait:
 *   - no overflow or truncation: the milliseconds are split exactly (a
 *     double's integer part and fraction are exact) and carried in 64-bit
 *     integers, never through a 32-bit type or through ms * 1e6 (which
 *     loses nanoseconds above 2^53 ns, 104 days);
 *   - never early: the fraction is rounded UP to the nanosecond, decided
 *     by the exact sign of fraction * 1e6 - ns (one fma), so the deadline
 *     is the first nanosecond at or after start + ms.
 * A wait beyond what a timespec can hold saturates at the largest timespec
 * (the kernel clamps its timers to 292 years anyway): "forever", never
 * wrapped around into the past.
 */
#ifndef TKSHM_SHAPER_SLEEP_H
#define TKSHM_SHAPER_SLEEP_H

#include <math.h>
#include <stdint.h>
#include <time.h>

#define TK_NS_PER_SEC 1000000000
#define TK_NS_PER_MS  1000000

/* The largest time_t (signed on every platform tkshm builds on). */
#define TK_TIME_T_MAX \
	((time_t)(sizeof(time_t) == 8 ? (time_t)INT64_MAX : (time_t)INT32_MAX))
_Static_assert((time_t)-1 < 0, "time_t is signed");

/* The largest timespec: the deadline of a wait that does not fit. */
static inline struct timespec
tk_timespec_max(void)
{
	struct timespec ts;

	ts.tv_sec = TK_TIME_T_MAX;
	ts.tv_nsec = TK_NS_PER_SEC - 1;
	return ts;
}

/* The first nanosecond at or after `start` + `ms` milliseconds.  `start`
 * is a normalised timespec (0 <= tv_nsec < 1e9, tv_sec >= 0, as
 * clock_gettime gives).  `ms` <= 0 or NaN is no wait (start itself);
 * +infinity and waits past the largest timespec saturate at it. */
static inline struct timespec
tk_deadline_after(struct timespec start, double ms)
{
	struct timespec d;
	double whole, frac, f;
	uint64_t wms, ns, sec;

	if (!(ms > 0))
		return start;
	/* 2^63 ms (292 million years) and beyond: not representable as
	 * whole milliseconds in 64 bits, and far beyond any clock. */
	if (!(ms < 9223372036854775808.0))
		return tk_timespec_max();
	whole = floor(ms);
	/* Exact: for ms < 1 whole is 0; otherwise whole >= ms / 2 and the
	 * subtraction is exact (Sterbenz). */
	frac = ms - whole;
	wms = (uint64_t)whole;
	/* frac * 1e6 rounded to nearest may be below the exact product;
	 * fma gives the exact product minus ns rounded once, so its sign is
	 * the exact sign: step up when the product is above ns. */
	f = frac * 1e6;
	ns = (uint64_t)ceil(f);
	if (fma(frac, 1e6, -(double)ns) > 0)
		ns++;
	/* ns <= 1e6, (wms % 1000) * 1e6 < 1e9, tv_nsec < 1e9: no overflow. */
	ns += (wms % 1000) * TK_NS_PER_MS + (uint64_t)start.tv_nsec;
	sec = wms / 1000 + ns / TK_NS_PER_SEC;
	ns %= TK_NS_PER_SEC;
	if (start.tv_sec < 0 || sec > (uint64_t)(TK_TIME_T_MAX - start.tv_sec))
		return tk_timespec_max();
	d.tv_sec = start.tv_sec + (time_t)sec;
	d.tv_nsec = (long)ns;
	return d;
}

/* True when `now` is at or past `deadline`. */
static inline int
tk_timespec_reached(const struct timespec *now, const struct timespec *deadline)
{
	if (now->tv_sec != deadline->tv_sec)
		return now->tv_sec > deadline->tv_sec;
	return now->tv_nsec >= deadline->tv_nsec;
}

/* Milliseconds from `now` to `deadline` (negative once it has passed),
 * from the exact integer difference: nothing overflows for any two
 * normalised timespecs of one clock (both tv_sec >= 0). */
static inline double
tk_ms_until(const struct timespec *deadline, const struct timespec *now)
{
	int64_t s = (int64_t)deadline->tv_sec - (int64_t)now->tv_sec;
	long ns = deadline->tv_nsec - now->tv_nsec;

	return (double)s * 1000.0 + (double)ns / 1e6;
}

#endif /* TKSHM_SHAPER_SLEEP_H */
