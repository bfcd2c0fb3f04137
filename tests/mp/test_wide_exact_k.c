/*
 * test_wide_exact_k.c - exactly K admissions per key, whatever the
 * interleaving, for every algorithm whose state is wide (src/shm/wide.c,
 * protocol.h W1-W9), across real processes.
 *
 * For each case (a policy, a cost and the K it must admit, see `cases`
 * below: every wide kind, with costs 1, 2, 3, 4 and fractions where the
 * kind takes them), 8 processes x 2 threads share one anonymous table of
 * 32 slots and run ROUNDS rounds.  Each round has its own `now`
 * (NOW0 + r * STEP, STEP longer than any window, period or refill of the
 * policies) and two fresh keys.  A shared spin barrier releases the 16
 * threads together; three quarters of them start on key a, the others on
 * key b, and each checks its first key until it is denied, then the
 * other.  With a fixed `now` nothing refills and a denial is final, so
 * every round starts with a race to insert two absent keys into the same
 * small table (placeholders, protocol.h I6; a key enters FRESH and its
 * first admission is a contended claim, W2-W4), and the previous rounds'
 * keys, idle at the new `now`, are reclaimed all the time (W9: a slot
 * changes occupant, W6/W7).  Small K (7..40) cover the arithmetic of each
 * kind; large K (128..240) make the rounds long enough for the threads to
 * overlap on the key (and for time slices to end inside claims).
 *
 * K is computed from the policy by hand (floor(limit / cost) for the
 * windows, quotas and the bucket, floor(limit / ceil(cost)) for the log,
 * ceil(floor(budget) / cost) for the token budget), and the parent first
 * replays each round on a private table, one check after another: the
 * reference sequence must admit exactly K and then deny.
 *
 * Asserted per round and key:
 *   - exactly K admissions;
 *   - the admissions' decisions (remaining, resetAt, retryAfterMs, limit,
 *     flags) are, as a multiset, exactly the reference sequence's: two
 *     admissions computed from one published state, a lost update or a
 *     torn record would repeat or change a value.  With cost 1 (and an
 *     integral limit) this is "remaining is K-1, ..., 0, each once", which
 *     is also checked directly;
 *   - every denial is exactly the reference denial: a denial at a fixed
 *     `now` with one cost sees the final state.
 * Per case: tkshm_verify clean; allowed == ROUNDS * 2 * K; denied ==
 * ROUNDS * 2 * 16 (one final denial per thread and key); inserts >= 2 *
 * ROUNDS; reclaims > 0; no refusal (a window never holds more than the
 * two live keys of the round).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mp_util.h"

#define NPROC	 8
#define NTHR	 2
#define NWORKERS (NPROC * NTHR)
#define NKEYS	 2
#define ROUNDS	 200
#define MAXK	 256
#define SLOTS	 32
#define NOW0	 1.7e12
/* Longer than a calendar month, so every key of an earlier round is idle
 * (reclaimable) at a later round's now. */
#define STEP 1.2e10 /* 139 days; ROUNDS of it stay below TKSHM_NOW_MAX */

struct wcase {
	const char *spec;
	double cost;
	int k;
};

static const struct wcase cases[] = {
	{ "tokenBucket:capacity=20,refillPerSec=1", 1, 20 },
	{ "tokenBucket:capacity=30,refillPerSec=1", 2, 15 },
	{ "tokenBucket:capacity=50,refillPerSec=1", 0.25, 200 },
	{ "fixedWindow:limit=25,windowMs=1000", 1, 25 },
	{ "fixedWindow:limit=25,windowMs=1000", 2, 12 },
	{ "fixedWindow:limit=7.5,windowMs=1000", 0.5, 15 },
	{ "fixedWindow:limit=240,windowMs=1000", 1, 240 },
	{ "slidingWindow:limit=30,windowMs=1000,buckets=10", 1, 30 },
	/* 130-unit records: the longest claims. */
	{ "slidingWindow:limit=150,windowMs=1000,buckets=64", 1, 150 },
	{ "slidingWindow:limit=31,windowMs=700,buckets=7", 3, 10 },
	{ "slidingWindowLog:limit=40,windowMs=1000", 1, 40 },
	/* 129-unit records. */
	{ "slidingWindowLog:limit=128,windowMs=1000", 1, 128 },
	{ "slidingWindowLog:limit=128,windowMs=1000", 4, 32 },
	/* A cost of 1.5 counts as 2 stamps. */
	{ "slidingWindowLog:limit=21,windowMs=1000", 1.5, 10 },
	{ "quota:limit=17,resetCadence=calendar-day", 1, 17 },
	{ "quota:limit=12,resetCadence=calendar-week,weekStartsOn=0", 1, 12 },
	{ "quota:limit=9,resetCadence=calendar-month,offsetMinutes=330", 1, 9 },
	{ "quota:limit=35,resetCadence=fixed,periodMs=3600000,anchor=250", 2,
	  17 },
	{ "quota:limit=24,resetCadence=rolling,periodMs=60000,buckets=16", 1,
	  24 },
	{ "quota:limit=200,resetCadence=rolling,periodMs=60000,buckets=64", 1,
	  200 },
	{ "tokenBudget:budget=10,windowMs=1000", 1, 10 },
	/* Stop-at-boundary: admitted while served < 20, so ceil(20 / 3). */
	{ "tokenBudget:budget=20,windowMs=1000", 3, 7 },
	/* floor(33.7) = 33 tokens. */
	{ "tokenBudget:budget=33.7,windowMs=1000", 1, 33 },
	{ "tokenBudget:budget=200,windowMs=1000", 1, 200 },
};
#define NCASES (sizeof cases / sizeof cases[0])

/* The decision fields compared (flags included). */
struct dec {
	int64_t remaining, reset_at, retry_after_ms, limit;
	uint64_t flags;
};

struct round_rec {
	uint32_t admitted[NKEYS];
	uint32_t denied[NKEYS];
	struct dec got[NKEYS][MAXK];
};

struct shared {
	struct mp_barrier bar;
	int c; /* the case */
	/* The reference, computed by the parent before the workers start. */
	struct dec ref_adm[ROUNDS][MAXK];
	struct dec ref_deny[ROUNDS];
	struct round_rec rec[ROUNDS];
};

static struct shared *sh;
static tkshm_table *table;

static double
round_now(int r)
{
	return NOW0 + (double)r * STEP;
}

static int
key_name(char *buf, size_t n, int c, int r, int k)
{
	return snprintf(buf, n, "case%d-round%d-%c", c, r, "ab"[k]);
}

static struct dec
dec_of(const tkshm_decision *d)
{
	struct dec x = { d->remaining, d->reset_at, d->retry_after_ms, d->limit,
			 d->flags };
	return x;
}

static bool
dec_eq(const struct dec *a, const struct dec *b)
{
	return a->remaining == b->remaining && a->reset_at == b->reset_at &&
	       a->retry_after_ms == b->retry_after_ms && a->limit == b->limit &&
	       a->flags == b->flags;
}

static int
dec_cmp(const void *pa, const void *pb)
{
	const struct dec *a = pa, *b = pb;
	const int64_t x[5] = { a->remaining, a->reset_at, a->retry_after_ms,
			       a->limit, (int64_t)a->flags };
	const int64_t y[5] = { b->remaining, b->reset_at, b->retry_after_ms,
			       b->limit, (int64_t)b->flags };

	for (int i = 0; i < 5; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* The reference: each round replayed one check after another on a private
 * table (the key reset between rounds). */
static void
compute_reference(const struct wcase *wc)
{
	tkshm_table *ref = tkt_anon(wc->spec, 64);

	for (int r = 0; r < ROUNDS; r++) {
		int n = 0;

		for (;;) {
			tkshm_decision d;

			assert_rc(tkshm_check_at(ref, "ref", 3, wc->cost,
						 round_now(r), &d),
				  TKSHM_OK);
			if (!d.allowed) {
				if (d.retry_after_ms <= 0)
					fail_msg("%s: reference denial with "
						 "retry %lld",
						 wc->spec,
						 (long long)d.retry_after_ms);
				sh->ref_deny[r] = dec_of(&d);
				break;
			}
			if (n >= wc->k)
				fail_msg("%s cost %g: the reference admits "
					 "more than K = %d",
					 wc->spec, wc->cost, wc->k);
			sh->ref_adm[r][n++] = dec_of(&d);
		}
		if (n != wc->k)
			fail_msg("%s cost %g: the reference admits %d, K = %d",
				 wc->spec, wc->cost, n, wc->k);
		assert_rc(tkshm_reset(ref, "ref", 3), TKSHM_OK);
	}
	tkshm_close(ref);
}

static void *
worker_thread(void *p)
{
	int w = (int)(intptr_t)p;
	const struct wcase *wc = &cases[sh->c];

	for (int r = 0; r < ROUNDS; r++) {
		double now = round_now(r);

		if (!mp_barrier_wait(&sh->bar))
			mp_fail_now(__FILE__, __LINE__, "barrier failed");
		for (int i = 0; i < NKEYS; i++) {
			/* Most start on key a (they collide there), a quarter
			 * on key b (two inserts into one small table). */
			int k = w % 4 == 3 ? NKEYS - 1 - i : i;
			char key[64];
			int len = key_name(key, sizeof key, sh->c, r, k);

			for (;;) {
				tkshm_decision d;
				struct dec x;
				uint32_t at;
				int rc = tkshm_check_at(table, key, (size_t)len,
							wc->cost, now, &d);

				MP_REQUIRE(rc == TKSHM_OK, "%s: check %s: %s",
					   wc->spec, key, tkshm_error_name(rc));
				x = dec_of(&d);
				if (!d.allowed) {
					const struct dec *y = &sh->ref_deny[r];

					MP_REQUIRE(
						dec_eq(&x, y),
						"%s cost %g: %s denied with "
						"remaining %lld reset %lld "
						"retry %lld limit %lld flags "
						"%llu; the final state gives "
						"%lld %lld %lld %lld %llu",
						wc->spec, wc->cost, key,
						(long long)x.remaining,
						(long long)x.reset_at,
						(long long)x.retry_after_ms,
						(long long)x.limit,
						(unsigned long long)x.flags,
						(long long)y->remaining,
						(long long)y->reset_at,
						(long long)y->retry_after_ms,
						(long long)y->limit,
						(unsigned long long)y->flags);
					__atomic_fetch_add(
						&sh->rec[r].denied[k], 1,
						__ATOMIC_RELAXED);
					break;
				}
				at = __atomic_fetch_add(&sh->rec[r].admitted[k],
							1, __ATOMIC_RELAXED);
				MP_REQUIRE(at < (uint32_t)wc->k,
					   "%s cost %g: %s admitted more than "
					   "K = %d times (remaining %lld)",
					   wc->spec, wc->cost, key, wc->k,
					   (long long)d.remaining);
				sh->rec[r].got[k][at] = x;
			}
		}
	}
	return NULL;
}

static int
worker(void *p)
{
	pthread_t th[NTHR];
	int proc = (int)(intptr_t)p;

	for (int i = 0; i < NTHR; i++)
		MP_REQUIRE(pthread_create(
				   &th[i], NULL, worker_thread,
				   (void *)(intptr_t)(proc * NTHR + i)) == 0,
			   "pthread_create");
	for (int i = 0; i < NTHR; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* The parent's checks of one case once the workers are done. */
static void
check_case(const struct wcase *wc)
{
	for (int r = 0; r < ROUNDS; r++) {
		struct dec want[MAXK];

		memcpy(want, sh->ref_adm[r], sizeof want[0] * (size_t)wc->k);
		qsort(want, (size_t)wc->k, sizeof want[0], dec_cmp);
		for (int k = 0; k < NKEYS; k++) {
			struct round_rec *rr = &sh->rec[r];
			struct dec *got = rr->got[k];

			if (rr->admitted[k] != (uint32_t)wc->k)
				fail_msg("%s cost %g: round %d key %c: %u "
					 "admissions, expected exactly %d",
					 wc->spec, wc->cost, r, "ab"[k],
					 rr -> admitted[k], wc -> k);
			if (rr->denied[k] != NWORKERS)
				fail_msg("%s: round %d key %c: %u denials, "
					 "expected one per thread",
					 wc->spec, r, "ab"[k], rr -> denied[k]);
			if (wc->cost == 1) {
				/* remaining K-1 .. 0, each once. */
				uint32_t seen[MAXK] = { 0 };

				for (int i = 0; i < wc->k; i++) {
					int64_t v = got[i].remaining;

					if (v < 0 || v >= wc->k)
						fail_msg("%s: round %d key %c: "
							 "remaining %lld",
							 wc->spec, r, "ab"[k],
							 (long long)v);
					seen[v]++;
				}
				for (int v = 0; v < wc->k; v++)
					if (seen[v] != 1)
						fail_msg("%s: round %d key %c: "
							 "remaining=%d "
							 "reported %u times, "
							 "expected once",
							 wc->spec, r, "ab"[k],
							 v, seen[v]);
			}
			qsort(got, (size_t)wc->k, sizeof got[0], dec_cmp);
			for (int i = 0; i < wc->k; i++)
				if (!dec_eq(&got[i], &want[i]))
					fail_msg("%s cost %g: round %d key %c: "
						 "the admissions' decisions "
						 "differ from the sequential "
						 "ones (sorted #%d: remaining "
						 "%lld reset %lld, expected "
						 "%lld %lld)",
						 wc->spec, wc->cost, r, "ab"[k],
						 i, (long long)got[i].remaining,
						 (long long)got[i].reset_at,
						 (long long)want[i].remaining,
						 (long long)want[i].reset_at);
		}
	}
}

static void
every_wide_algorithm(void **state)
{
	double t0 = tkt_seconds();
	uint64_t retries = 0, stolen = 0, reclaims = 0, killed = 0;

	(void)state;
	sh = tkt_shared(sizeof *sh);
	for (size_t c = 0; c < NCASES; c++) {
		const struct wcase *wc = &cases[c];
		double tc = tkt_seconds();
		tkshm_stats st;

		memset(sh, 0, sizeof *sh);
		sh->c = (int)c;
		sh->bar.n = NWORKERS;
		assert_true(wc->k <= MAXK);
		compute_reference(wc);
		table = tkt_anon(wc->spec, SLOTS);
		for (int i = 0; i < NPROC; i++)
			mp_spawn(worker, (void *)(intptr_t)i);
		mp_wait_all(120);
		check_case(wc);

		mp_verify(table, wc->spec);
		assert_int_equal(tkshm_stats_get(table, &st), TKSHM_OK);
		print_message("%-62s cost %-4g K %2d: %.2f s; inserts %llu "
			      "reclaims %llu cas_retries %llu claims_stolen "
			      "%llu duplicates_killed %llu\n",
			      wc->spec, wc->cost, wc->k, tkt_seconds() - tc,
			      (unsigned long long)st.inserts,
			      (unsigned long long)st.reclaims,
			      (unsigned long long)st.cas_retries,
			      (unsigned long long)st.claims_stolen,
			      (unsigned long long)st.duplicates_killed);
		assert_int_equal(st.allowed, (uint64_t)ROUNDS * NKEYS * wc->k);
		assert_int_equal(st.denied,
				 (uint64_t)ROUNDS * NKEYS * NWORKERS);
		assert_true(st.inserts >= (uint64_t)ROUNDS * NKEYS);
		assert_true(st.reclaims > 0);
		assert_int_equal(st.refusals, 0);
		assert_int_equal(st.evictions, 0);
		retries += st.cas_retries;
		stolen += st.claims_stolen;
		reclaims += st.reclaims;
		killed += st.duplicates_killed;
		tkshm_close(table);
		table = NULL;
	}
	print_message("%zu cases x %d rounds x %d keys x %d workers: %.2f s; "
		      "reclaims %llu cas_retries %llu claims_stolen %llu "
		      "duplicates_killed %llu\n",
		      NCASES, ROUNDS, NKEYS, NWORKERS, tkt_seconds() - t0,
		      (unsigned long long)reclaims, (unsigned long long)retries,
		      (unsigned long long)stolen, (unsigned long long)killed);
	tkt_shared_free(sh, sizeof *sh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(every_wide_algorithm, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
