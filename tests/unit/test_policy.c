/*
 * test_policy.c - policy strings, constructors, validation and equality.
 *
 * The policy string is the one format shared by the API, tkshm-inspect and
 * the bindings, so the parser must refuse everything ThrottleKit's option
 * validation would (shared/notes/throttlekit-semantics.md section 2.1) and
 * the formatter must round-trip every valid policy bit for bit.  Every kind
 * is covered: ThrottleKit's kind and option names and defaults, canonical
 * strings, hand-built policies, equality, and the state size tk_algo_init
 * derives (src/algorithms/algorithm.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithm.h"
#include "api/validate.h"
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
	{ "leaky:limit=10,periodMs=1000", "leaky" },
	{ "leakyBucket:ratePerSec=10,maxQueueMs=100", "leakyBucket" },
	{ "tokenbucket:capacity=10,refillPerSec=5", "tokenbucket" },
	{ "sliding_window:limit=10,windowMs=1000", "sliding_window" },
	{ "slidingLog:limit=5,windowMs=1000", "slidingLog" },
	{ "Quota:limit=5,resetCadence=calendar-day", "Quota" },
	{ "GCRA:limit=10,periodMs=1000", "GCRA" },
	{ ":limit=10,periodMs=1000", "kind" },
	{ "", "kind" },
	/* unknown option */
	{ "gcra:limit=10,periodMs=1000,foo=1", "foo" },
	{ "gcra:limit=10,periodms=1000", "periodms" },
	{ "gcra:limit=10,periodMs=1000,capacity=3", "capacity" },
	{ "tokenBucket:capacity=10,refillPerSec=5,burst=3", "burst" },
	{ "tokenBucket:capacity=10,refillpersec=5", "refillpersec" },
	{ "fixedWindow:limit=5,windowMs=1000,buckets=2", "buckets" },
	{ "slidingWindow:limit=10,windowMs=1000,periodMs=1", "periodMs" },
	{ "slidingWindowLog:limit=5,windowMs=1000,buckets=10", "buckets" },
	{ "quota:limit=5,resetCadence=fixed,periodMs=1000,windowMs=1",
	  "windowMs" },
	{ "quota:limit=5,resetCadence=calendar-day,offsetMinute=60",
	  "offsetMinute" },
	{ "tokenBudget:budget=5,windowMs=1000,limit=5", "limit" },
	/* a cadence that is not one of ThrottleKit's words */
	{ "quota:limit=5,resetCadence=monthly", "resetCadence" },
	{ "quota:limit=5,resetCadence=monthly", "monthly" },
	{ "quota:limit=5,resetCadence=Calendar-Month", "resetCadence" },
	{ "quota:limit=5,resetCadence=calendar_month", "resetCadence" },
	{ "quota:limit=5,resetCadence=calendar-monthly", "resetCadence" },
	{ "quota:limit=5,resetCadence=calendar", "resetCadence" },
	{ "quota:limit=5,resetCadence=", "resetCadence" },
	{ "quota:limit=5,resetCadence=1", "resetCadence" },
	{ "quota:limit=5,resetCadence=5,periodMs=1000", "resetCadence" },
	{ "quota:limit=5,resetCadence=fixed rolling,periodMs=1",
	  "resetCadence" },
	/* duplicate option */
	{ "gcra:limit=10,limit=10,periodMs=1000", "limit" },
	{ "gcra:limit=10,periodMs=1000,burst=5,burst=5", "burst" },
	{ "gcra:periodMs=1000,limit=10,periodMs=1000", "periodMs" },
	{ "quota:limit=5,resetCadence=fixed,resetCadence=fixed,periodMs=1",
	  "resetCadence" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=10,buckets=10",
	  "buckets" },
	/* missing required option */
	{ "gcra:periodMs=1000", "limit" },
	{ "gcra:limit=10", "periodMs" },
	{ "gcra:burst=5", "limit" },
	{ "gcra", "limit" },
	{ "gcra:", "limit" },
	{ "tokenBucket:capacity=10", "refillPerSec" },
	{ "tokenBucket:refillPerSec=5", "capacity" },
	{ "tokenBucket", "capacity" },
	{ "fixedWindow:limit=5", "windowMs" },
	{ "fixedWindow:windowMs=1000", "limit" },
	{ "slidingWindow:limit=10,buckets=10", "windowMs" },
	{ "slidingWindow:windowMs=1000", "limit" },
	{ "slidingWindowLog:limit=5", "windowMs" },
	{ "slidingWindowLog:windowMs=1000", "limit" },
	{ "quota:limit=5", "resetCadence" },
	{ "quota:resetCadence=calendar-month", "limit" },
	{ "quota:limit=5,resetCadence=fixed", "needs option periodMs" },
	{ "quota:limit=5,resetCadence=rolling", "needs option periodMs" },
	{ "quota:limit=5,resetCadence=rolling,buckets=10",
	  "needs option periodMs" },
	{ "quota:limit=5,resetCadence=fixed,anchor=250",
	  "needs option periodMs" },
	{ "tokenBudget:budget=100", "windowMs" },
	{ "tokenBudget:windowMs=60000", "budget" },
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
	{ "tokenBucket:capacity=ten,refillPerSec=5", "capacity" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=ten", "buckets" },
	{ "quota:limit=5,resetCadence=calendar-day,offsetMinutes=+5h",
	  "offsetMinutes" },
	{ "quota:limit=5,resetCadence=calendar-week,weekStartsOn=monday",
	  "weekStartsOn" },
	{ "tokenBudget:budget=1e999,windowMs=1000", "budget" },
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
	{ "tokenBucket:capacity=0,refillPerSec=5", "capacity" },
	{ "tokenBucket:capacity=10,refillPerSec=-1", "refillPerSec" },
	{ "tokenBucket:capacity=10,refillPerSec=0", "refillPerSec" },
	{ "fixedWindow:limit=-5,windowMs=1000", "limit" },
	{ "fixedWindow:limit=5,windowMs=0", "windowMs" },
	{ "slidingWindow:limit=0,windowMs=1000", "limit" },
	{ "slidingWindow:limit=10,windowMs=-1", "windowMs" },
	{ "slidingWindowLog:limit=0,windowMs=1000", "limit" },
	{ "slidingWindowLog:limit=5,windowMs=0", "windowMs" },
	{ "quota:limit=0,resetCadence=calendar-day", "limit" },
	{ "quota:limit=5,resetCadence=fixed,periodMs=0", "periodMs" },
	{ "quota:limit=5,resetCadence=rolling,periodMs=-1", "periodMs" },
	{ "tokenBudget:budget=0.5,windowMs=1000", "budget" },
	{ "tokenBudget:budget=0,windowMs=1000", "budget" },
	{ "tokenBudget:budget=100,windowMs=0", "windowMs" },
	/* sliding window buckets: an integer 1..64 */
	{ "slidingWindow:limit=10,windowMs=1000,buckets=0", "buckets" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=65", "buckets" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=-1", "buckets" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=2.5", "buckets" },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=10.000001", "buckets" },
	{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=0",
	  "buckets" },
	{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=65",
	  "buckets" },
	{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=1.5",
	  "buckets" },
	/* sliding log: at most 128 per table (one timestamp per unit) */
	{ "slidingWindowLog:limit=129,windowMs=1000", "limit" },
	{ "slidingWindowLog:limit=128.5,windowMs=1000", "limit" },
	{ "slidingWindowLog:limit=1e6,windowMs=1000", "limit" },
	/* quota calendar options, validated by every cadence but rolling */
	{ "quota:limit=5,resetCadence=calendar-month,offsetMinutes=841",
	  "offsetMinutes" },
	{ "quota:limit=5,resetCadence=calendar-day,offsetMinutes=-841",
	  "offsetMinutes" },
	{ "quota:limit=5,resetCadence=calendar-week,offsetMinutes=30.5",
	  "offsetMinutes" },
	{ "quota:limit=5,resetCadence=fixed,periodMs=1000,offsetMinutes=900",
	  "offsetMinutes" },
	{ "quota:limit=5,resetCadence=calendar-week,weekStartsOn=7",
	  "weekStartsOn" },
	{ "quota:limit=5,resetCadence=calendar-month,weekStartsOn=7",
	  "weekStartsOn" },
	{ "quota:limit=5,resetCadence=calendar-week,weekStartsOn=-1",
	  "weekStartsOn" },
	{ "quota:limit=5,resetCadence=calendar-week,weekStartsOn=0.5",
	  "weekStartsOn" },
	{ "quota:limit=5,resetCadence=fixed,periodMs=1000,anchor=0.5",
	  "anchor" },
	{ "quota:limit=5,resetCadence=calendar-day,anchor=0.5", "anchor" },
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

/* ------------------------------------------------------------------------
 * Every kind: ThrottleKit's options, defaults, formatting, validation
 * ---------------------------------------------------------------------- */

/* The parameters of p's kind, read through the named members, in the
 * order of tkshm.h; returns how many.  Unknown kind: 0. */
static size_t
params_of(const tkshm_policy *p, double v[9])
{
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		v[0] = p->u.gcra.limit;
		v[1] = p->u.gcra.period_ms;
		v[2] = p->u.gcra.burst;
		return 3;
	case TKSHM_KIND_TOKEN_BUCKET:
		v[0] = p->u.token_bucket.capacity;
		v[1] = p->u.token_bucket.refill_per_sec;
		return 2;
	case TKSHM_KIND_FIXED_WINDOW:
		v[0] = p->u.fixed_window.limit;
		v[1] = p->u.fixed_window.window_ms;
		return 2;
	case TKSHM_KIND_SLIDING_WINDOW:
		v[0] = p->u.sliding_window.limit;
		v[1] = p->u.sliding_window.window_ms;
		v[2] = p->u.sliding_window.buckets;
		return 3;
	case TKSHM_KIND_SLIDING_LOG:
		v[0] = p->u.sliding_log.limit;
		v[1] = p->u.sliding_log.window_ms;
		return 2;
	case TKSHM_KIND_QUOTA:
		v[0] = p->u.quota.limit;
		v[1] = p->u.quota.reset_cadence;
		v[2] = p->u.quota.offset_minutes;
		v[3] = p->u.quota.week_starts_on;
		v[4] = p->u.quota.period_ms;
		v[5] = p->u.quota.anchor;
		v[6] = p->u.quota.buckets;
		return 7;
	case TKSHM_KIND_TOKEN_BUDGET:
		v[0] = p->u.token_budget.budget;
		v[1] = p->u.token_budget.window_ms;
		return 2;
	case TKSHM_KIND_LEAKY_BUCKET:
		v[0] = p->u.leaky_bucket.rate_per_sec;
		v[1] = p->u.leaky_bucket.max_queue_ms;
		return 2;
	case TKSHM_KIND_CONCURRENCY:
		v[0] = p->u.concurrency.limit;
		return 1;
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		v[0] = p->u.adaptive.algorithm;
		v[1] = p->u.adaptive.initial_limit;
		v[2] = p->u.adaptive.min_limit;
		v[3] = p->u.adaptive.max_limit;
		v[4] = p->u.adaptive.smoothing;
		v[5] = p->u.adaptive.tolerance;
		v[6] = p->u.adaptive.rtt_window_ms;
		v[7] = p->u.adaptive.backoff_ratio;
		v[8] = p->u.adaptive.timeout_ms;
		return 9;
	}
	return 0;
}

/* Each member is its parameters and nothing else (no padding), so
 * u.reserved[i] is parameter i: the equality tests below rely on it. */
static void
test_policy_layout(void **state)
{
	tkshm_policy p;

	(void)state;
	assert_int_equal(sizeof p.u, 16 * sizeof(double));
	assert_int_equal(sizeof p.u.gcra, 3 * sizeof(double));
	assert_int_equal(sizeof p.u.token_bucket, 2 * sizeof(double));
	assert_int_equal(sizeof p.u.fixed_window, 2 * sizeof(double));
	assert_int_equal(sizeof p.u.sliding_window, 3 * sizeof(double));
	assert_int_equal(sizeof p.u.sliding_log, 2 * sizeof(double));
	assert_int_equal(sizeof p.u.quota, 7 * sizeof(double));
	assert_int_equal(sizeof p.u.token_budget, 2 * sizeof(double));
	assert_int_equal(offsetof(tkshm_policy, u.quota.buckets),
			 offsetof(tkshm_policy, u.reserved[6]));
	/* The public constants and cadence values. */
	assert_int_equal(TKSHM_SLIDING_LOG_MAX_LIMIT, 128);
	assert_int_equal(TKSHM_SLIDING_WINDOW_MAX_BUCKETS, 64);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_MONTH, 1);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_WEEK, 2);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_DAY, 3);
	assert_int_equal(TKSHM_QUOTA_FIXED, 4);
	assert_int_equal(TKSHM_QUOTA_ROLLING, 5);
}

static void
assert_params(const char *what, const tkshm_policy *p, tkshm_kind kind,
	      const double *want)
{
	double v[9];
	size_t n;

	if (p->kind != kind)
		fail_msg("%s: kind %d, want %d", what, (int)p->kind, (int)kind);
	n = params_of(p, v);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++)
		if (!same_bits(v[i], want[i]))
			fail_msg("%s: parameter %zu is %.17g, want %.17g", what,
				 i, v[i], want[i]);
}

#define MONTH TKSHM_QUOTA_CALENDAR_MONTH
#define WEEK  TKSHM_QUOTA_CALENDAR_WEEK
#define DAY   TKSHM_QUOTA_CALENDAR_DAY
#define FIXED TKSHM_QUOTA_FIXED
#define ROLL  TKSHM_QUOTA_ROLLING

/* Accepted strings and every parameter they give, defaults included
 * (quota: limit, cadence, offsetMinutes, weekStartsOn, periodMs, anchor,
 * buckets; an absent periodMs is 0). */
static const struct {
	const char *spec;
	tkshm_kind kind;
	double v[9];
} accepted[] = {
	/* ThrottleKit's golden-vector strategies, as policy strings */
	{ "gcra:limit=10,periodMs=1000,burst=5",
	  TKSHM_KIND_GCRA,
	  { 10, 1000, 5 } },
	{ "tokenBucket:capacity=10,refillPerSec=5",
	  TKSHM_KIND_TOKEN_BUCKET,
	  { 10, 5 } },
	{ "tokenBucket:capacity=7,refillPerSec=3",
	  TKSHM_KIND_TOKEN_BUCKET,
	  { 7, 3 } },
	{ "fixedWindow:limit=5,windowMs=1000",
	  TKSHM_KIND_FIXED_WINDOW,
	  { 5, 1000 } },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=10",
	  TKSHM_KIND_SLIDING_WINDOW,
	  { 10, 1000, 10 } },
	{ "slidingWindowLog:limit=5,windowMs=1000",
	  TKSHM_KIND_SLIDING_LOG,
	  { 5, 1000 } },
	{ "tokenBudget:budget=5,windowMs=60000",
	  TKSHM_KIND_TOKEN_BUDGET,
	  { 5, 60000 } },
	{ "tokenBudget:budget=100,windowMs=60000",
	  TKSHM_KIND_TOKEN_BUDGET,
	  { 100, 60000 } },
	/* ThrottleKit's quota examples and cadences */
	{ "quota:limit=1000000,resetCadence=calendar-month,offsetMinutes=330",
	  TKSHM_KIND_QUOTA,
	  { 1000000, MONTH, 330, 1, 0, 0, 10 } },
	{ "quota:limit=1000000,resetCadence=calendar-month",
	  TKSHM_KIND_QUOTA,
	  { 1000000, MONTH, 0, 1, 0, 0, 10 } },
	{ "quota:limit=500,resetCadence=calendar-week,weekStartsOn=0",
	  TKSHM_KIND_QUOTA,
	  { 500, WEEK, 0, 0, 0, 0, 10 } },
	{ "quota:limit=500,resetCadence=calendar-week,offsetMinutes=-300,"
	  "weekStartsOn=6",
	  TKSHM_KIND_QUOTA,
	  { 500, WEEK, -300, 6, 0, 0, 10 } },
	{ "quota:limit=50,resetCadence=calendar-day,offsetMinutes=-840",
	  TKSHM_KIND_QUOTA,
	  { 50, DAY, -840, 1, 0, 0, 10 } },
	{ "quota:limit=3,resetCadence=fixed,periodMs=1000,anchor=250",
	  TKSHM_KIND_QUOTA,
	  { 3, FIXED, 0, 1, 1000, 250, 10 } },
	{ "quota:limit=3,resetCadence=fixed,periodMs=3600000",
	  TKSHM_KIND_QUOTA,
	  { 3, FIXED, 0, 1, 3600000, 0, 10 } },
	{ "quota:limit=10,resetCadence=rolling,periodMs=1000,buckets=10",
	  TKSHM_KIND_QUOTA,
	  { 10, ROLL, 0, 1, 1000, 0, 10 } },
	{ "quota:limit=100,resetCadence=rolling,periodMs=3600000,buckets=64",
	  TKSHM_KIND_QUOTA,
	  { 100, ROLL, 0, 1, 3600000, 0, 64 } },
	/* any order, whitespace, the limits themselves */
	{ " quota : resetCadence = calendar-day , limit = 7 ",
	  TKSHM_KIND_QUOTA,
	  { 7, DAY, 0, 1, 0, 0, 10 } },
	{ "quota:limit=7,resetCadence=calendar-week,offsetMinutes=840,"
	  "weekStartsOn=0",
	  TKSHM_KIND_QUOTA,
	  { 7, WEEK, 840, 0, 0, 0, 10 } },
	{ "tokenBucket:refillPerSec=0.5,capacity=2.5",
	  TKSHM_KIND_TOKEN_BUCKET,
	  { 2.5, 0.5 } },
	{ "slidingWindow:buckets=1,windowMs=60000,limit=100",
	  TKSHM_KIND_SLIDING_WINDOW,
	  { 100, 60000, 1 } },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=64",
	  TKSHM_KIND_SLIDING_WINDOW,
	  { 10, 1000, 64 } },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=6.4e1",
	  TKSHM_KIND_SLIDING_WINDOW,
	  { 10, 1000, 64 } },
	{ "slidingWindowLog:limit=128,windowMs=1000",
	  TKSHM_KIND_SLIDING_LOG,
	  { 128, 1000 } },
	{ "slidingWindowLog:limit=2.5,windowMs=0.5",
	  TKSHM_KIND_SLIDING_LOG,
	  { 2.5, 0.5 } },
	{ "tokenBudget:budget=1,windowMs=1",
	  TKSHM_KIND_TOKEN_BUDGET,
	  { 1, 1 } },
	{ "tokenBudget:budget=99.9,windowMs=1000",
	  TKSHM_KIND_TOKEN_BUDGET,
	  { 99.9, 1000 } },
};

static void
test_parse_every_kind(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
		tkshm_policy p = poisoned();
		char err[256] = "";
		int rc = tkshm_policy_parse(accepted[i].spec, &p, err,
					    sizeof err);

		if (rc != TKSHM_OK)
			fail_msg("\"%s\" refused: %s (%s)", accepted[i].spec,
				 tkshm_error_name(rc), err);
		assert_params(accepted[i].spec, &p, accepted[i].kind,
			      accepted[i].v);
		assert_rc(tkshm_policy_validate(&p, NULL, 0), TKSHM_OK);
	}
}

/* ThrottleKit's defaults: buckets 10; quota offsetMinutes 0, weekStartsOn
 * 1 (Monday), anchor 0, buckets 10. */
static void
test_parse_defaults(void **state)
{
	tkshm_policy p = poisoned();

	(void)state;
	assert_rc(tkshm_policy_parse("slidingWindow:limit=10,windowMs=1000", &p,
				     NULL, 0),
		  TKSHM_OK);
	assert_int_equal(p.kind, TKSHM_KIND_SLIDING_WINDOW);
	assert_true(same_bits(p.u.sliding_window.limit, 10));
	assert_true(same_bits(p.u.sliding_window.window_ms, 1000));
	assert_true(same_bits(p.u.sliding_window.buckets, 10));

	p = poisoned();
	assert_rc(tkshm_policy_parse("quota:limit=9,resetCadence=fixed,"
				     "periodMs=60000",
				     &p, NULL, 0),
		  TKSHM_OK);
	assert_true(same_bits(p.u.quota.reset_cadence, TKSHM_QUOTA_FIXED));
	assert_true(same_bits(p.u.quota.offset_minutes, 0));
	assert_true(same_bits(p.u.quota.week_starts_on, 1));
	assert_true(same_bits(p.u.quota.period_ms, 60000));
	assert_true(same_bits(p.u.quota.anchor, 0));
	assert_true(same_bits(p.u.quota.buckets, 10));

	p = poisoned();
	assert_rc(tkshm_policy_parse("quota:limit=9,resetCadence=rolling,"
				     "periodMs=60000",
				     &p, NULL, 0),
		  TKSHM_OK);
	assert_true(same_bits(p.u.quota.reset_cadence, TKSHM_QUOTA_ROLLING));
	assert_true(same_bits(p.u.quota.buckets, 10));

	/* A calendar cadence needs no periodMs (it stays 0). */
	p = poisoned();
	assert_rc(tkshm_policy_parse("quota:limit=9,resetCadence=calendar-week",
				     &p, NULL, 0),
		  TKSHM_OK);
	assert_true(same_bits(p.u.quota.week_starts_on, 1));
	assert_true(same_bits(p.u.quota.offset_minutes, 0));
	assert_true(same_bits(p.u.quota.period_ms, 0));
}

/*
 * Options a cadence does not read are accepted and ignored, as ThrottleKit
 * ignores them: periodMs and buckets under a calendar cadence, buckets
 * under fixed, and under rolling even the calendar options (ThrottleKit's
 * rolling quota returns slidingWindow() before looking at them).
 */
static void
test_parse_quota_ignored_options(void **state)
{
	static const struct {
		const char *spec, *same_as;
	} cases[] = {
		{ "quota:limit=5,resetCadence=calendar-month,periodMs=5000,"
		  "buckets=0,anchor=7,weekStartsOn=3",
		  "quota:limit=5,resetCadence=calendar-month" },
		{ "quota:limit=5,resetCadence=calendar-day,periodMs=-1",
		  "quota:limit=5,resetCadence=calendar-day" },
		{ "quota:limit=5,resetCadence=calendar-week,buckets=65,"
		  "anchor=9",
		  "quota:limit=5,resetCadence=calendar-week" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000,buckets=0,"
		  "offsetMinutes=60,weekStartsOn=0",
		  "quota:limit=5,resetCadence=fixed,periodMs=1000" },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000,"
		  "offsetMinutes=841,weekStartsOn=7,anchor=0.5",
		  "quota:limit=5,resetCadence=rolling,periodMs=1000" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_policy p, q;
		char err[256] = "";
		int rc = tkshm_policy_parse(cases[i].spec, &p, err, sizeof err);

		if (rc != TKSHM_OK)
			fail_msg("\"%s\" refused: %s (%s)", cases[i].spec,
				 tkshm_error_name(rc), err);
		q = tkt_policy(cases[i].same_as);
		if (!tkshm_policy_equal(&p, &q) || !tkshm_policy_equal(&q, &p))
			fail_msg("\"%s\" is not equal to \"%s\"", cases[i].spec,
				 cases[i].same_as);
	}
}

/* The unknown-kind sentence lists the kinds there are. */
static void
test_parse_unknown_kind_lists_kinds(void **state)
{
	static const char *kinds[] = {
		"gcra",		 "tokenBucket",	     "fixedWindow",
		"slidingWindow", "slidingWindowLog", "quota",
		"tokenBudget",
	};
	tkshm_policy p;
	char err[512] = "";

	(void)state;
	assert_rc(tkshm_policy_parse("leakyBucket:ratePerSec=1", &p, err,
				     sizeof err),
		  TKSHM_EPOLICY);
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strstr(err, kinds[i]))
			fail_msg("\"%s\" does not list %s", err, kinds[i]);
}

/* parse(format(p)) == p, for any kind: equal, and bit for bit in every
 * parameter the kind reads. */
static void
assert_round_trip_any(const tkshm_policy *p)
{
	char buf[TKSHM_POLICY_MAX];
	tkshm_policy q = poisoned();
	char err[256] = "";
	int n = tkshm_policy_format(p, buf, sizeof buf);

	if (n < 0)
		fail_msg("format of kind %d: %s", (int)p->kind,
			 tkshm_error_name(n));
	assert_int_equal((size_t)n, strlen(buf));
	if (tkshm_policy_parse(buf, &q, err, sizeof err) != TKSHM_OK)
		fail_msg("\"%s\" does not parse back: %s", buf, err);
	if (!tkshm_policy_equal(p, &q) || !tkshm_policy_equal(&q, p))
		fail_msg("\"%s\" parses to a different policy", buf);
	if (p->kind != TKSHM_KIND_QUOTA) {
		double v[9];

		params_of(p, v);
		assert_params(buf, &q, p->kind, v);
	}
}

static void
test_format_every_kind(void **state)
{
	static const struct {
		const char *spec, *canonical;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000",
		  "gcra:limit=10,periodMs=1000,burst=10" },
		{ "tokenBucket:refillPerSec=5,capacity=10",
		  "tokenBucket:capacity=10,refillPerSec=5" },
		{ "tokenBucket:capacity=7,refillPerSec=0.1",
		  "tokenBucket:capacity=7,refillPerSec=0.1" },
		{ "fixedWindow:windowMs=1000,limit=5",
		  "fixedWindow:limit=5,windowMs=1000" },
		{ "slidingWindow:limit=10,windowMs=1000",
		  "slidingWindow:limit=10,windowMs=1000,buckets=10" },
		{ "slidingWindow:limit=10,windowMs=1000,buckets=1",
		  "slidingWindow:limit=10,windowMs=1000,buckets=1" },
		{ "slidingWindowLog:windowMs=1000,limit=5",
		  "slidingWindowLog:limit=5,windowMs=1000" },
		{ "quota:limit=1000000,resetCadence=calendar-month,"
		  "offsetMinutes=330",
		  "quota:limit=1000000,resetCadence=calendar-month,"
		  "offsetMinutes=330" },
		{ "quota:resetCadence=calendar-month,limit=1000000",
		  "quota:limit=1000000,resetCadence=calendar-month,"
		  "offsetMinutes=0" },
		{ "quota:limit=5,resetCadence=calendar-week",
		  "quota:limit=5,resetCadence=calendar-week,offsetMinutes=0,"
		  "weekStartsOn=1" },
		{ "quota:limit=5,resetCadence=calendar-day,offsetMinutes=-300,"
		  "weekStartsOn=3,periodMs=5,anchor=7,buckets=0",
		  "quota:limit=5,resetCadence=calendar-day,"
		  "offsetMinutes=-300" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000",
		  "quota:limit=5,resetCadence=fixed,periodMs=1000,anchor=0" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000,anchor=-250",
		  "quota:limit=5,resetCadence=fixed,periodMs=1000,"
		  "anchor=-250" },
		{ "quota:limit=5,resetCadence=rolling,periodMs=60000",
		  "quota:limit=5,resetCadence=rolling,periodMs=60000,"
		  "buckets=10" },
		{ "tokenBudget:windowMs=60000,budget=100",
		  "tokenBudget:budget=100,windowMs=60000" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_policy p = tkt_policy(cases[i].spec);
		char buf[TKSHM_POLICY_MAX];
		int n = tkshm_policy_format(&p, buf, sizeof buf);

		assert_true(n > 0);
		if (strcmp(buf, cases[i].canonical) != 0)
			fail_msg("\"%s\" formats as \"%s\", want \"%s\"",
				 cases[i].spec, buf, cases[i].canonical);
		assert_round_trip_any(&p);
	}
	for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
		tkshm_policy p = tkt_policy(accepted[i].spec), q;
		char buf[TKSHM_POLICY_MAX];

		assert_round_trip_any(&p);
		/* Canonical strings are not changed by parse and format. */
		assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
		q = tkt_policy(buf);
		{
			char again[TKSHM_POLICY_MAX];
			assert_true(tkshm_policy_format(&q, again,
							sizeof again) > 0);
			assert_string_equal(buf, again);
		}
		/* A quota without ignored options round-trips every field. */
		assert_params(buf, &q, accepted[i].kind, accepted[i].v);
	}
}

static uint64_t
xorshift(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* A positive double with a random mantissa, between 2^lo and 2^(lo+63). */
static double
random_positive(uint64_t *r, int lo)
{
	uint64_t x = xorshift(r);
	uint64_t bits = (x & ((UINT64_C(1) << 52) - 1)) |
			(uint64_t)(1023 + lo + (int)(x >> 58)) << 52;
	double v;

	memcpy(&v, &bits, sizeof v);
	return v;
}

/* Random valid policies of every kind, every mantissa bit random. */
static void
test_format_round_trip_every_kind(void **state)
{
	uint64_t r = 0x13198A2E03707344u;
	unsigned tried[8] = { 0 }, kept[8] = { 0 };

	(void)state;
	for (int i = 0; i < 14000; i++) {
		tkshm_policy p;
		tkshm_kind kind = (tkshm_kind)(2 + i % 6);

		memset(&p, 0, sizeof p);
		p.kind = kind;
		switch (kind) {
		case TKSHM_KIND_TOKEN_BUCKET:
			p.u.token_bucket.capacity = random_positive(&r, -20);
			p.u.token_bucket.refill_per_sec =
				random_positive(&r, -20);
			break;
		case TKSHM_KIND_FIXED_WINDOW:
			p.u.fixed_window.limit = random_positive(&r, -20);
			p.u.fixed_window.window_ms = random_positive(&r, -10);
			break;
		case TKSHM_KIND_SLIDING_WINDOW:
			p.u.sliding_window.limit = random_positive(&r, -20);
			p.u.sliding_window.window_ms = random_positive(&r, 0);
			p.u.sliding_window.buckets =
				(double)(1 + xorshift(&r) % 64);
			break;
		case TKSHM_KIND_SLIDING_LOG:
			p.u.sliding_log.limit =
				random_positive(&r, -30) / 0x1p33 * 128;
			p.u.sliding_log.window_ms = random_positive(&r, -20);
			break;
		case TKSHM_KIND_QUOTA:
			p.u.quota.limit = random_positive(&r, -20);
			p.u.quota.reset_cadence =
				(double)(1 + xorshift(&r) % 5);
			p.u.quota.offset_minutes =
				(double)((int)(xorshift(&r) % 1681) - 840);
			p.u.quota.week_starts_on = (double)(xorshift(&r) % 7);
			p.u.quota.period_ms = random_positive(&r, 0);
			p.u.quota.anchor =
				(double)(int64_t)(xorshift(&r) >> 24) -
				(double)(UINT64_C(1) << 39);
			p.u.quota.buckets = (double)(1 + xorshift(&r) % 64);
			break;
		case TKSHM_KIND_TOKEN_BUDGET:
			p.u.token_budget.budget = 1 + random_positive(&r, -20);
			p.u.token_budget.window_ms = random_positive(&r, -10);
			break;
		default:
			break;
		}
		tried[kind]++;
		if (tkshm_policy_validate(&p, NULL, 0) != TKSHM_OK)
			continue;
		assert_round_trip_any(&p);
		kept[kind]++;
	}
	/* Most draws are valid, for every kind. */
	for (int k = 2; k <= 7; k++)
		if (kept[k] < tried[k] * 9 / 10)
			fail_msg("kind %d: only %u of %u random policies valid",
				 k, kept[k], tried[k]);
}

/* A policy built by hand is validated for every kind, with a sentence
 * naming the field; zero is a value, not "the default". */
static void
test_policy_validate_every_kind(void **state)
{
	static const struct {
		const char *spec; /* a valid policy */
		size_t field;	  /* its parameter set to `bad` */
		double bad;
		const char *names;
	} cases[] = {
		{ "tokenBucket:capacity=10,refillPerSec=5", 0, 0, "capacity" },
		{ "tokenBucket:capacity=10,refillPerSec=5", 1, NAN,
		  "refillPerSec" },
		{ "fixedWindow:limit=5,windowMs=1000", 0, -1, "limit" },
		{ "fixedWindow:limit=5,windowMs=1000", 1, INFINITY,
		  "windowMs" },
		{ "slidingWindow:limit=10,windowMs=1000", 2, 0, "buckets" },
		{ "slidingWindow:limit=10,windowMs=1000", 2, 65, "buckets" },
		{ "slidingWindow:limit=10,windowMs=1000", 2, NAN, "buckets" },
		{ "slidingWindowLog:limit=5,windowMs=1000", 0, 129, "limit" },
		{ "slidingWindowLog:limit=5,windowMs=1000", 1, 0, "windowMs" },
		{ "quota:limit=5,resetCadence=calendar-day", 0, 0, "limit" },
		{ "quota:limit=5,resetCadence=calendar-day", 1, 0,
		  "resetCadence" },
		{ "quota:limit=5,resetCadence=calendar-day", 1, 6,
		  "resetCadence" },
		{ "quota:limit=5,resetCadence=calendar-day", 1, 2.5,
		  "resetCadence" },
		{ "quota:limit=5,resetCadence=calendar-day", 1, NAN,
		  "resetCadence" },
		{ "quota:limit=5,resetCadence=calendar-day", 1, -1e300,
		  "resetCadence" },
		{ "quota:limit=5,resetCadence=calendar-day", 2, 841,
		  "offsetMinutes" },
		{ "quota:limit=5,resetCadence=calendar-week", 3, 7,
		  "weekStartsOn" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000", 4, 0,
		  "periodMs" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000", 5, 0.5,
		  "anchor" },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000", 6, 0,
		  "buckets" },
		{ "tokenBudget:budget=100,windowMs=1000", 0, 0.5, "budget" },
		{ "tokenBudget:budget=100,windowMs=1000", 1, -1, "windowMs" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_policy p = tkt_policy(cases[i].spec);
		char err[256] = "";
		char buf[TKSHM_POLICY_MAX];

		assert_rc(tkshm_policy_validate(&p, NULL, 0), TKSHM_OK);
		p.u.reserved[cases[i].field] = cases[i].bad;
		if (tkshm_policy_validate(&p, err, sizeof err) != TKSHM_EPOLICY)
			fail_msg("\"%s\" with parameter %zu = %g is accepted",
				 cases[i].spec, cases[i].field, cases[i].bad);
		if (!strstr(err, cases[i].names))
			fail_msg("\"%s\": error \"%s\" does not name \"%s\"",
				 cases[i].spec, err, cases[i].names);
		assert_rc(tkshm_policy_format(&p, buf, sizeof buf),
			  TKSHM_EPOLICY);
	}
}

/* The options each quota cadence reads (tkshm.h, tkshm_policy_equal):
 * bit i is parameter i. */
static unsigned
quota_reads(int cadence)
{
	switch (cadence) {
	case MONTH:
	case DAY:
		return 0x07; /* limit, cadence, offsetMinutes */
	case WEEK:
		return 0x0F; /* ... and weekStartsOn */
	case FIXED:
		return 0x33; /* limit, cadence, periodMs, anchor */
	case ROLL:
		return 0x53; /* limit, cadence, periodMs, buckets */
	}
	return 0x7F;
}

/* Every parameter of every kind counts, down to one ulp, except the
 * options a quota's cadence ignores. */
static void
test_policy_equal_every_kind(void **state)
{
	static const char *specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"tokenBucket:capacity=10,refillPerSec=5",
		"fixedWindow:limit=5,windowMs=1000",
		"slidingWindow:limit=10,windowMs=1000,buckets=10",
		"slidingWindowLog:limit=5,windowMs=1000",
		("quota:limit=1000000,resetCadence=calendar-month,"
		 "offsetMinutes=330"),
		"quota:limit=5,resetCadence=calendar-week,weekStartsOn=0",
		"quota:limit=5,resetCadence=calendar-day,offsetMinutes=60",
		"quota:limit=5,resetCadence=fixed,periodMs=1000,anchor=250",
		"quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=4",
		"tokenBudget:budget=100,windowMs=60000",
	};

	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		tkshm_policy a = tkt_policy(specs[i]), b;
		double v[9];
		size_t n = params_of(&a, v);
		unsigned reads =
			a.kind == TKSHM_KIND_QUOTA ?
				quota_reads((int)a.u.quota.reset_cadence) :
				(1u << n) - 1;

		b = tkt_policy(specs[i]);
		assert_true(tkshm_policy_equal(&a, &b));
		for (size_t f = 0; f < n; f++) {
			b = a;
			b.u.reserved[f] = nextafter(a.u.reserved[f], INFINITY);
			if (tkshm_policy_equal(&a, &b) != !(reads & (1u << f)))
				fail_msg("\"%s\": parameter %zu one ulp up: "
					 "equal %d",
					 specs[i], f,
					 (int)tkshm_policy_equal(&a, &b));
			assert_true(tkshm_policy_equal(&a, &b) ==
				    tkshm_policy_equal(&b, &a));
		}
		/* Bytes past the kind's member never count. */
		b = a;
		for (size_t f = n; f < 16; f++)
			b.u.reserved[f] = (double)f;
		assert_true(tkshm_policy_equal(&a, &b));
		/* Another kind with the same bytes is another policy. */
		b = a;
		b.kind = a.kind == TKSHM_KIND_FIXED_WINDOW ?
				 TKSHM_KIND_SLIDING_LOG :
				 TKSHM_KIND_FIXED_WINDOW;
		assert_false(tkshm_policy_equal(&a, &b));
	}
}

/* tk_algo_init: the kind, the state size in words, and that a refusal
 * leaves *a unchanged. */
static void
test_algo_words(void **state)
{
	static const struct {
		const char *spec;
		unsigned words;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000,burst=5", 1 },
		{ "tokenBucket:capacity=10,refillPerSec=5", 2 },
		{ "fixedWindow:limit=5,windowMs=1000", 2 },
		{ "slidingWindow:limit=10,windowMs=1000", 22 },
		{ "slidingWindow:limit=10,windowMs=1000,buckets=1", 4 },
		{ "slidingWindow:limit=10,windowMs=1000,buckets=64", 130 },
		{ "slidingWindowLog:limit=5,windowMs=1000", 6 },
		{ "slidingWindowLog:limit=5.5,windowMs=1000", 6 },
		{ "slidingWindowLog:limit=128,windowMs=1000", 129 },
		{ "quota:limit=5,resetCadence=calendar-month", 2 },
		{ "quota:limit=5,resetCadence=calendar-week", 2 },
		{ "quota:limit=5,resetCadence=calendar-day", 2 },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000", 2 },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000", 22 },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=3",
		  8 },
		{ "tokenBudget:budget=100,windowMs=60000", 2 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_policy p = tkt_policy(cases[i].spec);
		struct tk_algo a;

		memset(&a, 0, sizeof a);
		assert_rc(tk_algo_init(&a, &p, NULL, 0), TKSHM_OK);
		assert_int_equal(a.kind, p.kind);
		if (a.words != cases[i].words)
			fail_msg("\"%s\": %u words, want %u", cases[i].spec,
				 a.words, cases[i].words);
		assert_true(a.words <= TK_ALGO_MAX_WORDS);
		assert_true(tk_algo_is_wide(&a) == (cases[i].words > 1));
	}
	/* A refusal leaves *a as it was. */
	{
		tkshm_policy p = tkt_policy("slidingWindow:limit=10,"
					    "windowMs=1000");
		struct tk_algo a, before;
		char err[256] = "";

		memset(&a, 0x5A, sizeof a);
		before = a;
		p.u.sliding_window.buckets = 65;
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_EPOLICY);
		assert_non_null(strstr(err, "buckets"));
		assert_memory_equal(&a, &before, sizeof a);
		p.kind = (tkshm_kind)8;
		assert_rc(tk_algo_init(&a, &p, NULL, 0), TKSHM_EPOLICY);
		assert_memory_equal(&a, &before, sizeof a);
	}
}

/* tk_algo_cost_valid: tokenBudget takes whole tokens only (ThrottleKit's
 * requireInteger); every other kind takes any cost the API takes. */
static void
test_algo_cost_valid(void **state)
{
	static const char *others[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"tokenBucket:capacity=10,refillPerSec=5",
		"fixedWindow:limit=5,windowMs=1000",
		"slidingWindow:limit=10,windowMs=1000",
		"slidingWindowLog:limit=5,windowMs=1000",
		"quota:limit=5,resetCadence=calendar-month",
		"quota:limit=5,resetCadence=rolling,periodMs=1000",
	};
	tkshm_policy p = tkt_policy("tokenBudget:budget=100,windowMs=60000");
	struct tkshm_table t; /* tk_check_cost reads only t.algo */

	(void)state;
	memset(&t, 0, sizeof t);
	assert_rc(tk_algo_init(&t.algo, &p, NULL, 0), TKSHM_OK);
	assert_rc(tk_check_cost(&t, 1), TKSHM_OK);
	assert_rc(tk_check_cost(&t, 80), TKSHM_OK);
	assert_rc(tk_check_cost(&t, TKSHM_COST_MAX), TKSHM_OK);
	assert_rc(tk_check_cost(&t, 1.5), TKSHM_ECOST);
	assert_rc(tk_check_cost(&t, 0.5), TKSHM_ECOST);
	assert_rc(tk_check_cost(&t, nextafter(2, 3)), TKSHM_ECOST);
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		p = tkt_policy(others[i]);
		assert_rc(tk_algo_init(&t.algo, &p, NULL, 0), TKSHM_OK);
		assert_rc(tk_check_cost(&t, 1), TKSHM_OK);
		if (tk_check_cost(&t, 1.5) != TKSHM_OK ||
		    tk_check_cost(&t, 0.25) != TKSHM_OK)
			fail_msg("\"%s\" refuses a fractional cost", others[i]);
		/* The generic bounds hold for every kind. */
		assert_rc(tk_check_cost(&t, 0), TKSHM_ECOST);
		assert_rc(tk_check_cost(&t, NAN), TKSHM_ECOST);
		assert_rc(tk_check_cost(&t, INFINITY), TKSHM_ECOST);
		assert_rc(
			tk_check_cost(&t, nextafter(TKSHM_COST_MAX, INFINITY)),
			TKSHM_ECOST);
	}
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
		cmocka_unit_test(test_policy_layout),
		cmocka_unit_test(test_parse_every_kind),
		cmocka_unit_test(test_parse_defaults),
		cmocka_unit_test(test_parse_quota_ignored_options),
		cmocka_unit_test(test_parse_unknown_kind_lists_kinds),
		cmocka_unit_test(test_format_every_kind),
		cmocka_unit_test(test_format_round_trip_every_kind),
		cmocka_unit_test(test_policy_validate_every_kind),
		cmocka_unit_test(test_policy_equal_every_kind),
		cmocka_unit_test(test_algo_words),
		cmocka_unit_test(test_algo_cost_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
