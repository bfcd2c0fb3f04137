/*
 * test_wide_kill_storm.c - SIGKILL at random instructions of wide-state
 * writers (src/shm/wide.c, protocol.h W1-W9) never corrupts the table,
 * never leaves a key stuck, never admits beyond the limit and never
 * consumes what nobody was admitted.
 *
 * For each wide kind (tokenBucket, fixedWindow, slidingWindow with 64
 * buckets, slidingWindowLog with limit 128, quota calendar-day, fixed and
 * rolling, tokenBudget; cost 1 everywhere, K admissions per key and
 * phase), NWORKERS worker processes hammer NKEYS keys of a 64-slot table
 * while the test process SIGKILLs a random worker after a random sleep
 * (0..MAX_SLEEP_US) and forks a replacement at once, KILLS times per kind.
 * A victim is reaped later (a killed process that waits for a CPU takes a
 * time slice to die), always before its marks are read.  Workers run at
 * nice 5 so that the test process's short sleeps end on time.
 *
 * Phases.  Time is simulated: phase p decides every check at now_p =
 * NOW0 + p * STEP, STEP being longer than every window, period and refill
 * of the policies, so at now_p every key starts with K and, `now` being
 * fixed, nothing refills during the phase: a key admits at most K in it.
 * Keys 0..2 are the same in every phase (key 0 gets half of all checks);
 * keys 3..5 are named after the phase, so the previous phases' ones lie
 * idle in the table and are reclaimed (W9) by the new ones.  A phase
 * ends when most of its budget is spent (or after PHASE_MAX_MS).  Then
 * the test process pauses the workers with a handshake (a worker
 * publishes the phase it is checking in before each batch of calls and
 * re-reads the phase after; the test process publishes the pause and
 * then waits until no worker is inside a call: seq_cst on both sides, so
 * no call of phase p runs once the pause is seen), and a fresh process
 * sweeps the phase's keys:
 *   peek at now_p (remaining must be in [0, K]), then check until denied:
 *   every call returns TKSHM_OK (no key is stuck, no TKSHM_EBUSY), and
 *   the admissions equal the peeked remaining.
 *
 * Accounting.  A worker marks the key it is checking (inflight) before the
 * call, and after an admitted return adds 1 to the key's `reported`
 * count, then clears the mark.  When the test process reaps a killed
 * worker it reads the mark: a kill inside a call (or between the return
 * and the report) may have consumed one unit nobody reported; such a key
 * gets one more `lost`.  A dead process never publishes (W4: only the
 * holder of a claim publishes), so per key and phase:
 *     reported + swept <= K                (never over the limit: a lost
 *                                           update, two admissions from
 *                                           one state, a resurrected claim)
 *     K - reported - swept <= lost         (nothing consumed that was not
 *                                           admitted to somebody)
 * After every 4th phase (workers paused) and after each kind the table is
 * verified (tkshm_verify: W5 and the claim bound W2/W7 included).
 *
 * After the storm, a fresh process checks every key ever used once, each
 * at its own instant STEP after the previous one: each must be admitted
 * with K - 1 remaining (TKSHM_OK, a fresh budget: nothing stuck behind an
 * abandoned claim or placeholder), and the table is verified again.
 *
 * Claims.  A kill that lands between a claim (W2) and its publish (W4)
 * leaves a claim that the next writer of the key steals; claims_stolen is
 * printed per kind and must be > 0 over the whole storm.  The 130-unit
 * records of the sliding window and the log make their claims long.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp_util.h"

#define NWORKERS     4
#define NMARKS	     64 /* mark slots: live workers + unreaped victims */
#define NKEYS	     6
#define NPERSISTENT  3
#define SLOTS	     64
#define KILLS	     300 /* per kind */
#define MAX_SLEEP_US 1500
#define PHASE_MAX_MS 15.0
#define BATCH	     16
#define NOW0	     1.7e12
#define STEP	     1e9 /* 11.6 days */
#define STALL_S	     20.0
#define KIND_CAP_S   60.0

#define PH_PAUSED (-1)
#define PH_STOP	  (-2)

struct kcase {
	const char *spec;
	int k;
};

static const struct kcase cases[] = {
	{ "tokenBucket:capacity=500,refillPerSec=1000", 500 },
	{ "fixedWindow:limit=500,windowMs=1000", 500 },
	{ "slidingWindow:limit=400,windowMs=1000,buckets=64", 400 },
	{ "slidingWindowLog:limit=128,windowMs=1000", 128 },
	{ "quota:limit=500,resetCadence=calendar-day", 500 },
	{ "quota:limit=500,resetCadence=fixed,periodMs=60000,anchor=250", 500 },
	{ "quota:limit=400,resetCadence=rolling,periodMs=1000,buckets=32",
	  400 },
	{ "tokenBudget:budget=500,windowMs=1000", 500 },
};
#define NCASES (sizeof cases / sizeof cases[0])

struct storm {
	int phase; /* the phase being checked, PH_PAUSED or PH_STOP */
	double now;
	uint64_t seed;
	/* Per mark slot (one per process, reused once it is reaped): */
	int busy[NMARKS];     /* phase + 1 while inside a batch of calls */
	int inflight[NMARKS]; /* key + 1 from before a call to its report */
	uint64_t reported[NKEYS];
	uint64_t checks;
	/* The sweep's results. */
	int sweep_key; /* the key being swept (for a stuck sweep) */
	int64_t peeked[NKEYS];
	uint64_t swept[NKEYS];
	uint64_t sweeps_done;
};

static struct storm *sh;
static tkshm_table *table;
static const struct kcase *kc;

/* Fails with the failure a child recorded.  mp_fail_now raises the flag
 * before it writes the message, so wait for the message a moment. */
static void
fail_recorded(void)
{
	double t0 = tkt_seconds();

	while (__atomic_load_n(&mp_failure->msg[0], __ATOMIC_ACQUIRE) == 0 &&
	       tkt_seconds() - t0 < 2)
		mp_sleep_us(1000);
	fail_msg("%s", mp_failure->msg);
}

static int
key_name(char *buf, size_t n, int phase, int k)
{
	if (k < NPERSISTENT)
		return snprintf(buf, n, "hot-%d", k);
	return snprintf(buf, n, "phase%d-key%d", phase, k);
}

static int
pick_key(uint64_t *rng)
{
	if (mp_rand_below(rng, 2) == 0)
		return 0;
	return 1 + (int)mp_rand_below(rng, NKEYS - 1);
}

static int
worker(void *p)
{
	int m = (int)(intptr_t)p; /* its mark slot */
	uint64_t rng = sh->seed ^ (uint64_t)getpid() << 24 ^ (uint64_t)m;
	uint64_t checks = 0;

	/* Below the test process, so that its short sleeps end on time on a
	 * machine the workers keep busy (the kills' timing is random, not
	 * late). */
	errno = 0;
	if (nice(5) == -1 && errno != 0)
		MP_REQUIRE(0, "nice: %s", strerror(errno));
	for (;;) {
		int ph = __atomic_load_n(&sh->phase, __ATOMIC_SEQ_CST);
		double now;

		if (ph == PH_STOP)
			break;
		if (ph == PH_PAUSED) {
			mp_sleep_us(50);
			continue;
		}
		/* The handshake: announce, then re-read (see the top). */
		__atomic_store_n(&sh->busy[m], ph + 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&sh->phase, __ATOMIC_SEQ_CST) != ph) {
			__atomic_store_n(&sh->busy[m], 0, __ATOMIC_SEQ_CST);
			continue;
		}
		now = sh->now;
		for (int j = 0; j < BATCH; j++) {
			int k = pick_key(&rng);
			char key[48];
			int len = key_name(key, sizeof key, ph, k);
			tkshm_decision d;
			int rc;

			__atomic_store_n(&sh->inflight[m], k + 1,
					 __ATOMIC_SEQ_CST);
			rc = tkshm_check_at(table, key, (size_t)len, 1, now,
					    &d);
			MP_REQUIRE(rc == TKSHM_OK, "%s: phase %d: check %s: %s",
				   kc->spec, ph, key, tkshm_error_name(rc));
			MP_REQUIRE(d.remaining >= 0 && d.remaining < kc->k &&
					   d.limit == kc->k,
				   "%s: %s: remaining %lld limit %lld",
				   kc->spec, key, (long long)d.remaining,
				   (long long)d.limit);
			if (d.allowed)
				__atomic_fetch_add(&sh->reported[k], 1,
						   __ATOMIC_SEQ_CST);
			__atomic_store_n(&sh->inflight[m], 0, __ATOMIC_SEQ_CST);
			checks++;
		}
		__atomic_store_n(&sh->busy[m], 0, __ATOMIC_SEQ_CST);
		if (checks >= 256) {
			__atomic_fetch_add(&sh->checks, checks,
					   __ATOMIC_RELAXED);
			checks = 0;
		}
	}
	return 0;
}

/* A fresh process: peek and drain every key of the paused phase. */
static int
sweeper(void *p)
{
	int ph = (int)(intptr_t)p;

	for (int k = 0; k < NKEYS; k++) {
		char key[48];
		int len = key_name(key, sizeof key, ph, k);
		tkshm_decision d;
		int rc;
		uint64_t n = 0;

		__atomic_store_n(&sh->sweep_key, k, __ATOMIC_RELAXED);
		rc = tkshm_peek_at(table, key, (size_t)len, sh->now, &d);
		MP_REQUIRE(rc == TKSHM_OK, "%s: sweep: peek %s: %s", kc->spec,
			   key, tkshm_error_name(rc));
		MP_REQUIRE(d.remaining >= 0 && d.remaining <= kc->k &&
				   d.allowed == (d.remaining >= 1),
			   "%s: sweep: peek %s: allowed %d remaining %lld",
			   kc->spec, key, d.allowed, (long long)d.remaining);
		sh->peeked[k] = d.remaining;
		for (;;) {
			rc = tkshm_check_at(table, key, (size_t)len, 1, sh->now,
					    &d);
			MP_REQUIRE(rc == TKSHM_OK, "%s: sweep: check %s: %s",
				   kc->spec, key, tkshm_error_name(rc));
			if (!d.allowed)
				break;
			n++;
			MP_REQUIRE(n <= (uint64_t)kc->k,
				   "%s: sweep: %s admits more than K = %d",
				   kc->spec, key, kc->k);
		}
		MP_REQUIRE(d.remaining == 0 && d.retry_after_ms > 0,
			   "%s: sweep: %s denied with remaining %lld retry "
			   "%lld",
			   kc->spec, key, (long long)d.remaining,
			   (long long)d.retry_after_ms);
		sh->swept[k] = n;
	}
	__atomic_store_n(&sh->sweeps_done, 1, __ATOMIC_RELEASE);
	return 0;
}

/* After the storm: every key ever used, once each, at instants STEP
 * apart (each key idle for the next: the sweep reclaims), must start
 * afresh: admitted with K - 1 remaining. */
static int
final_sweeper(void *p)
{
	int phases = (int)(intptr_t)p;
	int n = NPERSISTENT + phases * (NKEYS - NPERSISTENT);

	for (int i = 0; i < n; i++) {
		int ph = 0, k = i, len;
		char key[48];
		double now = NOW0 + (double)(phases + 1 + i) * STEP;
		tkshm_decision d;
		int rc;

		if (i >= NPERSISTENT) {
			ph = (i - NPERSISTENT) / (NKEYS - NPERSISTENT);
			k = NPERSISTENT +
			    (i - NPERSISTENT) % (NKEYS - NPERSISTENT);
		}
		len = key_name(key, sizeof key, ph, k);
		__atomic_store_n(&sh->sweep_key, i, __ATOMIC_RELAXED);
		rc = tkshm_check_at(table, key, (size_t)len, 1, now, &d);
		MP_REQUIRE(rc == TKSHM_OK && d.allowed &&
				   d.remaining == kc->k - 1,
			   "%s: after the storm, %s: %s allowed %d remaining "
			   "%lld",
			   kc->spec, key, tkshm_error_name(rc), d.allowed,
			   (long long)d.remaining);
	}
	__atomic_store_n(&sh->sweeps_done, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Runs a sweep in a fresh process, with a deadline. */
static void
run_sweep(int (*fn)(void *), int ph)
{
	pid_t pid;
	int status;
	double t0 = tkt_seconds();

	sh->sweeps_done = 0;
	pid = mp_spawn(fn, (void *)(intptr_t)ph);
	while (!mp_try_reap(pid, &status)) {
		if (tkt_seconds() - t0 > STALL_S) {
			int k = __atomic_load_n(&sh->sweep_key,
						__ATOMIC_RELAXED);
			mp_kill_all();
			fail_msg("%s: the sweep after phase %d is stuck on "
				 "key %d for %.0f s",
				 kc->spec, ph, k, STALL_S);
		}
		mp_sleep_us(200);
	}
	mp_expect_ok(status, "the sweep");
	assert_int_equal(sh->sweeps_done, 1);
}

static uint64_t
reported_total(void)
{
	uint64_t s = 0;

	for (int k = 0; k < NKEYS; k++)
		s += __atomic_load_n(&sh->reported[k], __ATOMIC_RELAXED);
	return s;
}

/* The test process's view of the workers: which mark slot each live
 * worker uses, and the victims killed but not reaped yet.  A victim is
 * reaped lazily (a SIGKILLed process that waits for a CPU takes a while
 * to die, and waiting for it would make every kill cost a time slice);
 * its mark slot is read and freed when it is reaped. */
struct crew {
	pid_t pid[NWORKERS];
	int mark[NWORKERS];
	bool used[NMARKS];
	pid_t dying[NMARKS];
	int dying_mark[NMARKS];
	int ndying;
	uint64_t lost[NKEYS]; /* this phase */
	uint64_t in_call;     /* kills that found a key marked */
};

static void
crew_spawn(struct crew *cr, int i)
{
	for (int m = 0; m < NMARKS; m++) {
		if (cr->used[m])
			continue;
		cr->used[m] = true;
		__atomic_store_n(&sh->busy[m], 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&sh->inflight[m], 0, __ATOMIC_SEQ_CST);
		cr->mark[i] = m;
		cr->pid[i] = mp_spawn(worker, (void *)(intptr_t)m);
		return;
	}
	fail_msg("%s: more than %d victims waiting to be reaped", kc->spec,
		 NMARKS - NWORKERS);
}

/* Reaps the victims that have died (all of them if `all`), accounting
 * for what their marks say. */
static void
crew_reap(struct crew *cr, bool all)
{
	for (int j = 0; j < cr->ndying;) {
		int status, m = cr->dying_mark[j], k;

		if (all)
			status = mp_reap(cr->dying[j]);
		else if (!mp_try_reap(cr->dying[j], &status)) {
			j++;
			continue;
		}
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			mp_expect_ok(status, "a worker");
			fail_msg("%s: a worker exited by itself", kc->spec);
		}
		/* Dead: its marks are stable. */
		k = __atomic_load_n(&sh->inflight[m], __ATOMIC_SEQ_CST);
		if (k > 0) {
			cr->lost[k - 1]++;
			cr->in_call++;
		}
		cr->used[m] = false;
		cr->dying[j] = cr->dying[cr->ndying - 1];
		cr->dying_mark[j] = cr->dying_mark[cr->ndying - 1];
		cr->ndying--;
	}
}

static void
crew_kill(struct crew *cr, int i)
{
	if (kill(cr->pid[i], SIGKILL) != 0)
		fail_msg("kill: %s", strerror(errno));
	cr->dying[cr->ndying] = cr->pid[i];
	cr->dying_mark[cr->ndying++] = cr->mark[i];
	crew_spawn(cr, i);
}

/* Pauses the workers: afterwards no process is inside a call (every
 * victim reaped, every live worker out of its batch). */
static void
pause_workers(struct crew *cr, int ph)
{
	double t0 = tkt_seconds();

	__atomic_store_n(&sh->phase, PH_PAUSED, __ATOMIC_SEQ_CST);
	crew_reap(cr, true);
	for (int i = 0; i < NWORKERS; i++) {
		int m = cr->mark[i];

		while (__atomic_load_n(&sh->busy[m], __ATOMIC_SEQ_CST) ==
		       ph + 1) {
			if (mp_failed())
				fail_recorded();
			if (tkt_seconds() - t0 > STALL_S)
				fail_msg("%s: phase %d: worker %d is still "
					 "inside a call (key %d) after %.0f s",
					 kc->spec, ph, i, sh->inflight[m] - 1,
					 STALL_S);
			mp_sleep_us(20);
		}
	}
}

struct totals {
	uint64_t kills, kills_in_call, phases, stolen, retries, reclaims,
		inserts, unreported;
};

static void
storm_one(const struct kcase *c, uint64_t *rng, struct totals *tot)
{
	struct crew cr;
	uint64_t kills = 0, unreported = 0, short_phases = 0;
	double t0 = tkt_seconds();
	int ph;
	tkshm_stats st;
	tkshm_usage us;

	kc = c;
	table = tkt_anon(c->spec, SLOTS);
	memset(sh, 0, sizeof *sh);
	memset(&cr, 0, sizeof cr);
	sh->seed = mp_rand(rng);
	sh->phase = PH_PAUSED;
	for (int i = 0; i < NWORKERS; i++)
		crew_spawn(&cr, i);

	for (ph = 0; kills < KILLS; ph++) {
		double ts;

		if (tkt_seconds() - t0 > KIND_CAP_S)
			fail_msg("%s: only %llu kills after %.0f s", c->spec,
				 (unsigned long long)kills, KIND_CAP_S);
		memset(sh->reported, 0, sizeof sh->reported);
		memset(cr.lost, 0, sizeof cr.lost);
		sh->now = NOW0 + (double)ph * STEP;
		__atomic_store_n(&sh->phase, ph, __ATOMIC_SEQ_CST);
		ts = tkt_seconds();
		while (kills < KILLS &&
		       reported_total() * 10 <
			       (uint64_t)NKEYS * (uint64_t)c->k * 9 &&
		       (tkt_seconds() - ts) * 1000 < PHASE_MAX_MS) {
			mp_sleep_us(mp_rand_below(rng, MAX_SLEEP_US + 1));
			crew_kill(&cr, (int)mp_rand_below(rng, NWORKERS));
			kills++;
			crew_reap(&cr, false);
		}
		short_phases += reported_total() * 10 <
				(uint64_t)NKEYS * (uint64_t)c->k * 9;
		pause_workers(&cr, ph);
		run_sweep(sweeper, ph);
		for (int k = 0; k < NKEYS; k++) {
			uint64_t rep = sh->reported[k], sw = sh->swept[k];

			if ((int64_t)sw != sh->peeked[k])
				fail_msg("%s: phase %d key %d: peek said %lld "
					 "remaining, the sweep admitted %llu",
					 c->spec, ph, k,
					 (long long)sh->peeked[k],
					 (unsigned long long)sw);
			if (rep + sw > (uint64_t)c->k)
				fail_msg("%s: phase %d key %d: %llu admissions "
					 "reported + %llu by the sweep > K = "
					 "%d: over the limit",
					 c->spec, ph, k,
					 (unsigned long long)rep,
					 (unsigned long long)sw, c->k);
			if ((uint64_t)c->k - rep - sw > cr.lost[k])
				fail_msg("%s: phase %d key %d: %llu units "
					 "consumed that nobody reported, but "
					 "only %llu kills landed in a call of "
					 "that key",
					 c->spec, ph, k,
					 (unsigned long long)(c->k - rep - sw),
					 (unsigned long long)cr.lost[k]);
			unreported += (uint64_t)c->k - rep - sw;
		}
		if (ph % 4 == 3)
			mp_verify(table, c->spec);
	}
	__atomic_store_n(&sh->phase, PH_STOP, __ATOMIC_SEQ_CST);
	mp_wait_all(30);
	mp_verify(table, c->spec);
	run_sweep(final_sweeper, ph);
	mp_verify(table, c->spec);
	assert_int_equal(tkshm_stats_get(table, &st), TKSHM_OK);
	assert_int_equal(tkshm_usage_get(table, sh->now, &us), TKSHM_OK);
	print_message(
		"%-62s %.2f s: %d phases (%llu ended by time), %llu "
		"kills (%llu inside a call, %llu units consumed "
		"unreported); claims_stolen %llu cas_retries %llu "
		"inserts %llu reclaims %llu; placeholders left %llu\n",
		c->spec, tkt_seconds() - t0, ph,
		(unsigned long long)short_phases, (unsigned long long)kills,
		(unsigned long long)cr.in_call, (unsigned long long)unreported,
		(unsigned long long)st.claims_stolen,
		(unsigned long long)st.cas_retries,
		(unsigned long long)st.inserts, (unsigned long long)st.reclaims,
		(unsigned long long)us.placeholders);
	assert_int_equal(st.refusals, 0);
	assert_int_equal(st.evictions, 0);
	assert_true(st.reclaims > 0);
	tot->kills += kills;
	tot->kills_in_call += cr.in_call;
	tot->phases += (uint64_t)ph;
	tot->stolen += st.claims_stolen;
	tot->retries += st.cas_retries;
	tot->reclaims += st.reclaims;
	tot->inserts += st.inserts;
	tot->unreported += unreported;
	tkshm_close(table);
	table = NULL;
}

static void
wide_kill_storm(void **state)
{
	uint64_t rng = mp_seed();
	struct totals tot = { 0 };
	double t0 = tkt_seconds();

	(void)state;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)rng);
	sh = tkt_shared(sizeof *sh);
	for (size_t c = 0; c < NCASES; c++)
		storm_one(&cases[c], &rng, &tot);
	print_message(
		"storm: %zu kinds, %.2f s, %llu phases, %llu kills "
		"(%llu inside a call), %llu units consumed unreported; "
		"claims_stolen %llu cas_retries %llu inserts %llu "
		"reclaims %llu\n",
		NCASES, tkt_seconds() - t0, (unsigned long long)tot.phases,
		(unsigned long long)tot.kills,
		(unsigned long long)tot.kills_in_call,
		(unsigned long long)tot.unreported,
		(unsigned long long)tot.stolen, (unsigned long long)tot.retries,
		(unsigned long long)tot.inserts,
		(unsigned long long)tot.reclaims);
	/* Kills inside claims must have happened, and been stolen. */
	assert_true(tot.stolen > 0);
	tkt_shared_free(sh, sizeof *sh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(wide_kill_storm, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
