/*
 * test_algo_token_bucket.c - the pure token-bucket transition
 * (src/algorithms/token_bucket.h) against ThrottleKit.
 *
 * Oracles: the golden vectors (every tokenBucket suite, as given and with
 * now and resetAt shifted by +1000), and a model written below from
 * docs/semantics.md, "Token bucket" (ThrottleKit's formulas
 * in its order of double operations).  The model has one switch, keep_last:
 * off it is ThrottleKit exactly, on it adds tkshm's one documented
 * difference (an admission after a backward clock jump keeps the later
 * `last`, and the reported times count the wait until refill resumes at
 * that `last`).  Forward timelines are compared with ThrottleKit itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"
#include "algorithms/token_bucket.h"

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's tokenBucket, one key.
 * ---------------------------------------------------------------------- */

struct model {
	double capacity, refill_per_ms;
	bool keep_last; /* tkshm's backward-jump rule */
	bool present;
	double tokens, last;
};

static struct model
model_new(double capacity, double refill_per_sec, bool keep_last)
{
	struct model m;

	memset(&m, 0, sizeof m);
	m.capacity = capacity;
	m.refill_per_ms = refill_per_sec / 1000;
	m.keep_last = keep_last;
	return m;
}

/* The refilled level at now; *last gets the reference time. */
static double
model_level(const struct model *m, double now, double *last)
{
	double prev = m->present ? m->tokens : m->capacity;
	double l = m->present ? m->last : now;
	double elapsed = now > l ? now - l : 0;

	*last = l;
	return fmin(m->capacity, prev + elapsed * m->refill_per_ms);
}

static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	tkshm_decision d;
	double last;
	double tokens = model_level(m, now, &last);
	double wait = m->keep_last && last > now ? last - now : 0;

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->capacity);
	if (tokens >= cost) {
		double nt = tokens - cost;
		double r = floor(nt);

		d.allowed = true;
		d.remaining = algo_field(r < 0 ? 0 : r);
		d.reset_at =
			algo_field(now + ceil(wait + (m->capacity - nt) /
							     m->refill_per_ms));
		d.retry_after_ms = 0;
		m->present = true;
		m->tokens = nt;
		m->last = (m->keep_last && last > now) ? last : now;
		return d;
	}
	d.allowed = false;
	d.remaining = algo_field(floor(tokens) < 0 ? 0 : floor(tokens));
	d.reset_at = algo_field(
		now + ceil(wait + (m->capacity - tokens) / m->refill_per_ms));
	d.retry_after_ms =
		algo_field(ceil(wait + (cost - tokens) / m->refill_per_ms));
	return d;
}

static tkshm_decision
model_peek(const struct model *m, double now)
{
	tkshm_decision d;
	double last;
	double tokens = model_level(m, now, &last);
	double wait = m->keep_last && last > now ? last - now : 0;

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->capacity);
	d.allowed = tokens >= 1;
	d.remaining = algo_field(floor(tokens) < 0 ? 0 : floor(tokens));
	d.reset_at = algo_field(
		now + ceil(wait + (m->capacity - tokens) / m->refill_per_ms));
	d.retry_after_ms =
		d.allowed ? 0 :
			    algo_field(ceil(wait +
					    (1 - tokens) / m->refill_per_ms));
	return d;
}

/* ------------------------------------------------------------------------
 * Helpers around the code under test
 * ---------------------------------------------------------------------- */

static struct tk_token_bucket
bucket(double capacity, double refill_per_sec)
{
	struct tk_token_bucket a;
	char err[160] = "";

	if (tk_token_bucket_init(&a, capacity, refill_per_sec, err,
				 sizeof err) != TKSHM_OK)
		fail_msg("tk_token_bucket_init(%g, %g): %s", capacity,
			 refill_per_sec, err);
	return a;
}

/* One key's state as the store would keep it. */
struct key {
	bool present;
	uint64_t st[TK_TOKEN_BUCKET_WORDS];
};

ALGO_DEFINE_IMPL(tk_token_bucket, struct tk_token_bucket)

/* check() on *k; a denial must leave the output words untouched and the
 * key unchanged. */
static tkshm_decision
check(const struct tk_token_bucket *a, struct key *k, double now, double cost)
{
	struct algo_impl im =
		tk_token_bucket_impl(a, "check", TK_TOKEN_BUCKET_WORDS);

	return algo_key_check(&im, &k->present, k->st, now, cost);
}

static tkshm_decision
peek(const struct tk_token_bucket *a, const struct key *k, double now)
{
	struct algo_impl im =
		tk_token_bucket_impl(a, "peek", TK_TOKEN_BUCKET_WORDS);

	return algo_key_peek(&im, k->present, k->st, now);
}

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

static struct algo_impl
golden_bucket(const cJSON *suite)
{
	static struct tk_token_bucket a;
	const cJSON *opts = gv_member(gv_member(suite, "strategy"), "options");

	a = bucket(gv_number(opts, "capacity"),
		   gv_number(opts, "refillPerSec"));
	return tk_token_bucket_impl(&a, "check", TK_TOKEN_BUCKET_WORDS);
}

static void
replay_golden(const cJSON *golden, double offset)
{
	static const struct algo_gv_replay r = { .kind = "tokenBucket",
						 .cost = "cost",
						 .start = golden_bucket };
	unsigned suites, ops = algo_gv_replay(golden, &r, offset, &suites);

	/* tests/data/README.md: cap10-refill5ps and fractional-refill. */
	assert_int_equal(suites, 2);
	assert_int_equal(ops, 10);
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
	double capacity, refill_per_sec;
} policies[] = {
	{ 10, 5 },	 { 7, 3 },	{ 50, 10 },   { 20, 3.5 },  { 1, 0.1 },
	{ 1000, 333.3 }, { 2.5, 1000 }, { 100, 0.7 }, { 3, 12345 }, { 0.5, 2 },
};

#define TIMELINES 12
#define STEPS	  400

/* A cold key decides exactly as an idle one: same decision, same state. */
static void
assert_idle_like_absent(const struct tk_token_bucket *a, const struct key *k,
			double now, double cost, const char *what)
{
	struct key cold = { 0 }, warm = *k;
	tkshm_decision dc = check(a, &cold, now, cost);
	tkshm_decision dw = check(a, &warm, now, cost);

	algo_assert_decision(what, &dw, &dc);
	/* On admission both hold the new state; on denial neither moved. */
	if (dc.allowed && memcmp(cold.st, warm.st, sizeof cold.st) != 0)
		fail_msg("%s: an idle state leaves another state than an "
			 "absent key",
			 what);
}

/*
 * Runs `TIMELINES` timelines of `STEPS` steps for every policy, comparing
 * every check and peek field by field, and every state word bit by bit,
 * with the model.  With `regressions`, about one step in seven jumps the
 * clock back by up to 3 s, and the model applies tkshm's keep-last rule;
 * without, the timeline only moves forward and the model is ThrottleKit's.
 */
static void
run_timelines(bool regressions, uint64_t seed)
{
	unsigned steps = 0, admitted = 0, denied = 0, backward_admits = 0;

	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		struct tk_token_bucket a = bucket(policies[p].capacity,
						  policies[p].refill_per_sec);

		for (unsigned tl = 0; tl < TIMELINES; tl++) {
			uint64_t rs = seed + p * 1000 + tl;
			struct model m = model_new(policies[p].capacity,
						   policies[p].refill_per_sec,
						   regressions);
			struct key k = { 0 };
			double now = ALGO_EPOCH + tl * 37.0 +
				     (tl & 1 ? algo_unit(&rs) : 0);

			for (unsigned s = 0; s < STEPS; s++) {
				double u = algo_unit(&rs), cost;
				tkshm_decision got, want;
				char what[160];
				bool back = false;

				if (regressions && u < 0.15) {
					now -= algo_unit(&rs) * 3000;
					back = true;
				} else if (u < 0.25) {
					/* same instant */
				} else if (u < 0.6) {
					now += floor(algo_unit(&rs) * 900);
				} else {
					now += algo_unit(&rs) * 900;
				}
				u = algo_unit(&rs);
				if (u < 0.5)
					cost = 1 + algo_below(&rs, 4);
				else if (u < 0.95)
					cost = algo_unit(&rs) * 4 + 0.001;
				else
					cost = policies[p].capacity *
					       (1 + algo_unit(&rs));
				snprintf(what, sizeof what,
					 "policy %zu timeline %u step %u "
					 "(now %.17g cost %.17g)",
					 p, tl, s, now, cost);

				got = peek(&a, &k, now);
				want = model_peek(&m, now);
				algo_assert_decision(what, &got, &want);

				if (k.present) {
					double debt = tk_token_bucket_debt(
						&a, k.st, now);
					bool idle = tk_token_bucket_is_idle(
						&a, k.st, now);

					assert_true(debt >= 0);
					assert_true(idle == (debt == 0));
					if (idle)
						assert_idle_like_absent(
							&a, &k, now, cost,
							what);
				}

				got = check(&a, &k, now, cost);
				want = model_check(&m, now, cost);
				algo_assert_decision(what, &got, &want);
				assert_true(k.present == m.present);
				if (m.present) {
					algo_assert_word(what, k.st, 0,
							 m.tokens);
					algo_assert_word(what, k.st, 1, m.last);
				}
				admitted += got.allowed;
				denied += !got.allowed;
				backward_admits += back && got.allowed;
				steps++;
			}
		}
	}
	/* The timelines exercise both outcomes (and, with regressions,
	 * admissions after a backward jump). */
	assert_true(steps >= 40000);
	assert_true(admitted > steps / 5);
	assert_true(denied > steps / 10);
	if (regressions)
		assert_true(backward_admits > 100);
}

static void
test_forward_timelines_match_throttlekit(void **state)
{
	(void)state;
	run_timelines(false, 1000);
}

static void
test_timelines_with_regressions(void **state)
{
	(void)state;
	run_timelines(true, 777000);
}

/* ------------------------------------------------------------------------
 * Properties
 * ---------------------------------------------------------------------- */

/* Starts full; refills lazily at exactly refillPerSec (here 0.5 token/ms,
 * exact in binary) and never above capacity. */
static void
test_lazy_refill(void **state)
{
	struct tk_token_bucket a = bucket(10, 500);
	static const double starts[] = { 0, 1000, ALGO_EPOCH };

	(void)state;
	for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
		double t0 = starts[i];
		struct key k = { 0 };
		tkshm_decision d;

		/* A cold key is full: capacity passes at one instant. */
		for (int n = 0; n < 10; n++) {
			d = check(&a, &k, t0, 1);
			assert_true(d.allowed);
			assert_int_equal(d.remaining, 9 - n);
		}
		d = check(&a, &k, t0, 1);
		assert_false(d.allowed);
		assert_int_equal(d.retry_after_ms, 2);
		assert_int_equal(d.reset_at, (int64_t)t0 + 20);
		/* Nothing accrues until time passes. */
		assert_false(check(&a, &k, t0, 1).allowed);
		/* Every 2 ms one token, whatever the gap. */
		for (int ms = 2; ms <= 12; ms += 2) {
			d = peek(&a, &k, t0 + ms);
			assert_int_equal(d.remaining, ms / 2);
			assert_true(d.allowed);
		}
		d = check(&a, &k, t0 + 6, 3);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, 0);
		d = check(&a, &k, t0 + 7, 1);
		assert_false(d.allowed);
		assert_int_equal(d.remaining, 0);
		assert_int_equal(d.retry_after_ms, 1); /* half a token left */
		/* A long idle gap refills to capacity, not beyond. */
		d = peek(&a, &k, t0 + 1e6);
		assert_int_equal(d.remaining, 10);
		assert_int_equal(d.reset_at, (int64_t)(t0 + 1e6));
		assert_true(tk_token_bucket_is_idle(&a, k.st, t0 + 1e6));
		assert_true(check(&a, &k, t0 + 1e6, 10).allowed);
		assert_false(check(&a, &k, t0 + 1e6, 1).allowed);
	}
}

/*
 * A backward jump never refills the same time twice.  Capacity 10 at 1
 * token/s: take 5 at t=10000, jump back to t=5000 and take the other 5.
 * ThrottleKit then persists last=5000 and at t=10000 has refilled 5 more
 * tokens (15 admitted in no forward time); tkshm keeps last=10000 and has
 * none, and refills one token per second from there.
 */
static void
test_no_over_refill_on_backward_jump(void **state)
{
	struct tk_token_bucket a = bucket(10, 1);
	struct model tk = model_new(10, 1, false);
	struct key k = { 0 };
	tkshm_decision d, e;

	(void)state;
	assert_true(check(&a, &k, 10000, 5).allowed);
	assert_true(model_check(&tk, 10000, 5).allowed);
	d = check(&a, &k, 5000, 5); /* tokens 5 are present: admitted */
	e = model_check(&tk, 5000, 5);
	/* The same decision, but full only 10 s after the kept `last`. */
	assert_true(d.allowed && e.allowed);
	assert_int_equal(d.remaining, e.remaining);
	assert_int_equal(e.reset_at, 15000);
	assert_int_equal(d.reset_at, 20000);
	algo_assert_word("backward admission", k.st, 0, 0);
	algo_assert_word("backward admission", k.st, 1, 10000); /* kept */
	assert_true(tk.last == 5000); /* ThrottleKit moved it back */

	e = model_check(&tk, 10000, 5);
	assert_true(e.allowed); /* ThrottleKit's over-refill */
	d = check(&a, &k, 10000, 1);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.retry_after_ms, 1000);
	assert_false(check(&a, &k, 10999, 1).allowed);
	assert_true(check(&a, &k, 11000, 1).allowed);
	assert_false(check(&a, &k, 11000, 1).allowed);
	/* Still in the past: the level is what it was at `last`. */
	assert_false(tk_token_bucket_is_idle(&a, k.st, 5000));
	assert_true(tk_token_bucket_debt(&a, k.st, 5000) > 6000);
}

/* ThrottleKit's documented edge: a cost above capacity is never admitted
 * and always gets a finite retry (capacity 5 at 1/s, cost 6 -> 1000 ms). */
static void
test_cost_above_capacity(void **state)
{
	struct tk_token_bucket a = bucket(5, 1);
	struct key k = { 0 };

	(void)state;
	for (int i = 0; i < 5; i++) {
		tkshm_decision d = check(&a, &k, 1000 + i * 100000.0, 6);

		assert_false(d.allowed);
		assert_false(k.present);
		assert_int_equal(d.retry_after_ms, 1000);
		assert_int_equal(d.remaining, 5);
		assert_int_equal(d.limit, 5);
	}
}

/* Repeated denials at one instant are identical and consume nothing. */
static void
test_denial_keeps_state(void **state)
{
	struct tk_token_bucket a = bucket(3, 2);
	struct key k = { 0 };
	tkshm_decision first;
	uint64_t before[2];

	(void)state;
	assert_true(check(&a, &k, ALGO_EPOCH, 2.5).allowed);
	memcpy(before, k.st, sizeof before);
	first = check(&a, &k, ALGO_EPOCH + 10, 2);
	assert_false(first.allowed);
	for (int i = 0; i < 50; i++) {
		tkshm_decision d = check(&a, &k, ALGO_EPOCH + 10, 2);

		algo_assert_decision("repeated denial", &d, &first);
		assert_memory_equal(k.st, before, sizeof before);
	}
}

/* Idle means full and not in the future; debt is the time to full. */
static void
test_idle_and_debt(void **state)
{
	struct tk_token_bucket a = bucket(10, 1000); /* 1 token per ms */
	struct key k = { 0 };

	(void)state;
	assert_true(check(&a, &k, 5000, 4).allowed);
	assert_false(tk_token_bucket_is_idle(&a, k.st, 5000));
	assert_true(tk_token_bucket_debt(&a, k.st, 5000) == 4);
	assert_true(tk_token_bucket_debt(&a, k.st, 5001) == 3);
	assert_false(tk_token_bucket_is_idle(&a, k.st, 5003.5));
	assert_true(tk_token_bucket_is_idle(&a, k.st, 5004));
	assert_true(tk_token_bucket_debt(&a, k.st, 5004) == 0);
	/* A `last` in the future is owed its wait as well. */
	assert_true(tk_token_bucket_debt(&a, k.st, 4000) == 1004);
	assert_false(tk_token_bucket_is_idle(&a, k.st, 4000));
	/* Even full, such a state is not idle: an admission would keep the
	 * later `last`, where an absent key would start from now. */
	{
		struct key full = { true, { 0, 0 } }, cold = { 0 };

		full.st[0] = tk_f64_word(10);
		full.st[1] = tk_f64_word(5000);
		assert_true(tk_token_bucket_state_valid(&a, full.st));
		assert_false(tk_token_bucket_is_idle(&a, full.st, 4000));
		assert_true(tk_token_bucket_debt(&a, full.st, 4000) == 1000);
		assert_true(tk_token_bucket_is_idle(&a, full.st, 5000));
		assert_true(check(&a, &full, 4000, 1).allowed);
		assert_true(check(&a, &cold, 4000, 1).allowed);
		algo_assert_word("future last", full.st, 1, 5000);
		algo_assert_word("cold", cold.st, 1, 4000);
	}
}

static void
test_state_valid(void **state)
{
	struct tk_token_bucket a = bucket(10, 5);
	uint64_t st[2];

	(void)state;
	st[0] = tk_f64_word(0);
	st[1] = tk_f64_word(ALGO_EPOCH);
	assert_true(tk_token_bucket_state_valid(&a, st));
	st[0] = tk_f64_word(10);
	assert_true(tk_token_bucket_state_valid(&a, st));
	/* Above the capacity: a capacity lowered in place since (protocol.h
	 * L1); the refill clamps it. */
	st[0] = tk_f64_word(10.5);
	assert_true(tk_token_bucket_state_valid(&a, st));
	st[0] = tk_f64_word(-1);
	assert_false(tk_token_bucket_state_valid(&a, st));
	st[0] = tk_f64_word(NAN);
	assert_false(tk_token_bucket_state_valid(&a, st));
	st[0] = tk_f64_word(1);
	st[1] = tk_f64_word(INFINITY);
	assert_false(tk_token_bucket_state_valid(&a, st));
	st[1] = tk_f64_word(-5);
	assert_false(tk_token_bucket_state_valid(&a, st));
	st[1] = UINT64_C(0xFFF8000000000000);
	assert_false(tk_token_bucket_state_valid(&a, st));
}

/* ThrottleKit's requirePositive on both parameters, plus the rates that
 * would make a field non-finite; the sentence names the parameter. */
static void
test_validation(void **state)
{
	static const struct {
		double capacity, refill;
		const char *names;
	} bad[] = {
		{ 0, 1, "capacity" },
		{ -1, 1, "capacity" },
		{ NAN, 1, "capacity" },
		{ INFINITY, 1, "capacity" },
		{ 10, 0, "refillPerSec" },
		{ 10, -3, "refillPerSec" },
		{ 10, NAN, "refillPerSec" },
		{ 10, INFINITY, "refillPerSec" },
		{ 10, 1e-310, "refillPerSec" }, /* subnormal */
		{ 10, 1e-300, "refillPerSec" }, /* 2^53 / rate overflows */
		{ 1e300, 1, "refillPerSec" },	/* capacity / rate too */
	};
	struct tk_token_bucket a;
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_rc(tk_token_bucket_init(&a, bad[i].capacity,
					       bad[i].refill, err, sizeof err),
			  TKSHM_EPOLICY);
		if (!strstr(err, bad[i].names))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 bad[i].names);
	}
	assert_rc(tk_token_bucket_init(&a, 0.001, 1e-3, NULL, 0), TKSHM_OK);
	assert_rc(tk_token_bucket_init(&a, 1e9, 1e9, err, 0), TKSHM_OK);
	assert_rc(tk_token_bucket_init(&a, 10, 5, err, sizeof err), TKSHM_OK);
	assert_true(a.capacity == 10 && a.refill_per_ms == 5.0 / 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_as_given),
		cmocka_unit_test(test_golden_offset_1000),
		cmocka_unit_test(test_forward_timelines_match_throttlekit),
		cmocka_unit_test(test_timelines_with_regressions),
		cmocka_unit_test(test_lazy_refill),
		cmocka_unit_test(test_no_over_refill_on_backward_jump),
		cmocka_unit_test(test_cost_above_capacity),
		cmocka_unit_test(test_denial_keeps_state),
		cmocka_unit_test(test_idle_and_debt),
		cmocka_unit_test(test_state_valid),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, algo_golden_setup,
				      algo_golden_teardown);
}
