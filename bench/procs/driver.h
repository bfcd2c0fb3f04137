/*
 * driver.h - one benchmark case: N forked worker processes checking keys
 * against one implementation for a fixed time.
 *
 * The parent forks the workers (each builds its key order, connects if it
 * must, and says it is ready), sets a shared start flag, sleeps for the
 * case's duration (stopping and continuing one worker on the way, for the
 * sigstop cases), sets a shared stop flag and reaps them.  Counts and
 * latency samples come back through the shared mapping.  Every check's
 * return code is checked: an error ends the worker with a message, and the
 * case fails with it.
 */
#ifndef TKSHM_BENCH_PROCS_DRIVER_H
#define TKSHM_BENCH_PROCS_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "baseline_mutex.h"
#include "tkshm.h"

/* The most worker processes of one case. */
#define DRV_MAX_PROCS 64

enum impl {
	IMPL_TKSHM,
	IMPL_MUTEX,
	IMPL_REDIS,
};

/* The sigstop scenario's variants. */
enum stop_variant {
	STOP_NONE,
	/* The parent sends SIGSTOP to worker 0 wherever it is. */
	STOP_ANYWHERE,
	/* Worker 0 raises SIGSTOP itself on the parent's flag: inside the
	 * critical section (mutex), between two checks (tkshm, which has no
	 * critical section to be stopped in). */
	STOP_IN_CS,
};

struct pcase {
	enum impl impl;
	tkshm_table *tk;	    /* IMPL_TKSHM */
	struct mtx_table *mtx;	    /* IMPL_MUTEX */
	int redis_port;		    /* IMPL_REDIS */
	const tkshm_policy *policy; /* IMPL_REDIS: the script's policy */
	int procs;		    /* 1..DRV_MAX_PROCS */
	size_t keys;		    /* key set size; 1 is the hot key */
	double seconds;		    /* timed run (sigstop: before and after) */
	enum stop_variant stop;
	double stop_seconds; /* how long worker 0 stays stopped */
	double ns_per_tick;  /* tsc_calibrate() */
	/* tkshm only: 0 = tkshm_check, one clock read per check; N (2..64) =
	 * tkshm_check_many_at of N requests at one clock read, as a server
	 * that collects an event-loop tick's requests does (the library
	 * hashes and prefetches them all before checking). */
	unsigned batch;
};

struct presult {
	double seconds;		     /* from the start flag to the stop flag */
	uint64_t decisions, allowed; /* over every worker */
	double per_sec;		     /* decisions / seconds */
	uint64_t samples;	     /* latency samples behind the quantiles */
	/* CPU time the workers got while timed, in cores (CPU seconds per
	 * second): below min(N, cores) means other work took the machine. */
	double cpu_cores;
	double p50_ns, p99_ns, p999_ns, p9999_ns, max_ns;
	/* sigstop: decisions per second of the workers never stopped, before,
	 * during and after worker 0's stop, and how long it was stopped. */
	double per_sec_before, per_sec_during, per_sec_after, stopped_ms;
	char error[512]; /* why the case failed */
};

/* Runs one case.  Returns 0, or -1 with r->error (every worker reaped). */
int driver_run(const struct pcase *c, struct presult *r);

#endif /* TKSHM_BENCH_PROCS_DRIVER_H */
