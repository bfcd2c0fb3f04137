/*
 * mp_util.h - helpers shared by the multi-process and multi-thread tests of
 * tests/mp/: child processes that can never outlive or hang the test, a
 * failure record in shared memory, a barrier that works across processes and
 * threads, a small PRNG and tables opened with an explicit policy.
 *
 * Rules every test here follows:
 *   - A child never returns into cmocka: it runs its function and _exit()s
 *     with its result.  A failed MP_REQUIRE in a child (or in one of its
 *     threads) records the first failure message in shared memory and exits
 *     the child with status 1; the parent sees the status and fails the test
 *     with that message.
 *   - Every child gets PR_SET_PDEATHSIG(SIGKILL) and an alarm, so a parent
 *     killed by ctest's timeout leaves nothing behind, and the cmocka
 *     teardown mp_teardown() SIGKILLs and reaps whatever is still alive on
 *     every path, including a failed assertion in the parent.
 *   - Waits are bounded: mp_wait_all() gives up after a deadline, kills
 *     everything and fails; barriers give up after MP_BARRIER_TIMEOUT_S.
 */
#ifndef TKSHM_TESTS_MP_UTIL_H
#define TKSHM_TESTS_MP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "test_support.h"
#include "tkshm.h"

/* --- failure record --------------------------------------------------- */

/* Shared by the parent and every child (and thread). */
struct mp_fail {
	int failed;
	char msg[1024];
};

/* The shared failure record; created by mp_setup(). */
extern struct mp_fail *mp_failure;

/* What a failing child does after recording: _exit(1) by default.  The
 * threads-only test sets it to pthread_exit. */
extern void (*mp_fail_exit)(void);

/* Records the first failure ("file:line: message") and calls mp_fail_exit.
 * For children and threads only: the parent uses cmocka's assertions. */
void mp_fail_now(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

#define MP_REQUIRE(cond, ...)                                         \
	do {                                                          \
		if (!(cond))                                          \
			mp_fail_now(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* True once anybody recorded a failure. */
bool mp_failed(void);

/* --- child processes -------------------------------------------------- */

/* cmocka group setup / per-test teardown: create the failure record; kill
 * and reap every child still registered. */
int mp_setup(void **state);
int mp_teardown(void **state);

/* Forks a child that runs fn(arg) and _exit()s with its return value.
 * Returns the pid (registered for mp_teardown).  Fails the test if fork
 * fails. */
pid_t mp_spawn(int (*fn)(void *), void *arg);

/* Waits for one registered child; unregisters it and returns the raw
 * waitpid status.  Fails the test if waitpid fails. */
int mp_reap(pid_t pid);

/* Non-blocking mp_reap: returns true (and the status) if the child has
 * ended and was reaped, false if it is still running. */
bool mp_try_reap(pid_t pid, int *status);

/* Fails the test (with the shared failure message, if any) unless `status`
 * is a normal exit with code 0.  `what` names the child. */
void mp_expect_ok(int status, const char *what);

/* Waits for every registered child to exit with status 0, at most
 * `deadline_s` seconds; on timeout or on any failure kills the others and
 * fails the test. */
void mp_wait_all(double deadline_s);

/* SIGKILLs and reaps every registered child. */
void mp_kill_all(void);

/* Number of registered (not yet reaped) children. */
int mp_live_children(void);

/* --- barrier ---------------------------------------------------------- */

#define MP_BARRIER_TIMEOUT_S 90.0

/* A generation barrier for n participants, in memory shared by processes
 * (tkt_shared) or threads.  Zero-initialise, then set n. */
struct mp_barrier {
	uint32_t n;
	uint32_t count;
	uint32_t gen;
};

/* Waits until n participants arrived.  Spins (with pause, then
 * sched_yield) so that the waiters leave together: the point is to make
 * them collide.  Returns false if a failure was recorded meanwhile or the
 * barrier timed out (which is recorded as a failure). */
bool mp_barrier_wait(struct mp_barrier *b);

/* --- randomness ------------------------------------------------------- */

/* splitmix64: the state is any 64-bit value. */
uint64_t mp_rand(uint64_t *state);
/* Uniform in [0, n). */
uint64_t mp_rand_below(uint64_t *state, uint64_t n);
/* A seed: MP_SEED from the environment if set, otherwise time and pid. */
uint64_t mp_seed(void);
/* Fisher-Yates shuffle of n uint32_t. */
void mp_shuffle(uint32_t *a, size_t n, uint64_t *state);

/* --- tables and time -------------------------------------------------- */

/* An anonymous table (shared with children forked later) with a GCRA
 * policy given by numbers, so that values like 1e12 need no parsing. */
tkshm_table *mp_table(double limit, double period_ms, double burst,
		      uint64_t slots, tkshm_on_full on_full);

/* tkshm_verify with every problem printed; fails the test if any. */
void mp_verify(tkshm_table *t, const char *when);

/* Atomic minimum / maximum of non-negative doubles kept as their bit
 * patterns (which order like the doubles).  0 in a min cell means "unset". */
void mp_atomic_min_pos(uint64_t *cell, double v);
void mp_atomic_max_pos(uint64_t *cell, double v);
double mp_bits_double(uint64_t bits);

/* Sleeps `us` microseconds (restarting on EINTR). */
void mp_sleep_us(uint64_t us);

#endif
