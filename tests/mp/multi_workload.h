/*
 * multi_workload.h - the multi-dimension workload shared by
 * test_multi_mp.c (worker processes) and test_multi_threads.c (worker
 * threads, the program the TSan build runs).  Header-only: static
 * functions, included by exactly one file of each program.
 *
 * Three tables and four dimensions, with overlapping keys:
 *   A  a per-user key   (MW_USERS users per round, GCRA burst MW_BURST_A)
 *   B  a tenant key     (user u belongs to tenant u % MW_TENANTS): a fixed
 *                        window of limit MW_BURST_B whose one window spans
 *                        the test, so its give-backs (refund.c) are exact
 *   C  a global key     (one per round, burst MW_BURST_C)
 * and a fourth dimension that names the tenant key of B again, with a cost
 * of its own: a key named twice in one request, checked by each dimension
 * in turn (tkshm.h).
 * The GCRA policies have limit 1000 per 1e12 ms: T = 1e9 ms, so nothing refills
 * at the fixed now MW_NOW = 1e6.  Costs are whole units (A and B 1 or 2, C
 * 1), so every TAT is MW_NOW + k * T + (a few ulps of conservative refund
 * rounding): integers below 2^53 plus slack, exact.
 *
 * Each round the workers leave a barrier together and send requests for
 * random users in the round's fresh keys, with the four dimensions in a
 * random order; demand is about three times the global budget, so every
 * round exhausts some dimension while the workers race.  Every worker
 * records what it was admitted (per key, in cost units).
 *
 * What is checked (mw_check, in the main thread / parent):
 *   - per key, the admitted cost never exceeds the key's burst: no
 *     dimension is ever over-admitted;
 *   - per key, the consumption the table holds agrees with what was
 *     admitted.  The consumption is read from peeks: burst - remaining.
 *       `any`: no commit is ever given back, so at MW_NOW it equals the
 *       admitted cost exactly.
 *       `all`: a give-back is exact when nobody moved the key since the
 *       commit, otherwise conservative (gcra.h, tk_gcra_refund: TAT - T*c
 *       rounded up by an ulp).  At a frozen `now`, a TAT a few ulps above
 *       a unit boundary shows one whole unit less of remaining, so at
 *       MW_NOW the consumption is admitted or admitted + 1 -- never less
 *       (that would be a give-back of more than was taken).  Half a unit
 *       later (MW_NOW + T/2) the ulps no longer matter and the consumption
 *       equals the admitted cost exactly: the give-backs were exact to
 *       within half a unit in both directions;
 *   - the counters: in every table, allowed equals the number of
 *     dimensions admitted there (a commit given back is not counted); for
 *     `any`, multi_rollbacks == 0; no eviction;
 *   - every decision: remaining >= 0, limit = the table's burst,
 *     retry_after >= 1 exactly when denied; out == each[binding]; the
 *     binding index follows tkshm.h's rule (computed here); for `all`,
 *     out.allowed == every dimension allowed; for `any`, == some did;
 *   - tkshm_verify is clean on all three tables (mw_check; the threads
 *     program also runs it concurrently).
 * multi_rollbacks is reported, never required: races are not guaranteed.
 */
#ifndef TKSHM_TESTS_MP_MULTI_WORKLOAD_H
#define TKSHM_TESTS_MP_MULTI_WORKLOAD_H

#include <stdio.h>
#include <string.h>

#include "mp_util.h"

#define MW_USERS      64
#define MW_TENANTS    4
#define MW_NOW	      1e6
#define MW_PERIOD     1e12
#define MW_LIMIT      1000.0
#define MW_T	      (MW_PERIOD / MW_LIMIT)
#define MW_BURST_A    4
#define MW_BURST_B    80
#define MW_BURST_C    100
#define MW_MAX_ROUNDS 1000
#define MW_DIMS	      4

/* The table of each dimension: the last names B's tenant key again. */
static const int mw_table_of[MW_DIMS] = { 0, 1, 2, 1 };

static const int mw_burst[3] = { MW_BURST_A, MW_BURST_B, MW_BURST_C };

struct mw_shared {
	struct mp_barrier bar;
	tkshm_table *t[3]; /* A, B, C */
	tkshm_multi_mode mode;
	int rounds, per_round;
	uint64_t seed;
	/* Admitted cost units, per key. */
	uint32_t adm_a[MW_MAX_ROUNDS][MW_USERS];
	uint32_t adm_b[MW_MAX_ROUNDS][MW_TENANTS];
	uint32_t adm_c[MW_MAX_ROUNDS];
	/* Requests whose combined decision admitted. */
	uint32_t requests[MW_MAX_ROUNDS];
	uint64_t calls;
	uint64_t dims_admitted[3]; /* per table */
	uint64_t ties;		   /* decisions where a tie was broken */
};

static int
mw_key(char *buf, size_t n, int table, int round, int idx)
{
	return snprintf(buf, n, "%c%d.%d", "utg"[table], round, idx);
}

/* The binding dimension by tkshm.h's rules, ties to the earlier; *tie set
 * when another candidate equalled the chosen one. */
static size_t
mw_binding(tkshm_multi_mode mode, const tkshm_decision *d, size_t n, bool *tie)
{
	bool all = true, some = false;
	size_t best = n;

	for (size_t i = 0; i < n; i++) {
		all = all && d[i].allowed;
		some = some || d[i].allowed;
	}
	/* The candidates: admitters when the request is admitted (all: all
	 * of them), deniers otherwise.  Admitters are ordered by remaining
	 * (all: smallest first, any: largest first), deniers by retry-after
	 * (all: largest first, any: smallest first). */
	bool admitted = mode == TKSHM_MULTI_ALL ? all : some;
	*tie = false;
	for (size_t i = 0; i < n; i++) {
		int64_t v, bv;
		bool better;

		if (d[i].allowed != admitted)
			continue;
		if (best == n) {
			best = i;
			continue;
		}
		v = admitted ? d[i].remaining : d[i].retry_after_ms;
		bv = admitted ? d[best].remaining : d[best].retry_after_ms;
		if (v == bv) {
			*tie = true;
			continue;
		}
		if (mode == TKSHM_MULTI_ALL)
			better = admitted ? v < bv : v > bv;
		else
			better = admitted ? v > bv : v < bv;
		if (better) {
			best = i;
			*tie = false;
		}
	}
	return best;
}

static bool
mw_same(const tkshm_decision *a, const tkshm_decision *b)
{
	return a->allowed == b->allowed && a->limit == b->limit &&
	       a->remaining == b->remaining && a->reset_at == b->reset_at &&
	       a->retry_after_ms == b->retry_after_ms && a->flags == b->flags;
}

/* One worker: rounds x per_round requests.  Fails through MP_REQUIRE. */
static void
mw_worker(struct mw_shared *sh, int worker)
{
	uint64_t rng = sh->seed ^
		       (uint64_t)(worker + 1) * UINT64_C(0x2545F4914F6CDD1D);
	uint64_t calls = 0, ties = 0;

	for (int r = 0; r < sh->rounds; r++) {
		if (!mp_barrier_wait(&sh->bar))
			mp_fail_now(__FILE__, __LINE__, "barrier failed");
		for (int j = 0; j < sh->per_round; j++) {
			int user = (int)mp_rand_below(&rng, MW_USERS);
			int idx[3] = { user, user % MW_TENANTS, 0 };
			uint32_t cost[MW_DIMS] = {
				1 + (uint32_t)mp_rand_below(&rng, 2),
				1 + (uint32_t)mp_rand_below(&rng, 2),
				1,
				1 + (uint32_t)mp_rand_below(&rng, 2),
			};
			uint32_t order[MW_DIMS] = { 0, 1, 2, 3 };
			char keys[MW_DIMS][32];
			tkshm_dimension dims[MW_DIMS];
			tkshm_decision out, each[MW_DIMS];
			size_t b = 99, want_b;
			bool all = true, some = false, tie;
			int rc;

			mp_shuffle(order, MW_DIMS, &rng);
			for (int i = 0; i < MW_DIMS; i++) {
				int tb = mw_table_of[order[i]];
				int len = mw_key(keys[i], sizeof keys[i], tb, r,
						 idx[tb]);
				dims[i] = (tkshm_dimension){ sh->t[tb], keys[i],
							     (size_t)len,
							     cost[order[i]] };
			}
			rc = tkshm_check_multi_at(sh->mode, dims, MW_DIMS,
						  MW_NOW, &out, each, &b);
			MP_REQUIRE(rc == TKSHM_OK, "round %d: multi: %s", r,
				   tkshm_error_name(rc));
			calls++;
			for (int i = 0; i < MW_DIMS; i++) {
				int tb = mw_table_of[order[i]];
				MP_REQUIRE(
					each[i].remaining >= 0 &&
						each[i].limit == mw_burst[tb] &&
						(each[i].allowed ?
							 each[i].retry_after_ms ==
								 0 :
							 each[i].retry_after_ms >=
								 1),
					"round %d: table %d: allowed %d "
					"remaining %lld limit %lld retry "
					"%lld",
					r, tb, each[i].allowed,
					(long long)each[i].remaining,
					(long long)each[i].limit,
					(long long)each[i].retry_after_ms);
				all = all && each[i].allowed;
				some = some || each[i].allowed;
			}
			MP_REQUIRE(
				out.allowed == (sh->mode == TKSHM_MULTI_ALL ?
							all :
							some),
				"round %d: combined %d from each %d %d %d %d",
				r, out.allowed, each[0].allowed,
				each[1].allowed, each[2].allowed,
				each[3].allowed);
			want_b = mw_binding(sh->mode, each, MW_DIMS, &tie);
			MP_REQUIRE(b == want_b && mw_same(&out, &each[b]),
				   "round %d: binding %zu, want %zu", r, b,
				   want_b);
			ties += tie;
			for (int i = 0; i < MW_DIMS; i++) {
				int tb = mw_table_of[order[i]];
				uint32_t *cell =
					tb == 0 ? &sh->adm_a[r][idx[0]] :
					tb == 1 ? &sh->adm_b[r][idx[1]] :
						  &sh->adm_c[r];

				/* `all`: consumed everywhere or nowhere;
				 * `any`: where the dimension admitted. */
				if (sh->mode == TKSHM_MULTI_ALL ?
					    !out.allowed :
					    !each[i].allowed)
					continue;
				__atomic_fetch_add(cell, cost[order[i]],
						   __ATOMIC_RELAXED);
				__atomic_fetch_add(&sh->dims_admitted[tb], 1,
						   __ATOMIC_RELAXED);
			}
			if (out.allowed)
				__atomic_fetch_add(&sh->requests[r], 1,
						   __ATOMIC_RELAXED);
		}
	}
	__atomic_fetch_add(&sh->calls, calls, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->ties, ties, __ATOMIC_RELAXED);
}

static void
mw_open(struct mw_shared *sh, tkshm_multi_mode mode, int rounds, int per_round,
	int workers)
{
	static const int keys_per_round[3] = { MW_USERS, MW_TENANTS, 1 };

	assert_true(rounds <= MW_MAX_ROUNDS);
	for (int i = 0; i < 3; i++) {
		/* Every key stays live (nothing refills): 8 slots per key keep
		 * a window of 8 live keys (an eviction, asserted absent) out
		 * of reach. */
		uint64_t slots = 64;

		while (slots < (uint64_t)rounds * keys_per_round[i] * 8)
			slots *= 2;
		if (i == 1) {
			/* The tenant dimensions are a fixed window (a wide
			 * state, src/shm/wide.c) of limit MW_BURST_B over
			 * one window holding every `now` used here. */
			tkshm_policy p;
			tkshm_options o = TKSHM_OPTIONS_INIT;

			assert_int_equal(
				tkshm_policy_parse(
					"fixedWindow:limit=80,windowMs=1e15",
					&p, NULL, 0),
				TKSHM_OK);
			o.policy = &p;
			o.slots = slots;
			assert_int_equal(tkshm_open(NULL, &o, &sh->t[i]),
					 TKSHM_OK);
			continue;
		}
		sh->t[i] = mp_table(MW_LIMIT, MW_PERIOD, mw_burst[i], slots,
				    TKSHM_ON_FULL_EVICT);
	}
	sh->mode = mode;
	sh->rounds = rounds;
	sh->per_round = per_round;
	sh->seed = mp_seed();
	sh->bar.n = (uint32_t)workers;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)sh->seed);
}

/* Consumption of one key from peeks at `now` and half a unit later. */
static void
mw_consumption(tkshm_table *t, int burst, const char *key, int *now_units,
	       int *half_units)
{
	tkshm_decision d;

	assert_int_equal(tkshm_peek_at(t, key, strlen(key), MW_NOW, &d),
			 TKSHM_OK);
	assert_true(d.remaining >= 0 && d.remaining <= burst);
	*now_units = burst - (int)d.remaining;
	assert_int_equal(
		tkshm_peek_at(t, key, strlen(key), MW_NOW + MW_T / 2, &d),
		TKSHM_OK);
	*half_units = burst - (int)d.remaining;
}

/* Checks everything recorded against the tables; prints the figures. */
static void
mw_check(struct mw_shared *sh, const char *what, double seconds)
{
	static const char *const names[3] = { "A (user)", "B (tenant)",
					      "C (global)" };
	uint64_t admitted_requests = 0, slack_keys = 0, exhausted_c = 0;
	tkshm_stats st[3];

	for (int r = 0; r < sh->rounds; r++) {
		for (int tb = 0; tb < 3; tb++) {
			int nkeys = tb == 0 ? MW_USERS :
				    tb == 1 ? MW_TENANTS :
					      1;
			for (int k = 0; k < nkeys; k++) {
				uint32_t adm = tb == 0 ? sh->adm_a[r][k] :
					       tb == 1 ? sh->adm_b[r][k] :
							 sh->adm_c[r];
				char key[32];
				int now_u, half_u;

				mw_key(key, sizeof key, tb, r, k);
				if (adm > (uint32_t)mw_burst[tb])
					fail_msg("%s: round %d, %s key %s: %u "
						 "units admitted, burst %d",
						 what, r, names[tb], key, adm,
						 mw_burst[tb]);
				mw_consumption(sh->t[tb], mw_burst[tb], key,
					       &now_u, &half_u);
				if (sh->mode == TKSHM_MULTI_ANY ?
					    now_u != (int)adm :
					    now_u < (int)adm ||
						    now_u > (int)adm + 1)
					fail_msg("%s: round %d, %s key %s: "
						 "admitted %u units, the table "
						 "holds %d at now",
						 what, r, names[tb], key, adm,
						 now_u);
				if (half_u != (int)adm)
					fail_msg("%s: round %d, %s key %s: "
						 "admitted %u units, the table "
						 "holds %d half a unit later",
						 what, r, names[tb], key, adm,
						 half_u);
				slack_keys += now_u != (int)adm;
				if (tb == 2 && adm == MW_BURST_C)
					exhausted_c++;
			}
		}
		if (sh->mode == TKSHM_MULTI_ALL &&
		    sh->adm_c[r] != sh->requests[r])
			fail_msg("%s: round %d: %u admitted requests, the "
				 "global key took %u",
				 what, r, sh->requests[r], sh->adm_c[r]);
		admitted_requests += sh->requests[r];
	}
	for (int tb = 0; tb < 3; tb++) {
		assert_int_equal(tkshm_stats_get(sh->t[tb], &st[tb]), TKSHM_OK);
		if (st[tb].allowed != sh->dims_admitted[tb])
			fail_msg(
				"%s: table %s: allowed %llu != %llu dimensions "
				"admitted",
				what, names[tb],
				(unsigned long long)st[tb].allowed,
				(unsigned long long)sh->dims_admitted[tb]);
		if (sh->mode == TKSHM_MULTI_ANY)
			assert_int_equal(st[tb].multi_rollbacks, 0);
		assert_int_equal(st[tb].evictions, 0);
		mp_verify(sh->t[tb], what);
	}
	/* The limits bound: not everything was admitted. */
	assert_true(admitted_requests < sh->calls);
	assert_int_equal(sh->calls,
			 (uint64_t)sh->rounds * sh->per_round * sh->bar.n);
	print_message("%s: %d rounds, %llu calls, %llu admitted, %.2f s; "
		      "global key exhausted in %llu rounds; ties %llu; "
		      "multi_rollbacks A %llu B %llu C %llu; cas_retries "
		      "A %llu B %llu C %llu; keys showing conservative "
		      "slack at now: %llu\n",
		      what, sh->rounds, (unsigned long long)sh->calls,
		      (unsigned long long)admitted_requests, seconds,
		      (unsigned long long)exhausted_c,
		      (unsigned long long)sh->ties,
		      (unsigned long long)st[0].multi_rollbacks,
		      (unsigned long long)st[1].multi_rollbacks,
		      (unsigned long long)st[2].multi_rollbacks,
		      (unsigned long long)st[0].cas_retries,
		      (unsigned long long)st[1].cas_retries,
		      (unsigned long long)st[2].cas_retries,
		      (unsigned long long)slack_keys);
}

static void
mw_close(struct mw_shared *sh)
{
	for (int i = 0; i < 3; i++)
		tkshm_close(sh->t[i]);
}

#endif
