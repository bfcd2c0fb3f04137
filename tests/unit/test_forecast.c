/*
 * test_forecast.c - the non-consuming forecast (src/algorithms/forecast.h)
 * of every algorithm.
 *
 * Oracles, none of which is the code under test:
 * - ThrottleKit's two documented examples (token bucket capacity 5 at 1/s
 *   drained: nextReplenishAt = now + 1000, fullAt = now + 5000; the
 *   sliding log's formulas) and its float artifact (GCRA {3, 1000, 3}
 *   admits 3 cells near now = 1000, 2 near now = 1e6);
 * - the algorithm's own check, iterated on a copy of the state until it
 *   denies (or reaches a fixed point: admitted and state unchanged, which
 *   admits for ever), for spendable_now;
 * - the algorithm's own is_idle and peek (through the dispatch in
 *   algorithm.h) at whole ms around the forecast's times: idle at full_at
 *   and not a ms before; a peek's remaining no larger than now's before
 *   next_replenish_at and larger at it (unless it is full_at).
 * States come from random admitted timelines (forward steps, repeats at
 * one now, small backward jumps) and, for the rounding edges of the walk,
 * from states built word by word near binade boundaries.  Every forecast
 * is also made on a buffer with guard words, which must come back
 * unchanged.
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
#include "algorithms/forecast.h"

/* The most checks the iterating oracle runs before giving up: the
 * policies below keep every answer far under it. */
#define ORACLE_MAX 4000000

#define GUARD_WORDS 8
#define GUARD	    UINT64_C(0xC3C3C3C3C3C3C3C3)

/* ------------------------------------------------------------------------
 * Policies, built directly from the per-kind constructors.
 * ---------------------------------------------------------------------- */

static struct tk_algo
mk_gcra(double limit, double period_ms, double burst)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_GCRA;
	a.words = 1;
	if (tk_gcra_init(&a.u.gcra, limit, period_ms, burst, err, sizeof err))
		fail_msg("gcra: %s", err);
	return a;
}

static struct tk_algo
mk_token_bucket(double capacity, double refill_per_sec)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_TOKEN_BUCKET;
	a.words = TK_TOKEN_BUCKET_WORDS;
	if (tk_token_bucket_init(&a.u.token_bucket, capacity, refill_per_sec,
				 err, sizeof err))
		fail_msg("tokenBucket: %s", err);
	return a;
}

static struct tk_algo
mk_fixed_window(double limit, double window_ms)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_FIXED_WINDOW;
	a.words = TK_FIXED_WINDOW_WORDS;
	if (tk_fixed_window_init(&a.u.fixed_window, limit, window_ms, err,
				 sizeof err))
		fail_msg("fixedWindow: %s", err);
	return a;
}

static struct tk_algo
mk_sliding_window(double limit, double window_ms, double buckets)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_SLIDING_WINDOW;
	if (tk_sliding_window_init(&a.u.sliding_window, limit, window_ms,
				   buckets, err, sizeof err))
		fail_msg("slidingWindow: %s", err);
	a.words = tk_sliding_window_words(&a.u.sliding_window);
	return a;
}

static struct tk_algo
mk_sliding_log(double limit, double window_ms)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_SLIDING_LOG;
	if (tk_sliding_log_init(&a.u.sliding_log, limit, window_ms, err,
				sizeof err))
		fail_msg("slidingWindowLog: %s", err);
	a.words = tk_sliding_log_words(&a.u.sliding_log);
	return a;
}

static struct tk_algo
mk_quota(double limit, enum tk_quota_cadence cadence, double offset_minutes,
	 double week_starts_on, double period_ms, double anchor, double buckets)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_QUOTA;
	if (tk_quota_init(&a.u.quota, limit, cadence, offset_minutes,
			  week_starts_on, period_ms, anchor, buckets, err,
			  sizeof err))
		fail_msg("quota: %s", err);
	a.words = (unsigned)tk_quota_words(&a.u.quota);
	return a;
}

static struct tk_algo
mk_token_budget(double budget, double window_ms)
{
	struct tk_algo a;
	char err[256];

	memset(&a, 0, sizeof a);
	a.kind = TKSHM_KIND_TOKEN_BUDGET;
	a.words = TK_TOKEN_BUDGET_WORDS;
	if (tk_token_budget_init(&a.u.token_budget, budget, window_ms, err,
				 sizeof err))
		fail_msg("tokenBudget: %s", err);
	return a;
}

/* ------------------------------------------------------------------------
 * Oracles
 * ---------------------------------------------------------------------- */

/* Iterates the algorithm's own check at `now` on a copy of the state. */
static int64_t
oracle_spendable(const struct tk_algo *a, bool present, const uint64_t *st,
		 double now, double cost)
{
	uint64_t cur[TK_ALGO_MAX_WORDS], out[TK_ALGO_MAX_WORDS];
	tkshm_decision d;
	int64_t n = 0;

	memset(cur, 0, sizeof cur);
	if (present)
		memcpy(cur, st, a->words * sizeof *st);
	while (n < ORACLE_MAX) {
		memcpy(out, cur, sizeof out);
		if (!tk_algo_check_w(a, present, cur, now, cost, out, &d))
			return n;
		n++;
		if (present && memcmp(out, cur, a->words * sizeof *out) == 0)
			return TK_FORECAST_SPENDABLE_MAX; /* a fixed point */
		memcpy(cur, out, sizeof cur);
		present = true;
	}
	fail_msg("oracle: more than %d admissions; pick a smaller policy",
		 ORACLE_MAX);
	return -1;
}

static int64_t
peek_remaining(const struct tk_algo *a, const uint64_t *st, int64_t t)
{
	tkshm_decision d;

	tk_algo_peek_w(a, true, st, (double)t, &d);
	return d.remaining;
}

static bool
idle_at(const struct tk_algo *a, const uint64_t *st, int64_t t)
{
	return tk_algo_is_idle_w(a, st, (double)t);
}

/* ThrottleKit's sliding-log formulas (docs/semantics.md, "Forecast"), from
 * the state words:
 * live = the stamps after max(now, newest) - windowMs. */
static void
log_model_times(const struct tk_algo *a, const uint64_t *st, double now,
		int64_t *next, int64_t *full)
{
	uint64_t n = st[0];
	double t = now, wm = a->u.sliding_log.window_ms, first = NAN;
	int64_t lo = (int64_t)ceil(now);

	if (n > 0 && tk_word_f64(st[n]) > t)
		t = tk_word_f64(st[n]);
	for (uint64_t i = 1; i <= n; i++) {
		if (tk_word_f64(st[i]) > t - wm) {
			first = tk_word_f64(st[i]);
			break;
		}
	}
	if (isnan(first)) {
		*next = *full = lo;
		return;
	}
	*next = (int64_t)ceil(first + wm);
	*full = (int64_t)ceil(tk_word_f64(st[n]) + wm);
	if (*next < lo)
		*next = lo;
	if (*full < lo)
		*full = lo;
}

/* ------------------------------------------------------------------------
 * One forecast, checked against every oracle.
 * ---------------------------------------------------------------------- */

struct fc_check {
	const char *what;
	bool times;	     /* check the time properties */
	uint64_t *rng;	     /* sample points; NULL: the edges only */
	unsigned checked;    /* forecasts checked */
	unsigned nontrivial; /* with spendable > 0 and times > ceil(now) */
	unsigned scanned;    /* whose times a scan of every ms confirmed */
};

/* The forecast on a guarded copy of the state: the copy and its guard
 * words must come back unchanged. */
static struct tk_forecast
forecast_guarded(const struct tk_algo *a, bool present, const uint64_t *st,
		 double now, double cost, bool null_if_absent)
{
	uint64_t buf[TK_ALGO_MAX_WORDS + GUARD_WORDS];
	uint64_t copy[TK_ALGO_MAX_WORDS + GUARD_WORDS];
	struct tk_forecast f;

	for (unsigned i = 0; i < TK_ALGO_MAX_WORDS + GUARD_WORDS; i++)
		buf[i] = GUARD ^ i;
	if (present)
		memcpy(buf, st, a->words * sizeof *st);
	memcpy(copy, buf, sizeof copy);
	memset(&f, 0x5A, sizeof f);
	tk_algo_forecast(a, present, (!present && null_if_absent) ? NULL : buf,
			 now, cost, &f);
	if (memcmp(buf, copy, sizeof buf) != 0)
		fail_msg("forecast wrote the state buffer");
	return f;
}

static void
check_forecast(struct fc_check *c, const struct tk_algo *a, bool present,
	       const uint64_t *st, double now, double cost)
{
	struct tk_forecast f = forecast_guarded(
		a, present, st, now, cost, c->rng && algo_below(c->rng, 2));
	int64_t want = oracle_spendable(a, present, st, now, cost);
	int64_t lo = (int64_t)ceil(now), r0;

	c->checked++;
	if (f.spendable_now != want)
		fail_msg("%s: kind %d now %.17g cost %.17g: spendable_now "
			 "%lld, iterating the check admits %lld",
			 c->what, (int)a->kind, now, cost,
			 (long long)f.spendable_now, (long long)want);
	if (!present) {
		if (f.next_replenish_at != lo || f.full_at != lo)
			fail_msg("%s: absent key: next %lld full %lld, wanted "
				 "ceil(now) = %lld",
				 c->what, (long long)f.next_replenish_at,
				 (long long)f.full_at, (long long)lo);
		return;
	}
	if (a->kind == TKSHM_KIND_SLIDING_LOG) {
		int64_t next, full;

		log_model_times(a, st, now, &next, &full);
		if (f.next_replenish_at != next || f.full_at != full)
			fail_msg("%s: log at %.17g: next %lld full %lld, "
				 "ThrottleKit's formulas give %lld %lld",
				 c->what, now, (long long)f.next_replenish_at,
				 (long long)f.full_at, (long long)next,
				 (long long)full);
	}
	if (f.spendable_now > 0 && f.full_at > lo)
		c->nontrivial++;
	if (!(lo <= f.next_replenish_at && f.next_replenish_at <= f.full_at))
		fail_msg("%s: ceil(now) %lld <= next %lld <= full %lld fails",
			 c->what, (long long)lo, (long long)f.next_replenish_at,
			 (long long)f.full_at);
	if (!c->times)
		return;
	/* full_at: idle there, and not a whole ms before (unless that is
	 * before now). */
	if (!idle_at(a, st, f.full_at))
		fail_msg("%s: kind %d now %.17g: not idle at full_at %lld",
			 c->what, (int)a->kind, now, (long long)f.full_at);
	if (f.full_at > lo && idle_at(a, st, f.full_at - 1))
		fail_msg("%s: kind %d now %.17g: already idle at full_at - 1 "
			 "= %lld",
			 c->what, (int)a->kind, now, (long long)f.full_at - 1);
	/* next_replenish_at: no more than now's remaining before it, more at
	 * it unless it is full_at. */
	{
		tkshm_decision d;

		tk_algo_peek_w(a, true, st, now, &d);
		r0 = d.remaining;
	}
	if (f.next_replenish_at > lo) {
		int64_t ts[6] = { lo, f.next_replenish_at - 1 };
		unsigned nt = 2;

		if (c->rng) {
			uint64_t span = (uint64_t)(f.next_replenish_at - lo);

			for (; nt < 6; nt++)
				ts[nt] =
					lo + (int64_t)(algo_rng(c->rng) % span);
		}
		for (unsigned i = 0; i < nt; i++)
			if (peek_remaining(a, st, ts[i]) > r0)
				fail_msg(
					"%s: kind %d now %.17g: remaining "
					"%lld at %lld, before "
					"next_replenish_at %lld, exceeds "
					"now's %lld",
					c->what, (int)a->kind, now,
					(long long)peek_remaining(a, st, ts[i]),
					(long long)ts[i],
					(long long)f.next_replenish_at,
					(long long)r0);
	}
	/* A short range: every whole ms, the definitions themselves. */
	if (f.full_at - lo <= 2000) {
		int64_t t, first_more = -1, first_idle = -1;

		for (t = lo; t <= f.full_at; t++) {
			if (first_more < 0 && peek_remaining(a, st, t) > r0)
				first_more = t;
			if (first_idle < 0 && idle_at(a, st, t))
				first_idle = t;
		}
		if (first_more < 0)
			first_more = f.full_at;
		if (f.next_replenish_at != first_more ||
		    f.full_at != first_idle)
			fail_msg("%s: kind %d now %.17g: next %lld full %lld, "
				 "a scan of every ms finds %lld %lld",
				 c->what, (int)a->kind, now,
				 (long long)f.next_replenish_at,
				 (long long)f.full_at, (long long)first_more,
				 (long long)first_idle);
		c->scanned++;
	}
	if (f.next_replenish_at < f.full_at &&
	    !(peek_remaining(a, st, f.next_replenish_at) > r0))
		fail_msg("%s: kind %d now %.17g: remaining %lld at "
			 "next_replenish_at %lld is not above now's %lld",
			 c->what, (int)a->kind, now,
			 (long long)peek_remaining(a, st, f.next_replenish_at),
			 (long long)f.next_replenish_at, (long long)r0);
}

/* ------------------------------------------------------------------------
 * Random admitted timelines
 * ---------------------------------------------------------------------- */

struct policy {
	const char *name;
	struct tk_algo a;
	double scale;	     /* a typical period, ms */
	const double *costs; /* costs drawn from */
	unsigned ncosts;
	double base;   /* the first now */
	bool whole_ms; /* nows are whole ms */
};

static const double costs_any[] = { 1, 1, 1, 2, 3, 0.5, 0.25, 0.1, 1.5, 7 };
static const double costs_whole[] = { 1, 1, 1, 2, 3, 5, 20 };

static double
draw_cost(uint64_t *rng, const struct policy *p)
{
	return p->costs[algo_below(rng, p->ncosts)];
}

static double
draw_step(uint64_t *rng, const struct policy *p)
{
	unsigned r = algo_below(rng, 20);
	double dt;

	if (r < 5)
		dt = 0; /* another check at the same now */
	else if (r < 14)
		dt = algo_unit(rng) * p->scale * 0.2;
	else if (r < 18)
		dt = algo_unit(rng) * p->scale * 1.5;
	else if (r < 19)
		dt = algo_unit(rng) * p->scale * 6;
	else
		dt = -algo_unit(rng) * p->scale * 0.2; /* a clock regression */
	if (p->whole_ms)
		dt = floor(dt);
	return dt;
}

static void
run_timelines(const struct policy *ps, unsigned np, unsigned lines,
	      unsigned steps, uint64_t seed)
{
	uint64_t rng = seed;

	for (unsigned i = 0; i < np; i++) {
		const struct policy *p = &ps[i];
		struct fc_check c = { p->name, true, &rng, 0, 0, 0 };

		for (unsigned l = 0; l < lines; l++) {
			uint64_t st[TK_ALGO_MAX_WORDS];
			bool present = false;
			double now =
				p->base +
				(p->whole_ms ?
					 floor(algo_unit(&rng) * p->scale) :
					 algo_unit(&rng) * p->scale);

			memset(st, 0, sizeof st);
			check_forecast(&c, &p->a, present, st, now,
				       draw_cost(&rng, p));
			for (unsigned s = 0; s < steps; s++) {
				uint64_t out[TK_ALGO_MAX_WORDS];
				tkshm_decision d;
				double fnow = now, dt;

				dt = draw_step(&rng, p);
				now = now + dt < 0 ? 0 : now + dt;
				memcpy(out, st, sizeof out);
				if (tk_algo_check_w(&p->a, present, st, now,
						    draw_cost(&rng, p), out,
						    &d)) {
					memcpy(st, out, sizeof st);
					present = true;
				}
				/* Forecast at now, or a little before or
				 * after it. */
				switch (algo_below(&rng, 4)) {
				case 0:
					fnow = now;
					break;
				case 1:
					fnow = now +
					       algo_unit(&rng) * p->scale * 0.5;
					break;
				case 2:
					fnow = now -
					       algo_unit(&rng) * p->scale * 0.1;
					break;
				default:
					fnow = now +
					       algo_unit(&rng) * p->scale * 3;
					break;
				}
				if (fnow < 0)
					fnow = 0;
				if (p->whole_ms)
					fnow = floor(fnow);
				check_forecast(&c, &p->a, present, st, fnow,
					       draw_cost(&rng, p));
			}
		}
		/* The timelines must reach interesting states. */
		if (c.nontrivial < c.checked / 20)
			fail_msg("%s: only %u of %u forecasts had spendable > "
				 "0 and a time after now",
				 p->name, c.nontrivial, c.checked);
		if (p->scale <= 1000 && c.scanned < c.checked / 4)
			fail_msg("%s: only %u of %u forecasts were scanned",
				 p->name, c.scanned, c.checked);
	}
}

#define POLICY(n, alg, scale, costs, base, whole)                           \
	{                                                                   \
		n, alg, scale, costs, sizeof costs / sizeof costs[0], base, \
			whole                                               \
	}

static void
test_random_gcra(void **state)
{
	struct policy ps[] = {
		POLICY("gcra 10/s", mk_gcra(10, 1000, 10), 1000, costs_any,
		       ALGO_EPOCH, false),
		POLICY("gcra 3/s (float artifact)", mk_gcra(3, 1000, 3), 1000,
		       costs_any, 1e6, false),
		POLICY("gcra burst 2.5", mk_gcra(5, 1000, 2.5), 1000, costs_any,
		       1000, false),
		POLICY("gcra 1000/min burst 50", mk_gcra(1000, 60000, 50), 3000,
		       costs_any, ALGO_EPOCH, true),
		POLICY("gcra 7/s at 2^50", mk_gcra(7, 1000, 7), 1000, costs_any,
		       0x1p50, false),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 60, 40, 1);
}

static void
test_random_token_bucket(void **state)
{
	struct policy ps[] = {
		POLICY("bucket 5 at 1/s", mk_token_bucket(5, 1), 5000,
		       costs_any, ALGO_EPOCH, false),
		POLICY("bucket 10 at 3.3/s", mk_token_bucket(10, 3.3), 3000,
		       costs_any, 1000, false),
		POLICY("bucket 5.5 at 2/s", mk_token_bucket(5.5, 2), 3000,
		       costs_any, ALGO_EPOCH, true),
		POLICY("bucket 100 at 1000/s", mk_token_bucket(100, 1000), 100,
		       costs_any, ALGO_EPOCH, false),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 60, 40, 2);
}

static void
test_random_fixed_window(void **state)
{
	struct policy ps[] = {
		POLICY("fixed 5/s", mk_fixed_window(5, 1000), 1000, costs_any,
		       ALGO_EPOCH, false),
		POLICY("fixed 10.5/700ms", mk_fixed_window(10.5, 700), 700,
		       costs_any, 1000, false),
		POLICY("fixed 100/min", mk_fixed_window(100, 60000), 60000,
		       costs_any, ALGO_EPOCH, true),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 60, 40, 3);
}

static void
test_random_sliding_window(void **state)
{
	struct policy ps[] = {
		POLICY("sliding 10/s x10", mk_sliding_window(10, 1000, 10),
		       1000, costs_any, ALGO_EPOCH, false),
		POLICY("sliding 5/s x1", mk_sliding_window(5, 1000, 1), 1000,
		       costs_any, 1000, false),
		POLICY("sliding 7.5/900ms x4", mk_sliding_window(7.5, 900, 4),
		       900, costs_any, ALGO_EPOCH, false),
		POLICY("sliding 50/min x64", mk_sliding_window(50, 60000, 64),
		       60000, costs_any, ALGO_EPOCH, true),
		POLICY("sliding 20/5ms x8 (sub-ms ticks)",
		       mk_sliding_window(20, 5, 8), 5, costs_any, ALGO_EPOCH,
		       false),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 50, 40, 4);
}

static void
test_random_sliding_log(void **state)
{
	/* Whole-ms stamps and windows: ThrottleKit's formulas are then exact,
	 * so the time properties are checked as well as the formulas. */
	struct policy ps[] = {
		POLICY("log 5/s", mk_sliding_log(5, 1000), 1000, costs_any,
		       ALGO_EPOCH, true),
		POLICY("log 128/min", mk_sliding_log(128, 60000), 60000,
		       costs_whole, ALGO_EPOCH, true),
		POLICY("log 2.5/s", mk_sliding_log(2.5, 1000), 1000, costs_any,
		       1000, true),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 60, 40, 5);
}

/* Fractional stamps and windows: spendable_now and ThrottleKit's formulas
 * only (their time properties need stamp + windowMs exact). */
static void
test_sliding_log_fractional(void **state)
{
	struct tk_algo a = mk_sliding_log(10, 333.3);
	uint64_t rng = 6;
	struct fc_check c = { "log 10/333.3ms", false, &rng, 0, 0, 0 };

	(void)state;
	for (unsigned l = 0; l < 100; l++) {
		uint64_t st[TK_ALGO_MAX_WORDS];
		bool present = false;
		double now = ALGO_EPOCH + algo_unit(&rng) * 1000;

		memset(st, 0, sizeof st);
		for (unsigned s = 0; s < 30; s++) {
			uint64_t out[TK_ALGO_MAX_WORDS];
			tkshm_decision d;

			now += algo_below(&rng, 3) ? algo_unit(&rng) * 80 : 0;
			memcpy(out, st, sizeof out);
			if (tk_algo_check_w(&a, present, st, now,
					    costs_any[algo_below(&rng, 10)],
					    out, &d)) {
				memcpy(st, out, sizeof st);
				present = true;
			}
			check_forecast(&c, &a, present, st,
				       now + algo_unit(&rng) * 200,
				       costs_any[algo_below(&rng, 10)]);
		}
	}
	assert_true(c.nontrivial > c.checked / 10);
}

static void
test_random_quota(void **state)
{
	const double day = 86400000.0;
	struct policy ps[] = {
		POLICY("quota month",
		       mk_quota(40, TK_QUOTA_CALENDAR_MONTH, 0, 1, NAN, 0, 10),
		       10 * day, costs_any, ALGO_EPOCH, false),
		POLICY("quota month +05:30",
		       mk_quota(40, TK_QUOTA_CALENDAR_MONTH, 330, 1, NAN, 0,
				10),
		       10 * day, costs_any, ALGO_EPOCH, true),
		POLICY("quota week (Sunday) -08:00",
		       mk_quota(25.5, TK_QUOTA_CALENDAR_WEEK, -480, 0, NAN, 0,
				10),
		       3 * day, costs_any, ALGO_EPOCH, false),
		POLICY("quota day +14:00",
		       mk_quota(30, TK_QUOTA_CALENDAR_DAY, 840, 1, NAN, 0, 10),
		       day / 2, costs_any, ALGO_EPOCH, false),
		POLICY("quota fixed 90 min from 17",
		       mk_quota(20, TK_QUOTA_FIXED, 0, 1, 5400000, 17, 10),
		       3000000, costs_any, ALGO_EPOCH, false),
		POLICY("quota rolling 1 h x6",
		       mk_quota(30, TK_QUOTA_ROLLING, 0, 1, 3600000, 0, 6),
		       3600000, costs_any, ALGO_EPOCH, false),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 40, 40, 7);
}

static void
test_random_token_budget(void **state)
{
	struct policy ps[] = {
		POLICY("budget 100/s", mk_token_budget(100, 1000), 1000,
		       costs_whole, ALGO_EPOCH, false),
		POLICY("budget 10.9/min", mk_token_budget(10.9, 60000), 60000,
		       costs_whole, 1000, true),
		POLICY("budget 3/500ms", mk_token_budget(3, 500), 500,
		       costs_whole, ALGO_EPOCH, false),
	};

	(void)state;
	run_timelines(ps, sizeof ps / sizeof ps[0], 60, 40, 8);
}

/* ------------------------------------------------------------------------
 * ThrottleKit's examples
 * ---------------------------------------------------------------------- */

static struct tk_forecast
fc(const struct tk_algo *a, bool present, const uint64_t *st, double now,
   double cost)
{
	return forecast_guarded(a, present, st, now, cost, false);
}

/* Admits `cost` at `now` or fails the test. */
static void
admit(const struct tk_algo *a, bool *present, uint64_t *st, double now,
      double cost)
{
	uint64_t out[TK_ALGO_MAX_WORDS];
	tkshm_decision d;

	memcpy(out, st, sizeof out);
	if (!tk_algo_check_w(a, *present, st, now, cost, out, &d))
		fail_msg("check of %g at %.17g denied", cost, now);
	memcpy(st, out, sizeof out);
	*present = true;
}

static void
test_throttlekit_token_bucket_example(void **state)
{
	struct tk_algo a = mk_token_bucket(5, 1);
	const double nows[] = { 1000000, ALGO_EPOCH };

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		double now = nows[i];
		uint64_t st[TK_ALGO_MAX_WORDS];
		bool present = false;
		struct tk_forecast f;

		memset(st, 0, sizeof st);
		f = fc(&a, false, st, now, 1);
		assert_int_equal(f.spendable_now, 5);
		assert_int_equal(f.next_replenish_at, (int64_t)now);
		assert_int_equal(f.full_at, (int64_t)now);
		for (int k = 0; k < 5; k++)
			admit(&a, &present, st, now, 1);
		/* Capacity 5 at 1/s, fully drained. */
		f = fc(&a, true, st, now, 1);
		assert_int_equal(f.spendable_now, 0);
		assert_int_equal(f.next_replenish_at, (int64_t)now + 1000);
		assert_int_equal(f.full_at, (int64_t)now + 5000);
		/* 2.5 s later: 2.5 tokens, two of cost 1, one of cost 2. */
		f = fc(&a, true, st, now + 2500, 1);
		assert_int_equal(f.spendable_now, 2);
		assert_int_equal(f.next_replenish_at, (int64_t)now + 3000);
		assert_int_equal(f.full_at, (int64_t)now + 5000);
		assert_int_equal(fc(&a, true, st, now + 2500, 2).spendable_now,
				 1);
		assert_int_equal(
			fc(&a, true, st, now + 2500, 0.5).spendable_now, 5);
	}
}

static void
test_throttlekit_sliding_log_example(void **state)
{
	struct tk_algo a = mk_sliding_log(5, 1000);
	uint64_t st[TK_ALGO_MAX_WORDS];
	bool present = false;
	struct tk_forecast f;

	(void)state;
	memset(st, 0, sizeof st);
	admit(&a, &present, st, 1000, 1);
	admit(&a, &present, st, 1200, 2);
	/* At 1500: live = {1000, 1200, 1200}, count 3.
	 * spendableNow = floor(max(0, limit - count)/cost). */
	f = fc(&a, true, st, 1500, 1);
	assert_int_equal(f.spendable_now, 2);
	assert_int_equal(f.next_replenish_at, 2000); /* ceil(live[0] + 1000) */
	assert_int_equal(f.full_at, 2200);	     /* ceil(last + 1000) */
	assert_int_equal(fc(&a, true, st, 1500, 2).spendable_now, 1);
	assert_int_equal(fc(&a, true, st, 1500, 3).spendable_now, 0);
	/* A fractional cost is charged ceil(cost) units by the check (the
	 * forecast follows the check, not the raw-cost division that would
	 * give floor(2/1.5) = 1 here and floor(2/0.5) = 4 below). */
	assert_int_equal(fc(&a, true, st, 1500, 1.5).spendable_now, 1);
	assert_int_equal(fc(&a, true, st, 1500, 0.5).spendable_now, 2);
	/* At 2000 the stamp 1000 has left (stamp <= now - windowMs). */
	f = fc(&a, true, st, 2000, 1);
	assert_int_equal(f.spendable_now, 3);
	assert_int_equal(f.next_replenish_at, 2200);
	assert_int_equal(f.full_at, 2200);
	/* Nothing live: both are now. */
	f = fc(&a, true, st, 2300, 1);
	assert_int_equal(f.spendable_now, 5);
	assert_int_equal(f.next_replenish_at, 2300);
	assert_int_equal(f.full_at, 2300);
	/* A check before the newest stamp is decided at the newest stamp
	 * (tkshm's regression rule): the forecast sees the same log. */
	f = fc(&a, true, st, 900, 1);
	assert_int_equal(f.spendable_now, 2);
	assert_int_equal(f.next_replenish_at, 2000);
	assert_int_equal(f.full_at, 2200);
}

/* Section 2.9: GCRA {3, 1000 ms, burst 3}, cost 1, cold key: 3 cells near
 * now = 1000, 2 with the timeline shifted by +1e6 ms. */
static void
test_gcra_float_artifact(void **state)
{
	struct tk_algo a = mk_gcra(3, 1000, 3);
	uint64_t st[TK_ALGO_MAX_WORDS];
	struct tk_forecast f;

	(void)state;
	memset(st, 0, sizeof st);
	assert_int_equal(fc(&a, false, st, 1000, 1).spendable_now, 3);
	assert_int_equal(fc(&a, false, st, 1001000, 1).spendable_now, 2);
	assert_int_equal(oracle_spendable(&a, false, st, 1001000, 1), 2);
	/* After one cell at 1001000: one more (not two). */
	{
		bool present = false;

		admit(&a, &present, st, 1001000, 1);
		f = fc(&a, true, st, 1001000, 1);
		assert_int_equal(f.spendable_now, 1);
		/* TAT = 1001000 + 333.33..: idle from 1001334. */
		assert_int_equal(f.full_at, 1001334);
	}
}

/* ------------------------------------------------------------------------
 * The walk at the rounding edges
 * ---------------------------------------------------------------------- */

/* A fixed-window state {start of now's window, count}. */
static void
fw_state(const struct tk_algo *a, double now, double count, uint64_t *st)
{
	double wm = a->u.fixed_window.window_ms;

	memset(st, 0, TK_ALGO_MAX_WORDS * sizeof *st);
	st[0] = tk_f64_word(floor(now / wm) * wm);
	st[1] = tk_f64_word(count);
	assert_true(tk_algo_state_valid_w(a, st));
}

/* Counts near 2^52 and 2^53, where the grid is 0.5, 1 or 2 and a cost of
 * 1.5, 2.5 or 0.5 rounds on ties: strides that settle after one step,
 * strides that change at the binade edge, and fixed points. */
static void
test_walk_binade_edges(void **state)
{
	static const double costs[] = { 1,    1.5, 2.5, 3,    0.5, 0.75,
					0.25, 3.5, 5.5, 1.25, 2,   6.5 };
	static const double edges[] = { 0x1p52, 0x1p53 };
	struct fc_check c = { "binade edges", true, NULL, 0, 0, 0 };
	unsigned capped = 0, finite = 0;

	(void)state;
	for (unsigned e = 0; e < 2; e++) {
		double edge = edges[e], g = edge / 0x1p53; /* grid below */
		struct tk_algo a = mk_fixed_window(edge + 1000 * g * 2, 1000);

		for (int off = -130; off <= 2; off += 11) {
			uint64_t st[TK_ALGO_MAX_WORDS];
			double count = edge + off * g;

			fw_state(&a, 5000, count, st);
			for (unsigned i = 0; i < sizeof costs / sizeof *costs;
			     i++) {
				struct tk_forecast f =
					fc(&a, true, st, 5000, costs[i] * g);

				check_forecast(&c, &a, true, st, 5000,
					       costs[i] * g);
				if (f.spendable_now ==
				    TK_FORECAST_SPENDABLE_MAX)
					capped++;
				else if (f.spendable_now > 0)
					finite++;
			}
		}
	}
	/* Both kinds of answers were exercised. */
	assert_true(capped > 10);
	assert_true(finite > 50);
}

/* Random counters with random full-mantissa costs: every step rounds. */
static void
test_walk_random_rounding(void **state)
{
	uint64_t rng = 9;
	struct fc_check c = { "random rounding", false, &rng, 0, 0, 0 };

	(void)state;
	for (unsigned i = 0; i < 1500; i++) {
		int e = (int)algo_below(&rng, 70) - 10; /* 2^-10 .. 2^59 */
		double x = ldexp(1 + algo_unit(&rng), e);
		unsigned n = 1 + algo_below(&rng, 3000);
		double cost;
		uint64_t st[TK_ALGO_MAX_WORDS];

		switch (algo_below(&rng, 3)) {
		case 0: { /* fixed window: x counted, n more of x/k */
			double k = ldexp(1 + algo_unit(&rng),
					 (int)algo_below(&rng, 12));
			struct tk_algo a;

			cost = x / k;
			if (!(cost <= TKSHM_COST_MAX))
				continue;
			a = mk_fixed_window(x + cost * n, 1000);
			fw_state(&a, 7000, x, st);
			check_forecast(&c, &a, true, st, 7000, cost);
			break;
		}
		case 1: { /* token bucket: x tokens, n of cost x/n */
			struct tk_algo a;

			cost = x / n * (1 + algo_unit(&rng) / 8);
			if (!(cost <= TKSHM_COST_MAX) || !(cost > 0))
				continue;
			a = mk_token_bucket(x * 2, 1e-3);
			memset(st, 0, sizeof st);
			st[0] = tk_f64_word(x);
			st[1] = tk_f64_word(7000);
			check_forecast(&c, &a, true, st, 7000, cost);
			break;
		}
		default: { /* gcra at a large now: TAT + inc rounds */
			double now = ldexp(1 + algo_unit(&rng),
					   30 + (int)algo_below(&rng, 28));
			double T = ldexp(1 + algo_unit(&rng),
					 (int)algo_below(&rng, 12));
			double burst = 1 + algo_below(&rng, 60);
			struct tk_algo a = mk_gcra(1000, 1000 * T, burst);

			cost = 0.05 + algo_unit(&rng) * 3;
			memset(st, 0, sizeof st);
			st[0] = tk_f64_word(now + algo_unit(&rng) * T * burst);
			check_forecast(&c, &a, true, st, now, cost);
			check_forecast(&c, &a, false, st, now, cost);
			break;
		}
		}
	}
	assert_true(c.nontrivial > c.checked / 4);
}

/* Runs that never deny, and one too long to iterate. */
static void
test_spendable_cap(void **state)
{
	uint64_t st[TK_ALGO_MAX_WORDS];
	struct tk_algo a;
	bool present = false;

	(void)state;
	/* count 2^53 + cost 1 rounds back to 2^53: admitted for ever. */
	a = mk_fixed_window(0x1p60, 1000);
	memset(st, 0, sizeof st);
	admit(&a, &present, st, 5000, 0x1p53);
	assert_int_equal(fc(&a, true, st, 5000, 1).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX);
	assert_int_equal(oracle_spendable(&a, true, st, 5000, 1),
			 TK_FORECAST_SPENDABLE_MAX);
	/* Cost 2 is exact: (2^60 - 2^53) / 2 admissions, saturated. */
	assert_int_equal(fc(&a, true, st, 5000, 2).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX);
	/* Exactly 2^31 - 1 and 2^31 admissions (exact arithmetic). */
	a = mk_fixed_window(0x1p31 - 1, 1000);
	assert_int_equal(fc(&a, false, st, 5000, 1).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX - 1);
	a = mk_fixed_window(0x1p31, 1000);
	assert_int_equal(fc(&a, false, st, 5000, 1).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX);
	a = mk_fixed_window(0x1p40 + 7, 1000);
	assert_int_equal(fc(&a, false, st, 5000, 512).spendable_now,
			 2147483648 + 0 /* floor((2^40 + 7)/512) = 2^31 */);
	a = mk_fixed_window(0x1p40 - 1, 1000);
	assert_int_equal(fc(&a, false, st, 5000, 512).spendable_now,
			 2147483647);
	/* A token bucket of 1e20: tokens - 1 == tokens. */
	a = mk_token_bucket(1e20, 1);
	assert_int_equal(fc(&a, false, st, 5000, 1).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX);
	assert_int_equal(oracle_spendable(&a, false, st, 5000, 1),
			 TK_FORECAST_SPENDABLE_MAX);
	/* GCRA: an increment below half an ulp of the TAT. */
	a = mk_gcra(1, 1, 5);
	assert_int_equal(fc(&a, false, st, 0x1p40, 1e-9).spendable_now,
			 TK_FORECAST_SPENDABLE_MAX);
	assert_int_equal(oracle_spendable(&a, false, st, 0x1p40, 1e-9),
			 TK_FORECAST_SPENDABLE_MAX);
	/* ... and a cost above the burst is never admitted. */
	assert_int_equal(fc(&a, false, st, 0x1p40, 5.5).spendable_now, 0);
	/* A token budget whose window is below half an ulp of now: its
	 * window start rounds to a window already over, but a roll only
	 * moves forward (token_budget.h), so the budget still ends: 10. */
	a = mk_token_budget(10, 0.25);
	assert_int_equal(fc(&a, false, st, 0x1p61, 1).spendable_now, 10);
	assert_int_equal(oracle_spendable(&a, false, st, 0x1p61, 1), 10);
}

/* Times for hand-computed states of the kinds whose formulas are derived
 * here (not given by ThrottleKit). */
static void
test_times_by_hand(void **state)
{
	uint64_t st[TK_ALGO_MAX_WORDS];
	struct tk_algo a;
	bool present = false;
	struct tk_forecast f;

	(void)state;
	memset(st, 0, sizeof st);
	/* GCRA 10/s burst 10 (T = 100), 10 cells at 5000: TAT = 6000;
	 * one cell drains every 100 ms. */
	a = mk_gcra(10, 1000, 10);
	for (int k = 0; k < 10; k++)
		admit(&a, &present, st, 5000, 1);
	f = fc(&a, true, st, 5000, 1);
	assert_int_equal(f.spendable_now, 0);
	assert_int_equal(f.next_replenish_at, 5100);
	assert_int_equal(f.full_at, 6000);
	f = fc(&a, true, st, 5450, 2);
	assert_int_equal(f.spendable_now, 2); /* 4.5 cells free: 2 of 2 */
	assert_int_equal(f.next_replenish_at, 5500);
	/* Fixed window 5 per 1000 ms: the count expires whole at 6000. */
	a = mk_fixed_window(5, 1000);
	present = false;
	memset(st, 0, sizeof st);
	admit(&a, &present, st, 5300, 2);
	f = fc(&a, true, st, 5400, 1);
	assert_int_equal(f.spendable_now, 3);
	assert_int_equal(f.next_replenish_at, 6000);
	assert_int_equal(f.full_at, 6000);
	/* Sliding window 10 per 1000 ms in 10 ticks of 100 ms: 4 units at
	 * 5050 (tick 50), 3 at 5420 (tick 54).  At 5450: estimate 7, so
	 * 3 more.  Tick 50 leaves the window proper at 6000 (tick 60, where
	 * it is the oldest bucket, weight 1 - elapsed/100) and is gone at
	 * 6100; the estimate first drops below 7 - 1 = 6 at 6025 (weight
	 * 0.75: 3 + 4*0.75 = 6, remaining 4). */
	a = mk_sliding_window(10, 1000, 10);
	present = false;
	memset(st, 0, sizeof st);
	admit(&a, &present, st, 5050, 4);
	admit(&a, &present, st, 5420, 3);
	f = fc(&a, true, st, 5450, 1);
	assert_int_equal(f.spendable_now, 3);
	assert_int_equal(f.next_replenish_at, 6025);
	assert_int_equal(f.full_at, 6500); /* tick 65 = 54 + 10 + 1 */
	/* Token budget 100 per 1000 ms: the window ends at 6000. */
	a = mk_token_budget(100, 1000);
	present = false;
	memset(st, 0, sizeof st);
	admit(&a, &present, st, 5100, 80);
	f = fc(&a, true, st, 5200, 7);
	assert_int_equal(f.spendable_now, 3); /* 87, 94, 101 */
	assert_int_equal(f.next_replenish_at, 6000);
	assert_int_equal(f.full_at, 6000);
	/* Quota, calendar month, UTC: 2024-02-10 -> resets 2024-03-01. */
	a = mk_quota(10, TK_QUOTA_CALENDAR_MONTH, 0, 1, NAN, 0, 10);
	present = false;
	memset(st, 0, sizeof st);
	admit(&a, &present, st, algo_utc(2024, 2, 10, 12, 0), 4);
	f = fc(&a, true, st, algo_utc(2024, 2, 20, 0, 0), 2);
	assert_int_equal(f.spendable_now, 3);
	assert_int_equal(f.full_at, (int64_t)algo_utc(2024, 3, 1, 0, 0));
	assert_int_equal(f.next_replenish_at, f.full_at);
}

/* Sets the count of `tick` in a sliding-window state (sliding_window.h),
 * called in ascending tick order: `tick` becomes the newest. */
static void
sw_entry(const struct tk_algo *a, uint64_t *st, int64_t tick, double count)
{
	unsigned p = (unsigned)(tick % a->u.sliding_window.slots);

	st[0] = (uint64_t)(tick + 1);
	st[1 + p] = tk_f64_word(count);
}

/*
 * A tick boundary can make a peek's remaining go DOWN: the check sums the
 * buckets in ascending tick order, and the order changes when a bucket
 * becomes the oldest.  Window 300 ms in S = 3 ticks of 100 ms, limit 5;
 * ticks 57..60 hold 4e-15, 0.1, 0.2, 2.7.  In tick 60, full =
 * ((0.1 + 0.2) + 2.7) = 3 exactly and the oldest bucket adds 4e-15 *
 * weight: remaining floor(5 - estimate) is 1 until that term drops below
 * half an ulp of 3 (at 6095), then 2.  In tick 61, estimate = (0.2 + 2.7)
 * + 0.1 * weight = 3.0000000000000004 at 6100 (remaining 1 again), below
 * 3 from 6101.  next_replenish_at is 6095, not 6101.
 */
static void
test_sliding_window_tick_rounding(void **state)
{
	struct tk_algo a = mk_sliding_window(5, 300, 3);
	struct fc_check c = { "tick rounding", true, NULL, 0, 0, 0 };
	uint64_t st[TK_ALGO_MAX_WORDS];
	struct tk_forecast f;

	(void)state;
	memset(st, 0, sizeof st);
	sw_entry(&a, st, 57, 4e-15);
	sw_entry(&a, st, 58, 0.1);
	sw_entry(&a, st, 59, 0.2);
	sw_entry(&a, st, 60, 2.7);
	assert_true(tk_algo_state_valid_w(&a, st));
	/* The premise: remaining 1, 2 at 6095..6099, 1 at 6100, 2 after. */
	assert_int_equal(peek_remaining(&a, st, 6000), 1);
	assert_int_equal(peek_remaining(&a, st, 6094), 1);
	assert_int_equal(peek_remaining(&a, st, 6095), 2);
	assert_int_equal(peek_remaining(&a, st, 6099), 2);
	assert_int_equal(peek_remaining(&a, st, 6100), 1);
	assert_int_equal(peek_remaining(&a, st, 6101), 2);
	for (double now = 6000; now < 6095; now += 7) {
		f = fc(&a, true, st, now, 1);
		assert_int_equal(f.next_replenish_at, 6095);
		assert_int_equal(f.full_at, 6400);
		check_forecast(&c, &a, true, st, now, 1);
	}
	assert_int_equal(c.scanned, c.checked);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_throttlekit_token_bucket_example),
		cmocka_unit_test(test_throttlekit_sliding_log_example),
		cmocka_unit_test(test_gcra_float_artifact),
		cmocka_unit_test(test_times_by_hand),
		cmocka_unit_test(test_spendable_cap),
		cmocka_unit_test(test_walk_binade_edges),
		cmocka_unit_test(test_walk_random_rounding),
		cmocka_unit_test(test_sliding_window_tick_rounding),
		cmocka_unit_test(test_random_gcra),
		cmocka_unit_test(test_random_token_bucket),
		cmocka_unit_test(test_random_fixed_window),
		cmocka_unit_test(test_random_sliding_window),
		cmocka_unit_test(test_random_sliding_log),
		cmocka_unit_test(test_sliding_log_fractional),
		cmocka_unit_test(test_random_quota),
		cmocka_unit_test(test_random_token_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
