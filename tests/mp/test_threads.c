/*
 * test_threads.c - the multi-process scenarios of tests/mp/ with threads
 * sharing one mapping standing in for processes, so that ThreadSanitizer
 * (which cannot follow processes) can check the slot protocol's memory
 * orders: this is the program the TSan build runs (label `concurrency`).
 *
 * While every scenario runs, a verifier thread calls tkshm_verify in a loop
 * (it must never report a problem: a report on a live table is real) and,
 * in the churn scenario, other threads peek, reset and read stats.
 *
 * exact_k_one_key     8 threads, ROUNDS fresh keys (one per round), limit
 *                     K, nothing refills (period 1e12 ms, fixed now):
 *                     exactly K admissions per round, remaining values
 *                     {K-1..0} each once, inserts == ROUNDS.  Each round
 *                     one thread resets the previous round's key while
 *                     the others insert the new one.
 * exact_k_fresh_keys  8 threads insert the same 1,000 fresh keys at once
 *                     (several passes, K = 3, each thread its own random
 *                     order; from the second round (fresh table and keys)
 *                     on, the first pass uses one order for everybody so
 *                     that the inserts collide)
 *                     while a churn thread makes idle slots be reclaimed
 *                     (the design of test_exact_k.c): every key admitted
 *                     exactly 3 times, reclaims > 0, no eviction.
 * churn_tiny_table    8 threads check 640 keys in a 64-slot table with
 *                     their own advancing clocks (reclaims and evictions),
 *                     a thread resets random keys, one peeks, one reads
 *                     stats and usage: every call succeeds, verify stays
 *                     clean, reclaims > 0, evictions > 0.
 * Sized to take a few seconds under TSan.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mp_util.h"

#define NTHREADS 8

static void
thread_fail_exit(void)
{
	pthread_exit(NULL);
}

/* --- the verifier thread ------------------------------------------------- */

struct verifier {
	pthread_t th;
	tkshm_table *t;
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
		uint64_t problems = 0;
		int rc = tkshm_verify(v->t, verifier_problem, NULL, &problems);

		MP_REQUIRE(rc == TKSHM_OK && problems == 0,
			   "concurrent verify: %s, %llu problems",
			   tkshm_error_name(rc), (unsigned long long)problems);
		__atomic_fetch_add(&v->runs, 1, __ATOMIC_RELAXED);
		/* Leave the CPUs to the workers most of the time. */
		mp_sleep_us(200);
	}
	return NULL;
}

static void
verifier_start(struct verifier *v, tkshm_table *t)
{
	memset(v, 0, sizeof *v);
	v->t = t;
	assert_int_equal(pthread_create(&v->th, NULL, verifier_main, v), 0);
}

static uint64_t
verifier_stop(struct verifier *v)
{
	__atomic_store_n(&v->stop, 1, __ATOMIC_RELEASE);
	pthread_join(v->th, NULL);
	return v->runs;
}

static void
join_all(pthread_t *th, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);
}

/* --- exact K on one key ------------------------------------------------- */

/* Insert races between the two threads that leave the barrier together are
 * what this scenario is after, so it runs many short rounds; fewer under
 * TSan, which is ~10x slower and is there for the memory orders. */
#if defined(__SANITIZE_THREAD__)
#define MP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MP_TSAN 1
#endif
#endif
#define K1 100
#ifdef MP_TSAN
#define ROUNDS1 500
#else
#define ROUNDS1 3000
#endif
#define NOW1 1e6

struct one_key {
	tkshm_table *t;
	void *first; /* the thread argument of the thread that resets */
	struct mp_barrier bar;
	uint64_t admitted[ROUNDS1];
	uint32_t seen[ROUNDS1][K1];
};

static void *
one_key_thread(void *p)
{
	struct one_key *s = *(struct one_key **)p;

	for (int r = 0; r < ROUNDS1; r++) {
		char key[32];
		int len = snprintf(key, sizeof key, "thr-round-%d", r);
		uint64_t mine = 0;

		if (!mp_barrier_wait(&s->bar))
			return NULL;
		if (r > 0 && p == s->first) {
			/* Everybody is done with the previous round's key:
			 * reset it (a reset racing the others' inserts of
			 * this round's key), so the table never fills. */
			char old[32];
			int olen = snprintf(old, sizeof old, "thr-round-%d",
					    r - 1);

			MP_REQUIRE(tkshm_reset(s->t, old, (size_t)olen) ==
					   TKSHM_OK,
				   "reset %s", old);
		}
		for (;;) {
			tkshm_decision d;
			int rc = tkshm_check_at(s->t, key, (size_t)len, 1, NOW1,
						&d);

			MP_REQUIRE(rc == TKSHM_OK, "round %d: %s", r,
				   tkshm_error_name(rc));
			if (!d.allowed)
				break;
			MP_REQUIRE(d.remaining >= 0 && d.remaining < K1,
				   "round %d: remaining %lld", r,
				   (long long)d.remaining);
			__atomic_fetch_add(&s->seen[r][d.remaining], 1,
					   __ATOMIC_RELAXED);
			mine++;
		}
		__atomic_fetch_add(&s->admitted[r], mine, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void
exact_k_one_key(void **state)
{
	struct one_key *s = test_calloc(1, sizeof *s);
	struct one_key *argv[NTHREADS];
	pthread_t th[NTHREADS];
	struct verifier v;
	tkshm_stats st;
	uint64_t runs;

	(void)state;
	s->t = mp_table(K1, 1e12, 0, 4096, TKSHM_ON_FULL_EVICT);
	s->bar.n = NTHREADS;
	s->first = &argv[0];
	verifier_start(&v, s->t);
	for (int i = 0; i < NTHREADS; i++) {
		argv[i] = s;
		assert_int_equal(
			pthread_create(&th[i], NULL, one_key_thread, &argv[i]),
			0);
	}
	join_all(th, NTHREADS);
	runs = verifier_stop(&v);
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);

	for (int r = 0; r < ROUNDS1; r++) {
		if (s->admitted[r] != K1)
			fail_msg("round %d: %llu admissions, expected %d", r,
				 (unsigned long long)s->admitted[r], K1);
		for (int k = 0; k < K1; k++)
			if (s->seen[r][k] != 1)
				fail_msg("round %d: remaining=%d seen %u times",
					 r, k, s->seen[r][k]);
	}
	assert_int_equal(tkshm_stats_get(s->t, &st), TKSHM_OK);
	print_message("one key: %d rounds; inserts %llu cas_retries %llu "
		      "duplicates_killed %llu; %llu concurrent verifies\n",
		      ROUNDS1, (unsigned long long)st.inserts,
		      (unsigned long long)st.cas_retries,
		      (unsigned long long)st.duplicates_killed,
		      (unsigned long long)runs);
	assert_int_equal(st.inserts, ROUNDS1);
	assert_int_equal(st.resets, ROUNDS1 - 1);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.allowed, (uint64_t)ROUNDS1 * K1);
	mp_verify(s->t, "after one-key rounds");
	tkshm_close(s->t);
	test_free(s);
}

/* --- 1,000 fresh keys at once, with reclaims ----------------------------- */

#define NKEYS2		1000
#define K2		3
#define PASSES2		4
#define T2		1e8
#define N0		8e11
#define CHURN_EPOCHS	2000
#define CHURN_PER_EPOCH 2
#ifdef MP_TSAN
#define ROUNDS2 2
#else
#define ROUNDS2 12
#endif

struct fresh {
	tkshm_table *t;
	struct mp_barrier bar;
	uint64_t seed;
	int round;
	uint32_t admitted[NKEYS2];
	uint32_t seen[NKEYS2][K2];
};

struct fresh_arg {
	struct fresh *s;
	int idx;
};

static void *
fresh_thread(void *p)
{
	struct fresh_arg *a = p;
	struct fresh *s = a->s;
	uint64_t rng =
		s->seed + (uint64_t)a->idx * UINT64_C(0x9E3779B97F4A7C15);
	uint32_t order[NKEYS2];

	for (uint32_t i = 0; i < NKEYS2; i++)
		order[i] = i;
	if (!mp_barrier_wait(&s->bar))
		return NULL;
	for (int pass = 0; pass < PASSES2; pass++) {
		if (pass == 0 && s->round > 0) {
			/* One order for everybody: the inserts collide. */
			uint64_t common = s->seed;
			mp_shuffle(order, NKEYS2, &common);
		} else {
			mp_shuffle(order, NKEYS2, &rng);
		}
		for (uint32_t i = 0; i < NKEYS2; i++) {
			uint32_t k = order[i];
			char key[32];
			int len = snprintf(key, sizeof key, "fresh-%u", k);
			tkshm_decision d;
			int rc = tkshm_check_at(s->t, key, (size_t)len, 1, N0,
						&d);

			MP_REQUIRE(rc == TKSHM_OK, "%s: %s", key,
				   tkshm_error_name(rc));
			if (!d.allowed)
				continue;
			MP_REQUIRE(d.remaining >= 0 && d.remaining < K2,
				   "%s: remaining %lld", key,
				   (long long)d.remaining);
			__atomic_fetch_add(&s->seen[k][d.remaining], 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->admitted[k], 1,
					   __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *
fresh_churn_thread(void *p)
{
	struct fresh_arg *a = p;
	struct fresh *s = a->s;

	if (!mp_barrier_wait(&s->bar))
		return NULL;
	for (int e = 0; e < CHURN_EPOCHS; e++)
		for (int j = 0; j < CHURN_PER_EPOCH; j++) {
			char key[48];
			int len =
				snprintf(key, sizeof key, "churn-%d-%d", e, j);
			tkshm_decision d;
			int rc = tkshm_check_at(s->t, key, (size_t)len, 1,
						(double)e * T2, &d);

			MP_REQUIRE(rc == TKSHM_OK && d.allowed,
				   "churn %s: %s allowed %d", key,
				   tkshm_error_name(rc), d.allowed);
		}
	return NULL;
}

static void
exact_k_fresh_keys(void **state)
{
	uint64_t seed = mp_seed();
	uint64_t inserts = 0, reclaims = 0, retries = 0, killed = 0, runs = 0;

	(void)state;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)seed);
	for (int round = 0; round < ROUNDS2; round++) {
		struct fresh *s = test_calloc(1, sizeof *s);
		pthread_t th[NTHREADS + 1];
		struct fresh_arg args[NTHREADS + 1];
		struct verifier v;
		tkshm_stats st;

		s->t = mp_table(K2, 3 * T2, 0, 16384, TKSHM_ON_FULL_EVICT);
		s->seed = seed + (uint64_t)round;
		s->round = round;
		s->bar.n = NTHREADS + 1;
		verifier_start(&v, s->t);
		for (int i = 0; i <= NTHREADS; i++) {
			args[i] = (struct fresh_arg){ s, i };
			assert_int_equal(
				pthread_create(&th[i], NULL,
					       i < NTHREADS ?
						       fresh_thread :
						       fresh_churn_thread,
					       &args[i]),
				0);
		}
		join_all(th, NTHREADS + 1);
		runs += verifier_stop(&v);
		if (mp_failed())
			fail_msg("%s", mp_failure->msg);

		for (uint32_t k = 0; k < NKEYS2; k++) {
			if (s->admitted[k] != K2)
				fail_msg("round %d, key fresh-%u: %u "
					 "admissions, expected %d",
					 round, k, s->admitted[k], K2);
			for (int r = 0; r < K2; r++)
				if (s->seen[k][r] != 1)
					fail_msg("round %d, key fresh-%u: "
						 "remaining=%d seen %u times",
						 round, k, r, s->seen[k][r]);
		}
		assert_int_equal(tkshm_stats_get(s->t, &st), TKSHM_OK);
		assert_true(st.reclaims > 0);
		assert_int_equal(st.evictions, 0);
		mp_verify(s->t, "after fresh keys");
		inserts += st.inserts;
		reclaims += st.reclaims;
		retries += st.cas_retries;
		killed += st.duplicates_killed;
		tkshm_close(s->t);
		test_free(s);
	}
	print_message("fresh keys: %d rounds; inserts %llu reclaims %llu "
		      "cas_retries %llu duplicates_killed %llu; %llu "
		      "concurrent verifies\n",
		      ROUNDS2, (unsigned long long)inserts,
		      (unsigned long long)reclaims, (unsigned long long)retries,
		      (unsigned long long)killed, (unsigned long long)runs);
}

/* --- churn in a tiny table, with peek / reset / stats ------------------- */

#define SLOTS3 64
#define NKEYS3 640
#define ITERS3 60000
#define T0_3   1700000000000.0

struct churn {
	tkshm_table *t;
	struct mp_barrier bar;
	uint64_t seed;
	int stop;
	uint64_t resets, peeks, stats_reads;
};

struct churn_arg {
	struct churn *s;
	int idx;
};

static void *
churn_thread(void *p)
{
	struct churn_arg *a = p;
	struct churn *s = a->s;
	uint64_t rng =
		s->seed + (uint64_t)a->idx * UINT64_C(0x2545F4914F6CDD1D);

	if (!mp_barrier_wait(&s->bar))
		return NULL;
	for (int i = 0; i < ITERS3; i++) {
		uint32_t k = (uint32_t)mp_rand_below(&rng, NKEYS3);
		char key[32];
		int len = snprintf(key, sizeof key, "tiny-%u", k);
		/* Each thread's clock advances 0.5 ms per check; the threads'
		 * clocks differ a little, as processes' do. */
		double now = T0_3 + i * 0.5 + (double)a->idx;
		tkshm_decision d;
		int rc = tkshm_check_at(s->t, key, (size_t)len, 1, now, &d);

		MP_REQUIRE(rc == TKSHM_OK, "%s: %s", key, tkshm_error_name(rc));
	}
	return NULL;
}

static void *
churn_side_thread(void *p)
{
	struct churn_arg *a = p;
	struct churn *s = a->s;
	uint64_t rng = s->seed ^ (uint64_t)a->idx;

	if (!mp_barrier_wait(&s->bar))
		return NULL;
	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		uint32_t k = (uint32_t)mp_rand_below(&rng, NKEYS3);
		char key[32];
		int len = snprintf(key, sizeof key, "tiny-%u", k);
		tkshm_decision d;
		tkshm_stats st;
		tkshm_usage us;
		int rc;

		switch (a->idx) {
		case 0:
			rc = tkshm_reset(s->t, key, (size_t)len);
			MP_REQUIRE(rc == TKSHM_OK, "reset %s: %s", key,
				   tkshm_error_name(rc));
			s->resets++;
			/* A few resets, not a reset storm. */
			mp_sleep_us(200);
			break;
		case 1:
			rc = tkshm_peek_at(s->t, key, (size_t)len,
					   T0_3 + 5000.0, &d);
			MP_REQUIRE(rc == TKSHM_OK, "peek %s: %s", key,
				   tkshm_error_name(rc));
			MP_REQUIRE(d.remaining >= 0 && d.limit == 2,
				   "peek %s: remaining %lld limit %lld", key,
				   (long long)d.remaining, (long long)d.limit);
			s->peeks++;
			break;
		default:
			MP_REQUIRE(tkshm_stats_get(s->t, &st) == TKSHM_OK,
				   "stats");
			MP_REQUIRE(tkshm_usage_get(s->t, T0_3, &us) == TKSHM_OK,
				   "usage");
			MP_REQUIRE(us.live + us.idle + us.empty +
						   us.placeholders + us.dead ==
					   SLOTS3,
				   "usage does not add up to the slots");
			s->stats_reads++;
			break;
		}
	}
	return NULL;
}

static void
churn_tiny_table(void **state)
{
	struct churn *s = test_calloc(1, sizeof *s);
	pthread_t th[NTHREADS], side[3];
	struct churn_arg args[NTHREADS], sargs[3];
	struct verifier v;
	tkshm_stats st;
	uint64_t runs;

	(void)state;
	s->t = mp_table(2, 100, 2, SLOTS3, TKSHM_ON_FULL_EVICT);
	s->seed = mp_seed();
	s->bar.n = NTHREADS + 3;
	verifier_start(&v, s->t);
	for (int i = 0; i < 3; i++) {
		sargs[i] = (struct churn_arg){ s, i };
		assert_int_equal(pthread_create(&side[i], NULL,
						churn_side_thread, &sargs[i]),
				 0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (struct churn_arg){ s, i };
		assert_int_equal(
			pthread_create(&th[i], NULL, churn_thread, &args[i]),
			0);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&s->stop, 1, __ATOMIC_RELEASE);
	join_all(side, 3);
	runs = verifier_stop(&v);
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);

	assert_int_equal(tkshm_stats_get(s->t, &st), TKSHM_OK);
	print_message(
		"tiny table: inserts %llu reclaims %llu evictions %llu "
		"(in debt %llu) debt_restores %llu resets %llu "
		"cas_retries %llu; %llu peeks, %llu stats reads, %llu "
		"concurrent verifies\n",
		(unsigned long long)st.inserts, (unsigned long long)st.reclaims,
		(unsigned long long)st.evictions,
		(unsigned long long)st.evictions_in_debt,
		(unsigned long long)st.debt_restores,
		(unsigned long long)st.resets,
		(unsigned long long)st.cas_retries,
		(unsigned long long)s->peeks,
		(unsigned long long)s->stats_reads, (unsigned long long)runs);
	assert_int_equal(st.allowed + st.denied, (uint64_t)NTHREADS * ITERS3);
	assert_true(st.reclaims > 0);
	assert_true(st.evictions > 0);
	assert_int_equal(st.resets, s->resets);
	mp_verify(s->t, "after the tiny-table churn");
	tkshm_close(s->t);
	test_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(exact_k_one_key, mp_teardown),
		cmocka_unit_test_teardown(exact_k_fresh_keys, mp_teardown),
		cmocka_unit_test_teardown(churn_tiny_table, mp_teardown),
	};

	mp_fail_exit = thread_fail_exit;
	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
