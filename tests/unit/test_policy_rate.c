/*
 * test_policy_rate.c - rate strings ("10/second", "100 per minute",
 * "5/min,burst=10"): read by tkshm_policy_parse as GCRA policies
 * (src/api/policy_rate.h), written back by tkshm_policy_format in the
 * canonical form, and refused with a sentence for every mistake.
 */
#include <stdio.h>
#include <string.h>

#include "test_support.h"

static tkshm_policy
poisoned(void)
{
	tkshm_policy p;

	memset(&p, 0x5A, sizeof p);
	return p;
}

/* spec parses to gcra {limit, period, burst} and formats as `canon`. */
static void
assert_rate(const char *spec, double limit, double period, double burst,
	    const char *canon)
{
	tkshm_policy p = poisoned();
	char err[160] = "", buf[TKSHM_POLICY_MAX];

	if (tkshm_policy_parse(spec, &p, err, sizeof err) != TKSHM_OK)
		fail_msg("\"%s\" refused: %s", spec, err);
	assert_int_equal(p.kind, TKSHM_KIND_GCRA);
	if (p.u.gcra.limit != limit || p.u.gcra.period_ms != period ||
	    p.u.gcra.burst != burst)
		fail_msg("\"%s\": {%.17g, %.17g, %.17g}", spec, p.u.gcra.limit,
			 p.u.gcra.period_ms, p.u.gcra.burst);
	assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
	assert_string_equal(buf, canon);
}

/* spec is refused with EPOLICY, a sentence holding `says`, *out kept. */
static void
assert_refused(const char *spec, const char *says)
{
	tkshm_policy p = poisoned(), before = p;
	char err[160] = "";

	assert_int_equal(tkshm_policy_parse(spec, &p, err, sizeof err),
			 TKSHM_EPOLICY);
	if (!strstr(err, says))
		fail_msg("\"%s\": \"%s\" does not say \"%s\"", spec, err, says);
	assert_memory_equal(&p, &before, sizeof p);
}

static void
test_rate_forms(void **state)
{
	(void)state;
	assert_rate("10/second", 10, 1000, 10,
		    "gcra:limit=10,periodMs=1000,burst=10");
	assert_rate("100 per minute", 100, 60000, 100,
		    "gcra:limit=100,periodMs=60000,burst=100");
	assert_rate("5/min", 5, 60000, 5,
		    "gcra:limit=5,periodMs=60000,burst=5");
	assert_rate(" 3 PER Hour ", 3, 3600000, 3,
		    "gcra:limit=3,periodMs=3600000,burst=3");
	assert_rate("10 / 5 minutes", 10, 300000, 10,
		    "gcra:limit=10,periodMs=300000,burst=10");
	assert_rate("10/5min", 10, 300000, 10,
		    "gcra:limit=10,periodMs=300000,burst=10");
	assert_rate("5/ms", 5, 1, 5, "gcra:limit=5,periodMs=1,burst=5");
	assert_rate("2/d", 2, 86400000, 2,
		    "gcra:limit=2,periodMs=86400000,burst=2");
	/* A month and a year as the `limits` library counts them. */
	assert_rate("1000/month", 1000, 2592000000.0, 1000,
		    "gcra:limit=1000,periodMs=2592000000,burst=1000");
	assert_rate("1/year", 1, 31104000000.0, 1,
		    "gcra:limit=1,periodMs=31104000000,burst=1");
	assert_rate("10/0.5s", 10, 500, 10,
		    "gcra:limit=10,periodMs=500,burst=10");
}

static void
test_rate_burst(void **state)
{
	(void)state;
	assert_rate("5/min,burst=10", 5, 60000, 10,
		    "gcra:limit=5,periodMs=60000,burst=10");
	assert_rate("10/sec, burst = 20", 10, 1000, 20,
		    "gcra:limit=10,periodMs=1000,burst=20");
	assert_rate("10/second,burst=1", 10, 1000, 1,
		    "gcra:limit=10,periodMs=1000,burst=1");
	assert_refused("10/second,burst=0", "burst");
	assert_refused("10/second,burst=", "burst needs a number");
	assert_refused("10/second,bursts=3", "only \"burst=N\"");
	/* limits' list of rates is not one policy. */
	assert_refused("10/second,100/minute", "several rates");
	assert_refused("10/second;100/minute", "");
}

/* The cross-host part after ';' is the policy string's own. */
static void
test_rate_cross_host(void **state)
{
	tkshm_policy p = poisoned();
	char err[160] = "";

	(void)state;
	assert_int_equal(tkshm_policy_parse("20 per second;mode=strict,"
					    "prefix=api",
					    &p, err, sizeof err),
			 TKSHM_OK);
	assert_int_equal(p.global.mode, TKSHM_MODE_STRICT);
	assert_string_equal(p.global.prefix, "api");
	assert_rate("10/second ;mode=local", 10, 1000, 10,
		    "gcra:limit=10,periodMs=1000,burst=10");
	assert_refused("10/second;mode=strict, prefix=a", "no whitespace");
	assert_refused("10/second;mode=bogus", "");
}

static void
test_rate_refused(void **state)
{
	(void)state;
	assert_refused("10/fortnight", "unknown unit \"fortnight\"");
	assert_refused("10 per", "unit is missing");
	assert_refused("10", "'/' or 'per'");
	assert_refused("10 second", "'/' or 'per'");
	assert_refused("0/second", "limit");
	assert_refused("-1/second", "kind");
	assert_refused("10/0s", "periodMs");
	assert_refused("010/second", "count");
	assert_refused("10./second", "count");
	assert_refused("10/second extra", "unexpected \"extra\"");
	assert_refused("10/second/2", "unexpected");
	assert_refused("1e400/second", "count");
	/* A kind's name never starts with a digit, so nothing else changes:
	 * canonical strings keep their strict grammar. */
	assert_refused("gcra:limit=10, periodMs=1000", "no whitespace");
}

/* Every policy a rate string gives formats canonically and parses back
 * equal (tkshm_policy_format's contract). */
static void
test_rate_round_trip(void **state)
{
	const char *specs[] = { "7/second", "100 per 3 hours,burst=250", "1/ms",
				"9 per day;mode=strict,prefix=x" };
	char buf[TKSHM_POLICY_MAX], err[160];
	tkshm_policy p, back;

	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		assert_int_equal(
			tkshm_policy_parse(specs[i], &p, err, sizeof err),
			TKSHM_OK);
		assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
		assert_int_equal(
			tkshm_policy_parse(buf, &back, err, sizeof err),
			TKSHM_OK);
		assert_true(tkshm_policy_equal(&p, &back));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_forms),
		cmocka_unit_test(test_rate_burst),
		cmocka_unit_test(test_rate_cross_host),
		cmocka_unit_test(test_rate_refused),
		cmocka_unit_test(test_rate_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
