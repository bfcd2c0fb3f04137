/*
 * test_algo_sliding_window.c - the pure sub-bucketed sliding window
 * (src/algorithms/sliding_window.h), with no table and no clock.
 *
 * Expected values come from ThrottleKit's golden vectors or from the model
 * below, written from docs/semantics.md, "Sliding window"
 * (ThrottleKit's ring of S+1 {tick, count} entries with -1 for an empty
 * entry, its sums in ascending tick order, its clamps and retry formula),
 * never from src/.  The model carries the one documented difference as a
 * switch (`monotone`: a tick below the newest stored one is decided at the
 * newest), so forward timelines are checked against ThrottleKit's formulas
 * proper and regressed ones against the documented rule.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"

#include "algorithms/algorithm.h"
#include "algorithms/sliding_window.h"

#define EPOCH	 1.7e12
#define MAXS	 64
#define MAXWORDS (MAXS + 2)
#define PATTERN	 UINT64_C(0xA5A5A5A5A5A5A5A5)

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's slidingWindow, one key.
 * ---------------------------------------------------------------------- */

/* How often each path was taken, so the timelines can be shown to reach
 * them all. */
static unsigned long seen_allow, seen_deny, seen_retry_weighted,
	seen_retry_tick, seen_retry_clamped, seen_idle, seen_regressed;

struct model {
	double limit, window_ms, w;
	int64_t S, slots;
	int64_t tick[MAXS + 1]; /* -1: empty (ThrottleKit's sentinel) */
	double count[MAXS + 1];
	bool monotone; /* tkshm's regression rule */
};

static void
model_init(struct model *m, double limit, double window_ms, int S,
	   bool monotone)
{
	m->limit = limit;
	m->window_ms = window_ms;
	m->w = window_ms / S;
	m->S = S;
	m->slots = S + 1;
	for (int p = 0; p <= MAXS; p++) {
		m->tick[p] = -1;
		m->count[p] = 0;
	}
	m->monotone = monotone;
}

static double
model_get(const struct model *m, int64_t idx)
{
	int64_t p;

	if (idx < 0)
		return 0;
	p = idx % m->slots;
	return m->tick[p] == idx ? m->count[p] : 0;
}

struct est {
	double c, weight, full, oldest, estimate;
	bool regressed; /* c was raised to the newest stored tick */
};

static struct est
model_estimate(const struct model *m, double now)
{
	struct est e;
	double elapsed;

	e.c = floor(now / m->w);
	e.regressed = false;
	if (m->monotone)
		for (int64_t p = 0; p < m->slots; p++)
			if ((double)m->tick[p] > e.c) {
				e.c = (double)m->tick[p];
				e.regressed = true;
			}
	elapsed = now - e.c * m->w;
	if (elapsed < 0)
		elapsed = 0;
	e.weight = (m->w - elapsed) / m->w;
	if (e.weight < 0)
		e.weight = 0;
	if (e.weight > 1)
		e.weight = 1;
	e.full = 0;
	for (double j = e.c - (double)m->S + 1; j <= e.c; j++)
		e.full += model_get(m, (int64_t)j);
	e.oldest = model_get(m, (int64_t)(e.c - (double)m->S));
	e.estimate = e.full + e.oldest * e.weight;
	return e;
}

static int64_t
model_retry(const struct model *m, const struct est *e, double projected,
	    double now)
{
	double D = projected - m->limit;
	double retry;

	if (e->oldest > 0 && D <= e->oldest * e->weight) {
		retry = ceil(D * m->w / e->oldest);
		seen_retry_weighted++;
	} else {
		retry = ceil((e->c + 1) * m->w - now);
		seen_retry_tick++;
	}
	if (retry < 1)
		seen_retry_clamped++;
	return (int64_t)(retry < 1 ? 1 : retry);
}

static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	struct est e = model_estimate(m, now);
	double projected = e.estimate + cost;
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	seen_regressed += e.regressed;
	d.limit = (int64_t)m->limit;
	d.reset_at = (int64_t)ceil((e.c + 1) * m->w + m->window_ms);
	if (projected <= m->limit) {
		int64_t c = (int64_t)e.c;
		double cur = model_get(m, c);

		m->tick[c % m->slots] = c;
		m->count[c % m->slots] = cur + cost;
		seen_allow++;
		d.allowed = true;
		d.remaining = (int64_t)fmax(0, floor(m->limit - projected));
		d.retry_after_ms = 0;
		return d;
	}
	seen_deny++;
	d.allowed = false;
	d.remaining = (int64_t)fmax(0, floor(m->limit - e.estimate));
	d.retry_after_ms = model_retry(m, &e, projected, now);
	return d;
}

/* The documented peek: a cost-1 check that writes nothing, reporting what
 * is left before it. */
static tkshm_decision
model_peek(const struct model *m, double now)
{
	struct est e = model_estimate(m, now);
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	d.limit = (int64_t)m->limit;
	d.allowed = e.estimate + 1 <= m->limit;
	d.remaining = (int64_t)fmax(0, floor(m->limit - e.estimate));
	d.reset_at = (int64_t)ceil((e.c + 1) * m->w + m->window_ms);
	d.retry_after_ms =
		d.allowed ? 0 : model_retry(m, &e, e.estimate + 1, now);
	return d;
}

/* Idle: nothing stored at a tick >= c - S (c = now's tick), so every get()
 * a decision makes reads 0. */
static bool
model_idle(const struct model *m, double now)
{
	double c = floor(now / m->w);

	for (int64_t p = 0; p < m->slots; p++)
		if (m->tick[p] >= 0 && (double)m->tick[p] >= c - (double)m->S)
			return false;
	return true;
}

/* The documented debt: the unweighted counts of ticks c-S .. c at the
 * tick decided at. */
static double
model_debt(const struct model *m, double now)
{
	struct est e;
	double units = 0;

	if (model_idle(m, now))
		return 0;
	e = model_estimate(m, now);
	for (double j = e.c - (double)m->S; j <= e.c; j++)
		units += model_get(m, (int64_t)j);
	return units;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static struct tk_sliding_window
algo(double limit, double window_ms, double buckets)
{
	struct tk_sliding_window a;
	char err[256] = "";

	if (tk_sliding_window_init(&a, limit, window_ms, buckets, err,
				   sizeof err) != TKSHM_OK)
		fail_msg("init(%g, %g, %g): %s", limit, window_ms, buckets,
			 err);
	return a;
}

static void
assert_same(const char *what, const tkshm_decision *got,
	    const tkshm_decision *want)
{
	algo_assert_decision(what, got, want);
	if (!got->allowed && got->retry_after_ms < 1)
		fail_msg("%s: a denial with retry_after_ms %lld", what,
			 (long long)got->retry_after_ms);
}

/* The state holds exactly the part of the model's ring a decision can
 * read: the newest tick as tick + 1 (0 when empty), then per position the
 * count bits of its entry if its tick is one of newest-S .. newest, else 0
 * (an older lap, or empty). */
static void
assert_ring(const char *what, const struct tk_sliding_window *a,
	    const uint64_t *st, const struct model *m)
{
	int64_t newest = -1;

	assert_int_equal(tk_sliding_window_words(a), m->slots + 1);
	for (int64_t p = 0; p < m->slots; p++)
		if (m->tick[p] > newest)
			newest = m->tick[p];
	if (st[0] != (uint64_t)(newest + 1))
		fail_msg("%s: newest word %#llx, want %#llx", what,
			 (unsigned long long)st[0],
			 (unsigned long long)(newest + 1));
	for (int64_t p = 0; p < m->slots; p++) {
		uint64_t want_n = 0;

		if (m->tick[p] >= 0 && m->tick[p] >= newest - m->S)
			memcpy(&want_n, &m->count[p], sizeof want_n);
		if (st[1 + p] != want_n)
			fail_msg("%s: count %lld = %#llx, want %#llx", what,
				 (long long)p, (unsigned long long)st[1 + p],
				 (unsigned long long)want_n);
	}
	assert_true(tk_sliding_window_state_valid(a, st));
	algo_assert_real_words(what, st, (unsigned)m->slots + 1);
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

ALGO_DEFINE_IMPL(tk_sliding_window, struct tk_sliding_window)

static struct algo_impl
golden_window(const cJSON *suite)
{
	static struct tk_sliding_window a;
	const cJSON *opts = gv_member(gv_member(suite, "strategy"), "options");
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(opts, "buckets");

	a = algo(gv_number(opts, "limit"), gv_number(opts, "windowMs"),
		 b ? gv_number(opts, "buckets") :
		     TK_SLIDING_WINDOW_DEFAULT_BUCKETS);
	return tk_sliding_window_impl(&a, "check", tk_sliding_window_words(&a));
}

static unsigned
replay_golden(const char *kind, double offset)
{
	const struct algo_gv_replay r = { .kind = kind,
					  .cost = "cost",
					  .start = golden_window };
	cJSON *golden = tkt_golden();
	unsigned suites, ops = algo_gv_replay(golden, &r, offset, &suites);

	cJSON_Delete(golden);
	if (suites == 0)
		fail_msg("no rateLimit suite of kind %s", kind);
	return ops;
}

static void
test_golden_as_given(void **state)
{
	(void)state;
	/* The file holds one slidingWindow suite of 5 ops. */
	assert_int_equal(replay_golden("slidingWindow", 0), 5);
}

static void
test_golden_offset_1000(void **state)
{
	(void)state;
	assert_int_equal(replay_golden("slidingWindow", 1000), 5);
}

/* ------------------------------------------------------------------------
 * Validation
 * ---------------------------------------------------------------------- */

static void
expect_refused(double limit, double window_ms, double buckets, const char *word)
{
	struct tk_sliding_window a;
	char err[256] = "";

	if (tk_sliding_window_init(&a, limit, window_ms, buckets, err,
				   sizeof err) != TKSHM_EPOLICY)
		fail_msg("init(%g, %g, %g) accepted", limit, window_ms,
			 buckets);
	if (!strstr(err, word))
		fail_msg("init(%g, %g, %g): \"%s\" does not name %s", limit,
			 window_ms, buckets, err, word);
	/* No buffer: still refused, nothing written. */
	assert_int_equal(
		tk_sliding_window_init(&a, limit, window_ms, buckets, NULL, 0),
		TKSHM_EPOLICY);
}

static void
test_validation(void **state)
{
	struct tk_sliding_window a;

	(void)state;
	expect_refused(0, 1000, 10, "limit");
	expect_refused(-1, 1000, 10, "limit");
	expect_refused(NAN, 1000, 10, "limit");
	expect_refused(INFINITY, 1000, 10, "limit");
	expect_refused(1e300, 1000, 10, "limit");
	expect_refused(10, 0, 10, "windowMs");
	expect_refused(10, -5, 10, "windowMs");
	expect_refused(10, NAN, 10, "windowMs");
	expect_refused(10, INFINITY, 10, "windowMs");
	expect_refused(10, 1e300, 10, "windowMs");
	expect_refused(10, 1000, 0, "buckets");
	expect_refused(10, 1000, -1, "buckets");
	expect_refused(10, 1000, 2.5, "buckets");
	expect_refused(10, 1000, NAN, "buckets");
	expect_refused(10, 1000, INFINITY, "buckets");
	expect_refused(10, 1000, 65, "buckets");
	/* A sub-bucket w below 1/64 ms. */
	expect_refused(10, 0.999, 64, "buckets");
	expect_refused(10, 1e-3, 1, "windowMs");
	/* limit * w overflows. */
	expect_refused(1e299, 1e299, 1, "limit");

	a = algo(10, 1000, 10);
	assert_int_equal(tk_sliding_window_words(&a), 12);
	a = algo(10, 1000, 1);
	assert_int_equal(tk_sliding_window_words(&a), 3);
	a = algo(10, 1, 64); /* w = 1/64 exactly: the narrowest */
	assert_int_equal(tk_sliding_window_words(&a), 66);
	a = algo(0.5, 0.02, 1); /* fractional, small */
	assert_int_equal(tk_sliding_window_words(&a), 3);
	assert_int_equal(TK_SLIDING_WINDOW_DEFAULT_BUCKETS, 10);
	assert_int_equal(TK_SLIDING_WINDOW_MAX_BUCKETS, 64);
}

/* ------------------------------------------------------------------------
 * Worked examples
 * ---------------------------------------------------------------------- */

/* buckets = 1 is the two-counter estimator: Cloudflare's 50/min example, 42
 * in the previous minute and 18 in this one, 15 s in: 42*0.75 + 18 = 49.5.
 * The state is written directly (that history is not reachable through
 * this limiter, which would have denied some of the 18). */
static void
test_cloudflare_two_counter(void **state)
{
	struct tk_sliding_window a = algo(50, 60000, 1);
	const int64_t c = 28333334; /* a minute near EPOCH */
	const double B = (double)c * 60000;
	uint64_t st[3], out[3];
	tkshm_decision d;
	double half = 0.5;

	(void)state;
	st[0] = (uint64_t)c + 1; /* the newest tick, c, stored + 1 */
	st[1 + (c - 1) % 2] = tk_f64_word(42);
	st[1 + c % 2] = tk_f64_word(18);
	assert_true(tk_sliding_window_state_valid(&a, st));

	/* The estimate is 49.5: one more unit (50.5) is denied, with half a
	 * unit short: retry = ceil(0.5 * 60000 / 42) = 715 ms. */
	tk_sliding_window_peek(&a, true, st, B + 15000, &d);
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0); /* floor(50 - 49.5) */
	assert_int_equal(d.limit, 50);
	assert_int_equal(d.reset_at, (int64_t)B + 120000);
	assert_int_equal(d.retry_after_ms, 715);
	assert_false(
		tk_sliding_window_check(&a, true, st, B + 15000, 1, out, &d));
	assert_int_equal(d.retry_after_ms, 715);

	/* Half a unit fits exactly (49.5 + 0.5 = 50 <= 50: never floored). */
	assert_true(tk_sliding_window_check(&a, true, st, B + 15000, half, out,
					    &d));
	assert_int_equal(d.remaining, 0);
	assert_int_equal(tk_word_f64(out[1 + c % 2]), 18.5);
	/* and then nothing more, not even a sliver. */
	assert_false(tk_sliding_window_check(&a, true, out, B + 15000, 1e-9, st,
					     &d));

	/* 45 s in the previous minute weighs 0.25: 10.5 + 18 = 28.5. */
	tk_sliding_window_peek(&a, true, st, B + 45000, &d);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 21);
	/* At the next minute the previous one has gone and this one is the
	 * oldest, fully weighted: 18. */
	tk_sliding_window_peek(&a, true, st, B + 60000, &d);
	assert_int_equal(d.remaining, 32);
	/* Two minutes on, idle. */
	assert_false(tk_sliding_window_is_idle(&a, st, B + 119999));
	assert_true(tk_sliding_window_is_idle(&a, st, B + 120000));
	assert_true(tk_sliding_window_debt(&a, st, B + 120000) == 0);
	assert_true(tk_sliding_window_debt(&a, st, B + 15000) == 60);
}

/*
 * The max(retry, 1) clamp.  With w = 100/3 (a double slightly above it),
 * now = 2100 is 63*w exactly, yet floor(2100 / w) = 62: the tick branch
 * computes ceil(63*w - 2100) = 0, which ThrottleKit raises to 1.
 */
static void
test_retry_at_least_one(void **state)
{
	struct tk_sliding_window a = algo(2, 100, 3);
	struct model m;
	uint64_t st[8], out[8];
	tkshm_decision d, e;

	(void)state;
	model_init(&m, 2, 100, 3, false);
	assert_true(floor(2100 / (100.0 / 3)) == 62); /* the premise */
	assert_true(63 * (100.0 / 3) == 2100);
	assert_true(tk_sliding_window_check(&a, false, NULL, 2090, 2, st, &d));
	assert_true(model_check(&m, 2090, 2).allowed);
	seen_retry_clamped = 0;
	e = model_check(&m, 2100, 1);
	assert_int_equal(seen_retry_clamped, 1);
	assert_false(tk_sliding_window_check(&a, true, st, 2100, 1, out, &d));
	assert_same("2100", &d, &e);
	assert_int_equal(d.retry_after_ms, 1);
	assert_int_equal(d.reset_at, 2200); /* ceil(63*w + 100) */
	tk_sliding_window_peek(&a, true, st, 2100, &d);
	assert_int_equal(d.retry_after_ms, 1);
}

/*
 * The same double operations in the same order (docs/semantics.md,
 * "Absolute-time rounding": reproduce
 * the float artifacts, do not fix them).
 */
static void
test_float_order(void **state)
{
	struct tk_sliding_window a = algo(1, 300, 3); /* w = 100 */
	struct model m;
	uint64_t st[8], out[8];
	tkshm_decision d, e;

	(void)state;
	/* full sums ticks in ascending order: ((0.1 + 0.2) + 0.3) is
	 * 0.6000000000000001 (descending would give 0.6), so x = the double
	 * after 0.4 brings it to 1.0000000000000002 > 1: denied. */
	model_init(&m, 1, 300, 3, false);
	assert_true(
		tk_sliding_window_check(&a, false, NULL, 1000, 0.1, st, &d));
	assert_true(tk_sliding_window_check(&a, true, st, 1100, 0.2, st, &d));
	assert_true(tk_sliding_window_check(&a, true, st, 1200, 0.3, st, &d));
	assert_true(model_check(&m, 1000, 0.1).allowed);
	assert_true(model_check(&m, 1100, 0.2).allowed);
	assert_true(model_check(&m, 1200, 0.3).allowed);
	/* The other order would admit. */
	assert_true(0.3 + 0.2 + 0.1 + 0.4000000000000001 <= 1);
	e = model_check(&m, 1200, 0.4000000000000001);
	assert_false(e.allowed);
	assert_false(tk_sliding_window_check(&a, true, st, 1200,
					     0.4000000000000001, out, &d));
	assert_same("ascending sum", &d, &e);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.retry_after_ms, 100); /* ceil(13*100 - 1200) */

	/* The weighted retry is ceil((D * w) / oldest), left to right: with
	 * w = 100/3, D = 9 and oldest = 12 that is ceil(25.0) = 25, where
	 * D * (w / oldest) would be 25.000000000000004 -> 26. */
	a = algo(12, 100, 3);
	model_init(&m, 12, 100, 3, false);
	assert_true(tk_sliding_window_check(&a, false, NULL, 1001, 12, st,
					    &d)); /* tick 30 */
	assert_true(model_check(&m, 1001, 12).allowed);
	/* Tick 33 starts at 33*w = 1100 exactly: weight 1, D = 9. */
	e = model_check(&m, 33 * (100.0 / 3), 9);
	assert_false(tk_sliding_window_check(&a, true, st, 33 * (100.0 / 3), 9,
					     out, &d));
	assert_same("D*w/oldest", &d, &e);
	assert_int_equal(d.retry_after_ms, 25);
}

/* ------------------------------------------------------------------------
 * Random timelines against the model
 * ---------------------------------------------------------------------- */

enum delta_kind {
	DELTA_CONFORMANCE, /* floor(rng * 900), ThrottleKit's tests */
	DELTA_MIXED,	   /* 0, within a tick, within the window, past it */
};

enum cost_kind {
	COST_INT,     /* 1 + floor(rng * 4) */
	COST_QUARTER, /* 0.25 .. 3 in quarters */
	COST_ANY,     /* any double in (0.001, 3.001) */
};

struct policy {
	const char *name;
	double limit, window_ms;
	int S;
	double t0;
	enum delta_kind delta;
	enum cost_kind cost;
	unsigned timelines, steps;
};

static double
draw_cost(enum cost_kind k)
{
	switch (k) {
	case COST_INT:
		return 1 + floor(mb() * 4);
	case COST_QUARTER:
		return 0.25 * (1 + floor(mb() * 12));
	case COST_ANY:
		return 0.001 + mb() * 3;
	}
	return 1;
}

static double
draw_delta(const struct policy *p, double w)
{
	double r;

	if (p->delta == DELTA_CONFORMANCE)
		return floor(mb() * 900);
	r = mb();
	if (r < 0.15)
		return 0;
	if (r < 0.6)
		return mb() * w;
	if (r < 0.95)
		return mb() * p->window_ms / 4;
	return p->window_ms * (1 + mb() * 2);
}

/* One step: peek, idle and debt, then the check, each against the model;
 * the state and the model advance together.  Returns the decision. */
static tkshm_decision
step(const struct tk_sliding_window *a, struct model *m, uint64_t *st,
     bool *present, double now, double cost, const char *what)
{
	unsigned n = tk_sliding_window_words(a);
	uint64_t out[MAXWORDS];
	tkshm_decision d, want;
	char msg[200];
	bool ok;

	snprintf(msg, sizeof msg, "%s: peek", what);
	tk_sliding_window_peek(a, *present, st, now, &d);
	want = model_peek(m, now);
	assert_same(msg, &d, &want);

	if (*present) {
		bool idle = tk_sliding_window_is_idle(a, st, now);
		double debt = tk_sliding_window_debt(a, st, now);

		if (idle != model_idle(m, now))
			fail_msg("%s: is_idle %d, model %d", what, idle, !idle);
		if (debt != model_debt(m, now))
			fail_msg("%s: debt %.17g, model %.17g", what, debt,
				 model_debt(m, now));
		if ((debt == 0) != idle)
			fail_msg("%s: debt %.17g but idle %d", what, debt,
				 idle);
		if (idle) {
			seen_idle++;
			/* Decides exactly as absent: check and peek. */
			uint64_t o1[MAXWORDS], o2[MAXWORDS];
			tkshm_decision x, y;
			bool a1 = tk_sliding_window_check(a, true, st, now,
							  cost, o1, &x);
			bool a2 = tk_sliding_window_check(a, false, NULL, now,
							  cost, o2, &y);

			snprintf(msg, sizeof msg, "%s: idle vs absent", what);
			assert_same(msg, &x, &y);
			assert_int_equal(a1, a2);
			tk_sliding_window_peek(a, true, st, now, &x);
			tk_sliding_window_peek(a, false, NULL, now, &y);
			assert_same(msg, &x, &y);
		}
	}

	for (unsigned i = 0; i < MAXWORDS; i++)
		out[i] = PATTERN;
	memset(&d, 0xA5, sizeof d);
	ok = tk_sliding_window_check(a, *present, *present ? st : NULL, now,
				     cost, out, &d);
	want = model_check(m, now, cost);
	snprintf(msg, sizeof msg, "%s: check", what);
	assert_same(msg, &d, &want);
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
		/* A denial never writes. */
		for (unsigned i = 0; i < MAXWORDS; i++)
			if (out[i] != PATTERN)
				fail_msg("%s: a denial wrote word %u", what, i);
	}
	if (*present)
		assert_ring(msg, a, st, m);
	return d;
}

static unsigned long
run_policy(const struct policy *p, unsigned case_index, double regress)
{
	struct tk_sliding_window a = algo(p->limit, p->window_ms, p->S);
	unsigned long steps = 0;

	for (unsigned t = 0; t < p->timelines; t++) {
		struct model m;
		uint64_t st[MAXWORDS];
		bool present = false;
		double now = p->t0 + t * 37;

		mb_state = 1000 + case_index * 101 + t;
		model_init(&m, p->limit, p->window_ms, p->S, true);
		memset(st, 0, sizeof st);
		for (unsigned s = 0; s < p->steps; s++) {
			char what[160];
			double cost;

			if (regress > 0 && mb() < regress) {
				now -= mb() * 2 * p->window_ms;
				if (now < 0)
					now = 0;
			} else {
				now += draw_delta(p, a.w);
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

/* Forward timelines: the model runs ThrottleKit's formulas, and `monotone`
 * never applies (it is on, and asserted inert by the plain model below). */
static const struct policy forward[] = {
	/* ThrottleKit's three conformance cases, 40 timelines x 25 steps. */
	{ "50/1s S=10", 50, 1000, 10, EPOCH, DELTA_CONFORMANCE, COST_INT, 40,
	  25 },
	{ "20/1s S=3", 20, 1000, 3, EPOCH, DELTA_CONFORMANCE, COST_INT, 40,
	  25 },
	{ "100/60s S=1", 100, 60000, 1, EPOCH, DELTA_CONFORMANCE, COST_INT, 40,
	  25 },
	/* Longer ones. */
	{ "10/1s S=10 fractional costs", 10, 1000, 10, 0, DELTA_MIXED, COST_ANY,
	  20, 500 },
	{ "20/1s S=3 epoch", 20, 1000, 3, EPOCH, DELTA_MIXED, COST_INT, 20,
	  500 },
	{ "7.5/700ms S=7 quarters", 7.5, 700, 7, 1000, DELTA_MIXED,
	  COST_QUARTER, 20, 500 },
	{ "5/100ms S=64 epoch", 5, 100, 64, EPOCH, DELTA_MIXED, COST_ANY, 20,
	  500 },
	{ "50/60s S=1 epoch", 50, 60000, 1, EPOCH, DELTA_MIXED, COST_ANY, 20,
	  500 },
	{ "3/10ms S=3", 3, 10, 3, 123.456, DELTA_MIXED, COST_QUARTER, 20, 500 },
	{ "1000/1h S=10 epoch", 1000, 3600000, 10, EPOCH, DELTA_MIXED, COST_INT,
	  10, 500 },
};

static void
test_forward_timelines(void **state)
{
	unsigned long steps = 0;

	(void)state;
	seen_allow = seen_deny = seen_retry_weighted = seen_retry_tick = 0;
	seen_retry_clamped = seen_idle = seen_regressed = 0;
	for (unsigned i = 0; i < sizeof forward / sizeof forward[0]; i++)
		steps += run_policy(&forward[i], 9 + i, 0);
	assert_true(steps >= 3000 + 6 * 10000);
	/* Every path was taken, many times; the rule never fired. */
	print_message("%lu steps: %lu admitted, %lu denied (retry: %lu "
		      "weighted, %lu to the next tick, %lu raised to 1), "
		      "%lu idle\n",
		      steps, seen_allow, seen_deny, seen_retry_weighted,
		      seen_retry_tick, seen_retry_clamped, seen_idle);
	assert_true(seen_allow > 10000 && seen_deny > 10000);
	assert_true(seen_retry_weighted > 1000 && seen_retry_tick > 1000);
	assert_true(seen_idle > 1000);
	assert_int_equal(seen_regressed, 0);
}

/* On a forward timeline the regression rule never fires: ThrottleKit's
 * formulas without it (monotone = false) decide every step the same. */
static void
test_forward_is_throttlekit(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof forward / sizeof forward[0]; i++) {
		const struct policy *p = &forward[i];
		struct tk_sliding_window a = algo(p->limit, p->window_ms, p->S);

		for (unsigned t = 0; t < p->timelines; t++) {
			struct model m;
			uint64_t st[MAXWORDS], out[MAXWORDS];
			bool present = false;
			double now = p->t0 + t * 37;

			mb_state = 7 + i * 101 + t;
			model_init(&m, p->limit, p->window_ms, p->S, false);
			for (unsigned s = 0; s < p->steps; s++) {
				tkshm_decision d, want;
				double cost;
				char what[160];

				now += draw_delta(p, a.w);
				cost = draw_cost(p->cost);
				want = model_check(&m, now, cost);
				if (tk_sliding_window_check(&a, present, st,
							    now, cost, out,
							    &d)) {
					memcpy(st, out, sizeof st);
					present = true;
				}
				snprintf(what, sizeof what,
					 "%s timeline %u step %u", p->name, t,
					 s);
				assert_same(what, &d, &want);
			}
		}
	}
}

/* The state may be updated in place (st_out == st). */
static void
test_in_place(void **state)
{
	struct tk_sliding_window a = algo(20, 1000, 3);
	const struct policy p = { "in place",  20,	 1000, 3, EPOCH,
				  DELTA_MIXED, COST_ANY, 1,    0 };
	uint64_t st[MAXWORDS], same[MAXWORDS];
	bool present = false;
	double now = EPOCH;

	(void)state;
	mb_state = 4242;
	for (unsigned s = 0; s < 3000; s++) {
		tkshm_decision d, e;
		uint64_t out[MAXWORDS];
		double cost;
		bool x, y;

		now += draw_delta(&p, a.w);
		if (mb() < 0.1)
			now -= mb() * 1500; /* regressions too */
		cost = draw_cost(COST_ANY);
		x = tk_sliding_window_check(&a, present, st, now, cost, out,
					    &d);
		if (present)
			memcpy(same, st, sizeof same);
		y = tk_sliding_window_check(&a, present, same, now, cost, same,
					    &e);
		assert_int_equal(x, y);
		assert_same("in place", &e, &d);
		if (x) {
			assert_memory_equal(
				out, same,
				sizeof *out * tk_sliding_window_words(&a));
			memcpy(st, out, sizeof st);
			present = true;
		}
	}
}

/* ------------------------------------------------------------------------
 * Properties
 * ---------------------------------------------------------------------- */

/* ThrottleKit's fixed window (docs/semantics.md, "Fixed window"), for
 * comparison. */
struct fixed {
	double limit, window_ms, start, count;
	bool present;
};

static bool
fixed_check(struct fixed *f, double now, double cost)
{
	double ws = floor(now / f->window_ms) * f->window_ms;
	double count = f->present && f->start == ws ? f->count : 0;

	if (count + cost <= f->limit) {
		f->present = true;
		f->start = ws;
		f->count = count + cost;
		return true;
	}
	return false;
}

/*
 * A full limit spent in the last millisecond of a fixed window, then cost-1
 * requests as fast as admitted at every millisecond for two windows.  A
 * fixed window admits a second full limit one millisecond later (2 x limit
 * within 2 ms).  The sliding window admits nothing while the burst's tick b
 * is among the S newest (until tick b + S starts), and no window
 * (t - windowMs, t] ever holds 2 x limit.
 */
static void
test_no_double_across_boundary(void **state)
{
	static const struct {
		double limit, window_ms;
		int S;
		double t0;
	} cases[] = {
		{ 10, 1000, 10, 0 },	  { 10, 1000, 1, 0 },
		{ 20, 1000, 3, EPOCH },	  { 10, 1000, 10, EPOCH },
		{ 100, 60000, 1, EPOCH }, { 7, 700, 7, 1000 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tk_sliding_window a =
			algo(cases[i].limit, cases[i].window_ms, cases[i].S);
		struct fixed f = { cases[i].limit, cases[i].window_ms, 0, 0,
				   false };
		double W = cases[i].window_ms;
		/* The last ms of a fixed window. */
		double t0 = (floor(cases[i].t0 / W) + 5) * W - 1;
		double w = W / cases[i].S;
		double first_free = (floor(t0 / w) + cases[i].S) * w;
		static double at[400000];
		unsigned n = 0, fixed_n = 0, fixed_2ms = 0;
		uint64_t st[MAXWORDS], out[MAXWORDS];
		bool present = false;
		tkshm_decision d;
		unsigned steps = (unsigned)(2 * W);

		/* The burst: limit units, one at a time. */
		for (unsigned k = 0; k < cases[i].limit; k++) {
			assert_true(tk_sliding_window_check(&a, present, st, t0,
							    1, out, &d));
			memcpy(st, out, sizeof st);
			present = true;
			at[n++] = t0;
			assert_true(fixed_check(&f, t0, 1));
			fixed_n++;
		}
		assert_false(
			tk_sliding_window_check(&a, true, st, t0, 1, out, &d));
		for (unsigned ms = 1; ms <= steps; ms++) {
			double now = t0 + ms;

			while (tk_sliding_window_check(&a, true, st, now, 1,
						       out, &d)) {
				memcpy(st, out, sizeof st);
				if (now < first_free)
					fail_msg("case %u: admitted at %.17g, "
						 "before tick b + S starts at "
						 "%.17g",
						 i, now, first_free);
				assert_true(n < sizeof at / sizeof at[0]);
				at[n++] = now;
			}
			while (fixed_check(&f, now, 1)) {
				fixed_n++;
				if (ms == 1)
					fixed_2ms++;
			}
		}
		/* The fixed window doubles at the boundary. */
		assert_int_equal(fixed_2ms, (unsigned)cases[i].limit);
		/* The sliding window never holds 2 x limit in a window. */
		for (unsigned j = 0, k = 0; j < n; j++) {
			while (!(at[k] > at[j] - W))
				k++;
			if (j - k + 1 >= 2 * cases[i].limit)
				fail_msg("case %u: %u admitted in (%.17g, "
					 "%.17g]",
					 i, j - k + 1, at[j] - W, at[j]);
		}
		/* It does admit again once the burst's tick has left. */
		assert_true(n > cases[i].limit);
		assert_true(fixed_n >= 3 * cases[i].limit);
	}
}

/*
 * Regressions.  ThrottleKit reads an older lap of the ring as 0 and admits:
 * with S = 1 (ring of 2), a full tick 11 and a jump back to tick 9 (the
 * same ring entry) admits and overwrites tick 11's count, so back at tick
 * 11 a second full limit passes.  tkshm decides at tick 11 and denies.
 */
static void
test_regression_examples(void **state)
{
	struct tk_sliding_window a = algo(2, 1000, 1);
	struct model tk;
	uint64_t st[4], out[4];
	tkshm_decision d, e;
	bool present = false;

	(void)state;
	model_init(&tk, 2, 1000, 1, false); /* ThrottleKit proper */
	for (int k = 0; k < 2; k++) {
		assert_true(tk_sliding_window_check(&a, present, st, 11500, 1,
						    out, &d));
		memcpy(st, out, sizeof st);
		present = true;
		assert_true(model_check(&tk, 11500, 1).allowed);
	}
	/* Back to tick 9: ThrottleKit admits, tkshm denies. */
	e = model_check(&tk, 9500, 1);
	assert_true(e.allowed);
	assert_false(tk_sliding_window_check(&a, true, st, 9500, 1, out, &d));
	/* Decided at tick 11 with now = 9500: weight 1 (elapsed clamps to
	 * 0), estimate 2, remaining 0, resetAt = ceil(12*1000 + 1000), retry
	 * = ceil(12000 - 9500) (the oldest, tick 10, is empty). */
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.reset_at, 13000);
	assert_int_equal(d.retry_after_ms, 2500);
	/* Back at tick 11: ThrottleKit has forgotten it; tkshm has not. */
	assert_true(model_check(&tk, 11600, 1).allowed);
	assert_true(model_check(&tk, 11600, 1).allowed);
	assert_false(tk_sliding_window_check(&a, true, st, 11600, 1, out, &d));

	/* S = 10, limit 2: 2 at 5000, a jump back to 4900 (tick 49, an empty
	 * entry): ThrottleKit admits a third unit into the window. */
	a = algo(2, 1000, 10);
	model_init(&tk, 2, 1000, 10, false);
	{
		uint64_t s10[12], o10[12];

		assert_true(tk_sliding_window_check(&a, false, NULL, 5000, 2,
						    s10, &d));
		assert_true(model_check(&tk, 5000, 2).allowed);
		assert_false(tk_sliding_window_check(&a, true, s10, 5100, 1,
						     o10, &d));
		assert_false(model_check(&tk, 5100, 1).allowed);
		assert_true(model_check(&tk, 4900, 1).allowed);
		assert_false(tk_sliding_window_check(&a, true, s10, 4900, 1,
						     o10, &d));
		/* Not idle in the past, and decided at tick 50. */
		assert_false(tk_sliding_window_is_idle(&a, s10, 4900));
		assert_true(tk_sliding_window_debt(&a, s10, 4900) == 2);
		/* Free again once tick 50 leaves: at tick 60 it is the
		 * oldest, weighted (w - elapsed)/w. */
		assert_false(tk_sliding_window_check(&a, true, s10, 5999, 1,
						     o10, &d));
		assert_true(tk_sliding_window_check(&a, true, s10, 6050, 1, o10,
						    &d));
	}
}

/*
 * Random timelines with backward jumps, against the model with the rule,
 * and by brute force: every admission is charged to its effective tick
 * (max of now's tick and the newest tick admitted before), and the units
 * charged to any S consecutive ticks never exceed the limit.
 */
static void
test_regression_timelines(void **state)
{
	static const struct policy pols[] = {
		{ "r 10/1s S=10", 10, 1000, 10, 5000, DELTA_MIXED, COST_INT, 30,
		  400 },
		{ "r 20/1s S=3", 20, 1000, 3, EPOCH, DELTA_MIXED, COST_INT, 30,
		  400 },
		{ "r 5/1s S=1", 5, 1000, 1, EPOCH, DELTA_MIXED, COST_INT, 30,
		  400 },
		{ "r 4/100ms S=64", 4, 100, 64, 1000, DELTA_MIXED, COST_INT, 30,
		  400 },
	};
	static int64_t tick_of[400];
	static double units_of[400];
	unsigned long steps = 0;

	(void)state;
	seen_regressed = 0;
	for (unsigned i = 0; i < sizeof pols / sizeof pols[0]; i++) {
		const struct policy *p = &pols[i];
		struct tk_sliding_window a = algo(p->limit, p->window_ms, p->S);

		for (unsigned t = 0; t < p->timelines; t++) {
			struct model m;
			uint64_t st[MAXWORDS];
			bool present = false;
			double now = p->t0 + t * 37;
			int64_t newest = -1;
			unsigned n = 0, regressions = 0;

			mb_state = 99 + i * 101 + t;
			model_init(&m, p->limit, p->window_ms, p->S, true);
			for (unsigned s = 0; s < p->steps; s++) {
				double cost = draw_cost(p->cost);
				tkshm_decision d;
				char what[160];
				int64_t c;

				if (mb() < 0.1) {
					/* Small (skew) or large (a step back). */
					now -= mb() < 0.5 ?
						       mb() * p->window_ms /
							       p->S :
						       mb() * 2 * p->window_ms;
					now = now < 0 ? 0 : now;
					regressions++;
				} else {
					now += draw_delta(p, a.w);
				}
				snprintf(what, sizeof what,
					 "%s timeline %u step %u (now %.17g)",
					 p->name, t, s, now);
				d = step(&a, &m, st, &present, now, cost, what);
				steps++;
				if (!d.allowed)
					continue;
				c = (int64_t)floor(now / (p->window_ms / p->S));
				if (c < newest)
					c = newest;
				newest = c;
				tick_of[n] = c;
				units_of[n++] = cost;
			}
			assert_true(regressions > 0);
			for (unsigned j = 0; j < n; j++) {
				double sum = 0;

				for (unsigned k = 0; k < n; k++)
					if (tick_of[k] <= tick_of[j] &&
					    tick_of[k] > tick_of[j] - p->S)
						sum += units_of[k];
				if (sum > p->limit)
					fail_msg("%s timeline %u: %g units in "
						 "the %d ticks ending at %lld",
						 p->name, t, sum, p->S,
						 (long long)tick_of[j]);
			}
		}
	}
	print_message("%lu steps, %lu decided at the newest tick\n", steps,
		      seen_regressed);
	assert_true(steps >= 40000);
	assert_true(seen_regressed > 1000);
}

/* Beyond the tick horizon the window stops moving: still at most `limit`,
 * every word below 2^51, and no undefined arithmetic (UBSan build). */
static void
test_horizon(void **state)
{
	struct tk_sliding_window a = algo(10, 1, 64); /* w = 1/64 ms */
	const double nows[] = { 4611686018427387904.0, 1e17, 3.6e13 };
	uint64_t st[66], out[66];
	bool present = false;
	unsigned admitted = 0;
	tkshm_decision d;

	(void)state;
	for (unsigned r = 0; r < 3; r++)
		for (unsigned k = 0; k < 20; k++)
			if (tk_sliding_window_check(&a, present, st, nows[r], 1,
						    out, &d)) {
				memcpy(st, out, sizeof st);
				present = true;
				admitted++;
			} else {
				assert_true(d.retry_after_ms >= 1);
			}
	assert_int_equal(admitted, 10);
	assert_true(tk_sliding_window_state_valid(&a, st));
	algo_assert_real_words("horizon", st, 66);
	assert_true(st[0] < (UINT64_C(1) << 51));
	assert_false(tk_sliding_window_is_idle(&a, st, nows[0]));
	assert_true(tk_sliding_window_debt(&a, st, nows[0]) == 10);
	/* 3.6e13 ms is tick 2.3e15, past TICK_MAX = 2^51 - 2 (about
	 * 2.25e15, i.e. 2^45 ms = 3.5e13 ms at w = 1/64): decided at
	 * TICK_MAX, where the 10 units already are. */
	tk_sliding_window_peek(&a, true, st, nows[2], &d);
	assert_false(d.allowed);
}

/* state_valid refuses what no transition writes. */
static void
test_state_valid(void **state)
{
	struct tk_sliding_window a = algo(10, 1000, 3); /* 4 positions */
	uint64_t st[5];

	(void)state;
	memset(st, 0, sizeof st);
	assert_true(tk_sliding_window_state_valid(&a, st));
	assert_true(tk_sliding_window_is_idle(&a, st, 0));
	st[0] = 5 + 1; /* newest tick 5, at position 5 mod 4 = 1 */
	st[1 + 1] = tk_f64_word(2.5);
	assert_true(tk_sliding_window_state_valid(&a, st));
	/* Above the limit: a limit lowered in place since (protocol.h L1). */
	st[1 + 1] = tk_f64_word(10.5);
	assert_true(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(INFINITY);
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(0); /* a newest tick without units */
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(-1);
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(NAN);
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(-0.0);
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 1] = tk_f64_word(2.5);
	st[1 + 3] = tk_f64_word(-1); /* tick 3: a negative count */
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[1 + 3] = tk_f64_word(1); /* tick 3 with units */
	assert_true(tk_sliding_window_state_valid(&a, st));
	st[0] = 0; /* empty, but with counts */
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[0] = UINT64_MAX; /* a special word */
	assert_false(tk_sliding_window_state_valid(&a, st));
	st[0] = (UINT64_C(1) << 51) + 2; /* tick 2^51 + 1 > TICK_MAX */
	assert_false(tk_sliding_window_state_valid(&a, st));
	memset(st, 0, sizeof st);
	st[0] = (UINT64_C(1) << 51) - 1; /* TICK_MAX, at position 2 */
	st[1 + 2] = tk_f64_word(1);
	assert_true(tk_sliding_window_state_valid(&a, st));
	/* A negative now (outside the contract) is decided at tick 0 and
	 * stores a valid state. */
	{
		tkshm_decision d;
		uint64_t out[5];

		assert_true(tk_sliding_window_check(&a, false, NULL, -5, 1, out,
						    &d));
		assert_true(tk_sliding_window_state_valid(&a, out));
		assert_true(out[0] == 1); /* tick 0 */
	}
	/* An invalid state still decides without undefined behaviour. */
	{
		tkshm_decision d;
		uint64_t out[5];

		st[0] = UINT64_MAX;
		(void)tk_sliding_window_check(&a, true, st, 1000, 1, out, &d);
		(void)tk_sliding_window_debt(&a, st, 1000);
		st[0] = UINT64_C(0x8000000000000000);
		(void)tk_sliding_window_check(&a, true, st, 1000, 1, out, &d);
		(void)tk_sliding_window_debt(&a, st, 1000);
		st[0] = (UINT64_C(1) << 51) + 2;
		(void)tk_sliding_window_check(&a, true, st, 1000, 1, out, &d);
		(void)tk_sliding_window_debt(&a, st, 1000);
	}
}

/*
 * The canonical form: a position whose tick leaves the window is zeroed as
 * the window moves over it, and a state that is not canonical (units at a
 * position standing for no tick) is refused.
 */
static void
test_canonical_form(void **state)
{
	struct tk_sliding_window a = algo(100, 300, 3); /* w = 100, 4 pos. */
	uint64_t st[5], out[5];
	tkshm_decision d;

	(void)state;
	/* Ticks 10 (position 2), 11 (3) and 12 (0). */
	assert_true(tk_sliding_window_check(&a, false, NULL, 1000, 1, st, &d));
	assert_true(tk_sliding_window_check(&a, true, st, 1100, 2, st, &d));
	assert_true(tk_sliding_window_check(&a, true, st, 1200, 3, st, &d));
	assert_true(st[0] == 13);
	assert_true(tk_word_f64(st[1 + 2]) == 1);
	assert_true(tk_word_f64(st[1 + 3]) == 2);
	assert_true(tk_word_f64(st[1 + 0]) == 3);
	assert_true(st[1 + 1] == 0);
	/* Tick 14 (position 2): tick 10 leaves, tick 13 (position 1) has
	 * nothing; position 2 starts again from 0, not from tick 10's 1. */
	assert_true(tk_sliding_window_check(&a, true, st, 1400, 4, out, &d));
	assert_true(out[0] == 15);
	assert_true(tk_word_f64(out[1 + 2]) == 4);
	assert_true(tk_word_f64(out[1 + 3]) == 2); /* tick 11 */
	assert_true(tk_word_f64(out[1 + 0]) == 3); /* tick 12 */
	assert_true(out[1 + 1] == 0);		   /* tick 13 */
	assert_true(tk_sliding_window_state_valid(&a, out));
	/* Tick 16 (position 0): ticks 11 and 12 leave, both zeroed; tick 12's
	 * position now stands for 16 and holds only the new unit. */
	assert_true(tk_sliding_window_check(&a, true, out, 1600, 1, out, &d));
	assert_true(out[0] == 17);
	assert_true(tk_word_f64(out[1 + 0]) == 1);
	assert_true(out[1 + 3] == 0);
	assert_true(tk_word_f64(out[1 + 2]) == 4); /* tick 14 */
	assert_true(out[1 + 1] == 0);
	/* Far ahead: everything but the new tick is zeroed. */
	assert_true(tk_sliding_window_check(&a, true, out, 99900, 5, out, &d));
	assert_true(out[0] == 1000);
	for (unsigned p = 0; p < 4; p++)
		assert_true(p == 999 % 4 ? tk_word_f64(out[1 + p]) == 5 :
					   out[1 + p] == 0);
	/* Not canonical: newest tick 1 (positions 2 and 3 stand for no tick,
	 * -2 and -1) with units at position 3. */
	memset(st, 0, sizeof st);
	st[0] = 1 + 1;
	st[1 + 1] = tk_f64_word(1);
	st[1 + 0] = tk_f64_word(2);
	assert_true(tk_sliding_window_state_valid(&a, st));
	st[1 + 3] = tk_f64_word(1);
	assert_false(tk_sliding_window_state_valid(&a, st));
	/* A state with units but no newest tick, or whose newest holds
	 * nothing, is not canonical either. */
	st[1 + 3] = 0;
	st[1 + 1] = 0;
	assert_false(tk_sliding_window_state_valid(&a, st));
}

/* A refund (refund.c) takes units from a tick of the window; emptying the
 * newest tick steps the newest back to the newest tick with units, or
 * empties the state: canonical either way. */
static void
test_refund(void **state)
{
	struct tk_algo x;
	uint64_t st[5];
	tkshm_decision d;

	(void)state;
	memset(&x, 0, sizeof x);
	x.kind = TKSHM_KIND_SLIDING_WINDOW;
	x.u.sliding_window = algo(100, 300, 3); /* w = 100 */
	x.words = tk_sliding_window_words(&x.u.sliding_window);
	assert_true(tk_sliding_window_check(&x.u.sliding_window, false, NULL,
					    1000, 2, st, &d));
	assert_true(tk_sliding_window_check(&x.u.sliding_window, true, st, 1200,
					    3, st, &d));
	/* Tick 8 has left the window (its position holds tick 12's units),
	 * tick 13 is not stored yet. */
	assert_false(tk_algo_refund_w(&x, st, 1, 850));
	assert_false(tk_algo_refund_w(&x, st, 1, 1300));
	/* Tick 11 is in the window but holds nothing. */
	assert_false(tk_algo_refund_w(&x, st, 1, 1100));
	assert_true(tk_algo_refund_w(&x, st, 1, 1250));
	assert_true(st[0] == 13 && tk_word_f64(st[1 + 0]) == 2);
	assert_true(tk_algo_refund_w(&x, st, 2, 1250));
	assert_true(st[0] == 11); /* back to tick 10 */
	assert_true(st[1 + 0] == 0 && tk_word_f64(st[1 + 2]) == 2);
	assert_true(tk_sliding_window_state_valid(&x.u.sliding_window, st));
	assert_true(tk_algo_refund_w(&x, st, 5, 1000));
	assert_true(st[0] == 0 && st[1 + 2] == 0);
	assert_true(tk_sliding_window_state_valid(&x.u.sliding_window, st));
	assert_true(tk_sliding_window_is_idle(&x.u.sliding_window, st, 1000));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_as_given),
		cmocka_unit_test(test_golden_offset_1000),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_cloudflare_two_counter),
		cmocka_unit_test(test_retry_at_least_one),
		cmocka_unit_test(test_float_order),
		cmocka_unit_test(test_forward_timelines),
		cmocka_unit_test(test_forward_is_throttlekit),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_no_double_across_boundary),
		cmocka_unit_test(test_regression_examples),
		cmocka_unit_test(test_regression_timelines),
		cmocka_unit_test(test_horizon),
		cmocka_unit_test(test_state_valid),
		cmocka_unit_test(test_canonical_form),
		cmocka_unit_test(test_refund),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
