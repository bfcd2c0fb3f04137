/*
 * thp.h - transparent huge pages for shared memory, for the 10M-key case.
 *
 * TKSHM_O_HUGEPAGES is advice (madvise MADV_HUGEPAGE); the kernel follows
 * it for shmem only when /sys/kernel/mm/transparent_hugepage/shmem_enabled
 * is `advise` or `always`.  thp_prepare() switches `never` (or `deny`) to
 * `advise` for the run when it may and can, and thp_restore() puts the
 * original value back (cleanup.c also restores it on a signal).  Whether
 * huge pages were really used is read from /proc/meminfo's ShmemHugePages.
 */
#ifndef TKSHM_BENCH_PROCS_THP_H
#define TKSHM_BENCH_PROCS_THP_H

#include <stdbool.h>

struct thp_state {
	char original[16]; /* the selected word before the run, "" unknown */
	char current[16];  /* the selected word during the run */
	bool changed;	   /* we wrote `advise` and must restore */
};

/* Reads the setting; when `may_write` and it is `never` or `deny` and the
 * file is writable, sets `advise`.  Never fails: a machine without the file
 * gets empty words. */
void thp_prepare(struct thp_state *s, bool may_write);

/* Writes the original value back if thp_prepare() changed it. */
void thp_restore(struct thp_state *s);

/* A field of /proc/meminfo in kB ("ShmemHugePages"), or -1. */
long meminfo_kb(const char *field);

#endif /* TKSHM_BENCH_PROCS_THP_H */
