/*
 * test_policy.c - policy strings, constructors, validation and equality.
 *
 * The policy string is the one format shared by the API, tkshm-inspect and
 * the bindings, so the parser must refuse everything ThrottleKit's option
 * validation would (shared/notes/throttlekit-semantics.md section 2.1) and
 * the formatter must round-trip every valid policy bit for bit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"

/* A byte pattern no parser would write, to see that *out stays unchanged. */
static tkshm_policy
poisoned(void)
{
	tkshm_policy p;

	memset(&p, 0x5A, sizeof p);
	return p;
}

static bool
same_bits(double a, double b)
{
	return memcmp(&a, &b, sizeof a) == 0;
}

static void
assert_gcra(const tkshm_policy *p, double limit, double period, double burst)
{
	assert_int_equal(p->kind, TKSHM_KIND_GCRA);
	if (!same_bits(p->u.gcra.limit, limit) ||
	    !same_bits(p->u.gcra.period_ms, period) ||
	    !same_bits(p->u.gcra.burst, burst))
		fail_msg("policy {%.17g, %.17g, %.17g}, want {%.17g, %.17g, "
			 "%.17g}",
			 p->u.gcra.limit, p->u.gcra.period_ms, p->u.gcra.burst,
			 limit, period, burst);
}

/* ------------------------------------------------------------------------
 * Parsing: accepted forms
 * ---------------------------------------------------------------------- */

static void
test_parse_basic(void **state)
{
	tkshm_policy p = poisoned();
	char err[128] = "untouched";

	(void)state;
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000,burst=5", &p,
				     err, sizeof err),
		  TKSHM_OK);
	assert_gcra(&p, 10, 1000, 5);
	/* Without an error buffer, too. */
	p = poisoned();
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000,burst=5", &p,
				     NULL, 0),
		  TKSHM_OK);
	assert_gcra(&p, 10, 1000, 5);
}

static void
test_parse_whitespace_and_order(void **state)
{
	static const char *specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"  gcra:limit=10,periodMs=1000,burst=5  ",
		"gcra : limit = 10 , periodMs = 1000 , burst = 5",
		"gcra:\tlimit=10,\n periodMs=1000,\r\nburst=5\t",
		"gcra:burst=5,periodMs=1000,limit=10",
		"gcra:periodMs=1000 ,burst= 5, limit =10",
		"gcra:limit=1e1,periodMs=1.0e3,burst=5.0",
		"gcra:limit=+10,periodMs=1000.,burst=0.5e1",
		"gcra:limit=10.000,periodMs=01000,burst=5",
	};

	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		tkshm_policy p = poisoned();
		char err[128] = "";
		int rc = tkshm_policy_parse(specs[i], &p, err, sizeof err);

		if (rc != TKSHM_OK)
			fail_msg("\"%s\" refused: %s (%s)", specs[i],
				 tkshm_error_name(rc), err);
		assert_gcra(&p, 10, 1000, 5);
	}
}

/* ThrottleKit's default: burst = limit. */
static void
test_parse_burst_default(void **state)
{
	static const struct {
		const char *spec;
		double limit, period;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000", 10, 1000 },
		{ "gcra:periodMs=60000,limit=100", 100, 60000 },
		{ "gcra:limit=2.5,periodMs=1000", 2.5, 1000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_policy p = poisoned();

		assert_rc(tkshm_policy_parse(cases[i].spec, &p, NULL, 0),
			  TKSHM_OK);
		assert_gcra(&p, cases[i].limit, cases[i].period,
			    cases[i].limit);
	}
}

/* The exact decimal expansions of doubles parse to those doubles. */
static void
test_parse_exact_decimals(void **state)
{
	/* 0.1 as a double, written out in full. */
	static const char spec[] = "gcra:limit=0.1000000000000000055511151231"
				   "257827021181583404541015625,"
				   "periodMs=1000,burst=1.5";
	tkshm_policy p;

	(void)state;
	assert_rc(tkshm_policy_parse(spec, &p, NULL, 0), TKSHM_OK);
	assert_gcra(&p, 0.1, 1000, 1.5);
	assert_rc(tkshm_policy_parse("gcra:limit=0.33333333333333331,"
				     "periodMs=1,burst=1",
				     &p, NULL, 0),
		  TKSHM_OK);
	assert_gcra(&p, 1.0 / 3.0, 1, 1);
}

/* ------------------------------------------------------------------------
 * Parsing: refused forms
 * ---------------------------------------------------------------------- */

static const struct {
	const char *spec;
	const char *names; /* the error sentence must contain this */
} refused[] = {
	/* unknown kind; kind and option names are ThrottleKit's, exactly */
	{ "tokenBucket:capacity=10,refillPerSec=5", "tokenBucket" },
	{ "leaky:limit=10,periodMs=1000", "leaky" },
	{ "GCRA:limit=10,periodMs=1000", "GCRA" },
	{ ":limit=10,periodMs=1000", "kind" },
	{ "", "kind" },
	/* unknown option */
	{ "gcra:limit=10,periodMs=1000,foo=1", "foo" },
	{ "gcra:limit=10,periodms=1000", "periodms" },
	{ "gcra:limit=10,periodMs=1000,capacity=3", "capacity" },
	/* duplicate option */
	{ "gcra:limit=10,limit=10,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=1000,burst=5,burst=5", "burst" },
	{ "gcra:periodMs=1000,limit=10,periodMs=1000", "periodMs" },
	/* missing required option */
	{ "gcra:periodMs=1000", "limit" },
	{ "gcra:limit=10", "periodMs" },
	{ "gcra:burst=5", "limit" },
	{ "gcra", "limit" },
	{ "gcra:", "limit" },
	/* malformed numbers */
	{ "gcra:limit=1e,periodMs=1000", "limit" },
	{ "gcra:limit=abc,periodMs=1000", "limit" },
	{ "gcra:limit=nan,periodMs=1000", "limit" },
	{ "gcra:limit=NaN,periodMs=1000", "limit" },
	{ "gcra:limit=inf,periodMs=1000", "limit" },
	{ "gcra:limit=-inf,periodMs=1000", "limit" },
	{ "gcra:limit=infinity,periodMs=1000", "limit" },
	{ "gcra:limit=0x10,periodMs=1000", "limit" },
	{ "gcra:limit=,periodMs=1000", "limit" },
	{ "gcra:limit=  ,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=", "periodMs" },
	{ "gcra:limit=10,periodMs=1000,burst=", "burst" },
	{ "gcra:limit=10 5,periodMs=1000", "limit" },
	{ "gcra:limit=10;periodMs=1000", "limit" },
	{ "gcra:limit=1.2.3,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=1e999", "periodMs" },
	{ "gcra:limit=10ms,periodMs=1000", "limit" },
	{ "gcra:limit=--10,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=1_000", "periodMs" },
	/* structure */
	{ "gcra:limit=10,periodMs=1000,", "," },
	{ "gcra:limit=10,periodMs=1000, ", "," },
	{ "gcra:limit=10,,periodMs=1000", "" },
	{ "gcra:limit,periodMs=1000", "limit" },
	{ "gcra:=10,limit=10,periodMs=1000", "" },
	/* out of range */
	{ "gcra:limit=0,periodMs=1000", "limit" },
	{ "gcra:limit=-1,periodMs=1000", "limit" },
	{ "gcra:limit=-0,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=0", "periodMs" },
	{ "gcra:limit=10,periodMs=-1000", "periodMs" },
	{ "gcra:limit=10,periodMs=1000,burst=0", "burst" },
	{ "gcra:limit=10,periodMs=1000,burst=0.999", "burst" },
	{ "gcra:limit=10,periodMs=1000,burst=-5", "burst" },
	{ "gcra:limit=0.5,periodMs=1000", "burst" }, /* default burst < 1 */
	/* emission intervals that would make a field non-finite */
	{ "gcra:limit=1e300,periodMs=1e-10,burst=1", "periodMs" },
	{ "gcra:limit=1e308,periodMs=1e-300,burst=1", "periodMs" },
	{ "gcra:limit=1e-300,periodMs=1e300,burst=1", "periodMs" },
	{ "gcra:limit=1,periodMs=1e300,burst=1", "periodMs" },
	{ "gcra:limit=1,periodMs=1e200,burst=1e200", "" },
};

static void
test_parse_refuses(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		tkshm_policy p = poisoned(), before = p;
		char err[256];
		int rc;

		memset(err, 0, sizeof err);
		rc = tkshm_policy_parse(refused[i].spec, &p, err, sizeof err);
		if (rc != TKSHM_EPOLICY)
			fail_msg("\"%s\": %s, wanted TKSHM_EPOLICY",
				 refused[i].spec, tkshm_error_name(rc));
		if (err[0] == '\0')
			fail_msg("\"%s\": no error sentence", refused[i].spec);
		if (!strstr(err, refused[i].names))
			fail_msg("\"%s\": error \"%s\" does not name \"%s\"",
				 refused[i].spec, err, refused[i].names);
		if (memcmp(&p, &before, sizeof p) != 0)
			fail_msg("\"%s\": *out changed on error",
				 refused[i].spec);
		/* No error buffer: same code, nothing written anywhere. */
		assert_rc(tkshm_policy_parse(refused[i].spec, &p, NULL, 0),
			  TKSHM_EPOLICY);
		assert_memory_equal(&p, &before, sizeof p);
	}
}

/* A short error buffer gets a terminated prefix and nothing past it. */
static void
test_parse_short_error_buffer(void **state)
{
	char buf[16];
	tkshm_policy p;

	(void)state;
	memset(buf, 'X', sizeof buf);
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000,frobnicate=1",
				     &p, buf, 8),
		  TKSHM_EPOLICY);
	assert_true(memchr(buf, '\0', 8) != NULL);
	for (size_t i = 8; i < sizeof buf; i++)
		assert_int_equal(buf[i], 'X');
	/* err_len 0 writes nothing. */
	memset(buf, 'X', sizeof buf);
	assert_rc(tkshm_policy_parse("bogus", &p, buf, 0), TKSHM_EPOLICY);
	for (size_t i = 0; i < sizeof buf; i++)
		assert_int_equal(buf[i], 'X');
}

static void
test_parse_null(void **state)
{
	tkshm_policy p = poisoned(), before = p;

	(void)state;
	assert_rc(tkshm_policy_parse(NULL, &p, NULL, 0), TKSHM_ENULL);
	assert_memory_equal(&p, &before, sizeof p);
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000", NULL, NULL,
				     0),
		  TKSHM_ENULL);
}

/* ------------------------------------------------------------------------
 * Formatting
 * ---------------------------------------------------------------------- */

/* parse(format(p)) == p, bit for bit. */
static void
assert_round_trip(const tkshm_policy *p)
{
	char buf[256];
	tkshm_policy q = poisoned();
	char err[128] = "";
	int n = tkshm_policy_format(p, buf, sizeof buf);

	if (n < 0)
		fail_msg("format {%.17g, %.17g, %.17g}: %s", p->u.gcra.limit,
			 p->u.gcra.period_ms, p->u.gcra.burst,
			 tkshm_error_name(n));
	assert_int_equal((size_t)n, strlen(buf));
	assert_true(strncmp(buf, "gcra:", 5) == 0);
	if (tkshm_policy_parse(buf, &q, err, sizeof err) != TKSHM_OK)
		fail_msg("\"%s\" does not parse back: %s", buf, err);
	if (!tkshm_policy_equal(p, &q))
		fail_msg("\"%s\" parses to {%.17g, %.17g, %.17g}, not {%.17g, "
			 "%.17g, %.17g}",
			 buf, q.u.gcra.limit, q.u.gcra.period_ms,
			 q.u.gcra.burst, p->u.gcra.limit, p->u.gcra.period_ms,
			 p->u.gcra.burst);
	assert_gcra(&q, p->u.gcra.limit, p->u.gcra.period_ms, p->u.gcra.burst);
}

static void
test_format_round_trip(void **state)
{
	static const double triples[][3] = {
		{ 10, 1000, 5 },
		{ 0.1, 1000, 1 },
		{ 1.0 / 3.0, 1000.0 / 3.0, 1.0 + 1.0 / 3.0 },
		{ 0.3, 0.7, 1.1 },
		{ 1e-5, 1e9, 1 },
		{ 123456789.123456789, 98765.4321, 2.718281828459045 },
		{ 9007199254740991.0, 9007199254740993.0, 4503599627370497.0 },
		{ 1e15, 1e18, 1e3 },
		{ 1e-200, 1e-190, 1e5 },
	};
	uint64_t r = 0x243F6A8885A308D3u;
	unsigned tripped = 0;

	(void)state;
	for (size_t i = 0; i < sizeof triples / sizeof triples[0]; i++) {
		tkshm_policy p;
		int rc = tkshm_policy_gcra(&p, triples[i][0], triples[i][1],
					   triples[i][2]);

		if (rc != TKSHM_OK)
			continue; /* out of range: covered elsewhere */
		assert_round_trip(&p);
	}
	/* nextafter neighbours of round numbers need all 17 digits. */
	{
		tkshm_policy p;
		assert_rc(tkshm_policy_gcra(&p, nextafter(10, 11),
					    nextafter(1000, 0),
					    nextafter(1, 2)),
			  TKSHM_OK);
		assert_round_trip(&p);
	}
	/* Random doubles over many magnitudes, every mantissa bit random. */
	for (int i = 0; i < 20000; i++) {
		double v[3];
		tkshm_policy p;

		for (int k = 0; k < 3; k++) {
			uint64_t bits;
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			/* exponent within 2^-30 .. 2^33, mantissa random */
			bits = (r & ((UINT64_C(1) << 52) - 1)) |
			       (uint64_t)(1023 - 30 + (r >> 58)) << 52;
			memcpy(&v[k], &bits, sizeof v[k]);
		}
		if (v[2] < 1)
			v[2] += 1;
		if (tkshm_policy_gcra(&p, v[0], v[1], v[2]) != TKSHM_OK)
			continue;
		assert_round_trip(&p);
		tripped++;
	}
	/* The generator stays in the valid range almost always. */
	assert_true(tripped > 19000);
}

/*
 * A subnormal parameter is valid (finite and > 0, ThrottleKit's
 * requirePositive) as long as T stays in range, e.g. a subnormal limit with
 * a tiny period.  Its canonical string must parse back like any other.
 */
static void
test_format_round_trip_subnormal_param(void **state)
{
	tkshm_policy p;

	(void)state;
	assert_rc(tkshm_policy_gcra(&p, 1e-314, 1e-300, 1), TKSHM_OK);
	assert_round_trip(&p);
}

static void
test_format_contract(void **state)
{
	tkshm_policy p, bad;
	char buf[256], small[8];
	int n;

	(void)state;
	assert_rc(tkshm_policy_gcra(&p, 10, 1000, 5), TKSHM_OK);
	n = tkshm_policy_format(&p, buf, sizeof buf);
	assert_true(n > 0);
	assert_non_null(strstr(buf, "limit=10"));
	assert_non_null(strstr(buf, "periodMs=1000"));
	assert_non_null(strstr(buf, "burst=5"));
	/* Exactly enough room: n + 1 bytes. */
	assert_int_equal(tkshm_policy_format(&p, buf, (size_t)n + 1), n);
	/* One byte short: TKSHM_EINVAL and a terminated prefix. */
	memset(small, 'X', sizeof small);
	assert_rc(tkshm_policy_format(&p, small, sizeof small), TKSHM_EINVAL);
	assert_true(memchr(small, '\0', sizeof small) != NULL);
	assert_rc(tkshm_policy_format(&p, buf, (size_t)n), TKSHM_EINVAL);
	assert_int_equal(strlen(buf), (size_t)n - 1);
	assert_rc(tkshm_policy_format(&p, buf, 0), TKSHM_EINVAL);
	assert_rc(tkshm_policy_format(NULL, buf, sizeof buf), TKSHM_ENULL);
	assert_rc(tkshm_policy_format(&p, NULL, sizeof buf), TKSHM_ENULL);
	/* An invalid policy built by hand is refused. */
	bad = p;
	bad.u.gcra.limit = -1;
	assert_rc(tkshm_policy_format(&bad, buf, sizeof buf), TKSHM_EPOLICY);
	bad = p;
	bad.kind = (tkshm_kind)99;
	assert_rc(tkshm_policy_format(&bad, buf, sizeof buf), TKSHM_EPOLICY);
}

/* ------------------------------------------------------------------------
 * Constructor and validation
 * ---------------------------------------------------------------------- */

static void
test_policy_gcra(void **state)
{
	static const double refused_args[][3] = {
		{ NAN, 1000, 5 },	{ INFINITY, 1000, 5 },
		{ -INFINITY, 1000, 5 }, { 0, 1000, 5 },
		{ -0.0, 1000, 5 },	{ -10, 1000, 5 },
		{ 10, NAN, 5 },		{ 10, INFINITY, 5 },
		{ 10, 0, 5 },		{ 10, -1000, 5 },
		{ 10, 1000, NAN },	{ 10, 1000, INFINITY },
		{ 10, 1000, 0.5 },	{ 10, 1000, -1 },
		{ 0.5, 1000, 0 },     /* default burst = limit < 1 */
		{ 1e300, 1e-10, 1 },  /* T subnormal */
		{ 1e-300, 1e300, 1 }, /* T infinite */
		{ 1, 1e300, 1 },      /* T * (2^53-1) overflows */
		{ 1, 1e200, 1e200 },  /* tau huge */
		{ 1, DBL_MAX, 1 },
	};
	tkshm_policy p = poisoned();

	(void)state;
	assert_rc(tkshm_policy_gcra(&p, 10, 1000, 5), TKSHM_OK);
	assert_gcra(&p, 10, 1000, 5);
	assert_rc(tkshm_policy_gcra(&p, 10, 1000, 0), TKSHM_OK);
	assert_gcra(&p, 10, 1000, 10);
	assert_rc(tkshm_policy_gcra(&p, 0.25, 1000, 1), TKSHM_OK);
	assert_gcra(&p, 0.25, 1000, 1);
	assert_rc(tkshm_policy_validate(&p, NULL, 0), TKSHM_OK);
	/* T at the smallest normal double is still fine. */
	assert_rc(tkshm_policy_gcra(&p, 1, DBL_MIN * 4, 1), TKSHM_OK);

	for (size_t i = 0; i < sizeof refused_args / sizeof refused_args[0];
	     i++) {
		tkshm_policy q = poisoned(), before = q;
		int rc = tkshm_policy_gcra(&q, refused_args[i][0],
					   refused_args[i][1],
					   refused_args[i][2]);

		if (rc != TKSHM_EPOLICY)
			fail_msg("gcra(%g, %g, %g): %s, wanted TKSHM_EPOLICY",
				 refused_args[i][0], refused_args[i][1],
				 refused_args[i][2], tkshm_error_name(rc));
		assert_memory_equal(&q, &before, sizeof q);
	}
	assert_rc(tkshm_policy_gcra(NULL, 10, 1000, 5), TKSHM_ENULL);
}

/* A policy built by hand is validated with a sentence naming the field. */
static void
test_policy_validate(void **state)
{
	tkshm_policy p;
	char err[256];

	(void)state;
	assert_rc(tkshm_policy_validate(NULL, err, sizeof err), TKSHM_ENULL);
	memset(&p, 0, sizeof p);
	p.kind = TKSHM_KIND_GCRA;
	p.u.gcra.limit = 10;
	p.u.gcra.period_ms = 1000;
	p.u.gcra.burst = 5;
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_OK);

	p.u.gcra.burst = 0; /* only the constructor reads 0 as "= limit" */
	err[0] = '\0';
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
	assert_non_null(strstr(err, "burst"));
	p.u.gcra.burst = 5;

	p.u.gcra.period_ms = NAN;
	err[0] = '\0';
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
	assert_non_null(strstr(err, "periodMs"));
	p.u.gcra.period_ms = 1000;

	p.u.gcra.limit = -3;
	err[0] = '\0';
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
	assert_non_null(strstr(err, "limit"));
	assert_rc(tkshm_policy_validate(&p, NULL, 0), TKSHM_EPOLICY);
	p.u.gcra.limit = 10;

	p.kind = (tkshm_kind)0;
	err[0] = '\0';
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
	assert_true(err[0] != '\0');
	p.kind = (tkshm_kind)42;
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
}

/* ------------------------------------------------------------------------
 * Equality
 * ---------------------------------------------------------------------- */

static void
test_policy_equal(void **state)
{
	tkshm_policy a, b;

	(void)state;
	assert_rc(tkshm_policy_gcra(&a, 10, 1000, 5), TKSHM_OK);
	b = tkt_policy("gcra:limit=10,periodMs=1000,burst=5");
	assert_true(tkshm_policy_equal(&a, &b));
	assert_true(tkshm_policy_equal(&b, &a));
	assert_true(tkshm_policy_equal(&a, &a));
	/* The default burst is the same policy as the explicit one. */
	b = tkt_policy("gcra:limit=10,periodMs=1000");
	assert_rc(tkshm_policy_gcra(&a, 10, 1000, 10), TKSHM_OK);
	assert_true(tkshm_policy_equal(&a, &b));

	/* Each parameter on its own, down to one ulp. */
	assert_rc(tkshm_policy_gcra(&a, 10, 1000, 5), TKSHM_OK);
	b = a;
	b.u.gcra.limit = nextafter(10, 11);
	assert_false(tkshm_policy_equal(&a, &b));
	b = a;
	b.u.gcra.period_ms = nextafter(1000, 0);
	assert_false(tkshm_policy_equal(&a, &b));
	b = a;
	b.u.gcra.burst = 6;
	assert_false(tkshm_policy_equal(&a, &b));
	b = a;
	b.kind = (tkshm_kind)2;
	assert_false(tkshm_policy_equal(&a, &b));
	assert_false(tkshm_policy_equal(&a, NULL));
	assert_false(tkshm_policy_equal(NULL, &a));
	assert_false(tkshm_policy_equal(NULL, NULL));

	/* Bit-identical, not numerically equal: 0.0 and -0.0 differ. */
	a.u.gcra.burst = 0.0;
	b = a;
	b.u.gcra.burst = -0.0;
	assert_false(tkshm_policy_equal(&a, &b));

	/* Bytes of the union that are not GCRA parameters do not count. */
	assert_rc(tkshm_policy_gcra(&a, 10, 1000, 5), TKSHM_OK);
	b = a;
	b.u.reserved[10] = 42;
	b.u.reserved[15] = -1;
	assert_true(tkshm_policy_equal(&a, &b));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_basic),
		cmocka_unit_test(test_parse_whitespace_and_order),
		cmocka_unit_test(test_parse_burst_default),
		cmocka_unit_test(test_parse_exact_decimals),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_parse_short_error_buffer),
		cmocka_unit_test(test_parse_null),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_format_round_trip_subnormal_param),
		cmocka_unit_test(test_format_contract),
		cmocka_unit_test(test_policy_gcra),
		cmocka_unit_test(test_policy_validate),
		cmocka_unit_test(test_policy_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
