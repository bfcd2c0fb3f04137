/*
 * test_inspect_lifecycle.c - drives the built tkshm-inspect through `plan`,
 * `apply` and `resize` (docs/lifecycle.md).  Tables are filled through the
 * library at a made-up time, and what the tool changed (or did not) is read
 * back through the library at made-up times: by a handle opened before the
 * change (another process's view: it must follow) and by a fresh one.
 */
#define _GNU_SOURCE
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN
#define RUN(p, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, NULL)

#define T0  1.0e12
#define DAY 86400000.0
/* gcra's limit 20 -> 40 per day (the burst follows the limit). */
#define GCRA20 "gcra:limit=20,periodMs=86400000"
#define GCRA40 "gcra:limit=40,periodMs=86400000"
/* A window's count, against a limit 20 -> 40. */
#define WINDOW20 "fixedWindow:limit=20,windowMs=86400000"
#define WINDOW40 "fixedWindow:limit=40,windowMs=86400000"
/* Another kind whose state gcra's does not convert to. */
#define SLIDING20 "slidingWindow:limit=20,windowMs=86400000"

/* --- helpers ------------------------------------------------------------- */

/* Checks `key` at `now` until the first denial, at most n times: the
 * number admitted. */
static int
admit(tkshm_table *t, const char *key, int n, double now)
{
	int got = 0;

	for (int i = 0; i < n; i++) {
		tkshm_decision d;

		assert_rc(tkshm_check_at(t, key, strlen(key), 1, now, &d),
			  TKSHM_OK);
		if (!d.allowed)
			break;
		got++;
	}
	return got;
}

static tkshm_decision
peek(tkshm_table *t, const char *key, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, key, strlen(key), now, &d), TKSHM_OK);
	return d;
}

/* A fresh table file of `spec` and `slots`, key "k" having spent `spent`
 * at T0.  The caller closes it. */
static tkshm_table *
table_with_k(const char *path, const char *spec, uint64_t slots, int spent)
{
	tkshm_table *t;

	unlink(path);
	t = tkt_file(path, spec, slots);
	assert_int_equal(admit(t, "k", spent, T0), spent);
	return t;
}

/* The table at `path`, seen through a fresh read-only handle, still has
 * `spec`, `slots` and key "k" as `k_before` (peeked at `now`); and no
 * replacement was left beside it (NAME.*.new, NAME.*.pred). */
static void
expect_untouched(const char *path, const char *spec, uint64_t slots,
		 const tkshm_decision *k_before, double now, const char *what)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy want = tkt_policy(spec);
	tkshm_decision k_now;
	tkshm_table *t;
	tkshm_stats st;
	char pattern[4200];
	glob_t g;

	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	if (!tkshm_policy_equal(&st.policy, &want))
		fail_msg("%s: the table's policy changed", what);
	if (st.slots != slots)
		fail_msg("%s: %llu slots, wanted %llu", what,
			 (unsigned long long)st.slots,
			 (unsigned long long)slots);
	k_now = peek(t, "k", now);
	tkt_assert_decision(what, &k_now, k_before);
	tkshm_close(t);
	snprintf(pattern, sizeof pattern, "%s.*", path);
	if (glob(pattern, 0, NULL, &g) != GLOB_NOMATCH)
		fail_msg("%s: a file was left beside the table: %s", what,
			 g.gl_pathv[0]);
}

/* The tool refuses argv: exit `status`, `why` on stderr, nothing on
 * stdout. */
static void
expect_refused(const char *const argv[], int status, const char *why)
{
	struct tkt_proc p;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, status, why);
	tkt_expect_contains(p.err, "tkshm-inspect: ", why);
	tkt_expect_contains(p.err, why, argv[1]);
	if (p.out_len != 0)
		fail_msg("%s: a refusal printed on stdout: %s", why, p.out);
	tkt_proc_free(&p);
}

#define REFUSED(status, why, ...)                                       \
	expect_refused((const char *const[]){ BIN, __VA_ARGS__, NULL }, \
		       (status), (why))

/* Runs the tool with --json appended (exit 0 expected): its object. */
static cJSON *
run_json(const char *const argv[], const char *what)
{
	struct tkt_proc p;
	cJSON *j;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, what);
	j = tkt_parse_json(p.out, what);
	tkt_proc_free(&p);
	return j;
}

#define RUN_JSON(what, ...)                                                 \
	run_json((const char *const[]){ BIN, __VA_ARGS__, "--json", NULL }, \
		 (what))

/* --- plan ---------------------------------------------------------------- */

static void
test_plan_changes_nothing(void **state)
{
	const char *path = tkt_path("plan.tk");
	tkshm_table *t = table_with_k(path, GCRA20, 64, 20);
	tkshm_decision k_before = peek(t, "k", T0 + DAY / 2);
	struct tkt_proc p;
	cJSON *j;

	(void)state;
	RUN(&p, "plan", path, "--policy", GCRA40);
	tkt_expect_status(&p, 0, "plan");
	tkt_expect_contains(p.out, path, "plan");
	tkt_expect_contains(p.out, "limit 20 -> 40", "plan");
	tkt_expect_contains(p.out, "states kept", "plan");
	tkt_proc_free(&p);

	j = RUN_JSON("plan --slots", "plan", path, "--slots", "256");
	assert_string_equal(tkt_str_at(j, "kind"), "replace");
	assert_true(tkt_bool_at(j, "statesKept"));
	tkt_expect_num(j, "slotsBefore", 64, "plan --slots");
	tkt_expect_num(j, "slotsAfter", 256, "plan --slots");
	/* No --policy: the table's own, as create prints it. */
	assert_string_equal(tkt_str_at(j, "policy"), GCRA20 ",burst=20");
	cJSON_Delete(j);

	RUN(&p, "plan", path, "--policy", SLIDING20);
	tkt_expect_status(&p, 0, "plan kind");
	tkt_expect_contains(p.out, "keys start afresh", "plan kind");
	tkt_proc_free(&p);

	/* Nothing applied: not through the handle opened before... */
	{
		tkshm_decision k_now = peek(t, "k", T0 + DAY / 2);

		tkt_assert_decision("plan: k through the old handle", &k_now,
				    &k_before);
	}
	/* ...nor through a new one: half a day refilled 10 of 20. */
	assert_int_equal(k_before.remaining, 10);
	expect_untouched(path, GCRA20, 64, &k_before, T0 + DAY / 2, "plan");
	tkshm_close(t);
	unlink(path);
}

/* --- apply --------------------------------------------------------------- */

/* gcra keeps a key's TAT, a debt of time (docs/lifecycle.md): k spent the
 * whole burst of 20, so it owes a day; under 40 a day a day is the whole
 * new burst, paid back at one unit per 2.16e6 ms.  Half a day later k has
 * 20, not the 40 of a key starting afresh (nor the 10 of the old policy). */
static void
test_apply_in_place_gcra(void **state)
{
	const char *path = tkt_path("gcra.tk");
	tkshm_table *t = table_with_k(path, GCRA20, 64, 20);
	tkshm_policy raised = tkt_policy(GCRA40);
	tkshm_table *u;
	tkshm_stats st;
	cJSON *j;

	(void)state;
	j = RUN_JSON("apply", "apply", path, "--policy", GCRA40);
	assert_string_equal(tkt_str_at(j, "kind"), "in_place");
	assert_true(tkt_bool_at(j, "statesKept"));
	tkt_expect_num(j, "slotsBefore", 64, "apply");
	tkt_expect_num(j, "slotsAfter", 64, "apply");
	assert_string_equal(tkt_str_at(j, "policy"), GCRA40 ",burst=40");
	tkt_expect_contains(tkt_str_at(j, "text"), "limit 20 -> 40, ", "apply");
	cJSON_Delete(j);

	/* The handle opened before follows, as every attached process. */
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_true(tkshm_policy_equal(&st.policy, &raised));
	assert_int_equal(peek(t, "k", T0).remaining, 0);
	assert_int_equal(peek(t, "k", T0).limit, 40);
	u = tkt_file(path, GCRA40, 0);
	assert_int_equal(peek(u, "k", T0 + DAY / 2).remaining, 20);
	assert_int_equal(admit(t, "k", 100, T0 + DAY / 2), 20);
	assert_int_equal(admit(u, "k", 100, T0 + DAY / 2), 0);
	tkshm_close(u);
	tkshm_close(t);
	unlink(path);
}

/* A window keeps its count: 20 of 20 spent under 40 leaves 20, not 40. */
static void
test_apply_in_place_window(void **state)
{
	const char *path = tkt_path("window.tk");
	tkshm_table *t = table_with_k(path, WINDOW20, 64, 20);
	struct tkt_proc p;

	(void)state;
	assert_int_equal(peek(t, "k", T0).remaining, 0);
	RUN(&p, "apply", path, "--policy", WINDOW40);
	tkt_expect_status(&p, 0, "apply window");
	tkt_expect_contains(p.out, "limit 20 -> 40, states kept",
			    "apply window");
	tkt_proc_free(&p);
	assert_int_equal(peek(t, "k", T0).remaining, 20);
	assert_int_equal(admit(t, "k", 100, T0), 20);
	tkshm_close(t);
	unlink(path);
}

/* gcra -> tokenBucket converts: k spent 3 of 5 (one unit per 2e7 ms), so
 * the bucket holds 2 and 3 one unit's time later; a key starting afresh
 * would have 5.  The tool converts at the clock's now: spent then. */
static void
test_apply_kind_change_keeps_debt(void **state)
{
	const char *path = tkt_path("kind.tk");
	const char *bucket = "tokenBucket:capacity=5,refillPerSec=0.00005";
	const double now = tkshm_now_ms();
	tkshm_table *t;
	tkshm_policy want = tkt_policy(bucket);
	tkshm_table *u;
	tkshm_stats st;
	cJSON *j;

	(void)state;
	unlink(path);
	t = tkt_file(path, "gcra:limit=5,periodMs=100000000", 64);
	assert_int_equal(admit(t, "k", 3, now), 3);
	j = RUN_JSON("apply kind", "apply", path, "--policy", bucket);
	assert_string_equal(tkt_str_at(j, "kind"), "replace");
	assert_true(tkt_bool_at(j, "statesKept"));
	tkt_expect_contains(tkt_str_at(j, "text"), "kind gcra -> tokenBucket",
			    "apply kind");
	tkt_expect_contains(tkt_str_at(j, "text"), "states carried over",
			    "apply kind");
	cJSON_Delete(j);

	u = tkt_file(path, bucket, 0);
	assert_rc(tkshm_stats_get(u, &st), TKSHM_OK);
	assert_true(tkshm_policy_equal(&st.policy, &want));
	assert_int_equal(peek(u, "k", now).remaining, 2);
	assert_int_equal(peek(t, "k", now).remaining, 2);
	/* A unit's time later, and a little more: the conversion ran a
	 * moment after `now`, so exactly 2e7 can round just below 3. */
	assert_int_equal(peek(u, "k", now + 2e7 + 1000).remaining, 3);
	assert_int_equal(admit(t, "k", 100, now), 2);
	assert_int_equal(admit(u, "k", 100, now), 0);
	tkshm_close(u);
	tkshm_close(t);
	unlink(path);
}

/* --- resize -------------------------------------------------------------- */

#define RESIZE_KEYS 1000

/* Key i spent 1 + i % 7 of 20 at T0: every one is live, each with its own
 * remaining.  Checked key by key through the library's entries. */
static void
expect_every_key(tkshm_table *t, const char *what)
{
	char key[32];

	for (int i = 0; i < RESIZE_KEYS; i++) {
		tkshm_entry e;

		snprintf(key, sizeof key, "key-%d", i);
		assert_rc(tkshm_entry_get_at(t, key, strlen(key), T0, &e),
			  TKSHM_OK);
		if (!e.state_valid || e.idle ||
		    e.peek.remaining != 20 - (1 + i % 7))
			fail_msg("%s: %s has %lld left (valid %d, idle %d), "
				 "wanted %d",
				 what, key, (long long)e.peek.remaining,
				 e.state_valid, e.idle, 20 - (1 + i % 7));
	}
}

static void
test_resize_keeps_every_key(void **state)
{
	const char *path = tkt_path("resize.tk");
	tkshm_table *t, *u;
	tkshm_stats st;
	tkshm_usage use;
	struct tkt_proc p;
	char key[32];

	(void)state;
	unlink(path);
	/* A quarter full: a key finds its probe window full (and one is
	 * evicted) too rarely to show. */
	t = tkt_file(path, GCRA20, 4096);
	for (int i = 0; i < RESIZE_KEYS; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		assert_int_equal(admit(t, key, 1 + i % 7, T0), 1 + i % 7);
	}
	/* Every key in the table before (none evicted for want of room). */
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.evictions, 0);
	expect_every_key(t, "before resize");

	RUN(&p, "resize", path, "--slots", "16384");
	tkt_expect_status(&p, 0, "resize");
	tkt_expect_contains(p.out, "slots 4096 -> 16384", "resize");
	tkt_expect_contains(p.out, "states carried over", "resize");
	tkt_proc_free(&p);

	u = tkt_file(path, GCRA20, 0);
	assert_rc(tkshm_stats_get(u, &st), TKSHM_OK);
	assert_int_equal(st.slots, 16384);
	expect_every_key(u, "resized, a new handle");
	expect_every_key(t, "resized, the handle from before");
	assert_rc(tkshm_usage_get(u, T0, &use), TKSHM_OK);
	assert_int_equal(use.live, RESIZE_KEYS);
	tkshm_close(u);
	tkshm_close(t);
	unlink(path);
}

/* Fewer slots: refused by resize, by apply (its policy not applied
 * either) and by plan; the table as it was. */
static void
test_shrink_refused(void **state)
{
	const char *path = tkt_path("shrink.tk");
	tkshm_table *t = table_with_k(path, GCRA20, 256, 5);
	tkshm_decision k_before = peek(t, "k", T0);
	struct tkt_proc p;

	(void)state;
	REFUSED(2, "a table does not shrink", "resize", path, "--slots", "64");
	REFUSED(2, "256 slots, more than the 64 asked", "apply", path,
		"--policy", GCRA40, "--slots", "64");
	REFUSED(2, "a table does not shrink", "plan", path, "--slots", "8");
	expect_untouched(path, GCRA20, 256, &k_before, T0, "shrink");
	/* 200 rounds up to the table's 256: no shrink, no change. */
	RUN(&p, "resize", path, "--slots", "200");
	tkt_expect_status(&p, 0, "resize to its own size");
	tkt_expect_contains(p.out, "unchanged", "resize to its own size");
	tkt_proc_free(&p);
	expect_untouched(path, GCRA20, 256, &k_before, T0, "same size");
	tkshm_close(t);
	unlink(path);
}

/* --- bad input ----------------------------------------------------------- */

static void
expect_bad_command_lines(const char *path)
{
	REFUSED(2, "--slots must be at least 1", "resize", path, "--slots",
		"0");
	REFUSED(2, "'many' is not a non-negative integer", "resize", path,
		"--slots", "many");
	REFUSED(2, "'1e3' is not a non-negative integer", "apply", path,
		"--slots", "1e3");
	REFUSED(2, "more than a table can hold", "resize", path, "--slots",
		"1099511627776");
	REFUSED(2, "missing --slots N", "resize", path);
	REFUSED(2, "unknown option '--policy'", "resize", path, "--policy",
		GCRA40, "--slots", "512");
	REFUSED(2, "give --policy SPEC, --slots N or both", "apply", path);
	REFUSED(2, "give --policy SPEC, --slots N or both", "plan", path);
	REFUSED(2, "--policy 'gcra:limit=-1,periodMs=1000'", "apply", path,
		"--policy", "gcra:limit=-1,periodMs=1000");
	REFUSED(2, "--policy 'bogus:limit=1'", "plan", path, "--policy",
		"bogus:limit=1");
	REFUSED(2, "extra operand '" GCRA40 "'", "apply", path, GCRA40);
	REFUSED(2, "missing PATH", "apply", "--policy", GCRA40);
}

static void
test_bad_input_changes_nothing(void **state)
{
	const char *path = tkt_path("bad.tk");
	const char *junk = tkt_path("junk.txt");
	const char *missing = tkt_path("missing.tk");
	tkshm_table *t = table_with_k(path, GCRA20, 64, 5);
	tkshm_decision k_before = peek(t, "k", T0);
	FILE *f;
	char *text, *junk_before;
	size_t len, junk_len;

	(void)state;
	expect_bad_command_lines(path);
	expect_untouched(path, GCRA20, 64, &k_before, T0, "bad input");

	/* Larger than a table header, so that its magic is what is wrong. */
	f = fopen(junk, "w");
	assert_non_null(f);
	for (int i = 0; i < 4096; i++)
		fputs("not a table\n", f);
	fclose(f);
	junk_before = tkt_read_file(junk, &junk_len);
	REFUSED(3, "not a tkshm table", "apply", junk, "--policy", GCRA40);
	REFUSED(3, "not a tkshm table", "resize", junk, "--slots", "128");
	REFUSED(3, "not a tkshm table", "plan", junk, "--slots", "128");
	text = tkt_read_file(junk, &len);
	assert_int_equal(len, junk_len);
	assert_memory_equal(text, junk_before, len);
	free(text);
	free(junk_before);

	/* A typo must not leave a new table behind. */
	REFUSED(3, "does not exist", "apply", missing, "--policy", GCRA40);
	REFUSED(3, "does not exist", "resize", missing, "--slots", "128");
	REFUSED(3, "does not exist", "plan", missing, "--policy", GCRA40);
	assert_int_equal(access(missing, F_OK), -1);

	tkshm_close(t);
	unlink(path);
	unlink(junk);
}

/* replay --table attaches with TKSHM_O_KEEP: another policy or size is
 * refused, never applied to the live table as an open would apply it. */
static void
test_replay_never_changes_a_table(void **state)
{
	const char *path = tkt_path("replay.tk");
	tkshm_table *t = table_with_k(path, GCRA20, 64, 5);
	tkshm_decision k_before = peek(t, "k", T0);
	struct tkt_proc p;

	(void)state;
	tkt_run(&p,
		(const char *const[]){ BIN, "replay", "--policy", GCRA40,
				       "--table", path, NULL },
		"1000000000000 k 1\n");
	tkt_expect_status(&p, 3, "replay, another policy");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_EMISMATCH),
			    "replay, another policy");
	tkt_proc_free(&p);
	tkt_run(&p,
		(const char *const[]){ BIN, "replay", "--policy", GCRA20,
				       "--table", path, "--slots", "1024",
				       NULL },
		"1000000000000 k 1\n");
	tkt_expect_status(&p, 3, "replay, more slots");
	tkt_proc_free(&p);
	expect_untouched(path, GCRA20, 64, &k_before, T0, "replay");
	tkshm_close(t);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_changes_nothing),
		cmocka_unit_test(test_apply_in_place_gcra),
		cmocka_unit_test(test_apply_in_place_window),
		cmocka_unit_test(test_apply_kind_change_keeps_debt),
		cmocka_unit_test(test_resize_keeps_every_key),
		cmocka_unit_test(test_shrink_refused),
		cmocka_unit_test(test_bad_input_changes_nothing),
		cmocka_unit_test(test_replay_never_changes_a_table),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
