/*
 * test_permits_threads.c - permits taken and given back by the threads of
 * one process (the ThreadSanitizer build runs this): the permits in flight,
 * counted independently, never exceed the limit, every release succeeds
 * exactly once, and the adaptive limit's samples from every thread land.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "test_support.h"

#define THREADS 4
#define ROUNDS	20000

static tkshm_table *tbl;
static unsigned inflight, max_inflight, failures;
static unsigned long long grants;

static void *
run(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		tkshm_permit p;
		tkshm_decision d;
		unsigned n, m;

		if (tkshm_acquire_at(tbl, "k", 1, 1000 + i, &p, &d) !=
		    TKSHM_OK) {
			/* Relaxed: a tally read after join. */
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (!d.allowed)
			continue;
		/* seq_cst: the test's oracle, ordered with grant and
		 * release. */
		n = __atomic_add_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
		m = __atomic_load_n(&max_inflight, __ATOMIC_SEQ_CST);
		while (n > m && !__atomic_compare_exchange_n(
					&max_inflight, &m, n, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
		/* seq_cst: as above. */
		__atomic_sub_fetch(&inflight, 1, __ATOMIC_SEQ_CST);
		if (tkshm_release_at(tbl, &p, 1001 + i,
				     TKSHM_OUTCOME_SUCCESS) != TKSHM_OK ||
		    tkshm_release_at(tbl, &p, 1001 + i,
				     TKSHM_OUTCOME_SUCCESS) != TKSHM_ENOTHELD)
			/* Relaxed: as above. */
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		/* Relaxed: as above. */
		__atomic_add_fetch(&grants, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
run_threads(const char *spec, unsigned limit)
{
	pthread_t th[THREADS];
	tkshm_decision d;

	tbl = tkt_anon(spec, 64);
	inflight = max_inflight = failures = 0;
	grants = 0;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, run, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	print_message("%s: %llu grants, at most %u in flight\n", spec, grants,
		      max_inflight);
	assert_int_equal(failures, 0);
	assert_true(max_inflight <= limit);
	/* Progress: refusals are frequent (4 threads, 2 or 3 permits). */
	assert_true(grants >= ROUNDS / 4);
	assert_rc(tkshm_peek_at(tbl, "k", 1, 1e6, &d), TKSHM_OK);
	assert_int_equal(d.remaining, d.limit);
	tkshm_close(tbl);
}

static void
test_threads_fixed(void **state)
{
	(void)state;
	run_threads("concurrency:limit=2", 2);
}

static void
test_threads_adaptive(void **state)
{
	(void)state;
	run_threads("adaptiveConcurrency:initialLimit=3,maxLimit=3", 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_fixed),
		cmocka_unit_test(test_threads_adaptive),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
