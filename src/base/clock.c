/*
 * clock.c - the clocks decisions are made with: the epoch milliseconds a
 * check uses when the caller gives none (CLOCK_REALTIME, ThrottleKit's
 * clock) and the monotonic milliseconds that time spins and deadlines
 * inside one call.  Two other readers sleep or wait on a timespec rather
 * than compute with milliseconds: tkshm_schedule's sleep
 * (shaper/reserve.c, CLOCK_MONOTONIC) and the writer lock's deadline of a
 * table change (api/life_api.c, CLOCK_REALTIME, as
 * pthread_mutex_timedlock wants).
 */
#include <time.h>

#include "base/clock.h"
#include "tkshm.h"

double
tkshm_now_ms(void)
{
	struct timespec ts;

	/* CLOCK_REALTIME: ThrottleKit's epoch milliseconds.  It cannot fail
	 * with a valid clock id and pointer. */
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

double
tk_mono_ms(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC: durations inside one call, immune to clock steps. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

double
tk_mono_coarse_ms(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC_COARSE: the same clock at tick resolution, read
	 * without the TSC; never ahead of CLOCK_MONOTONIC. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}
