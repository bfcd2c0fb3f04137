/*
 * tsc.h - cycle-counter timestamps for latency samples, converted to ns.
 *
 * A sampled check is bracketed by tsc_begin() and tsc_end(): lfence; rdtsc
 * before (no earlier instruction is still in flight when the count is
 * read), rdtscp; lfence after (rdtscp waits for the check to finish; the
 * lfence stops later instructions from starting before the read).  The
 * counter is read in the worker itself, so a sample includes whatever
 * happened to the process during the check: a preemption, a wait for a
 * lock, a futex sleep.  That is what a request would see.
 *
 * Off x86-64 the same calls read CLOCK_MONOTONIC in nanoseconds.
 */
#ifndef TKSHM_BENCH_PROCS_TSC_H
#define TKSHM_BENCH_PROCS_TSC_H

#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>

static inline uint64_t
tsc_begin(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

static inline uint64_t
tsc_end(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
}
#else
uint64_t tsc_mono_ns(void);

static inline uint64_t
tsc_begin(void)
{
	return tsc_mono_ns();
}

static inline uint64_t
tsc_end(void)
{
	return tsc_mono_ns();
}
#endif

/* Calibrates the counter against CLOCK_MONOTONIC over about `ms`
 * milliseconds and returns nanoseconds per tick (1.0 off x86-64). */
double tsc_calibrate(int ms);

/* CLOCK_MONOTONIC in seconds: the parent's clock for phases and rates. */
double mono_seconds(void);

/* Sleeps for `s` seconds (restarted after signals). */
void sleep_seconds(double s);

#endif /* TKSHM_BENCH_PROCS_TSC_H */
