/*
 * test_gcra_properties.c - properties of GCRA decisions made through a real
 * table, checked against ThrottleKit's formulas computed here.
 *
 * The model below is written from docs/semantics.md, "GCRA" (ThrottleKit's
 * model), not from src/: T = periodMs/limit, tau = T*burst, and the
 * check and peek formulas in ThrottleKit's order of double operations.  The
 * one deliberate difference the library documents (gcra.h) is also the
 * property asked of it: a cost above burst is never admitted.
 *
 * Where a property needs exact arithmetic (counting admissions), the
 * policies use emission intervals that are exact in binary (T = 100, 2.5)
 * and times that are integers or halves, so every sum is exact.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "gcra_model.h"

#define EPOCH 1.7e12

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's GCRA, one key.
 * ---------------------------------------------------------------------- */

/* check(state, now, cost); a denial leaves the state alone. */
static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	double nt = 0;
	tkshm_decision d = gcra_model_decide(m, now, cost, &nt);

	gcra_model_commit(m, &d, nt);
	return d;
}

/* Deterministic PRNG (xorshift64*), so a failure replays identically. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static unsigned
rng_below(unsigned n)
{
	return (unsigned)(rng() % n);
}

static tkshm_table *
anon(double limit, double period_ms, double burst, uint64_t slots)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;

	assert_rc(tkshm_policy_gcra(&p, limit, period_ms, burst), TKSHM_OK);
	o.policy = &p;
	o.slots = slots;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_OK);
	return t;
}

static tkshm_decision
check(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, strlen(key), cost, now, &d), TKSHM_OK);
	/* ThrottleKit's rule 3, for every decision this file makes. */
	assert_true(d.remaining >= 0);
	return d;
}

static tkshm_decision
peek(tkshm_table *t, const char *key, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, key, strlen(key), now, &d), TKSHM_OK);
	assert_true(d.remaining >= 0);
	return d;
}

/* The counters of two snapshots are equal (compared field by field: the
 * struct has padding). */
static void
assert_counters_equal(const tkshm_stats *a, const tkshm_stats *b)
{
	assert_int_equal(a->allowed, b->allowed);
	assert_int_equal(a->denied, b->denied);
	assert_int_equal(a->inserts, b->inserts);
	assert_int_equal(a->reclaims, b->reclaims);
	assert_int_equal(a->evictions, b->evictions);
	assert_int_equal(a->evictions_in_debt, b->evictions_in_debt);
	assert_int_equal(a->debt_restores, b->debt_restores);
	assert_int_equal(a->cas_retries, b->cas_retries);
	assert_int_equal(a->refusals, b->refusals);
	assert_int_equal(a->duplicates_killed, b->duplicates_killed);
	assert_int_equal(a->resets, b->resets);
}

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

/* ------------------------------------------------------------------------
 * Burst and pacing
 * ---------------------------------------------------------------------- */

/* Policies whose T and tau are exact in binary, so "exactly burst from
 * cold" holds at any integral now below 2^52 (ThrottleKit's float artifact,
 * docs/semantics.md, "Absolute-time rounding", needs an inexact T). */
static const struct {
	double limit, period, burst;
	unsigned admits; /* floor(burst) */
} exact_policies[] = {
	{ 10, 1000, 5, 5 },    /* T = 100 */
	{ 10, 1000, 0, 10 },   /* burst defaults to limit */
	{ 100, 1000, 50, 50 }, /* T = 10 */
	{ 400, 1000, 4, 4 },   /* T = 2.5 */
	{ 1, 60000, 1, 1 },    /* T = 60000 */
	{ 10, 1000, 2.5, 2 },  /* a fractional burst admits floor(burst) */
	{ 2000, 1000, 7, 7 },  /* T = 0.5 */
};

static void
test_burst_from_cold(void **state)
{
	static const double nows[] = { 0, 1, 1000, EPOCH, EPOCH + 0.5 };

	(void)state;
	for (size_t i = 0; i < sizeof exact_policies / sizeof exact_policies[0];
	     i++) {
		tkshm_table *t =
			anon(exact_policies[i].limit, exact_policies[i].period,
			     exact_policies[i].burst, 64);

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
			char key[32];
			unsigned admitted = 0;

			snprintf(key, sizeof key, "cold-%zu", n);
			/* Twice the burst at one instant: the first `admits`
			 * pass, every later one is denied. */
			for (unsigned k = 0;
			     k < 2 * exact_policies[i].admits + 2; k++) {
				tkshm_decision d = check(t, key, 1, nows[n]);
				if (d.allowed) {
					if (admitted != k)
						fail_msg(
							"policy %zu now %.17g: "
							"request %u admitted "
							"after a denial",
							i, nows[n], k);
					admitted++;
				} else {
					assert_true(d.retry_after_ms >= 1);
				}
			}
			if (admitted != exact_policies[i].admits)
				fail_msg("policy %zu now %.17g: %u admitted "
					 "from cold, want %u",
					 i, nows[n], admitted,
					 exact_policies[i].admits);
		}
		tkshm_close(t);
	}
}

/* After the burst, one request per T is admitted exactly on the beat, and
 * one half a beat early is denied with retry_after_ms = T/2. */
static void
test_steady_pacing(void **state)
{
	static const double starts[] = { 0, 1000, EPOCH };

	(void)state;
	for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
		tkshm_table *t = anon(10, 1000, 5, 64); /* T = 100 */
		double t0 = starts[s];

		for (int k = 0; k < 5; k++)
			assert_true(check(t, "pace", 1, t0).allowed);
		assert_false(check(t, "pace", 1, t0).allowed);
		for (int k = 1; k <= 200; k++) {
			double beat = t0 + 100.0 * k;
			tkshm_decision early = check(t, "pace", 1, beat - 50);
			tkshm_decision on = check(t, "pace", 1, beat);
			tkshm_decision again = check(t, "pace", 1, beat);

			if (early.allowed || early.retry_after_ms != 50)
				fail_msg("start %.17g beat %d: half a beat "
					 "early: allowed %d retry %lld",
					 t0, k, early.allowed,
					 (long long)early.retry_after_ms);
			if (!on.allowed || on.remaining != 0 ||
			    on.reset_at != (int64_t)(beat + 500))
				fail_msg("start %.17g beat %d: on the beat: "
					 "allowed %d remaining %lld reset %lld",
					 t0, k, on.allowed,
					 (long long)on.remaining,
					 (long long)on.reset_at);
			assert_false(again.allowed);
			assert_int_equal(again.retry_after_ms, 100);
		}
		tkshm_close(t);
	}
}

/*
 * A request every millisecond for a long run: with T >= 1 ms exact and
 * burst >= 2, GCRA admits the burst at t0 and then the first request at or
 * after each t0 + kT, so by t0 + E it has admitted burst + floor(E / T).
 * Every decision is also compared field by field with the model.
 */
static void
test_long_run_count(void **state)
{
	static const struct {
		double limit, period, burst, t0;
		unsigned elapsed;
	} runs[] = {
		{ 10, 1000, 5, 0, 60000 },     /* T = 100 */
		{ 10, 1000, 5, EPOCH, 60000 }, /* same at the epoch */
		{ 400, 1000, 4, 1000, 20000 }, /* T = 2.5 */
		{ 64, 1000, 3, 12345, 30000 }, /* T = 15.625 */
		{ 1, 1000, 2, 7, 30000 },      /* T = 1000 */
	};

	(void)state;
	for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
		tkshm_table *t =
			anon(runs[r].limit, runs[r].period, runs[r].burst, 64);
		struct model m =
			model_new(runs[r].limit, runs[r].period, runs[r].burst);
		uint64_t admitted = 0, want;

		for (unsigned ms = 0; ms <= runs[r].elapsed; ms++) {
			double now = runs[r].t0 + ms;
			tkshm_decision d = check(t, "long", 1, now);
			tkshm_decision e = model_check(&m, now, 1);
			char what[64];

			snprintf(what, sizeof what, "run %zu at +%u ms", r, ms);
			tkt_assert_decision(what, &d, &e);
			admitted += d.allowed;
		}
		want = (uint64_t)runs[r].burst +
		       (uint64_t)floor(runs[r].elapsed / m.T);
		if (admitted != want)
			fail_msg("run %zu: %llu admitted in %u ms, want %llu",
				 r, (unsigned long long)admitted,
				 runs[r].elapsed, (unsigned long long)want);
		tkshm_close(t);
	}
}

/*
 * A clock that jumps backwards never buys extra admissions.  Proof sketch
 * for the bound checked: GCRA's TAT never decreases; each admission of cost
 * c raises it by c*T to at least now_k + c*T; and admission needs
 * TAT' <= now + tau <= M + tau, M the largest now seen so far.  So for any
 * run of requests i..j, the units admitted in it are at most
 *     burst + (M_j - now_f) / T
 * where f is the first request admitted in the run.  Checked for every
 * window of the timeline, with random backward jumps of up to 3 s, plus
 * every decision against the model (which takes max(TAT, now)).
 */
static void
test_backward_jumps(void **state)
{
	enum {
		N = 3000
	};
	static double nows[N], costs[N];
	static bool allowed[N];
	const double burst = 5, T = 100;

	(void)state;
	for (unsigned round = 0; round < 4; round++) {
		tkshm_table *t = anon(10, 1000, burst, 64);
		struct model m = model_new(10, 1000, burst);
		double now = round == 0 ? 10000 : EPOCH + round * 1e6;
		double max_now = 0, first = -1, total = 0;
		unsigned jumps = 0, denials = 0;

		for (unsigned i = 0; i < N; i++) {
			unsigned r = rng_below(100);
			tkshm_decision d, e;
			char what[64];

			/* Drifting forward on average, with frequent jumps
			 * back of up to 1 s. */
			if (r < 5 && now > 1000) {
				now -= 1 + rng_below(1000); /* jump back */
				jumps++;
			} else if (r < 8)
				now += rng_below(2000); /* idle gap */
			else
				now += rng_below(40);
			if (now > max_now)
				max_now = now;
			nows[i] = now;
			costs[i] = 1 + rng_below(3);
			d = check(t, "jumpy", costs[i], now);
			e = model_check(&m, now, costs[i]);
			snprintf(what, sizeof what, "round %u request %u",
				 round, i);
			tkt_assert_decision(what, &d, &e);
			allowed[i] = d.allowed;
			if (d.allowed) {
				if (first < 0)
					first = now;
				total += costs[i];
			} else {
				denials++;
			}
		}
		/* The timeline really went backwards and really hit the
		 * limit. */
		assert_true(jumps > 50 && denials > 50 && total > 50);
		/* The whole run, against the ideal monotonic clock, from the
		 * first admission on. */
		assert_true(first >= 0);
		if (total > burst + (max_now - first) / T)
			fail_msg(
				"round %u: %g units admitted, ideal at most %g",
				round, total, burst + (max_now - first) / T);
		/* Every window i..j. */
		for (unsigned i = 0; i < N; i++) {
			double units = 0, m_j = nows[i], now_f = 0;
			bool any = false;

			for (unsigned j = i; j < N; j++) {
				if (nows[j] > m_j)
					m_j = nows[j];
				if (!allowed[j])
					continue;
				if (!any) {
					any = true;
					now_f = nows[j];
				}
				units += costs[j];
				if (units > burst + (m_j - now_f) / T)
					fail_msg("round %u window %u..%u: %g "
						 "units admitted, at most %g",
						 round, i, j, units,
						 burst + (m_j - now_f) / T);
			}
		}
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * Costs
 * ---------------------------------------------------------------------- */

/* cost == burst from cold is admitted whenever the arithmetic is exact,
 * and always decides as the model does. */
static void
test_cost_equal_burst(void **state)
{
	static const double nows[] = { 0, 1000, EPOCH, EPOCH + 0.5,
				       TKSHM_NOW_MAX };

	(void)state;
	for (size_t i = 0; i < sizeof exact_policies / sizeof exact_policies[0];
	     i++) {
		double burst = exact_policies[i].burst ?
				       exact_policies[i].burst :
				       exact_policies[i].limit;
		tkshm_table *t = anon(exact_policies[i].limit,
				      exact_policies[i].period, burst, 64);

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
			struct model m =
				model_new(exact_policies[i].limit,
					  exact_policies[i].period, burst);
			tkshm_decision d, e;
			char key[32];

			snprintf(key, sizeof key, "eq-%zu", n);
			d = check(t, key, burst, nows[n]);
			e = model_check(&m, nows[n], burst);
			tkt_assert_decision(key, &d, &e);
			if (nows[n] <
			    TKSHM_NOW_MAX) /* the largest now: not exact */
				assert_true(d.allowed);
			if (d.allowed) {
				assert_int_equal(d.remaining, 0);
				/* The bucket is empty now. */
				assert_false(check(t, key, 1, nows[n]).allowed);
			}
		}
		tkshm_close(t);
	}
	/* Inexact T: whatever the formula says, the table says. */
	{
		tkshm_table *t = anon(3, 1000, 3, 64);

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
			struct model m = model_new(3, 1000, 3);
			tkshm_decision d, e;
			char key[32];

			snprintf(key, sizeof key, "eq3-%zu", n);
			d = check(t, key, 3, nows[n]);
			e = model_check(&m, nows[n], 3);
			tkt_assert_decision(key, &d, &e);
		}
		tkshm_close(t);
	}
}

/*
 * A cost above burst can never be satisfied: it is denied from cold, from
 * every state and at every epoch, consumes nothing, and reports a finite
 * wait.  ThrottleKit's formula would admit some of these through rounding at
 * a large `now` (burst + 1e-9 rounds away); the library refuses them.
 */
/* One request of `cost` > burst on `key`: denied, with a finite wait,
 * consuming and writing nothing. */
static void
deny_over_burst(tkshm_table *t, const char *key, double cost, double now,
		double burst)
{
	tkshm_decision before = peek(t, key, now), d, after;
	tkshm_stats s0, s1;

	assert_rc(tkshm_stats_get(t, &s0), TKSHM_OK);
	d = check(t, key, cost, now);
	if (d.allowed)
		fail_msg("now %.17g cost %.17g (burst %g) admitted", now, cost,
			 burst);
	if (d.retry_after_ms == INT64_MAX || d.retry_after_ms < 0)
		fail_msg("now %.17g cost %.17g: retry_after_ms %lld", now, cost,
			 (long long)d.retry_after_ms);
	assert_int_equal(d.limit, (int64_t)burst);
	assert_true(d.remaining <= (int64_t)burst);
	after = peek(t, key, now);
	tkt_assert_decision("peek after a denial", &after, &before);
	assert_rc(tkshm_stats_get(t, &s1), TKSHM_OK);
	assert_int_equal(s1.allowed, s0.allowed);
	assert_int_equal(s1.denied, s0.denied + 1);
}

static void
test_cost_above_burst(void **state)
{
	static const double policies[][3] = {
		{ 10, 1000, 5 },   { 3, 1000, 3 },	 { 60, 60000, 10 },
		{ 7, 1000, 7 },	   { 1000, 60000, 100 }, { 1, 1000, 1 },
		{ 10, 1000, 2.5 },
	};
	static const double nows[] = {
		0,
		1,
		1000,
		EPOCH,
		EPOCH + 0.5,
		EPOCH + 1234.25,
		1.7e12 + 1e6,
		TKSHM_NOW_MAX,
		1e9,
	};
	/* The last cost is the next double above burst. */
	static const double deltas[] = {
		1e-12, 1e-9, 1e-6, 1e-3, 0.5, 1, 1e6, 0
	};
	const size_t ndeltas = sizeof deltas / sizeof deltas[0];
	unsigned checked = 0;

	(void)state;
	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		tkshm_table *t = anon(policies[p][0], policies[p][1],
				      policies[p][2], 4096);
		double burst = policies[p][2];

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++) {
			for (size_t c = 0; c < ndeltas; c++) {
				double cost =
					deltas[c] ? burst + deltas[c] :
						    nextafter(burst, INFINITY);
				char key[48];

				assert_true(cost > burst);
				snprintf(key, sizeof key, "over-%zu-%zu", n, c);
				/* Cold, then after a partial consumption. */
				deny_over_burst(t, key, cost, nows[n], burst);
				(void)check(t, key, 1, nows[n]);
				deny_over_burst(t, key, cost, nows[n], burst);
				checked += 2;
			}
		}
		tkshm_close(t);
	}
	assert_int_equal(checked, 7 * 9 * 8 * 2);
}

/*
 * ThrottleKit denies only when now < allowAt, so every denial it makes has
 * retryAfterMs = ceil(allowAt - now) >= 1: a client told to wait 0 ms
 * retries at once and is denied again, forever.  The same must hold for the
 * library's own denials of cost > burst at a large epoch, where
 * allowAt - now rounds to 0.
 */
static void
test_denial_retry_is_positive(void **state)
{
	static const double policies[][3] = {
		{ 10, 1000, 5 },
		{ 3, 1000, 3 },
		{ 60, 60000, 10 },
		{ 1000, 60000, 100 },
	};
	static const double nows[] = { 0, 1000, EPOCH, EPOCH + 0.5,
				       TKSHM_NOW_MAX };
	static const double deltas[] = { 1e-12, 1e-9, 1e-6, 0.5 };
	unsigned bad = 0, total = 0;
	char first[160] = "";

	(void)state;
	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		tkshm_table *t = anon(policies[p][0], policies[p][1],
				      policies[p][2], 1024);

		for (size_t n = 0; n < sizeof nows / sizeof nows[0]; n++)
			for (size_t c = 0; c < sizeof deltas / sizeof deltas[0];
			     c++) {
				double cost = policies[p][2] + deltas[c];
				char key[32];
				tkshm_decision d;

				snprintf(key, sizeof key, "r-%zu-%zu", n, c);
				d = check(t, key, cost, nows[n]);
				assert_false(d.allowed);
				total++;
				if (d.retry_after_ms < 1 && bad++ == 0)
					snprintf(first, sizeof first,
						 "burst %g, now %.17g, cost "
						 "%.17g: retry_after_ms %lld",
						 policies[p][2], nows[n], cost,
						 (long long)d.retry_after_ms);
			}
		tkshm_close(t);
	}
	if (bad)
		fail_msg(
			"%u of %u denials report retry_after_ms < 1; first: %s",
			bad, total, first);
}

/* ------------------------------------------------------------------------
 * Peek, reset
 * ---------------------------------------------------------------------- */

/* A peek consumes nothing: a key peeked a thousand times before each check
 * decides exactly as a twin key that was never peeked, and both decide as
 * the model.  Every peek also matches ThrottleKit's peek formula. */
static void
test_peek_never_consumes(void **state)
{
	static const double policies[][3] = {
		{ 10, 1000, 5 },
		{ 3, 1000, 3 },
		{ 100, 1000, 50 },
	};

	(void)state;
	for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
		tkshm_table *t = anon(policies[p][0], policies[p][1],
				      policies[p][2], 64);
		struct model m = model_new(policies[p][0], policies[p][1],
					   policies[p][2]);
		double now = p == 1 ? EPOCH : 5000;

		for (unsigned i = 0; i < 400; i++) {
			double cost = 1 + rng_below(4);
			tkshm_decision pk, dp, dq, e, pe;
			tkshm_stats s0, s1;
			char what[64];

			now += rng_below(4) ? rng_below(60) : 0;
			assert_rc(tkshm_stats_get(t, &s0), TKSHM_OK);
			pe = model_peek(&m, now);
			for (int k = 0; k < 1000; k++) {
				pk = peek(t, "peeked", now);
				snprintf(what, sizeof what,
					 "policy %zu step %u "
					 "peek",
					 p, i);
				if (k == 0 || k == 999)
					tkt_assert_decision(what, &pk, &pe);
			}
			assert_rc(tkshm_stats_get(t, &s1), TKSHM_OK);
			assert_int_equal(s1.allowed, s0.allowed);
			assert_int_equal(s1.denied, s0.denied);
			assert_int_equal(s1.inserts, s0.inserts);
			dp = check(t, "peeked", cost, now);
			dq = check(t, "twin", cost, now);
			e = model_check(&m, now, cost);
			snprintf(what, sizeof what, "policy %zu step %u", p, i);
			tkt_assert_decision(what, &dp, &e);
			tkt_assert_decision(what, &dq, &e);
		}
		/* A peek of a key never checked is the cold peek and does not
		 * insert it. */
		{
			struct model cold = model_new(
				policies[p][0], policies[p][1], policies[p][2]);
			tkshm_decision pk = peek(t, "never-checked", now);
			tkshm_decision pe = model_peek(&cold, now);
			tkshm_usage u;

			tkt_assert_decision("cold peek", &pk, &pe);
			assert_rc(tkshm_usage_get(t, 0, &u), TKSHM_OK);
			assert_int_equal(u.live + u.idle, 2);
		}
		tkshm_close(t);
	}
}

/* A reset key starts fresh: after exhausting it, a reset gives back the
 * full cold burst.  Resetting an absent key succeeds. */
static void
test_reset_makes_fresh(void **state)
{
	tkshm_table *t = anon(10, 1000, 5, 64);
	tkshm_stats s;

	(void)state;
	for (int k = 0; k < 5; k++)
		assert_true(check(t, "r", 1, 1000).allowed);
	assert_false(check(t, "r", 1, 1000).allowed);
	assert_rc(tkshm_reset(t, "r", 1), TKSHM_OK);
	for (int round = 0; round < 3; round++) {
		struct model m = model_new(10, 1000, 5);
		tkshm_decision pk = peek(t, "r", 1000);
		tkshm_decision pe = model_peek(&m, 1000);

		tkt_assert_decision("peek after reset", &pk, &pe);
		for (int k = 0; k < 7; k++) {
			tkshm_decision d = check(t, "r", 1, 1000);
			tkshm_decision e = model_check(&m, 1000, 1);
			tkt_assert_decision("check after reset", &d, &e);
		}
		assert_rc(tkshm_reset(t, "r", 1), TKSHM_OK);
	}
	assert_rc(tkshm_reset(t, "absent", 6), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_int_equal(s.resets, 5);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Batches
 * ---------------------------------------------------------------------- */

/* check_many answers in input order and equals the same checks made one by
 * one at the same now, including a key repeated in the batch (which sees
 * its own earlier consumption), across the groups of 16 it hashes and
 * prefetches ahead (a key repeated in two groups too). */
static void
test_check_many_equals_sequential(void **state)
{
	static const char *keys[] = {
		"a", "b", "a", "c", "a", "a", "b", "a", "a", "c",
		"d", "a", "b", "c", "e", "f", "a", "g", "b", "a",
		"h", "a", "c", "i", "a", "j", "a", "b", "k", "a",
		"l", "a", "m", "n", "a", "b", "o", "a", "p", "q",
	};
	enum {
		N = sizeof keys / sizeof keys[0]
	};
	tkshm_request reqs[N];
	tkshm_decision batch[N];
	tkshm_table *tb = anon(10, 1000, 5, 64);
	tkshm_table *ts = anon(10, 1000, 5, 64);
	size_t done = 12345;
	bool seen_allowed = false, seen_denied = false;

	(void)state;
	for (unsigned round = 0; round < 5; round++) {
		double now = 1000 + round * 150.0;

		for (unsigned i = 0; i < N; i++) {
			reqs[i].key = keys[i];
			reqs[i].key_len = strlen(keys[i]);
			reqs[i].cost = 1 + (i + round) % 3;
		}
		memset(batch, 0xA5, sizeof batch);
		assert_rc(tkshm_check_many_at(tb, reqs, N, now, batch, &done),
			  TKSHM_OK);
		assert_int_equal(done, N);
		for (unsigned i = 0; i < N; i++) {
			tkshm_decision d =
				check(ts, keys[i], reqs[i].cost, now);
			char what[64];

			snprintf(what, sizeof what, "round %u request %u (%s)",
				 round, i, keys[i]);
			tkt_assert_decision(what, &batch[i], &d);
			if (strcmp(keys[i], "a") == 0) {
				seen_allowed |= batch[i].allowed;
				seen_denied |= !batch[i].allowed;
			}
		}
	}
	/* The repeated key was both admitted and denied within batches, so
	 * the order really mattered. */
	assert_true(seen_allowed && seen_denied);
	/* An empty batch succeeds and decides nothing. */
	assert_rc(tkshm_check_many_at(tb, reqs, 0, 1000, batch, &done),
		  TKSHM_OK);
	assert_int_equal(done, 0);
	tkshm_close(tb);
	tkshm_close(ts);
}

/* One invalid request anywhere in a batch: the call fails with that
 * request's error and checks nothing at all, not even the valid requests
 * before it. */
static void
test_check_many_invalid_changes_nothing(void **state)
{
	char long_key[TKSHM_KEY_MAX + 1];
	struct {
		const void *key;
		size_t len;
		double cost;
		int want;
	} bad[] = {
		{ "x", 1, NAN, TKSHM_ECOST },
		{ "x", 1, -1, TKSHM_ECOST },
		{ "x", 1, 0, TKSHM_ECOST },
		{ "x", 1, INFINITY, TKSHM_ECOST },
		{ "x", 1, 9007199254740992.0, TKSHM_ECOST },
		{ "", 0, 1, TKSHM_EKEYEMPTY },
		{ NULL, 1, 1, TKSHM_ENULL },
		{ long_key, sizeof long_key, 1, TKSHM_EKEYLONG },
	};
	tkshm_table *t = anon(10, 1000, 5, 64);

	(void)state;
	memset(long_key, 'L', sizeof long_key);
	/* Some prior consumption, so "nothing changed" is not just "still
	 * cold". */
	(void)check(t, "a", 2, 1000);
	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		for (unsigned where = 0; where < 4; where++) {
			tkshm_request reqs[4] = {
				{ "a", 1, 1 },
				{ "b", 1, 1 },
				{ "a", 1, 1 },
				{ "c", 1, 1 },
			};
			tkshm_decision out[4];
			tkshm_decision pa0 = peek(t, "a", 1000);
			tkshm_decision pb0 = peek(t, "b", 1000);
			tkshm_decision pa1, pb1;
			tkshm_stats s0, s1;
			tkshm_usage u0, u1;
			size_t done = 99;

			reqs[where].key = bad[b].key;
			reqs[where].key_len = bad[b].len;
			reqs[where].cost = bad[b].cost;
			assert_rc(tkshm_stats_get(t, &s0), TKSHM_OK);
			assert_rc(tkshm_usage_get(t, 1000, &u0), TKSHM_OK);
			assert_rc(tkshm_check_many_at(t, reqs, 4, 1000, out,
						      &done),
				  bad[b].want);
			assert_int_equal(done, 0);
			assert_rc(tkshm_stats_get(t, &s1), TKSHM_OK);
			assert_rc(tkshm_usage_get(t, 1000, &u1), TKSHM_OK);
			assert_counters_equal(&s0, &s1);
			assert_memory_equal(&u0, &u1, sizeof u0);
			pa1 = peek(t, "a", 1000);
			pb1 = peek(t, "b", 1000);
			tkt_assert_decision("a after a refused batch", &pa1,
					    &pa0);
			tkt_assert_decision("b after a refused batch", &pb1,
					    &pb0);
		}
	}
	/* A bad now refuses the whole batch too. */
	{
		tkshm_request reqs[1] = { { "a", 1, 1 } };
		tkshm_decision out[1];
		size_t done = 7;

		assert_rc(tkshm_check_many_at(t, reqs, 1, NAN, out, &done),
			  TKSHM_ENOW);
		assert_int_equal(done, 0);
	}
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_from_cold),
		cmocka_unit_test(test_steady_pacing),
		cmocka_unit_test(test_long_run_count),
		cmocka_unit_test(test_backward_jumps),
		cmocka_unit_test(test_cost_equal_burst),
		cmocka_unit_test(test_cost_above_burst),
		cmocka_unit_test(test_denial_retry_is_positive),
		cmocka_unit_test(test_peek_never_consumes),
		cmocka_unit_test(test_reset_makes_fresh),
		cmocka_unit_test(test_check_many_equals_sequential),
		cmocka_unit_test(test_check_many_invalid_changes_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
