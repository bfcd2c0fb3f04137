/*
 * ngx_http_tkshm_timing.c - the benchmark's view of the request handler:
 * with NGX_HTTP_TKSHM_TIMING (CMake: TKSHM_NGINX_TIMING=ON, a benchmark
 * build only), the preaccess handler is timed on the monotonic clock and
 * each worker logs its totals at exit, so that bench/apache measures what
 * the module adds to a request inside nginx, which through-server CPU
 * figures on a shared machine cannot resolve (a 2% share is 0.3 us).
 *
 * Wall time of a single-threaded worker between two vDSO clock reads: the
 * handler's own instructions and cache misses; a sample longer than
 * SLOW_NS was preempted and is counted apart.  A sample also holds about
 * one clock read (the end of the first, the start of the second): the
 * cost of a read is measured at exit and logged for the reader to
 * subtract.
 */
#include "ngx_http_tkshm.h"

#include <time.h>

#define SLOW_NS	    50000
#define CLOCK_READS 131072

/* Per worker process (each worker is single-threaded). */
static uint64_t timed_calls;
static uint64_t timed_ns;
static uint64_t slow_calls;

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

ngx_int_t
ngx_http_tkshm_timed_handler(ngx_http_request_t *r)
{
	uint64_t t0, dt;
	ngx_int_t rc;

	t0 = mono_ns();
	rc = ngx_http_tkshm_handler(r);
	dt = mono_ns() - t0;
	if (dt > SLOW_NS) {
		slow_calls++;
	} else {
		timed_calls++;
		timed_ns += dt;
	}
	return rc;
}

/* The worker's totals, and what a clock read costs here (the fastest of
 * a few batches: the least disturbed). */
void
ngx_http_tkshm_timing_report(ngx_cycle_t *cycle)
{
	uint64_t best = UINT64_MAX, t0;
	int batch, i;

	for (batch = 0; batch < 8; batch++) {
		t0 = mono_ns();
		for (i = 0; i < CLOCK_READS; i++) {
			(void)mono_ns();
		}
		t0 = mono_ns() - t0;
		best = t0 < best ? t0 : best;
	}
	ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
		      "tkshm timing: calls=%uL ns=%uL slow=%uL read_ns=%.3f",
		      timed_calls, timed_ns, slow_calls,
		      (double)best / CLOCK_READS);
}
