/*
 * test_lifecycle.c - a table's policy and size change while handles are
 * open (protocol.h L1-L6, docs/lifecycle.md): in place, by replacement,
 * by growing; what each open reports; and a handle opened before the
 * change follows it on its next call.  Times are explicit (`_at`).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"
#include "shm/protocol.h"
#include "shm/table.h"

#define T0 1.0e12

static tkshm_table *
open_with(const char *path, const char *spec, uint64_t slots, uint32_t flags,
	  tkshm_change *change, int want_rc)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy(spec);
	tkshm_table *t = NULL;
	char err[512] = "";

	o.policy = &p;
	o.slots = slots;
	o.flags |= flags;
	if (flags & TKSHM_O_CREATE)
		unlink(path); /* a run that failed may have left it */
	o.change = change;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	if (tkshm_open(path, &o, &t) != want_rc)
		fail_msg("open %s with %s: not %d (%s)", path, spec, want_rc,
			 err);
	return t;
}

/* Checks of key at `now` until one is denied (at most `limit`). */
static int
admitted(tkshm_table *t, const char *key, double now, int limit)
{
	int n = 0;

	for (; n < limit; n++) {
		tkshm_decision d;

		assert_rc(tkshm_check_at(t, key, strlen(key), 1, now, &d),
			  TKSHM_OK);
		if (!d.allowed)
			break;
	}
	return n;
}

static void
test_in_place_limit_change(void **state)
{
	const char *path = tkt_path("inplace.tk");
	tkshm_change c;
	tkshm_table *a, *b;

	(void)state;
	a = open_with(path, "fixedWindow:limit=20,windowMs=86400000", 64,
		      TKSHM_O_CREATE, &c, TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_CREATE);
	assert_int_equal(admitted(a, "k", T0, 100), 20);
	b = open_with(path, "fixedWindow:limit=40,windowMs=86400000", 0, 0, &c,
		      TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_IN_PLACE);
	assert_true(c.states_kept);
	tkt_expect_contains(c.text, "limit 20 -> 40", "change text");
	tkt_expect_contains(c.text, "states kept", "change text");
	/* The handle opened before follows: the key's 20 stand, 20 more. */
	assert_int_equal(admitted(a, "k", T0, 100), 20);
	assert_int_equal(admitted(b, "k", T0, 100), 0);
	/* The same policy again: nothing to do. */
	tkshm_close(open_with(path, "fixedWindow:limit=40,windowMs=86400000", 0,
			      0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_NONE);
	/* Down again, in place: the key is over the new limit. */
	tkshm_close(open_with(path, "fixedWindow:limit=10,windowMs=86400000", 0,
			      0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_IN_PLACE);
	assert_int_equal(admitted(a, "k", T0, 100), 0);
	assert_int_equal(admitted(b, "fresh", T0, 100), 10);
	tkshm_close(a);
	tkshm_close(b);
	unlink(path);
}

/* GCRA's state is a time (the TAT): under a new limit the same debt of
 * time is read at the new pace, as ThrottleKit's Redis state is. */
static void
test_in_place_gcra_reads_time(void **state)
{
	const char *path = tkt_path("inplace-gcra.tk");
	tkshm_table *a;

	(void)state;
	a = open_with(path, "gcra:limit=20,periodMs=86400000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(admitted(a, "k", T0, 100), 20);
	tkshm_close(open_with(path, "gcra:limit=40,periodMs=86400000", 0, 0,
			      NULL, TKSHM_OK));
	/* A day of debt is the whole new burst too ... */
	assert_int_equal(admitted(a, "k", T0, 100), 0);
	/* ... refilled at the new pace: one per 2.16e6 ms. */
	assert_int_equal(admitted(a, "k", T0 + 2.16e6, 100), 1);
	tkshm_close(a);
	unlink(path);
}

static void
test_keep_and_plan_change_nothing(void **state)
{
	const char *path = tkt_path("keep.tk");
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy("gcra:limit=5,periodMs=1000");
	tkshm_change c;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "gcra:limit=10,periodMs=1000", 64, TKSHM_O_CREATE,
		      NULL, TKSHM_OK);
	tkshm_close(open_with(path, "gcra:limit=5,periodMs=1000", 0,
			      TKSHM_O_KEEP, NULL, TKSHM_EMISMATCH));
	o.policy = &p;
	o.slots = 1024;
	assert_rc(tkshm_plan(path, &o, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(c.slots_before, 64);
	assert_int_equal(c.slots_after, 1024);
	tkt_expect_contains(c.text, "limit 10 -> 5", "plan text");
	assert_int_equal(admitted(a, "k", T0, 100), 10); /* still 10 */
	o.slots = 8;
	assert_rc(tkshm_plan(path, &o, &c), TKSHM_OK);
	tkt_expect_contains(c.text, "does not shrink", "shrink text");
	assert_rc(tkshm_apply(a, NULL, 8, &c), TKSHM_EINVAL);
	assert_rc(tkshm_apply(a, &p, 8, &c), TKSHM_EINVAL); /* with a policy */
	assert_rc(tkshm_apply(a, NULL, 60, &c), TKSHM_OK);  /* rounds to 64 */
	assert_int_equal(c.kind, TKSHM_CHANGE_NONE);
	assert_rc(tkshm_plan(tkt_path("nothing.tk"), &o, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_CREATE);
	assert_int_not_equal(access(tkt_path("nothing.tk"), F_OK), 0);
	tkshm_close(a);
	unlink(path);
}

/* Consumes part of many keys, grows the table, and checks every key kept
 * its state, seen through the handle opened before and a new one. */
static void
grow_keeps_keys(const char *spec, int limit)
{
	const char *path = tkt_path("grow.tk");
	char key[32], side[4300];
	tkshm_change c;
	tkshm_table *a, *b;
	struct stat st;

	a = open_with(path, spec, 512, TKSHM_O_CREATE, NULL, TKSHM_OK);
	/* 100 keys in 512 slots: no window of 8 full (a wide table refuses
	 * a key whose window is, TKSHM_EFULL). */
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		assert_int_equal(admitted(a, key, T0, i % limit), i % limit);
	}
	assert_rc(tkshm_apply(a, NULL, 4096, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_true(c.states_kept);
	assert_int_equal(c.slots_after, 4096);
	b = open_with(path, spec, 0, 0, &c, TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_NONE);
	assert_int_equal(c.slots_before, 4096);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		assert_int_equal(admitted(i % 2 ? a : b, key, T0, limit),
				 limit - i % limit);
	}
	/* The drained predecessor is gone from the directory. */
	snprintf(side, sizeof side, "%s", path);
	assert_int_equal(stat(path, &st), 0);
	tkshm_close(a);
	tkshm_close(b);
	unlink(path);
}

static void
test_grow_gcra(void **state)
{
	(void)state;
	grow_keeps_keys("gcra:limit=7,periodMs=86400000", 7);
}

static void
test_grow_token_bucket(void **state)
{
	(void)state;
	grow_keeps_keys("tokenBucket:capacity=7,refillPerSec=0.0001", 7);
}

static void
test_grow_fixed_window(void **state)
{
	(void)state;
	grow_keeps_keys("fixedWindow:limit=7,windowMs=86400000", 7);
}

static void
test_kind_change_replaces(void **state)
{
	const char *path = tkt_path("kind.tk");
	tkshm_change c;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "gcra:limit=5,periodMs=86400000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(admitted(a, "k", T0, 100), 5);
	tkshm_close(open_with(path, "fixedWindow:limit=3,windowMs=86400000", 0,
			      0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_false(c.states_kept);
	tkt_expect_contains(c.text, "kind gcra -> fixedWindow", "kind text");
	/* The old handle follows to the new kind: a fresh key of 3. */
	assert_int_equal(admitted(a, "k", T0, 100), 3);
	tkshm_close(a);
	unlink(path);
}

static void
test_shape_change_replaces(void **state)
{
	const char *path = tkt_path("shape.tk");
	tkshm_change c;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "slidingWindowLog:limit=4,windowMs=86400000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(admitted(a, "k", T0, 100), 4);
	/* The window only: in place, the four stamps stand. */
	tkshm_close(open_with(path, "slidingWindowLog:limit=4,windowMs=1000000",
			      0, 0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_IN_PLACE);
	assert_int_equal(admitted(a, "k", T0, 100), 0);
	/* The limit: another state size, a replacement. */
	tkshm_close(open_with(path, "slidingWindowLog:limit=6,windowMs=1000000",
			      0, 0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(admitted(a, "k", T0, 100), 6);
	tkshm_close(a);
	unlink(path);
}

/* A replacement by another kind carries what each key owes where the
 * kinds convert (src/algorithms/convert.h). */
static void
converts(const char *from, const char *to)
{
	const char *path = tkt_path("convert.tk");
	tkshm_change c;
	tkshm_table *a;

	tkshm_policy p = tkt_policy(to);

	a = open_with(path, from, 64, TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(admitted(a, "k", T0, 3), 3);
	/* Converted as the keys stand at T0, the time of their checks. */
	assert_rc(tkshm_apply_at(a, &p, 0, T0, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	if (!c.states_kept)
		fail_msg("%s -> %s: %s", from, to, c.text);
	/* 3 of 5 owed: 2 left, at the time they were spent. */
	assert_int_equal(admitted(a, "k", T0, 100), 2);
	assert_int_equal(admitted(a, "other", T0, 100), 5);
	tkshm_close(a);
	unlink(path);
}

static void
test_conversions(void **state)
{
	(void)state;
	/* 5 per 1e8 ms both: T = 2e7 ms, 5e-5 tokens per second. */
	converts("gcra:limit=5,periodMs=100000000",
		 "tokenBucket:capacity=5,refillPerSec=0.00005");
	converts("tokenBucket:capacity=5,refillPerSec=0.00005",
		 "gcra:limit=5,periodMs=100000000");
	converts("fixedWindow:limit=5,windowMs=86400000",
		 "slidingWindow:limit=5,windowMs=86400000,buckets=4");
	converts("slidingWindow:limit=5,windowMs=86400000,buckets=4",
		 "slidingWindow:limit=5,windowMs=86400000,buckets=8");
	converts("slidingWindow:limit=5,windowMs=86400000,buckets=8",
		 "fixedWindow:limit=5,windowMs=86400000");
	/* Another window, the same buckets: ticks of another width, so a
	 * replacement that converts them through their times. */
	converts("slidingWindow:limit=5,windowMs=86400000,buckets=4",
		 "slidingWindow:limit=5,windowMs=43200000,buckets=4");
}

static void
test_anonymous_changes(void **state)
{
	tkshm_table *a = tkt_anon("fixedWindow:limit=4,windowMs=86400000", 64);
	tkshm_policy p = tkt_policy("fixedWindow:limit=8,windowMs=86400000");
	tkshm_change c;

	(void)state;
	assert_int_equal(admitted(a, "k", T0, 100), 4);
	assert_rc(tkshm_apply(a, &p, 0, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_IN_PLACE);
	assert_int_equal(admitted(a, "k", T0, 100), 4);
	assert_rc(tkshm_apply(a, NULL, 1024, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(admitted(a, "k", T0, 100), 0);
	assert_int_equal(admitted(a, "other", T0, 100), 8);
	tkshm_close(a);
}

/* The table at `path` through a handle of its own: its debt cells, and
 * whether tkshm_verify finds it sound. */
static uint64_t
debt_cells_verified(const char *path)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_stats s;

	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
	return s.debt_cells;
}

/* A table that can evict keeps one debt cell per slot, one that never
 * evicts a single cell (segment.c).  Replacements between the two, and to
 * a larger size, work with the other count, and the larger replacement
 * holds each cell's debt in the cells its keys map to (drain.c). */
static void
test_debt_cells_follow_the_table(void **state)
{
	const char *path = tkt_path("debt.tk");
	const char *gcra = "gcra:limit=5,periodMs=86400000";
	struct tkshm_table big;
	struct tk_slot *slot;
	char key[32];
	tkshm_change c;
	tkshm_entry e;
	tkshm_table *a;
	uint64_t fp;

	(void)state;
	a = open_with(path, gcra, 64, TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(debt_cells_verified(path), 64);
	/* A key whose debt cell of 1024 (the cell of a copy of the handle
	 * with 1024 cells) is not its cell of 64. */
	big = *a;
	big.debt_mask = 1023;
	for (int n = 0;; n++) {
		snprintf(key, sizeof key, "debtor-%d", n);
		fp = tk_key_fp(a, key, strlen(key));
		if (tk_debt_cell(&big, fp) - big.debt >= 64)
			break;
	}
	assert_int_equal(admitted(a, key, T0, 100), 5);
	/* Evicted as I8 evicts a key: its state into its cell, then its
	 * slot taken (DEAD).  Plain stores: this test is the only thread. */
	assert_rc(tkshm_entry_get_at(a, key, strlen(key), T0, &e), TKSHM_OK);
	slot = tk_slot_at(a, e.slot);
	*tk_debt_cell(a, fp) = slot->st;
	slot->st = TK_ST_DEAD;
	assert_int_equal(admitted(a, key, T0, 100), 0); /* its debt */

	/* 1024 slots: the debt is carried to the key's cell of 1024. */
	assert_rc(tkshm_apply(a, NULL, 1024, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(debt_cells_verified(path), 1024);
	assert_int_equal(admitted(a, key, T0, 100), 0);
	assert_int_equal(admitted(a, "fresh", T0, 100), 5);

	/* A kind that never evicts: one cell, and the handle follows. */
	tkshm_close(open_with(path, "fixedWindow:limit=3,windowMs=86400000", 0,
			      0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(debt_cells_verified(path), 1);
	assert_int_equal(admitted(a, "fresh-2", T0, 100), 3);

	/* And back to one that evicts: a cell per slot again. */
	tkshm_close(open_with(path, gcra, 0, 0, &c, TKSHM_OK));
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_int_equal(debt_cells_verified(path), 1024);
	assert_int_equal(admitted(a, "fresh-3", T0, 100), 5);
	tkshm_close(a);
	unlink(path);
}

static void
test_bad_changes_change_nothing(void **state)
{
	const char *path = tkt_path("bad.tk");
	tkshm_policy bad = tkt_policy("gcra:limit=5,periodMs=1000");
	tkshm_change c;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "gcra:limit=5,periodMs=86400000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	bad.u.gcra.limit = -1;
	assert_rc(tkshm_apply(a, &bad, 0, &c), TKSHM_EPOLICY);
	assert_rc(tkshm_apply(a, NULL, TKSHM_MAX_SLOTS + 1, &c), TKSHM_EINVAL);
	assert_rc(tkshm_apply(NULL, NULL, 0, &c), TKSHM_ENULL);
	assert_int_equal(admitted(a, "k", T0, 100), 5);
	tkshm_close(a);
	unlink(path);
}

/* A bucket that refills faster than the GCRA it replaces owes, at the
 * change, what the key owed then: not what it owed at TAT - tau, refilled
 * at the new pace since. */
static void
test_gcra_to_faster_bucket_owes_at_now(void **state)
{
	const char *path = tkt_path("faster.tk");
	/* T = 2e7 ms; the bucket refills ten times as fast. */
	tkshm_policy to = tkt_policy("tokenBucket:capacity=5,"
				     "refillPerSec=0.0005");
	tkshm_change c;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "gcra:limit=5,periodMs=100000000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	assert_int_equal(admitted(a, "k", T0, 100), 5);
	/* 1.5e7 ms later the key has paid 0.75 of a unit: it owes 4.25. */
	assert_rc(tkshm_apply_at(a, &to, 0, T0 + 1.5e7, &c), TKSHM_OK);
	assert_int_equal(c.kind, TKSHM_CHANGE_REPLACE);
	assert_true(c.states_kept);
	assert_int_equal(admitted(a, "k", T0 + 1.5e7, 100), 0);
	/* 0.25 of a unit is paid at the new pace in 5e5 ms. */
	assert_int_equal(admitted(a, "k", T0 + 1.5e7 + 4.9e5, 100), 0);
	assert_int_equal(admitted(a, "k", T0 + 1.5e7 + 5.1e5, 100), 1);
	tkshm_close(a);
	unlink(path);
}

/* A window's counts go where they can have been admitted last (the end of
 * their span, or the change's now if earlier): never expiring sooner than
 * they would have. */
static void
test_window_counts_move_to_their_latest_time(void **state)
{
	const char *path = tkt_path("latest.tk");
	const double day = 86400000.0;
	const double start = floor(T0 / day) * day;
	tkshm_policy to = tkt_policy("slidingWindow:limit=5,windowMs=86400000,"
				     "buckets=4");
	tkshm_table *a;

	(void)state;
	a = open_with(path, "fixedWindow:limit=5,windowMs=86400000", 64,
		      TKSHM_O_CREATE, NULL, TKSHM_OK);
	/* Spent late in the day's window; changed at that time. */
	assert_int_equal(admitted(a, "k", start + 0.9 * day, 100), 5);
	assert_rc(tkshm_apply_at(a, &to, 0, start + 0.9 * day, NULL), TKSHM_OK);
	/* Placed at the window's start, the 5 would be out of the sliding
	 * window a day and a quarter later; they were spent at 0.9 of it. */
	assert_int_equal(admitted(a, "k", start + 1.5 * day, 100), 0);
	assert_int_equal(admitted(a, "k", start + 2.2 * day, 100), 5);
	tkshm_close(a);
	unlink(path);
}

/* A permit taken before a replacement that does not carry the permits (a
 * new concurrency limit) is held nowhere after it: releasing it must not
 * free a cell of the new table, which may be another acquisition's. */
static void
test_permits_across_a_replacement(void **state)
{
	const char *path = tkt_path("permits.tk");
	tkshm_policy three = tkt_policy("concurrency:limit=3");
	tkshm_permit old, p[4];
	tkshm_decision d;
	tkshm_table *a;

	(void)state;
	a = open_with(path, "concurrency:limit=2", 64, TKSHM_O_CREATE, NULL,
		      TKSHM_OK);
	assert_rc(tkshm_acquire_at(a, "k", 1, T0, &old, &d), TKSHM_OK);
	assert_true(d.allowed);
	/* More slots: the states are copied as they are, permits too. */
	assert_rc(tkshm_apply_at(a, NULL, 256, T0, NULL), TKSHM_OK);
	assert_rc(tkshm_release_at(a, &old, T0, TKSHM_OUTCOME_IGNORE),
		  TKSHM_OK);
	assert_rc(tkshm_acquire_at(a, "k", 1, T0, &old, &d), TKSHM_OK);
	assert_true(d.allowed);
	/* A new limit: a new table, the key starts with no permit held. */
	assert_rc(tkshm_apply_at(a, &three, 0, T0, NULL), TKSHM_OK);
	for (int i = 0; i < 3; i++) {
		assert_rc(tkshm_acquire_at(a, "k", 1, T0, &p[i], &d), TKSHM_OK);
		assert_true(d.allowed);
	}
	assert_rc(tkshm_release_at(a, &old, T0, TKSHM_OUTCOME_IGNORE),
		  TKSHM_ENOTHELD);
	assert_rc(tkshm_acquire_at(a, "k", 1, T0, &p[3], &d), TKSHM_OK);
	assert_false(d.allowed);
	for (int i = 0; i < 3; i++)
		assert_rc(tkshm_release_at(a, &p[i], T0, TKSHM_OUTCOME_IGNORE),
			  TKSHM_OK);
	tkshm_close(a);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_place_limit_change),
		cmocka_unit_test(test_in_place_gcra_reads_time),
		cmocka_unit_test(test_keep_and_plan_change_nothing),
		cmocka_unit_test(test_grow_gcra),
		cmocka_unit_test(test_grow_token_bucket),
		cmocka_unit_test(test_grow_fixed_window),
		cmocka_unit_test(test_kind_change_replaces),
		cmocka_unit_test(test_shape_change_replaces),
		cmocka_unit_test(test_conversions),
		cmocka_unit_test(test_gcra_to_faster_bucket_owes_at_now),
		cmocka_unit_test(test_window_counts_move_to_their_latest_time),
		cmocka_unit_test(test_permits_across_a_replacement),
		cmocka_unit_test(test_debt_cells_follow_the_table),
		cmocka_unit_test(test_anonymous_changes),
		cmocka_unit_test(test_bad_changes_change_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
