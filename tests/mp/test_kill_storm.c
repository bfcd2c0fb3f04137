/*
 * test_kill_storm.c - SIGKILL at random instructions never corrupts the
 * table, never leaves a key stuck and never over-admits.
 *
 * Four worker processes check keys on the real clock (explicit now_ms read
 * with tkshm_now_ms() just before each call) in a table of 4096 slots with
 * GCRA limit 5 per 50 ms (T = 10 ms, burst 5, tau = 50 ms).  Meanwhile the
 * test process SIGKILLs a random worker after a random 0-2 ms sleep, reaps
 * it and forks a replacement, at least MIN_KILLS times.
 *
 * Keys.  Time is cut into phases of PHASE_MS; a check at `now` uses a key
 * of now's phase: id = phase * KEYS_PER_PHASE + random.  So a key is hot
 * (hammered by every worker, kept in debt) for one phase and then goes
 * idle for good; the run goes on until at least MIN_KEYS distinct keys were
 * admitted, 5x more than the table has slots.  Hot keys are mostly denied,
 * and a denial writes nothing, so to make the kills land in writes each
 * worker also inserts one-shot keys at a paced rate (CHURN_INTERVAL_MS):
 * windows stay full, slots are claimed and idle ones reclaimed (sometimes
 * evicted) all the time, and many kills land inside the insert protocol,
 * inside reclaims and inside evictions.  One-shot keys are not counted.
 *
 * Observation.  After tkshm_check_at returns allowed, the worker records in
 * shared memory, per key: the smallest and largest `now` of an admission
 * (atomic min/max), the staleness allowance below, THEN the admission
 * count.  A worker killed between the CAS and these updates only
 * under-counts (or loosens the bound without counting): both keep the
 * bound below sound.
 *
 * The bound.  GCRA admits at time t only if TAT' - tau <= t, and every
 * admission moves the TAT to max(TAT, t) + T >= TAT + T.  Take the first
 * observed admission of a key (at t_s; whatever was admitted before it only
 * raises the TAT): the j-th admission from there (j = 1, 2, ...) leaves
 * TAT >= t_s + j*T and needed t_j >= t_s + j*T - tau, so
 *     observed <= burst + (t_max - t_min) / T
 * with t_min, t_max the extreme `now`s of the observed admissions.  This
 * holds across evictions (the evicted TAT is remembered and restored, I8)
 * and across idle reclaims, PROVIDED the processes' clocks agree: a reclaim
 * forgets a TAT that is <= the reclaimer's now t_r.  With a real clock a
 * process that read its clock at t' < t_r and reaches the window after the
 * reclaim restarts the key from t' instead of from the forgotten TAT: its
 * TAT drops by at most t_r - t', and t_r - t' < (the time that call
 * returned) - t', the call's own latency, since the reclaim happened
 * before its scan.  Such a restart is an admission computed from an absent
 * state: it reports remaining == burst - 1 (or the debt-restored flag).
 * So for every observed admission of that kind the worker adds the call's
 * latency to the key's allowance S, and the test asserts, per key,
 *     observed <= floor(burst + (t_max - t_min + S + 0.01) / T)
 * (0.01 ms absorbs the double rounding of the TATs).  Nothing else is
 * allowed: a key that never restarted must meet exact GCRA, so a lost
 * update (+1), a second REAL slot (I5) or a live key reclaimed (a fresh
 * burst, +5) fails the test.  The one gap: a restart made by a call that
 * was then killed before recording it is not in S; that needs a kill in
 * the window of that very insert AND a reclaim from a process that read
 * its clock later, for one key; the figures printed show how rare restarts
 * with staleness are at all.
 *
 * After the storm: tkshm_verify finds no problem; after waiting longer
 * than the period, every key ever used (hot and one-shot) is checked once,
 * in a child process with a deadline (at simulated instants T apart from
 * the real now, so that the sweep itself reclaims instead of evicting),
 * and must be admitted with a full fresh budget: none is stuck behind an
 * abandoned placeholder or leftover debt; afterwards no placeholder is
 * left in the table (re-inserting a key retires the placeholders a killed
 * process abandoned for it, I6 d).  Stats show inserts and reclaims.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp_util.h"

#define SLOTS	  4096
#define LIMIT	  5.0
#define PERIOD_MS 50.0
#define BURST	  5.0
#define T_MS	  (PERIOD_MS / LIMIT)
#define TAU_MS	  (T_MS * BURST)

#define NWORKERS	  4
#define MIN_KILLS	  500
#define MAX_KILL_SLEEP_US 2000
#define PHASE_MS	  20.0
#define KEYS_PER_PHASE	  256
#define MIN_KEYS	  20000
#define MAX_PHASES	  1500 /* 30 s of phases: the arrays' size */
#define MAX_KEYS	  ((uint64_t)MAX_PHASES * KEYS_PER_PHASE)
#define STORM_CAP_S	  60.0 /* give up (fail) if the storm takes longer */
/* Each worker also inserts a one-shot key every CHURN_INTERVAL_MS at most
 * (up to 200 keys per ms in all; ~100 measured on 2 cores), each live for
 * T: 1,000-2,000 live one-shot keys beside ~1,000 live hot keys in 4096
 * slots, so windows are full and inserts reclaim (sometimes evict) all
 * the time. */
#define CHURN_INTERVAL_MS 0.02
#define MAX_SPAWNS	  4096

struct key_obs {
	uint32_t count;
	uint32_t restarts; /* admissions computed from an absent state */
	uint64_t min_now;  /* double bits; 0 = none */
	uint64_t max_now;
	uint64_t stale_us; /* S: latencies of the restarts, microseconds */
};

struct storm_shared {
	double t0;
	uint64_t seed;
	int stop;
	uint64_t checks, admitted, spawns, churn;
	uint64_t churn_hi[MAX_SPAWNS]; /* one-shot keys named, per spawn */
	uint64_t swept_hot, swept_churn;
	char sweep_key[48];   /* the key the sweep is checking */
	uint64_t max_latency; /* double bits, ms */
	struct key_obs keys[MAX_KEYS];
};

static struct storm_shared *sh;
static tkshm_table *table;

static int
key_name(char *buf, size_t n, uint64_t id)
{
	return snprintf(buf, n, "storm-%llu", (unsigned long long)id);
}

static int
churn_name(char *buf, size_t n, uint64_t spawn, uint64_t i)
{
	return snprintf(buf, n, "churn-%llu-%llu", (unsigned long long)spawn,
			(unsigned long long)i);
}

static int
worker(void *p)
{
	uint64_t spawn = (uint64_t)(uintptr_t)p;
	uint64_t rng = sh->seed ^ (uint64_t)getpid() << 20 ^ spawn;
	uint64_t checks = 0, churned = 0;
	double churn_next = 0;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		double now = tkshm_now_ms(), after;
		double since = now > sh->t0 ? now - sh->t0 : 0;
		uint64_t phase = (uint64_t)(since / PHASE_MS);
		uint64_t id;
		char key[48];
		int len, rc;
		tkshm_decision d;

		if (phase >= MAX_PHASES) {
			mp_sleep_us(1000);
			continue;
		}
		if (now >= churn_next) {
			/* A one-shot key: an insert (claim, reclaim or
			 * evict), at a paced rate whatever the build's
			 * speed. */
			churn_next = churn_next < now - 1 ? now : churn_next;
			churn_next += CHURN_INTERVAL_MS;
			len = churn_name(key, sizeof key, spawn, churned++);
			/* Named before it is checked: the sweep will find it
			 * even if this process dies inside the check. */
			__atomic_store_n(&sh->churn_hi[spawn], churned,
					 __ATOMIC_RELAXED);
			rc = tkshm_check_at(table, key, (size_t)len, 1, now,
					    &d);
			MP_REQUIRE(rc == TKSHM_OK, "check %s: %s", key,
				   tkshm_error_name(rc));
			__atomic_fetch_add(&sh->churn, 1, __ATOMIC_RELAXED);
			continue;
		}
		id = phase * KEYS_PER_PHASE +
		     mp_rand_below(&rng, KEYS_PER_PHASE);
		len = key_name(key, sizeof key, id);
		rc = tkshm_check_at(table, key, (size_t)len, 1, now, &d);
		after = tkshm_now_ms();
		MP_REQUIRE(rc == TKSHM_OK, "check %s: %s", key,
			   tkshm_error_name(rc));
		if (d.allowed) {
			struct key_obs *o = &sh->keys[id];

			MP_REQUIRE(d.remaining >= 0 && d.remaining < BURST,
				   "%s admitted with remaining %lld", key,
				   (long long)d.remaining);
			/* Span and allowance first, count last: a kill in
			 * between only loosens the bound. */
			mp_atomic_min_pos(&o->min_now, now);
			mp_atomic_max_pos(&o->max_now, now);
			if (d.remaining == (int64_t)BURST - 1 ||
			    (d.flags & TKSHM_DECISION_DEBT_RESTORED)) {
				double lat = after > now ? after - now : 0;

				__atomic_fetch_add(&o->stale_us,
						   (uint64_t)ceil(lat * 1000) +
							   1,
						   __ATOMIC_RELAXED);
				__atomic_fetch_add(&o->restarts, 1,
						   __ATOMIC_RELAXED);
			}
			__atomic_fetch_add(&o->count, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&sh->admitted, 1, __ATOMIC_RELAXED);
		}
		mp_atomic_max_pos(&sh->max_latency,
				  after > now ? after - now : 0);
		if (++checks % 64 == 0)
			__atomic_fetch_add(&sh->checks, 64, __ATOMIC_RELAXED);
	}
	return 0;
}

/* Distinct keys admitted at least once among the first `phases` phases. */
static uint64_t
distinct_keys(uint64_t phases)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < phases * KEYS_PER_PHASE && i < MAX_KEYS; i++)
		n += __atomic_load_n(&sh->keys[i].count, __ATOMIC_RELAXED) > 0;
	return n;
}

static uint64_t sweep_phases;

/* Checks one key in the sweep at `*now`, then moves *now one T on (so the
 * key is idle for the next one: the sweep reclaims instead of evicting). */
static void
sweep_one(const char *key, int len, double *now)
{
	tkshm_decision d;
	int rc;

	memcpy(sh->sweep_key, key, (size_t)len + 1);
	rc = tkshm_check_at(table, key, (size_t)len, 1, *now, &d);

	MP_REQUIRE(rc == TKSHM_OK && d.allowed &&
			   d.remaining == (int64_t)BURST - 1 &&
			   !(d.flags & TKSHM_DECISION_DEBT_RESTORED),
		   "key %s stuck after the storm: rc %s allowed %d remaining "
		   "%lld flags %#x",
		   key, tkshm_error_name(rc), d.allowed, (long long)d.remaining,
		   d.flags);
	*now += T_MS;
}

/* Every hot key of every phase and every one-shot key ever named. */
static int
sweep(void *p)
{
	double now = tkshm_now_ms();
	char key[48];

	(void)p;
	for (uint64_t id = 0; id < sweep_phases * KEYS_PER_PHASE; id++) {
		sweep_one(key, key_name(key, sizeof key, id), &now);
		sh->swept_hot++;
	}
	for (uint64_t sp = 0; sp < MAX_SPAWNS; sp++)
		for (uint64_t i = 0; i < sh->churn_hi[sp]; i++) {
			sweep_one(key, churn_name(key, sizeof key, sp, i),
				  &now);
			sh->swept_churn++;
		}
	return 0;
}

/* Waits for the sweep; fails naming the key if it makes no progress for
 * SWEEP_STALL_S (a check that never returns). */
#define SWEEP_STALL_S 20.0

static void
wait_sweep(pid_t pid)
{
	uint64_t last = UINT64_MAX;
	double since = tkt_seconds();
	int status;

	while (!mp_try_reap(pid, &status)) {
		uint64_t done =
			__atomic_load_n(&sh->swept_hot, __ATOMIC_RELAXED) +
			__atomic_load_n(&sh->swept_churn, __ATOMIC_RELAXED);

		if (done != last) {
			last = done;
			since = tkt_seconds();
		} else if (tkt_seconds() - since > SWEEP_STALL_S) {
			char key[sizeof sh->sweep_key];

			memcpy(key, sh->sweep_key, sizeof key);
			key[sizeof key - 1] = '\0';
			mp_kill_all();
			fail_msg("the sweep is stuck: checking %s did not "
				 "return in %.0f s",
				 key, SWEEP_STALL_S);
		}
		mp_sleep_us(10000);
	}
	mp_expect_ok(status, "the sweep");
}

static uint64_t
current_phase(void)
{
	double since = tkshm_now_ms() - sh->t0;

	return since > 0 ? (uint64_t)(since / PHASE_MS) : 0;
}

static pid_t
spawn_worker(void)
{
	uint64_t n = __atomic_add_fetch(&sh->spawns, 1, __ATOMIC_RELAXED);

	if (n >= MAX_SPAWNS)
		fail_msg("more than %d spawns", MAX_SPAWNS);
	return mp_spawn(worker, (void *)(uintptr_t)n);
}

static void
kill_storm(void **state)
{
	pid_t pid[NWORKERS];
	uint64_t rng, kills = 0, keys = 0, phases;
	double start = tkt_seconds(), storm_s, max_lat;
	tkshm_stats st;
	tkshm_usage us;
	uint64_t over_exact = 0, at_exact = 0, max_count = 0, total = 0;
	uint64_t keys_over = 0, multi_restarts = 0, loosened = 0;

	(void)state;
	table = mp_table(LIMIT, PERIOD_MS, BURST, SLOTS, TKSHM_ON_FULL_EVICT);
	sh = tkt_shared(sizeof *sh);
	sh->seed = rng = mp_seed();
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)sh->seed);
	sh->t0 = tkshm_now_ms();
	for (int i = 0; i < NWORKERS; i++)
		pid[i] = spawn_worker();

	while (kills < MIN_KILLS || keys < MIN_KEYS) {
		int i = (int)mp_rand_below(&rng, NWORKERS);
		int status;

		if (tkt_seconds() - start > STORM_CAP_S)
			fail_msg("storm not done after %.0f s: %llu kills, "
				 "%llu keys",
				 STORM_CAP_S, (unsigned long long)kills,
				 (unsigned long long)keys);
		mp_sleep_us(mp_rand_below(&rng, MAX_KILL_SLEEP_US + 1));
		if (kill(pid[i], SIGKILL) != 0)
			fail_msg("kill: %s", strerror(errno));
		status = mp_reap(pid[i]);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			/* It ended on its own: only a failure does that. */
			mp_expect_ok(status, "a worker");
			fail_msg("a worker exited before the storm ended");
		}
		kills++;
		pid[i] = spawn_worker();
		if (kills % 50 == 0 || kills >= MIN_KILLS)
			keys = distinct_keys(current_phase() + 1);
		if (current_phase() >= MAX_PHASES)
			fail_msg("ran out of phases");
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	mp_wait_all(60);
	storm_s = tkt_seconds() - start;
	phases = current_phase() + 1;
	if (phases > MAX_PHASES)
		phases = MAX_PHASES;
	max_lat = mp_bits_double(sh->max_latency);

	/* The table is intact. */
	mp_verify(table, "after the kill storm");
	assert_int_equal(tkshm_stats_get(table, &st), TKSHM_OK);
	assert_int_equal(tkshm_usage_get(table, tkshm_now_ms(), &us), TKSHM_OK);
	print_message("storm: %.2f s, %llu kills, %llu spawns, %llu one-shot "
		      "inserts, %llu hot checks, %llu admitted, %llu hot keys; "
		      "max call latency %.3f ms\n",
		      storm_s, (unsigned long long)kills,
		      (unsigned long long)sh->spawns,
		      (unsigned long long)sh->churn,
		      (unsigned long long)sh->checks,
		      (unsigned long long)sh->admitted,
		      (unsigned long long)keys, max_lat);
	print_message("stats: inserts %llu reclaims %llu evictions %llu "
		      "(in debt %llu) debt_restores %llu cas_retries %llu "
		      "duplicates_killed %llu; usage: live %llu idle %llu "
		      "empty %llu placeholders %llu dead %llu\n",
		      (unsigned long long)st.inserts,
		      (unsigned long long)st.reclaims,
		      (unsigned long long)st.evictions,
		      (unsigned long long)st.evictions_in_debt,
		      (unsigned long long)st.debt_restores,
		      (unsigned long long)st.cas_retries,
		      (unsigned long long)st.duplicates_killed,
		      (unsigned long long)us.live, (unsigned long long)us.idle,
		      (unsigned long long)us.empty,
		      (unsigned long long)us.placeholders,
		      (unsigned long long)us.dead);
	assert_true(kills >= MIN_KILLS);
	assert_true(st.inserts > 0);
	assert_true(st.reclaims > 0);

	/* No key admitted beyond GCRA (see the bound at the top). */
	for (uint64_t id = 0; id < phases * KEYS_PER_PHASE; id++) {
		const struct key_obs *o = &sh->keys[id];
		double span, allow;
		uint64_t exact, bound;

		if (o->count == 0)
			continue;
		assert_true(o->min_now != 0 && o->max_now != 0);
		span = mp_bits_double(o->max_now) - mp_bits_double(o->min_now);
		allow = (double)o->stale_us / 1000;
		exact = (uint64_t)floor(BURST + (span + 0.01) / T_MS);
		bound = (uint64_t)floor(BURST + (span + allow + 0.01) / T_MS);
		total += o->count;
		if (o->count > max_count)
			max_count = o->count;
		if (o->count > exact) {
			over_exact += o->count - exact;
			keys_over++;
		}
		if (o->count == exact)
			at_exact++;
		multi_restarts += o->restarts > 1;
		if (bound > exact)
			loosened++;
		if (o->count > bound)
			fail_msg("key storm-%llu: %u admissions over a span of "
				 "%.3f ms; GCRA allows at most %llu (%u "
				 "restarts, staleness allowance %.3f ms)",
				 (unsigned long long)id, o->count, span,
				 (unsigned long long)bound, o->restarts, allow);
	}
	print_message("bound: %llu admissions observed; max per key %llu; "
		      "%llu keys exactly at the GCRA bound; %llu keys "
		      "restarted more than once; %llu keys with a bound "
		      "loosened by staleness; %llu admissions on %llu keys "
		      "above the exact bound (all within their allowance)\n",
		      (unsigned long long)total, (unsigned long long)max_count,
		      (unsigned long long)at_exact,
		      (unsigned long long)multi_restarts,
		      (unsigned long long)loosened,
		      (unsigned long long)over_exact,
		      (unsigned long long)keys_over);

	/* No key is stuck: after more than a period, each one starts over.
	 * The sweep runs in a child with a deadline, so that a key whose
	 * check never returns (a waiter on a dead process) fails the test
	 * instead of hanging it. */
	mp_sleep_us((uint64_t)((TAU_MS + PERIOD_MS) * 1000));
	sweep_phases = phases;
	wait_sweep(mp_spawn(sweep, NULL));
	assert_int_equal(tkshm_usage_get(table, tkshm_now_ms(), &us), TKSHM_OK);
	print_message("sweep: %llu hot and %llu one-shot keys admitted afresh; "
		      "placeholders left %llu\n",
		      (unsigned long long)sh->swept_hot,
		      (unsigned long long)sh->swept_churn,
		      (unsigned long long)us.placeholders);
	/* Every key was inserted again, which retires any placeholder of it
	 * that a killed process abandoned (I6 d). */
	assert_int_equal(us.placeholders, 0);
	mp_verify(table, "after the sweep");

	tkt_shared_free(sh, sizeof *sh);
	tkshm_close(table);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(kill_storm, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
