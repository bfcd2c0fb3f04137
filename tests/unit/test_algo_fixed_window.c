/*
 * test_algo_fixed_window.c - the pure fixed-window transition
 * (src/algorithms/fixed_window.h) against ThrottleKit.
 *
 * Oracles: the golden vectors (the fixedWindow suite, as given and with now
 * and resetAt shifted by +1000), and a model written below from
 * docs/semantics.md, "Fixed window".  The model has one
 * switch, regression_rule: off it is ThrottleKit exactly (a backward jump
 * into an earlier window counts from 0), on it adds tkshm's one documented
 * difference (such a request is decided within the stored, later window).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"
#include "algorithms/fixed_window.h"

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's fixedWindow, one key.
 * ---------------------------------------------------------------------- */

struct model {
	double limit, window_ms;
	bool regression_rule;
	bool present;
	double start, count;
};

static struct model
model_new(double limit, double window_ms, bool regression_rule)
{
	struct model m;

	memset(&m, 0, sizeof m);
	m.limit = limit;
	m.window_ms = window_ms;
	m.regression_rule = regression_rule;
	return m;
}

/* The window now falls in, and its count. */
static double
model_window(const struct model *m, double now, double *start, double *reset)
{
	double ws = floor(now / m->window_ms) * m->window_ms;

	*start = ws;
	*reset = ws + m->window_ms;
	if (m->present && m->start == ws)
		return m->count;
	if (m->present && m->regression_rule && ws < m->start) {
		*start = m->start;
		*reset = m->start + m->window_ms;
		return m->count;
	}
	return 0;
}

static double
clamp0(double x)
{
	return x < 0 ? 0 : x;
}

/* tkshm's one difference from ThrottleKit's fields: a denial's retry is at
 * least 1 ms, where ThrottleKit's ceil(reset - now) can round to 0 with
 * now within an ulp of the window's end (src/algorithms/decision.h). */
static int64_t
denial_retry(int64_t r)
{
	return r < 1 ? 1 : r;
}

static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	tkshm_decision d;
	double start, reset;
	double count = model_window(m, now, &start, &reset);

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->limit);
	d.reset_at = algo_field(ceil(reset));
	if (count + cost <= m->limit) {
		m->present = true;
		m->start = start;
		m->count = count + cost;
		d.allowed = true;
		d.remaining = algo_field(clamp0(floor(m->limit - m->count)));
		return d;
	}
	d.remaining = algo_field(clamp0(floor(m->limit - count)));
	d.retry_after_ms = denial_retry(algo_field(ceil(reset - now)));
	return d;
}

static tkshm_decision
model_peek(const struct model *m, double now)
{
	tkshm_decision d;
	double start, reset;
	double count = model_window(m, now, &start, &reset);

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->limit);
	d.allowed = count + 1 <= m->limit;
	d.remaining = algo_field(clamp0(floor(m->limit - count)));
	d.reset_at = algo_field(ceil(reset));
	d.retry_after_ms =
		d.allowed ? 0 : denial_retry(algo_field(ceil(reset - now)));
	return d;
}

/* ------------------------------------------------------------------------
 * Helpers around the code under test
 * ---------------------------------------------------------------------- */

static struct tk_fixed_window
window(double limit, double window_ms)
{
	struct tk_fixed_window a;
	char err[160] = "";

	if (tk_fixed_window_init(&a, limit, window_ms, err, sizeof err) !=
	    TKSHM_OK)
		fail_msg("tk_fixed_window_init(%g, %g): %s", limit, window_ms,
			 err);
	return a;
}

struct key {
	bool present;
	uint64_t st[TK_FIXED_WINDOW_WORDS];
};

ALGO_DEFINE_IMPL(tk_fixed_window, struct tk_fixed_window)

static tkshm_decision
check(const struct tk_fixed_window *a, struct key *k, double now, double cost)
{
	struct algo_impl im =
		tk_fixed_window_impl(a, "check", TK_FIXED_WINDOW_WORDS);

	return algo_key_check(&im, &k->present, k->st, now, cost);
}

static tkshm_decision
peek(const struct tk_fixed_window *a, const struct key *k, double now)
{
	struct algo_impl im =
		tk_fixed_window_impl(a, "peek", TK_FIXED_WINDOW_WORDS);

	return algo_key_peek(&im, k->present, k->st, now);
}

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

static struct algo_impl
golden_window(const cJSON *suite)
{
	static struct tk_fixed_window a;
	const cJSON *opts = gv_member(gv_member(suite, "strategy"), "options");

	a = window(gv_number(opts, "limit"), gv_number(opts, "windowMs"));
	return tk_fixed_window_impl(&a, "check", TK_FIXED_WINDOW_WORDS);
}

static void
replay_golden(const cJSON *golden, double offset)
{
	static const struct algo_gv_replay r = { .kind = "fixedWindow",
						 .cost = "cost",
						 .start = golden_window };
	unsigned suites, ops = algo_gv_replay(golden, &r, offset, &suites);

	assert_int_equal(suites, 1); /* limit5-1s */
	assert_int_equal(ops, 7);
}

static void
test_golden_as_given(void **state)
{
	replay_golden(*state, 0);
}

static void
test_golden_offset_1000(void **state)
{
	replay_golden(*state, 1000);
}

/* ------------------------------------------------------------------------
 * Random timelines against the model
 * ---------------------------------------------------------------------- */

static const struct {
	double limit, window_ms;
} policies[] = {
	{ 5, 1000 },  { 50, 1000 }, { 10, 250 },  { 3.5, 333.3 },
	{ 100, 0.7 }, { 1, 60000 }, { 2, 0.001 }, { 7.25, 1234.5 },
	{ 1e6, 100 }, { 0.5, 10 },
};

#define TIMELINES 12
#define STEPS	  400

/* Units charged per window by one run (windows by start). */
struct ledger {
	double start[4096], units[4096];
	unsigned n;
};

static double
ledger_add(struct ledger *l, double start, double units)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->start[i] == start)
			return l->units[i] += units;
	assert_true(l->n < 4096);
	l->start[l->n] = start;
	l->units[l->n] = units;
	return l->units[l->n++];
}

/*
 * Runs the timelines of every policy, comparing every check and peek field
 * by field, and every state word bit by bit, with the model.  With
 * `regressions`, about one step in seven moves the clock back by up to 1.5
 * windows, and the model applies the regression rule; every admission is
 * then charged to the window its state records, which must never hold more
 * than `limit`, while ThrottleKit's model, run on the same timeline, must
 * over-admit somewhere (so the timelines do exercise the hazard).
 */
static void
run_timelines(bool regressions, uint64_t seed)
{
	static struct ledger ours, theirs;
	unsigned steps = 0, admitted = 0, denied = 0, early_denials = 0;
	unsigned tk_overflows = 0;

	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		struct tk_fixed_window a =
			window(policies[p].limit, policies[p].window_ms);
		double w = policies[p].window_ms;

		for (unsigned tl = 0; tl < TIMELINES; tl++) {
			uint64_t rs = seed + p * 1000 + tl;
			struct model m =
				model_new(policies[p].limit, w, regressions);
			struct model tk =
				model_new(policies[p].limit, w, false);
			struct key k = { 0 };
			double now = ALGO_EPOCH + tl * 37.0 +
				     (tl & 1 ? algo_unit(&rs) : 0);
			double last_start = -1;

			ours.n = theirs.n = 0;
			for (unsigned s = 0; s < STEPS; s++) {
				double u = algo_unit(&rs), cost;
				tkshm_decision got, want, tkd;
				char what[160];

				if (regressions && u < 0.15)
					now -= algo_unit(&rs) * 1.5 * w;
				else if (u < 0.25)
					; /* same instant */
				else if (u < 0.5)
					now += floor(algo_unit(&rs) * 900);
				else if (u < 0.75)
					now += algo_unit(&rs) * 900;
				else
					now += algo_unit(&rs) * 0.6 * w;
				u = algo_unit(&rs);
				if (u < 0.5)
					cost = 1 + algo_below(&rs, 4);
				else if (u < 0.95)
					cost = algo_unit(&rs) * 3 + 0.001;
				else
					cost = policies[p].limit *
					       (0.5 + algo_unit(&rs));
				snprintf(what, sizeof what,
					 "policy %zu timeline %u step %u "
					 "(now %.17g cost %.17g)",
					 p, tl, s, now, cost);

				got = peek(&a, &k, now);
				want = model_peek(&m, now);
				algo_assert_decision(what, &got, &want);
				if (k.present) {
					bool idle = tk_fixed_window_is_idle(
						&a, k.st, now);
					double debt = tk_fixed_window_debt(
						&a, k.st, now);

					assert_true(idle == (debt == 0));
					assert_true(debt >= 0);
					if (idle) {
						struct key cold = { 0 };
						struct key warm = k;
						tkshm_decision dc, dw;

						dc = check(&a, &cold, now,
							   cost);
						dw = check(&a, &warm, now,
							   cost);
						algo_assert_decision(what, &dw,
								     &dc);
						if (dc.allowed)
							assert_memory_equal(
								cold.st,
								warm.st,
								sizeof cold.st);
					}
				}

				got = check(&a, &k, now, cost);
				want = model_check(&m, now, cost);
				algo_assert_decision(what, &got, &want);
				assert_true(k.present == m.present);
				if (m.present) {
					algo_assert_word(what, k.st, 0,
							 m.start);
					algo_assert_word(what, k.st, 1,
							 m.count);
				}
				if (got.allowed) {
					double start = tk_word_f64(k.st[0]);
					double charged =
						ledger_add(&ours, start, cost);

					/* The stored window never moves
					 * back, and never holds more than
					 * `limit`. */
					assert_true(start >= last_start);
					last_start = start;
					if (charged > policies[p].limit)
						fail_msg("%s: %.17g units "
							 "charged to window "
							 "%.17g, limit %g",
							 what, charged, start,
							 policies[p].limit);
				} else if (regressions &&
					   floor(now / w) * w < m.start) {
					early_denials++;
				}
				tkd = model_check(&tk, now, cost);
				if (tkd.allowed &&
				    ledger_add(&theirs, tk.start, cost) >
					    policies[p].limit)
					tk_overflows++;
				admitted += got.allowed;
				denied += !got.allowed;
				steps++;
			}
		}
	}
	assert_true(steps >= 40000);
	assert_true(admitted > steps / 5);
	assert_true(denied > steps / 10);
	if (regressions) {
		assert_true(early_denials > 100);
		assert_true(tk_overflows > 100);
	} else {
		assert_int_equal(tk_overflows, 0);
	}
}

static void
test_forward_timelines_match_throttlekit(void **state)
{
	(void)state;
	run_timelines(false, 2000);
}

static void
test_timelines_with_regressions(void **state)
{
	(void)state;
	run_timelines(true, 888000);
}

/* ------------------------------------------------------------------------
 * Properties
 * ---------------------------------------------------------------------- */

/* Exactly `limit` cost-1 requests per window, wherever they fall in it;
 * windows are aligned to the epoch. */
static void
test_exactly_limit_per_window(void **state)
{
	static const struct {
		double limit, window_ms;
		unsigned admits;
	} cases[] = {
		{ 5, 1000, 5 },
		{ 1, 60000, 1 },
		{ 3.5, 1000, 3 },
		{ 100, 250, 100 },
	};

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct tk_fixed_window a =
			window(cases[c].limit, cases[c].window_ms);
		struct key k = { 0 };
		double w = cases[c].window_ms;
		/* An epoch-aligned window start near ALGO_EPOCH. */
		double base = floor(ALGO_EPOCH / w) * w;

		for (int win = 0; win < 20; win++) {
			double ws = base + win * w;
			unsigned admitted = 0, n = 4 * cases[c].admits + 4;

			for (unsigned i = 0; i < n; i++) {
				double now = ws + (w - 1) * i / n + 0.25;
				tkshm_decision d = check(&a, &k, now, 1);

				assert_int_equal(d.reset_at,
						 (int64_t)ceil(ws + w));
				if (d.allowed) {
					assert_int_equal(admitted, i);
					admitted++;
					assert_int_equal(
						d.remaining,
						(int64_t)floor(cases[c].limit -
							       admitted));
				} else {
					assert_int_equal(
						d.retry_after_ms,
						(int64_t)ceil(ws + w - now));
				}
			}
			assert_int_equal(admitted, cases[c].admits);
		}
	}
}

/* The documented 2 x limit across one boundary: limit 5 just before the
 * boundary and 5 again on it, 10 admissions within 1 ms. */
static void
test_twice_limit_across_boundary(void **state)
{
	struct tk_fixed_window a = window(5, 1000);
	static const double bases[] = { 0, 1000, ALGO_EPOCH };

	(void)state;
	for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
		struct key k = { 0 };
		double b = bases[i] + 2000;
		unsigned admitted = 0;

		for (int n = 0; n < 7; n++)
			admitted += check(&a, &k, b - 1, 1).allowed;
		for (int n = 0; n < 7; n++)
			admitted += check(&a, &k, b, 1).allowed;
		assert_int_equal(admitted, 10);
	}
}

/*
 * The notes' regression example (limit 2, window 1000): 2 admitted at
 * t=5000, denied at 5100.  ThrottleKit then admits at 4900 (count 0 in the
 * earlier window) and again at 5200 (its state now says window 4000); tkshm
 * decides 4900 within window 5000 and denies both, until 6000.
 */
static void
test_regression_example_from_notes(void **state)
{
	struct tk_fixed_window a = window(2, 1000);
	struct model tk = model_new(2, 1000, false);
	struct key k = { 0 };
	tkshm_decision d;

	(void)state;
	for (int i = 0; i < 2; i++) {
		assert_true(check(&a, &k, 5000, 1).allowed);
		assert_true(model_check(&tk, 5000, 1).allowed);
	}
	assert_false(check(&a, &k, 5100, 1).allowed);
	assert_false(model_check(&tk, 5100, 1).allowed);

	assert_true(model_check(&tk, 4900, 1).allowed); /* the hazard */
	d = check(&a, &k, 4900, 1);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.reset_at, 6000);
	assert_int_equal(d.retry_after_ms, 1100);
	d = peek(&a, &k, 4900);
	assert_false(d.allowed);
	assert_int_equal(d.reset_at, 6000);

	assert_true(model_check(&tk, 5200, 1).allowed); /* the hazard */
	assert_false(check(&a, &k, 5200, 1).allowed);
	assert_true(check(&a, &k, 6000, 1).allowed);
}

/* A regression into an earlier window with room left in the later one is
 * admitted, and charged to the later window. */
static void
test_regression_charges_the_later_window(void **state)
{
	struct tk_fixed_window a = window(3, 1000);
	struct key k = { 0 };
	tkshm_decision d;

	(void)state;
	assert_true(check(&a, &k, ALGO_EPOCH + 10, 1).allowed);
	d = check(&a, &k, ALGO_EPOCH - 500, 1);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_int_equal(d.reset_at, (int64_t)ALGO_EPOCH + 1000);
	algo_assert_word("regression", k.st, 0, ALGO_EPOCH);
	algo_assert_word("regression", k.st, 1, 2);
	assert_false(tk_fixed_window_is_idle(&a, k.st, ALGO_EPOCH - 500));
	assert_true(tk_fixed_window_debt(&a, k.st, ALGO_EPOCH - 500) == 2);
	assert_true(check(&a, &k, ALGO_EPOCH + 999, 1).allowed);
	d = check(&a, &k, ALGO_EPOCH + 999, 1);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after_ms, 1);
	assert_true(check(&a, &k, ALGO_EPOCH + 1000, 3).allowed);
}

/* Denials at one instant are identical and consume nothing; a cost above
 * limit is never admitted. */
static void
test_denial_keeps_state(void **state)
{
	struct tk_fixed_window a = window(4, 1000);
	struct key k = { 0 };
	tkshm_decision first;
	uint64_t before[2];

	(void)state;
	assert_false(check(&a, &k, ALGO_EPOCH, 4.5).allowed);
	assert_false(k.present);
	assert_true(check(&a, &k, ALGO_EPOCH, 3.5).allowed);
	memcpy(before, k.st, sizeof before);
	first = check(&a, &k, ALGO_EPOCH + 1, 1);
	assert_false(first.allowed);
	assert_int_equal(first.remaining, 0);
	for (int i = 0; i < 50; i++) {
		tkshm_decision d = check(&a, &k, ALGO_EPOCH + 1, 1);

		algo_assert_decision("repeated denial", &d, &first);
		assert_memory_equal(k.st, before, sizeof before);
	}
	assert_true(check(&a, &k, ALGO_EPOCH + 1, 0.5).allowed);
}

static void
test_idle_and_state_valid(void **state)
{
	struct tk_fixed_window a = window(10, 1000);
	uint64_t st[2];

	(void)state;
	st[0] = tk_f64_word(5000);
	st[1] = tk_f64_word(3);
	assert_true(tk_fixed_window_state_valid(&a, st));
	assert_false(tk_fixed_window_is_idle(&a, st, 5999.5));
	assert_true(tk_fixed_window_debt(&a, st, 5999.5) == 3);
	assert_true(tk_fixed_window_is_idle(&a, st, 6000));
	assert_true(tk_fixed_window_debt(&a, st, 6000) == 0);
	assert_false(tk_fixed_window_is_idle(&a, st, 100)); /* regression */
	st[1] = tk_f64_word(10);
	assert_true(tk_fixed_window_state_valid(&a, st));
	/* Above the limit: a limit lowered in place since (protocol.h L1). */
	st[1] = tk_f64_word(10.5);
	assert_true(tk_fixed_window_state_valid(&a, st));
	st[1] = tk_f64_word(INFINITY);
	assert_false(tk_fixed_window_state_valid(&a, st));
	/* A give-back of everything the window counted (refund.c). */
	st[1] = tk_f64_word(0);
	assert_true(tk_fixed_window_state_valid(&a, st));
	st[1] = tk_f64_word(-0.5);
	assert_false(tk_fixed_window_state_valid(&a, st));
	st[1] = tk_f64_word(NAN);
	assert_false(tk_fixed_window_state_valid(&a, st));
	st[1] = tk_f64_word(1);
	st[0] = tk_f64_word(-1000);
	assert_false(tk_fixed_window_state_valid(&a, st));
	st[0] = tk_f64_word(INFINITY);
	assert_false(tk_fixed_window_state_valid(&a, st));
	st[0] = UINT64_C(0xFFF8000000000000);
	assert_false(tk_fixed_window_state_valid(&a, st));
}

static void
test_validation(void **state)
{
	static const struct {
		double limit, window_ms;
		const char *names;
	} bad[] = {
		{ 0, 1000, "limit" },	   { -2, 1000, "limit" },
		{ NAN, 1000, "limit" },	   { INFINITY, 1000, "limit" },
		{ 5, 0, "windowMs" },	   { 5, -1, "windowMs" },
		{ 5, NAN, "windowMs" },	   { 5, INFINITY, "windowMs" },
		{ 5, 1e-310, "windowMs" }, { 5, 1e-300, "windowMs" },
	};
	struct tk_fixed_window a;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_rc(tk_fixed_window_init(&a, bad[i].limit,
					       bad[i].window_ms, err,
					       sizeof err),
			  TKSHM_EPOLICY);
		if (!strstr(err, bad[i].names))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 bad[i].names);
	}
	assert_rc(tk_fixed_window_init(&a, 0.25, 1e-280, NULL, 0), TKSHM_OK);
	assert_rc(tk_fixed_window_init(&a, 1e300, 1e300, err, sizeof err),
		  TKSHM_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_as_given),
		cmocka_unit_test(test_golden_offset_1000),
		cmocka_unit_test(test_forward_timelines_match_throttlekit),
		cmocka_unit_test(test_timelines_with_regressions),
		cmocka_unit_test(test_exactly_limit_per_window),
		cmocka_unit_test(test_twice_limit_across_boundary),
		cmocka_unit_test(test_regression_example_from_notes),
		cmocka_unit_test(test_regression_charges_the_later_window),
		cmocka_unit_test(test_denial_keeps_state),
		cmocka_unit_test(test_idle_and_state_valid),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, algo_golden_setup,
				      algo_golden_teardown);
}
