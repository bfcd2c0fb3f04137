/*
 * test_exact_k.c - exactly K admissions, whatever the interleaving, across
 * real processes (each with two threads) sharing one anonymous table.
 *
 * one_key_many_rounds
 *   8 processes x 2 threads hammer ONE fresh key per round with GCRA limit K,
 *   period 1e12 ms (nothing refills during the test) at a fixed `now`.  A
 *   shared spin barrier releases the 16 threads together (on 2 cores, the
 *   two running ones leave within about a microsecond of each other, the
 *   others as they get a CPU), so every round starts with an insert race on
 *   the same absent key: the concurrent insert path (protocol.h I6).  With a fixed
 *   now a denial is final, so each thread checks until its first denial.
 *   Asserted per round: the admissions sum to exactly K, and the `remaining`
 *   values reported by the admissions are exactly {K-1, ..., 0}, each once
 *   (two admissions computed from one state would repeat a value: a split
 *   budget or a lost update).  Overall: inserts == rounds (one REAL slot per
 *   key, I5), allowed == rounds*K, denied == 16*rounds, tkshm_verify clean.
 *
 * thousand_keys_with_reclaims
 *   16 workers (8 processes x 2 threads) insert the same 1,000 fresh keys at
 *   once, each in its own random order, several passes, K = 3 per key,
 *   while a churn process makes the table reclaim idle slots.  Design (a
 *   table has one policy, so the two populations are told apart by `now`):
 *     policy   limit 3, period 3e12 ms: T = 1e12 ms, tau = 3e12 ms;
 *     counted  keys are checked at N0 = 8e11 only.  Their TAT is then in
 *              [N0 + T, N0 + 3T], later than every `now` anybody uses, so
 *              they are live for every checker: never idle, never reclaimed.
 *     churn    keys are checked once each, at now = e*T for epochs
 *              e = 0, 1, ..., CHURN_EPOCHS-1 (all < N0), CHURN_PER_EPOCH
 *              keys per epoch.  A churn key of epoch e has TAT (e+1)*T, so
 *              it is idle for the churn keys of every later epoch and for
 *              the counted keys' inserts (N0 > every churn TAT): churn keys
 *              are reclaimed all the time, by churn and by counted inserts.
 *     size     16384 slots for 1,000 live counted keys plus CHURN_PER_EPOCH
 *              live churn keys at a time: a window full of live keys (eviction) is
 *              practically impossible, and the test asserts evictions == 0
 *              so that exactness is never explained away by debt memory.
 *   All values are integers below 2^53, so the GCRA arithmetic is exact.
 *   Asserted: every counted key admitted exactly 3 times with remaining
 *   {2,1,0} each once; every churn check admitted; reclaims > 0;
 *   evictions == 0; tkshm_verify clean.  ROUNDS2 rounds, a fresh table and
 *   fresh keys each.  In round 0 every worker has its own random order in
 *   every pass; from round 1 on, the first pass uses one random order for
 *   all workers, so that the workers running at the same moment insert the
 *   same absent key at the same moment (the later passes are random).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "mp_util.h"

#define NPROC	 8
#define NTHR	 2
#define NWORKERS (NPROC * NTHR)

/* --- one key, many rounds ------------------------------------------------ */

#define K1	1000
#define ROUNDS1 3000 /* many rounds: each starts with an insert race */
#define NOW1	1e6

struct one_key_shared {
	struct mp_barrier bar;
	uint64_t admitted[ROUNDS1];
	/* How often each `remaining` value was reported, per round. */
	uint32_t seen[ROUNDS1][K1];
};

struct one_key_arg {
	tkshm_table *t;
	struct one_key_shared *sh;
};

static void *
one_key_thread(void *p)
{
	struct one_key_arg *a = p;

	for (int r = 0; r < ROUNDS1; r++) {
		char key[32];
		int len = snprintf(key, sizeof key, "exact-round-%d", r);
		uint64_t mine = 0;

		if (!mp_barrier_wait(&a->sh->bar))
			mp_fail_now(__FILE__, __LINE__, "barrier failed");
		for (;;) {
			tkshm_decision d;
			int rc = tkshm_check_at(a->t, key, (size_t)len, 1, NOW1,
						&d);

			MP_REQUIRE(rc == TKSHM_OK, "round %d: check: %s", r,
				   tkshm_error_name(rc));
			if (!d.allowed) {
				MP_REQUIRE(d.remaining == 0 &&
						   d.retry_after_ms > 0,
					   "round %d: denial with remaining "
					   "%lld, retry %lld",
					   r, (long long)d.remaining,
					   (long long)d.retry_after_ms);
				break;
			}
			MP_REQUIRE(d.remaining >= 0 && d.remaining < K1,
				   "round %d: remaining %lld out of range", r,
				   (long long)d.remaining);
			__atomic_fetch_add(&a->sh->seen[r][d.remaining], 1,
					   __ATOMIC_RELAXED);
			mine++;
			MP_REQUIRE(mine <= K1,
				   "round %d: one thread got more "
				   "than K admissions",
				   r);
		}
		__atomic_fetch_add(&a->sh->admitted[r], mine, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int
one_key_child(void *p)
{
	pthread_t th[NTHR];

	for (int i = 0; i < NTHR; i++)
		MP_REQUIRE(pthread_create(&th[i], NULL, one_key_thread, p) == 0,
			   "pthread_create");
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	return 0;
}

static void
one_key_many_rounds(void **state)
{
	/* Every round's key stays live: 65536 slots keep 3,000 of them far
	 * from a full window (an eviction would restore another key's debt,
	 * asserted absent below). */
	tkshm_table *t = mp_table(K1, 1e12, 0, 65536, TKSHM_ON_FULL_EVICT);
	struct one_key_shared *sh = tkt_shared(sizeof *sh);
	struct one_key_arg arg = { t, sh };
	tkshm_stats st;
	double t0 = tkt_seconds();

	(void)state;
	sh->bar.n = NWORKERS;
	for (int i = 0; i < NPROC; i++)
		mp_spawn(one_key_child, &arg);
	mp_wait_all(120);

	for (int r = 0; r < ROUNDS1; r++) {
		if (sh->admitted[r] != K1)
			fail_msg("round %d: %llu admissions, expected %d", r,
				 (unsigned long long)sh->admitted[r], K1);
		for (int k = 0; k < K1; k++)
			if (sh->seen[r][k] != 1)
				fail_msg("round %d: remaining=%d reported %u "
					 "times, expected once",
					 r, k, sh->seen[r][k]);
	}
	assert_int_equal(tkshm_stats_get(t, &st), TKSHM_OK);
	print_message("one key: %d rounds x %d workers, %.2f s; inserts %llu, "
		      "cas_retries %llu, duplicates_killed %llu\n",
		      ROUNDS1, NWORKERS, tkt_seconds() - t0,
		      (unsigned long long)st.inserts,
		      (unsigned long long)st.cas_retries,
		      (unsigned long long)st.duplicates_killed);
	assert_int_equal(st.inserts, ROUNDS1);
	assert_int_equal(st.allowed, (uint64_t)ROUNDS1 * K1);
	assert_int_equal(st.denied, (uint64_t)ROUNDS1 * NWORKERS);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.reclaims, 0);
	mp_verify(t, "after one-key rounds");

	tkt_shared_free(sh, sizeof *sh);
	tkshm_close(t);
}

/* --- 1,000 fresh keys at once, with reclaims around them ------------------ */

#define NKEYS2		1000
#define K2		3
#define PASSES2		6
#define T2		1e8
#define N0		8e11
#define CHURN_EPOCHS	7000 /* e*T2 < N0 for every epoch */
#define CHURN_PER_EPOCH 4
#define ROUNDS2		12

struct keys_shared {
	struct mp_barrier bar;
	uint32_t admitted[NKEYS2];
	uint32_t seen[NKEYS2][K2];
	uint64_t churn_checks;
	uint64_t seed;
};

struct keys_arg {
	tkshm_table *t;
	struct keys_shared *sh;
	int round;
	int worker; /* per process; each thread adds its own index */
};

struct keys_thread_arg {
	struct keys_arg *a;
	int thread;
};

static int
counted_key(char *buf, size_t n, int round, uint32_t k)
{
	return snprintf(buf, n, "counted-%d-%u", round, k);
}

static void *
keys_thread(void *p)
{
	struct keys_thread_arg *ta = p;
	struct keys_arg *a = ta->a;
	uint64_t rng =
		a->sh->seed ^ (uint64_t)(a->worker * NTHR + ta->thread + 1) *
				      UINT64_C(0x2545F4914F6CDD1D);
	uint32_t order[NKEYS2];

	for (uint32_t i = 0; i < NKEYS2; i++)
		order[i] = i;
	if (!mp_barrier_wait(&a->sh->bar))
		mp_fail_now(__FILE__, __LINE__, "barrier failed");
	for (int pass = 0; pass < PASSES2; pass++) {
		if (pass == 0 && a->round > 0) {
			/* Same order for everybody: the inserts collide. */
			uint64_t common = a->sh->seed;
			mp_shuffle(order, NKEYS2, &common);
		} else {
			mp_shuffle(order, NKEYS2, &rng);
		}
		for (uint32_t i = 0; i < NKEYS2; i++) {
			uint32_t k = order[i];
			char key[48];
			int len = counted_key(key, sizeof key, a->round, k);
			tkshm_decision d;
			int rc = tkshm_check_at(a->t, key, (size_t)len, 1, N0,
						&d);

			MP_REQUIRE(rc == TKSHM_OK, "counted key %u: %s", k,
				   tkshm_error_name(rc));
			if (!d.allowed)
				continue;
			MP_REQUIRE(d.remaining >= 0 && d.remaining < K2,
				   "counted key %u: remaining %lld", k,
				   (long long)d.remaining);
			__atomic_fetch_add(&a->sh->seen[k][d.remaining], 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&a->sh->admitted[k], 1,
					   __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static int
keys_child(void *p)
{
	pthread_t th[NTHR];
	struct keys_thread_arg ta[NTHR];

	for (int i = 0; i < NTHR; i++) {
		ta[i].a = p;
		ta[i].thread = i;
		MP_REQUIRE(pthread_create(&th[i], NULL, keys_thread, &ta[i]) ==
				   0,
			   "pthread_create");
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	return 0;
}

static int
churn_child(void *p)
{
	struct keys_arg *a = p;

	if (!mp_barrier_wait(&a->sh->bar))
		return 1;
	for (int e = 0; e < CHURN_EPOCHS; e++) {
		double now = (double)e * T2;

		for (int j = 0; j < CHURN_PER_EPOCH; j++) {
			char key[48];
			int len = snprintf(key, sizeof key, "churn-%d-%d-%d",
					   a->round, e, j);
			tkshm_decision d;
			int rc = tkshm_check_at(a->t, key, (size_t)len, 1, now,
						&d);

			MP_REQUIRE(rc == TKSHM_OK, "churn %s: %s", key,
				   tkshm_error_name(rc));
			MP_REQUIRE(d.allowed && d.remaining == K2 - 1,
				   "churn %s: allowed %d remaining %lld at its "
				   "first check",
				   key, d.allowed, (long long)d.remaining);
			__atomic_fetch_add(&a->sh->churn_checks, 1,
					   __ATOMIC_RELAXED);
		}
	}
	return 0;
}

static void
thousand_keys_with_reclaims(void **state)
{
	uint64_t seed = mp_seed();
	double t0 = tkt_seconds();

	(void)state;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)seed);
	uint64_t reclaims = 0, retries = 0, killed = 0;

	for (int round = 0; round < ROUNDS2; round++) {
		tkshm_table *t =
			mp_table(K2, 3 * T2, 0, 16384, TKSHM_ON_FULL_EVICT);
		struct keys_shared *sh = tkt_shared(sizeof *sh);
		struct keys_arg args[NPROC + 1];
		tkshm_stats st;

		sh->bar.n = NWORKERS + 1; /* + the churn process */
		sh->seed = seed + (uint64_t)round;
		for (int i = 0; i < NPROC; i++) {
			args[i] = (struct keys_arg){ t, sh, round, i };
			mp_spawn(keys_child, &args[i]);
		}
		args[NPROC] = (struct keys_arg){ t, sh, round, NPROC };
		mp_spawn(churn_child, &args[NPROC]);
		mp_wait_all(120);

		for (uint32_t k = 0; k < NKEYS2; k++) {
			if (sh->admitted[k] != K2)
				fail_msg("round %d, counted key %u: %u "
					 "admissions, expected exactly %d",
					 round, k, sh->admitted[k], K2);
			for (int r = 0; r < K2; r++)
				if (sh->seen[k][r] != 1)
					fail_msg("round %d, counted key %u: "
						 "remaining=%d reported %u "
						 "times",
						 round, k, r, sh->seen[k][r]);
		}
		assert_int_equal(sh->churn_checks,
				 (uint64_t)CHURN_EPOCHS * CHURN_PER_EPOCH);
		assert_int_equal(tkshm_stats_get(t, &st), TKSHM_OK);
		reclaims += st.reclaims;
		retries += st.cas_retries;
		killed += st.duplicates_killed;
		assert_true(st.reclaims > 0);
		/* The design keeps windows from filling with live keys. */
		assert_int_equal(st.evictions, 0);
		assert_int_equal(st.allowed, (uint64_t)NKEYS2 * K2 +
						     (uint64_t)CHURN_EPOCHS *
							     CHURN_PER_EPOCH);
		mp_verify(t, "after 1,000 keys with reclaims");

		tkt_shared_free(sh, sizeof *sh);
		tkshm_close(t);
	}
	print_message("1,000 keys x %d rounds: %.2f s; reclaims %llu, "
		      "cas_retries %llu, duplicates_killed %llu\n",
		      ROUNDS2, tkt_seconds() - t0, (unsigned long long)reclaims,
		      (unsigned long long)retries, (unsigned long long)killed);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(one_key_many_rounds, mp_teardown),
		cmocka_unit_test_teardown(thousand_keys_with_reclaims,
					  mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
