/*
 * test_inspect_lifecycle.c - drives the built tkshm-inspect through `plan`,
 * `apply` and `resize` (docs/lifecycle.md).  Tables are filled through the
 * library at a made-up time, and what the tool changed (or did not) is read
 * back through the library at that time.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN
#define RUN(p, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, NULL)

#define T0     1.0e12
#define WINDOW "fixedWindow:limit=20,windowMs=86400000"
#define RAISED "fixedWindow:limit=40,windowMs=86400000"

static int
admit(tkshm_table *t, const char *key, int n)
{
	int got = 0;

	for (int i = 0; i < n; i++) {
		tkshm_decision d;

		assert_rc(tkshm_check_at(t, key, strlen(key), 1, T0, &d),
			  TKSHM_OK);
		if (!d.allowed)
			break;
		got++;
	}
	return got;
}

/* A table of `spec` and `slots` with `keys` keys, key i having spent
 * i % 7 units.  The caller closes it. */
static tkshm_table *
filled(const char *path, const char *spec, uint64_t slots, int keys)
{
	tkshm_table *t;
	char key[32];

	unlink(path);
	t = tkt_file(path, spec, slots);
	for (int i = 0; i < keys; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		assert_int_equal(admit(t, key, i % 7), i % 7);
	}
	return t;
}

static void
test_plan_changes_nothing(void **state)
{
	const char *path = tkt_path("plan.tk");
	tkshm_table *t = filled(path, WINDOW, 64, 5);
	struct tkt_proc p;
	tkshm_stats st;

	(void)state;
	RUN(&p, "plan", path, "--policy", RAISED);
	tkt_expect_status(&p, 0, "plan");
	tkt_expect_contains(p.out, "limit 20 -> 40, states kept", "plan");
	tkt_proc_free(&p);
	RUN(&p, "plan", path, "--slots", "4096", "--json");
	tkt_expect_status(&p, 0, "plan --slots");
	tkt_expect_contains(p.out, "\"kind\": \"replace\"", "plan --slots");
	tkt_proc_free(&p);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.slots, 64);
	{
		tkshm_policy want = tkt_policy(WINDOW);

		assert_true(tkshm_policy_equal(&st.policy, &want));
	}
	/* key-4 spent 4 of 20: 16 left, so nothing was applied. */
	assert_int_equal(admit(t, "key-4", 100), 16);
	tkshm_close(t);
	unlink(path);
}

static void
test_apply_in_place(void **state)
{
	const char *path = tkt_path("apply.tk");
	tkshm_table *t = filled(path, WINDOW, 64, 0);
	struct tkt_proc p;

	(void)state;
	assert_int_equal(admit(t, "k", 100), 20);
	RUN(&p, "apply", path, "--policy", RAISED);
	tkt_expect_status(&p, 0, "apply");
	tkt_expect_contains(p.out, "limit 20 -> 40, states kept", "apply");
	tkt_proc_free(&p);
	/* The handle opened before follows: 20 more, not 40. */
	assert_int_equal(admit(t, "k", 100), 20);
	tkshm_close(t);
	unlink(path);
}

static void
test_apply_kind_change_keeps_debt(void **state)
{
	const char *path = tkt_path("kind.tk");
	tkshm_table *t;
	struct tkt_proc p;

	(void)state;
	unlink(path);
	t = tkt_file(path, "gcra:limit=5,periodMs=100000000", 64);
	assert_int_equal(admit(t, "k", 3), 3);
	RUN(&p, "apply", path, "--policy",
	    "tokenBucket:capacity=5,refillPerSec=0.00005");
	tkt_expect_status(&p, 0, "apply kind");
	tkt_expect_contains(p.out, "states carried over", "apply kind");
	tkt_proc_free(&p);
	assert_int_equal(admit(t, "k", 100), 2);
	tkshm_close(t);
	unlink(path);
}

static void
test_resize_keeps_every_key(void **state)
{
	const char *path = tkt_path("resize.tk");
	tkshm_table *t = filled(path, WINDOW, 2048, 1000);
	tkshm_table *u;
	struct tkt_proc p;
	tkshm_stats st;
	char key[32];

	(void)state;
	RUN(&p, "resize", path, "--slots", "8192");
	tkt_expect_status(&p, 0, "resize");
	tkt_expect_contains(p.out, "slots 2048 -> 8192", "resize");
	tkt_proc_free(&p);
	u = tkt_file(path, WINDOW, 0);
	assert_rc(tkshm_stats_get(u, &st), TKSHM_OK);
	assert_int_equal(st.slots, 8192);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		assert_int_equal(admit(i % 2 ? t : u, key, 100), 20 - i % 7);
	}
	tkshm_close(u);
	tkshm_close(t);
	unlink(path);
}

static void
test_bad_input_changes_nothing(void **state)
{
	const char *path = tkt_path("bad.tk");
	const char *junk = tkt_path("junk.txt");
	tkshm_table *t = filled(path, WINDOW, 64, 0);
	struct tkt_proc p;
	FILE *f;

	(void)state;
	assert_int_equal(admit(t, "k", 5), 5);
	RUN(&p, "resize", path, "--slots", "8");
	tkt_expect_status(&p, 2, "shrink");
	tkt_expect_contains(p.err, "does not shrink", "shrink");
	tkt_proc_free(&p);
	RUN(&p, "resize", path, "--slots", "0");
	tkt_expect_status(&p, 2, "--slots 0");
	tkt_proc_free(&p);
	RUN(&p, "resize", path, "--slots", "many");
	tkt_expect_status(&p, 2, "--slots many");
	tkt_proc_free(&p);
	RUN(&p, "resize", path);
	tkt_expect_status(&p, 2, "no --slots");
	tkt_proc_free(&p);
	RUN(&p, "apply", path);
	tkt_expect_status(&p, 2, "nothing to apply");
	tkt_proc_free(&p);
	RUN(&p, "apply", path, "--policy", "gcra:limit=-1,periodMs=1000");
	tkt_expect_status(&p, 2, "bad policy");
	tkt_proc_free(&p);
	f = fopen(junk, "w");
	assert_non_null(f);
	fputs("not a table\n", f);
	fclose(f);
	RUN(&p, "apply", junk, "--policy", RAISED);
	tkt_expect_status(&p, 3, "not a table");
	tkt_proc_free(&p);
	/* Still 20 of policy WINDOW, 5 spent. */
	assert_int_equal(admit(t, "k", 100), 15);
	tkshm_close(t);
	unlink(path);
	unlink(junk);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_changes_nothing),
		cmocka_unit_test(test_apply_in_place),
		cmocka_unit_test(test_apply_kind_change_keeps_debt),
		cmocka_unit_test(test_resize_keeps_every_key),
		cmocka_unit_test(test_bad_input_changes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
