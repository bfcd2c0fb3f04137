/*
 * report.h - one case as a line of the human-readable table on stdout and
 * as one JSON object on one line of the --out file.
 *
 * The JSON fields (bench/results/procs.jsonl; the report generator reads
 * them by these exact names):
 *   suite "procs", scenario, impl, procs, keys, hugepages, then either
 *   skipped (a sentence; no measurement follows) or seconds, decisions,
 *   decisions_per_sec, allowed, samples, p50_ns, p99_ns, p999_ns,
 *   p9999_ns, max_ns, cpu_cores;
 *   sigstop adds variant, per_sec_before, per_sec_during, per_sec_after,
 *   stopped_ms; keys10M adds fill_seconds, shmem_huge_kb, hugepages_used,
 *   thp_shmem_enabled, and batch when the requests were checked that
 *   many at a time by tkshm_check_many_at (absent: one tkshm_check
 *   each); redis adds per_client_per_sec.
 */
#ifndef TKSHM_BENCH_PROCS_REPORT_H
#define TKSHM_BENCH_PROCS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "driver.h"

struct row {
	const char *scenario; /* uniform100k, hotkey, keys10M, sigstop, redis */
	const char *impl;     /* tkshm, mutex, redis-strict */
	int procs;
	size_t keys;
	bool hugepages;		 /* asked for (TKSHM_O_HUGEPAGES) */
	const char *variant;	 /* sigstop: anywhere, in_critical_section */
	const char *skipped;	 /* not NULL: the case did not run, why */
	const struct presult *r; /* the measurement (NULL when skipped) */
	double fill_seconds;	 /* keys10M: < 0 when absent */
	long shmem_huge_kb; /* keys10M: ShmemHugePages gained; < 0 absent */
	const char *thp;    /* keys10M: shmem_enabled during the run */
	unsigned batch;	    /* > 1: requests per tkshm_check_many_at */
};

/* A row with every optional field absent. */
void row_init(struct row *w, const char *scenario, const char *impl, int procs,
	      size_t keys);

/* Prints the table's header line. */
void report_header(FILE *f);

/* Prints the row on `human` and appends its JSON line to `json` (either
 * may be NULL). */
void report_row(FILE *human, FILE *json, const struct row *w);

#endif /* TKSHM_BENCH_PROCS_REPORT_H */
