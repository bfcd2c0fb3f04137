/*
 * test_wide_table.c - every algorithm whose state is wider than one word,
 * through real tables (src/shm/wide.c, protocol.h W1-W9).
 *
 * Oracles: ThrottleKit's golden vectors (every rateLimit suite, as given and
 * shifted by +1000, and every tokenBudget suite), and the pure transitions
 * of src/algorithms/ (checked against the formulas by test_algo_*.c): a
 * table must decide exactly as its algorithm applied to one private state
 * per key, including when its slots are reclaimed by other keys.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "algo_testing.h"
#include "algorithms/algorithm.h"
#include "algorithms/forecast.h"
#include "shm/table.h"
#include "shm/wide.h"
#include "slot_testing.h"

/* ------------------------------------------------------------------------
 * Golden vectors through tables
 * ---------------------------------------------------------------------- */

static void
replay_rate_limit(void **state, double offset)
{
	const cJSON *suite;
	unsigned suites = 0, ops = 0;

	cJSON_ArrayForEach(suite, gv_member(*state, "suites"))
	{
		const cJSON *strategy, *op;
		const char *kind;
		char spec[256];
		tkshm_table *t;

		if (!gv_is_primitive(suite, "rateLimit"))
			continue;
		strategy = gv_member(suite, "strategy");
		kind = gv_member(strategy, "kind")->valuestring;
		tkt_spec_of(kind, gv_member(strategy, "options"), spec,
			    sizeof spec);
		t = tkt_anon(spec, 64);
		cJSON_ArrayForEach(op, gv_member(suite, "ops"))
		{
			tkshm_decision got, want = gv_expect(op, offset);
			const char *key = gv_member(suite, "key")->valuestring;
			char what[320];

			snprintf(what, sizeof what, "%s op %u (offset %g)",
				 gv_member(suite, "name")->valuestring, ops,
				 offset);
			assert_rc(tkshm_check_at(t, key, strlen(key),
						 gv_number(op, "cost"),
						 gv_number(op, "now") + offset,
						 &got),
				  TKSHM_OK);
			algo_assert_decision(what, &got, &want);
			ops++;
		}
		assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
		tkshm_close(t);
		suites++;
	}
	/* tests/data/README.md: 9 rateLimit suites of 54 ops. */
	assert_int_equal(suites, 9);
	assert_int_equal(ops, 54);
}

static void
golden_rate_limit_as_given(void **state)
{
	replay_rate_limit(state, 0);
}

static void
golden_rate_limit_offset_1000(void **state)
{
	replay_rate_limit(state, 1000);
}

static void
golden_token_budget(void **state)
{
	const cJSON *suite;
	unsigned suites = 0, ops = 0;

	cJSON_ArrayForEach(suite, gv_member(*state, "suites"))
	{
		const cJSON *op;
		char spec[256];
		tkshm_table *t;

		if (!gv_is_primitive(suite, "tokenBudget"))
			continue;
		tkt_spec_of("tokenBudget", gv_member(suite, "options"), spec,
			    sizeof spec);
		t = tkt_anon(spec, 64);
		cJSON_ArrayForEach(op, gv_member(suite, "ops"))
		{
			tkshm_decision got, want = gv_expect(op, 0);

			assert_rc(tkshm_check_at(t, "tb", 2,
						 gv_number(op, "tokens"),
						 gv_number(op, "now"), &got),
				  TKSHM_OK);
			algo_assert_decision(
				gv_member(suite, "name")->valuestring, &got,
				&want);
			ops++;
		}
		tkshm_close(t);
		suites++;
	}
	assert_int_equal(suites, 3);
	assert_int_equal(ops, 14);
}

/* ------------------------------------------------------------------------
 * Tables against their pure transitions
 * ---------------------------------------------------------------------- */

static const char *const specs[] = {
	"tokenBucket:capacity=10,refillPerSec=5",
	"tokenBucket:capacity=7.5,refillPerSec=0.3",
	"fixedWindow:limit=5,windowMs=1000",
	"fixedWindow:limit=100,windowMs=333.25",
	"slidingWindow:limit=10,windowMs=1000",
	"slidingWindow:limit=20,windowMs=1000,buckets=3",
	"slidingWindow:limit=100,windowMs=60000,buckets=1",
	"slidingWindow:limit=50,windowMs=997,buckets=64",
	"slidingWindowLog:limit=5,windowMs=1000",
	"slidingWindowLog:limit=128,windowMs=250.5",
	"slidingWindowLog:limit=0.5,windowMs=1000", /* one word, still wide */
	"quota:limit=1000,resetCadence=calendar-month,offsetMinutes=330",
	"quota:limit=30,resetCadence=calendar-week,weekStartsOn=0",
	"quota:limit=7,resetCadence=calendar-day,offsetMinutes=-840",
	"quota:limit=9,resetCadence=fixed,periodMs=1000,anchor=250",
	"quota:limit=12,resetCadence=rolling,periodMs=5000,buckets=4",
	"tokenBudget:budget=100,windowMs=60000",
	"tokenBudget:budget=3,windowMs=10",
};

#define MODEL_KEYS 12

struct model {
	struct tk_algo a;
	bool present[MODEL_KEYS];
	uint64_t st[MODEL_KEYS][TK_ALGO_MAX_WORDS];
};

static double
random_cost(const struct tk_algo *a, uint64_t *rng)
{
	unsigned r = algo_below(rng, 10);

	if (a->kind == TKSHM_KIND_TOKEN_BUDGET ||
	    a->kind == TKSHM_KIND_SLIDING_LOG || r < 6)
		return 1 + algo_below(rng, 3);
	return 0.25 + algo_unit(rng) * 3; /* fractional */
}

/* One random timeline on a table of `slots` slots: every decision and
 * every peek must equal the pure transition's on the key's private state.
 * With few slots, keys reclaim each other's idle slots (W9): an idle state
 * decides as absent, so the model needs no change; a refusal (window full
 * of live keys) must change nothing either. */
static unsigned
timeline(const char *spec, uint64_t slots, double start, uint64_t seed,
	 unsigned steps)
{
	tkshm_policy p = tkt_policy(spec);
	tkshm_table *t = tkt_anon(spec, slots);
	struct model m;
	char err[160];
	uint64_t rng = seed;
	double now = start;
	unsigned refusals = 0;

	memset(&m, 0, sizeof m);
	assert_rc(tk_algo_init(&m.a, &p, err, sizeof err), TKSHM_OK);
	assert_true(tk_algo_is_wide(&m.a));
	for (unsigned i = 0; i < steps; i++) {
		unsigned k = algo_below(&rng, MODEL_KEYS);
		double cost = random_cost(&m.a, &rng);
		char key[16], what[256];
		tkshm_decision got, want;
		uint64_t next[TK_ALGO_MAX_WORDS];
		int rc;

		switch (algo_below(&rng, 6)) {
		case 0:
			break; /* same instant */
		case 1:
			now += algo_unit(&rng); /* fractional ms */
			break;
		case 5:
			now += algo_unit(&rng) * 5000;
			break;
		default:
			now += floor(algo_unit(&rng) * 300);
		}
		snprintf(key, sizeof key, "key-%u", k);
		snprintf(what, sizeof what, "%s step %u key %u now %.17g", spec,
			 i, k, now);
		if (algo_below(&rng, 5) == 0) {
			assert_rc(tkshm_peek_at(t, key, strlen(key), now, &got),
				  TKSHM_OK);
			tk_algo_peek_w(&m.a, m.present[k], m.st[k], now, &want);
			algo_assert_decision(what, &got, &want);
			/* And the forecast, on the same state. */
			{
				tkshm_forecast fg;
				struct tk_forecast fw;

				assert_rc(tkshm_forecast_at(t, key, strlen(key),
							    cost, now, &fg),
					  TKSHM_OK);
				tk_algo_forecast(&m.a, m.present[k], m.st[k],
						 now, cost, &fw);
				if (fg.spendable_now != fw.spendable_now ||
				    fg.next_replenish_at !=
					    fw.next_replenish_at ||
				    fg.full_at != fw.full_at)
					fail_msg("%s: forecast differs", what);
			}
			continue;
		}
		rc = tkshm_check_at(t, key, strlen(key), cost, now, &got);
		if (rc == TKSHM_EFULL) {
			refusals++;
			continue;
		}
		assert_rc(rc, TKSHM_OK);
		if (tk_algo_check_w(&m.a, m.present[k], m.st[k], now, cost,
				    next, &want)) {
			memcpy(m.st[k], next, sizeof next);
			m.present[k] = true;
		}
		algo_assert_decision(what, &got, &want);
	}
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
	return refusals;
}

static void
tables_equal_transitions(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		/* Roomy tables, then ones whose keys share slots. */
		(void)timeline(specs[s], 64, 0, 0x1234 + s, 3000);
		(void)timeline(specs[s], 64, 1.7e12 + 0.5, 0x99 + s, 3000);
		(void)timeline(specs[s], 8, 1e6, 0x777 + s, 3000);
	}
}

/* A full window of live wide keys refuses (W9), and changes nothing. */
static void
full_window_refuses(void **state)
{
	tkshm_table *t = tkt_anon("fixedWindow:limit=5,windowMs=1000000", 8);
	tkshm_stats st;
	unsigned refused = 0, admitted = 0;

	(void)state;
	for (unsigned k = 0; k < 40; k++) {
		char key[16];
		tkshm_decision d;
		int rc;

		snprintf(key, sizeof key, "k%u", k);
		rc = tkshm_check_at(t, key, strlen(key), 1, 5000, &d);
		if (rc == TKSHM_EFULL)
			refused++;
		else {
			assert_rc(rc, TKSHM_OK);
			assert_true(d.allowed);
			admitted++;
		}
	}
	assert_true(admitted >= 8 && admitted <= 16);
	assert_int_equal(refused, 40 - admitted);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.refusals, refused);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* Reset makes a wide key absent; its next check starts FRESH (W6). */
static void
reset_restarts(void **state)
{
	tkshm_table *t = tkt_anon("slidingWindowLog:limit=3,windowMs=1000", 64);
	tkshm_decision d;

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_rc(tkshm_check_at(t, "a", 1, 1, 100, &d), TKSHM_OK);
		assert_true(d.allowed);
	}
	assert_rc(tkshm_check_at(t, "a", 1, 1, 100, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_rc(tkshm_reset(t, "a", 1), TKSHM_OK);
	assert_rc(tkshm_check_at(t, "a", 1, 1, 100, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 2);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Claims: a stopped claimant is stolen from, and can no longer write
 * ---------------------------------------------------------------------- */

static void
abandoned_claim_is_stolen(void **state)
{
	/* A sliding window: two-word kinds keep pairs (P1-P9), no claims. */
	tkshm_table *t = tkt_anon(
		"slidingWindow:limit=10,windowMs=100000000,buckets=2", 64);
	uint64_t ctl, ctl2, index, fp, target;
	struct tk_slot *s;
	struct tk_unit *u;
	tkshm_decision d;
	tkshm_stats st;

	(void)state;
	assert_rc(tkshm_check_at(t, "k", 1, 1, 1000, &d), TKSHM_OK);
	index = tkt_slot_of(t, "k", NULL, &ctl);
	assert_false(tk_ctl_fresh(ctl));
	assert_int_equal(tk_ctl_claim(ctl), 0);
	s = tk_slot_at(t, index);
	fp = s->fp;
	/* Play a claimant that stops right after its claim (W2). */
	assert_true(tk_cas128(
		s, fp, ctl, fp,
		tk_ctl_make(false, tk_ctl_active(ctl), 1, tk_ctl_g40(ctl))));
	u = tk_wide_record(t, index, tk_ctl_active(ctl));
	target = u[0].gen + 1; /* its target generation */

	/* A denial-free peek and a check still work: the check steals. */
	assert_rc(tkshm_peek_at(t, "k", 1, 1000, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 9);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 1000, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 8);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.claims_stolen, 1);
	(void)tkt_slot_of(t, "k", NULL, &ctl2);
	assert_int_equal(tk_ctl_claim(ctl2), 0);
	/* W8: every unit the thief published is beyond the stale target, so
	 * the stale claimant's next unit write (W3) must stop. */
	u = tk_wide_record(t, index, tk_ctl_active(ctl2));
	for (uint32_t i = 0; i < t->wide_units; i++)
		assert_true(u[i].gen > target);
	/* ... and its publish fails: the control word moved on. */
	assert_false(tk_cas128(
		s, fp,
		tk_ctl_make(false, tk_ctl_active(ctl), 1, tk_ctl_g40(ctl)), fp,
		tk_ctl_make(false, 1 - tk_ctl_active(ctl), 0, target)));
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* A scribbled unit makes the record inconsistent: verify reports it, and a
 * check never crashes on it. */
static void
verify_catches_torn_record(void **state)
{
	tkshm_table *t =
		tkt_anon("slidingWindow:limit=5,windowMs=1000,buckets=2", 64);
	uint64_t ctl, index, problems = 0;
	struct tk_unit *u;
	tkshm_decision d;

	(void)state;
	assert_rc(tkshm_check_at(t, "k", 1, 1, 10, &d), TKSHM_OK);
	index = tkt_slot_of(t, "k", NULL, &ctl);
	u = tk_wide_record(t, index, tk_ctl_active(ctl));
	u[1].gen += 2;
	assert_rc(tkshm_verify(t, NULL, NULL, &problems), TKSHM_ECORRUPT);
	assert_true(problems >= 1);
	u[1].gen -= 2;
	u[1].val = tk_f64_word(-1.0); /* a negative count: invalid */
	assert_rc(tkshm_verify(t, NULL, NULL, &problems), TKSHM_ECORRUPT);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 10, &d), TKSHM_ECORRUPT);
	assert_rc(tkshm_peek_at(t, "k", 1, 10, &d), TKSHM_ECORRUPT);
	tkshm_close(t);
}

/* A torn active record under a control word that stays put is no race
 * (claims write only the inactive record, W5): a peek, a check and a
 * forecast report it as corrupt at once.  Found by tests/fuzz/fuzz_table:
 * each call used to retry TK_MAX_RETRIES times plus TK_WIDE_BUSY_MS
 * (250 ms) and return TKSHM_EBUSY, so a scribbled table took seconds per
 * key. */
static void
torn_record_is_corrupt_not_busy(void **state)
{
	tkshm_table *t =
		tkt_anon("slidingWindow:limit=5,windowMs=1000,buckets=2", 64);
	uint64_t ctl, index;
	struct tk_unit *u;
	tkshm_decision d;
	tkshm_forecast f;
	struct timespec a, b;
	double ms;

	(void)state;
	assert_rc(tkshm_check_at(t, "k", 1, 1, 10, &d), TKSHM_OK);
	index = tkt_slot_of(t, "k", NULL, &ctl);
	u = tk_wide_record(t, index, tk_ctl_active(ctl));
	u[1].gen += 2; /* the record no longer carries one generation */
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_rc(tkshm_peek_at(t, "k", 1, 10, &d), TKSHM_ECORRUPT);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 10, &d), TKSHM_ECORRUPT);
	assert_rc(tkshm_forecast_at(t, "k", 1, 1, 10, &f), TKSHM_ECORRUPT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
	     (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	/* Three calls well inside one TK_WIDE_BUSY_MS, even under ASan. */
	assert_true(ms < 200.0);
	/* The unit put back, the key decides again. */
	u[1].gen -= 2;
	assert_rc(tkshm_check_at(t, "k", 1, 1, 10, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 3);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Give-backs (multi.c undoing a commit): exact when untouched, and exact for
 * every algorithm when the key was touched at the same instant since
 * ---------------------------------------------------------------------- */

static void
assert_peek_is_model(tkshm_table *t, const struct tk_algo *a, bool present,
		     const uint64_t *st, double now, const char *what)
{
	tkshm_decision got, want;

	assert_rc(tkshm_peek_at(t, "k", 1, now, &got), TKSHM_OK);
	tk_algo_peek_w(a, present, st, now, &want);
	algo_assert_decision(what, &got, &want);
}

static void
give_backs(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		tkshm_policy p = tkt_policy(specs[s]);
		struct tk_algo a;
		uint64_t st[TK_ALGO_MAX_WORDS], nx[TK_ALGO_MAX_WORDS];
		double t0 = 1e6 + 3, t1 = t0 + 40;
		char err[160];
		bool present = false;
		tkshm_decision d;
		struct tk_commit c;

		for (int fresh = 0; fresh < 2; fresh++) {
			tkshm_table *t = tkt_anon(specs[s], 64);

			assert_rc(tk_algo_init(&a, &p, err, sizeof err),
				  TKSHM_OK);
			present = false;
			if (!tk_algo_check_w(&a, false, st, t0, 1, nx, &d)) {
				/* The log of limit 0.5 never admits a unit. */
				tkshm_close(t);
				continue;
			}
			if (!fresh) {
				/* A state to go back to. */
				assert_rc(tkshm_check_at(t, "k", 1, 1, t0, &d),
					  TKSHM_OK);
				assert_true(tk_algo_check_w(&a, false, st, t0,
							    1, st, &d));
				present = true;
			}
			/* Untouched since: the exact earlier state. */
			memset(&c, 0, sizeof c);
			assert_rc(tk_table_check(t, "k", 1, 1, t1, &d, &c),
				  TKSHM_OK);
			assert_true(d.allowed);
			assert_rc(tk_table_refund(t, &c, 1, t1), TKSHM_OK);
			assert_peek_is_model(t, &a, present, st, t1,
					     "untouched give-back");
			/* Touched at the same instant: only the other
			 * admission remains. */
			memset(&c, 0, sizeof c);
			assert_rc(tk_table_check(t, "k", 1, 1, t1, &d, &c),
				  TKSHM_OK);
			assert_true(d.allowed);
			assert_rc(tkshm_check_at(t, "k", 1, 1, t1, &d),
				  TKSHM_OK);
			assert_true(d.allowed);
			assert_rc(tk_table_refund(t, &c, 1, t1), TKSHM_OK);
			assert_true(tk_algo_check_w(&a, present, st, t1, 1, nx,
						    &d));
			assert_peek_is_model(t, &a, true, nx, t1,
					     "touched give-back");
			assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
			tkshm_close(t);
		}
	}
}

/* `all` over a wide and a denying dimension consumes nothing. */
static void
multi_all_consumes_nothing(void **state)
{
	tkshm_table *w = tkt_anon("slidingWindow:limit=5,windowMs=1000", 64);
	tkshm_table *g = tkt_anon("gcra:limit=1,periodMs=100000", 64);
	tkshm_dimension dims[2] = { { w, "k", 1, 1 }, { g, "k", 1, 1 } };
	tkshm_decision d, each[2], before, after;

	(void)state;
	assert_rc(tkshm_check_at(g, "k", 1, 1, 50, &d), TKSHM_OK);
	assert_rc(tkshm_peek_at(w, "k", 1, 60, &before), TKSHM_OK);
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, dims, 2, 60, &d, each,
				       NULL),
		  TKSHM_OK);
	assert_false(d.allowed);
	assert_true(each[0].allowed);
	assert_false(each[1].allowed);
	assert_rc(tkshm_peek_at(w, "k", 1, 60, &after), TKSHM_OK);
	algo_assert_decision("wide dimension after all", &after, &before);
	/* any: the wide dimension admits and is the only one charged. */
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ANY, dims, 2, 60, &d, each,
				       NULL),
		  TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 4);
	tkshm_close(w);
	tkshm_close(g);
}

/* ThrottleKit's forecast example through a table: capacity 5 at 1/s,
 * drained. */
static void
forecast_example(void **state)
{
	tkshm_table *t = tkt_anon("tokenBucket:capacity=5,refillPerSec=1", 64);
	tkshm_forecast f;
	tkshm_decision d;

	(void)state;
	assert_rc(tkshm_forecast_at(t, "k", 1, 1, 10000, &f), TKSHM_OK);
	assert_int_equal(f.spendable_now, 5);
	assert_int_equal(f.full_at, 10000);
	assert_rc(tkshm_check_at(t, "k", 1, 5, 10000, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_forecast_at(t, "k", 1, 1, 10000, &f), TKSHM_OK);
	assert_int_equal(f.spendable_now, 0);
	assert_int_equal(f.next_replenish_at, 11000);
	assert_int_equal(f.full_at, 15000);
	assert_rc(tkshm_forecast_at(t, "k", 1, 0, 10000, &f), TKSHM_ECOST);
	tkshm_close(t);
}

/* tokenBudget takes whole tokens only. */
static void
token_budget_cost_must_be_whole(void **state)
{
	tkshm_table *t = tkt_anon("tokenBudget:budget=10,windowMs=1000", 64);
	tkshm_decision d;

	(void)state;
	assert_rc(tkshm_check_at(t, "k", 1, 1.5, 10, &d), TKSHM_ECOST);
	assert_rc(tkshm_check_at(t, "k", 1, 2, 10, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 8);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(golden_rate_limit_as_given),
		cmocka_unit_test(golden_rate_limit_offset_1000),
		cmocka_unit_test(golden_token_budget),
		cmocka_unit_test(tables_equal_transitions),
		cmocka_unit_test(full_window_refuses),
		cmocka_unit_test(reset_restarts),
		cmocka_unit_test(abandoned_claim_is_stolen),
		cmocka_unit_test(verify_catches_torn_record),
		cmocka_unit_test(torn_record_is_corrupt_not_busy),
		cmocka_unit_test(token_budget_cost_must_be_whole),
		cmocka_unit_test(give_backs),
		cmocka_unit_test(forecast_example),
		cmocka_unit_test(multi_all_consumes_nothing),
	};
	return cmocka_run_group_tests(tests, algo_golden_setup,
				      algo_golden_teardown);
}
