/*
 * test_deny_bound.c - the fields a cached denial is answered with
 * (src/algorithms/deny_bound.h), against the true state's own denial.
 *
 * One key, two "hosts" on one forward timeline, no Redis: the true state
 * takes every host's admissions; host A's snapshot of it is refreshed
 * only by A's own checks (as strict mode's negative cache is by A's
 * replies).  Whenever the snapshot denies A's check at `now`, the bound
 * computed from the snapshot must be a denial whose retryAfterMs and
 * resetAt are never below the true state's at the same now, and whose
 * remaining is 0.  Costs include fractions (down to 1/64) and epochs
 * near 1.7e12, where the rounding of every formula is at its worst.
 */
#define _GNU_SOURCE /* algo_testing.h: timegm */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"
#include "algorithms/algorithm.h"
#include "algorithms/deny_bound.h"

struct bound_tally {
	unsigned long cached, equal;
};

/* One timeline of `steps` steps on policy `spec`; the true state in
 * `truth`, A's snapshot in `snap`. */
static void
run_timeline(const struct tk_algo *a, const char *spec, uint64_t *seed,
	     double step_ms, bool fractional, struct bound_tally *t)
{
	uint64_t truth[TK_ALGO_MAX_WORDS], snap[TK_ALGO_MAX_WORDS];
	uint64_t next[TK_ALGO_MAX_WORDS];
	bool present = false, snap_present = false;
	double now = ALGO_EPOCH + (double)(algo_rng(seed) % 100000);

	for (int i = 0; i < 400; i++) {
		bool host_a = algo_rng(seed) % 3 == 0;
		double cost = 1 + (double)(algo_rng(seed) % 3);
		tkshm_decision d, bound, real;

		if (fractional && algo_rng(seed) % 2)
			cost = (double)(1 + algo_rng(seed) % 192) / 64;
		now += (double)(algo_rng(seed) % (uint64_t)step_ms);
		if (algo_rng(seed) % 4 == 0)
			now += (double)(algo_rng(seed) % 1000) / 1000;
		if (host_a && snap_present &&
		    !tk_algo_check_w(a, true, snap, now, cost, next, &d)) {
			/* A denial from A's cache: Redis denies too. */
			assert_false(tk_algo_check_w(a, present, truth, now,
						     cost, next, &real));
			if (!tk_algo_deny_bound_w(a, snap, now, cost, &bound))
				fail_msg("%s: no bound at now %.17g", spec,
					 now);
			assert_false(bound.allowed);
			assert_int_equal(bound.limit, real.limit);
			assert_int_equal(bound.remaining, 0);
			if (bound.retry_after_ms < real.retry_after_ms ||
			    bound.reset_at < real.reset_at)
				fail_msg("%s: now %.17g cost %g: bound retry "
					 "%lld reset %lld, true %lld %lld",
					 spec, now, cost,
					 (long long)bound.retry_after_ms,
					 (long long)bound.reset_at,
					 (long long)real.retry_after_ms,
					 (long long)real.reset_at);
			t->cached++;
			t->equal += bound.retry_after_ms == real.retry_after_ms;
			continue;
		}
		/* Redis decides (and A's reply refreshes A's snapshot). */
		if (tk_algo_check_w(a, present, truth, now, cost, next, &d)) {
			memcpy(truth, next, sizeof truth);
			present = true;
		}
		if (host_a && present) {
			memcpy(snap, truth, sizeof snap);
			snap_present = true;
		}
	}
}

static void
test_bounds_never_early(void **state)
{
	static const struct {
		const char *spec;
		double step_ms;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000,burst=5", 80 },
		{ "gcra:limit=3,periodMs=1000", 200 },
		{ "gcra:limit=7,periodMs=1000,burst=2", 90 },
		{ "tokenBucket:capacity=5,refillPerSec=4", 150 },
		{ "tokenBucket:capacity=7,refillPerSec=3.5", 200 },
		{ "fixedWindow:limit=6,windowMs=1000", 80 },
		{ "fixedWindow:limit=7.5,windowMs=333.3", 40 },
		{ "slidingWindow:limit=8,windowMs=1000,buckets=4", 80 },
		{ "slidingWindow:limit=20,windowMs=1000,buckets=3", 40 },
		{ "slidingWindow:limit=9,windowMs=706,buckets=1", 60 },
		{ "slidingWindowLog:limit=5,windowMs=1000", 80 },
		{ "slidingWindowLog:limit=6.5,windowMs=1000.5", 80 },
		{ "quota:limit=8,resetCadence=calendar-day", 600000 },
		{ "quota:limit=6,resetCadence=fixed,periodMs=1000,anchor=250",
		  80 },
		{ "quota:limit=9,resetCadence=rolling,periodMs=1000,buckets=4",
		  80 },
		{ "leakyBucket:ratePerSec=10,maxQueueMs=500", 60 },
	};
	uint64_t seed = 20261126;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct bound_tally t = { 0, 0 };
		tkshm_policy p;
		struct tk_algo a;
		char err[256];

		assert_rc(
			tkshm_policy_parse(cases[i].spec, &p, err, sizeof err),
			TKSHM_OK);
		assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_OK);
		for (int tl = 0; tl < 300; tl++)
			run_timeline(&a, cases[i].spec, &seed, cases[i].step_ms,
				     a.kind != TKSHM_KIND_SLIDING_LOG &&
					     a.kind != TKSHM_KIND_QUOTA &&
					     a.kind != TKSHM_KIND_FIXED_WINDOW,
				     &t);
		printf("%-58s %6lu cached denials, retry equal to the true "
		       "one in %lu\n",
		       cases[i].spec, t.cached, t.equal);
		assert_true(t.cached >= 100);
	}
}

/* The sliding window's weighted retry, ceil(D*w / oldest), can round to
 * 1 ms past the time to the next sub-bucket boundary: limit 1000 per
 * 100 ms in one bucket, 530 units in tick 9, 999 in tick 10, a cost of 1
 * at now 1001 is told 100 ms where the boundary is 99 ms away.  The bound
 * covers it. */
static void
test_sliding_window_rounding(void **state)
{
	tkshm_policy p;
	struct tk_algo a;
	uint64_t st[TK_ALGO_MAX_WORDS] = { 0 }, next[TK_ALGO_MAX_WORDS];
	tkshm_decision real, bound;
	char err[256];

	(void)state;
	assert_rc(tkshm_policy_parse("slidingWindow:limit=1000,windowMs=100,"
				     "buckets=1",
				     &p, err, sizeof err),
		  TKSHM_OK);
	assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_OK);
	/* The newest tick + 1, then the count of tick t at 1 + t % 2. */
	st[0] = 10 + 1;
	st[1 + 9 % 2] = tk_f64_word(530);
	st[1 + 10 % 2] = tk_f64_word(999);
	assert_false(tk_algo_check_w(&a, true, st, 1001, 1, next, &real));
	assert_int_equal(real.retry_after_ms, 100); /* the boundary: 99 */
	assert_true(tk_algo_deny_bound_w(&a, st, 1001, 1, &bound));
	assert_true(bound.retry_after_ms >= real.retry_after_ms);
}

/* The kinds without a bound say so. */
static void
test_no_bound(void **state)
{
	tkshm_policy p;
	struct tk_algo a;
	uint64_t st[TK_ALGO_MAX_WORDS] = { 0 };
	tkshm_decision d;
	char err[256];

	(void)state;
	assert_rc(
		tkshm_policy_parse("concurrency:limit=2", &p, err, sizeof err),
		TKSHM_OK);
	assert_rc(tk_algo_init(&a, &p, err, sizeof err), TKSHM_OK);
	assert_false(tk_algo_deny_bound_w(&a, st, ALGO_EPOCH, 1, &d));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds_never_early),
		cmocka_unit_test(test_sliding_window_rounding),
		cmocka_unit_test(test_no_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
