/*
 * test_check_fast.c - tkshm_check_at's fast path (src/api/check_fast.h)
 * decides as the full call does.
 *
 * Two tables of one policy (GCRA, then each pair kind: P1-P9) are fed one
 * random timeline: one through
 * tkshm_check_at, whose common case runs inline, the other through
 * tk_api_check_at, the body of the full call, which never takes that path.
 * Every return code and every decision field must agree, for admissions,
 * denials, first checks of a key (the insert the fast path hands on),
 * costs above the burst and fractional costs, and arguments the fast path
 * must leave to the full call (NULLs, empty and long keys, bad costs, bad
 * times): the same error, in the contract's order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/api_calls.h"
#include "test_support.h"

/* The kinds the fast path serves: GCRA and the pair kinds (a token
 * budget refuses fractional costs: the fast path must too). */
static const char *const specs[] = {
	"gcra:limit=5,periodMs=1000,burst=3",
	"tokenBucket:capacity=3,refillPerSec=5",
	"fixedWindow:limit=5,windowMs=1000",
	"quota:limit=2000,resetCadence=calendar-day",
	"quota:limit=5,resetCadence=fixed,periodMs=1000",
	"tokenBudget:budget=5,windowMs=1000",
};
#define NKEYS 4
#define STEPS 20000

/* A cost for step r: mostly 1, some fractional, some above the burst,
 * some the full call refuses (NaN, 0, negative, infinite). */
static double
cost_of(uint64_t r)
{
	static const double costs[] = { 1, 1, 1, 1, 2, 0.5, 3, 4, 0, -1 };

	switch (r % 40) {
	case 0:
		return NAN;
	case 1:
		return INFINITY;
	default:
		return costs[(r >> 8) % (sizeof costs / sizeof costs[0])];
	}
}

/* A time for step r after `now`: mostly later by up to 100 ms, sometimes
 * equal, sometimes out of range (negative, NaN, beyond TKSHM_NOW_MAX). */
static double
now_of(uint64_t r, double now)
{
	switch (r % 50) {
	case 0:
		return -1;
	case 1:
		return NAN;
	case 2:
		return TKSHM_NOW_MAX * 2;
	case 3:
		return now;
	default:
		return now + (double)((r >> 16) % 100);
	}
}

static void
same_as_full_call(const char *spec)
{
	tkshm_table *fast = tkt_anon(spec, 1024);
	tkshm_table *full = tkt_anon(spec, 1024);
	char keys[NKEYS][32];
	uint64_t seed = 25, admitted = 0, denied = 0;
	double now = 1.7e12;

	for (int i = 0; i < NKEYS; i++)
		snprintf(keys[i], sizeof keys[i], "user:%d", i * 7919);
	for (int step = 0; step < STEPS; step++) {
		uint64_t r = tkt_splitmix(&seed);
		const char *key = keys[r % NKEYS];
		size_t len = strlen(key);
		double cost = cost_of(r >> 4);
		double at = now_of(r >> 20, now);
		tkshm_decision a, b;
		char what[64];
		int ra, rb;

		if (r % 97 == 0)
			len = 0; /* TKSHM_EKEYEMPTY */
		else if (r % 89 == 0)
			len = TKSHM_KEY_MAX + 1; /* TKSHM_EKEYLONG */
		memset(&a, 0xA5, sizeof a);
		memset(&b, 0xA5, sizeof b);
		ra = tkshm_check_at(fast, r % 101 ? key : NULL, len, cost, at,
				    r % 103 ? &a : NULL);
		rb = tk_api_check_at(full, r % 101 ? key : NULL, len, cost, at,
				     r % 103 ? &b : NULL);
		snprintf(what, sizeof what, "%.12s step %d", spec, step);
		if (ra != rb)
			fail_msg("%s: %s from the fast path, %s from the full "
				 "call",
				 what, tkshm_error_name(ra),
				 tkshm_error_name(rb));
		if (ra != TKSHM_OK)
			continue;
		tkt_assert_decision(what, &a, &b);
		assert_int_equal(a.flags, b.flags);
		if (a.allowed)
			admitted++;
		else
			denied++;
		if (at > now)
			now = at;
	}
	print_message("  %s: %llu admitted, %llu denied\n", spec,
		      (unsigned long long)admitted, (unsigned long long)denied);
	/* The timeline exercised both outcomes, not one of them. */
	assert_true(admitted > STEPS / 10);
	assert_true(denied > STEPS / 10);
	tkshm_close(fast);
	tkshm_close(full);
}

static void
test_same_as_full_call(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
		same_as_full_call(specs[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_full_call),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
