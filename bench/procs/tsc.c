/*
 * tsc.c - calibration of the cycle counter, and the parent's clock.
 */
#include <errno.h>
#include <time.h>

#include "tsc.h"

double
mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
sleep_seconds(double s)
{
	struct timespec ts;

	if (!(s > 0))
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

#if defined(__x86_64__)
double
tsc_calibrate(int ms)
{
	double best = 0, best_spread = 1e9;

	/* Three rounds, keeping the one whose clock reads bracket the
	 * counter reads most tightly (a preemption between a clock read and
	 * a counter read would skew the ratio). */
	for (int round = 0; round < 3; round++) {
		double m0 = mono_seconds();
		uint64_t t0 = tsc_begin();
		double m0b = mono_seconds();
		double m1, m1b, spread, ns_per_tick;
		uint64_t t1;

		sleep_seconds(ms / 3000.0);
		m1 = mono_seconds();
		t1 = tsc_end();
		m1b = mono_seconds();
		if (t1 <= t0)
			continue;
		spread = (m0b - m0) + (m1b - m1);
		ns_per_tick = ((m1 + m1b) / 2 - (m0 + m0b) / 2) * 1e9 /
			      (double)(t1 - t0);
		/* Any plausible counter runs between 0.1 and 10 GHz. */
		if (ns_per_tick > 0.1 && ns_per_tick < 10 &&
		    spread < best_spread) {
			best = ns_per_tick;
			best_spread = spread;
		}
	}
	return best > 0 ? best : 1.0;
}
#else
uint64_t
tsc_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double
tsc_calibrate(int ms)
{
	(void)ms;
	return 1.0;
}
#endif
