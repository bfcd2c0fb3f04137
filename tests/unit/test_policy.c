/*
 * test_policy.c - policy strings, constructors, validation and equality.
 *
 * The policy string is the one format shared by the API, tkshm-inspect and
 * the bindings, so the parser must refuse everything ThrottleKit's option
 * validation would (docs/semantics.md, "Parameter validation") and
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
#include "shm/validate.h"
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

/* Options in any order; numbers in any of JSON's forms (P3). */
static void
test_parse_order_and_numbers(void **state)
{
	static const char *specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"gcra:burst=5,periodMs=1000,limit=10",
		"gcra:periodMs=1000,burst=5,limit=10",
		"gcra:limit=1e1,periodMs=1.0e3,burst=5.0",
		"gcra:limit=10.000,periodMs=1E+3,burst=0.5e1",
		"gcra:limit=100e-1,periodMs=10000e-1,burst=50E-1",
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

/* One strict grammar (policy.c P3, docs/policies.md): no whitespace
 * anywhere, numbers only in JSON's notation.  Each form below was accepted
 * (or, for 0x10, refused alone) before the grammar was written down. */
static void
test_parse_strict_grammar(void **state)
{
	static const struct {
		const char *spec;
		const char *names;
	} refused[] = {
		{ "gcra:limit=  5,periodMs=1000", "whitespace" },
		{ "gcra:limit=5 ,periodMs=1000", "whitespace" },
		{ "gcra :limit=5,periodMs=1000", "whitespace" },
		{ " gcra:limit=5,periodMs=1000", "whitespace" },
		{ "gcra:limit=5,periodMs=1000\n", "whitespace" },
		{ "gcra:limit=5,\tperiodMs=1000", "whitespace" },
		{ "gcra:limit=5,periodMs=1000;mode=lease, hosts=2",
		  "whitespace" },
		{ "gcra:limit=+5,periodMs=1000", "\"+5\" is not a number" },
		{ "gcra:limit=5.,periodMs=1000", "\"5.\" is not a number" },
		{ "gcra:limit=.5,periodMs=1000", "\".5\" is not a number" },
		{ "gcra:limit=05,periodMs=1000", "\"05\" is not a number" },
		{ "gcra:limit=0x10,periodMs=1000", "\"0x10\" is not a number" },
		{ "gcra:limit=1e,periodMs=1000", "\"1e\" is not a number" },
		{ "gcra:limit=1e+,periodMs=1000", "\"1e+\" is not a number" },
		{ "gcra:limit=-,periodMs=1000", "\"-\" is not a number" },
		{ "gcra:limit=--5,periodMs=1000", "\"--5\" is not a number" },
		{ "gcra:limit=5e1.5,periodMs=1000", "is not a number" },
		{ "gcra:limit=1_000,periodMs=1000", "is not a number" },
		{ "gcra:limit=5,periodMs=1000;mode=lease,hosts=+2", "hosts" },
		{ "gcra:limit=5,periodMs=1000;mode=lease,hosts=0x2", "hosts" },
		{ "gcra:", "no option" },
		{ "adaptiveConcurrency:", "no option" },
		{ "GCRA:limit=5,periodMs=1000", "unknown policy kind" },
		{ "gcra:Limit=5,periodMs=1000", "no option \"Limit\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		tkshm_policy p = poisoned(), before = p;
		char err[256] = "";
		int rc = tkshm_policy_parse(refused[i].spec, &p, err,
					    sizeof err);

		if (rc != TKSHM_EPOLICY)
			fail_msg("\"%s\": %s, wanted TKSHM_EPOLICY",
				 refused[i].spec, tkshm_error_name(rc));
		if (!strstr(err, refused[i].names))
			fail_msg("\"%s\": error \"%s\" does not name \"%s\"",
				 refused[i].spec, err, refused[i].names);
		if (memcmp(&p, &before, sizeof p) != 0)
			fail_msg("\"%s\": *out changed on error",
				 refused[i].spec);
	}
	/* The grammar's edges that stay valid: a lone 0, a negative number,
	 * both exponent signs, a kind with defaults for every option. */
	{
		tkshm_policy p;

		assert_rc(tkshm_policy_parse("quota:limit=5,resetCadence=fixed,"
					     "periodMs=1e3,anchor=-0",
					     &p, NULL, 0),
			  TKSHM_OK);
		assert_rc(tkshm_policy_parse("quota:limit=5,resetCadence="
					     "calendar-day,offsetMinutes=-330",
					     &p, NULL, 0),
			  TKSHM_OK);
		assert_true(p.u.quota.offset_minutes == -330);
		assert_rc(tkshm_policy_parse("gcra:limit=5e+0,periodMs=1e-0",
					     &p, NULL, 0),
			  TKSHM_OK);
		assert_gcra(&p, 5, 1, 5);
		assert_rc(
			tkshm_policy_parse("adaptiveConcurrency", &p, NULL, 0),
			TKSHM_OK);
	}
	/* A number of the grammar however long its digits run (one of 64
	 * characters or more was refused as "not a number"). */
	{
		char spec[256];
		tkshm_policy p;

		snprintf(spec, sizeof spec, "gcra:limit=5.%0100d,periodMs=1%s",
			 0, "000");
		assert_rc(tkshm_policy_parse(spec, &p, NULL, 0), TKSHM_OK);
		assert_gcra(&p, 5, 1000, 5);
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
	{ "leakybucket:ratePerSec=10,maxQueueMs=100", "leakybucket" },
	{ "Concurrency:limit=16", "Concurrency" },
	{ "adaptive:maxLimit=64", "adaptive" },
	{ "adaptiveconcurrency:maxLimit=64", "adaptiveconcurrency" },
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
	{ "leakyBucket:ratePerSec=10,maxQueueMs=100,capacity=5", "capacity" },
	{ "leakyBucket:rate=10,maxQueueMs=100", "rate" },
	{ "concurrency:limit=16,maxLimit=20", "maxLimit" },
	{ "concurrency:limit=16,algorithm=aimd", "algorithm" },
	{ "adaptiveConcurrency:limit=16", "limit" },
	{ "adaptiveConcurrency:maxlimit=16", "maxlimit" },
	/* an adaptive algorithm that is not one of the two words */
	{ "adaptiveConcurrency:algorithm=vegas", "algorithm" },
	{ "adaptiveConcurrency:algorithm=vegas", "vegas" },
	{ "adaptiveConcurrency:algorithm=Gradient2", "algorithm" },
	{ "adaptiveConcurrency:algorithm=gradient", "algorithm" },
	{ "adaptiveConcurrency:algorithm=AIMD", "algorithm" },
	{ "adaptiveConcurrency:algorithm=1", "algorithm" },
	{ "adaptiveConcurrency:algorithm=", "algorithm" },
	{ "adaptiveConcurrency:algorithm=aimd gradient2", "algorithm" },
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
	{ "leakyBucket:ratePerSec=1,maxQueueMs=0,maxQueueMs=0", "maxQueueMs" },
	{ "concurrency:limit=16,limit=16", "limit" },
	{ "adaptiveConcurrency:algorithm=aimd,algorithm=aimd", "algorithm" },
	{ "adaptiveConcurrency:initialLimit=5,initialLimit=5", "initialLimit" },
	/* missing required option */
	{ "gcra:periodMs=1000", "limit" },
	{ "gcra:limit=10", "periodMs" },
	{ "gcra:burst=5", "limit" },
	{ "gcra", "limit" },
	{ "gcra:", "no option" },
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
	{ "leakyBucket:ratePerSec=50", "maxQueueMs" },
	{ "leakyBucket:maxQueueMs=2000", "ratePerSec" },
	{ "leakyBucket", "ratePerSec" },
	{ "concurrency", "limit" },
	{ "concurrency:", "no option" },
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
	/* After a ";" comes the cross-host part: the kind lacks periodMs. */
	{ "gcra:limit=10;periodMs=1000", "periodMs" },
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
	{ "leakyBucket:ratePerSec=50,maxQueueMs=inf", "maxQueueMs" },
	{ "leakyBucket:ratePerSec=50,maxQueueMs=1e999", "maxQueueMs" },
	{ "leakyBucket:ratePerSec=fast,maxQueueMs=10", "ratePerSec" },
	{ "concurrency:limit=sixteen", "limit" },
	{ "concurrency:limit=0x10", "limit" },
	{ "adaptiveConcurrency:maxLimit=nan", "maxLimit" },
	{ "adaptiveConcurrency:timeoutMs=5s", "timeoutMs" },
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
	/* leakyBucket: ratePerSec > 0, maxQueueMs >= 0, both finite, and a
	 * departure interval 1000/ratePerSec that keeps departures finite */
	{ "leakyBucket:ratePerSec=0,maxQueueMs=2000", "ratePerSec" },
	{ "leakyBucket:ratePerSec=-0,maxQueueMs=2000", "ratePerSec" },
	{ "leakyBucket:ratePerSec=-50,maxQueueMs=2000", "ratePerSec" },
	{ "leakyBucket:ratePerSec=50,maxQueueMs=-1", "maxQueueMs" },
	{ "leakyBucket:ratePerSec=50,maxQueueMs=-1e-300", "maxQueueMs" },
	{ "leakyBucket:ratePerSec=50,maxQueueMs=1e300", "maxQueueMs" },
	{ "leakyBucket:ratePerSec=1e-320,maxQueueMs=0", "ratePerSec" },
	{ "leakyBucket:ratePerSec=1e-300,maxQueueMs=0", "ratePerSec" },
	/* concurrency: an integer 1..256 (one state word per permit) */
	{ "concurrency:limit=0", "limit" },
	{ "concurrency:limit=-1", "limit" },
	{ "concurrency:limit=257", "limit" },
	{ "concurrency:limit=2.5", "limit" },
	{ "concurrency:limit=1e6", "limit" },
	{ "concurrency:limit=0.999", "limit" },
	/* adaptiveConcurrency: integer limits, 1 <= min <= initial <= max <=
	 * 256; every option validated, read by the algorithm or not */
	{ "adaptiveConcurrency:minLimit=0", "minLimit" },
	{ "adaptiveConcurrency:minLimit=1.5", "minLimit" },
	{ "adaptiveConcurrency:maxLimit=257", "maxLimit" },
	{ "adaptiveConcurrency:maxLimit=63.5", "maxLimit" },
	{ "adaptiveConcurrency:minLimit=10,maxLimit=5", "minLimit" },
	{ "adaptiveConcurrency:minLimit=300", "minLimit" },
	{ "adaptiveConcurrency:initialLimit=201", "initialLimit" },
	{ "adaptiveConcurrency:initialLimit=0.5", "initialLimit" },
	{ "adaptiveConcurrency:minLimit=30,initialLimit=20", "initialLimit" },
	{ "adaptiveConcurrency:maxLimit=10,initialLimit=20", "initialLimit" },
	{ "adaptiveConcurrency:smoothing=0", "smoothing" },
	{ "adaptiveConcurrency:smoothing=1.5", "smoothing" },
	{ "adaptiveConcurrency:smoothing=-0.2", "smoothing" },
	{ "adaptiveConcurrency:tolerance=0.99", "tolerance" },
	{ "adaptiveConcurrency:rttWindowMs=0", "rttWindowMs" },
	{ "adaptiveConcurrency:rttWindowMs=1e15", "rttWindowMs" },
	{ "adaptiveConcurrency:algorithm=aimd,backoffRatio=1", "backoffRatio" },
	{ "adaptiveConcurrency:algorithm=aimd,backoffRatio=0.49",
	  "backoffRatio" },
	{ "adaptiveConcurrency:algorithm=aimd,timeoutMs=0", "timeoutMs" },
	{ "adaptiveConcurrency:algorithm=aimd,timeoutMs=-5", "timeoutMs" },
	/* options the algorithm does not read are still validated */
	{ "adaptiveConcurrency:algorithm=gradient2,backoffRatio=2",
	  "backoffRatio" },
	{ "adaptiveConcurrency:backoffRatio=0.1", "backoffRatio" },
	{ "adaptiveConcurrency:timeoutMs=0", "timeoutMs" },
	{ "adaptiveConcurrency:algorithm=aimd,smoothing=0", "smoothing" },
	{ "adaptiveConcurrency:algorithm=aimd,tolerance=0", "tolerance" },
	{ "adaptiveConcurrency:algorithm=aimd,rttWindowMs=-1", "rttWindowMs" },
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
		/* periodMs >= limit: T >= 1 ms, above the finest step
		 * (src/algorithms/resolution.h). */
		if (v[1] < v[0]) {
			double x = v[0];

			v[0] = v[1];
			v[1] = x;
		}
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
	/* T below the finest step doubles resolve at the times tkshm
	 * accepts (1/64 ms, src/algorithms/resolution.h) is refused; T at
	 * it is fine. */
	assert_rc(tkshm_policy_gcra(&p, 1, DBL_MIN * 4, 1), TKSHM_EPOLICY);
	assert_rc(tkshm_policy_gcra(&p, 64, 1, 1), TKSHM_OK);
	assert_rc(tkshm_policy_gcra(&p, 65, 1, 1), TKSHM_EPOLICY);

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
	p.u.gcra.limit = 10;

	/* Strict mode does not read leaseMs, but formats it: a NaN there
	 * would format a string that does not parse (found by fuzz_policy). */
	p.global.mode = TKSHM_MODE_STRICT;
	p.global.hosts = 1;
	p.global.lease_ms = NAN;
	err[0] = '\0';
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_EPOLICY);
	assert_non_null(strstr(err, "leaseMs"));
	p.global.lease_ms = 1000;
	assert_rc(tkshm_policy_validate(&p, err, sizeof err), TKSHM_OK);
	memset(&p.global, 0, sizeof p.global);
	p.u.gcra.limit = -3;
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

/* The parameters p's algorithm reads (tkshm.h, tkshm_policy_equal), bit i
 * being parameter i of params_of: all of them, except that a quota reads
 * what its cadence reads and an adaptive limit what its algorithm reads.
 * Only these are formatted and compared. */
static unsigned
params_read(const tkshm_policy *p)
{
	double v[9];
	size_t n = params_of(p, v);

	if (p->kind == TKSHM_KIND_QUOTA) {
		switch ((int)p->u.quota.reset_cadence) {
		case TKSHM_QUOTA_CALENDAR_MONTH:
		case TKSHM_QUOTA_CALENDAR_DAY:
			return 0x07; /* limit, cadence, offsetMinutes */
		case TKSHM_QUOTA_CALENDAR_WEEK:
			return 0x0F; /* ... and weekStartsOn */
		case TKSHM_QUOTA_FIXED:
			return 0x33; /* limit, cadence, periodMs, anchor */
		case TKSHM_QUOTA_ROLLING:
			return 0x53; /* limit, cadence, periodMs, buckets */
		}
	}
	if (p->kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY) {
		switch ((int)p->u.adaptive.algorithm) {
		case TKSHM_ADAPTIVE_GRADIENT2:
			/* algorithm, the three limits, smoothing, tolerance,
			 * rttWindowMs */
			return 0x7F;
		case TKSHM_ADAPTIVE_AIMD:
			/* algorithm, the limits, backoffRatio, timeoutMs */
			return 0x18F;
		}
	}
	return (1u << n) - 1;
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
	assert_int_equal(sizeof p.u.leaky_bucket, 2 * sizeof(double));
	assert_int_equal(sizeof p.u.concurrency, 1 * sizeof(double));
	assert_int_equal(sizeof p.u.adaptive, 9 * sizeof(double));
	assert_int_equal(offsetof(tkshm_policy, u.quota.buckets),
			 offsetof(tkshm_policy, u.reserved[6]));
	assert_int_equal(offsetof(tkshm_policy, u.adaptive.timeout_ms),
			 offsetof(tkshm_policy, u.reserved[8]));
	/* The public constants and cadence values. */
	assert_int_equal(TKSHM_SLIDING_LOG_MAX_LIMIT, 128);
	assert_int_equal(TKSHM_SLIDING_WINDOW_MAX_BUCKETS, 64);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_MONTH, 1);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_WEEK, 2);
	assert_int_equal(TKSHM_QUOTA_CALENDAR_DAY, 3);
	assert_int_equal(TKSHM_QUOTA_FIXED, 4);
	assert_int_equal(TKSHM_QUOTA_ROLLING, 5);
	/* Kinds are stored in table headers and never reused. */
	assert_int_equal(TKSHM_KIND_LEAKY_BUCKET, 8);
	assert_int_equal(TKSHM_KIND_CONCURRENCY, 9);
	assert_int_equal(TKSHM_KIND_ADAPTIVE_CONCURRENCY, 10);
	assert_int_equal(TKSHM_CONCURRENCY_MAX_LIMIT, 256);
	assert_int_equal(TKSHM_ADAPTIVE_GRADIENT2, 1);
	assert_int_equal(TKSHM_ADAPTIVE_AIMD, 2);
}

/* The parameters of p in `mask` (bit i: parameter i) are bit for bit
 * want[i]. */
static void
assert_params_in(const char *what, const tkshm_policy *p, tkshm_kind kind,
		 const double *want, unsigned mask)
{
	double v[9];
	size_t n;

	if (p->kind != kind)
		fail_msg("%s: kind %d, want %d", what, (int)p->kind, (int)kind);
	n = params_of(p, v);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++)
		if ((mask & (1u << i)) && !same_bits(v[i], want[i]))
			fail_msg("%s: parameter %zu is %.17g, want %.17g", what,
				 i, v[i], want[i]);
}

/* Every parameter of p, read or not, is bit for bit want[i]. */
static void
assert_params(const char *what, const tkshm_policy *p, tkshm_kind kind,
	      const double *want)
{
	assert_params_in(what, p, kind, want, ~0u);
}

#define MONTH TKSHM_QUOTA_CALENDAR_MONTH
#define WEEK  TKSHM_QUOTA_CALENDAR_WEEK
#define DAY   TKSHM_QUOTA_CALENDAR_DAY
#define FIXED TKSHM_QUOTA_FIXED
#define ROLL  TKSHM_QUOTA_ROLLING
#define G2    TKSHM_ADAPTIVE_GRADIENT2
#define AIMD  TKSHM_ADAPTIVE_AIMD

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
	{ "quota:resetCadence=calendar-day,limit=7",
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
	/* the shaper: ratePerSec > 0, maxQueueMs >= 0 (0: no queue) */
	{ "leakyBucket:ratePerSec=50,maxQueueMs=2000",
	  TKSHM_KIND_LEAKY_BUCKET,
	  { 50, 2000 } },
	{ "leakyBucket:maxQueueMs=0,ratePerSec=0.5",
	  TKSHM_KIND_LEAKY_BUCKET,
	  { 0.5, 0 } },
	{ "leakyBucket:ratePerSec=6.4e4,maxQueueMs=0.25",
	  TKSHM_KIND_LEAKY_BUCKET,
	  { 6.4e4, 0.25 } },
	/* concurrency: whole permits 1..256 */
	{ "concurrency:limit=16", TKSHM_KIND_CONCURRENCY, { 16 } },
	{ "concurrency:limit=1", TKSHM_KIND_CONCURRENCY, { 1 } },
	{ "concurrency:limit=256", TKSHM_KIND_CONCURRENCY, { 256 } },
	{ "concurrency:limit=2.56e2", TKSHM_KIND_CONCURRENCY, { 256 } },
	/* adaptiveConcurrency (algorithm, initialLimit, minLimit, maxLimit,
	 * smoothing, tolerance, rttWindowMs, backoffRatio, timeoutMs): every
	 * default, and initialLimit's default 20 clamped into [min, max] */
	{ "adaptiveConcurrency",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 20, 1, 200, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 20, 1, 200, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:maxLimit=64",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 20, 1, 64, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:algorithm=aimd,timeoutMs=250",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { AIMD, 20, 1, 200, 0.2, 1.5, 10000, 0.9, 250 } },
	{ "adaptiveConcurrency:maxLimit=10",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 10, 1, 10, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:minLimit=30,maxLimit=64",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 30, 30, 64, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:maxLimit=256,minLimit=256",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 256, 256, 256, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:initialLimit=3.5,minLimit=2,maxLimit=8",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 3.5, 2, 8, 0.2, 1.5, 10000, 0.9, 5000 } },
	{ "adaptiveConcurrency:algorithm=gradient2,initialLimit=1,minLimit=1,"
	  "maxLimit=1,smoothing=1,tolerance=1,rttWindowMs=0.5",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { G2, 1, 1, 1, 1, 1, 0.5, 0.9, 5000 } },
	{ "adaptiveConcurrency:timeoutMs=1000,backoffRatio=0.5,maxLimit=100,"
	  "minLimit=2,initialLimit=100,algorithm=aimd",
	  TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  { AIMD, 100, 2, 100, 0.2, 1.5, 10000, 0.5, 1000 } },
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

	/* adaptiveConcurrency: gradient2, limits 1..200 starting at 20, and
	 * every option of both algorithms filled, read or not. */
	p = poisoned();
	assert_rc(tkshm_policy_parse("adaptiveConcurrency", &p, NULL, 0),
		  TKSHM_OK);
	assert_int_equal(p.kind, TKSHM_KIND_ADAPTIVE_CONCURRENCY);
	assert_true(
		same_bits(p.u.adaptive.algorithm, TKSHM_ADAPTIVE_GRADIENT2));
	assert_true(same_bits(p.u.adaptive.initial_limit, 20));
	assert_true(same_bits(p.u.adaptive.min_limit, 1));
	assert_true(same_bits(p.u.adaptive.max_limit, 200));
	assert_true(same_bits(p.u.adaptive.smoothing, 0.2));
	assert_true(same_bits(p.u.adaptive.tolerance, 1.5));
	assert_true(same_bits(p.u.adaptive.rtt_window_ms, 10000));
	assert_true(same_bits(p.u.adaptive.backoff_ratio, 0.9));
	assert_true(same_bits(p.u.adaptive.timeout_ms, 5000));

	/* initialLimit not given: 20 clamped into [minLimit, maxLimit], from
	 * below and from above; given, it is taken as it is. */
	{
		static const struct {
			const char *spec;
			double initial;
		} clamp[] = {
			{ "adaptiveConcurrency:maxLimit=20", 20 },
			{ "adaptiveConcurrency:maxLimit=19", 19 },
			{ "adaptiveConcurrency:maxLimit=1", 1 },
			{ "adaptiveConcurrency:minLimit=20", 20 },
			{ "adaptiveConcurrency:minLimit=21", 21 },
			{ "adaptiveConcurrency:minLimit=21,maxLimit=22", 21 },
			{ "adaptiveConcurrency:minLimit=5,maxLimit=6", 6 },
			{ "adaptiveConcurrency:maxLimit=6,minLimit=5", 6 },
			{ "adaptiveConcurrency:minLimit=256,maxLimit=256",
			  256 },
			{ "adaptiveConcurrency:algorithm=aimd,maxLimit=8", 8 },
			{ "adaptiveConcurrency:initialLimit=7,maxLimit=8", 7 },
			{ "adaptiveConcurrency:initialLimit=7.25", 7.25 },
		};

		for (size_t i = 0; i < sizeof clamp / sizeof clamp[0]; i++) {
			char err[256] = "";

			p = poisoned();
			if (tkshm_policy_parse(clamp[i].spec, &p, err,
					       sizeof err) != TKSHM_OK)
				fail_msg("\"%s\" refused: %s", clamp[i].spec,
					 err);
			if (!same_bits(p.u.adaptive.initial_limit,
				       clamp[i].initial))
				fail_msg("\"%s\": initialLimit %.17g, want %g",
					 clamp[i].spec,
					 p.u.adaptive.initial_limit,
					 clamp[i].initial);
		}
	}
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

/*
 * gradient2 reads smoothing, tolerance and rttWindowMs; aimd reads
 * backoffRatio and timeoutMs.  The options an algorithm does not read are
 * parsed, validated and kept, but neither formatted nor compared (P2), so
 * two policies that adapt alike are equal.
 */
static void
test_parse_adaptive_ignored_options(void **state)
{
	static const struct {
		const char *spec, *same_as;
	} cases[] = {
		{ "adaptiveConcurrency:algorithm=aimd,smoothing=0.5,"
		  "tolerance=3,rttWindowMs=1",
		  "adaptiveConcurrency:algorithm=aimd" },
		{ "adaptiveConcurrency:backoffRatio=0.5,timeoutMs=1",
		  "adaptiveConcurrency" },
		{ "adaptiveConcurrency:algorithm=gradient2,backoffRatio=0.75,"
		  "timeoutMs=99,maxLimit=64",
		  "adaptiveConcurrency:maxLimit=64" },
		/* the default initialLimit, given */
		{ "adaptiveConcurrency:initialLimit=20",
		  "adaptiveConcurrency" },
		{ "adaptiveConcurrency:maxLimit=8,initialLimit=8",
		  "adaptiveConcurrency:maxLimit=8" },
	};
	tkshm_policy p, q;
	char buf[TKSHM_POLICY_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
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
	/* Kept as given (an operator reading the struct sees them). */
	p = tkt_policy("adaptiveConcurrency:algorithm=aimd,smoothing=0.5,"
		       "tolerance=3,rttWindowMs=1");
	assert_true(same_bits(p.u.adaptive.smoothing, 0.5));
	assert_true(same_bits(p.u.adaptive.tolerance, 3));
	assert_true(same_bits(p.u.adaptive.rtt_window_ms, 1));
	/* ... and not formatted. */
	assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
	assert_null(strstr(buf, "smoothing"));
	assert_null(strstr(buf, "tolerance"));
	assert_null(strstr(buf, "rttWindowMs"));
	assert_non_null(strstr(buf, "backoffRatio=0.9"));
	assert_non_null(strstr(buf, "timeoutMs=5000"));

	/* What the algorithm reads still counts, and so does the algorithm:
	 * the same options under the other algorithm are another policy. */
	p = tkt_policy("adaptiveConcurrency:algorithm=aimd");
	q = tkt_policy("adaptiveConcurrency:algorithm=gradient2");
	assert_false(tkshm_policy_equal(&p, &q));
	q = tkt_policy("adaptiveConcurrency:algorithm=aimd,timeoutMs=4999");
	assert_false(tkshm_policy_equal(&p, &q));
	q = tkt_policy("adaptiveConcurrency:algorithm=aimd,initialLimit=21");
	assert_false(tkshm_policy_equal(&p, &q));
	p = tkt_policy("adaptiveConcurrency");
	q = tkt_policy("adaptiveConcurrency:smoothing=0.25");
	assert_false(tkshm_policy_equal(&p, &q));
	q = tkt_policy("adaptiveConcurrency:minLimit=2");
	assert_false(tkshm_policy_equal(&p, &q));
}

/* The unknown-kind sentence lists the kinds there are. */
static void
test_parse_unknown_kind_lists_kinds(void **state)
{
	static const char *kinds[] = {
		"gcra",
		"tokenBucket",
		"fixedWindow",
		"slidingWindow",
		"slidingWindowLog",
		"quota",
		"tokenBudget",
		"leakyBucket",
		"concurrency",
		"adaptiveConcurrency",
	};
	tkshm_policy p;
	char err[512] = "";

	(void)state;
	assert_rc(
		tkshm_policy_parse("shaper:ratePerSec=1", &p, err, sizeof err),
		TKSHM_EPOLICY);
	assert_non_null(strstr(err, "\"shaper\""));
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
	/* Bit for bit in what the algorithm reads; the rest (a quota's or an
	 * adaptive limit's unread options) comes back as the default. */
	{
		double v[9];

		params_of(p, v);
		assert_params_in(buf, &q, p->kind, v, params_read(p));
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
		{ "leakyBucket:maxQueueMs=2000,ratePerSec=50",
		  "leakyBucket:ratePerSec=50,maxQueueMs=2000" },
		{ "leakyBucket:ratePerSec=0.1,maxQueueMs=0",
		  "leakyBucket:ratePerSec=0.1,maxQueueMs=0" },
		{ "concurrency:limit=16", "concurrency:limit=16" },
		{ "concurrency:limit=2.56e2", "concurrency:limit=256" },
		/* The table's order (minLimit and maxLimit before the
		 * initialLimit their defaults clamp), the algorithm as its
		 * word, only the options the algorithm reads. */
		{ "adaptiveConcurrency:maxLimit=64",
		  "adaptiveConcurrency:algorithm=gradient2,minLimit=1,"
		  "maxLimit=64,initialLimit=20,smoothing=0.2,tolerance=1.5,"
		  "rttWindowMs=10000" },
		{ "adaptiveConcurrency:algorithm=aimd,timeoutMs=250",
		  "adaptiveConcurrency:algorithm=aimd,minLimit=1,maxLimit=200,"
		  "initialLimit=20,backoffRatio=0.9,timeoutMs=250" },
		{ "adaptiveConcurrency:algorithm=aimd,smoothing=0.5,"
		  "maxLimit=8",
		  "adaptiveConcurrency:algorithm=aimd,minLimit=1,maxLimit=8,"
		  "initialLimit=8,backoffRatio=0.9,timeoutMs=5000" },
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
	unsigned tried[11] = { 0 }, kept[11] = { 0 };

	(void)state;
	for (int i = 0; i < 18000; i++) {
		tkshm_policy p;
		tkshm_kind kind = (tkshm_kind)(2 + i % 9);

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
			/* Time steps from 2^-4 ms: above the finest step
			 * (src/algorithms/resolution.h). */
			p.u.fixed_window.window_ms = random_positive(&r, -4);
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
			p.u.sliding_log.window_ms = random_positive(&r, -4);
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
			p.u.token_budget.window_ms = random_positive(&r, -4);
			break;
		case TKSHM_KIND_LEAKY_BUCKET:
			/* Up to 2^13 per second: T >= 2^-3 ms. */
			p.u.leaky_bucket.rate_per_sec =
				random_positive(&r, -20) / 0x1p30;
			/* One in eight without a queue (maxQueueMs 0). */
			p.u.leaky_bucket.max_queue_ms =
				xorshift(&r) % 8 == 0 ?
					0 :
					random_positive(&r, -20);
			break;
		case TKSHM_KIND_CONCURRENCY:
			p.u.concurrency.limit =
				(double)(1 + xorshift(&r) % 256);
			break;
		case TKSHM_KIND_ADAPTIVE_CONCURRENCY: {
			/* Whole limits lo <= hi; initialLimit anywhere in
			 * [lo, hi] with a random mantissa; every option of
			 * both algorithms random and valid. */
			double lo = (double)(1 + xorshift(&r) % 256);
			double hi = lo + (double)(xorshift(&r) %
						  (257 - (uint64_t)lo));
			double u = (double)(xorshift(&r) >> 11) * 0x1p-53;

			p.u.adaptive.algorithm =
				xorshift(&r) % 2 ? TKSHM_ADAPTIVE_GRADIENT2 :
						   TKSHM_ADAPTIVE_AIMD;
			p.u.adaptive.min_limit = lo;
			p.u.adaptive.max_limit = hi;
			p.u.adaptive.initial_limit = lo + u * (hi - lo);
			p.u.adaptive.smoothing =
				1 - (double)(xorshift(&r) >> 11) * 0x1p-53;
			p.u.adaptive.tolerance = 1 + random_positive(&r, -30);
			/* 2^-20..2^43: below the 1e15 cap */
			p.u.adaptive.rtt_window_ms = random_positive(&r, -20);
			p.u.adaptive.backoff_ratio =
				0.5 + (double)(xorshift(&r) >> 12) * 0x1p-53;
			p.u.adaptive.timeout_ms = random_positive(&r, -20);
			break;
		}
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
	for (int k = 2; k <= 10; k++)
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
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 0, 0,
		  "ratePerSec" },
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 0, NAN,
		  "ratePerSec" },
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 0, INFINITY,
		  "ratePerSec" },
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 1, -1,
		  "maxQueueMs" },
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 1, INFINITY,
		  "maxQueueMs" },
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 1, NAN,
		  "maxQueueMs" },
		{ "concurrency:limit=16", 0, 0, "limit" },
		{ "concurrency:limit=16", 0, 257, "limit" },
		{ "concurrency:limit=16", 0, 16.5, "limit" },
		{ "concurrency:limit=16", 0, NAN, "limit" },
		{ "concurrency:limit=16", 0, INFINITY, "limit" },
		{ "adaptiveConcurrency", 0, 0, "algorithm" },
		{ "adaptiveConcurrency", 0, 3, "algorithm" },
		{ "adaptiveConcurrency", 0, 1.5, "algorithm" },
		{ "adaptiveConcurrency", 0, NAN, "algorithm" },
		{ "adaptiveConcurrency", 1, 0.5, "initialLimit" },
		{ "adaptiveConcurrency", 1, 201, "initialLimit" },
		{ "adaptiveConcurrency", 1, NAN, "initialLimit" },
		{ "adaptiveConcurrency", 2, 0, "minLimit" },
		{ "adaptiveConcurrency", 2, 1.5, "minLimit" },
		{ "adaptiveConcurrency", 2, 201, "minLimit" },
		{ "adaptiveConcurrency", 3, 257, "maxLimit" },
		{ "adaptiveConcurrency", 3, NAN, "maxLimit" },
		{ "adaptiveConcurrency", 4, 0, "smoothing" },
		{ "adaptiveConcurrency", 4, 1.0000001, "smoothing" },
		{ "adaptiveConcurrency", 5, 0.5, "tolerance" },
		{ "adaptiveConcurrency", 5, INFINITY, "tolerance" },
		{ "adaptiveConcurrency", 6, 0, "rttWindowMs" },
		{ "adaptiveConcurrency", 6, INFINITY, "rttWindowMs" },
		/* unread by gradient2, still validated */
		{ "adaptiveConcurrency", 7, 1, "backoffRatio" },
		{ "adaptiveConcurrency", 7, 0.25, "backoffRatio" },
		{ "adaptiveConcurrency", 8, 0, "timeoutMs" },
		{ "adaptiveConcurrency", 8, NAN, "timeoutMs" },
		/* unread by aimd, still validated */
		{ "adaptiveConcurrency:algorithm=aimd", 4, 2, "smoothing" },
		{ "adaptiveConcurrency:algorithm=aimd", 5, 0, "tolerance" },
		{ "adaptiveConcurrency:algorithm=aimd", 6, -1, "rttWindowMs" },
		{ "adaptiveConcurrency:algorithm=aimd", 8, -1, "timeoutMs" },
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
		"leakyBucket:ratePerSec=50,maxQueueMs=2000",
		"leakyBucket:ratePerSec=50,maxQueueMs=0",
		"concurrency:limit=16",
		"adaptiveConcurrency:maxLimit=64",
		"adaptiveConcurrency:algorithm=aimd,timeoutMs=250",
	};

	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
		tkshm_policy a = tkt_policy(specs[i]), b;
		double v[9];
		size_t n = params_of(&a, v);
		unsigned reads = params_read(&a);

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
		{ "slidingWindow:limit=10,windowMs=1000", 12 },
		{ "slidingWindow:limit=10,windowMs=1000,buckets=1", 3 },
		{ "slidingWindow:limit=10,windowMs=1000,buckets=64", 66 },
		{ "slidingWindowLog:limit=5,windowMs=1000", 6 },
		{ "slidingWindowLog:limit=5.5,windowMs=1000", 6 },
		{ "slidingWindowLog:limit=128,windowMs=1000", 129 },
		{ "quota:limit=5,resetCadence=calendar-month", 2 },
		{ "quota:limit=5,resetCadence=calendar-week", 2 },
		{ "quota:limit=5,resetCadence=calendar-day", 2 },
		{ "quota:limit=5,resetCadence=fixed,periodMs=1000", 2 },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000", 12 },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=3",
		  5 },
		{ "tokenBudget:budget=100,windowMs=60000", 2 },
		/* the shaper: one departure time, kept in the slot word */
		{ "leakyBucket:ratePerSec=50,maxQueueMs=2000", 1 },
		/* permits: 6 head words and one cell per permit (the limit,
		 * or an adaptive limit's maxLimit) */
		{ "concurrency:limit=1", 7 },
		{ "concurrency:limit=16", 22 },
		{ "concurrency:limit=256", 262 },
		{ "adaptiveConcurrency", 206 },
		{ "adaptiveConcurrency:maxLimit=64", 70 },
		{ "adaptiveConcurrency:minLimit=1,maxLimit=1", 7 },
		{ "adaptiveConcurrency:algorithm=aimd,maxLimit=256", 262 },
	};

	(void)state;
	/* The largest state is a concurrency limit of 256 permits. */
	assert_int_equal(TK_ALGO_MAX_WORDS, 262);
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
		assert_true(tk_algo_is_limiter(&a) ==
			    (p.kind < TKSHM_KIND_LEAKY_BUCKET));
		assert_true(tk_algo_is_concurrency(&a) ==
			    (p.kind == TKSHM_KIND_CONCURRENCY ||
			     p.kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY));
	}
	/* A refusal leaves *a as it was. */
	{
		tkshm_policy p = tkt_policy("slidingWindow:limit=10,"
					    "windowMs=1000");
		struct tk_algo a, before;
		char err[256] = "";

		memset(&a, 0x5A, sizeof a);
		before = a;
		/* Every state fits TK_ALGO_MAX_WORDS: the policies that would
		 * need more are refused by their own kind's bounds (64
		 * buckets, a log of 128, 256 permits), before the state size
		 * is ever computed. */
		p.u.sliding_window.buckets = 65;
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_EPOLICY);
		assert_non_null(strstr(err, "buckets"));
		assert_memory_equal(&a, &before, sizeof a);
		p = tkt_policy("slidingWindowLog:limit=128,windowMs=1000");
		p.u.sliding_log.limit = 129;
		err[0] = '\0';
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_EPOLICY);
		assert_non_null(strstr(err, "limit"));
		assert_memory_equal(&a, &before, sizeof a);
		p = tkt_policy("concurrency:limit=256");
		p.u.concurrency.limit = 257;
		err[0] = '\0';
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_EPOLICY);
		assert_non_null(strstr(err, "limit"));
		assert_memory_equal(&a, &before, sizeof a);
		p = tkt_policy("adaptiveConcurrency:maxLimit=256");
		p.u.adaptive.max_limit = 257;
		err[0] = '\0';
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_EPOLICY);
		assert_non_null(strstr(err, "maxLimit"));
		assert_memory_equal(&a, &before, sizeof a);
		/* Kinds past the last one are unknown. */
		p = tkt_policy("slidingWindow:limit=10,windowMs=1000");
		p.kind = (tkshm_kind)11;
		assert_rc(tk_algo_init(&a, &p, NULL, 0), TKSHM_EPOLICY);
		assert_memory_equal(&a, &before, sizeof a);
		p.kind = (tkshm_kind)0;
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
		cmocka_unit_test(test_parse_order_and_numbers),
		cmocka_unit_test(test_parse_strict_grammar),
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
		cmocka_unit_test(test_parse_adaptive_ignored_options),
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
