/*
 * test_full_table.c - a table far too small for its keys: evictions (or
 * refusals) never let a key through more often than GCRA allows.
 *
 * 64 slots, 640 keys (10x), 4 processes.  GCRA limit 2 per 100 ms, burst 2:
 * T = 50 ms, tau = 100 ms.  The clock is simulated and shared: all workers
 * run STEPS steps in lockstep (a barrier between steps) and every check of
 * step s is made at now = T0 + s * STEP_MS, so the `now`s of the checks are
 * monotonic in the order the table sees them, as with one exact clock.  In
 * each step each worker checks CHECKS_PER_STEP random keys (about 5 checks
 * per key per T, enough to keep every key at its limit if it had a slot).
 *
 * Ideal.  An exact GCRA key admits at most burst + floor(D / T) requests
 * when its checks span D ms: each admission moves the TAT by T, and an
 * admission at t needs TAT' - tau <= t, so the n-th admission (counting from
 * the first, at t1 >= T0) needs t1 + n*T - tau <= t_n <= T0 + D, i.e.
 * n <= burst + D/T.  Here D = (STEPS - 1) * STEP_MS = 1999 ms, so each key
 * may get 2 + 39 = 41 admissions and ideal = 640 * 41 = 26,240.
 *
 * EVICT: a full window evicts its least-indebted key and remembers the
 * evicted TAT in a debt cell shared by the keys of that cell (I8), so a
 * key that comes back never starts with less debt than it had.  With the
 * clock monotonic that makes the exact bound hold per key; asserted:
 * total <= 1.1 x ideal (the bound), every key <= 41 (exact),
 * evictions > 0, evictions_in_debt > 0.
 * REFUSE: a full window returns TKSHM_EFULL (counted as not admitted);
 * asserted: refusals > 0, total <= ideal, every key <= 41.
 * Both: only TKSHM_OK or (REFUSE) TKSHM_EFULL are ever returned;
 * tkshm_verify is clean afterwards.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "mp_util.h"

#define SLOTS		64
#define NKEYS		640
#define NWORKERS	4
#define STEPS		2000
#define STEP_MS		1.0
#define CHECKS_PER_STEP 16
#define LIMIT		2.0
#define PERIOD_MS	100.0
#define BURST		2.0
#define T_MS		(PERIOD_MS / LIMIT)
/* An epoch ms: every `now` and TAT of the test stays an exact integer. */
#define T0 1700000000000.0

#define PER_KEY_IDEAL \
	((uint64_t)BURST + (uint64_t)((STEPS - 1) * STEP_MS / T_MS))
#define IDEAL ((uint64_t)NKEYS * PER_KEY_IDEAL)

struct full_shared {
	struct mp_barrier bar;
	uint64_t seed;
	uint32_t admitted[NKEYS];
	uint64_t refused, evicted_debtor_flags, restored_flags, checks;
};

struct full_arg {
	tkshm_table *t;
	struct full_shared *sh;
	int worker;
	tkshm_on_full mode;
};

static int
full_worker(void *p)
{
	struct full_arg *a = p;
	uint64_t rng = a->sh->seed ^
		       (uint64_t)(a->worker + 1) * UINT64_C(0xD1B54A32D192ED03);
	uint64_t refused = 0, evd = 0, rst = 0;

	for (int step = 0; step < STEPS; step++) {
		double now = T0 + step * STEP_MS;

		if (!mp_barrier_wait(&a->sh->bar))
			return 1;
		for (int c = 0; c < CHECKS_PER_STEP; c++) {
			uint32_t k = (uint32_t)mp_rand_below(&rng, NKEYS);
			char key[32];
			int len = snprintf(key, sizeof key, "full-%u", k);
			tkshm_decision d;
			int rc = tkshm_check_at(a->t, key, (size_t)len, 1, now,
						&d);

			if (rc == TKSHM_EFULL &&
			    a->mode == TKSHM_ON_FULL_REFUSE) {
				refused++;
				continue;
			}
			MP_REQUIRE(rc == TKSHM_OK, "step %d, %s: %s", step, key,
				   tkshm_error_name(rc));
			evd += (d.flags & TKSHM_DECISION_EVICTED_DEBTOR) != 0;
			rst += (d.flags & TKSHM_DECISION_DEBT_RESTORED) != 0;
			if (d.allowed)
				__atomic_fetch_add(&a->sh->admitted[k], 1,
						   __ATOMIC_RELAXED);
		}
	}
	__atomic_fetch_add(&a->sh->refused, refused, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sh->evicted_debtor_flags, evd, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sh->restored_flags, rst, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->sh->checks, (uint64_t)STEPS * CHECKS_PER_STEP,
			   __ATOMIC_RELAXED);
	return 0;
}

static void
run_full(tkshm_on_full mode)
{
	tkshm_table *t = mp_table(LIMIT, PERIOD_MS, BURST, SLOTS, mode);
	struct full_shared *sh = tkt_shared(sizeof *sh);
	struct full_arg args[NWORKERS];
	uint64_t total = 0, max_key = 0;
	tkshm_stats st;
	double t0 = tkt_seconds();
	const char *name = mode == TKSHM_ON_FULL_EVICT ? "EVICT" : "REFUSE";

	sh->seed = mp_seed();
	sh->bar.n = NWORKERS;
	print_message("%s: seed %#llx (set MP_SEED to replay)\n", name,
		      (unsigned long long)sh->seed);
	assert_int_equal(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.slots, SLOTS);
	for (int i = 0; i < NWORKERS; i++) {
		args[i] = (struct full_arg){ t, sh, i, mode };
		mp_spawn(full_worker, &args[i]);
	}
	mp_wait_all(120);

	for (int k = 0; k < NKEYS; k++) {
		total += sh->admitted[k];
		if (sh->admitted[k] > max_key)
			max_key = sh->admitted[k];
	}
	assert_int_equal(tkshm_stats_get(t, &st), TKSHM_OK);
	print_message(
		"%s: %.2f s; %llu checks, %llu admitted (ideal %llu, "
		"%.1f%%), max per key %llu (exact bound %llu); stats: "
		"inserts %llu reclaims %llu evictions %llu (in debt %llu) "
		"debt_restores %llu refusals %llu cas_retries %llu; "
		"flags seen: evicted-debtor %llu, debt-restored %llu\n",
		name, tkt_seconds() - t0, (unsigned long long)sh->checks,
		(unsigned long long)total, (unsigned long long)IDEAL,
		100.0 * (double)total / (double)IDEAL,
		(unsigned long long)max_key, (unsigned long long)PER_KEY_IDEAL,
		(unsigned long long)st.inserts, (unsigned long long)st.reclaims,
		(unsigned long long)st.evictions,
		(unsigned long long)st.evictions_in_debt,
		(unsigned long long)st.debt_restores,
		(unsigned long long)st.refusals,
		(unsigned long long)st.cas_retries,
		(unsigned long long)sh->evicted_debtor_flags,
		(unsigned long long)sh->restored_flags);

	assert_int_equal(st.allowed, total);
	for (int k = 0; k < NKEYS; k++)
		if (sh->admitted[k] > PER_KEY_IDEAL)
			fail_msg(
				"%s: key full-%d admitted %u times; exact GCRA "
				"allows at most %llu over %g ms",
				name, k, sh->admitted[k],
				(unsigned long long)PER_KEY_IDEAL,
				(STEPS - 1) * STEP_MS);
	if (mode == TKSHM_ON_FULL_EVICT) {
		assert_true((double)total <= 1.1 * (double)IDEAL);
		assert_true(st.evictions > 0);
		assert_true(st.evictions_in_debt > 0);
		assert_true(sh->evicted_debtor_flags > 0);
		assert_int_equal(st.refusals, 0);
	} else {
		assert_true(total <= IDEAL);
		assert_true(st.refusals > 0);
		assert_int_equal(st.refusals, sh->refused);
		assert_int_equal(st.evictions, 0);
	}
	mp_verify(t, name);

	tkt_shared_free(sh, sizeof *sh);
	tkshm_close(t);
}

static void
full_table_evict(void **state)
{
	(void)state;
	run_full(TKSHM_ON_FULL_EVICT);
}

static void
full_table_refuse(void **state)
{
	(void)state;
	run_full(TKSHM_ON_FULL_REFUSE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(full_table_evict, mp_teardown),
		cmocka_unit_test_teardown(full_table_refuse, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
