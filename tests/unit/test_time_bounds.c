/*
 * test_time_bounds.c - floating-point time never unbounds a limit
 * (issue 18, item 2, and its siblings).
 *
 * Each attack below admitted every one of 100,000 checks at one instant
 * before the rule of src/algorithms/resolution.h:
 *   - now = 1.7e18, a nanosecond clock passed as milliseconds;
 *   - gcra:limit=10000,periodMs=1 at today's epoch (T = 0.0001 ms);
 *   - slidingWindowLog and tokenBudget with windowMs = 0.0001;
 *   - a token budget whose window start rounds back onto its own window
 *     (windowMs = 0.1 at now = 830839729987.6), with a valid windowMs;
 *   - a cost too small to move the state (gcra cost 1e-9).
 * And a denial's retryAfterMs was 0 (fixedWindow, a tiny window).
 * Now: times beyond TKSHM_NOW_MAX are TKSHM_ENOW for every call that takes
 * one, steps below 16 ulps are refused when the policy is made (and just
 * at the bound accepted), such costs are TKSHM_ECOST, and no instant
 * admits more than the policy's bound.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "tkshm_http.h"

#define EPOCH	 1.7e12
#define HAMMER	 100000
#define NS_CLOCK 1.7e18 /* a nanosecond clock, today */
#define US_CLOCK 1.7e15 /* a microsecond clock, today */

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

/* Checks `key` HAMMER times at one instant; returns how many admitted, or
 * fails on any error. */
static int
hammer(tkshm_table *t, double now, double cost)
{
	int admitted = 0;

	for (int i = 0; i < HAMMER; i++) {
		tkshm_decision d;

		assert_rc(tkshm_check_at(t, "k", 1, cost, now, &d), TKSHM_OK);
		admitted += d.allowed;
		if (!d.allowed && d.retry_after_ms < 1)
			fail_msg("a denial with retryAfterMs %lld",
				 (long long)d.retry_after_ms);
	}
	return admitted;
}

/* ------------------------------------------------------------------------
 * now far outside any real clock
 * ---------------------------------------------------------------------- */

static void
test_unit_mistakes_refused(void **state)
{
	static const double bad[] = { NS_CLOCK, US_CLOCK, 4611686018427387904.0,
				      1e308,	INFINITY, NAN,
				      -1 };
	tkshm_table *t = tkt_anon("gcra:limit=10,periodMs=1000", 64);
	const char *why = tkshm_strerror(TKSHM_ENOW);
	tkshm_decision d;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_rc(tkshm_check_at(t, "k", 1, 1, bad[i], &d), TKSHM_ENOW);
		assert_rc(tkshm_peek_at(t, "k", 1, bad[i], &d), TKSHM_ENOW);
	}
	/* The sentence names the likely mistake. */
	assert_non_null(strstr(why, "nanoseconds"));
	assert_non_null(strstr(why, "2^42"));
	/* Nothing was consumed: a cold key still has its whole burst. */
	assert_int_equal(hammer(t, EPOCH, 1), 10);
	tkshm_close(t);
}

/* The edge itself: TKSHM_NOW_MAX is accepted, the next double is not. */
static void
test_now_max_edge(void **state)
{
	tkshm_table *t = tkt_anon("gcra:limit=10,periodMs=1000", 64);
	double over = nextafter(TKSHM_NOW_MAX, INFINITY);
	tkshm_decision d;

	(void)state;
	assert_true(TKSHM_NOW_MAX == 4398046511104.0); /* 2^42 */
	assert_rc(tkshm_check_at(t, "edge", 4, 1, TKSHM_NOW_MAX, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_check_at(t, "edge", 4, 1, over, &d), TKSHM_ENOW);
	/* And at the edge the limit holds exactly. */
	assert_int_equal(hammer(t, TKSHM_NOW_MAX, 1), 10);
	tkshm_close(t);
}

/* One rule for every call that takes a time (tkshm_usage_get accepted
 * 1e308 while checks refused it). */
static void
test_every_call_one_rule(void **state)
{
	tkshm_table *g = tkt_anon("gcra:limit=10,periodMs=1000", 64);
	tkshm_table *l =
		tkt_anon("leakyBucket:ratePerSec=10,maxQueueMs=100", 64);
	tkshm_table *c = tkt_anon("concurrency:limit=2", 64);
	const double nows[] = { NS_CLOCK, US_CLOCK, 1e308 };
	tkshm_request req = { .key = "k", .key_len = 1, .cost = 1 };
	tkshm_dimension dim = {
		.table = g, .key = "k", .key_len = 1, .cost = 1
	};
	tkshm_http_header hdr[TKSHM_HTTP_HEADERS_MAX];
	char buf[512];
	tkshm_decision d = { .allowed = true, .limit = 10 };
	tkshm_reservation r;
	tkshm_permit p;
	tkshm_forecast f;
	tkshm_usage u;
	tkshm_entry e;
	uint64_t cursor = 0;

	(void)state;
	assert_rc(tkshm_check_at(g, "k", 1, 1, EPOCH, &d), TKSHM_OK);
	for (size_t i = 0; i < sizeof nows / sizeof nows[0]; i++) {
		double n = nows[i];

		assert_rc(tkshm_check_many_at(g, &req, 1, n, &d, NULL),
			  TKSHM_ENOW);
		assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, &dim, 1, n, &d,
					       NULL, NULL),
			  TKSHM_ENOW);
		assert_rc(tkshm_forecast_at(g, "k", 1, 1, n, &f), TKSHM_ENOW);
		assert_rc(tkshm_usage_get(g, n, &u), TKSHM_ENOW);
		assert_rc(tkshm_entry_get_at(g, "k", 1, n, &e), TKSHM_ENOW);
		assert_rc(tkshm_entry_next_at(g, &cursor, n, &e), TKSHM_ENOW);
		assert_rc(tkshm_set_remaining_at(g, "k", 1, 3, n), TKSHM_ENOW);
		assert_rc(tkshm_block_at(g, "k", 1, n, EPOCH), TKSHM_EINVAL);
		assert_rc(tkshm_reserve_at(l, "k", 1, 1, n, &r), TKSHM_ENOW);
		assert_rc(tkshm_acquire_at(c, "k", 1, n, &p, &d), TKSHM_ENOW);
		assert_rc(tkshm_http_headers(&d, TKSHM_HTTP_DRAFT, "api", 1, n,
					     hdr, buf, sizeof buf),
			  TKSHM_ENOW);
	}
	tkshm_close(g);
	tkshm_close(l);
	tkshm_close(c);
}

/* ------------------------------------------------------------------------
 * Steps below what doubles resolve
 * ---------------------------------------------------------------------- */

/* Each policy of the issue, refused with a sentence naming the parameter
 * and the smallest value. */
static void
test_unresolvable_policies_refused(void **state)
{
	static const struct {
		const char *spec, *names;
	} bad[] = {
		{ "gcra:limit=10000,periodMs=1", "periodMs / limit" },
		{ "gcra:limit=65,periodMs=1", "periodMs / limit" },
		{ "slidingWindowLog:limit=10,windowMs=0.0001", "windowMs" },
		{ "tokenBudget:budget=10,windowMs=0.0001", "windowMs" },
		{ "fixedWindow:limit=10,windowMs=0.0001", "windowMs" },
		{ "slidingWindow:limit=10,windowMs=0.5,buckets=64",
		  "windowMs / buckets" },
		{ "quota:limit=5,resetCadence=fixed,periodMs=0.01",
		  "periodMs" },
		{ "quota:limit=5,resetCadence=rolling,periodMs=0.5,buckets=64",
		  "windowMs / buckets" },
		{ "leakyBucket:ratePerSec=100000,maxQueueMs=10", "ratePerSec" },
		/* A far anchor is a far horizon: coarser doubles there. */
		{ "quota:limit=5,resetCadence=fixed,periodMs=0.02,"
		  "anchor=100000000000000",
		  "periodMs" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tkshm_policy p;
		char err[256] = "";
		int rc = tkshm_policy_parse(bad[i].spec, &p, err, sizeof err);

		if (rc != TKSHM_EPOLICY)
			fail_msg("%s: %s, wanted TKSHM_EPOLICY", bad[i].spec,
				 tkshm_error_name(rc));
		if (!strstr(err, bad[i].names) ||
		    (!strstr(err, "at least") && !strstr(err, "1/64 ms")))
			fail_msg("%s: \"%s\" does not name %s and the bound",
				 bad[i].spec, err, bad[i].names);
	}
}

/* The finest step accepted, 1/64 ms, for each kind: accepted, and at the
 * largest now a hammered key admits its bound, never more.  (Just below
 * 2^42 a GCRA TAT crosses to coarser doubles and rounding can cost one
 * admission: ThrottleKit's own float artifact, which errs low.) */
static void
test_finest_steps_hold(void **state)
{
	static const struct {
		const char *spec;
		int bound;
	} edge[] = {
		{ "gcra:limit=64,periodMs=1,burst=10", 10 },
		{ "fixedWindow:limit=10,windowMs=0.015625", 10 },
		{ "slidingWindow:limit=10,windowMs=1,buckets=64", 10 },
		{ "slidingWindowLog:limit=10,windowMs=0.015625", 10 },
		{ "tokenBudget:budget=10,windowMs=0.015625", 10 },
		{ "quota:limit=10,resetCadence=fixed,periodMs=0.015625", 10 },
		{ "quota:limit=10,resetCadence=rolling,periodMs=1,buckets=64",
		  10 },
	};
	const double nows[] = { EPOCH, EPOCH + 0.3, TKSHM_NOW_MAX,
				nextafter(TKSHM_NOW_MAX, 0) };

	(void)state;
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
		tkshm_table *t = tkt_anon(edge[i].spec, 64);

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
			int got;

			assert_rc(tkshm_reset(t, "k", 1), TKSHM_OK);
			got = hammer(t, nows[n], 1);
			if (got > edge[i].bound || got < edge[i].bound - 1)
				fail_msg("%s at now %.17g: %d admitted, bound "
					 "%d",
					 edge[i].spec, nows[n], got,
					 edge[i].bound);
		}
		tkshm_close(t);
	}
}

/* The shaper too: the finest rate accepted departs exactly in turn. */
static void
test_finest_shaper_holds(void **state)
{
	tkshm_table *t =
		tkt_anon("leakyBucket:ratePerSec=64000,maxQueueMs=0.25", 64);
	int accepted = 0;

	(void)state;
	/* T = 1/64 ms: a queue of 0.25 ms holds 16 departures, and one
	 * departs now: 17 at one instant. */
	for (int i = 0; i < HAMMER; i++) {
		tkshm_reservation r;

		assert_rc(tkshm_reserve_at(t, "k", 1, 1, TKSHM_NOW_MAX, &r),
			  TKSHM_OK);
		accepted += r.accepted;
	}
	assert_int_equal(accepted, 17);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * A token budget that rolled back onto its own window
 * ---------------------------------------------------------------------- */

static void
test_budget_roll_moves_forward(void **state)
{
	/* Within an ulp below a window's end, floor(now / w) * w rounds back
	 * to a start whose end is still <= now (found by search; each of
	 * these admitted all 100,000 debits). */
	static const struct {
		double window, now;
	} cases[] = {
		{ 0.1, 830839729987.6 },
		{ 0.1, 858174778126.1 },
		{ 0.1, 685835738821.1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char spec[96];
		tkshm_table *t;
		double w = cases[i].window, now = cases[i].now;

		/* The case is what it claims: the computed window ended. */
		assert_true(now >= floor(now / w) * w + w);
		snprintf(spec, sizeof spec, "tokenBudget:budget=10,windowMs=%g",
			 w);
		t = tkt_anon(spec, 64);
		assert_int_equal(hammer(t, now, 1), 10);
		/* The next window, a whole window later, opens afresh. */
		assert_int_equal(hammer(t, now + 2 * w, 1), 10);
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * Costs too small to move the state
 * ---------------------------------------------------------------------- */

static void
test_unresolvable_costs_refused(void **state)
{
	static const struct {
		const char *spec;
		double cost, ok;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000", 1e-9, 0.001 },
		/* Counts near 1e15 are 0.125 apart: 16 of those is 2. */
		{ "tokenBucket:capacity=1e15,refillPerSec=1", 0.01, 2 },
		{ "fixedWindow:limit=1e15,windowMs=1000", 1, 2 },
		{ "slidingWindow:limit=1e14,windowMs=1000", 0.01, 1 },
		{ "quota:limit=1e12,resetCadence=calendar-day", 1e-5, 0.01 },
		{ "leakyBucket:ratePerSec=10,maxQueueMs=1000", 1e-9, 0.001 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_table *t = tkt_anon(cases[i].spec, 64);
		tkshm_decision d;
		tkshm_reservation r;
		bool shaper = strncmp(cases[i].spec, "leaky", 5) == 0;
		int rc = shaper ? tkshm_reserve_at(t, "k", 1, cases[i].cost,
						   EPOCH, &r) :
				  tkshm_check_at(t, "k", 1, cases[i].cost,
						 EPOCH, &d);

		if (rc != TKSHM_ECOST)
			fail_msg("%s cost %g: %s, wanted TKSHM_ECOST",
				 cases[i].spec, cases[i].cost,
				 tkshm_error_name(rc));
		rc = shaper ? tkshm_reserve_at(t, "k", 1, cases[i].ok, EPOCH,
					       &r) :
			      tkshm_check_at(t, "k", 1, cases[i].ok, EPOCH, &d);
		if (rc != TKSHM_OK)
			fail_msg("%s cost %g: %s, wanted TKSHM_OK",
				 cases[i].spec, cases[i].ok,
				 tkshm_error_name(rc));
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * A denial never says "retry in 0 ms"
 * ---------------------------------------------------------------------- */

/* Windows whose ends are not doubles: nows within an ulp of a boundary
 * made ceil(resetAt - now) 0 on a denial. */
static void
test_denials_retry_after_at_least_1(void **state)
{
	static const char *const specs[] = {
		"fixedWindow:limit=1,windowMs=0.1",
		"fixedWindow:limit=1,windowMs=59.9",
		"quota:limit=1,resetCadence=fixed,periodMs=0.1",
		"tokenBudget:budget=1,windowMs=0.1",
		"slidingWindowLog:limit=1,windowMs=0.5",
	};
	uint64_t seed = 0x9E3779B97F4A7C15u;

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		tkshm_table *t = tkt_anon(specs[s], 4096);

		for (int i = 0; i < 3000; i++) {
			char key[32];
			double now, w = s == 1 ? 59.9 : 0.1;
			tkshm_decision d;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			now = (double)(seed % 40000000000u + 1) * w;
			now = nextafter(now, seed & 1 ? 0 : INFINITY);
			snprintf(key, sizeof key, "k%d", i);
			/* Spend the key, then a denial at the same now; a
			 * cost above the limit for the log (count 0). */
			if (s == 4) {
				assert_rc(tkshm_check_at(t, key, strlen(key), 2,
							 now, &d),
					  TKSHM_OK);
			} else {
				assert_rc(tkshm_check_at(t, key, strlen(key), 1,
							 now, &d),
					  TKSHM_OK);
				assert_rc(tkshm_check_at(t, key, strlen(key), 1,
							 now, &d),
					  TKSHM_OK);
			}
			if (!d.allowed && d.retry_after_ms < 1)
				fail_msg("%s at now %.17g: retryAfterMs %lld",
					 specs[s], now,
					 (long long)d.retry_after_ms);
			assert_rc(tkshm_peek_at(t, key, strlen(key), now, &d),
				  TKSHM_OK);
			if (!d.allowed && d.retry_after_ms < 1)
				fail_msg("%s peek at now %.17g: retryAfterMs "
					 "%lld",
					 specs[s], now,
					 (long long)d.retry_after_ms);
		}
		tkshm_close(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unit_mistakes_refused),
		cmocka_unit_test(test_now_max_edge),
		cmocka_unit_test(test_every_call_one_rule),
		cmocka_unit_test(test_unresolvable_policies_refused),
		cmocka_unit_test(test_finest_steps_hold),
		cmocka_unit_test(test_finest_shaper_holds),
		cmocka_unit_test(test_budget_roll_moves_forward),
		cmocka_unit_test(test_unresolvable_costs_refused),
		cmocka_unit_test(test_denials_retry_after_at_least_1),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
