/*
 * test_lifecycle_threads.c - one handle shared by 4 threads that check
 * while the main thread changes the table under them: a policy written in
 * place, then two replacements (grown).  The threads follow on their next
 * call while others may still be running on the old mapping, which stays
 * mapped until they are done (read-copy-update, src/api/handle.h).  Label
 * `concurrency`: the TSan build runs it.
 *
 * fixedWindow, windows of 1e12 ms at a fixed now: the key "hot" starts
 * with a limit of 1000, raised in place to 3000 once spent; the table is
 * then grown twice while the threads spend the rest.  Exactly 3000 are
 * admitted, and the handle ends on a table of 8192 slots.
 *
 * Then threads that change one table at once: a writer word names a
 * process, so the library serialises its own threads' changes.  Four
 * appliers, each growing the table to its own size and writing a window
 * length in place back and forth, beside two checkers: every change is
 * made or refused with TKSHM_EBUSY, the policy records stay whole, and
 * exactly the limit is admitted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"

#define NTHR 4
#define N0   1e6

static tkshm_table *table;
static uint64_t admitted, denied;
static int stop;

static void
thread_fail_exit(void)
{
	pthread_exit(NULL);
}

static void *
checker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		tkshm_decision d;
		int rc = tkshm_check_at(table, "hot", 3, 1, N0, &d);

		MP_REQUIRE(rc == TKSHM_OK, "check: %s", tkshm_error_name(rc));
		if (d.allowed)
			__atomic_add_fetch(&admitted, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&denied, 1, __ATOMIC_RELAXED);
		if (!d.allowed)
			sched_yield();
	}
	return NULL;
}

static uint64_t
settled(void)
{
	for (int i = 0; i < 20000; i++) {
		uint64_t a = __atomic_load_n(&admitted, __ATOMIC_RELAXED);
		uint64_t d = __atomic_load_n(&denied, __ATOMIC_RELAXED);

		mp_sleep_us(1000);
		if (__atomic_load_n(&admitted, __ATOMIC_RELAXED) == a &&
		    __atomic_load_n(&denied, __ATOMIC_RELAXED) > d + 100)
			return a;
	}
	fail_msg("the admissions never settled");
	return 0;
}

static void
test_threads_follow(void **state)
{
	const char *path = tkt_path("threads.tk");
	tkshm_policy p = tkt_policy("fixedWindow:limit=1000,windowMs=1e12");
	tkshm_policy raised = tkt_policy("fixedWindow:limit=3000,windowMs=1e12");
	tkshm_options o = TKSHM_OPTIONS_INIT;
	pthread_t th[NTHR];
	tkshm_stats st;

	(void)state;
	unlink(path);
	o.policy = &p;
	o.slots = 64;
	assert_rc(tkshm_open(path, &o, &table), TKSHM_OK);
	mp_fail_exit = thread_fail_exit;
	for (int i = 0; i < NTHR; i++)
		assert_int_equal(pthread_create(&th[i], NULL, checker, NULL),
				 0);
	assert_int_equal(settled(), 1000);
	assert_rc(tkshm_apply(table, &raised, 0, NULL), TKSHM_OK);
	while (__atomic_load_n(&admitted, __ATOMIC_RELAXED) < 1500)
		mp_sleep_us(100);
	assert_rc(tkshm_apply(table, NULL, 1024, NULL), TKSHM_OK);
	while (__atomic_load_n(&admitted, __ATOMIC_RELAXED) < 2200)
		mp_sleep_us(100);
	assert_rc(tkshm_apply(table, NULL, 8192, NULL), TKSHM_OK);
	assert_int_equal(settled(), 3000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	assert_false(mp_failed());
	assert_rc(tkshm_stats_get(table, &st), TKSHM_OK);
	assert_int_equal(st.slots, 8192);
	tkshm_close(table);
	unlink(path);
}

#define NAPPLY 4

static tkshm_table *shared;
static int apply_failed;

static void *
applier(void *arg)
{
	long i = (long)arg;
	tkshm_policy a = tkt_policy("fixedWindow:limit=10,windowMs=1e12");
	tkshm_policy b = tkt_policy("fixedWindow:limit=10,windowMs=2e12");

	for (int round = 0; round < 200; round++) {
		/* Both windows start at 0 at N0: an in-place change that
		 * keeps every count. */
		int rc = tkshm_apply_at(shared, round % 2 ? &a : &b,
					round == 100 ? 128u << i : 0, N0, NULL);

		/* The growths must happen (the final size is checked): a
		 * busy one (another thread's change held the lock for its
		 * whole wait, a loaded machine) is asked again. */
		while (round == 100 && rc == TKSHM_EBUSY)
			rc = tkshm_apply_at(shared, NULL, 128u << i, N0, NULL);

		/* A growth after a larger one asks to shrink: refused. */
		if (rc != TKSHM_OK && rc != TKSHM_EBUSY &&
		    !(round == 100 && rc == TKSHM_EINVAL))
			__atomic_store_n(&apply_failed, rc, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *
shared_checker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		tkshm_decision d;
		int rc = tkshm_check_at(shared, "k", 1, 1, N0, &d);

		MP_REQUIRE(rc == TKSHM_OK || rc == TKSHM_EBUSY, "check: %s",
			   tkshm_error_name(rc));
		if (rc == TKSHM_OK && d.allowed)
			__atomic_add_fetch(&admitted, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
say(void *ctx, const char *problem)
{
	(void)ctx;
	print_message("verify: %s\n", problem);
}

static void
test_threads_change_at_once(void **state)
{
	const char *path = tkt_path("at-once.tk");
	tkshm_policy p = tkt_policy("fixedWindow:limit=10,windowMs=1e12");
	tkshm_options o = TKSHM_OPTIONS_INIT;
	pthread_t ap[NAPPLY], ch[2];
	uint64_t problems = 0;
	tkshm_stats st;

	(void)state;
	unlink(path);
	o.policy = &p;
	o.slots = 64;
	assert_rc(tkshm_open(path, &o, &shared), TKSHM_OK);
	__atomic_store_n(&admitted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
	mp_fail_exit = thread_fail_exit;
	for (int i = 0; i < 2; i++)
		assert_int_equal(
			pthread_create(&ch[i], NULL, shared_checker, NULL), 0);
	for (long i = 0; i < NAPPLY; i++)
		assert_int_equal(
			pthread_create(&ap[i], NULL, applier, (void *)i), 0);
	for (int i = 0; i < NAPPLY; i++)
		pthread_join(ap[i], NULL);
	mp_sleep_us(20000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(ch[i], NULL);
	assert_false(mp_failed());
	assert_int_equal(__atomic_load_n(&apply_failed, __ATOMIC_RELAXED), 0);
	assert_int_equal(__atomic_load_n(&admitted, __ATOMIC_RELAXED), 10);
	assert_rc(tkshm_verify(shared, say, NULL, &problems), TKSHM_OK);
	assert_int_equal(problems, 0);
	assert_rc(tkshm_stats_get(shared, &st), TKSHM_OK);
	assert_int_equal(st.slots, 128u << (NAPPLY - 1));
	tkshm_close(shared);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_follow),
		cmocka_unit_test(test_threads_change_at_once),
	};

	return cmocka_run_group_tests(tests, mp_setup, tkt_teardown);
}
