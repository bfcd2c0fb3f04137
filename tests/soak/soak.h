/*
 * soak.h - the soak driver's shared state (issue 9 item 6).
 *
 * One supervisor process forks N workers that check random keys of a
 * file-backed GCRA table much smaller than its key space (and, now and
 * then, the same keys in a token-bucket table: a wide state), at an
 * explicit `now` = CLOCK_REALTIME + the offset of the current clock epoch.
 * The supervisor moves the clock (jumps forward by an hour and backward by
 * seconds), SIGKILLs a random worker every few hundred ms and forks a new
 * one, and every second runs tkshm_verify, samples memory and checks the
 * admissions of the hot keys against GCRA's bound (soak_bound.c).
 *
 * Everything in struct soak_shared lives in one MAP_SHARED mapping made
 * before the first fork.  Each worker position has its own cell, written
 * by the one worker occupying the position at a time (a replacement is
 * forked only after its predecessor was reaped), so counters survive the
 * kills.  The clock is published epoch by epoch: the supervisor writes
 * offset_ms[e], then releases `epoch`; a worker acquires `epoch` and
 * reads the offset, which never changes afterwards.
 */
#ifndef TKSHM_TESTS_SOAK_H
#define TKSHM_TESTS_SOAK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tkshm.h"

#define SOAK_MAX_PROCS	64
#define SOAK_MAX_EPOCHS 1024
#define SOAK_HOT_KEYS	8

/* The GCRA policy: 100 per 100 ms with a burst of 10, T = 1 ms, so that a
 * hot key is admitted about a thousand times a second and its bound is
 * tight in units, and a cold key goes idle 1 ms after its last admission. */
#define SOAK_LIMIT     100.0
#define SOAK_PERIOD_MS 100.0
#define SOAK_BURST     10.0
#define SOAK_T_MS      (SOAK_PERIOD_MS / SOAK_LIMIT)

/* The wide-state table: a token bucket, checked on one call in
 * SOAK_WIDE_EVERY (wide writes cost several CAS each). */
#define SOAK_WIDE_POLICY "tokenBucket:capacity=10,refillPerSec=1000"
#define SOAK_WIDE_EVERY	 4

/* What the workers record per hot key and clock epoch. */
struct soak_obs {
	uint32_t count;	   /* admissions */
	uint32_t restarts; /* ... computed from an absent state */
	/* restarts made on the previous epoch's clock by a call that was
	   still running when this epoch began (soak_bound.c) */
	uint32_t foreign;
	uint64_t min_now; /* double bits of the extreme admitted nows;
			      0 = none */
	uint64_t max_now;
	uint64_t stale_us; /* the (foreign) restarts' call latencies, us */
};

/* One worker position. */
struct soak_cell {
	pid_t pid;
	uint32_t spawns;
	uint64_t checks, admitted, denied, busy;
	uint64_t wide_checks, wide_admitted, wide_full, wide_busy;
	uint64_t straddles;    /* calls that saw the epoch change */
	uint64_t max_lat_bits; /* double bits, ms: longest call */
};

struct soak_shared {
	/* the clock */
	uint32_t epoch;
	double offset_ms[SOAK_MAX_EPOCHS];

	int stop;
	uint64_t seed;
	uint64_t cold_keys;
	char path[256], wide_path[256];

	/* the first error a worker met (it then exits with status 3) */
	int failed;
	char fail_msg[512];

	struct soak_cell cell[SOAK_MAX_PROCS];
	struct soak_obs obs[SOAK_HOT_KEYS][SOAK_MAX_EPOCHS];
};

/* soak_worker.c: the loop of worker position `pos`; never returns. */
void soak_worker(struct soak_shared *sh, int pos) __attribute__((noreturn));

/* soak_bound.c: checks the hot keys' admissions of epochs [from, to)
 * against GCRA's bound and returns the number of violations.  With
 * `stats` (the final pass) it prints each violation and accumulates the
 * figures of the summary; without, it only counts (a provisional pass
 * while workers run). */
struct soak_bound_stats {
	uint64_t cells;	     /* (key, epoch) pairs with admissions */
	uint64_t admissions; /* their admissions */
	uint64_t at_exact;   /* pairs exactly at the exact GCRA bound */
	uint64_t over_exact; /* admissions above it, within allowance */
	uint64_t restarts;   /* admissions from an absent state */
	uint64_t foreign;    /* ... made across a jump */
	double max_fill;     /* max admissions / exact bound */
};
uint64_t soak_check_bounds(const struct soak_shared *sh, uint32_t from,
			   uint32_t to, struct soak_bound_stats *stats);

/* soak_mem.c: the resident set of a process from /proc/PID/status
 * (VmRSS and RssAnon, KiB) and its open descriptors; false if it is gone. */
struct soak_mem {
	uint64_t rss_kib, anon_kib, fds;
};
bool soak_mem_of(pid_t pid, struct soak_mem *out);

#endif
