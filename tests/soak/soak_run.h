/*
 * soak_run.h - the supervisor's state and its parts: soak.c drives the
 * run (options, tables, workers, the clock), soak_sample.c takes the
 * once-a-second samples and judges memory, soak_report.c prints the
 * progress lines and the summary.
 */
#ifndef TKSHM_TESTS_SOAK_RUN_H
#define TKSHM_TESTS_SOAK_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "soak.h"

struct soak_opts {
	double seconds;
	int procs;
	uint64_t slots, keys_per_slot;
	double jump_min, jump_max, kill_min, kill_max, progress;
	uint64_t seed, anon_slack;
	const char *dir;
};

/* The maxima of one memory window (the first or the last minute). */
struct soak_window {
	struct soak_mem sup, kept, replaced; /* supervisor, never-killed
						and killed workers (max) */
	uint64_t samples;
};

struct soak_run {
	struct soak_opts o;
	struct soak_shared *sh;
	tkshm_table *t, *wide;
	char dir[200]; /* 200 + "/wide.tkshm" fits the paths' 256 */
	int keep;      /* positions never killed */
	double start;
	uint64_t kills, jumps, forward, backward, verifies, problems;
	bool run_forward; /* the direction of the last jumps ... */
	int run_len;	  /* ... and how many in a row */
	uint64_t violations, unexpected_exits;
	uint64_t bound_live, checked_epochs;
	struct soak_window first, last;
	off_t size, wide_size;
	uint64_t size_changes;
	double occ_min, occ_max, occ_sum;
	uint64_t occ_samples;
	uint64_t rng;
};

/* The workers' counters summed over every position. */
struct soak_totals {
	uint64_t checks, admitted, denied, busy, straddles, spawns;
	uint64_t wide_checks, wide_admitted, wide_full, wide_busy;
	double max_lat;
};

/* soak_sample.c */
void soak_verify(struct soak_run *r);
void soak_sample_memory(struct soak_run *r, double t);
void soak_sample_occupancy(struct soak_run *r);
void soak_check_memory(struct soak_run *r);

/* soak_report.c */
struct soak_totals soak_sum_cells(const struct soak_run *r);
void soak_progress(struct soak_run *r, double t);
void soak_summary(struct soak_run *r, double dur,
		  const struct soak_bound_stats *b, uint64_t bound_violations);

#endif
