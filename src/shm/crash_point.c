/*
 * crash_point.c - the counter behind crash_point.h (compiled only with
 * TKSHM_CRASH_POINTS; see CMakeLists.txt).
 *
 * Thread-local, so a test thread's count is not disturbed by another
 * thread's writes, and no atomics are needed.
 */
#include <signal.h>

#include "shm/crash_point.h"

static _Thread_local uint64_t writes;
static _Thread_local uint64_t armed;

void
tk_crash_point(void)
{
	writes++;
	if (armed != 0 && writes == armed)
		raise(SIGKILL);
}

void
tk_crash_arm(uint64_t n)
{
	writes = 0;
	armed = n;
}

uint64_t
tk_crash_writes(void)
{
	return writes;
}
