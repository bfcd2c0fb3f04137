/*
 * clock.c - the one place the library reads a clock.
 */
#include <time.h>

#include "shm/layout.h"
#include "shm/table.h"
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

const char *
tkshm_version(void)
{
	return "0.1.0";
}

uint32_t
tkshm_layout_version(void)
{
	return TK_LAYOUT_VERSION;
}
