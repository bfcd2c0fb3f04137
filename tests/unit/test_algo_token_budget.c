/*
 * test_algo_token_budget.c - the pure token-budget meter
 * (src/algorithms/token_budget.h) against ThrottleKit.
 *
 * Oracles: the three tokenBudget golden suites (as given: ThrottleKit
 * leaves the tokenBudget suites unshifted), and a model written below from
 * docs/semantics.md, "Token budget" (the stop-at-boundary
 * meter; the window only rolls forward).  There is no deliberate difference
 * here, so every timeline, with clock regressions or without, is compared
 * with ThrottleKit itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"
#include "algorithms/token_budget.h"

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's tokenBudget meter, one key.
 * ---------------------------------------------------------------------- */

struct model {
	double L, window_ms;
	bool present;
	double w, served;
};

static struct model
model_new(double budget, double window_ms)
{
	struct model m;

	memset(&m, 0, sizeof m);
	m.L = floor(budget);
	m.window_ms = window_ms;
	return m;
}

/* The roll, on copies: a denial must not persist it. */
static void
model_roll(const struct model *m, double now, double *w, double *served)
{
	if (!m->present || now >= m->w + m->window_ms) {
		*w = floor(now / m->window_ms) * m->window_ms;
		*served = 0;
	} else {
		*w = m->w;
		*served = m->served;
	}
}

static tkshm_decision
model_debit(struct model *m, double now, double tokens)
{
	tkshm_decision d;
	double w, served, reset_at;

	model_roll(m, now, &w, &served);
	reset_at = ceil(w + m->window_ms);
	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->L);
	d.reset_at = algo_field(reset_at);
	if (served >= m->L) {
		double r = ceil(reset_at - now);

		d.retry_after_ms = algo_field(r > 0 ? r : 0);
		return d;
	}
	served += tokens;
	m->present = true;
	m->w = w;
	m->served = served;
	d.allowed = true;
	d.remaining = algo_field(m->L - served > 0 ? m->L - served : 0);
	return d;
}

/* What a one-token debit would see, remaining counted before it. */
static tkshm_decision
model_peek(const struct model *m, double now)
{
	tkshm_decision d;
	double w, served, reset_at, r;

	model_roll(m, now, &w, &served);
	reset_at = ceil(w + m->window_ms);
	r = ceil(reset_at - now);
	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->L);
	d.allowed = served < m->L;
	d.remaining = algo_field(m->L - served > 0 ? m->L - served : 0);
	d.reset_at = algo_field(reset_at);
	d.retry_after_ms = d.allowed ? 0 : algo_field(r > 0 ? r : 0);
	return d;
}

/* ------------------------------------------------------------------------
 * Helpers around the code under test
 * ---------------------------------------------------------------------- */

static struct tk_token_budget
meter(double budget, double window_ms)
{
	struct tk_token_budget a;
	char err[160] = "";

	if (tk_token_budget_init(&a, budget, window_ms, err, sizeof err) !=
	    TKSHM_OK)
		fail_msg("tk_token_budget_init(%g, %g): %s", budget, window_ms,
			 err);
	return a;
}

struct key {
	bool present;
	uint64_t st[TK_TOKEN_BUDGET_WORDS];
};

ALGO_DEFINE_IMPL(tk_token_budget, struct tk_token_budget)

static tkshm_decision
debit(const struct tk_token_budget *a, struct key *k, double now, double tokens)
{
	struct algo_impl im =
		tk_token_budget_impl(a, "debit", TK_TOKEN_BUDGET_WORDS);

	assert_true(tk_token_budget_cost_valid(tokens));
	return algo_key_check(&im, &k->present, k->st, now, tokens);
}

static tkshm_decision
peek(const struct tk_token_budget *a, const struct key *k, double now)
{
	struct algo_impl im =
		tk_token_budget_impl(a, "peek", TK_TOKEN_BUDGET_WORDS);

	return algo_key_peek(&im, k->present, k->st, now);
}

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

static struct algo_impl
golden_meter(const cJSON *suite)
{
	static struct tk_token_budget a;
	const cJSON *opts = gv_member(suite, "options");

	a = meter(gv_number(opts, "budget"), gv_number(opts, "windowMs"));
	return tk_token_budget_impl(&a, "debit", TK_TOKEN_BUDGET_WORDS);
}

static void
test_golden(void **state)
{
	static const struct algo_gv_replay r = {
		.prim = "tokenBudget",
		.cost = "tokens",
		.start = golden_meter,
		.cost_valid = tk_token_budget_cost_valid,
	};
	unsigned suites, ops = algo_gv_replay(*state, &r, 0, &suites);

	/* per-token-to-L, crossing-debit, window-roll. */
	assert_int_equal(suites, 3);
	assert_int_equal(ops, 14);
}

/* ------------------------------------------------------------------------
 * Random timelines against the model
 * ---------------------------------------------------------------------- */

static const struct {
	double budget, window_ms;
} policies[] = {
	{ 5, 60000 },  { 100, 1000 }, { 10, 333.3 }, { 7.9, 0.5 },
	{ 1, 1234.5 }, { 1000, 250 }, { 3, 10 },     { 64, 86400000 },
};

#define TIMELINES 15
#define STEPS	  400

static void
test_random_timelines(void **state)
{
	unsigned steps = 0, admitted = 0, denied = 0, back_denied = 0;

	(void)state;
	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		struct tk_token_budget a =
			meter(policies[p].budget, policies[p].window_ms);
		double w = policies[p].window_ms, L = floor(policies[p].budget);

		for (unsigned tl = 0; tl < TIMELINES; tl++) {
			uint64_t rs = 5000 + p * 1000 + tl;
			struct model m = model_new(policies[p].budget, w);
			struct key k = { 0 };
			double now = ALGO_EPOCH + tl * 37.0 +
				     (tl & 1 ? algo_unit(&rs) : 0);

			for (unsigned s = 0; s < STEPS; s++) {
				double u = algo_unit(&rs), tokens;
				tkshm_decision got, want;
				char what[160];
				bool back = false;

				if (u < 0.12) {
					now -= algo_unit(&rs) * 1.5 * w;
					back = true;
				} else if (u < 0.3) {
					; /* same instant */
				} else if (u < 0.6) {
					now += algo_unit(&rs) * 900;
				} else {
					now += algo_unit(&rs) * 0.3 * w;
				}
				u = algo_unit(&rs);
				if (u < 0.6)
					tokens = 1 + algo_below(&rs, 4);
				else if (u < 0.9)
					tokens = 1 + floor(algo_unit(&rs) * L);
				else
					tokens = 1 +
						 floor(algo_unit(&rs) * 2 * L);
				snprintf(what, sizeof what,
					 "policy %zu timeline %u step %u "
					 "(now %.17g tokens %.17g)",
					 p, tl, s, now, tokens);

				got = peek(&a, &k, now);
				want = model_peek(&m, now);
				algo_assert_decision(what, &got, &want);
				if (k.present) {
					bool idle = tk_token_budget_is_idle(
						&a, k.st, now);
					double debt = tk_token_budget_debt(
						&a, k.st, now);

					assert_true(idle == (debt == 0));
					if (idle) {
						struct key cold = { 0 };
						struct key warm = k;
						tkshm_decision dc, dw;

						dc = debit(&a, &cold, now,
							   tokens);
						dw = debit(&a, &warm, now,
							   tokens);
						algo_assert_decision(what, &dw,
								     &dc);
						assert_memory_equal(
							cold.st, warm.st,
							sizeof cold.st);
					}
				}

				got = debit(&a, &k, now, tokens);
				want = model_debit(&m, now, tokens);
				algo_assert_decision(what, &got, &want);
				assert_true(k.present == m.present);
				if (m.present) {
					algo_assert_word(what, k.st, 0, m.w);
					algo_assert_word(what, k.st, 1,
							 m.served);
				}
				/* Stop-at-boundary: a window's total is
				 * below L before its last debit. */
				if (got.allowed)
					assert_true(tk_word_f64(k.st[1]) -
							    tokens <
						    L);
				admitted += got.allowed;
				denied += !got.allowed;
				back_denied += back && !got.allowed;
				steps++;
			}
		}
	}
	assert_true(steps >= 40000);
	assert_true(admitted > steps / 5);
	assert_true(denied > steps / 10);
	assert_true(back_denied > 100);
}

/* ------------------------------------------------------------------------
 * Properties
 * ---------------------------------------------------------------------- */

/* Per-token debits: exactly L per window, overshoot 0; the next window
 * starts afresh at its epoch-aligned boundary. */
static void
test_per_token_exactly_L(void **state)
{
	struct tk_token_budget a = meter(7.9, 1000); /* L = 7 */
	struct key k = { 0 };

	(void)state;
	for (int win = 0; win < 10; win++) {
		double ws = ALGO_EPOCH + win * 1000.0;
		unsigned admitted = 0;

		for (int i = 0; i < 20; i++) {
			tkshm_decision d = debit(&a, &k, ws + i * 49.5, 1);

			assert_int_equal(d.limit, 7);
			assert_int_equal(d.reset_at, (int64_t)ws + 1000);
			if (d.allowed) {
				admitted++;
				assert_int_equal(d.remaining, 7 - admitted);
			} else {
				assert_int_equal(d.remaining, 0);
				assert_int_equal(
					d.retry_after_ms,
					(int64_t)ceil(ws + 1000 -
						      (ws + i * 49.5)));
			}
		}
		assert_int_equal(admitted, 7);
		algo_assert_word("per token", k.st, 1, 7); /* overshoot 0 */
	}
}

/* The crossing debit counts in full (overshoot tokens - 1 at most), and a
 * fresh window admits a single debit larger than L. */
static void
test_crossing_debit(void **state)
{
	struct tk_token_budget a = meter(100, 60000);
	struct key k = { 0 };
	tkshm_decision d;

	(void)state;
	d = debit(&a, &k, ALGO_EPOCH, 99);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	d = debit(&a, &k, ALGO_EPOCH + 1, 40); /* served 99 < 100: admitted */
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	algo_assert_word("crossing", k.st, 1, 139); /* overshoot 39 */
	assert_false(debit(&a, &k, ALGO_EPOCH + 2, 1).allowed);
	d = debit(&a, &k, ALGO_EPOCH + 60000, 250); /* fresh window */
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_false(debit(&a, &k, ALGO_EPOCH + 60001, 1).allowed);
}

/* The window only rolls forward: a backward jump stays in the stored
 * window (its count, its resetAt), so a spent budget cannot be re-opened. */
static void
test_rolls_only_forward(void **state)
{
	struct tk_token_budget a = meter(3, 1000);
	struct key k = { 0 };
	tkshm_decision d;

	(void)state;
	assert_true(debit(&a, &k, 5000, 3).allowed);
	d = debit(&a, &k, 4100, 1); /* the earlier window */
	assert_false(d.allowed);
	assert_int_equal(d.reset_at, 6000);
	assert_int_equal(d.retry_after_ms, 1900);
	d = peek(&a, &k, 100);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after_ms, 5900);
	assert_false(tk_token_budget_is_idle(&a, k.st, 100));
	assert_true(tk_token_budget_debt(&a, k.st, 100) == 3);
	assert_true(tk_token_budget_is_idle(&a, k.st, 6000));
	assert_true(tk_token_budget_debt(&a, k.st, 6000) == 0);
	d = debit(&a, &k, 6000, 1);
	assert_true(d.allowed);
	assert_int_equal(d.reset_at, 7000);
}

/* Denials are identical and consume nothing. */
static void
test_denial_keeps_state(void **state)
{
	struct tk_token_budget a = meter(2, 1000);
	struct key k = { 0 };
	tkshm_decision first;
	uint64_t before[2];

	(void)state;
	assert_true(debit(&a, &k, ALGO_EPOCH, 5).allowed);
	memcpy(before, k.st, sizeof before);
	first = debit(&a, &k, ALGO_EPOCH + 250.5, 1);
	assert_false(first.allowed);
	assert_int_equal(first.retry_after_ms, 750);
	for (int i = 0; i < 50; i++) {
		tkshm_decision d = debit(&a, &k, ALGO_EPOCH + 250.5, 1 + i);

		algo_assert_decision("repeated denial", &d, &first);
		assert_memory_equal(k.st, before, sizeof before);
	}
}

static void
test_cost_valid(void **state)
{
	(void)state;
	assert_true(tk_token_budget_cost_valid(1));
	assert_true(tk_token_budget_cost_valid(4096));
	assert_true(tk_token_budget_cost_valid(9007199254740991.0));
	assert_false(tk_token_budget_cost_valid(9007199254740992.0));
	assert_false(tk_token_budget_cost_valid(0));
	assert_false(tk_token_budget_cost_valid(0.5));
	assert_false(tk_token_budget_cost_valid(1.5));
	assert_false(tk_token_budget_cost_valid(-1));
	assert_false(tk_token_budget_cost_valid(NAN));
	assert_false(tk_token_budget_cost_valid(INFINITY));
}

static void
test_state_valid(void **state)
{
	struct tk_token_budget a = meter(10, 1000);
	uint64_t st[2];

	(void)state;
	st[0] = tk_f64_word(ALGO_EPOCH);
	st[1] = tk_f64_word(1);
	assert_true(tk_token_budget_state_valid(&a, st));
	st[1] = tk_f64_word(50); /* a crossing debit may exceed L */
	assert_true(tk_token_budget_state_valid(&a, st));
	/* A give-back of everything the window served (refund.c). */
	st[1] = tk_f64_word(0);
	assert_true(tk_token_budget_state_valid(&a, st));
	st[1] = tk_f64_word(-1);
	assert_false(tk_token_budget_state_valid(&a, st));
	st[1] = tk_f64_word(INFINITY);
	assert_false(tk_token_budget_state_valid(&a, st));
	st[1] = tk_f64_word(3);
	st[0] = tk_f64_word(-1000);
	assert_false(tk_token_budget_state_valid(&a, st));
	st[0] = tk_f64_word(NAN);
	assert_false(tk_token_budget_state_valid(&a, st));
	st[0] = UINT64_C(0xFFF8000000000000);
	assert_false(tk_token_budget_state_valid(&a, st));
}

static void
test_validation(void **state)
{
	static const struct {
		double budget, window_ms;
		const char *names;
	} bad[] = {
		{ 0.99, 1000, "budget" },     { 0, 1000, "budget" },
		{ -5, 1000, "budget" },	      { NAN, 1000, "budget" },
		{ INFINITY, 1000, "budget" }, { 5, 0, "windowMs" },
		{ 5, -1, "windowMs" },	      { 5, NAN, "windowMs" },
		{ 5, INFINITY, "windowMs" },  { 5, 1e-310, "windowMs" },
	};
	struct tk_token_budget a;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_rc(tk_token_budget_init(&a, bad[i].budget,
					       bad[i].window_ms, err,
					       sizeof err),
			  TKSHM_EPOLICY);
		if (!strstr(err, bad[i].names))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 bad[i].names);
	}
	assert_rc(tk_token_budget_init(&a, 1, 1, NULL, 0), TKSHM_OK);
	assert_true(a.L == 1);
	assert_rc(tk_token_budget_init(&a, 99.99, 60000, err, sizeof err),
		  TKSHM_OK);
	assert_true(a.L == 99);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_random_timelines),
		cmocka_unit_test(test_per_token_exactly_L),
		cmocka_unit_test(test_crossing_debit),
		cmocka_unit_test(test_rolls_only_forward),
		cmocka_unit_test(test_denial_keeps_state),
		cmocka_unit_test(test_cost_valid),
		cmocka_unit_test(test_state_valid),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, algo_golden_setup,
				      algo_golden_teardown);
}
