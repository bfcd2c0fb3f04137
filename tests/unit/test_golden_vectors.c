/*
 * test_golden_vectors.c - ThrottleKit's published GCRA vectors, replayed
 * through real tables.
 *
 * The vectors are the external oracle: every expected field comes from the
 * JSON file, none from this library.  Each rateLimit suite of kind "gcra" is
 * replayed op by op, comparing all five decision fields exactly, once with
 * `now` as given (starting at 0) and once with every `now` and expected
 * `resetAt` shifted by +1000 (the offset ThrottleKit's Redis replay uses).
 * Every suite starts cold: a new table, or a key no earlier suite used.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "algo_testing.h"

/* The file's documented shape (tests/data/README.md): 4 GCRA suites among
 * 9 rateLimit suites of 54 ops, plus tokenBudget and lease suites. */
#define GOLDEN_GCRA_SUITES	4
#define GOLDEN_RATELIMIT_SUITES 9
#define GOLDEN_RATELIMIT_OPS	54

static cJSON *golden;

static int
group_setup(void **state)
{
	(void)state;
	golden = tkt_golden();
	return golden ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	cJSON_Delete(golden);
	golden = NULL;
	tkt_cleanup();
	return 0;
}

static bool
is_gcra_suite(const cJSON *suite)
{
	return gv_is_ratelimit(suite, "gcra");
}

/* The suite's policy, built both ways the API offers (constructor and
 * policy string); they must agree bit for bit. */
static tkshm_policy
suite_policy(const cJSON *suite)
{
	const cJSON *opts = gv_member(gv_member(suite, "strategy"), "options");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(opts, "burst");
	double limit = gv_number(opts, "limit");
	double period = gv_number(opts, "periodMs");
	double burst = b ? gv_number(opts, "burst") : 0; /* 0: ThrottleKit's
							 default, = limit */
	tkshm_policy p, q;
	char spec[256];

	assert_rc(tkshm_policy_gcra(&p, limit, period, burst), TKSHM_OK);
	if (b)
		snprintf(spec, sizeof spec,
			 "gcra:limit=%.17g,periodMs=%.17g,burst=%.17g", limit,
			 period, burst);
	else
		snprintf(spec, sizeof spec, "gcra:limit=%.17g,periodMs=%.17g",
			 limit, period);
	q = tkt_policy(spec);
	assert_true(tkshm_policy_equal(&p, &q));
	return p;
}

static tkshm_table *
open_table(const char *path, const tkshm_policy *p)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc;

	o.policy = p;
	o.slots = 64;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_open(%s): %s (%s)", path ? path : "anonymous",
			 tkshm_error_name(rc), err);
	return t;
}

/*
 * Replays one suite on `key` of `t`, with `offset` added to every now and
 * expected resetAt.  With `reopen_path`, the handle is closed and the file
 * attached again before every op, so each decision is made from the state
 * the previous one left in the file.  Returns the number of ops checked.
 */
static unsigned
replay(tkshm_table **tp, const char *reopen_path, const cJSON *suite,
       const char *key, double offset)
{
	const cJSON *ops = gv_member(suite, "ops");
	const char *name = gv_member(suite, "name")->valuestring;
	tkshm_policy p = suite_policy(suite);
	const cJSON *op;
	unsigned n = 0;

	assert_true(cJSON_IsArray(ops));
	cJSON_ArrayForEach(op, ops)
	{
		double now = gv_number(op, "now") + offset;
		double cost = gv_number(op, "cost");
		tkshm_decision want = gv_expect(op, offset);
		tkshm_decision d;
		char what[192];

		if (reopen_path) {
			tkshm_close(*tp);
			*tp = open_table(reopen_path, &p);
		}
		memset(&d, 0xA5, sizeof d); /* every field must be written */
		assert_rc(tkshm_check_at(*tp, key, strlen(key), cost, now, &d),
			  TKSHM_OK);
		snprintf(what, sizeof what,
			 "%s op %u (now %.17g, cost %g, offset %g)", name, n,
			 now, cost, offset);
		tkt_assert_decision(what, &d, &want);
		if (d.flags != 0)
			fail_msg("%s: flags %#x, want 0", what, d.flags);
		n++;
	}
	return n;
}

/* The GCRA ops the file holds, counted from the file itself. */
static unsigned
golden_gcra_ops(void)
{
	const cJSON *suite;
	unsigned n = 0;

	cJSON_ArrayForEach(
		suite, gv_member(golden, "suites")) if (is_gcra_suite(suite))
		n += (unsigned)cJSON_GetArraySize(gv_member(suite, "ops"));
	return n;
}

/* A parse failure, a renamed field or an emptied file must not make the
 * replays below pass by checking nothing. */
static void
test_vectors_present(void **state)
{
	static const char *kinds[] = { "gcra", "tokenBucket", "fixedWindow",
				       "slidingWindow", "slidingWindowLog" };
	unsigned per_kind[5] = { 0 }, ratelimit = 0, ratelimit_ops = 0;
	unsigned token_budget = 0, lease = 0;
	const cJSON *suites = gv_member(golden, "suites");
	const cJSON *fields = gv_member(golden, "decisionFields");
	const cJSON *suite;

	(void)state;
	assert_true(cJSON_IsArray(suites));
	/* The five fields this test compares are the contract's fields. */
	assert_int_equal(cJSON_GetArraySize(fields), 5);
	cJSON_ArrayForEach(suite, suites)
	{
		const char *prim = gv_member(suite, "primitive")->valuestring;

		assert_non_null(prim);
		if (strcmp(prim, "rateLimit") == 0) {
			const char *kind =
				gv_member(gv_member(suite, "strategy"), "kind")
					->valuestring;
			unsigned k;

			for (k = 0; k < 5; k++)
				if (kind && strcmp(kind, kinds[k]) == 0)
					break;
			if (k == 5)
				fail_msg("unexpected rateLimit kind %s",
					 kind ? kind : "(null)");
			per_kind[k]++;
			ratelimit++;
			ratelimit_ops += (unsigned)cJSON_GetArraySize(
				gv_member(suite, "ops"));
			assert_string_equal(
				gv_member(suite, "key")->valuestring, "k");
		} else if (strcmp(prim, "tokenBudget") == 0) {
			token_budget++;
		} else if (strcmp(prim, "lease") == 0) {
			lease++;
		}
	}
	assert_int_equal(per_kind[0], GOLDEN_GCRA_SUITES);
	for (unsigned k = 1; k < 5; k++)
		if (per_kind[k] == 0)
			fail_msg("no %s suite: the file was not read whole",
				 kinds[k]);
	assert_int_equal(ratelimit, GOLDEN_RATELIMIT_SUITES);
	assert_int_equal(ratelimit_ops, GOLDEN_RATELIMIT_OPS);
	assert_true(token_budget > 0);
	assert_true(lease > 0);
	/* Every GCRA suite has ops to replay. */
	cJSON_ArrayForEach(suite, suites) if (is_gcra_suite(suite))
		assert_true(cJSON_GetArraySize(gv_member(suite, "ops")) > 0);
}

/* One new anonymous table per suite. */
static void
run_fresh_tables(double offset)
{
	const cJSON *suite;
	unsigned suites = 0, ops = 0;

	cJSON_ArrayForEach(suite, gv_member(golden, "suites"))
	{
		tkshm_policy p;
		tkshm_table *t;

		if (!is_gcra_suite(suite))
			continue;
		p = suite_policy(suite);
		t = open_table(NULL, &p);
		ops += replay(&t, NULL, suite, "k", offset);
		assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
		tkshm_close(t);
		suites++;
	}
	assert_int_equal(suites, GOLDEN_GCRA_SUITES);
	assert_int_equal(ops, golden_gcra_ops());
}

static void
test_gcra_as_given(void **state)
{
	(void)state;
	run_fresh_tables(0);
}

static void
test_gcra_offset_1000(void **state)
{
	(void)state;
	run_fresh_tables(1000);
}

/* Both replays in one table per suite, each on a key of its own: a cold
 * key must decide exactly as a cold table does, and one key's history must
 * not leak into another's. */
static void
test_gcra_distinct_keys_one_table(void **state)
{
	const cJSON *suite;
	unsigned ops = 0;

	(void)state;
	cJSON_ArrayForEach(suite, gv_member(golden, "suites"))
	{
		tkshm_policy p;
		tkshm_table *t;

		if (!is_gcra_suite(suite))
			continue;
		p = suite_policy(suite);
		t = open_table(NULL, &p);
		ops += replay(&t, NULL, suite, "k", 0);
		ops += replay(&t, NULL, suite, "k+1000", 1000);
		ops += replay(&t, NULL, suite, "another key", 0);
		assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
		tkshm_close(t);
	}
	assert_int_equal(ops, 3 * golden_gcra_ops());
}

/* A file-backed table, attached again before every op: the decisions must
 * come from the state stored in the file. */
static void
test_gcra_file_backed(void **state)
{
	const cJSON *suite;
	unsigned ops = 0, i = 0;

	(void)state;
	cJSON_ArrayForEach(suite, gv_member(golden, "suites"))
	{
		static const double offsets[] = { 0, 1000 };

		if (!is_gcra_suite(suite))
			continue;
		for (unsigned o = 0; o < 2; o++) {
			tkshm_policy p = suite_policy(suite);
			char name[64];
			const char *path;
			tkshm_table *t;
			tkshm_stats s;

			snprintf(name, sizeof name, "golden-%u-%u.tk", i, o);
			path = tkt_path(name);
			t = open_table(path, &p);
			ops += replay(&t, path, suite, "k", offsets[o]);
			assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
			assert_false(s.anonymous);
			assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
			tkshm_close(t);
			assert_int_equal(unlink(path), 0);
		}
		i++;
	}
	assert_int_equal(i, GOLDEN_GCRA_SUITES);
	assert_int_equal(ops, 2 * golden_gcra_ops());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_present),
		cmocka_unit_test(test_gcra_as_given),
		cmocka_unit_test(test_gcra_offset_1000),
		cmocka_unit_test(test_gcra_distinct_keys_one_table),
		cmocka_unit_test(test_gcra_file_backed),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
