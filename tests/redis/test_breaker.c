/*
 * test_breaker.c - the shared circuit breaker (src/redis/breaker.c).
 *
 * Built twice (tests/redis/conn.cmake):
 *   test_breaker        the transitions, one caller at a time, and the
 *                       half-open race between threads (TSan runs it);
 *   test_breaker_procs  (BREAKER_PROCS) the same races between processes
 *                       on a MAP_SHARED anonymous mapping, and a probe
 *                       whose process died.
 *
 * Time is passed in, never read: every race is run at fixed `now` values,
 * so the number of winners does not depend on scheduling (a probe cannot
 * expire mid-race) and the tests are deterministic.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "redis/breaker.h"
#include "shm/atomic.h"

#define T0	  1000.0 /* ms */
#define THRESHOLD 3
#define OPEN_MS	  500.0
#define PROBE_MS  200.0

static uint64_t
opens(struct tk_breaker *b)
{
	return tk_load_seq_cst(&b->opens);
}

/* A breaker opened at T0 by THRESHOLD failures. */
static void
open_at_t0(struct tk_breaker *b)
{
	memset(b, 0, sizeof *b);
	for (int i = 1; i < THRESHOLD; i++)
		assert_false(tk_breaker_failure(b, T0, THRESHOLD, OPEN_MS));
	assert_true(tk_breaker_failure(b, T0, THRESHOLD, OPEN_MS));
}

#ifndef BREAKER_PROCS

/* ------------------------------------------------------------------------
 * One caller at a time
 * ---------------------------------------------------------------------- */

static void
test_threshold_opens(void **state)
{
	struct tk_breaker b;

	(void)state;
	memset(&b, 0, sizeof b);
	for (int i = 1; i < THRESHOLD; i++) {
		assert_false(tk_breaker_failure(&b, T0, THRESHOLD, OPEN_MS));
		assert_true(tk_breaker_allow(&b, T0, PROBE_MS));
		assert_false(tk_breaker_is_open(&b, T0));
	}
	assert_true(tk_breaker_failure(&b, T0, THRESHOLD, OPEN_MS));
	assert_true(tk_breaker_is_open(&b, T0));
	assert_int_equal(opens(&b), 1);
	/* More failures while open change nothing. */
	assert_false(tk_breaker_failure(&b, T0 + 1, THRESHOLD, OPEN_MS));
	assert_int_equal(opens(&b), 1);
	assert_false(tk_breaker_allow(&b, T0 + OPEN_MS - 0.001, PROBE_MS));
}

static void
test_success_restarts_the_count(void **state)
{
	struct tk_breaker b;

	(void)state;
	memset(&b, 0, sizeof b);
	for (int round = 0; round < 3; round++) {
		for (int i = 1; i < THRESHOLD; i++)
			assert_false(
				tk_breaker_failure(&b, T0, THRESHOLD, OPEN_MS));
		tk_breaker_success(&b);
	}
	assert_true(tk_breaker_allow(&b, T0, PROBE_MS));
	assert_int_equal(opens(&b), 0);
	/* A threshold of 0 is taken as 1. */
	assert_true(tk_breaker_failure(&b, T0, 0, OPEN_MS));
}

/* Open: every caller is refused at once, until open_until exactly. */
static void
test_open_refuses(void **state)
{
	struct tk_breaker b;
	double t0 = tkt_seconds();

	(void)state;
	open_at_t0(&b);
	for (int i = 0; i < 100000; i++)
		assert_false(tk_breaker_allow(&b, T0 + OPEN_MS * i / 100000.0,
					      PROBE_MS));
	/* Nothing in allow() waits: 100,000 refusals take well under a
	 * second even under sanitizers. */
	assert_true(tkt_seconds() - t0 < 1.0);
	assert_true(tk_breaker_allow(&b, T0 + OPEN_MS, PROBE_MS));
}

static void
test_half_open_one_probe(void **state)
{
	struct tk_breaker b;
	double h = T0 + OPEN_MS;

	(void)state;
	open_at_t0(&b);
	assert_true(tk_breaker_allow(&b, h + 3, PROBE_MS));
	assert_false(tk_breaker_allow(&b, h + 3, PROBE_MS));
	assert_false(tk_breaker_allow(&b, h + 3 + PROBE_MS - 0.001, PROBE_MS));
	assert_true(tk_breaker_is_open(&b, h + 3));
}

static void
test_success_closes(void **state)
{
	struct tk_breaker b;
	double h = T0 + OPEN_MS;

	(void)state;
	open_at_t0(&b);
	assert_true(tk_breaker_allow(&b, h, PROBE_MS));
	tk_breaker_success(&b);
	assert_false(tk_breaker_is_open(&b, h));
	for (int i = 0; i < 10; i++)
		assert_true(tk_breaker_allow(&b, h + 1, PROBE_MS));
	/* The failure count starts again from zero. */
	for (int i = 1; i < THRESHOLD; i++)
		assert_false(tk_breaker_failure(&b, h + 2, THRESHOLD, OPEN_MS));
	assert_true(tk_breaker_failure(&b, h + 2, THRESHOLD, OPEN_MS));
	assert_int_equal(opens(&b), 2);
}

static void
test_failed_probe_reopens(void **state)
{
	struct tk_breaker b;
	double h = T0 + OPEN_MS, f = h + 10;

	(void)state;
	open_at_t0(&b);
	assert_true(tk_breaker_allow(&b, h, PROBE_MS));
	assert_true(tk_breaker_failure(&b, f, THRESHOLD, OPEN_MS));
	assert_int_equal(opens(&b), 2);
	assert_false(tk_breaker_allow(&b, f, PROBE_MS));
	assert_false(tk_breaker_allow(&b, f + OPEN_MS - 0.001, PROBE_MS));
	/* The next period's probe goes at its start. */
	assert_true(tk_breaker_allow(&b, f + OPEN_MS, PROBE_MS));
	assert_false(tk_breaker_allow(&b, f + OPEN_MS, PROBE_MS));
}

/* With probe_ms longer than open_ms, a failed probe's claim does not
 * hold the next period's probe back. */
static void
test_failed_long_probe_frees_its_slot(void **state)
{
	struct tk_breaker b;
	double h = T0 + OPEN_MS, f = h + 5, probe = 10 * OPEN_MS;

	(void)state;
	open_at_t0(&b);
	assert_true(tk_breaker_allow(&b, h, probe));
	assert_true(tk_breaker_failure(&b, f, THRESHOLD, OPEN_MS));
	assert_true(tk_breaker_allow(&b, f + OPEN_MS, probe));
}

/* A probe that never reports (its process died) expires at its
 * deadline, and then exactly one new probe goes. */
static void
test_dead_probe_expires(void **state)
{
	struct tk_breaker b;
	double h = T0 + OPEN_MS;

	(void)state;
	open_at_t0(&b);
	assert_true(tk_breaker_allow(&b, h, PROBE_MS));
	assert_false(tk_breaker_allow(&b, h + PROBE_MS - 0.001, PROBE_MS));
	assert_true(tk_breaker_allow(&b, h + PROBE_MS, PROBE_MS));
	assert_false(tk_breaker_allow(&b, h + PROBE_MS, PROBE_MS));
	assert_int_equal(opens(&b), 1);
}

/* Values no breaker writes (a hostile or torn mapping) leave the
 * circuit open or half-open, and a success still closes it. */
static void
test_hostile_values(void **state)
{
	struct tk_breaker b;
	const double nan = __builtin_nan("");
	uint64_t bits;

	(void)state;
	memset(&b, 0, sizeof b);
	memcpy(&bits, &nan, sizeof bits);
	tk_store_seq_cst(&b.open_until, bits);
	tk_store_seq_cst(&b.probe_until, bits);
	assert_true(tk_breaker_is_open(&b, T0));
	assert_true(tk_breaker_allow(&b, T0, PROBE_MS));
	assert_false(tk_breaker_allow(&b, T0, PROBE_MS));
	tk_breaker_success(&b);
	assert_true(tk_breaker_allow(&b, T0, PROBE_MS));
	assert_false(tk_breaker_is_open(&b, T0));
}

/* ------------------------------------------------------------------------
 * Threads
 * ---------------------------------------------------------------------- */

#define THREADS 4
#define ROUNDS	20000
#define TRIES	8 /* allow() calls per thread per breaker */

static struct tk_breaker race[ROUNDS];
static atomic_uint winners[ROUNDS], openers[ROUNDS];
static atomic_int go;
static atomic_uint ready;

/* Every thread spins until all are running, then they start together. */
static void
start_line(void)
{
	/* seq_cst: the start line; nothing rides on it but timing. */
	atomic_fetch_add(&ready, 1);
	while (atomic_load(&go) == 0)
		;
}

static void
release_all(void)
{
	while (atomic_load(&ready) < THREADS)
		sched_yield();
	atomic_store(&go, 1);
}

/* Every thread runs over the same breakers in the same order, so they
 * meet on each one; `now` is fixed, so no probe can expire mid-race. */
static void *
hammer(void *arg)
{
	(void)arg;
	start_line();
	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < TRIES; k++)
			if (tk_breaker_allow(&race[i], T0 + OPEN_MS, PROBE_MS))
				atomic_fetch_add(&winners[i], 1);
		/* Every thread's failure: one of them opens it again. */
		if (tk_breaker_failure(&race[i], T0 + OPEN_MS + 1, THRESHOLD,
				       OPEN_MS))
			atomic_fetch_add(&openers[i], 1);
	}
	return NULL;
}

static void
test_threads_one_probe(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	for (int i = 0; i < ROUNDS; i++) {
		open_at_t0(&race[i]);
		atomic_store(&winners[i], 0);
		atomic_store(&openers[i], 0);
	}
	atomic_store(&go, 0);
	atomic_store(&ready, 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	release_all();
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	for (int i = 0; i < ROUNDS; i++) {
		assert_int_equal(atomic_load(&winners[i]), 1);
		assert_int_equal(atomic_load(&openers[i]), 1);
		assert_int_equal(opens(&race[i]), 2);
	}
}

/* Failures from every thread at once, from closed: one opening. */
static void *
fail_many(void *arg)
{
	struct tk_breaker *b = arg;
	unsigned mine = 0;

	start_line();
	for (int i = 0; i < 1000; i++)
		mine += tk_breaker_failure(b, T0, THRESHOLD, OPEN_MS);
	return (void *)(uintptr_t)mine;
}

static void
test_threads_one_opening(void **state)
{
	pthread_t t[THREADS];
	struct tk_breaker b;
	uintptr_t total = 0;

	(void)state;
	memset(&b, 0, sizeof b);
	atomic_store(&go, 0);
	atomic_store(&ready, 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fail_many, &b), 0);
	release_all();
	for (int i = 0; i < THREADS; i++) {
		void *mine;

		assert_int_equal(pthread_join(t[i], &mine), 0);
		total += (uintptr_t)mine;
	}
	assert_int_equal(total, 1);
	assert_int_equal(opens(&b), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_opens),
		cmocka_unit_test(test_success_restarts_the_count),
		cmocka_unit_test(test_open_refuses),
		cmocka_unit_test(test_half_open_one_probe),
		cmocka_unit_test(test_success_closes),
		cmocka_unit_test(test_failed_probe_reopens),
		cmocka_unit_test(test_failed_long_probe_frees_its_slot),
		cmocka_unit_test(test_dead_probe_expires),
		cmocka_unit_test(test_hostile_values),
		cmocka_unit_test(test_threads_one_probe),
		cmocka_unit_test(test_threads_one_opening),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

#else /* BREAKER_PROCS */

/* ------------------------------------------------------------------------
 * Processes
 * ---------------------------------------------------------------------- */

#define PROCS	    8
#define PROC_ROUNDS 1000
#define PROC_TRIES  8

struct arena {
	atomic_int go;
	atomic_uint ready;
	struct tk_breaker b[PROC_ROUNDS];
	atomic_uint winners[PROC_ROUNDS];
	atomic_uint openers[PROC_ROUNDS];
};

/* A child: never calls cmocka; its exit status is its report. */
static void
child_hammer(struct arena *a)
{
	atomic_fetch_add(&a->ready, 1);
	/* seq_cst: the start line; nothing rides on it but timing. */
	while (atomic_load(&a->go) == 0)
		;
	for (int i = 0; i < PROC_ROUNDS; i++) {
		for (int k = 0; k < PROC_TRIES; k++)
			if (tk_breaker_allow(&a->b[i], T0 + OPEN_MS, PROBE_MS))
				atomic_fetch_add(&a->winners[i], 1);
		if (tk_breaker_failure(&a->b[i], T0 + OPEN_MS + 1, THRESHOLD,
				       OPEN_MS))
			atomic_fetch_add(&a->openers[i], 1);
	}
	_exit(0);
}

static void
test_processes_one_probe(void **state)
{
	struct arena *a = tkt_shared(sizeof *a);
	pid_t pid[PROCS];
	double deadline;

	(void)state;
	for (int i = 0; i < PROC_ROUNDS; i++)
		open_at_t0(&a->b[i]);
	for (int p = 0; p < PROCS; p++) {
		pid[p] = fork();
		assert_true(pid[p] >= 0);
		if (pid[p] == 0)
			child_hammer(a);
	}
	/* Start them together, once all are spinning (bounded wait). */
	deadline = tkt_seconds() + 30;
	while (atomic_load(&a->ready) < PROCS && tkt_seconds() < deadline)
		usleep(100);
	atomic_store(&a->go, 1);
	for (int p = 0; p < PROCS; p++)
		tkt_wait_ok(pid[p]);
	for (int i = 0; i < PROC_ROUNDS; i++) {
		if (atomic_load(&a->winners[i]) != 1 ||
		    atomic_load(&a->openers[i]) != 1)
			fail_msg("breaker %d: %u probes, %u openings", i,
				 atomic_load(&a->winners[i]),
				 atomic_load(&a->openers[i]));
		assert_int_equal(opens(&a->b[i]), 2);
	}
	tkt_shared_free(a, sizeof *a);
}

/* The probe's process dies before reporting: the others stay out until
 * the probe's deadline, then one of them probes. */
static void
test_dead_process_probe_expires(void **state)
{
	struct tk_breaker *b = tkt_shared(sizeof *b);
	double h = T0 + OPEN_MS;
	int status;
	pid_t pid;

	(void)state;
	open_at_t0(b);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (tk_breaker_allow(b, h, PROBE_MS))
			raise(SIGKILL); /* dies holding the probe */
		_exit(1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_false(tk_breaker_allow(b, h + PROBE_MS - 0.001, PROBE_MS));
	assert_true(tk_breaker_allow(b, h + PROBE_MS, PROBE_MS));
	assert_false(tk_breaker_allow(b, h + PROBE_MS, PROBE_MS));
	tk_breaker_success(b);
	assert_false(tk_breaker_is_open(b, h + PROBE_MS));
	tkt_shared_free(b, sizeof *b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_processes_one_probe),
		cmocka_unit_test(test_dead_process_probe_expires),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif /* BREAKER_PROCS */
