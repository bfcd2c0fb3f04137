/*
 * test_leaky_bucket.c - the shaper: the pure leaky-bucket transition
 * (src/algorithms/leaky_bucket.h), reservations through a real table
 * (src/shaper/reserve.c) and the deadline arithmetic tkshm_schedule
 * sleeps on (src/shaper/sleep.h).
 *
 * Oracle: a model written below from docs/semantics.md, "Leaky bucket"
 * (ThrottleKit's model), in ThrottleKit's order of double operations:
 *   T = 1000 / ratePerSec ; inc = T * cost
 *   departure = max(state ?? now, now) ; delay = departure - now
 *   delay > maxQueueMs: reject, delayMs = ceil(delay - maxQueueMs), no write
 *   else state = departure + inc, accept, delayMs = ceil(delay)
 * and, for tkshm's Decision fields, the meanings leaky_bucket.h documents
 * (`remaining` is also checked against its meaning, cost-1 reservations
 * accepted in a row, on timelines whose arithmetic is exact).
 * Every timeline is seeded, so a failure replays identically.
 */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "algorithms/leaky_bucket.h"
#include "shaper/sleep.h"
#include "shm/table.h"
#include "test_support.h"

#define EPOCH 1.7e12

/* ------------------------------------------------------------------------
 * PRNG (splitmix64)
 * ---------------------------------------------------------------------- */

static uint64_t
rng(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double
unit(uint64_t *s)
{
	return (double)(rng(s) >> 11) * 0x1p-53;
}

static uint64_t
below(uint64_t *s, uint64_t n)
{
	return rng(s) % n;
}

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's leakyBucket ("Leaky bucket"), one key.
 * ---------------------------------------------------------------------- */

struct model {
	double rate, T, max_queue;
	bool present;
	double state; /* the next free departure */
};

struct outcome {
	bool accepted;
	double delay;	  /* departure - now */
	int64_t delay_ms; /* ThrottleKit's delayMs */
	double departure;
	double next; /* accepted: the state written */
};

static struct model
model_new(double rate, double max_queue)
{
	struct model m;

	memset(&m, 0, sizeof m);
	m.rate = rate;
	m.T = 1000 / rate;
	m.max_queue = max_queue;
	return m;
}

static struct outcome
model_reserve(struct model *m, double now, double cost)
{
	struct outcome o;
	double inc = m->T * cost;
	double st = m->present ? m->state : now;

	memset(&o, 0, sizeof o);
	o.departure = fmax(st, now);
	o.delay = o.departure - now;
	if (o.delay > m->max_queue) {
		o.delay_ms = (int64_t)ceil(o.delay - m->max_queue);
		return o; /* no write */
	}
	o.accepted = true;
	o.delay_ms = (int64_t)ceil(o.delay);
	o.next = o.departure + inc;
	m->state = o.next;
	m->present = true;
	return o;
}

/* leaky_bucket.h's Decision meanings, in closed form. */
static int64_t
model_limit(const struct model *m)
{
	return (int64_t)floor(m->max_queue / m->T) + 1;
}

/* Cost-1 requests accepted in a row from a queue that waits `delay`. */
static int64_t
model_room(const struct model *m, double delay)
{
	if (delay > m->max_queue)
		return 0;
	return (int64_t)floor((m->max_queue - delay) / m->T) + 1;
}

/* The same, by reserving cost 1 at `now` until a rejection (the meaning). */
static int64_t
model_room_sim(const struct model *m, double now)
{
	struct model c = *m;
	int64_t n = 0;

	while (model_reserve(&c, now, 1).accepted)
		if (++n > 100000)
			fail_msg("room simulation did not end");
	return n;
}

/* ------------------------------------------------------------------------
 * The pure transition
 * ---------------------------------------------------------------------- */

#define SENTINEL UINT64_C(0x5A5A5A5A5A5A5A5A)

static struct tk_leaky_bucket
lb_init(double rate, double max_queue)
{
	struct tk_leaky_bucket l;
	char err[160];

	if (tk_leaky_bucket_init(&l, rate, max_queue, err, sizeof err) !=
	    TKSHM_OK)
		fail_msg("init(%g, %g): %s", rate, max_queue, err);
	return l;
}

/* One step of the transition against the model; `exact` when every
 * number of the timeline is an integer (remaining is then also checked
 * by simulation). */
static void
step_pure(const struct tk_leaky_bucket *l, struct model *m, double now,
	  double cost, bool exact, const char *what)
{
	uint64_t st = m->present ? tk_f64_word(m->state) : 0, out = SENTINEL;
	bool present = m->present;
	tkshm_decision d;
	struct outcome o = model_reserve(m, now, cost);
	bool got;

	memset(&d, 0xEE, sizeof d);
	got = tk_leaky_bucket_check(l, present, st, now, cost, &out, &d);
	if (got != o.accepted || d.allowed != o.accepted)
		fail_msg("%s: now=%.17g cost=%.17g delay=%.17g: accepted %d, "
			 "model %d",
			 what, now, cost, o.delay, got, o.accepted);
	assert_int_equal(d.limit, model_limit(m));
	assert_int_equal(d.flags, 0);
	if (!o.accepted) {
		/* A rejection writes nothing. */
		if (out != SENTINEL)
			fail_msg("%s: a rejection wrote the state", what);
		assert_int_equal(d.retry_after_ms, o.delay_ms);
		assert_int_equal(d.remaining, 0);
		assert_int_equal(d.reset_at, (int64_t)ceil(o.departure));
		return;
	}
	if (out != tk_f64_word(o.next))
		fail_msg("%s: now=%.17g cost=%.17g: state %.17g, model %.17g",
			 what, now, cost, tk_word_f64(out), o.next);
	assert_int_equal(d.retry_after_ms, 0);
	assert_int_equal(d.reset_at, (int64_t)ceil(o.next));
	assert_int_equal(d.remaining, model_room(m, o.next - now));
	if (exact && d.remaining != model_room_sim(m, now))
		fail_msg("%s: remaining %lld, but %lld cost-1 requests are "
			 "accepted in a row",
			 what, (long long)d.remaining,
			 (long long)model_room_sim(m, now));
}

/* A policy of the seeded mix: exact ones (integer T: every number of the
 * timeline stays an integer) and arbitrary ones. */
static void
pick_policy(uint64_t *s, bool exact, double *rate, double *max_queue)
{
	static const double exact_rates[] = { 1,   2,	4,   5,	  8,   10,
					      20,  25,	40,  50,  100, 125,
					      200, 250, 500, 1000 };
	static const double rates[] = { 3,	    7,	  0.3,	 123.456,
					1000.0 / 3, 4000, 0.001, 60 };

	if (exact) {
		*rate = exact_rates[below(s, 16)];
		switch (below(s, 4)) {
		case 0:
			*max_queue = 0;
			break;
		case 1:
			*max_queue = (double)below(s, 100);
			break;
		default:
			*max_queue = (double)below(s, 5000);
			break;
		}
		return;
	}
	*rate = below(s, 3) == 0 ? 0.01 + unit(s) * 2000 : rates[below(s, 8)];
	switch (below(s, 5)) {
	case 0:
		*max_queue = 0;
		break;
	case 1:
		*max_queue = unit(s) * 10;
		break;
	case 2:
		*max_queue = 1000.0 / *rate * (double)below(s, 6);
		break;
	default:
		*max_queue = unit(s) * 5000;
		break;
	}
}

static double
pick_cost(uint64_t *s, bool exact)
{
	switch (below(s, 8)) {
	case 0:
		return (double)(1 + below(s, 5));
	case 1:
		return exact ? (double)(20 + below(s, 200)) :
			       1 + unit(s) * 500; /* often beyond the queue */
	case 2:
		return exact ? 2 : 0.25 + unit(s) * 3;
	default:
		return 1;
	}
}

/* The gap to the next request: none, a fraction of T, about the cost's
 * interval, past the queue (idle), or backwards (a caller whose clock
 * lags). */
static double
pick_gap(uint64_t *s, bool exact, double T, double max_queue)
{
	double g;

	switch (below(s, 8)) {
	case 0:
	case 1:
		return 0;
	case 2:
		g = T * unit(s);
		break;
	case 3:
		g = T * (0.5 + unit(s));
		break;
	case 4:
		g = max_queue + T * (1 + 3 * unit(s));
		break;
	case 5:
		g = -T * unit(s);
		break;
	default:
		g = T * unit(s) * 0.5;
		break;
	}
	return exact ? floor(g) : g;
}

static void
test_transition_timelines(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 400; seed++) {
		uint64_t s = seed;
		bool exact = seed % 2 == 0;
		double rate, max_queue, now;
		struct tk_leaky_bucket l;
		struct model m;
		char what[96];

		pick_policy(&s, exact, &rate, &max_queue);
		l = lb_init(rate, max_queue);
		m = model_new(rate, max_queue);
		assert_true(l.T == m.T);
		now = exact ? 1000000 + (double)below(&s, 1000) :
			      EPOCH + unit(&s) * 1e6;
		snprintf(what, sizeof what, "seed %llu (rate %g, queue %g)",
			 (unsigned long long)seed, rate, max_queue);
		for (int i = 0; i < 300; i++) {
			double cost = pick_cost(&s, exact);

			step_pure(&l, &m, now, cost, exact, what);
			now += pick_gap(&s, exact, m.T, max_queue);
			if (now < 0)
				now = 0;
		}
	}
}

/* Admission looks at the wait before the request: a cost whose interval
 * is longer than the whole queue is accepted from an empty queue, and
 * then holds everything behind it. */
static void
test_cost_beyond_queue(void **state)
{
	struct tk_leaky_bucket l = lb_init(100, 50); /* T = 10 */
	uint64_t st = SENTINEL, st2 = SENTINEL;
	tkshm_decision d;

	(void)state;
	assert_true(tk_leaky_bucket_check(&l, false, 0, 1000, 40, &st, &d));
	assert_true(tk_word_f64(st) == 1400); /* 1000 + 10 * 40 */
	assert_int_equal(d.retry_after_ms, 0);
	assert_int_equal(d.remaining, 0); /* the queue waits 400 > 50 */
	assert_int_equal(d.reset_at, 1400);
	/* Behind it: rejected until the wait is back to 50. */
	assert_false(tk_leaky_bucket_check(&l, true, st, 1000, 1, &st2, &d));
	assert_true(st2 == SENTINEL);
	assert_int_equal(d.retry_after_ms, 350); /* ceil(400 - 50) */
	assert_false(tk_leaky_bucket_check(&l, true, st, 1349.5, 1, &st2, &d));
	assert_int_equal(d.retry_after_ms, 1); /* ceil(0.5) */
	assert_true(tk_leaky_bucket_check(&l, true, st, 1350, 1, &st2, &d));
	assert_true(tk_word_f64(st2) == 1410);
	/* A huge cost, the largest accepted, from empty: still accepted. */
	assert_true(tk_leaky_bucket_check(&l, false, 0, 1000, TKSHM_COST_MAX,
					  &st, &d));
	assert_true(tk_word_f64(st) == 1000 + 10 * TKSHM_COST_MAX);
}

/* maxQueueMs = 0: only a request that finds the queue empty goes. */
static void
test_max_queue_zero(void **state)
{
	struct tk_leaky_bucket l = lb_init(4, 0); /* T = 250 */
	uint64_t st = SENTINEL, st2 = SENTINEL;
	tkshm_decision d;

	(void)state;
	assert_int_equal(l.limit_field, 1);
	assert_true(tk_leaky_bucket_check(&l, false, 0, 5000, 1, &st, &d));
	assert_int_equal(d.limit, 1);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.reset_at, 5250);
	assert_false(tk_leaky_bucket_check(&l, true, st, 5000, 1, &st2, &d));
	assert_int_equal(d.retry_after_ms, 250);
	assert_false(
		tk_leaky_bucket_check(&l, true, st, 5249.999, 1, &st2, &d));
	assert_int_equal(d.retry_after_ms, 1);
	assert_true(st2 == SENTINEL);
	/* At the departure the queue is empty again: delay 0 <= 0. */
	assert_true(tk_leaky_bucket_check(&l, true, st, 5250, 3, &st2, &d));
	assert_true(tk_word_f64(st2) == 6000);
	/* A state in the past decides as an absent key. */
	assert_true(tk_leaky_bucket_check(&l, true, st, 9000, 1, &st2, &d));
	assert_true(tk_word_f64(st2) == 9250);
}

/* peek: what a cost-1 reservation would decide, writing nothing; it
 * agrees with the check on accepted and on retry-after. */
static void
test_peek(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t s = seed * 7919;
		bool exact = seed % 2 == 1;
		double rate, max_queue, now;
		struct tk_leaky_bucket l;
		struct model m;

		pick_policy(&s, exact, &rate, &max_queue);
		l = lb_init(rate, max_queue);
		m = model_new(rate, max_queue);
		now = exact ? 50000 : EPOCH + unit(&s) * 1e5;
		for (int i = 0; i < 100; i++) {
			uint64_t st = m.present ? tk_f64_word(m.state) : 0;
			uint64_t out = SENTINEL;
			double dep = m.present ? fmax(m.state, now) : now;
			tkshm_decision p, c;

			tk_leaky_bucket_peek(&l, m.present, st, now, &p);
			assert_int_equal(p.limit, model_limit(&m));
			assert_int_equal(p.remaining,
					 model_room(&m, dep - now));
			assert_true(p.allowed == (p.remaining >= 1));
			assert_int_equal(p.reset_at, (int64_t)ceil(dep));
			assert_int_equal(p.retry_after_ms,
					 p.allowed ? 0 :
						     (int64_t)ceil(dep - now -
								   max_queue));
			if (exact)
				assert_int_equal(p.remaining,
						 model_room_sim(&m, now));
			/* The check of cost 1 from the same state agrees. */
			(void)tk_leaky_bucket_check(&l, m.present, st, now, 1,
						    &out, &c);
			assert_true(c.allowed == p.allowed);
			assert_int_equal(c.retry_after_ms, p.retry_after_ms);
			/* In exact arithmetic; elsewhere both closed forms
			 * round on their own. */
			if (c.allowed && exact)
				assert_int_equal(c.remaining, p.remaining - 1);
			(void)model_reserve(&m, now, pick_cost(&s, exact));
			now += pick_gap(&s, exact, m.T, max_queue);
			if (now < 0)
				now = 0;
		}
	}
}

/* ------------------------------------------------------------------------
 * Through a real table
 * ---------------------------------------------------------------------- */

#define KEYS 5

static tkshm_reservation
reserve(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_reservation r;

	assert_rc(tkshm_reserve_at(t, key, strlen(key), cost, now, &r),
		  TKSHM_OK);
	return r;
}

static void
expect_reservation(const tkshm_reservation *r, const struct outcome *o,
		   const char *what)
{
	if (r->accepted != o->accepted)
		fail_msg("%s: accepted %d, model %d (delay %.17g)", what,
			 r->accepted, o->accepted, o->delay);
	if (o->accepted) {
		/* The exact wait: the same double the transition computed. */
		if (r->wait_ms != o->delay)
			fail_msg("%s: wait_ms %.17g, model %.17g", what,
				 r->wait_ms, o->delay);
		assert_int_equal(r->delay_ms, o->delay_ms);
		assert_int_equal(r->retry_after_ms, 0);
	} else {
		assert_true(r->wait_ms == 0);
		assert_int_equal(r->delay_ms, o->delay_ms);
		assert_int_equal(r->retry_after_ms, o->delay_ms);
	}
}

/* Several keys interleaved on seeded timelines, against one model each;
 * the table's counters count every decision, and a peek between steps
 * shows what the model holds. */
static void
test_table_timelines(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		uint64_t s = seed * 104729;
		bool exact = seed % 3 == 0;
		double rate, max_queue, now;
		struct model m[KEYS];
		uint64_t accepted = 0, rejected = 0;
		char spec[160], what[128];
		tkshm_table *t;
		tkshm_stats st;

		pick_policy(&s, exact, &rate, &max_queue);
		snprintf(spec, sizeof spec,
			 "leakyBucket:ratePerSec=%.17g,maxQueueMs=%.17g", rate,
			 max_queue);
		t = tkt_anon(spec, 64);
		for (int k = 0; k < KEYS; k++)
			m[k] = model_new(rate, max_queue);
		now = exact ? 2000000 : EPOCH + unit(&s) * 1e6;
		for (int i = 0; i < 400; i++) {
			int k = (int)below(&s, KEYS);
			char key[8];
			double cost = pick_cost(&s, exact);
			struct outcome o;
			tkshm_reservation r;
			tkshm_decision p;

			snprintf(key, sizeof key, "key%d", k);
			snprintf(what, sizeof what, "seed %llu step %d %s",
				 (unsigned long long)seed, i, key);
			o = model_reserve(&m[k], now, cost);
			r = reserve(t, key, cost, now);
			expect_reservation(&r, &o, what);
			accepted += o.accepted;
			rejected += !o.accepted;
			assert_rc(tkshm_peek_at(t, key, strlen(key), now, &p),
				  TKSHM_OK);
			assert_int_equal(p.reset_at,
					 (int64_t)ceil(fmax(m[k].state, now)));
			/* Forward only: a caller whose now lags another's
			 * may find a key reclaimed as idle at the later now
			 * and see it start afresh (tkshm_check_at's
			 * Processes clause); the pure timelines step back. */
			now += fabs(pick_gap(&s, exact, m[k].T, max_queue));
		}
		assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
		assert_int_equal(st.allowed, accepted);
		assert_int_equal(st.denied, rejected);
		tkshm_close(t);
	}
}

/* A rejection writes nothing: the key's departure (its debt at a fixed
 * now) is the same after any number of rejections. */
static void
test_table_rejection_writes_nothing(void **state)
{
	tkshm_table *t =
		tkt_anon("leakyBucket:ratePerSec=100,maxQueueMs=50", 64);
	tkshm_entry e0, e1;
	tkshm_reservation r;

	(void)state;
	for (int i = 0; i < 6; i++) {
		r = reserve(t, "k", 1, 1000);
		assert_true(r.accepted);
		assert_true(r.wait_ms == 10.0 * i);
	}
	assert_rc(tkshm_entry_get_at(t, "k", 1, 1000, &e0), TKSHM_OK);
	assert_true(e0.debt_ms == 60);
	for (int i = 0; i < 50; i++) {
		r = reserve(t, "k", 1 + i % 3, 1000 + (i % 10) / 4.0);
		assert_false(r.accepted);
		assert_true(r.wait_ms == 0);
	}
	r = reserve(t, "k", 1, 1000);
	assert_int_equal(r.retry_after_ms, 10);
	assert_int_equal(r.delay_ms, 10);
	assert_rc(tkshm_entry_get_at(t, "k", 1, 1000, &e1), TKSHM_OK);
	assert_true(e1.debt_ms == e0.debt_ms);
	/* Waited out, the retry-after is accepted, with the longest wait. */
	r = reserve(t, "k", 1, 1010);
	assert_true(r.accepted);
	assert_true(r.wait_ms == 50);
	assert_int_equal(r.delay_ms, 50);
	tkshm_close(t);
}

/* A fractional wait: delay_ms is its ceiling, wait_ms the exact value. */
static void
test_table_fractional_wait(void **state)
{
	tkshm_table *t =
		tkt_anon("leakyBucket:ratePerSec=3,maxQueueMs=10000", 64);
	double T = 1000.0 / 3, now = EPOCH + 0.125;
	tkshm_reservation r;

	(void)state;
	r = reserve(t, "f", 1, now);
	assert_true(r.accepted && r.wait_ms == 0 && r.delay_ms == 0);
	r = reserve(t, "f", 0.5, now + 1);
	assert_true(r.accepted);
	assert_true(r.wait_ms == (now + T) - (now + 1));
	assert_int_equal(r.delay_ms, (int64_t)ceil((now + T) - (now + 1)));
	r = reserve(t, "f", 1, now + 1);
	assert_true(r.wait_ms == ((now + T) + T * 0.5) - (now + 1));
	tkshm_close(t);
}

/* The debt cell of a key (src/shm/table.h): few in a small table, and
 * shared by the keys that hash to one, as tkshm_reset documents. */
static const uint64_t *
debt_cell_of(tkshm_table *t, const char *key)
{
	return tk_debt_cell(t, tk_key_fp(t, key, strlen(key)));
}

/* An absent key that restarts from remembered debt (it was evicted in
 * debt): its wait starts at the remembered departure, not at now. */
static void
test_table_debt_restored_wait(void **state)
{
	/* 8 slots: every key's window is the whole table. */
	tkshm_table *t =
		tkt_anon("leakyBucket:ratePerSec=10,maxQueueMs=100000", 8);
	const double n0 = 1000000; /* T = 100 */
	char keys[9][8];
	int n = 0;
	tkshm_reservation r;
	tkshm_stats st;
	tkshm_entry e;

	(void)state;
	/* keys[0] is evicted first, keys[1] when keys[0] comes back, and
	 * keys[8] evicts keys[0]: neither of the last two may share
	 * keys[0]'s debt cell, or it would start from that debt too. */
	for (int c = 0; n < 9 && c < 10000; c++) {
		char name[8];

		snprintf(name, sizeof name, "k%d", c);
		if (n > 0 && (n == 1 || n == 8) &&
		    debt_cell_of(t, name) == debt_cell_of(t, keys[0]))
			continue;
		memcpy(keys[n++], name, sizeof name);
	}
	assert_int_equal(n, 9);
	for (int i = 0; i < 8; i++) {
		r = reserve(t, keys[i], i + 1, n0);
		assert_true(r.accepted && r.wait_ms == 0);
	}
	/* A ninth key evicts the least indebted, keys[0] (departure
	 * n0 + 100). */
	r = reserve(t, keys[8], 50, n0);
	assert_true(r.accepted && r.wait_ms == 0);
	assert_rc(tkshm_entry_get_at(t, keys[0], strlen(keys[0]), n0, &e),
		  TKSHM_ENOENT);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.evictions_in_debt, 1);
	/* It comes back at n0 + 30 and starts from its debt: wait 70. */
	r = reserve(t, keys[0], 1, n0 + 30);
	assert_true(r.accepted);
	if (r.wait_ms != 70)
		fail_msg("restored key: wait_ms %.17g, wanted 70", r.wait_ms);
	assert_int_equal(r.delay_ms, 70);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.debt_restores, 1);
	assert_int_equal(st.evictions_in_debt, 2);
	r = reserve(t, keys[0], 1, n0 + 30);
	assert_true(r.accepted && r.wait_ms == 170);
	tkshm_close(t);
}

/* The check family refuses a shaper, and reserve refuses the others. */
static void
test_enotsup(void **state)
{
	tkshm_table *lb =
		tkt_anon("leakyBucket:ratePerSec=10,maxQueueMs=100", 64);
	tkshm_table *g = tkt_anon("gcra:limit=10,periodMs=1000", 64);
	tkshm_table *c = tkt_anon("concurrency:limit=4", 64);
	tkshm_request req = { "k", 1, 1 };
	tkshm_dimension dim = { lb, "k", 1, 1 };
	tkshm_decision d, each[1];
	tkshm_reservation r;
	tkshm_key hk;
	tkshm_stats st;
	size_t done = 99, binding;

	(void)state;
	assert_rc(tkshm_check_at(lb, "k", 1, 1, 1000, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_check(lb, "k", 1, 1, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_check_many_at(lb, &req, 1, 1000, &d, &done),
		  TKSHM_ENOTSUP);
	assert_int_equal(done, 0);
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, &dim, 1, 1000, &d, each,
				       &binding),
		  TKSHM_ENOTSUP);
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ANY, &dim, 1, 1000, &d, each,
				       &binding),
		  TKSHM_ENOTSUP);
	assert_rc(tkshm_key_hash(lb, "k", 1, &hk), TKSHM_OK);
	assert_rc(tkshm_check_hashed_at(lb, &hk, 1, 1000, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_stats_get(lb, &st), TKSHM_OK);
	assert_int_equal(st.allowed + st.denied + st.inserts, 0);

	assert_rc(tkshm_reserve_at(g, "k", 1, 1, 1000, &r), TKSHM_ENOTSUP);
	assert_rc(tkshm_reserve(g, "k", 1, 1, &r), TKSHM_ENOTSUP);
	assert_rc(tkshm_schedule_at(g, "k", 1, 1, 1000, &r), TKSHM_ENOTSUP);
	assert_rc(tkshm_reserve_at(c, "k", 1, 1, 1000, &r), TKSHM_ENOTSUP);
	assert_rc(tkshm_stats_get(g, &st), TKSHM_OK);
	assert_int_equal(st.allowed + st.denied + st.inserts, 0);
	/* Input errors come first, as in a check. */
	assert_rc(tkshm_reserve_at(g, "k", 1, 0, 1000, &r), TKSHM_ECOST);
	assert_rc(tkshm_reserve_at(g, "k", 0, 1, 1000, &r), TKSHM_EKEYEMPTY);
	tkshm_close(lb);
	tkshm_close(g);
	tkshm_close(c);
}

/* Bad input is refused with the code tkshm_check_at gives for the same
 * arguments, and changes nothing. */
static void
test_bad_input(void **state)
{
	tkshm_table *lb =
		tkt_anon("leakyBucket:ratePerSec=10,maxQueueMs=100", 64);
	tkshm_table *g = tkt_anon("gcra:limit=10,periodMs=1000", 64);
	static char long_key[TKSHM_KEY_MAX + 1];
	const double nan_ = NAN, inf = INFINITY;
	const struct {
		const void *key;
		size_t len;
		double cost, now;
		int want;
	} cases[] = {
		{ NULL, 1, 1, 1000, TKSHM_ENULL },
		{ "k", 0, 1, 1000, TKSHM_EKEYEMPTY },
		{ long_key, TKSHM_KEY_MAX + 1, 1, 1000, TKSHM_EKEYLONG },
		{ "k", 1, 0, 1000, TKSHM_ECOST },
		{ "k", 1, -0.0, 1000, TKSHM_ECOST },
		{ "k", 1, -1, 1000, TKSHM_ECOST },
		{ "k", 1, nan_, 1000, TKSHM_ECOST },
		{ "k", 1, inf, 1000, TKSHM_ECOST },
		{ "k", 1, TKSHM_COST_MAX + 2, 1000, TKSHM_ECOST },
		{ "k", 1, 1, -1, TKSHM_ENOW },
		{ "k", 1, 1, nan_, TKSHM_ENOW },
		{ "k", 1, 1, inf, TKSHM_ENOW },
		{ "k", 1, 1, 1e300, TKSHM_ENOW },
		/* Several wrong: the first in check_at's order wins. */
		{ "k", 0, nan_, -1, TKSHM_EKEYEMPTY },
		{ "k", 1, nan_, -1, TKSHM_ECOST },
	};
	tkshm_reservation r;
	tkshm_decision d, p0, p1;
	tkshm_stats st;

	(void)state;
	memset(long_key, 'x', sizeof long_key);
	assert_true(reserve(lb, "k", 3, 1000).accepted);
	assert_rc(tkshm_peek_at(lb, "k", 1, 1000, &p0), TKSHM_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int want = cases[i].want;

		assert_rc(tkshm_check_at(g, cases[i].key, cases[i].len,
					 cases[i].cost, cases[i].now, &d),
			  want);
		assert_rc(tkshm_reserve_at(lb, cases[i].key, cases[i].len,
					   cases[i].cost, cases[i].now, &r),
			  want);
		assert_rc(tkshm_schedule_at(lb, cases[i].key, cases[i].len,
					    cases[i].cost, cases[i].now, &r),
			  want);
	}
	assert_rc(tkshm_reserve_at(NULL, "k", 1, 1, 1000, &r), TKSHM_ENULL);
	assert_rc(tkshm_reserve_at(lb, "k", 1, 1, 1000, NULL), TKSHM_ENULL);
	assert_rc(tkshm_reserve(lb, "k", 1, 1, NULL), TKSHM_ENULL);
	assert_rc(tkshm_schedule_at(lb, "k", 1, 1, 1000, NULL), TKSHM_ENULL);
	assert_rc(tkshm_schedule(NULL, "k", 1, 1, &r), TKSHM_ENULL);
	assert_rc(tkshm_stats_get(lb, &st), TKSHM_OK);
	assert_int_equal(st.allowed, 1);
	assert_int_equal(st.denied, 0);
	assert_int_equal(st.inserts, 1);
	assert_rc(tkshm_peek_at(lb, "k", 1, 1000, &p1), TKSHM_OK);
	tkt_assert_decision("after bad input", &p1, &p0);
	tkshm_close(lb);
	tkshm_close(g);
}

static void
test_readonly(void **state)
{
	const char *path = tkt_path("shaper-ro.tk");
	const char *spec = "leakyBucket:ratePerSec=10,maxQueueMs=100";
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *rw = tkt_file(path, spec, 64), *ro;
	tkshm_reservation r;
	tkshm_decision p;

	(void)state;
	assert_true(reserve(rw, "k", 1, 1000).accepted);
	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &ro), TKSHM_OK);
	assert_rc(tkshm_reserve_at(ro, "k", 1, 1, 1000, &r), TKSHM_EREADONLY);
	assert_rc(tkshm_schedule_at(ro, "k", 1, 1, 1000, &r), TKSHM_EREADONLY);
	assert_rc(tkshm_reserve(ro, "k", 1, 1, &r), TKSHM_EREADONLY);
	/* Peek works read-only, and sees the one reservation. */
	assert_rc(tkshm_peek_at(ro, "k", 1, 1000, &p), TKSHM_OK);
	assert_int_equal(p.reset_at, 1100);
	tkshm_close(ro);
	tkshm_close(rw);
}

static double
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* schedule: an empty queue goes at once; a wait is slept in full (the
 * wall time is a lower bound, never compared with an upper one); a
 * rejection does not sleep and reports the retry-after. */
static void
test_schedule_at(void **state)
{
	tkshm_table *t =
		tkt_anon("leakyBucket:ratePerSec=40,maxQueueMs=30", 64);
	double now = tkshm_now_ms(), t0, t1;
	tkshm_reservation r;

	(void)state;
	assert_rc(tkshm_schedule_at(t, "s", 1, 1, now, &r), TKSHM_OK);
	assert_true(r.accepted && r.wait_ms == 0 && r.delay_ms == 0);
	/* T = 25: the next departure is now + 25; asked at now + 1.75. */
	t0 = mono_ms();
	assert_rc(tkshm_schedule_at(t, "s", 1, 1, now + 1.75, &r), TKSHM_OK);
	t1 = mono_ms();
	assert_true(r.accepted);
	assert_true(r.wait_ms == 23.25);
	assert_int_equal(r.delay_ms, 24);
	if (t1 - t0 < r.wait_ms)
		fail_msg("schedule returned after %.6f ms, before the wait "
			 "%.6f",
			 t1 - t0, r.wait_ms);
	/* The next would wait 48.25 > 30: rejected, retry-after 19. */
	assert_rc(tkshm_schedule_at(t, "s", 1, 1, now + 1.75, &r), TKSHM_OK);
	assert_false(r.accepted);
	assert_true(r.wait_ms == 0);
	assert_int_equal(r.retry_after_ms, 19);
	assert_int_equal(r.delay_ms, 19);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * The deadline arithmetic (src/shaper/sleep.h)
 * ---------------------------------------------------------------------- */

static struct timespec
ts(time_t sec, long nsec)
{
	struct timespec v;

	v.tv_sec = sec;
	v.tv_nsec = nsec;
	return v;
}

static void
expect_ts(struct timespec got, time_t sec, long nsec, const char *what)
{
	if (got.tv_sec != sec || got.tv_nsec != nsec)
		fail_msg("%s: {%lld, %ld}, wanted {%lld, %ld}", what,
			 (long long)got.tv_sec, got.tv_nsec, (long long)sec,
			 nsec);
}

/* Exactly: N ns after start is the first nanosecond at or after start +
 * ms, i.e. N >= ms * 1e6 > N - 1 in real numbers. */
static void
expect_first_ns_after(struct timespec start, double ms, struct timespec d)
{
	__int128 n = ((__int128)d.tv_sec - start.tv_sec) * 1000000000 +
		     (d.tv_nsec - start.tv_nsec);
	int e;
	double f = frexp(ms, &e);
	__int128 m = (__int128)(int64_t)ldexp(f, 53) * 1000000; /* * 2^E */
	int E = e - 53;
	bool ge, prev_lt;

	assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000);
	if (ms * 1e6 < 1) {
		/* Below a nanosecond: the next one. */
		if (n != 1)
			fail_msg("%.17g ms: %lld ns, wanted 1", ms,
				 (long long)n);
		return;
	}
	if (E >= 0) {
		__int128 x = m << E;
		ge = n >= x;
		prev_lt = n - 1 < x;
	} else {
		ge = (n << -E) >= m;
		prev_lt = ((n - 1) << -E) < m;
	}
	if (!ge || !prev_lt)
		fail_msg("%.17g ms from {%lld, %ld}: deadline {%lld, %ld} is "
			 "%s",
			 ms, (long long)start.tv_sec, start.tv_nsec,
			 (long long)d.tv_sec, d.tv_nsec,
			 ge ? "more than 1 ns late" : "early");
}

static void
test_deadline(void **state)
{
	const struct timespec s0 = ts(100, 0);
	struct timespec d, mx = tk_timespec_max();
	uint64_t s = 12345;

	(void)state;
	/* No wait. */
	expect_ts(tk_deadline_after(s0, 0), 100, 0, "0");
	expect_ts(tk_deadline_after(s0, -0.0), 100, 0, "-0");
	expect_ts(tk_deadline_after(s0, -5), 100, 0, "-5");
	expect_ts(tk_deadline_after(s0, NAN), 100, 0, "NaN");
	/* Fractions, rounded up to the nanosecond. */
	expect_ts(tk_deadline_after(s0, 1.5), 100, 1500000, "1.5");
	expect_ts(tk_deadline_after(s0, 0.25), 100, 250000, "0.25");
	/* The double 0.1 is 0.1000000000000000055...: 100000.0000000000055
	 * ns, so the first nanosecond not before it is 100001. */
	expect_ts(tk_deadline_after(s0, 0.1), 100, 100001, "0.1");
	expect_ts(tk_deadline_after(s0, 1e-9), 100, 1, "1e-9");
	expect_ts(tk_deadline_after(s0, DBL_TRUE_MIN), 100, 1, "min");
	expect_ts(tk_deadline_after(s0, 999.9999995), 101, 0, "999.9999995");
	/* Carries. */
	expect_ts(tk_deadline_after(ts(5, 999999999), 1e-6), 6, 0,
		  "carry 1 ns");
	expect_ts(tk_deadline_after(ts(5, 999999999), 1999.5), 7, 999499999,
		  "carry ms");
	/* Long waits: no truncation to 32 bits anywhere. */
	expect_ts(tk_deadline_after(s0, 4294967296.0), 100 + 4294967, 296000000,
		  "2^32 ms");
	expect_ts(tk_deadline_after(s0, 4294967296000.0), 100 + 4294967296, 0,
		  "2^32 s");
	expect_ts(tk_deadline_after(s0, 1e13), 100 + 10000000000, 0, "1e13");
	expect_ts(tk_deadline_after(s0, 1e13 + 0.25), 100 + 10000000000, 250000,
		  "1e13 + 0.25");
	/* 2^60 ms: exact (an integer), 1152921504606846 s + 976 ms. */
	expect_ts(tk_deadline_after(s0, 0x1p60), 100 + 1152921504606846,
		  976000000, "2^60");
	/* Beyond: saturated, never wrapped into the past. */
	d = tk_deadline_after(s0, 1e300);
	expect_ts(d, mx.tv_sec, mx.tv_nsec, "1e300");
	d = tk_deadline_after(s0, INFINITY);
	expect_ts(d, mx.tv_sec, mx.tv_nsec, "inf");
	d = tk_deadline_after(ts(mx.tv_sec - 5, 0), 1e13);
	expect_ts(d, mx.tv_sec, mx.tv_nsec, "near the end of time");
	/* The time left, back in ms. */
	assert_true(tk_ms_until(&d, &d) == 0);
	{
		struct timespec a = ts(10, 500000000), b = ts(12, 250000);

		assert_true(tk_ms_until(&b, &a) == 1500.25);
		assert_true(tk_ms_until(&a, &b) == -1500.25);
		assert_true(tk_timespec_reached(&b, &a));
		assert_false(tk_timespec_reached(&a, &b));
		assert_true(tk_timespec_reached(&a, &a));
	}
	d = tk_deadline_after(s0, 1e13);
	assert_true(tk_ms_until(&d, &s0) == 1e13);
	/* Seeded: every wait from a nanosecond to 3e8 years, from starts
	 * with every nanosecond offset, lands on the first nanosecond at
	 * or after it. */
	for (int i = 0; i < 200000; i++) {
		double ms = exp2(-20 + unit(&s) * 73); /* 1e-6 .. 9e15 */
		struct timespec st = ts((time_t)below(&s, 4000000000u),
					(long)below(&s, 1000000000));

		if (i % 4 == 0 && ms >= 1)
			ms = floor(ms) + (double)below(&s, 1000) / 1000;
		expect_first_ns_after(st, ms, tk_deadline_after(st, ms));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transition_timelines),
		cmocka_unit_test(test_cost_beyond_queue),
		cmocka_unit_test(test_max_queue_zero),
		cmocka_unit_test(test_peek),
		cmocka_unit_test(test_table_timelines),
		cmocka_unit_test(test_table_rejection_writes_nothing),
		cmocka_unit_test(test_table_fractional_wait),
		cmocka_unit_test(test_table_debt_restored_wait),
		cmocka_unit_test(test_enotsup),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_readonly),
		cmocka_unit_test(test_schedule_at),
		cmocka_unit_test(test_deadline),
	};
	return cmocka_run_group_tests_name("shaper_leaky_bucket", tests, NULL,
					   tkt_teardown);
}
