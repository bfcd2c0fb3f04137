/*
 * test_algo_sliding_log.c - the pure sliding-window log
 * (src/algorithms/sliding_log.h), with no table and no clock.
 *
 * Expected values come from ThrottleKit's golden vectors or from the model
 * below, written from docs/semantics.md, "Sliding window log"
 * (an unbounded array of stamps, pruned by filtering at `stamp <= now -
 * windowMs` on admission, units = ceil(cost), kMin and ref for the retry),
 * never from src/.  The model carries the documented choices as switches:
 * `monotone` (a `now` before the newest stamp is decided at the newest
 * stamp; retryAfterMs stays relative to the caller's now) and kMin rounded
 * up (ThrottleKit's own formula for every integral limit).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"

#include "algorithms/sliding_log.h"

#define EPOCH	 1.7e12
#define MAXWORDS (1 + TK_SLIDING_LOG_MAX_LIMIT)
#define PATTERN	 UINT64_C(0xA5A5A5A5A5A5A5A5)

/* How often each path was taken, so the timelines can be shown to reach
 * them all. */
static unsigned long seen_allow, seen_deny, seen_unsatisfiable, seen_idle,
	seen_regressed, seen_kmin_clamped;

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's slidingWindowLog, one key.
 * ---------------------------------------------------------------------- */

#define MODEL_MAX 1024

struct model {
	double limit, window_ms;
	double stamps[MODEL_MAX]; /* ascending */
	unsigned n;
	bool monotone;
};

static void
model_init(struct model *m, double limit, double window_ms, bool monotone)
{
	m->limit = limit;
	m->window_ms = window_ms;
	m->n = 0;
	m->monotone = monotone;
}

/* The time decided at, and the live stamps there (a filtered copy). */
static double
model_live(const struct model *m, double now, double *live, unsigned *count)
{
	double t = now, window_start;

	if (m->monotone && m->n > 0 && m->stamps[m->n - 1] > t)
		t = m->stamps[m->n - 1];
	window_start = t - m->window_ms;
	*count = 0;
	for (unsigned i = 0; i < m->n; i++)
		if (m->stamps[i] > window_start)
			live[(*count)++] = m->stamps[i];
	return t;
}

static void
model_deny(const struct model *m, const double *live, unsigned count, double t,
	   double now, double units, tkshm_decision *d)
{
	d->allowed = false;
	d->remaining = (int64_t)fmax(0, m->limit - count);
	d->reset_at = (int64_t)ceil((count > 0 ? live[0] : t) + m->window_ms);
	if (count == 0) {
		seen_unsatisfiable++;
		d->retry_after_ms = (int64_t)m->window_ms;
	} else {
		double kmin = ceil(count + units - m->limit);
		double retry;

		if (kmin < 1)
			kmin = 1;
		if (kmin > count) {
			kmin = count;
			seen_kmin_clamped++;
		}
		retry = ceil(live[(unsigned)kmin - 1] + m->window_ms - now);
		d->retry_after_ms = (int64_t)(retry > 1 ? retry : 1);
	}
}

static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	static double live[MODEL_MAX];
	unsigned count;
	double t = model_live(m, now, live, &count);
	double units = ceil(cost);
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	d.limit = (int64_t)m->limit;
	if (t != now)
		seen_regressed++;
	if (count + units <= m->limit) {
		seen_allow++;
		assert_true(count + units <= MODEL_MAX);
		memcpy(m->stamps, live, sizeof *live * count);
		m->n = count;
		for (double u = 0; u < units; u++)
			m->stamps[m->n++] = t;
		d.allowed = true;
		d.remaining = (int64_t)fmax(0, m->limit - count - units);
		d.reset_at =
			(int64_t)ceil((count > 0 ? live[0] : t) + m->window_ms);
		d.retry_after_ms = 0;
		return d;
	}
	seen_deny++;
	model_deny(m, live, count, t, now, units, &d);
	return d;
}

/* The documented peek: allowed iff count + 1 <= limit, remaining is what is
 * left before it, deny fields as for a cost-1 check. */
static tkshm_decision
model_peek(const struct model *m, double now)
{
	static double live[MODEL_MAX];
	unsigned count;
	double t = model_live(m, now, live, &count);
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	d.limit = (int64_t)m->limit;
	if (count + 1 <= m->limit) {
		d.allowed = true;
		d.remaining = (int64_t)fmax(0, m->limit - count);
		d.reset_at =
			(int64_t)ceil((count > 0 ? live[0] : t) + m->window_ms);
		return d;
	}
	model_deny(m, live, count, t, now, 1, &d);
	return d;
}

static bool
model_idle(const struct model *m, double now)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->stamps[i] > now - m->window_ms)
			return false;
	return true;
}

/* The documented debt: the live units, 0 when idle. */
static double
model_debt(const struct model *m, double now)
{
	static double live[MODEL_MAX];
	unsigned count;

	if (model_idle(m, now))
		return 0;
	model_live(m, now, live, &count);
	return count;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static struct tk_sliding_log
algo(double limit, double window_ms)
{
	struct tk_sliding_log a;
	char err[256] = "";

	if (tk_sliding_log_init(&a, limit, window_ms, err, sizeof err) !=
	    TKSHM_OK)
		fail_msg("init(%g, %g): %s", limit, window_ms, err);
	return a;
}

/* The state holds exactly the model's stamps: {n, stamps..., 0...}. */
static void
assert_log(const char *what, const struct tk_sliding_log *a, const uint64_t *st,
	   const struct model *m)
{
	unsigned words = tk_sliding_log_words(a);

	assert_int_equal(words, 1 + (unsigned)floor(m->limit));
	if (st[0] != m->n)
		fail_msg("%s: %llu stamps kept, model %u", what,
			 (unsigned long long)st[0], m->n);
	for (unsigned i = 0; i < m->n; i++)
		if (st[1 + i] != tk_f64_word(m->stamps[i]))
			fail_msg("%s: stamp %u = %.17g, model %.17g", what, i,
				 tk_word_f64(st[1 + i]), m->stamps[i]);
	for (unsigned i = 1 + m->n; i < words; i++)
		if (st[i] != 0)
			fail_msg("%s: word %u = %#llx past the stamps", what, i,
				 (unsigned long long)st[i]);
	assert_true(tk_sliding_log_state_valid(a, st));
	algo_assert_real_words(what, st, words);
}

/* mulberry32, the PRNG of ThrottleKit's conformance tests. */
static uint32_t mb_state;

static double
mb(void)
{
	uint32_t t = (mb_state += 0x6D2B79F5u);

	t = (t ^ (t >> 15)) * (t | 1u);
	t ^= t + (t ^ (t >> 7)) * (t | 61u);
	return (double)(t ^ (t >> 14)) / 4294967296.0;
}

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

ALGO_DEFINE_IMPL(tk_sliding_log, struct tk_sliding_log)

static struct algo_impl
golden_log(const cJSON *suite)
{
	static struct tk_sliding_log a;
	const cJSON *opts = gv_member(gv_member(suite, "strategy"), "options");

	a = algo(gv_number(opts, "limit"), gv_number(opts, "windowMs"));
	return tk_sliding_log_impl(&a, "check", tk_sliding_log_words(&a));
}

static unsigned
replay_golden(double offset)
{
	static const struct algo_gv_replay r = { .kind = "slidingWindowLog",
						 .cost = "cost",
						 .start = golden_log };
	cJSON *golden = tkt_golden();
	unsigned suites, ops = algo_gv_replay(golden, &r, offset, &suites);

	cJSON_Delete(golden);
	if (suites == 0)
		fail_msg("no rateLimit suite of kind slidingWindowLog");
	return ops;
}

static void
test_golden_as_given(void **state)
{
	(void)state;
	/* The file holds one slidingWindowLog suite of 7 ops. */
	assert_int_equal(replay_golden(0), 7);
}

static void
test_golden_offset_1000(void **state)
{
	(void)state;
	assert_int_equal(replay_golden(1000), 7);
}

/* ------------------------------------------------------------------------
 * Validation
 * ---------------------------------------------------------------------- */

static void
expect_refused(double limit, double window_ms, const char *word)
{
	struct tk_sliding_log a;
	char err[256] = "";

	if (tk_sliding_log_init(&a, limit, window_ms, err, sizeof err) !=
	    TKSHM_EPOLICY)
		fail_msg("init(%g, %g) accepted", limit, window_ms);
	if (!strstr(err, word))
		fail_msg("init(%g, %g): \"%s\" does not name %s", limit,
			 window_ms, err, word);
	assert_int_equal(tk_sliding_log_init(&a, limit, window_ms, NULL, 0),
			 TKSHM_EPOLICY);
}

static void
test_validation(void **state)
{
	struct tk_sliding_log a;

	(void)state;
	expect_refused(0, 1000, "limit");
	expect_refused(-1, 1000, "limit");
	expect_refused(NAN, 1000, "limit");
	expect_refused(INFINITY, 1000, "limit");
	expect_refused(129, 1000, "limit");
	expect_refused(128.5, 1000, "at most 128");
	expect_refused(1e6, 1000, "at most 128");
	expect_refused(5, 0, "windowMs");
	expect_refused(5, -1, "windowMs");
	expect_refused(5, NAN, "windowMs");
	expect_refused(5, INFINITY, "windowMs");

	assert_int_equal(TK_SLIDING_LOG_MAX_LIMIT, 128);
	a = algo(128, 1000);
	assert_int_equal(tk_sliding_log_words(&a), 129);
	a = algo(5, 1000);
	assert_int_equal(tk_sliding_log_words(&a), 6);
	a = algo(2.5, 1000); /* at most 2 stamps live */
	assert_int_equal(tk_sliding_log_words(&a), 3);
	a = algo(0.5, 1e-300); /* nothing ever fits: no stamp */
	assert_int_equal(tk_sliding_log_words(&a), 1);
}

/* ------------------------------------------------------------------------
 * Exact expiry and exact retry
 * ---------------------------------------------------------------------- */

/* A slot frees exactly when the oldest hit leaves the window: a stamp s is
 * out once now - windowMs >= s (so at s + windowMs), and in at any earlier
 * time, however close. */
static void
test_frees_exactly(void **state)
{
	static const double starts[] = { 0, 1000, EPOCH, EPOCH + 0.25 };
	static const double windows[] = { 1000, 999.5, 0.75 };

	(void)state;
	for (unsigned s = 0; s < 4; s++) {
		for (unsigned wi = 0; wi < 3; wi++) {
			double W = windows[wi], t0 = starts[s];
			struct tk_sliding_log a = algo(3, W);
			uint64_t st[4], out[4];
			tkshm_decision d;
			double h[3] = { t0 + 100, t0 + 100 + W / 4,
					t0 + 100 + W / 2 };
			double at, before;

			for (unsigned k = 0; k < 3; k++) {
				assert_true(tk_sliding_log_check(
					&a, k > 0, st, h[k], 1, st, &d));
			}
			assert_int_equal(st[0], 3);
			/* The premise: h[0] + W is exact, and h[0] is then
			 * exactly now - W. */
			at = h[0] + W;
			assert_true(at - W == h[0]);
			before = nextafter(at, 0);
			assert_false(tk_sliding_log_check(&a, true, st, before,
							  1, out, &d));
			assert_int_equal(d.remaining, 0);
			assert_int_equal(d.reset_at, (int64_t)ceil(at));
			assert_true(tk_sliding_log_check(&a, true, st, at, 1,
							 out, &d));
			/* h[0] is gone, h[1], h[2] and the new one remain. */
			assert_int_equal(out[0], 3);
			assert_true(tk_word_f64(out[1]) == h[1]);
			assert_true(tk_word_f64(out[3]) == at);
			assert_int_equal(d.reset_at, (int64_t)ceil(h[1] + W));
			assert_int_equal(d.remaining, 0);
		}
	}
	/* Integral: limit 3, hits at 100, 200, 300: denied at 1099 with
	 * retry 1, admitted at 1100. */
	{
		struct tk_sliding_log a = algo(3, 1000);
		uint64_t st[4], out[4];
		tkshm_decision d;

		assert_true(
			tk_sliding_log_check(&a, false, NULL, 100, 1, st, &d));
		assert_true(tk_sliding_log_check(&a, true, st, 200, 1, st, &d));
		assert_true(tk_sliding_log_check(&a, true, st, 300, 1, st, &d));
		assert_false(
			tk_sliding_log_check(&a, true, st, 1099, 1, out, &d));
		assert_int_equal(d.retry_after_ms, 1);
		assert_int_equal(d.reset_at, 1100);
		assert_true(
			tk_sliding_log_check(&a, true, st, 1100, 1, out, &d));
		/* Two units need the two oldest gone: at 1200. */
		assert_false(
			tk_sliding_log_check(&a, true, st, 1100, 2, out, &d));
		assert_int_equal(d.retry_after_ms, 100);
		/* Four units never fit: the retry is still finite
		 * (ThrottleKit's kMin clamps to count: the newest). */
		assert_false(
			tk_sliding_log_check(&a, true, st, 1100, 4, out, &d));
		assert_int_equal(d.retry_after_ms, 200);
		/* Cost 2.5 is 3 units. */
		assert_false(
			tk_sliding_log_check(&a, true, st, 1150, 2.5, out, &d));
		assert_int_equal(d.retry_after_ms, 150);
		assert_true(
			tk_sliding_log_check(&a, true, st, 1300, 2.5, out, &d));
		assert_int_equal(out[0], 3);
		assert_int_equal(d.remaining, 0);
	}
	/* Unsatisfiable from empty: retry = windowMs. */
	{
		struct tk_sliding_log a = algo(3, 1000);
		uint64_t out[4];
		tkshm_decision d;

		assert_false(
			tk_sliding_log_check(&a, false, NULL, 50, 4, out, &d));
		assert_int_equal(d.retry_after_ms, 1000);
		assert_int_equal(d.remaining, 3);
		assert_int_equal(d.reset_at, 1050);
	}
}

/*
 * The max(1, ...) of the retry.  Just below 2^40 ms a stamp one ulp after
 * now - windowMs is live, yet ref + windowMs rounds (half an ulp, to even)
 * to now itself: ceil(0) = 0, raised to 1.  One ms later it has left.
 */
static void
test_retry_at_least_one(void **state)
{
	struct tk_sliding_log a = algo(1, 1000);
	const double now = 1099511627935.0;
	const double ref = nextafter(now - 1000, INFINITY);
	struct model m;
	uint64_t st[4],
		out[4]; /* 2 words; room for gcc -O3, which cannot see cap = 1 */
	tkshm_decision d, e;

	(void)state;
	model_init(&m, 1, 1000, false);
	assert_true(ref > now - 1000 && ref + 1000 - now == 0); /* premise */
	assert_true(tk_sliding_log_check(&a, false, NULL, ref, 1, st, &d));
	assert_true(model_check(&m, ref, 1).allowed);
	e = model_check(&m, now, 1);
	assert_false(tk_sliding_log_check(&a, true, st, now, 1, out, &d));
	algo_assert_decision("ref + W == now", &d, &e);
	assert_int_equal(d.retry_after_ms, 1);
	assert_true(tk_sliding_log_check(&a, true, st, now + 1, 1, out, &d));
}

/*
 * On integer timelines retryAfterMs is exact: the same request at
 * now + retryAfterMs is admitted and at now + retryAfterMs - 1 is not.
 * With `regress`, the timelines also jump back (the retry stays exact for
 * the caller's own clock).
 */
static void
run_retry_exact(double regress, unsigned long *verified)
{
	static const struct {
		double limit, window_ms, t0;
	} pols[] = {
		{ 5, 1000, 0 },	   { 3, 100, EPOCH },	  { 10, 500, 1000 },
		{ 1, 250, EPOCH }, { 128, 60000, EPOCH },
	};

	for (unsigned i = 0; i < 5; i++) {
		struct tk_sliding_log a =
			algo(pols[i].limit, pols[i].window_ms);
		uint64_t st[MAXWORDS], out[MAXWORDS];
		bool present = false;
		double now = pols[i].t0 + 5000;

		mb_state = 31337 + i;
		for (unsigned s = 0; s < 4000; s++) {
			double cost = 1 + floor(mb() * 3);
			tkshm_decision d, again;
			double retry;

			if (pols[i].limit >= 100)
				cost = 1 + floor(mb() * 20);
			if (regress > 0 && mb() < regress) {
				now -= floor(mb() * pols[i].window_ms);
				now = now < 0 ? 0 : now;
			} else
				now += floor(mb() * pols[i].window_ms /
					     (pols[i].limit / 2 + 1));
			if (tk_sliding_log_check(&a, present, st, now, cost,
						 out, &d)) {
				memcpy(st, out, sizeof st);
				present = true;
				continue;
			}
			if (ceil(cost) > pols[i].limit)
				continue; /* never admissible */
			retry = (double)d.retry_after_ms;
			assert_true(retry >= 1);
			if (!tk_sliding_log_check(&a, true, st, now + retry,
						  cost, out, &again))
				fail_msg("policy %u step %u: denied at now + "
					 "retry (%.17g + %g)",
					 i, s, now, retry);
			if (tk_sliding_log_check(&a, true, st, now + retry - 1,
						 cost, out, &again))
				fail_msg("policy %u step %u: admitted at now + "
					 "retry - 1 (%.17g + %g - 1)",
					 i, s, now, retry);
			(*verified)++;
		}
	}
}

static void
test_retry_exact(void **state)
{
	unsigned long verified = 0;

	(void)state;
	run_retry_exact(0, &verified);
	print_message("%lu denials checked at now + retry and a ms before\n",
		      verified);
	assert_true(verified > 2000);
}

static void
test_retry_exact_regressed(void **state)
{
	unsigned long verified = 0;

	(void)state;
	run_retry_exact(0.2, &verified);
	print_message("%lu denials checked at now + retry and a ms before\n",
		      verified);
	assert_true(verified > 2000);
}

/* ------------------------------------------------------------------------
 * Random timelines against the model
 * ---------------------------------------------------------------------- */

enum delta_kind {
	DELTA_CONFORMANCE, /* floor(rng * 900), ThrottleKit's tests */
	DELTA_MIXED,	   /* 0, small, within the window, past it */
};

enum cost_kind {
	COST_INT, /* 1 + floor(rng * 4) */
	COST_ANY, /* any double in (0.001, 3.001): ceil'd to 1..4 */
};

struct policy {
	const char *name;
	double limit, window_ms, t0;
	enum delta_kind delta;
	enum cost_kind cost;
	unsigned timelines, steps;
};

static double
draw_cost(enum cost_kind k)
{
	return k == COST_INT ? 1 + floor(mb() * 4) : 0.001 + mb() * 3;
}

static double
draw_delta(const struct policy *p)
{
	double r;

	if (p->delta == DELTA_CONFORMANCE)
		return floor(mb() * 900);
	r = mb();
	if (r < 0.15)
		return 0;
	if (r < 0.6)
		return mb() * p->window_ms / (p->limit + 1);
	if (r < 0.95)
		return mb() * p->window_ms / 2;
	return p->window_ms * (1 + mb() * 2);
}

/* One step: peek, idle and debt, then the check, each against the model. */
static tkshm_decision
step(const struct tk_sliding_log *a, struct model *m, uint64_t *st,
     bool *present, double now, double cost, const char *what)
{
	unsigned n = tk_sliding_log_words(a);
	uint64_t out[MAXWORDS];
	tkshm_decision d, want;
	char msg[200];
	bool ok;

	snprintf(msg, sizeof msg, "%s: peek", what);
	tk_sliding_log_peek(a, *present, st, now, &d);
	want = model_peek(m, now);
	algo_assert_decision(msg, &d, &want);

	if (*present) {
		bool idle = tk_sliding_log_is_idle(a, st, now);
		double debt = tk_sliding_log_debt(a, st, now);

		if (idle != model_idle(m, now))
			fail_msg("%s: is_idle %d, model %d", what, idle, !idle);
		if (debt != model_debt(m, now))
			fail_msg("%s: debt %.17g, model %.17g", what, debt,
				 model_debt(m, now));
		if ((debt == 0) != idle)
			fail_msg("%s: debt %.17g but idle %d", what, debt,
				 idle);
		if (idle) {
			uint64_t o1[MAXWORDS], o2[MAXWORDS];
			tkshm_decision x, y;
			bool a1 = tk_sliding_log_check(a, true, st, now, cost,
						       o1, &x);
			bool a2 = tk_sliding_log_check(a, false, NULL, now,
						       cost, o2, &y);

			seen_idle++;
			snprintf(msg, sizeof msg, "%s: idle vs absent", what);
			algo_assert_decision(msg, &x, &y);
			assert_int_equal(a1, a2);
			if (a1)
				assert_memory_equal(o1, o2, sizeof *o1 * n);
			tk_sliding_log_peek(a, true, st, now, &x);
			tk_sliding_log_peek(a, false, NULL, now, &y);
			algo_assert_decision(msg, &x, &y);
		}
	}

	for (unsigned i = 0; i < MAXWORDS; i++)
		out[i] = PATTERN;
	memset(&d, 0xA5, sizeof d);
	ok = tk_sliding_log_check(a, *present, *present ? st : NULL, now, cost,
				  out, &d);
	want = model_check(m, now, cost);
	snprintf(msg, sizeof msg, "%s: check", what);
	algo_assert_decision(msg, &d, &want);
	if (ok != d.allowed)
		fail_msg("%s: returned %d, allowed %d", what, ok, d.allowed);
	if (ok) {
		memcpy(st, out, sizeof *st * n);
		*present = true;
		for (unsigned i = n; i < MAXWORDS; i++)
			if (out[i] != PATTERN)
				fail_msg("%s: wrote word %u beyond the state",
					 what, i);
	} else {
		if (d.retry_after_ms < 1 && m->window_ms >= 1)
			fail_msg("%s: a denial with retry %lld", what,
				 (long long)d.retry_after_ms);
		for (unsigned i = 0; i < MAXWORDS; i++)
			if (out[i] != PATTERN)
				fail_msg("%s: a denial wrote word %u", what, i);
	}
	if (*present)
		assert_log(msg, a, st, m);
	return d;
}

static unsigned long
run_policy(const struct policy *p, unsigned case_index, double regress)
{
	struct tk_sliding_log a = algo(p->limit, p->window_ms);
	unsigned long steps = 0;

	for (unsigned t = 0; t < p->timelines; t++) {
		struct model m;
		uint64_t st[MAXWORDS];
		bool present = false;
		double now = p->t0 + t * 37;

		mb_state = 1000 + case_index * 101 + t;
		model_init(&m, p->limit, p->window_ms, true);
		memset(st, 0, sizeof st);
		for (unsigned s = 0; s < p->steps; s++) {
			char what[160];
			double cost;

			if (regress > 0 && mb() < regress) {
				now -= mb() * 2 * p->window_ms;
				if (now < 0)
					now = 0;
			} else {
				now += draw_delta(p);
			}
			cost = draw_cost(p->cost);
			snprintf(what, sizeof what,
				 "%s timeline %u step %u (now %.17g, cost "
				 "%.17g)",
				 p->name, t, s, now, cost);
			step(&a, &m, st, &present, now, cost, what);
			steps++;
		}
	}
	return steps;
}

static const struct policy forward[] = {
	/* ThrottleKit's two conformance cases, 40 timelines x 25 steps. */
	{ "5/1s", 5, 1000, EPOCH, DELTA_CONFORMANCE, COST_INT, 40, 25 },
	{ "10/500ms", 10, 500, EPOCH, DELTA_CONFORMANCE, COST_INT, 40, 25 },
	/* Longer ones. */
	{ "5/1s mixed", 5, 1000, 0, DELTA_MIXED, COST_INT, 20, 500 },
	{ "3/1s epoch fractional costs", 3, 1000, EPOCH, DELTA_MIXED, COST_ANY,
	  20, 500 },
	{ "128/60s epoch", 128, 60000, EPOCH, DELTA_MIXED, COST_INT, 10, 1000 },
	{ "2.5/1s fractional limit", 2.5, 1000, 1000, DELTA_MIXED, COST_ANY, 20,
	  500 },
	{ "1/250ms", 1, 250, EPOCH + 0.5, DELTA_MIXED, COST_ANY, 20, 500 },
	{ "7/100.5ms", 7, 100.5, 123.25, DELTA_MIXED, COST_INT, 20, 500 },
	{ "0.75/1s nothing fits", 0.75, 1000, 0, DELTA_MIXED, COST_ANY, 2,
	  200 },
};

static void
test_forward_timelines(void **state)
{
	unsigned long steps = 0;

	(void)state;
	seen_allow = seen_deny = seen_unsatisfiable = seen_idle = 0;
	seen_regressed = seen_kmin_clamped = 0;
	for (unsigned i = 0; i < sizeof forward / sizeof forward[0]; i++)
		steps += run_policy(&forward[i], 7 + i, 0);
	print_message("%lu steps: %lu admitted, %lu denied (%lu "
		      "unsatisfiable, %lu kMin clamped), %lu idle\n",
		      steps, seen_allow, seen_deny, seen_unsatisfiable,
		      seen_kmin_clamped, seen_idle);
	assert_true(steps >= 2000 + 60000);
	assert_true(seen_allow > 10000 && seen_deny > 10000);
	assert_true(seen_unsatisfiable > 100 && seen_kmin_clamped > 100);
	assert_true(seen_idle > 1000);
	assert_int_equal(seen_regressed, 0);
}

/* ThrottleKit's formulas without the regression rule decide every step of
 * a forward timeline the same. */
static void
test_forward_is_throttlekit(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof forward / sizeof forward[0]; i++) {
		const struct policy *p = &forward[i];
		struct tk_sliding_log a = algo(p->limit, p->window_ms);

		for (unsigned t = 0; t < p->timelines; t++) {
			struct model m;
			uint64_t st[MAXWORDS], out[MAXWORDS];
			bool present = false;
			double now = p->t0 + t * 37;

			mb_state = 5 + i * 101 + t;
			model_init(&m, p->limit, p->window_ms, false);
			for (unsigned s = 0; s < p->steps; s++) {
				tkshm_decision d, want;
				double cost;
				char what[160];

				now += draw_delta(p);
				cost = draw_cost(p->cost);
				want = model_check(&m, now, cost);
				if (tk_sliding_log_check(&a, present, st, now,
							 cost, out, &d)) {
					memcpy(st, out, sizeof st);
					present = true;
				}
				snprintf(what, sizeof what,
					 "%s timeline %u step %u", p->name, t,
					 s);
				algo_assert_decision(what, &d, &want);
			}
		}
	}
}

/* The state may be updated in place (st_out == st). */
static void
test_in_place(void **state)
{
	struct tk_sliding_log a = algo(6, 1000);
	const struct policy p = { "in place",  6,	 1000, EPOCH,
				  DELTA_MIXED, COST_ANY, 1,    0 };
	uint64_t st[MAXWORDS], same[MAXWORDS];
	bool present = false;
	double now = EPOCH;

	(void)state;
	mb_state = 4242;
	for (unsigned s = 0; s < 5000; s++) {
		tkshm_decision d, e;
		uint64_t out[MAXWORDS];
		double cost;
		bool x, y;

		now += draw_delta(&p);
		if (mb() < 0.1)
			now -= mb() * 1500;
		cost = draw_cost(COST_ANY);
		x = tk_sliding_log_check(&a, present, st, now, cost, out, &d);
		if (present)
			memcpy(same, st, sizeof same);
		y = tk_sliding_log_check(&a, present, same, now, cost, same,
					 &e);
		assert_int_equal(x, y);
		algo_assert_decision("in place", &e, &d);
		if (x) {
			assert_memory_equal(out, same,
					    sizeof *out *
						    tk_sliding_log_words(&a));
			memcpy(st, out, sizeof st);
			present = true;
		}
	}
}

/* ------------------------------------------------------------------------
 * Regressions
 * ---------------------------------------------------------------------- */

static void
test_regression_example(void **state)
{
	struct tk_sliding_log a = algo(2, 1000);
	uint64_t st[3], out[3];
	tkshm_decision d;

	(void)state;
	assert_true(tk_sliding_log_check(&a, false, NULL, 5000, 1, st, &d));
	/* Back to 4500: decided at 5000, admitted, stamped 5000 (not 4500:
	 * the log stays ascending). */
	assert_true(tk_sliding_log_check(&a, true, st, 4500, 1, st, &d));
	assert_int_equal(d.reset_at, 6000);
	assert_true(tk_word_f64(st[1]) == 5000 && tk_word_f64(st[2]) == 5000);
	/* Full; back to 3000: still full (at 5000), retry relative to the
	 * caller's 3000: ceil(5000 + 1000 - 3000). */
	assert_false(tk_sliding_log_check(&a, true, st, 3000, 1, out, &d));
	assert_int_equal(d.retry_after_ms, 3000);
	assert_int_equal(d.reset_at, 6000);
	assert_int_equal(d.remaining, 0);
	/* Not idle in the past, 2 units of debt. */
	assert_false(tk_sliding_log_is_idle(&a, st, 3000));
	assert_true(tk_sliding_log_debt(&a, st, 3000) == 2);
	assert_false(tk_sliding_log_check(&a, true, st, 5999, 1, out, &d));
	assert_true(tk_sliding_log_check(&a, true, st, 6000, 2, out, &d));
	assert_true(tk_sliding_log_is_idle(&a, st, 6000));
}

/*
 * Random timelines with backward jumps, against the model with the rule,
 * and by brute force: every admitted unit is stamped at its effective time
 * (max of now and the newest stamp admitted before), and no window
 * (e - windowMs, e] over those stamps holds more than `limit` units.
 */
static void
test_regression_timelines(void **state)
{
	static const struct policy pols[] = {
		{ "r 5/1s", 5, 1000, 5000, DELTA_MIXED, COST_INT, 30, 400 },
		{ "r 3/1s epoch", 3, 1000, EPOCH, DELTA_MIXED, COST_ANY, 30,
		  400 },
		{ "r 10/500ms", 10, 500, 1000, DELTA_MIXED, COST_INT, 30, 400 },
		{ "r 1/250ms", 1, 250, EPOCH, DELTA_MIXED, COST_ANY, 30, 400 },
		{ "r 128/60s", 128, 60000, EPOCH, DELTA_MIXED, COST_INT, 10,
		  400 },
	};
	static double eff[400 * 4];
	unsigned long steps = 0;

	(void)state;
	seen_regressed = 0;
	for (unsigned i = 0; i < sizeof pols / sizeof pols[0]; i++) {
		const struct policy *p = &pols[i];
		struct tk_sliding_log a = algo(p->limit, p->window_ms);

		for (unsigned t = 0; t < p->timelines; t++) {
			struct model m;
			uint64_t st[MAXWORDS];
			bool present = false;
			double now = p->t0 + t * 37, newest = -1;
			unsigned n = 0;

			mb_state = 77 + i * 101 + t;
			model_init(&m, p->limit, p->window_ms, true);
			for (unsigned s = 0; s < p->steps; s++) {
				double cost = draw_cost(p->cost);
				tkshm_decision d;
				char what[160];
				double e;

				if (mb() < 0.1) {
					/* Small (skew) or large (a step back). */
					now -= mb() < 0.5 ?
						       mb() * p->window_ms /
							       (p->limit + 1) :
						       mb() * 2 * p->window_ms;
					now = now < 0 ? 0 : now;
				} else {
					now += draw_delta(p);
				}
				snprintf(what, sizeof what,
					 "%s timeline %u step %u (now %.17g)",
					 p->name, t, s, now);
				d = step(&a, &m, st, &present, now, cost, what);
				steps++;
				if (!d.allowed)
					continue;
				e = now > newest ? now : newest;
				newest = e;
				for (double u = 0; u < ceil(cost); u++)
					eff[n++] = e;
			}
			for (unsigned j = 0; j < n; j++) {
				unsigned in = 0;

				for (unsigned k = 0; k < n; k++)
					if (eff[k] <= eff[j] &&
					    eff[k] > eff[j] - p->window_ms)
						in++;
				if (in > p->limit)
					fail_msg("%s timeline %u: %u units in "
						 "(%.17g, %.17g]",
						 p->name, t, in,
						 eff[j] - p->window_ms, eff[j]);
			}
		}
	}
	print_message("%lu steps, %lu decided at the newest stamp\n", steps,
		      seen_regressed);
	assert_true(steps >= 40000);
	assert_true(seen_regressed > 1000);
}

/* state_valid refuses what no transition writes; invalid states still
 * decide without reading past the array. */
static void
test_state_valid(void **state)
{
	struct tk_sliding_log a = algo(3, 1000);
	uint64_t st[4], out[4];
	tkshm_decision d;

	(void)state;
	memset(st, 0, sizeof st);
	assert_true(tk_sliding_log_state_valid(&a, st));
	assert_true(tk_sliding_log_is_idle(&a, st, 0));
	st[0] = 2;
	st[1] = tk_f64_word(10);
	st[2] = tk_f64_word(10);
	assert_true(tk_sliding_log_state_valid(&a, st));
	st[2] = tk_f64_word(9); /* descending */
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[2] = tk_f64_word(NAN);
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[2] = tk_f64_word(INFINITY);
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[1] = tk_f64_word(-1);
	st[2] = tk_f64_word(10);
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[1] = tk_f64_word(10);
	st[3] = tk_f64_word(11); /* past n */
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[3] = 0;
	st[0] = 4; /* more than floor(limit) */
	assert_false(tk_sliding_log_state_valid(&a, st));
	st[0] = UINT64_MAX;
	assert_false(tk_sliding_log_state_valid(&a, st));
	(void)tk_sliding_log_check(&a, true, st, 20, 1, out, &d);
	(void)tk_sliding_log_peek(&a, true, st, 20, &d);
	(void)tk_sliding_log_debt(&a, st, 20);
	(void)tk_sliding_log_is_idle(&a, st, 20);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_as_given),
		cmocka_unit_test(test_golden_offset_1000),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_frees_exactly),
		cmocka_unit_test(test_retry_at_least_one),
		cmocka_unit_test(test_retry_exact),
		cmocka_unit_test(test_retry_exact_regressed),
		cmocka_unit_test(test_forward_timelines),
		cmocka_unit_test(test_forward_is_throttlekit),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_regression_example),
		cmocka_unit_test(test_regression_timelines),
		cmocka_unit_test(test_state_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
