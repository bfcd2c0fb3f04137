/*
 * test_rounding.c - the library's floor, ceil and decision-field shortcuts
 * (src/algorithms/rounding.h, decision.h) against libm, bit for bit.
 *
 * Decisions must be bit-identical to ThrottleKit's double arithmetic, so a
 * shortcut that differs from floor()/ceil() on any input (a sign of zero,
 * a value near 2^52 or 2^63, a NaN) would be a wire-contract bug.  Inputs:
 * hand-picked edges, every neighbour (nextafter) of each, and a few million
 * values drawn from random bit patterns and from the ranges decisions use.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "algorithms/decision.h"
#include "algorithms/rounding.h"
#include "test_support.h"

static uint64_t
bits(double x)
{
	uint64_t u;
	memcpy(&u, &x, sizeof u);
	return u;
}

static double
from_bits(uint64_t u)
{
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}

/* Same double, NaNs compared as "both NaN" (their payloads are libm's). */
static bool
same(double a, double b)
{
	return (a != a && b != b) || bits(a) == bits(b);
}

static unsigned long checked;

static void
check_one(double x)
{
	double f = floor(x), c = ceil(x);

	if (!same(tk_floor(x), f))
		fail_msg("tk_floor(%a) = %a, floor = %a", x, tk_floor(x), f);
	if (!same(tk_ceil(x), c))
		fail_msg("tk_ceil(%a) = %a, ceil = %a", x, tk_ceil(x), c);
	if (tk_field_floor0(x) != tk_field(tk_clamp0(f)))
		fail_msg("tk_field_floor0(%a) = %lld, long form %lld", x,
			 (long long)tk_field_floor0(x),
			 (long long)tk_field(tk_clamp0(f)));
	if (tk_field_ceil(x) != tk_field(c))
		fail_msg("tk_field_ceil(%a) = %lld, long form %lld", x,
			 (long long)tk_field_ceil(x), (long long)tk_field(c));
	checked++;
}

/* x, its neighbours up to 3 steps each way, and the negatives of all. */
static void
check_around(double x)
{
	double up = x, down = x;

	check_one(x);
	check_one(-x);
	for (int i = 0; i < 3; i++) {
		up = nextafter(up, INFINITY);
		down = nextafter(down, -INFINITY);
		check_one(up);
		check_one(down);
		check_one(-up);
		check_one(-down);
	}
}

static void
test_edges(void **state)
{
	static const double edges[] = {
		0.0,
		0.5,
		1.0,
		1.5,
		2.0,
		0.49999999999999994,
		DBL_MIN,
		DBL_TRUE_MIN,
		DBL_MAX,
		4503599627370496.0,	 /* 2^52 */
		4503599627370495.5,	 /* largest with a fraction */
		9007199254740992.0,	 /* 2^53 */
		9223372036854774784.0,	 /* largest double below 2^63 */
		9223372036854775808.0,	 /* 2^63 */
		1.8e12,			 /* epoch ms today */
		1.8e12 + 0.000244140625, /* ... plus one step of it */
		4611686018427387904.0,	 /* 2^62, the largest now */
		123456.789,
	};

	(void)state;
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		check_around(edges[i]);
	check_one(INFINITY);
	check_one(-INFINITY);
	check_one(NAN);
	check_one(-NAN);
	/* A signalling-NaN pattern too: only "is NaN" is compared. */
	check_one(from_bits(UINT64_C(0x7FF0000000000001)));
	/* The sign of a zero result follows libm. */
	assert_true(signbit(tk_floor(-0.0)));
	assert_true(signbit(tk_ceil(-0.5)));
	assert_false(signbit(tk_floor(0.5)));
}

static uint64_t rng = UINT64_C(0x243F6A8885A308D3);

static uint64_t
next_u64(void)
{
	/* xorshift64*: fixed seed, the same inputs on every run. */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * UINT64_C(0x2545F4914F6CDD1D);
}

static void
test_random_patterns(void **state)
{
	(void)state;
	/* Uniform bit patterns: every exponent equally often, so most are
	 * huge or tiny; NaNs and infinities included. */
	for (int i = 0; i < 2000000; i++)
		check_one(from_bits(next_u64()));
}

static void
test_decision_ranges(void **state)
{
	(void)state;
	/* The values decisions round: epoch-ms times, small remainders,
	 * retry-afters around zero, and integers with tiny offsets. */
	for (int i = 0; i < 1000000; i++) {
		double u = (double)(next_u64() >> 11) / 9007199254740992.0;
		int64_t n = (int64_t)(next_u64() % 2000000) - 1000000;

		check_one(1.7e12 + u * 2e11);
		check_one((u - 0.5) * 2000.0);
		check_one((u - 0.5) * 2.0);
		check_one((double)n + (u - 0.5) * 1e-9);
		check_one(ldexp(u, (int)(next_u64() % 130) - 65));
	}
	assert_true(checked > 5000000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random_patterns),
		cmocka_unit_test(test_decision_ranges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
