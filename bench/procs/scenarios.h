/*
 * scenarios.h - the five scenarios of the multi-process benchmark, each a
 * series of cases run by driver.c and printed by report.c.
 *
 *   uniform100k  100k keys, each worker in its own order; N workers for
 *                every N of --procs; tkshm and mutex (warm tables)
 *   hotkey       every worker checks one key; N of --procs; tkshm, mutex
 *   keys10M      10M keys (filled before timing), 2 workers; tkshm with and
 *                without huge pages, then mutex
 *   sigstop      4 workers, worker 0 stopped for about 1 s mid-run:
 *                anywhere (SIGSTOP from the parent) and inside the critical
 *                section; tkshm and mutex
 *   redis        redis-strict with 1 and 2 clients (processes)
 */
#ifndef TKSHM_BENCH_PROCS_SCENARIOS_H
#define TKSHM_BENCH_PROCS_SCENARIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "driver.h"
#include "tkshm.h"

/* The policy of every case: GCRA at 64,000/s per key (T = 1/64 ms, the
 * finest step a policy may have) with a burst of 1e12, so checks are
 * admitted (one key checked 20 M times a second would need about 14 hours
 * to run out); the arithmetic and the writes do not depend on it. */
#define SC_POLICY "gcra:limit=64000,periodMs=1000,burst=1000000000000"

/* Slots of the uniform, hot-key and sigstop tables (bench_check's). */
#define SC_SLOTS 262144u

struct bench {
	bool quick;
	double seconds; /* per case */
	int procs[16];	/* uniform100k and hotkey */
	int nprocs;
	FILE *json;	     /* --out */
	double ns_per_tick;  /* tsc_calibrate() */
	tkshm_policy policy; /* SC_POLICY */
	size_t uniform_keys; /* 100000 (quick: 10000) */
	size_t big_keys;     /* 10M (quick: 100000) */
	uint64_t big_slots;  /* 2^24 (quick: 2^18) */
	int stop_procs;	     /* 4 (quick: 2) */
	double stop_seconds; /* 1 (quick: 0.2) */
	bool may_write_thp;  /* not in quick runs */
};

/* Each returns 0, or -1 after printing why on stderr (everything it made
 * is undone). */
int sc_uniform(struct bench *b);
int sc_hotkey(struct bench *b);
int sc_keys10m(struct bench *b);
int sc_sigstop(struct bench *b);
int sc_redis(struct bench *b);

#endif /* TKSHM_BENCH_PROCS_SCENARIOS_H */
