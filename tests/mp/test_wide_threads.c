/*
 * test_wide_threads.c - wide states (src/shm/wide.c, protocol.h W1-W9)
 * with 8 threads sharing one mapping, so that ThreadSanitizer (which cannot
 * follow processes) checks the memory orders of the claim / write /
 * publish protocol, the insert of a FRESH key, reclaims and the
 * multi-dimension give-backs: the program the TSan build runs (label
 * `concurrency`).  Fewer rounds under TSan.
 *
 * exact_k_wide
 *   Two tables of 32 slots: slidingWindow (limit 150, 64 buckets) and
 *   tokenBucket (capacity 200).  Each round has its own fixed `now` (NOW0 +
 *   r * STEP: the earlier rounds' keys are idle, so inserts reclaim them)
 *   and three fresh keys per table; the threads leave a barrier together
 *   and each checks every key until it is denied (in a thread-dependent
 *   order), so the keys are inserted and claimed concurrently.  Asserted
 *   per key: exactly K admissions, remaining K-1 .. 0 each once; every
 *   denial has remaining 0 and a retry; per table: allowed == rounds * 3 *
 *   K, denied == rounds * 3 * 8, reclaims > 0, verify clean while the
 *   threads run (slots change hands under it) and at the end.
 *
 * multi_all_wide_and_gcra
 *   tkshm_check_multi_at(ALL) over a user key of a slidingWindowLog table
 *   (limit 6; costs 1 and 2, a cost counts ceil(cost) stamps) and one
 *   global key of a GCRA table (burst 30, T = 1e9 ms: nothing refills), in
 *   a random order, at a fixed now; 8 users per round, 8 threads x 12
 *   requests per round (demand well above both limits).  Asserted per
 *   round: no user key admitted more than 6 units, the global key no more
 *   than 30; every admitted request took both (global == sum of the users'
 *   admitted requests); the consumption the tables hold equals what was
 *   admitted (log: 6 - peek.remaining exactly, its give-backs being exact
 *   at one now; GCRA: from a peek half a unit later, see multi_workload.h);
 *   allowed == dimensions admitted in each table (a commit given back is
 *   not counted).
 *   A verifier thread runs tkshm_verify on both tables meanwhile (no key
 *   leaves its slot here: a report on this live table is real).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mp_util.h"

#define NTHREADS 8

#if defined(__SANITIZE_THREAD__)
#define WT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WT_TSAN 1
#endif
#endif

static void
thread_fail_exit(void)
{
	pthread_exit(NULL);
}

/* --- the verifier thread ------------------------------------------------- */

struct verifier {
	pthread_t th;
	tkshm_table *t[2];
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
		for (int i = 0; i < 2; i++) {
			uint64_t problems = 0;
			int rc = tkshm_verify(v->t[i], verifier_problem, NULL,
					      &problems);

			MP_REQUIRE(rc == TKSHM_OK && problems == 0,
				   "concurrent verify: %s, %llu problems",
				   tkshm_error_name(rc),
				   (unsigned long long)problems);
		}
		__atomic_fetch_add(&v->runs, 1, __ATOMIC_RELAXED);
		mp_sleep_us(300);
	}
	return NULL;
}

static void
verifier_start(struct verifier *v, tkshm_table *a, tkshm_table *b)
{
	memset(v, 0, sizeof *v);
	v->t[0] = a;
	v->t[1] = b;
	assert_int_equal(pthread_create(&v->th, NULL, verifier_main, v), 0);
}

static uint64_t
verifier_stop(struct verifier *v)
{
	__atomic_store_n(&v->stop, 1, __ATOMIC_RELEASE);
	pthread_join(v->th, NULL);
	return v->runs;
}

/* Joins the workers, then the verifier (if any), and only then reads a
 * recorded failure: every thread that may write it has been joined. */
static uint64_t
join_all(pthread_t *th, int n, struct verifier *v)
{
	uint64_t runs = 0;

	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (v)
		runs = verifier_stop(v);
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);
	return runs;
}

/* --- exact K, two wide tables -------------------------------------------- */

#ifdef WT_TSAN
#define ROUNDS1 200
#else
#define ROUNDS1 1500
#endif
#define KEYS1 3
#define NOW0  1.7e12
#define STEP  1e7 /* every window and refill of the two policies */

/* Long rounds (K in the hundreds, 130-unit records for the window), so that
 * time slices end inside claims and the claims are stolen. */
static const char *const specs1[2] = {
	"slidingWindow:limit=150,windowMs=1000,buckets=64",
	"tokenBucket:capacity=200,refillPerSec=1000",
};
static const int k1[2] = { 150, 200 };
#define MAXK1 200

struct exact {
	tkshm_table *t[2];
	struct mp_barrier bar;
	uint32_t admitted[ROUNDS1][2][KEYS1];
	uint32_t denied[ROUNDS1][2][KEYS1];
	uint32_t seen[ROUNDS1][2][KEYS1][MAXK1];
};

struct exact_arg {
	struct exact *s;
	int idx;
};

static void *
exact_thread(void *p)
{
	struct exact_arg *a = p;
	struct exact *s = a->s;

	for (int r = 0; r < ROUNDS1; r++) {
		double now = NOW0 + (double)r * STEP;

		if (!mp_barrier_wait(&s->bar))
			return NULL;
		for (int i = 0; i < 2 * KEYS1; i++) {
			/* Thread-dependent order over (table, key). */
			int j = (i + a->idx) % (2 * KEYS1);
			int tb = j % 2, k = j / 2;
			char key[48];
			int len = snprintf(key, sizeof key, "r%d-t%d-k%d", r,
					   tb, k);

			for (;;) {
				tkshm_decision d;
				int rc = tkshm_check_at(
					s->t[tb], key, (size_t)len, 1, now, &d);

				MP_REQUIRE(rc == TKSHM_OK, "%s: %s: %s",
					   specs1[tb], key,
					   tkshm_error_name(rc));
				if (!d.allowed) {
					MP_REQUIRE(d.remaining == 0 &&
							   d.retry_after_ms > 0,
						   "%s: %s: denied with "
						   "remaining %lld retry %lld",
						   specs1[tb], key,
						   (long long)d.remaining,
						   (long long)d.retry_after_ms);
					__atomic_fetch_add(&s->denied[r][tb][k],
							   1, __ATOMIC_RELAXED);
					break;
				}
				MP_REQUIRE(d.remaining >= 0 &&
						   d.remaining < k1[tb],
					   "%s: %s: remaining %lld", specs1[tb],
					   key, (long long)d.remaining);
				__atomic_fetch_add(
					&s->seen[r][tb][k][d.remaining], 1,
					__ATOMIC_RELAXED);
				MP_REQUIRE(
					__atomic_add_fetch(
						&s->admitted[r][tb][k], 1,
						__ATOMIC_RELAXED) <=
						(uint32_t)k1[tb],
					"%s: %s: more than K = %d admissions",
					specs1[tb], key, k1[tb]);
			}
		}
	}
	return NULL;
}

static void
exact_k_wide(void **state)
{
	struct exact *s = test_calloc(1, sizeof *s);
	struct exact_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	struct verifier v;
	uint64_t runs;
	double t0 = tkt_seconds();

	(void)state;
	for (int tb = 0; tb < 2; tb++)
		s->t[tb] = tkt_anon(specs1[tb], 32);
	s->bar.n = NTHREADS;
	verifier_start(&v, s->t[0], s->t[1]);
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (struct exact_arg){ s, i };
		assert_int_equal(
			pthread_create(&th[i], NULL, exact_thread, &args[i]),
			0);
	}
	runs = join_all(th, NTHREADS, &v);

	for (int r = 0; r < ROUNDS1; r++)
		for (int tb = 0; tb < 2; tb++)
			for (int k = 0; k < KEYS1; k++) {
				if (s->admitted[r][tb][k] != (uint32_t)k1[tb])
					fail_msg("%s: round %d key %d: %u "
						 "admissions, expected %d",
						 specs1[tb], r, k,
						 s->admitted[r][tb][k], k1[tb]);
				if (s->denied[r][tb][k] != NTHREADS)
					fail_msg("%s: round %d key %d: %u "
						 "denials, expected %d",
						 specs1[tb], r, k,
						 s->denied[r][tb][k], NTHREADS);
				for (int x = 0; x < k1[tb]; x++)
					if (s->seen[r][tb][k][x] != 1)
						fail_msg("%s: round %d key %d: "
							 "remaining=%d seen %u "
							 "times",
							 specs1[tb], r, k, x,
							 s->seen[r][tb][k][x]);
			}
	for (int tb = 0; tb < 2; tb++) {
		tkshm_stats st;

		assert_int_equal(tkshm_stats_get(s->t[tb], &st), TKSHM_OK);
		print_message("%s: %d rounds x %d keys, %.2f s; inserts %llu "
			      "reclaims %llu cas_retries %llu claims_stolen "
			      "%llu duplicates_killed %llu\n",
			      specs1[tb], ROUNDS1, KEYS1, tkt_seconds() - t0,
			      (unsigned long long)st.inserts,
			      (unsigned long long)st.reclaims,
			      (unsigned long long)st.cas_retries,
			      (unsigned long long)st.claims_stolen,
			      (unsigned long long)st.duplicates_killed);
		assert_int_equal(st.allowed,
				 (uint64_t)ROUNDS1 * KEYS1 * k1[tb]);
		assert_int_equal(st.denied,
				 (uint64_t)ROUNDS1 * KEYS1 * NTHREADS);
		assert_true(st.inserts >= (uint64_t)ROUNDS1 * KEYS1);
		assert_true(st.reclaims > 0);
		assert_int_equal(st.refusals, 0);
		mp_verify(s->t[tb], specs1[tb]);
		tkshm_close(s->t[tb]);
	}
	if (runs > 0)
		print_message("%llu concurrent verify passes\n",
			      (unsigned long long)runs);
	test_free(s);
}

/* --- multi ALL over a wide and a GCRA table ------------------------------ */

#ifdef WT_TSAN
#define ROUNDS2 300
#else
#define ROUNDS2 1000
#endif
#define USERS2	   8
#define PER_ROUND2 12
#define LIMIT_U	   6
#define BURST_G	   30
#define NOW2	   1e6
#define PERIOD_G   1e12
#define LIMIT_G	   1000.0
#define T_G	   (PERIOD_G / LIMIT_G)

struct multi {
	tkshm_table *user, *global;
	struct mp_barrier bar;
	uint64_t seed;
	uint32_t adm_user[ROUNDS2][USERS2]; /* units */
	uint32_t req_user[ROUNDS2][USERS2]; /* admitted requests */
	uint32_t adm_global[ROUNDS2];	    /* units (= requests) */
	uint64_t dims_user, dims_global;    /* dimensions admitted */
	uint64_t calls, admitted, denied_user, denied_global;
};

struct multi_arg {
	struct multi *s;
	int idx;
};

static void *
multi_thread(void *p)
{
	struct multi_arg *a = p;
	struct multi *s = a->s;
	uint64_t rng =
		s->seed + (uint64_t)(a->idx + 1) * UINT64_C(0x9E3779B97F4A7C15);

	for (int r = 0; r < ROUNDS2; r++) {
		if (!mp_barrier_wait(&s->bar))
			return NULL;
		for (int j = 0; j < PER_ROUND2; j++) {
			int u = (int)mp_rand_below(&rng, USERS2);
			double cost = 1 + (double)mp_rand_below(&rng, 2);
			char ukey[32], gkey[32];
			int ulen = snprintf(ukey, sizeof ukey, "u%d.%d", r, u);
			int glen = snprintf(gkey, sizeof gkey, "g%d", r);
			tkshm_dimension dims[2];
			tkshm_decision out, each[2];
			size_t b = 99;
			int ui = (int)mp_rand_below(&rng, 2), gi = 1 - ui;
			int rc;

			dims[ui] = (tkshm_dimension){ s->user, ukey,
						      (size_t)ulen, cost };
			dims[gi] = (tkshm_dimension){ s->global, gkey,
						      (size_t)glen, 1 };
			rc = tkshm_check_multi_at(TKSHM_MULTI_ALL, dims, 2,
						  NOW2, &out, each, &b);
			MP_REQUIRE(rc == TKSHM_OK, "round %d: multi: %s", r,
				   tkshm_error_name(rc));
			MP_REQUIRE(out.allowed ==
					   (each[0].allowed && each[1].allowed),
				   "round %d: combined %d from %d %d", r,
				   out.allowed, each[0].allowed,
				   each[1].allowed);
			MP_REQUIRE(each[ui].limit == LIMIT_U &&
					   each[gi].limit == BURST_G &&
					   each[ui].remaining >= 0 &&
					   each[gi].remaining >= 0 && b < 2,
				   "round %d: limits %lld %lld remaining %lld "
				   "%lld binding %zu",
				   r, (long long)each[ui].limit,
				   (long long)each[gi].limit,
				   (long long)each[ui].remaining,
				   (long long)each[gi].remaining, b);
			__atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
			if (!each[ui].allowed)
				__atomic_fetch_add(&s->denied_user, 1,
						   __ATOMIC_RELAXED);
			if (!each[gi].allowed)
				__atomic_fetch_add(&s->denied_global, 1,
						   __ATOMIC_RELAXED);
			if (!out.allowed)
				continue;
			__atomic_fetch_add(&s->admitted, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->adm_user[r][u], (uint32_t)cost,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->req_user[r][u], 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->adm_global[r], 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->dims_user, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&s->dims_global, 1,
					   __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void
multi_all_wide_and_gcra(void **state)
{
	struct multi *s = test_calloc(1, sizeof *s);
	struct multi_arg args[NTHREADS];
	pthread_t th[NTHREADS];
	struct verifier v;
	tkshm_stats su, sg;
	uint64_t runs, exhausted_g = 0;
	double t0 = tkt_seconds();

	(void)state;
	/* Every key stays live (one now): room for all of them. */
	s->user = tkt_anon("slidingWindowLog:limit=6,windowMs=1e12",
			   (uint64_t)ROUNDS2 * USERS2 * 4);
	s->global =
		mp_table(LIMIT_G, PERIOD_G, BURST_G, 4096, TKSHM_ON_FULL_EVICT);
	s->seed = mp_seed();
	s->bar.n = NTHREADS;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)s->seed);
	verifier_start(&v, s->user, s->global);
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (struct multi_arg){ s, i };
		assert_int_equal(
			pthread_create(&th[i], NULL, multi_thread, &args[i]),
			0);
	}
	runs = join_all(th, NTHREADS, &v);

	for (int r = 0; r < ROUNDS2; r++) {
		uint32_t reqs = 0;
		char key[32];
		tkshm_decision d;

		for (int u = 0; u < USERS2; u++) {
			snprintf(key, sizeof key, "u%d.%d", r, u);
			if (s->adm_user[r][u] > LIMIT_U)
				fail_msg("round %d user %d: %u units admitted, "
					 "limit %d",
					 r, u, s->adm_user[r][u], LIMIT_U);
			assert_int_equal(tkshm_peek_at(s->user, key,
						       strlen(key), NOW2, &d),
					 TKSHM_OK);
			if (LIMIT_U - d.remaining != s->adm_user[r][u])
				fail_msg("round %d user %d: %u units admitted, "
					 "the log holds %lld",
					 r, u, s->adm_user[r][u],
					 (long long)(LIMIT_U - d.remaining));
			reqs += s->req_user[r][u];
		}
		if (s->adm_global[r] > BURST_G)
			fail_msg("round %d: the global key admitted %u, burst "
				 "%d",
				 r, s->adm_global[r], BURST_G);
		if (s->adm_global[r] != reqs)
			fail_msg("round %d: %u requests admitted, the global "
				 "key took %u",
				 r, reqs, s->adm_global[r]);
		snprintf(key, sizeof key, "g%d", r);
		assert_int_equal(tkshm_peek_at(s->global, key, strlen(key),
					       NOW2 + T_G / 2, &d),
				 TKSHM_OK);
		if (BURST_G - d.remaining != s->adm_global[r])
			fail_msg("round %d: the global key admitted %u, holds "
				 "%lld half a unit later",
				 r, s->adm_global[r],
				 (long long)(BURST_G - d.remaining));
		exhausted_g += s->adm_global[r] == BURST_G;
	}
	assert_int_equal(tkshm_stats_get(s->user, &su), TKSHM_OK);
	assert_int_equal(tkshm_stats_get(s->global, &sg), TKSHM_OK);
	print_message("multi all: %d rounds, %llu calls, %llu admitted, %.2f "
		      "s; denied by user %llu, by global %llu; global "
		      "exhausted in %llu rounds; multi_rollbacks user %llu "
		      "global %llu; cas_retries user %llu global %llu; "
		      "claims_stolen %llu; %llu concurrent verify passes\n",
		      ROUNDS2, (unsigned long long)s->calls,
		      (unsigned long long)s->admitted, tkt_seconds() - t0,
		      (unsigned long long)s->denied_user,
		      (unsigned long long)s->denied_global,
		      (unsigned long long)exhausted_g,
		      (unsigned long long)su.multi_rollbacks,
		      (unsigned long long)sg.multi_rollbacks,
		      (unsigned long long)su.cas_retries,
		      (unsigned long long)sg.cas_retries,
		      (unsigned long long)su.claims_stolen,
		      (unsigned long long)runs);
	if (su.allowed != s->dims_user)
		fail_msg("user table: allowed %llu != %llu admitted",
			 (unsigned long long)su.allowed,
			 (unsigned long long)s->dims_user);
	if (sg.allowed != s->dims_global)
		fail_msg("global table: allowed %llu != %llu admitted",
			 (unsigned long long)sg.allowed,
			 (unsigned long long)s->dims_global);
	assert_int_equal(s->calls, (uint64_t)ROUNDS2 * PER_ROUND2 * NTHREADS);
	/* Both limits bind. */
	assert_true(s->denied_user > 0 && s->denied_global > 0);
	assert_int_equal(su.refusals, 0);
	assert_int_equal(sg.evictions, 0);
	mp_verify(s->user, "multi: user table");
	mp_verify(s->global, "multi: global table");
	tkshm_close(s->user);
	tkshm_close(s->global);
	test_free(s);
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
		cmocka_unit_test_teardown(exact_k_wide, teardown),
		cmocka_unit_test_teardown(multi_all_wide_and_gcra, teardown),
	};

	mp_fail_exit = thread_fail_exit;
	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
