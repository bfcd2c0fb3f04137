/*
 * test_algo_quota.c - the pure quota transition (src/algorithms/quota.h)
 * against ThrottleKit.
 *
 * The golden vectors do not cover quota.  The oracle is a model written
 * below from docs/semantics.md, "Quota": the
 * fixed-window logic over the period [start, reset), with the periods found
 * by the C library's calendar (algo_testing.h), not by Hinnant's formulas.
 * The model has one switch, regression_rule: off it is ThrottleKit exactly,
 * on it adds tkshm's documented difference (a request whose period starts
 * before the stored one is decided within the stored period).
 *
 * The rolling cadence is ThrottleKit's slidingWindow under another name: it
 * replays the slidingWindow golden suite, and must agree with
 * sliding_window.h field for field and word for word.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"
#include "algorithms/quota.h"

/* A quota's parameters as ThrottleKit takes them. */
struct params {
	double limit;
	int cadence; /* ALGO_MONTH .. ALGO_FIXED */
	double offset_minutes;
	int week_starts_on;
	double period_ms, anchor;
};

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's quota (calendar and fixed cadences), one key.
 * ---------------------------------------------------------------------- */

struct model {
	struct params p;
	bool regression_rule;
	bool present;
	double start, count;
};

static struct model
model_new(struct params p, bool regression_rule)
{
	struct model m;

	memset(&m, 0, sizeof m);
	m.p = p;
	m.regression_rule = regression_rule;
	return m;
}

static void
model_period(const struct model *m, double now, double *start, double *reset)
{
	algo_model_period(m->p.cadence, now, m->p.offset_minutes,
			  m->p.week_starts_on, m->p.period_ms, m->p.anchor,
			  start, reset);
}

static double
model_count(const struct model *m, double now, double *start, double *reset)
{
	model_period(m, now, start, reset);
	if (m->present && m->start == *start)
		return m->count;
	if (m->present && m->regression_rule && *start < m->start) {
		double s2;

		if (m->p.cadence == ALGO_FIXED)
			*reset = m->start + m->p.period_ms;
		else
			model_period(m, m->start, &s2, reset);
		*start = m->start;
		return m->count;
	}
	return 0;
}

static double
clamp0(double x)
{
	return x < 0 ? 0 : x;
}

static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	tkshm_decision d;
	double start, reset;
	double count = model_count(m, now, &start, &reset);

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->p.limit);
	d.reset_at = algo_field(ceil(reset));
	if (count + cost <= m->p.limit) {
		m->present = true;
		m->start = start;
		m->count = count + cost;
		d.allowed = true;
		d.remaining = algo_field(clamp0(floor(m->p.limit - m->count)));
		return d;
	}
	d.remaining = algo_field(clamp0(floor(m->p.limit - count)));
	d.retry_after_ms = algo_field(ceil(reset - now));
	return d;
}

static tkshm_decision
model_peek(const struct model *m, double now)
{
	tkshm_decision d;
	double start, reset;
	double count = model_count(m, now, &start, &reset);

	memset(&d, 0, sizeof d);
	d.limit = algo_field(m->p.limit);
	d.allowed = count + 1 <= m->p.limit;
	d.remaining = algo_field(clamp0(floor(m->p.limit - count)));
	d.reset_at = algo_field(ceil(reset));
	d.retry_after_ms = d.allowed ? 0 : algo_field(ceil(reset - now));
	return d;
}

/* ------------------------------------------------------------------------
 * Helpers around the code under test
 * ---------------------------------------------------------------------- */

static struct tk_quota
quota(struct params p)
{
	struct tk_quota q;
	char err[200] = "";

	if (tk_quota_init(&q, p.limit, (enum tk_quota_cadence)p.cadence,
			  p.offset_minutes, p.week_starts_on, p.period_ms,
			  p.anchor, TK_QUOTA_BUCKETS_DEFAULT, err,
			  sizeof err) != TKSHM_OK)
		fail_msg("tk_quota_init: %s", err);
	assert_int_equal(tk_quota_words(&q), TK_QUOTA_PERIOD_WORDS);
	return q;
}

struct key {
	bool present;
	uint64_t st[TK_QUOTA_PERIOD_WORDS];
};

ALGO_DEFINE_IMPL(tk_quota, struct tk_quota)

static tkshm_decision
check(const struct tk_quota *q, struct key *k, double now, double cost)
{
	struct algo_impl im = tk_quota_impl(q, "check", TK_QUOTA_PERIOD_WORDS);

	return algo_key_check(&im, &k->present, k->st, now, cost);
}

static tkshm_decision
peek(const struct tk_quota *q, const struct key *k, double now)
{
	struct algo_impl im = tk_quota_impl(q, "peek", TK_QUOTA_PERIOD_WORDS);

	return algo_key_peek(&im, k->present, k->st, now);
}

#define P_MONTH(limit, off)                     \
	{                                       \
		limit, ALGO_MONTH, off, 1, 0, 0 \
	}
#define P_WEEK(limit, off, wso)                  \
	{                                        \
		limit, ALGO_WEEK, off, wso, 0, 0 \
	}
#define P_DAY(limit, off)                     \
	{                                     \
		limit, ALGO_DAY, off, 1, 0, 0 \
	}
#define P_FIXED(limit, period, anchor)                  \
	{                                               \
		limit, ALGO_FIXED, 0, 1, period, anchor \
	}

/* ------------------------------------------------------------------------
 * Boundaries
 * ---------------------------------------------------------------------- */

/*
 * For each case: `limit` 3 spent just before the boundary (the 4th denied,
 * retryAfterMs 1, resetAt the boundary), then a fresh period at the
 * boundary (remaining 2, resetAt the next boundary).
 */
static void
test_boundaries(void **state)
{
	const struct {
		struct params p;
		double boundary, next;
	} cases[] = {
		/* Leap February (2024) and plain ones (2023, 2100). */
		{ P_MONTH(3, 0), algo_utc(2024, 3, 1, 0, 0),
		  algo_utc(2024, 4, 1, 0, 0) },
		{ P_MONTH(3, 0), algo_utc(2024, 2, 1, 0, 0),
		  algo_utc(2024, 3, 1, 0, 0) },
		{ P_MONTH(3, 0), algo_utc(2023, 3, 1, 0, 0),
		  algo_utc(2023, 4, 1, 0, 0) },
		{ P_MONTH(3, 0), algo_utc(2100, 3, 1, 0, 0),
		  algo_utc(2100, 4, 1, 0, 0) },
		{ P_MONTH(3, 0), algo_utc(2024, 1, 1, 0, 0),
		  algo_utc(2024, 2, 1, 0, 0) },
		/* Local midnights at +5:30, -14:00, +14:00. */
		{ P_MONTH(3, 330), algo_utc(2024, 2, 29, 18, 30),
		  algo_utc(2024, 3, 31, 18, 30) },
		{ P_MONTH(3, -840), algo_utc(2024, 3, 1, 14, 0),
		  algo_utc(2024, 4, 1, 14, 0) },
		{ P_MONTH(3, 840), algo_utc(2024, 2, 29, 10, 0),
		  algo_utc(2024, 3, 31, 10, 0) },
		/* Weeks: Monday (default), Sunday, Saturday; at offsets. */
		{ P_WEEK(3, 0, 1), algo_utc(2024, 1, 1, 0, 0),
		  algo_utc(2024, 1, 8, 0, 0) },
		{ P_WEEK(3, 0, 0), algo_utc(2024, 3, 3, 0, 0),
		  algo_utc(2024, 3, 10, 0, 0) },
		{ P_WEEK(3, 0, 6), algo_utc(2024, 3, 2, 0, 0),
		  algo_utc(2024, 3, 9, 0, 0) },
		{ P_WEEK(3, 330, 1), algo_utc(2023, 12, 31, 18, 30),
		  algo_utc(2024, 1, 7, 18, 30) },
		{ P_WEEK(3, -840, 4), algo_utc(2024, 2, 29, 14, 0),
		  algo_utc(2024, 3, 7, 14, 0) },
		{ P_WEEK(3, 840, 2), algo_utc(2024, 2, 26, 10, 0),
		  algo_utc(2024, 3, 4, 10, 0) },
		/* Days. */
		{ P_DAY(3, 0), algo_utc(2024, 2, 29, 0, 0),
		  algo_utc(2024, 3, 1, 0, 0) },
		{ P_DAY(3, 330), algo_utc(2024, 2, 28, 18, 30),
		  algo_utc(2024, 2, 29, 18, 30) },
		{ P_DAY(3, -840), algo_utc(2024, 3, 1, 14, 0),
		  algo_utc(2024, 3, 2, 14, 0) },
		{ P_DAY(3, 840), algo_utc(2024, 3, 1, 10, 0),
		  algo_utc(2024, 3, 2, 10, 0) },
		/* Fixed periods from an anchor. */
		{ P_FIXED(3, 1000, 250), 1.7e12 + 250, 1.7e12 + 1250 },
		{ P_FIXED(3, 60000, -7), 28333334.0 * 60000 - 7,
		  28333335.0 * 60000 - 7 },
		{ P_FIXED(3, 86400000, 0), 19676.0 * 86400000,
		  19677.0 * 86400000 },
		{ P_FIXED(3, 0.5, 3), 1.7e12 + 0.5, 1.7e12 + 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tk_quota q = quota(cases[i].p);
		struct key k = { 0 };
		double b = cases[i].boundary, before = b - 1;
		tkshm_decision d;

		for (int n = 0; n < 3; n++) {
			d = check(&q, &k, before, 1);
			assert_true(d.allowed);
			assert_int_equal(d.remaining, 2 - n);
			assert_int_equal(d.reset_at, (int64_t)b);
			assert_int_equal(d.limit, 3);
		}
		d = check(&q, &k, before, 1);
		if (d.allowed || d.retry_after_ms != 1 ||
		    d.reset_at != (int64_t)b || d.remaining != 0)
			fail_msg("case %zu: at the boundary - 1 ms: allowed %d "
				 "retry %lld reset %lld remaining %lld",
				 i, d.allowed, (long long)d.retry_after_ms,
				 (long long)d.reset_at, (long long)d.remaining);
		d = peek(&q, &k, b);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, 3);
		d = check(&q, &k, b, 1);
		if (!d.allowed || d.remaining != 2 ||
		    d.reset_at != (int64_t)cases[i].next)
			fail_msg("case %zu: at the boundary: allowed %d "
				 "remaining %lld reset %lld, want reset %.17g",
				 i, d.allowed, (long long)d.remaining,
				 (long long)d.reset_at, cases[i].next);
		algo_assert_word("boundary", k.st, 0, b);
		/* 2 x limit across the boundary, by design. */
		assert_true(check(&q, &k, b, 2).allowed);
		assert_false(
			check(&q, &k, b + (cases[i].next - b) / 2, 1).allowed);
	}
}

/* The month quota of February 2024 lasts 29 days, 2023's 28. */
static void
test_leap_february_length(void **state)
{
	struct params p = P_MONTH(1, 0);
	struct tk_quota q = quota(p);
	struct key k = { 0 };
	tkshm_decision d;

	(void)state;
	d = check(&q, &k, algo_utc(2024, 2, 10, 0, 0), 1);
	assert_true(d.allowed);
	assert_int_equal(d.reset_at, (int64_t)(algo_utc(2024, 2, 1, 0, 0) +
					       29 * 86400000.0));
	d = check(&q, &k, algo_utc(2024, 2, 29, 23, 59), 1);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after_ms, 60000);
	memset(&k, 0, sizeof k);
	d = check(&q, &k, algo_utc(2023, 2, 10, 0, 0), 1);
	assert_int_equal(d.reset_at, (int64_t)(algo_utc(2023, 2, 1, 0, 0) +
					       28 * 86400000.0));
}

/* ------------------------------------------------------------------------
 * Random timelines against the model
 * ---------------------------------------------------------------------- */

static const struct {
	struct params p;
	double step; /* largest forward step, ms */
} policies[] = {
	{ P_MONTH(15, 0), 6 * 86400000.0 },
	{ P_MONTH(12.5, 330), 6 * 86400000.0 },
	{ P_MONTH(20, -840), 6 * 86400000.0 },
	{ P_WEEK(10, 0, 1), 1.4 * 86400000.0 },
	{ P_WEEK(7.5, 840, 0), 1.4 * 86400000.0 },
	{ P_WEEK(9, -300, 5), 1.4 * 86400000.0 },
	{ P_DAY(8, 0), 0.2 * 86400000.0 },
	{ P_DAY(6, 345), 0.2 * 86400000.0 },
	{ P_FIXED(10, 1000, 250), 200 },
	{ P_FIXED(4.5, 333.3, -7), 66 },
	{ P_FIXED(25, 60000, 0), 12000 },
};

#define TIMELINES 10
#define STEPS	  400

struct ledger {
	double start[1024], units[1024];
	unsigned n;
};

static double
ledger_add(struct ledger *l, double start, double units)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->start[i] == start)
			return l->units[i] += units;
	assert_true(l->n < 1024);
	l->start[l->n] = start;
	l->units[l->n] = units;
	return l->units[l->n++];
}

static void
run_timelines(bool regressions, uint64_t seed)
{
	static struct ledger ours, theirs;
	unsigned steps = 0, admitted = 0, denied = 0, tk_overflows = 0;

	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		struct params pp = policies[p].p;
		struct tk_quota q = quota(pp);
		double step = policies[p].step;

		for (unsigned tl = 0; tl < TIMELINES; tl++) {
			uint64_t rs = seed + p * 1000 + tl;
			struct model m = model_new(pp, regressions);
			struct model tk = model_new(pp, false);
			struct key k = { 0 };
			double now = ALGO_EPOCH + algo_unit(&rs) * 40 * step;
			double last_start = -INFINITY;

			if (tl & 1)
				now = floor(now);
			ours.n = theirs.n = 0;
			for (unsigned s = 0; s < STEPS; s++) {
				double u = algo_unit(&rs), cost;
				tkshm_decision got, want, tkd;
				char what[160];

				if (regressions && u < 0.15)
					now -= algo_unit(&rs) * 3 * step;
				else if (u < 0.25)
					; /* same instant */
				else if (u < 0.5)
					now += floor(algo_unit(&rs) * step);
				else
					now += algo_unit(&rs) * step;
				u = algo_unit(&rs);
				if (u < 0.5)
					cost = 1 + algo_below(&rs, 4);
				else if (u < 0.95)
					cost = algo_unit(&rs) * 3 + 0.001;
				else
					cost = pp.limit *
					       (0.5 + algo_unit(&rs));
				snprintf(what, sizeof what,
					 "policy %zu timeline %u step %u "
					 "(now %.17g cost %.17g)",
					 p, tl, s, now, cost);

				got = peek(&q, &k, now);
				want = model_peek(&m, now);
				algo_assert_decision(what, &got, &want);
				if (k.present) {
					bool idle =
						tk_quota_is_idle(&q, k.st, now);
					double debt =
						tk_quota_debt(&q, k.st, now);

					assert_true(idle == (debt == 0));
					if (idle) {
						struct key cold = { 0 };
						struct key warm = k;
						tkshm_decision dc, dw;

						dc = check(&q, &cold, now,
							   cost);
						dw = check(&q, &warm, now,
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

				got = check(&q, &k, now, cost);
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

					assert_true(start >= last_start);
					last_start = start;
					if (charged > pp.limit)
						fail_msg("%s: %.17g units "
							 "charged to period "
							 "%.17g, limit %g",
							 what, charged, start,
							 pp.limit);
				}
				tkd = model_check(&tk, now, cost);
				if (tkd.allowed && ledger_add(&theirs, tk.start,
							      cost) > pp.limit)
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
	if (regressions)
		assert_true(tk_overflows > 100);
	else
		assert_int_equal(tk_overflows, 0);
}

static void
test_forward_timelines_match_throttlekit(void **state)
{
	(void)state;
	run_timelines(false, 3000);
}

static void
test_timelines_with_regressions(void **state)
{
	(void)state;
	run_timelines(true, 999000);
}

/* ------------------------------------------------------------------------
 * Regressions, idle, validity, validation
 * ---------------------------------------------------------------------- */

/* A jump back into last month is decided within this month: denied when
 * this month is spent (resetAt = next month), charged to this month when
 * it is not. */
static void
test_regression_into_previous_month(void **state)
{
	struct params p = P_MONTH(2, 330);
	struct tk_quota q = quota(p);
	struct model tk = model_new(p, false);
	struct key k = { 0 };
	double mar = algo_utc(2024, 3, 10, 0, 0);
	double feb = algo_utc(2024, 2, 20, 0, 0);
	double apr1 = algo_utc(2024, 3, 31, 18, 30); /* local April 1st */
	tkshm_decision d;

	(void)state;
	assert_true(check(&q, &k, mar, 1).allowed);
	d = check(&q, &k, feb, 1);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.reset_at, (int64_t)apr1);
	algo_assert_word("regression", k.st, 0, algo_utc(2024, 2, 29, 18, 30));
	d = check(&q, &k, feb, 1);
	assert_false(d.allowed);
	assert_int_equal(d.reset_at, (int64_t)apr1);
	assert_int_equal(d.retry_after_ms, (int64_t)(apr1 - feb));
	assert_false(tk_quota_is_idle(&q, k.st, feb));
	assert_true(tk_quota_debt(&q, k.st, feb) == 2);
	/* ThrottleKit would have admitted twice more in February and twice
	 * more in March again. */
	assert_true(model_check(&tk, mar, 2).allowed);
	assert_true(model_check(&tk, feb, 2).allowed);
	assert_true(model_check(&tk, mar, 2).allowed);
	assert_false(check(&q, &k, mar, 1).allowed);
	assert_true(check(&q, &k, apr1, 2).allowed);
}

static void
test_denial_keeps_state(void **state)
{
	struct params p = P_WEEK(5, 0, 1);
	struct tk_quota q = quota(p);
	struct key k = { 0 };
	double now = algo_utc(2024, 5, 15, 12, 0);
	tkshm_decision first;
	uint64_t before[2];

	(void)state;
	assert_false(check(&q, &k, now, 5.5).allowed);
	assert_false(k.present);
	assert_true(check(&q, &k, now, 4.25).allowed);
	memcpy(before, k.st, sizeof before);
	first = check(&q, &k, now + 1, 1);
	assert_false(first.allowed);
	assert_int_equal(first.remaining, 0);
	for (int i = 0; i < 50; i++) {
		tkshm_decision d = check(&q, &k, now + 1, 1 + i);

		algo_assert_decision("repeated denial", &d, &first);
		assert_memory_equal(k.st, before, sizeof before);
	}
}

static void
test_idle_and_state_valid(void **state)
{
	struct params p = P_FIXED(10, 1000, 250);
	struct tk_quota q = quota(p);
	uint64_t st[2];

	(void)state;
	/* A period start may be negative (here: before the anchor). */
	st[0] = tk_f64_word(-750);
	st[1] = tk_f64_word(4);
	assert_true(tk_quota_state_valid(&q, st));
	assert_false(tk_quota_is_idle(&q, st, 249.5));
	assert_true(tk_quota_debt(&q, st, 249.5) == 4);
	assert_true(tk_quota_is_idle(&q, st, 250));
	assert_true(tk_quota_debt(&q, st, 250) == 0);
	assert_false(tk_quota_is_idle(&q, st, -2000));
	st[1] = tk_f64_word(10);
	assert_true(tk_quota_state_valid(&q, st));
	/* Above the limit: a limit lowered in place since (protocol.h L1). */
	st[1] = tk_f64_word(10.25);
	assert_true(tk_quota_state_valid(&q, st));
	st[1] = tk_f64_word(NAN);
	assert_false(tk_quota_state_valid(&q, st));
	/* A give-back of everything the period counted (refund.c). */
	st[1] = tk_f64_word(0);
	assert_true(tk_quota_state_valid(&q, st));
	st[1] = tk_f64_word(-1);
	assert_false(tk_quota_state_valid(&q, st));
	st[1] = tk_f64_word(1);
	st[0] = tk_f64_word(INFINITY);
	assert_false(tk_quota_state_valid(&q, st));
	st[0] = UINT64_C(0xFFF8000000000000);
	assert_false(tk_quota_state_valid(&q, st));
}

/* ------------------------------------------------------------------------
 * The rolling cadence: ThrottleKit's slidingWindow under the quota name
 * ---------------------------------------------------------------------- */

static struct tk_quota
rolling(double limit, double period_ms, double buckets)
{
	struct tk_quota q;
	char err[200] = "";

	/* The calendar options are ignored by rolling, even invalid ones. */
	if (tk_quota_init(&q, limit, TK_QUOTA_ROLLING, 9999, -3, period_ms, 0.5,
			  buckets, err, sizeof err) != TKSHM_OK)
		fail_msg("tk_quota_init(rolling): %s", err);
	assert_int_equal(tk_quota_words(&q), (size_t)buckets + 2);
	return q;
}

/* quota({limit, resetCadence: "rolling", periodMs, buckets}) replays the
 * slidingWindow golden suite exactly (as given and shifted by +1000). */
static void
test_rolling_golden_sliding_window(void **state)
{
	cJSON *golden = tkt_golden();
	const cJSON *suite;
	unsigned ops = 0;

	(void)state;
	for (int shift = 0; shift < 2; shift++) {
		double offset = shift ? 1000 : 0;

		cJSON_ArrayForEach(suite, gv_member(golden, "suites"))
		{
			const cJSON *opts, *op;
			struct tk_quota q;
			uint64_t st[TK_SLIDING_WINDOW_MAX_BUCKETS + 2] = { 0 };
			bool present = false;
			unsigned n = 0;

			if (!gv_is_ratelimit(suite, "slidingWindow"))
				continue;
			opts = gv_member(gv_member(suite, "strategy"),
					 "options");
			q = rolling(gv_number(opts, "limit"),
				    gv_number(opts, "windowMs"),
				    gv_number(opts, "buckets"));
			cJSON_ArrayForEach(op, gv_member(suite, "ops"))
			{
				tkshm_decision want = gv_expect(op, offset);
				tkshm_decision got;
				char what[160];

				memset(&got, 0xA5, sizeof got);
				if (tk_quota_check(
					    &q, present, st,
					    gv_number(op, "now") + offset,
					    gv_number(op, "cost"), st, &got)) {
					present = true;
					assert_true(
						tk_quota_state_valid(&q, st));
				}
				snprintf(what, sizeof what,
					 "%s as rolling quota op %u (offset "
					 "%g)",
					 gv_member(suite, "name")->valuestring,
					 n, offset);
				algo_assert_decision(what, &got, &want);
				n++;
				ops++;
			}
		}
	}
	cJSON_Delete(golden);
	assert_int_equal(ops, 2 * 5); /* limit10-1s-10buckets */
}

/* Field for field and word for word what slidingWindow({limit, windowMs:
 * periodMs, buckets}) decides, on random timelines with regressions. */
static void
test_rolling_is_sliding_window(void **state)
{
	static const struct {
		double limit, period, buckets;
	} cases[] = {
		{ 50, 1000, 10 },
		{ 20, 1000, 3 },
		{ 100, 60000, 1 },
		{ 7.5, 86400000, 24 },
	};
	unsigned steps = 0;

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct tk_quota q = rolling(cases[c].limit, cases[c].period,
					    cases[c].buckets);
		struct tk_sliding_window sw;
		uint64_t a[TK_SLIDING_WINDOW_MAX_BUCKETS + 2] = { 0 };
		uint64_t b[TK_SLIDING_WINDOW_MAX_BUCKETS + 2] = { 0 };
		size_t words = tk_quota_words(&q);
		uint64_t rs = 31337 + c;
		double now = ALGO_EPOCH;
		bool present = false;

		assert_rc(tk_sliding_window_init(&sw, cases[c].limit,
						 cases[c].period,
						 cases[c].buckets, NULL, 0),
			  TKSHM_OK);
		assert_int_equal(words, tk_sliding_window_words(&sw));
		for (int s = 0; s < 3000; s++) {
			double u = algo_unit(&rs);
			double cost = 1 + algo_below(&rs, 4);
			tkshm_decision dq, dw;
			bool okq, okw;

			if (u < 0.1)
				now -= algo_unit(&rs) * cases[c].period / 2;
			else
				now += algo_unit(&rs) * cases[c].period / 8;
			memcpy(b, a, sizeof a);
			tk_quota_peek(&q, present, a, now, &dq);
			tk_sliding_window_peek(&sw, present, a, now, &dw);
			algo_assert_decision("rolling peek", &dq, &dw);
			if (present) {
				assert_true(
					tk_quota_is_idle(&q, a, now) ==
					tk_sliding_window_is_idle(&sw, a, now));
				assert_true(
					tk_quota_debt(&q, a, now) ==
					tk_sliding_window_debt(&sw, a, now));
			}
			okq = tk_quota_check(&q, present, a, now, cost, a, &dq);
			okw = tk_sliding_window_check(&sw, present, b, now,
						      cost, b, &dw);
			assert_true(okq == okw);
			algo_assert_decision("rolling check", &dq, &dw);
			if (okq) {
				assert_memory_equal(a, b, words * sizeof *a);
				assert_true(tk_quota_state_valid(&q, a));
				present = true;
			}
			steps++;
		}
	}
	assert_int_equal(steps, 12000);
}

static void
test_rolling_validation(void **state)
{
	struct tk_quota q;
	char err[200];

	(void)state;
	err[0] = 0;
	assert_rc(tk_quota_init(&q, 10, TK_QUOTA_ROLLING, 0, 1, NAN, 0, 10, err,
				sizeof err),
		  TKSHM_EPOLICY);
	assert_non_null(strstr(err, "quota: periodMs"));
	err[0] = 0;
	assert_rc(tk_quota_init(&q, 10, TK_QUOTA_ROLLING, 0, 1, 0, 0, 10, err,
				sizeof err),
		  TKSHM_EPOLICY);
	assert_non_null(strstr(err, "periodMs"));
	err[0] = 0;
	assert_rc(tk_quota_init(&q, 10, TK_QUOTA_ROLLING, 0, 1, 1000, 0, 0, err,
				sizeof err),
		  TKSHM_EPOLICY);
	assert_non_null(strstr(err, "buckets"));
	err[0] = 0;
	assert_rc(tk_quota_init(&q, 10, TK_QUOTA_ROLLING, 0, 1, 1000, 0, 2.5,
				err, sizeof err),
		  TKSHM_EPOLICY);
	assert_non_null(strstr(err, "buckets"));
	err[0] = 0;
	assert_rc(tk_quota_init(&q, 0, TK_QUOTA_ROLLING, 0, 1, 1000, 0, 10, err,
				sizeof err),
		  TKSHM_EPOLICY);
	assert_non_null(strstr(err, "quota: limit"));
	assert_rc(tk_quota_init(&q, 10, TK_QUOTA_ROLLING, 0, 1, 1000, 0,
				TK_QUOTA_BUCKETS_DEFAULT, NULL, 0),
		  TKSHM_OK);
	assert_int_equal(tk_quota_words(&q), 12);
}

static void
test_validation(void **state)
{
	static const struct {
		double limit;
		int cadence;
		double off, wso, period, anchor;
		const char *names;
	} bad[] = {
		{ 0, TK_QUOTA_CALENDAR_MONTH, 0, 1, 0, 0, "limit" },
		{ -1, TK_QUOTA_FIXED, 0, 1, 1000, 0, "limit" },
		{ NAN, TK_QUOTA_CALENDAR_DAY, 0, 1, 0, 0, "limit" },
		{ INFINITY, TK_QUOTA_CALENDAR_DAY, 0, 1, 0, 0, "limit" },
		/* limit is checked first, whatever else is wrong. */
		{ 0, TK_QUOTA_CALENDAR_DAY, 9999, 1, 0, 0, "limit" },
		{ 5, 0, 0, 1, 0, 0, "resetCadence" },
		{ 5, 6, 0, 1, 0, 0, "resetCadence" },
		{ 5, TK_QUOTA_CALENDAR_MONTH, 900, 1, 0, 0, "offsetMinutes" },
		{ 5, TK_QUOTA_CALENDAR_WEEK, 0, 7, 0, 0, "weekStartsOn" },
		{ 5, TK_QUOTA_CALENDAR_DAY, 0, 1, 0, 0.5, "anchor" },
		{ 5, TK_QUOTA_FIXED, 0, 1, 0, 0, "periodMs" },
		{ 5, TK_QUOTA_FIXED, 0, 1, NAN, 0, "periodMs" },
	};
	struct tk_quota q;
	char err[200];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_rc(tk_quota_init(&q, bad[i].limit,
					(enum tk_quota_cadence)bad[i].cadence,
					bad[i].off, bad[i].wso, bad[i].period,
					bad[i].anchor, 10, err, sizeof err),
			  TKSHM_EPOLICY);
		if (!strstr(err, bad[i].names) || strncmp(err, "quota:", 6))
			fail_msg("case %zu: \"%s\" does not name %s", i, err,
				 bad[i].names);
	}
	/* periodMs is ignored by the calendar cadences, buckets by all. */
	assert_rc(tk_quota_init(&q, 1e6, TK_QUOTA_CALENDAR_MONTH, 0, 1, NAN, 0,
				NAN, NULL, 0),
		  TKSHM_OK);
	assert_rc(
		tk_quota_init(&q, 0.5, TK_QUOTA_FIXED, 0, 1, 1, -5, 0, NULL, 0),
		TKSHM_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_leap_february_length),
		cmocka_unit_test(test_forward_timelines_match_throttlekit),
		cmocka_unit_test(test_timelines_with_regressions),
		cmocka_unit_test(test_regression_into_previous_month),
		cmocka_unit_test(test_denial_keeps_state),
		cmocka_unit_test(test_idle_and_state_valid),
		cmocka_unit_test(test_rolling_golden_sliding_window),
		cmocka_unit_test(test_rolling_is_sliding_window),
		cmocka_unit_test(test_rolling_validation),
		cmocka_unit_test(test_validation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
