/*
 * cleanup.h - what must not outlive the driver, undone on every exit path.
 *
 * Worker processes, the redis-server child and a changed shmem_enabled are
 * registered here as they appear.  The normal paths undo them one by one;
 * cleanup_install() adds handlers for SIGINT, SIGTERM and SIGHUP that undo
 * whatever is still registered (with async-signal-safe calls only) and end
 * the driver.  Workers and redis-server also get PR_SET_PDEATHSIG(SIGKILL),
 * so even a SIGKILLed driver leaves no process behind.
 */
#ifndef TKSHM_BENCH_PROCS_CLEANUP_H
#define TKSHM_BENCH_PROCS_CLEANUP_H

#include <sys/types.h>

/* Installs the signal handlers. */
void cleanup_install(void);

/* Registers a process to SIGKILL (and reap) on a signal; forgetting it
 * (once reaped) frees its place. */
void cleanup_add_pid(pid_t pid);
void cleanup_forget_pid(pid_t pid);

/* Registers a sysfs file and the word to write back into it (NULL: none). */
void cleanup_set_thp(const char *path, const char *word);

/* Undoes everything still registered (the signal handler's work). */
void cleanup_all(void);

/* In a forked child of `parent`: SIGKILL when the parent dies (and exit
 * at once if it already has), default signal handlers, and the parent's
 * registrations forgotten. */
void cleanup_child(pid_t parent);

#endif /* TKSHM_BENCH_PROCS_CLEANUP_H */
