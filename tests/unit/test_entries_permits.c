/*
 * test_entries_permits.c - what tkshm_entry shows of a concurrency key: the
 * permits held, the processes holding them (by ascending pid, with their
 * counts), and for an adaptive limit its current value and rttNoLoad.
 *
 * Permits are taken with the public calls (tkshm_acquire_at,
 * tkshm_release_at) on anonymous tables, by this process and by forked
 * children that hold theirs until they are killed, so every expected holder
 * and count is known from what the test did.  Adaptive values are derived
 * by hand from the formulas in src/algorithms/concurrency.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "shm/table.h"

#define NOW 1000000.0

/* An anonymous table of `spec` (shared with children forked later). */
static tkshm_table *
anon(const char *spec)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	char err[256] = "";

	assert_rc(tkshm_policy_parse(spec, &p, err, sizeof err), TKSHM_OK);
	o.policy = &p;
	o.slots = 64;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	if (tkshm_open(NULL, &o, &t) != TKSHM_OK)
		fail_msg("tkshm_open(NULL, \"%s\"): %s", spec, err);
	return t;
}

static void
acquire(tkshm_table *t, const char *key, double now, tkshm_permit *permit)
{
	tkshm_decision d;

	assert_rc(tkshm_acquire_at(t, key, strlen(key), now, permit, &d),
		  TKSHM_OK);
	if (!d.allowed)
		fail_msg("acquire of \"%s\" refused (limit %lld)", key,
			 (long long)d.limit);
}

/* The entry of `key`, from a buffer poisoned first so that every field
 * read was written by the call. */
static tkshm_entry
entry(tkshm_table *t, const char *key, double now)
{
	tkshm_entry e;

	memset(&e, 0xA5, sizeof e);
	assert_rc(tkshm_entry_get_at(t, key, strlen(key), now, &e), TKSHM_OK);
	assert_true(e.state_valid);
	return e;
}

/* The same key's entry from a walk of the whole table agrees with `e` on
 * every permit field. */
static void
assert_walk_agrees(tkshm_table *t, const tkshm_entry *e, double now)
{
	tkshm_entry w;
	uint64_t cursor = 0;
	int found = 0, rc;

	while ((rc = tkshm_entry_next_at(t, &cursor, now, &w)) == TKSHM_OK) {
		if (w.fingerprint != e->fingerprint)
			continue;
		found++;
		assert_int_equal(w.permits_held, e->permits_held);
		assert_int_equal(w.holders_n, e->holders_n);
		assert_memory_equal(w.holders, e->holders, sizeof w.holders);
		assert_true(memcmp(&w.adaptive_limit, &e->adaptive_limit,
				   sizeof w.adaptive_limit) == 0);
		assert_true(memcmp(&w.rtt_noload_ms, &e->rtt_noload_ms,
				   sizeof w.rtt_noload_ms) == 0);
	}
	assert_rc(rc, TKSHM_ENOENT);
	assert_int_equal(found, 1);
}

/* No holder listed past holders_n (nor past the array). */
static void
assert_holders_end(const tkshm_entry *e)
{
	uint32_t listed = e->holders_n < TKSHM_ENTRY_HOLDERS ?
				  e->holders_n :
				  TKSHM_ENTRY_HOLDERS;

	for (uint32_t i = listed; i < TKSHM_ENTRY_HOLDERS; i++) {
		assert_int_equal(e->holders[i].pid, 0);
		assert_int_equal(e->holders[i].permits, 0);
	}
}

/* ------------------------------------------------------------------------
 * One process
 * ---------------------------------------------------------------------- */

static void
test_own_permits(void **state)
{
	tkshm_table *t = anon("concurrency:limit=4");
	tkshm_permit p[4];
	tkshm_entry e;

	(void)state;
	/* An acquire inserts the key; nothing before. */
	assert_rc(tkshm_entry_get_at(t, "api", 3, NOW, &e), TKSHM_ENOENT);
	for (int i = 0; i < 3; i++)
		acquire(t, "api", NOW, &p[i]);
	e = entry(t, "api", NOW);
	assert_int_equal(e.permits_held, 3);
	assert_int_equal(e.holders_n, 1);
	assert_int_equal(e.holders[0].pid, getpid());
	assert_int_equal(e.holders[0].permits, 3);
	assert_holders_end(&e);
	assert_false(e.idle);
	/* The limit in force and what is left are the peek's. */
	assert_int_equal(e.peek.limit, 4);
	assert_int_equal(e.peek.remaining, 1);
	/* A fixed limit has no adaptive value and no latency. */
	assert_true(e.adaptive_limit == 0);
	assert_true(e.rtt_noload_ms == 0);
	assert_walk_agrees(t, &e, NOW);

	/* A release gives one back; the others stay this process's. */
	assert_rc(tkshm_release_at(t, &p[1], NOW + 5, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	e = entry(t, "api", NOW + 5);
	assert_int_equal(e.permits_held, 2);
	assert_int_equal(e.holders_n, 1);
	assert_int_equal(e.holders[0].pid, getpid());
	assert_int_equal(e.holders[0].permits, 2);
	assert_int_equal(e.peek.remaining, 2);
	/* A second release of the same permit changes nothing. */
	assert_rc(tkshm_release_at(t, &p[1], NOW + 6, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENOTHELD);
	assert_int_equal(entry(t, "api", NOW + 6).permits_held, 2);

	/* All released: nobody holds the key, which is idle. */
	assert_rc(tkshm_release_at(t, &p[0], NOW + 7, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	assert_rc(tkshm_release_at(t, &p[2], NOW + 7, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	e = entry(t, "api", NOW + 7);
	assert_int_equal(e.permits_held, 0);
	assert_int_equal(e.holders_n, 0);
	assert_holders_end(&e);
	assert_true(e.idle);
	assert_int_equal(e.peek.remaining, 4);
	assert_walk_agrees(t, &e, NOW + 7);

	/* The limit reached: all four listed, each by this process. */
	for (int i = 0; i < 4; i++)
		acquire(t, "api", NOW + 8, &p[i]);
	e = entry(t, "api", NOW + 8);
	assert_int_equal(e.permits_held, 4);
	assert_int_equal(e.holders[0].permits, 4);
	assert_int_equal(e.peek.remaining, 0);
	assert_false(e.peek.allowed);
	/* Another key of the table holds nothing of these. */
	acquire(t, "other", NOW + 8, &p[0]);
	e = entry(t, "other", NOW + 8);
	assert_int_equal(e.permits_held, 1);
	assert_int_equal(e.holders[0].permits, 1);
	tkshm_close(t);
}

/* Cells written in another boot hold nobody: a handle whose boot differs
 * from the one in the key's state (as after a reboot, with the table file
 * kept on disk) sees no permit and no holder. */
static void
test_other_boot_holds_nobody(void **state)
{
	tkshm_table *t = anon("concurrency:limit=8");
	tkshm_permit p[3];
	uint64_t host = t->algo.u.conc.host;
	tkshm_entry e;

	(void)state;
	for (int i = 0; i < 3; i++)
		acquire(t, "k", NOW, &p[i]);
	assert_int_equal(entry(t, "k", NOW).permits_held, 3);
	t->algo.u.conc.host = host ^ 0x5A5A;
	e = entry(t, "k", NOW);
	assert_int_equal(e.permits_held, 0);
	assert_int_equal(e.holders_n, 0);
	assert_holders_end(&e);
	/* The same reading as an acquire's. */
	assert_int_equal(e.peek.remaining, 8);
	t->algo.u.conc.host = host;
	assert_int_equal(entry(t, "k", NOW).permits_held, 3);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Several processes
 * ---------------------------------------------------------------------- */

#define CHILDREN 10

static int
cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

static void
test_holders_by_process(void **state)
{
	tkshm_table *t = anon("concurrency:limit=32");
	pid_t kids[CHILDREN], all[CHILDREN + 1];
	int count_of[CHILDREN + 1];
	tkshm_permit mine[2];
	tkshm_entry e;
	uint64_t reaped = 0;
	uint32_t total = 2;

	(void)state;
	acquire(t, "shared", NOW, &mine[0]);
	acquire(t, "shared", NOW, &mine[1]);
	all[0] = getpid();
	/* Child i holds 1 + i % 3 permits. */
	for (int i = 0; i < CHILDREN; i++) {
		kids[i] = tkt_permit_holder(t, "shared", 1 + i % 3, NOW);
		all[i + 1] = kids[i];
		total += 1 + (uint32_t)(i % 3);
	}
	e = entry(t, "shared", NOW);
	assert_int_equal(e.permits_held, total);
	assert_int_equal(e.holders_n, CHILDREN + 1);
	assert_int_equal(e.peek.remaining, 32 - total);
	/* The first TKSHM_ENTRY_HOLDERS processes by pid, each with its own
	 * count. */
	qsort(all, CHILDREN + 1, sizeof all[0], cmp_pid);
	for (int i = 0; i <= CHILDREN; i++) {
		count_of[i] = 0;
		if (all[i] == getpid())
			count_of[i] = 2;
		for (int k = 0; k < CHILDREN; k++)
			if (all[i] == kids[k])
				count_of[i] = 1 + k % 3;
	}
	for (int i = 0; i < TKSHM_ENTRY_HOLDERS; i++) {
		if (e.holders[i].pid != all[i] ||
		    (int)e.holders[i].permits != count_of[i])
			fail_msg("holders[%d] is %d x %u, want %d x %d", i,
				 (int)e.holders[i].pid, e.holders[i].permits,
				 (int)all[i], count_of[i]);
	}
	assert_walk_agrees(t, &e, NOW);

	/* Dead holders stay listed until their permits are taken back: the
	 * entry shows the table, it does not judge /proc. */
	for (int i = 0; i < CHILDREN; i++) {
		int status;

		assert_int_equal(kill(kids[i], SIGKILL), 0);
		assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
	}
	e = entry(t, "shared", NOW);
	assert_int_equal(e.permits_held, total);
	assert_int_equal(e.holders_n, CHILDREN + 1);
	assert_rc(tkshm_reap(t, &reaped), TKSHM_OK);
	assert_int_equal(reaped, total - 2);
	e = entry(t, "shared", NOW);
	assert_int_equal(e.permits_held, 2);
	assert_int_equal(e.holders_n, 1);
	assert_int_equal(e.holders[0].pid, getpid());
	assert_int_equal(e.holders[0].permits, 2);
	assert_holders_end(&e);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Adaptive limits
 * ---------------------------------------------------------------------- */

/* gradient2: the limit after one sample `rtt` with `inflight` held, from
 * `limit`, rttNoLoad `noload` (concurrency.h's formulas, smoothing 0.2,
 * tolerance 1.5). */
static double
gradient2(double limit, double noload, double rtt, double inflight)
{
	double g, nl;

	if (inflight < limit / 2)
		return limit;
	g = 1.5 * noload / rtt;
	g = g < 0.5 ? 0.5 : (g > 1.0 ? 1.0 : g);
	nl = limit * g + sqrt(limit);
	return limit * (1 - 0.2) + nl * 0.2;
}

static void
assert_same(const char *what, double got, double want)
{
	if (memcmp(&got, &want, sizeof got) != 0)
		fail_msg("%s is %.17g, want %.17g", what, got, want);
}

static void
test_adaptive_gradient2(void **state)
{
	tkshm_table *t = anon("adaptiveConcurrency:algorithm=gradient2,"
			      "initialLimit=10,minLimit=1,maxLimit=16,"
			      "rttWindowMs=10000");
	tkshm_permit p[8], q;
	tkshm_entry e;
	double limit = 10, t1;

	(void)state;
	for (int i = 0; i < 6; i++)
		acquire(t, "svc", NOW, &p[i]);
	e = entry(t, "svc", NOW);
	assert_int_equal(e.permits_held, 6);
	assert_int_equal(e.holders[0].permits, 6);
	/* Before any sample: the initial limit, no latency known. */
	assert_same("adaptive_limit", e.adaptive_limit, 10);
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 0);
	assert_int_equal(e.peek.limit, 10);
	assert_walk_agrees(t, &e, NOW);

	/* A 50 ms sample with 6 in flight (>= 10 / 2): the limit grows. */
	assert_rc(tkshm_release_at(t, &p[0], NOW + 50, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	limit = gradient2(limit, 50, 50, 6);
	e = entry(t, "svc", NOW + 50);
	assert_int_equal(e.permits_held, 5);
	assert_int_equal(e.holders[0].permits, 5);
	assert_same("adaptive_limit", e.adaptive_limit, limit);
	assert_true(limit > 10);
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 50);
	assert_int_equal(e.peek.limit, (int64_t)floor(limit));
	assert_walk_agrees(t, &e, NOW + 50);

	/* A slower sample in the same window: rttNoLoad stays the least. */
	assert_rc(tkshm_release_at(t, &p[1], NOW + 80, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	limit = gradient2(limit, 50, 80, 5);
	e = entry(t, "svc", NOW + 80);
	assert_int_equal(e.permits_held, 4);
	assert_same("adaptive_limit", e.adaptive_limit, limit);
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 50);

	/* The next window: its first sample (slower) is the current least,
	 * the last window's 50 the previous; rttNoLoad is the smaller. */
	t1 = NOW + 50 + 10000 + 10;
	assert_rc(tkshm_release_at(t, &p[2], t1, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	limit = gradient2(limit, 50, t1 - NOW, 4);
	e = entry(t, "svc", t1);
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 50);
	assert_same("adaptive_limit", e.adaptive_limit, limit);
	/* A faster sample in that window is below the previous window's:
	 * rttNoLoad is now the current window's. */
	acquire(t, "svc", t1, &q);
	assert_rc(tkshm_release_at(t, &q, t1 + 20, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	e = entry(t, "svc", t1 + 20);
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 20);
	assert_int_equal(e.permits_held, 3);
	/* The limit in force is the floor of the value. */
	assert_int_equal(e.peek.limit, (int64_t)floor(e.adaptive_limit));
	assert_true(e.adaptive_limit >= 1 && e.adaptive_limit <= 16);
	tkshm_close(t);
}

static void
test_adaptive_aimd(void **state)
{
	tkshm_table *t = anon("adaptiveConcurrency:algorithm=aimd,"
			      "initialLimit=4,minLimit=1,maxLimit=8,"
			      "backoffRatio=0.9,timeoutMs=100");
	tkshm_permit p[3];
	tkshm_entry e;

	(void)state;
	for (int i = 0; i < 3; i++)
		acquire(t, "svc", NOW, &p[i]);
	assert_same("adaptive_limit", entry(t, "svc", NOW).adaptive_limit, 4);
	/* Fast, with 3 in flight (>= 4 / 2): + 1. */
	assert_rc(tkshm_release_at(t, &p[0], NOW + 10, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	e = entry(t, "svc", NOW + 10);
	assert_same("adaptive_limit", e.adaptive_limit, 5);
	assert_int_equal(e.peek.limit, 5);
	/* AIMD keeps no latency windows: rttNoLoad stays unknown. */
	assert_same("rtt_noload_ms", e.rtt_noload_ms, 0);
	/* A drop: * 0.9. */
	assert_rc(tkshm_release_at(t, &p[1], NOW + 20, TKSHM_OUTCOME_DROPPED),
		  TKSHM_OK);
	e = entry(t, "svc", NOW + 20);
	assert_same("adaptive_limit", e.adaptive_limit, 5 * 0.9);
	assert_int_equal(e.peek.limit, 4);
	assert_int_equal(e.permits_held, 1);
	/* Not a sample: the limit stays. */
	assert_rc(tkshm_release_at(t, &p[2], NOW + 30, TKSHM_OUTCOME_IGNORE),
		  TKSHM_OK);
	e = entry(t, "svc", NOW + 30);
	assert_same("adaptive_limit", e.adaptive_limit, 5 * 0.9);
	assert_int_equal(e.permits_held, 0);
	assert_int_equal(e.holders_n, 0);
	assert_walk_agrees(t, &e, NOW + 30);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Other kinds
 * ---------------------------------------------------------------------- */

/* The permit fields are written, as zeros, for every other kind. */
static void
test_other_kinds_zero(void **state)
{
	static const char *specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"tokenBucket:capacity=10,refillPerSec=5",
		"slidingWindow:limit=10,windowMs=1000",
	};

	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		tkshm_table *t = anon(specs[i]);
		tkshm_decision d;
		tkshm_entry e;

		assert_rc(tkshm_check_at(t, "k", 1, 3, NOW, &d), TKSHM_OK);
		e = entry(t, "k", NOW);
		assert_int_equal(e.permits_held, 0);
		assert_int_equal(e.holders_n, 0);
		assert_holders_end(&e);
		assert_true(e.adaptive_limit == 0);
		assert_true(e.rtt_noload_ms == 0);
		tkshm_close(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_permits),
		cmocka_unit_test(test_other_boot_holds_nobody),
		cmocka_unit_test(test_holders_by_process),
		cmocka_unit_test(test_adaptive_gradient2),
		cmocka_unit_test(test_adaptive_aimd),
		cmocka_unit_test(test_other_kinds_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
