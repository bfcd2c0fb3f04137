/*
 * test_multi_threads.c - the workload of test_multi_mp.c with 8 threads
 * sharing one mapping of each table, so that ThreadSanitizer (which cannot
 * follow processes) checks the memory orders of the multi-dimension path,
 * the give-backs included: the program the TSan build runs (label
 * `concurrency`).  The workload and assertions are in multi_workload.h;
 * here, in addition, a verifier thread runs tkshm_verify on the three
 * tables in a loop while the workers run (a report on a live table is
 * real).  Fewer rounds under TSan.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

#include "multi_workload.h"

#define NTHREADS 8

#if defined(__SANITIZE_THREAD__)
#define MT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MT_TSAN 1
#endif
#endif
#ifdef MT_TSAN
#define ROUNDS 300
#else
#define ROUNDS 400
#endif
#define PER_ROUND 40

static void
thread_fail_exit(void)
{
	pthread_exit(NULL);
}

struct verifier {
	pthread_t th;
	struct mw_shared *sh;
	int stop;
	uint64_t runs;
};

static void
verifier_problem(void *ctx, const char *problem)
{
	(void)ctx;
	mp_fail_now(__FILE__, __LINE__, "concurrent verify: %s", problem);
}

static void *
verifier_main(void *p)
{
	struct verifier *v = p;

	while (!__atomic_load_n(&v->stop, __ATOMIC_ACQUIRE) && !mp_failed()) {
		for (int i = 0; i < 3; i++) {
			uint64_t problems = 0;
			int rc = tkshm_verify(v->sh->t[i], verifier_problem,
					      NULL, &problems);

			MP_REQUIRE(rc == TKSHM_OK && problems == 0,
				   "concurrent verify of table %d: %s, %llu "
				   "problems",
				   i, tkshm_error_name(rc),
				   (unsigned long long)problems);
		}
		__atomic_fetch_add(&v->runs, 1, __ATOMIC_RELAXED);
		mp_sleep_us(500);
	}
	return NULL;
}

struct worker_arg {
	struct mw_shared *sh;
	int worker;
};

static void *
worker_main(void *p)
{
	struct worker_arg *a = p;

	mw_worker(a->sh, a->worker);
	return NULL;
}

static void
run(tkshm_multi_mode mode, const char *what)
{
	struct mw_shared *sh = test_calloc(1, sizeof *sh);
	struct worker_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	struct verifier v;
	double t0 = tkt_seconds();

	mw_open(sh, mode, ROUNDS, PER_ROUND, NTHREADS);
	memset(&v, 0, sizeof v);
	v.sh = sh;
	assert_int_equal(pthread_create(&v.th, NULL, verifier_main, &v), 0);
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (struct worker_arg){ sh, i };
		assert_int_equal(
			pthread_create(&th[i], NULL, worker_main, &args[i]), 0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&v.stop, 1, __ATOMIC_RELEASE);
	pthread_join(v.th, NULL);
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);
	print_message("%s: %llu concurrent verify passes\n", what,
		      (unsigned long long)v.runs);
	mw_check(sh, what, tkt_seconds() - t0);
	mw_close(sh);
	test_free(sh);
}

static void
all_workload(void **state)
{
	(void)state;
	run(TKSHM_MULTI_ALL, "all, 8 threads");
}

static void
any_workload(void **state)
{
	(void)state;
	run(TKSHM_MULTI_ANY, "any, 8 threads");
}

static int
teardown(void **state)
{
	(void)state;
	if (mp_failure)
		memset(mp_failure, 0, sizeof *mp_failure);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(all_workload, teardown),
		cmocka_unit_test_teardown(any_workload, teardown),
	};

	mp_fail_exit = thread_fail_exit;
	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
