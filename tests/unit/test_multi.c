/*
 * test_multi.c - multi-dimensional limits (tkshm_check_multi_at) in one
 * thread, and the give-back (tk_table_refund) that `all` relies on.
 *
 * Expected decisions come from a model written here from ThrottleKit's GCRA
 * formulas (the model of test_gcra_properties.c, plus the two deviations
 * gcra.h documents: a cost above burst is never admitted, and a denial's
 * retry_after_ms is at least 1) and from the combination rules of tkshm.h:
 *   all, every dimension admits: binding = smallest remaining;
 *   all, some deny:              binding = denier with largest retry-after,
 *                                and nothing is consumed anywhere;
 *   any, some admit:             binding = admitter with largest remaining,
 *                                only admitting dimensions consume;
 *   any, all deny:               binding = smallest retry-after;
 *   ties go to the earlier dimension.
 * Counters are expected from first principles: a dimension that is consumed
 * counts one `allowed` in its table, a dimension that denies counts one
 * `denied`, a dimension that would have admitted in a denied `all` counts
 * neither, and every give-back counts one multi_rollback.
 *
 * Three tables with different policies, whose T and tau are exact in binary
 * so that every sum below is exact at the integral and half times used:
 *   A  limit 10/s,  burst 5   T = 100 ms, tau = 500 ms
 *   B  limit 4/s,   burst 2   T = 250 ms, tau = 500 ms
 *   C  limit 400/s, burst 4   T = 2.5 ms, tau = 10 ms
 *
 * The give-back tests call tk_table_check / tk_table_refund directly (a
 * race between `all`'s commits cannot be forced in one thread): an exact
 * give-back (nobody moved the key) restores the state bit for bit; a
 * conservative one (the key moved) never leaves the key roomier than if
 * the commit had never been, and is short of it by less than half a unit;
 * a give-back never lets a key admit beyond GCRA's window bound (at most
 * burst + span/T units in any interval of length span).  The last two
 * tests are scenarios where it does (see their comments): refund after a
 * reset and a new admission, and refund after time moved on.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "gcra_model.h"
#include "shm/table.h"

#define NOW0 1.7e12

#define SPEC_A "gcra:limit=10,periodMs=1000,burst=5"
#define SPEC_B "gcra:limit=4,periodMs=1000,burst=2"
#define SPEC_C "gcra:limit=400,periodMs=1000,burst=4"

/* ------------------------------------------------------------------------
 * The model: ThrottleKit's GCRA for one key.
 * ---------------------------------------------------------------------- */

static struct model
model_a(void)
{
	return model_new(10, 1000, 5);
}

static struct model
model_b(void)
{
	return model_new(4, 1000, 2);
}

static struct model
model_c(void)
{
	return model_new(400, 1000, 4);
}

/* The decision of check(state, now, cost), without changing the state; the
 * new TAT in *new_tat when it admits. */
static tkshm_decision
model_decide(const struct model *m, double now, double cost, double *new_tat)
{
	tkshm_decision d = gcra_model_decide(m, now, cost, new_tat);

	if (!d.allowed && d.retry_after_ms < 1)
		d.retry_after_ms = 1;
	return d;
}

/* check(state, now, cost): a denial leaves the state alone. */
static tkshm_decision
model_check(struct model *m, double now, double cost)
{
	double nt = 0;
	tkshm_decision d = model_decide(m, now, cost, &nt);

	gcra_model_commit(m, &d, nt);
	return d;
}

/* The binding dimension by tkshm.h's rules (ties to the earlier). */
static size_t
model_binding(tkshm_multi_mode mode, const tkshm_decision *d, size_t n)
{
	bool all_admit = true, some_admit = false;
	size_t best = n;

	for (size_t i = 0; i < n; i++) {
		all_admit = all_admit && d[i].allowed;
		some_admit = some_admit || d[i].allowed;
	}
	for (size_t i = 0; i < n; i++) {
		if (mode == TKSHM_MULTI_ALL && all_admit) {
			if (best == n || d[i].remaining < d[best].remaining)
				best = i;
		} else if (mode == TKSHM_MULTI_ALL) {
			if (!d[i].allowed &&
			    (best == n ||
			     d[i].retry_after_ms > d[best].retry_after_ms))
				best = i;
		} else if (some_admit) {
			if (d[i].allowed &&
			    (best == n || d[i].remaining > d[best].remaining))
				best = i;
		} else if (best == n ||
			   d[i].retry_after_ms < d[best].retry_after_ms) {
			best = i;
		}
	}
	return best;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static tkshm_dimension
dim(tkshm_table *t, const char *key, double cost)
{
	tkshm_dimension d = { t, key, strlen(key), cost };
	return d;
}

static tkshm_decision
check(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, strlen(key), cost, now, &d), TKSHM_OK);
	return d;
}

static tkshm_decision
peek(tkshm_table *t, const char *key, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, key, strlen(key), now, &d), TKSHM_OK);
	return d;
}

static tkshm_stats
stats(tkshm_table *t)
{
	tkshm_stats s;

	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	return s;
}

/* Counter changes between two snapshots. */
struct delta {
	int64_t allowed, denied, rollbacks;
};

static struct delta
delta_of(const tkshm_stats *before, const tkshm_stats *after)
{
	struct delta d;

	d.allowed = (int64_t)(after->allowed - before->allowed);
	d.denied = (int64_t)(after->denied - before->denied);
	d.rollbacks =
		(int64_t)(after->multi_rollbacks - before->multi_rollbacks);
	return d;
}

static void
assert_delta(const char *what, tkshm_table *t, const tkshm_stats *before,
	     int64_t allowed, int64_t denied, int64_t rollbacks)
{
	tkshm_stats after = stats(t);
	struct delta d = delta_of(before, &after);

	if (d.allowed != allowed || d.denied != denied ||
	    d.rollbacks != rollbacks)
		fail_msg("%s: counters moved by allowed %lld, denied %lld, "
			 "multi_rollbacks %lld; want %lld, %lld, %lld",
			 what, (long long)d.allowed, (long long)d.denied,
			 (long long)d.rollbacks, (long long)allowed,
			 (long long)denied, (long long)rollbacks);
}

static void
verify_clean(tkshm_table *t)
{
	uint64_t problems = 1;

	assert_rc(tkshm_verify(t, NULL, NULL, &problems), TKSHM_OK);
	assert_int_equal(problems, 0);
}

/* Runs a multi check that must succeed; `each` gets n decisions and the
 * slot after them must stay untouched (a sentinel). */
static tkshm_decision
multi(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n, double now,
      tkshm_decision *each, size_t *binding)
{
	tkshm_decision out, guard[TKSHM_MULTI_MAX + 1];
	size_t b = 12345;

	memset(guard, 0x5a, sizeof guard);
	memset(&out, 0x5a, sizeof out);
	assert_rc(tkshm_check_multi_at(mode, dims, n, now, &out, guard, &b),
		  TKSHM_OK);
	for (size_t i = 0; i < sizeof guard[n]; i++)
		if (((const unsigned char *)&guard[n])[i] != 0x5a)
			fail_msg("each[%zu] written for n = %zu", n, n);
	assert_true(b < n);
	/* The binding decision is one of the per-dimension ones. */
	tkt_assert_decision("out == each[binding]", &out, &guard[b]);
	assert_int_equal(out.flags, guard[b].flags);
	if (each)
		memcpy(each, guard, sizeof(tkshm_decision) * n);
	if (binding)
		*binding = b;
	return out;
}

/* Every table a test opens is closed by its teardown, also when an
 * assertion failed half way. */
static tkshm_table *tracked[16];
static int ntracked;

static tkshm_table *
track(tkshm_table *t)
{
	if (ntracked == (int)(sizeof tracked / sizeof tracked[0]))
		fail_msg("too many tables in one test");
	tracked[ntracked++] = t;
	return t;
}

static tkshm_table *
anon(const char *spec, uint64_t slots)
{
	return track(tkt_anon(spec, slots));
}

static int
close_tables(void **state)
{
	(void)state;
	while (ntracked > 0)
		tkshm_close(tracked[--ntracked]);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

/* Three tables, one per policy. */
struct three {
	tkshm_table *a, *b, *c;
};

static struct three
three_open(void)
{
	struct three t;

	t.a = anon(SPEC_A, 256);
	t.b = anon(SPEC_B, 256);
	t.c = anon(SPEC_C, 256);
	return t;
}

static void
three_verify(struct three *t)
{
	verify_clean(t->a);
	verify_clean(t->b);
	verify_clean(t->c);
}

/* Exhausts `key` of a table at `now` with cost-1 checks. */
static void
exhaust(tkshm_table *t, const char *key, double now, int burst)
{
	for (int i = 0; i < burst; i++)
		assert_true(check(t, key, 1, now).allowed);
	assert_false(check(t, key, 1, now).allowed);
}

/* ------------------------------------------------------------------------
 * all: one denier consumes nothing anywhere
 * ---------------------------------------------------------------------- */

static void
test_all_one_denier_consumes_nothing(void **state)
{
	struct three t = three_open();
	const double now = NOW0;
	tkshm_decision pa, pb, pc, each[3], out;
	tkshm_stats sa, sb, sc;
	size_t b;
	/* One each: A and C have history, B is exhausted. */
	struct model ma = model_a(), mb = model_b(), mc = model_c();
	tkshm_dimension dims[3];

	(void)state;
	check(t.a, "user", 2, now);
	model_check(&ma, now, 2);
	check(t.c, "global", 1, now);
	model_check(&mc, now, 1);
	exhaust(t.b, "tenant", now, 2);
	model_check(&mb, now, 1);
	model_check(&mb, now, 1);

	/* The denier in the middle, first and last. */
	for (int pos = 0; pos < 3; pos++) {
		tkshm_dimension a = dim(t.a, "user", 1),
				bb = dim(t.b, "tenant", 1),
				c = dim(t.c, "global", 1);
		tkshm_decision want[3];
		size_t ib = (size_t)pos;

		dims[pos] = bb;
		dims[(pos + 1) % 3] = a;
		dims[(pos + 2) % 3] = c;
		want[pos] = model_decide(&mb, now, 1, NULL);
		want[(pos + 1) % 3] = model_decide(&ma, now, 1, NULL);
		want[(pos + 2) % 3] = model_decide(&mc, now, 1, NULL);
		assert_false(want[pos].allowed);
		assert_true(want[(pos + 1) % 3].allowed);

		pa = peek(t.a, "user", now);
		pb = peek(t.b, "tenant", now);
		pc = peek(t.c, "global", now);
		sa = stats(t.a);
		sb = stats(t.b);
		sc = stats(t.c);
		out = multi(TKSHM_MULTI_ALL, dims, 3, now, each, &b);
		assert_false(out.allowed);
		assert_int_equal(b, ib);
		tkt_assert_decision("binding = the denier", &out, &want[ib]);
		for (int i = 0; i < 3; i++)
			tkt_assert_decision("each (would-be)", &each[i],
					    &want[i]);
		/* Nothing consumed: peeks and `allowed` unchanged. */
		{
			tkshm_decision qa = peek(t.a, "user", now),
				       qb = peek(t.b, "tenant", now),
				       qc = peek(t.c, "global", now);
			tkt_assert_decision("A peek after a denied all", &qa,
					    &pa);
			tkt_assert_decision("B peek after a denied all", &qb,
					    &pb);
			tkt_assert_decision("C peek after a denied all", &qc,
					    &pc);
			/* And the model (never consumed) agrees. */
			tkshm_decision m = model_peek(&ma, now);
			tkt_assert_decision("A vs model", &qa, &m);
			m = model_peek(&mc, now);
			tkt_assert_decision("C vs model", &qc, &m);
		}
		assert_delta("A (would admit)", t.a, &sa, 0, 0, 0);
		assert_delta("B (denies)", t.b, &sb, 0, 1, 0);
		assert_delta("C (would admit)", t.c, &sc, 0, 0, 0);
	}
	/* The admitting dimensions still have exactly their budget: A had 2
	 * of 5 taken, C 1 of 4. */
	for (int i = 0; i < 3; i++)
		assert_true(check(t.a, "user", 1, now).allowed);
	assert_false(check(t.a, "user", 1, now).allowed);
	for (int i = 0; i < 3; i++)
		assert_true(check(t.c, "global", 1, now).allowed);
	assert_false(check(t.c, "global", 1, now).allowed);
	three_verify(&t);
}

/* Several deniers across tables: still nothing consumed, each denier
 * counted once in its own table. */
static void
test_all_two_deniers(void **state)
{
	struct three t = three_open();
	const double now = NOW0 + 0.5;
	tkshm_decision each[4], out;
	tkshm_stats sa, sb, sc;
	size_t b;
	tkshm_dimension dims[4];

	(void)state;
	exhaust(t.a, "ua", now, 5);
	exhaust(t.b, "tb", now, 2);
	dims[0] = dim(t.c, "gc", 3);  /* admits, 1 left */
	dims[1] = dim(t.a, "ua", 1);  /* denies, retry 100 */
	dims[2] = dim(t.a, "ua2", 5); /* admits, 0 left */
	dims[3] = dim(t.b, "tb", 1);  /* denies, retry 250 */
	sa = stats(t.a);
	sb = stats(t.b);
	sc = stats(t.c);
	out = multi(TKSHM_MULTI_ALL, dims, 4, now, each, &b);
	assert_false(out.allowed);
	assert_int_equal(b, 3);
	assert_int_equal(out.retry_after_ms, 250);
	assert_int_equal(out.limit, 2);
	assert_true(each[0].allowed);
	assert_int_equal(each[0].remaining, 1);
	assert_false(each[1].allowed);
	assert_int_equal(each[1].retry_after_ms, 100);
	assert_true(each[2].allowed);
	assert_int_equal(each[2].remaining, 0);
	assert_false(each[3].allowed);
	assert_delta("A", t.a, &sa, 0, 1, 0);
	assert_delta("B", t.b, &sb, 0, 1, 0);
	assert_delta("C", t.c, &sc, 0, 0, 0);
	assert_int_equal(peek(t.c, "gc", now).remaining, 4);
	assert_int_equal(peek(t.a, "ua2", now).remaining, 5);
	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * all: every dimension admits and every one is consumed
 * ---------------------------------------------------------------------- */

static void
test_all_admits_consumes_everywhere(void **state)
{
	struct three t = three_open();
	double now = NOW0;
	struct model ma = model_a(), mb = model_b(), mc = model_c();
	tkshm_decision each[3], out, want[3];
	tkshm_stats sa, sb, sc;
	size_t b;
	tkshm_dimension dims[3] = { dim(t.a, "u", 1.5), dim(t.b, "t", 1),
				    dim(t.c, "g", 0.5) };

	(void)state;
	for (int round = 0; round < 3; round++) {
		want[0] = model_decide(&ma, now, 1.5, NULL);
		want[1] = model_decide(&mb, now, 1, NULL);
		want[2] = model_decide(&mc, now, 0.5, NULL);
		sa = stats(t.a);
		sb = stats(t.b);
		sc = stats(t.c);
		/* Spaced so that every round admits everywhere (B's key is
		 * on its beat: 125 ms steps for 250 ms per unit with a
		 * burst of 2). */
		assert_true(want[0].allowed && want[1].allowed &&
			    want[2].allowed);
		out = multi(TKSHM_MULTI_ALL, dims, 3, now, each, &b);
		model_check(&ma, now, 1.5);
		model_check(&mb, now, 1);
		model_check(&mc, now, 0.5);
		assert_true(out.allowed);
		assert_delta("A", t.a, &sa, 1, 0, 0);
		assert_delta("B", t.b, &sb, 1, 0, 0);
		assert_delta("C", t.c, &sc, 1, 0, 0);
		if (round == 0) {
			/* By hand: A 5 - 1.5 -> 3, B 2 - 1 -> 1, C 4 - 0.5
			 * -> 3 (whole units left), B binds. */
			assert_int_equal(each[0].remaining, 3);
			assert_int_equal(each[1].remaining, 1);
			assert_int_equal(each[2].remaining, 3);
			assert_int_equal(b, 1);
		}
		for (int i = 0; i < 3; i++)
			tkt_assert_decision("each", &each[i], &want[i]);
		assert_int_equal(b, model_binding(TKSHM_MULTI_ALL, want, 3));
		/* Consumed in every dimension: the peeks are the model's. */
		tkshm_decision p = peek(t.a, "u", now),
			       m = model_peek(&ma, now);
		tkt_assert_decision("A peek", &p, &m);
		p = peek(t.b, "t", now);
		m = model_peek(&mb, now);
		tkt_assert_decision("B peek", &p, &m);
		p = peek(t.c, "g", now);
		m = model_peek(&mc, now);
		tkt_assert_decision("C peek", &p, &m);
		now += 125;
	}
	three_verify(&t);
}

/* The same, hand-computed: fresh keys, cost 1 each. */
static void
test_all_admits_hand_computed(void **state)
{
	struct three t = three_open();
	const double now = NOW0;
	tkshm_decision each[3], out;
	size_t b;
	tkshm_dimension dims[3] = { dim(t.a, "h", 1), dim(t.b, "h", 1),
				    dim(t.c, "h", 1) };

	(void)state;
	out = multi(TKSHM_MULTI_ALL, dims, 3, now, each, &b);
	assert_true(out.allowed);
	/* Remaining after: A 4, B 1, C 3: B binds. */
	assert_int_equal(each[0].remaining, 4);
	assert_int_equal(each[1].remaining, 1);
	assert_int_equal(each[2].remaining, 3);
	assert_int_equal(b, 1);
	assert_int_equal(out.limit, 2);
	assert_int_equal(out.reset_at, (int64_t)(now + 250));
	assert_int_equal(peek(t.a, "h", now).remaining, 4);
	assert_int_equal(peek(t.b, "h", now).remaining, 1);
	assert_int_equal(peek(t.c, "h", now).remaining, 3);
	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * any
 * ---------------------------------------------------------------------- */

static void
test_any_consumes_only_admitters(void **state)
{
	struct three t = three_open();
	const double now = NOW0;
	tkshm_decision each[3], out, pb;
	tkshm_stats sa, sb, sc;
	size_t b;
	tkshm_dimension dims[3] = { dim(t.b, "k", 1), dim(t.a, "k", 2),
				    dim(t.c, "k", 5) };

	(void)state;
	exhaust(t.b, "k", now, 2);
	pb = peek(t.b, "k", now);
	sa = stats(t.a);
	sb = stats(t.b);
	sc = stats(t.c);
	/* B denies; A admits (3 left); C denies (cost 5 > burst 4). */
	out = multi(TKSHM_MULTI_ANY, dims, 3, now, each, &b);
	assert_true(out.allowed);
	assert_int_equal(b, 1);
	assert_false(each[0].allowed);
	assert_true(each[1].allowed);
	assert_int_equal(each[1].remaining, 3);
	assert_false(each[2].allowed);
	assert_true(each[2].retry_after_ms >= 1);
	assert_int_equal(out.remaining, 3);
	assert_int_equal(out.limit, 5);
	/* Only A consumed. */
	{
		tkshm_decision q = peek(t.b, "k", now);
		tkt_assert_decision("B untouched", &q, &pb);
	}
	assert_int_equal(peek(t.a, "k", now).remaining, 3);
	assert_int_equal(peek(t.c, "k", now).remaining, 4);
	assert_delta("A", t.a, &sa, 1, 0, 0);
	assert_delta("B", t.b, &sb, 0, 1, 0);
	assert_delta("C", t.c, &sc, 0, 1, 0);

	/* Two admitters: both consume, the roomier binds. */
	dims[0] = dim(t.b, "k2", 1); /* admits, 1 left */
	dims[2] = dim(t.c, "k2", 1); /* admits, 3 left */
	out = multi(TKSHM_MULTI_ANY, dims, 3, now, each, &b);
	assert_true(out.allowed);
	assert_int_equal(b, 2);
	assert_int_equal(peek(t.b, "k2", now).remaining, 1);
	assert_int_equal(peek(t.a, "k", now).remaining, 1);
	assert_int_equal(peek(t.c, "k2", now).remaining, 3);
	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * Binding decisions, hand-computed, ties included
 * ---------------------------------------------------------------------- */

struct binding_case {
	const char *name;
	tkshm_multi_mode mode;
	/* Up to 3 dimensions: table (0 A, 1 B, 2 C), pre-consumed cost-1
	 * checks on the key at now, the request's cost. */
	int n;
	int table[3];
	int pre[3];
	double cost[3];
	bool allowed;
	size_t binding;
	int64_t remaining, retry_after_ms, limit;
};

/* A T 100 tau 500; B T 250 tau 500; C T 2.5 tau 10.  From an exhausted
 * key, cost c is allowed again after T*c (A: 100c, B: 250c, C: 2.5c). */
/* One case: name, mode, n, then per dimension (table 0 A / 1 B / 2 C,
 * cost-1 checks made on its key beforehand, the request's cost), then the
 * expected allowed, binding index, remaining, retry_after_ms and limit. */
#define DIM3(t0, p0, c0, t1, p1, c1, t2, p2, c2) \
	{ t0, t1, t2 }, { p0, p1, p2 },          \
	{                                        \
		c0, c1, c2                       \
	}
#define CASE(name, mode, n, dims, allowed, binding, rem, retry, limit)   \
	{                                                                \
		name, mode, n, dims, allowed, binding, rem, retry, limit \
	}

static const struct binding_case binding_cases[] = {
	/* all, every dimension admits: smallest remaining. */
	CASE("all-admit", TKSHM_MULTI_ALL, 3, DIM3(0, 0, 1, 1, 0, 1, 2, 0, 1),
	     true, 1, 1, 0, 2),
	CASE("all-admit, later tighter", TKSHM_MULTI_ALL, 3,
	     DIM3(1, 0, 1, 0, 0, 5, 2, 0, 1), true, 1, 0, 0, 5),
	CASE("all-admit tie (A 1 vs B 1)", TKSHM_MULTI_ALL, 3,
	     DIM3(2, 0, 1, 0, 0, 4, 1, 0, 1), true, 1, 1, 0, 5),
	CASE("all-admit tie, other order", TKSHM_MULTI_ALL, 3,
	     DIM3(2, 0, 1, 1, 0, 1, 0, 0, 4), true, 1, 1, 0, 2),
	/* all, some deny: the denier with the largest retry-after. */
	CASE("all-deny", TKSHM_MULTI_ALL, 3, DIM3(0, 5, 1, 2, 0, 1, 1, 2, 1),
	     false, 2, 0, 250, 2),
	CASE("all-deny tie (A 2.5 vs B 1 = 250)", TKSHM_MULTI_ALL, 3,
	     DIM3(2, 0, 1, 0, 5, 2.5, 1, 2, 1), false, 1, 0, 250, 5),
	CASE("all-deny tie, other order", TKSHM_MULTI_ALL, 3,
	     DIM3(1, 2, 1, 2, 0, 1, 0, 5, 2.5), false, 0, 0, 250, 2),
	CASE("all-deny, the only denier last", TKSHM_MULTI_ALL, 3,
	     DIM3(0, 0, 1, 1, 0, 1, 2, 4, 1), false, 2, 0, 3, 4),
	/* any, some admit: the admitter with the largest remaining. */
	CASE("any-admit", TKSHM_MULTI_ANY, 3, DIM3(0, 0, 1, 1, 2, 1, 2, 0, 1),
	     true, 0, 4, 0, 5),
	CASE("any-admit, later roomier", TKSHM_MULTI_ANY, 3,
	     DIM3(2, 0, 1, 1, 0, 1, 0, 0, 1), true, 2, 4, 0, 5),
	CASE("any-admit tie (C 3 vs A 3)", TKSHM_MULTI_ANY, 3,
	     DIM3(1, 2, 1, 2, 0, 1, 0, 0, 2), true, 1, 3, 0, 4),
	CASE("any-admit tie, other order", TKSHM_MULTI_ANY, 3,
	     DIM3(1, 2, 1, 0, 0, 2, 2, 0, 1), true, 1, 3, 0, 5),
	/* any, all deny: the smallest retry-after. */
	CASE("any-deny", TKSHM_MULTI_ANY, 3, DIM3(1, 2, 1, 0, 5, 1, 2, 4, 2),
	     false, 2, 0, 5, 4),
	CASE("any-deny tie (A 2.5 vs B 1 = 250)", TKSHM_MULTI_ANY, 2,
	     DIM3(0, 5, 2.5, 1, 2, 1, 0, 0, 1), false, 0, 0, 250, 5),
	CASE("any-deny tie, other order", TKSHM_MULTI_ANY, 2,
	     DIM3(1, 2, 1, 0, 5, 2.5, 0, 0, 1), false, 0, 0, 250, 2),
	CASE("any-deny, smallest last", TKSHM_MULTI_ANY, 3,
	     DIM3(1, 2, 1, 0, 5, 1, 2, 4, 1), false, 2, 0, 3, 4),
};

static void
test_binding_hand_computed(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof binding_cases / sizeof binding_cases[0];
	     k++) {
		const struct binding_case *c = &binding_cases[k];
		struct three t = three_open();
		tkshm_table *tabs[3] = { t.a, t.b, t.c };
		tkshm_dimension dims[3];
		tkshm_decision each[3], out;
		char keys[3][16];
		size_t b;
		const double now = NOW0 + (double)k;

		for (int i = 0; i < c->n; i++) {
			snprintf(keys[i], sizeof keys[i], "case-%d", i);
			for (int j = 0; j < c->pre[i]; j++)
				assert_true(check(tabs[c->table[i]], keys[i], 1,
						  now)
						    .allowed);
			dims[i] = dim(tabs[c->table[i]], keys[i], c->cost[i]);
		}
		out = multi(c->mode, dims, (size_t)c->n, now, each, &b);
		if (out.allowed != c->allowed || b != c->binding ||
		    out.remaining != c->remaining ||
		    out.retry_after_ms != c->retry_after_ms ||
		    out.limit != c->limit)
			fail_msg("%s: got allowed %d binding %zu remaining "
				 "%lld retry %lld limit %lld; want %d %zu "
				 "%lld %lld %lld",
				 c->name, out.allowed, b,
				 (long long)out.remaining,
				 (long long)out.retry_after_ms,
				 (long long)out.limit, c->allowed, c->binding,
				 (long long)c->remaining,
				 (long long)c->retry_after_ms,
				 (long long)c->limit);
		three_verify(&t);
		close_tables(NULL);
	}
}

/* ------------------------------------------------------------------------
 * Randomised: 3 tables, 3 keys each, random modes, dimensions, costs and
 * times; every decision, binding index, peek and counter against the model.
 * ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x243F6A8885A308D3u;

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

/* True when another candidate of the binding rule equals the binding one. */
static bool
has_tie(const tkshm_decision *d, size_t n, size_t b)
{
	/* The binding decision's class (admitters or deniers) is the class of
	 * the rule that applied; remaining orders admitters, retry deniers. */
	for (size_t i = 0; i < n; i++) {
		if (i == b || d[i].allowed != d[b].allowed)
			continue;
		if (d[b].allowed ? d[i].remaining == d[b].remaining :
				   d[i].retry_after_ms == d[b].retry_after_ms)
			return true;
	}
	return false;
}

#define RKEYS 3
#define ROPS  4000

static void
test_random_against_model(void **state)
{
	static const double costs[] = { 0.5, 1, 1, 1, 1.5, 2, 3 };
	static const char *const names[RKEYS] = { "alice", "bob", "carol" };
	struct three t = three_open();
	tkshm_table *tabs[3] = { t.a, t.b, t.c };
	struct model m[3][RKEYS];
	int64_t want_allowed[3] = { 0 }, want_denied[3] = { 0 };
	tkshm_stats s0[3];
	double now = NOW0;
	unsigned seen[4] = { 0 }, ties = 0;

	(void)state;
	for (int tb = 0; tb < 3; tb++) {
		for (int k = 0; k < RKEYS; k++)
			m[tb][k] = tb == 0 ? model_a() :
				   tb == 1 ? model_b() :
					     model_c();
		s0[tb] = stats(tabs[tb]);
	}
	for (int op = 0; op < ROPS; op++) {
		tkshm_multi_mode mode =
			rng_below(2) ? TKSHM_MULTI_ALL : TKSHM_MULTI_ANY;
		size_t n = 1 + rng_below(5);
		int tb[5], key[5];
		double cost[5];
		tkshm_dimension dims[5];
		tkshm_decision want[5], each[5], out;
		bool used[3][RKEYS] = { { false } };
		bool all_admit = true, some_admit = false;
		size_t b, wb;

		/* Distinct (table, key) pairs: a repeated key is tested on
		 * its own below. */
		for (size_t i = 0; i < n; i++) {
			do {
				tb[i] = (int)rng_below(3);
				key[i] = (int)rng_below(RKEYS);
			} while (used[tb[i]][key[i]]);
			used[tb[i]][key[i]] = true;
			cost[i] = costs[rng_below(sizeof costs /
						  sizeof costs[0])];
			dims[i] = dim(tabs[tb[i]], names[key[i]], cost[i]);
		}
		for (size_t i = 0; i < n; i++) {
			want[i] = model_decide(&m[tb[i]][key[i]], now, cost[i],
					       NULL);
			all_admit = all_admit && want[i].allowed;
			some_admit = some_admit || want[i].allowed;
		}
		out = multi(mode, dims, n, now, each, &b);
		for (size_t i = 0; i < n; i++) {
			char what[64];
			snprintf(what, sizeof what, "op %d dim %zu", op, i);
			tkt_assert_decision(what, &each[i], &want[i]);
		}
		wb = model_binding(mode, want, n);
		if (b != wb)
			fail_msg("op %d: binding %zu, want %zu", op, b, wb);
		if (has_tie(want, n, wb))
			ties++;
		if (mode == TKSHM_MULTI_ALL) {
			assert_int_equal(out.allowed, all_admit);
			seen[all_admit ? 0 : 1]++;
			for (size_t i = 0; i < n; i++) {
				if (all_admit) {
					model_check(&m[tb[i]][key[i]], now,
						    cost[i]);
					want_allowed[tb[i]]++;
				} else if (!want[i].allowed) {
					want_denied[tb[i]]++;
				}
			}
		} else {
			assert_int_equal(out.allowed, some_admit);
			seen[some_admit ? 2 : 3]++;
			for (size_t i = 0; i < n; i++) {
				if (want[i].allowed) {
					model_check(&m[tb[i]][key[i]], now,
						    cost[i]);
					want_allowed[tb[i]]++;
				} else {
					want_denied[tb[i]]++;
				}
			}
		}
		/* What was consumed, everywhere. */
		for (int x = 0; x < 3; x++)
			for (int k = 0; k < RKEYS; k++) {
				tkshm_decision p = peek(tabs[x], names[k], now),
					       w = model_peek(&m[x][k], now);
				char what[64];
				snprintf(what, sizeof what,
					 "op %d: peek table %d key %s", op, x,
					 names[k]);
				tkt_assert_decision(what, &p, &w);
			}
		/* Mostly busy moments, sometimes a long pause. */
		now += rng_below(8) == 0 ? 0.5 * rng_below(2000) :
					   0.5 * rng_below(120);
	}
	for (int x = 0; x < 3; x++)
		assert_delta("random run", tabs[x], &s0[x], want_allowed[x],
			     want_denied[x], 0);
	print_message("random: %d ops: all admitted %u, all denied %u, any "
		      "admitted %u, any denied %u, %u ties\n",
		      ROPS, seen[0], seen[1], seen[2], seen[3], ties);
	/* Every one of the four rules was exercised. */
	for (int i = 0; i < 4; i++)
		assert_true(seen[i] > 50);
	assert_true(ties > 50);
	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * Argument validation: the right error, nothing consumed anywhere
 * ---------------------------------------------------------------------- */

struct snapshot {
	tkshm_decision p[3];
	tkshm_stats s[3];
};

static void
snap(struct snapshot *sn, tkshm_table *const tabs[3], const char *const keys[3],
     double now)
{
	for (int i = 0; i < 3; i++) {
		sn->p[i] = peek(tabs[i], keys[i], now);
		sn->s[i] = stats(tabs[i]);
	}
}

static void
assert_same_snapshot(const char *what, const struct snapshot *a,
		     const struct snapshot *b)
{
	for (int i = 0; i < 3; i++) {
		char w[160];
		snprintf(w, sizeof w, "%s: table %d peek", what, i);
		tkt_assert_decision(w, &b->p[i], &a->p[i]);
		if (b->s[i].allowed != a->s[i].allowed ||
		    b->s[i].denied != a->s[i].denied ||
		    b->s[i].inserts != a->s[i].inserts ||
		    b->s[i].multi_rollbacks != a->s[i].multi_rollbacks)
			fail_msg("%s: table %d counters moved", what, i);
	}
}

static void
test_bad_arguments(void **state)
{
	tkshm_table *rw = track(tkt_file(tkt_path("multi-ro"), SPEC_A, 64));
	tkshm_table *ro = NULL;
	struct three t = three_open();
	tkshm_table *const tabs[3] = { t.a, t.b, t.c };
	const char *const keys[3] = { "va", "vb", "vc" };
	static char longkey[TKSHM_KEY_MAX + 1];
	const double now = NOW0;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	struct snapshot before, after;
	tkshm_decision out, each[TKSHM_MULTI_MAX + 1];
	tkshm_dimension dims[TKSHM_MULTI_MAX + 1];
	char many[TKSHM_MULTI_MAX + 1][8];
	size_t b;
	static const tkshm_multi_mode modes[2] = { TKSHM_MULTI_ALL,
						   TKSHM_MULTI_ANY };

	(void)state;
	memset(longkey, 'k', sizeof longkey);
	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(tkt_path("multi-ro"), &o, &ro), TKSHM_OK);
	track(ro);
	/* Some history, so that "unchanged" means something. */
	check(t.a, "va", 2, now);
	check(t.b, "vb", 1, now);
	check(t.c, "vc", 1, now);
	snap(&before, tabs, keys, now);

	for (int mi = 0; mi < 2; mi++) {
		tkshm_multi_mode mode = modes[mi];

		/* A bad field in each position in turn, the others valid
		 * (and admitting). */
		for (int pos = 0; pos < 3; pos++) {
			static const double bad_costs[] = {
				0,
				-1,
				-0.0,
				NAN,
				INFINITY,
				-INFINITY,
				TKSHM_COST_MAX * 2,
			};
			const int nbad =
				(int)(sizeof bad_costs / sizeof bad_costs[0]);

			for (int v = 0; v < 5 + nbad; v++) {
				const char *what = "bad cost";
				int want = TKSHM_ECOST, rc;

				for (int i = 0; i < 3; i++)
					dims[i] = dim(tabs[i], keys[i], 1);
				switch (v) {
				case 0:
					dims[pos].key = NULL;
					what = "NULL key";
					want = TKSHM_ENULL;
					break;
				case 1:
					dims[pos].key_len = 0;
					what = "empty key";
					want = TKSHM_EKEYEMPTY;
					break;
				case 2:
					dims[pos].key = longkey;
					dims[pos].key_len = sizeof longkey;
					what = "key over TKSHM_KEY_MAX";
					want = TKSHM_EKEYLONG;
					break;
				case 3:
					dims[pos].table = NULL;
					what = "NULL table";
					want = TKSHM_ENULL;
					break;
				case 4:
					dims[pos].table = ro;
					what = "read-only table";
					want = TKSHM_EREADONLY;
					break;
				default:
					dims[pos].cost = bad_costs[v - 5];
					break;
				}
				rc = tkshm_check_multi_at(mode, dims, 3, now,
							  &out, each, &b);
				if (rc != want)
					fail_msg("mode %d, %s in dimension %d "
						 "(variant %d): %s, want %s",
						 mode, what, pos, v,
						 tkshm_error_name(rc),
						 tkshm_error_name(want));
			}
		}

		/* Whole-call arguments. */
		for (int i = 0; i < 3; i++)
			dims[i] = dim(tabs[i], keys[i], 1);
		assert_rc(tkshm_check_multi_at(mode, dims, 3, NAN, &out, each,
					       &b),
			  TKSHM_ENOW);
		assert_rc(
			tkshm_check_multi_at(mode, dims, 3, -1, &out, each, &b),
			TKSHM_ENOW);
		assert_rc(tkshm_check_multi_at(mode, dims, 3, INFINITY, &out,
					       each, &b),
			  TKSHM_ENOW);
		assert_rc(tkshm_check_multi_at(mode, dims, 0, now, &out, each,
					       &b),
			  TKSHM_EINVAL);
		assert_rc(tkshm_check_multi_at(mode, NULL, 3, now, &out, each,
					       &b),
			  TKSHM_ENULL);
		assert_rc(tkshm_check_multi_at(mode, dims, 3, now, NULL, each,
					       &b),
			  TKSHM_ENULL);
		for (int i = 0; i <= TKSHM_MULTI_MAX; i++) {
			snprintf(many[i], sizeof many[i], "m%d", i);
			dims[i] = dim(tabs[i % 3], many[i], 1);
		}
		assert_rc(tkshm_check_multi_at(mode, dims, TKSHM_MULTI_MAX + 1,
					       now, &out, each, &b),
			  TKSHM_EINVAL);
		assert_rc(tkshm_check_multi_at(mode, dims, SIZE_MAX, now, &out,
					       each, &b),
			  TKSHM_EINVAL);
		snap(&after, tabs, keys, now);
		assert_same_snapshot("after bad arguments", &before, &after);
		for (int i = 0; i <= TKSHM_MULTI_MAX; i++)
			assert_int_equal(
				peek(tabs[i % 3], many[i], now).remaining,
				i % 3 == 0 ? 5 :
				i % 3 == 1 ? 2 :
					     4);
	}
	/* Unknown modes. */
	for (int i = 0; i < 3; i++)
		dims[i] = dim(tabs[i], keys[i], 1);
	assert_rc(tkshm_check_multi_at((tkshm_multi_mode)0, dims, 3, now, &out,
				       each, &b),
		  TKSHM_EINVAL);
	assert_rc(tkshm_check_multi_at((tkshm_multi_mode)3, dims, 3, now, &out,
				       each, &b),
		  TKSHM_EINVAL);
	assert_rc(tkshm_check_multi_at((tkshm_multi_mode)-1, dims, 3, now, &out,
				       each, &b),
		  TKSHM_EINVAL);
	/* A read-only handle alone (and with the clock form). */
	dims[0] = dim(ro, "x", 1);
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ANY, dims, 1, now, &out,
				       NULL, NULL),
		  TKSHM_EREADONLY);
	assert_rc(tkshm_check_multi(TKSHM_MULTI_ALL, dims, 1, &out, NULL, NULL),
		  TKSHM_EREADONLY);
	assert_int_equal(peek(rw, "x", now).remaining, 5);
	snap(&after, tabs, keys, now);
	assert_same_snapshot("after bad modes", &before, &after);

	/* The boundaries that are valid: n = TKSHM_MULTI_MAX, a key of
	 * TKSHM_KEY_MAX bytes, each and binding NULL. */
	for (int i = 0; i < TKSHM_MULTI_MAX; i++)
		dims[i] = dim(tabs[i % 3], many[i], 1);
	dims[0].key = longkey;
	dims[0].key_len = TKSHM_KEY_MAX;
	assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, dims, TKSHM_MULTI_MAX,
				       now, &out, NULL, NULL),
		  TKSHM_OK);
	assert_true(out.allowed);
	assert_rc(tkshm_peek_at(t.a, longkey, TKSHM_KEY_MAX, now, &out),
		  TKSHM_OK);
	assert_int_equal(out.remaining, 4);
	for (int i = 1; i < TKSHM_MULTI_MAX; i++)
		assert_int_equal(peek(tabs[i % 3], many[i], now).remaining,
				 i % 3 == 0 ? 4 :
				 i % 3 == 1 ? 1 :
					      3);
	/* The clock form works too (a fresh key admits at any now). */
	dims[0] = dim(rw, "clock", 1);
	assert_rc(tkshm_check_multi(TKSHM_MULTI_ALL, dims, 1, &out, NULL, NULL),
		  TKSHM_OK);
	assert_true(out.allowed);
	assert_int_equal(out.remaining, 4);

	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * EFULL during commits: the commits made are given back (tkshm.h)
 * ---------------------------------------------------------------------- */

/* A table of 8 slots is two buckets, and every key's window is all of
 * them; with on_full REFUSE, 8 live keys make any new key TKSHM_EFULL. */
static tkshm_table *
full_refusing_table(double now)
{
	tkshm_policy p = tkt_policy("gcra:limit=1,periodMs=1000000,burst=3");
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_decision d;

	o.policy = &p;
	o.slots = 8;
	o.on_full = TKSHM_ON_FULL_REFUSE;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_OK);
	track(t);
	for (int i = 0; i < 8; i++) {
		char key[16];
		snprintf(key, sizeof key, "live-%d", i);
		assert_true(check(t, key, 1, now).allowed);
	}
	assert_rc(tkshm_check_at(t, "newcomer", 8, 1, now, &d), TKSHM_EFULL);
	return t;
}

static void
efull_case(tkshm_multi_mode mode)
{
	const double now = NOW0;
	tkshm_table *full = full_refusing_table(now);
	struct three t = three_open();
	tkshm_dimension dims[3] = { dim(t.a, "before", 1),
				    dim(t.c, "before", 2),
				    dim(full, "newcomer", 1) };
	tkshm_decision out, pa, pc;
	tkshm_stats sa, sc;

	pa = peek(t.a, "before", now);
	pc = peek(t.c, "before", now);
	sa = stats(t.a);
	sc = stats(t.c);
	assert_rc(tkshm_check_multi_at(mode, dims, 3, now, &out, NULL, NULL),
		  TKSHM_EFULL);
	{
		tkshm_decision qa = peek(t.a, "before", now),
			       qc = peek(t.c, "before", now);
		tkshm_stats xa = stats(t.a), xc = stats(t.c);

		tkt_assert_decision("A after EFULL", &qa, &pa);
		tkt_assert_decision("C after EFULL", &qc, &pc);
		/* Both commits were given back, and no decision stands: the
		 * caller heard only the error. */
		assert_int_equal(xa.allowed, sa.allowed);
		assert_int_equal(xc.allowed, sc.allowed);
		assert_int_equal(xa.multi_rollbacks - sa.multi_rollbacks, 1);
		assert_int_equal(xc.multi_rollbacks - sc.multi_rollbacks, 1);
	}
	three_verify(&t);
}

static void
test_efull_all_gives_back(void **state)
{
	(void)state;
	efull_case(TKSHM_MULTI_ALL);
}

/* tkshm.h: "On TKSHM_EFULL/TKSHM_EBUSY during commits, the commits made are
 * given back."  In `any` every check is a commit; the caller gets an error
 * and no decision, so a consumption that stands would be invisible. */
static void
test_efull_any_gives_back(void **state)
{
	(void)state;
	efull_case(TKSHM_MULTI_ANY);
}

/* ------------------------------------------------------------------------
 * The same key twice in one request
 * ---------------------------------------------------------------------- */

static void
test_repeated_key(void **state)
{
	struct three t = three_open();
	const double now = NOW0;
	tkshm_dimension dims[3];
	tkshm_decision each[3], out, before;
	tkshm_stats s0, s1;
	size_t b;

	(void)state;
	/* Remaining 1, twice cost 1 in `all`: the second would be over the
	 * budget, so the request is denied and nothing consumed. */
	for (int i = 0; i < 4; i++)
		assert_true(check(t.a, "dup", 1, now).allowed);
	before = peek(t.a, "dup", now);
	assert_int_equal(before.remaining, 1);
	s0 = stats(t.a);
	dims[0] = dim(t.a, "dup", 1);
	dims[1] = dim(t.a, "dup", 1);
	out = multi(TKSHM_MULTI_ALL, dims, 2, now, each, &b);
	s1 = stats(t.a);
	assert_false(out.allowed);
	{
		tkshm_decision after = peek(t.a, "dup", now);
		tkt_assert_decision("repeated key: nothing consumed", &after,
				    &before);
	}
	/* Sequentially, the first takes the last unit and the second is the
	 * one denied: retry after T = 100 ms. */
	assert_int_equal(b, 1);
	assert_false(each[1].allowed);
	assert_int_equal(each[1].retry_after_ms, 100);
	/* Decided in order before anything was committed: one denial, no
	 * commit to give back. */
	assert_int_equal(s1.allowed - s0.allowed, 0);
	assert_int_equal(s1.denied - s0.denied, 1);
	assert_int_equal(s1.multi_rollbacks - s0.multi_rollbacks, 0);
	/* The budget is intact: exactly one more admission. */
	assert_true(check(t.a, "dup", 1, now).allowed);
	assert_false(check(t.a, "dup", 1, now).allowed);

	/* Room for all: 1 + 1 + 2 of C's 4, each sees the ones before it, the
	 * last binds (0 left). */
	dims[0] = dim(t.c, "dup", 1);
	dims[1] = dim(t.c, "dup", 1);
	dims[2] = dim(t.c, "dup", 2);
	out = multi(TKSHM_MULTI_ALL, dims, 3, now, each, &b);
	assert_true(out.allowed);
	assert_int_equal(each[0].remaining, 3);
	assert_int_equal(each[1].remaining, 2);
	assert_int_equal(each[2].remaining, 0);
	assert_int_equal(b, 2);
	assert_int_equal(peek(t.c, "dup", now).remaining, 0);

	/* `any`: the first takes the last unit, the second is denied. */
	for (int i = 0; i < 4; i++)
		assert_true(check(t.a, "dup-any", 1, now).allowed);
	dims[0] = dim(t.a, "dup-any", 1);
	dims[1] = dim(t.a, "dup-any", 1);
	out = multi(TKSHM_MULTI_ANY, dims, 2, now, each, &b);
	assert_true(out.allowed);
	assert_int_equal(b, 0);
	assert_false(each[1].allowed);
	assert_int_equal(peek(t.a, "dup-any", now).remaining, 0);
	three_verify(&t);
}

/* ------------------------------------------------------------------------
 * tk_table_refund, driven directly (a race cannot be forced in one thread)
 * ---------------------------------------------------------------------- */

static tkshm_decision
commit(tkshm_table *t, const char *key, double cost, double now,
       struct tk_commit *c)
{
	tkshm_decision d;

	memset(c, 0, sizeof *c);
	assert_rc(tk_table_check(t, key, strlen(key), cost, now, &d, c),
		  TKSHM_OK);
	return d;
}

/* How many cost-1 checks a key admits at `now` (consuming them). */
static int
drain(tkshm_table *t, const char *key, double now)
{
	int n = 0;

	while (check(t, key, 1, now).allowed)
		n++;
	return n;
}

static void
assert_peeks_equal(const char *what, tkshm_table *t, const char *key,
		   const tkshm_decision *want, const double *nows, int n)
{
	for (int i = 0; i < n; i++) {
		tkshm_decision p = peek(t, key, nows[i]);
		char w[128];
		snprintf(w, sizeof w, "%s (peek at now + %g)", what,
			 nows[i] - nows[0]);
		tkt_assert_decision(w, &p, &want[i]);
	}
}

/* Admit, refund: the state is exactly what it was, for a fresh key and for
 * one with history, at the instant of the check and later. */
static void
test_refund_exact(void **state)
{
	tkshm_table *t = anon(SPEC_A, 64);
	const double now = NOW0;
	const double nows[4] = { now, now + 50, now + 333.5, now + 10000 };
	static const double costs[] = { 1, 0.5, 2.5, 5 };
	tkshm_decision want[4];
	struct tk_commit c;
	tkshm_stats s0, s1;

	(void)state;
	for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
		char key[32];

		/* Fresh key. */
		snprintf(key, sizeof key, "fresh-%zu", k);
		for (int i = 0; i < 4; i++)
			want[i] = peek(t, key, nows[i]);
		s0 = stats(t);
		assert_true(commit(t, key, costs[k], now, &c).allowed);
		assert_false(c.prev_present);
		assert_rc(tk_table_refund(t, &c, costs[k], now), TKSHM_OK);
		s1 = stats(t);
		assert_int_equal(s1.multi_rollbacks - s0.multi_rollbacks, 1);
		assert_peeks_equal("fresh key refunded", t, key, want, nows, 4);
		assert_int_equal(drain(t, key, now), 5);

		/* A key with history (in debt, then partly drained). */
		snprintf(key, sizeof key, "old-%zu", k);
		check(t, key, 2, now - 150);
		if (costs[k] <= 3.5) {
			for (int i = 0; i < 4; i++)
				want[i] = peek(t, key, nows[i]);
			assert_true(commit(t, key, costs[k], now, &c).allowed);
			assert_true(c.prev_present);
			assert_rc(tk_table_refund(t, &c, costs[k], now),
				  TKSHM_OK);
			assert_peeks_equal("old key refunded", t, key, want,
					   nows, 4);
			/* 2 taken at now-150 leave 0.5 in flight at now:
			 * floor(4.5) = 4 more. */
			assert_int_equal(drain(t, key, now), 4);
		}
	}
	verify_clean(t);
}

/* GCRA's window bound: over any closed interval of length `span` a key
 * admits at most burst + span / T units. */
static void
assert_window_bound(const char *what, double admitted, double burst,
		    double span, double T)
{
	if (admitted > burst + span / T)
		fail_msg("%s: %g units admitted within %g ms, GCRA allows at "
			 "most burst + span/T = %g",
			 what, admitted, span, burst + span / T);
}

/* Admit (a), another admission on the key (b), refund a.  The state has
 * moved, so the refund is the conservative one: the key must hold b's
 * consumption (and its history) with a given back "never more than a":
 *   - at the refund instant it is never roomier than the model in which a
 *     never happened, and short of it by less than one whole unit (the
 *     conservative rounding is a few ulps);
 *   - half a millisecond later (times here are x.5, TATs too, so no unit
 *     boundary lies within an ulp) it decides exactly as the model;
 *   - from there, the key never admits more than burst in all. */
static void
test_refund_after_other_admission(void **state)
{
	tkshm_table *t = anon(SPEC_A, 64);
	const double now = NOW0 + 0.5;
	static const double ab[][2] = {
		{ 1, 1 },     { 2, 1 }, { 1, 3 }, { 1.5, 2.5 },
		{ 0.5, 0.5 }, { 3, 1 }, { 4, 1 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof ab / sizeof ab[0]; k++) {
		const double a = ab[k][0], b = ab[k][1];

		for (int history = 0; history < 2; history++) {
			char key[32], what[96];
			struct tk_commit c;
			struct model m = model_a();
			tkshm_decision mid, after, later, want;
			int more;

			if (history && a + b > 4.4)
				continue; /* would not fit after the history */
			snprintf(key, sizeof key, "ab-%zu-%d", k, history);
			snprintf(what, sizeof what, "a=%g b=%g history %d", a,
				 b, history);
			if (history) {
				/* 1 unit taken 40 ms ago: 0.6 in flight. */
				check(t, key, 1, now - 40);
				model_check(&m, now - 40, 1);
			}
			assert_true(commit(t, key, a, now, &c).allowed);
			assert_true(check(t, key, b, now).allowed);
			mid = peek(t, key, now);
			assert_rc(tk_table_refund(t, &c, a, now), TKSHM_OK);
			after = peek(t, key, now);
			later = peek(t, key, now + 0.5);
			/* The model: only b (and the history) was consumed. */
			model_check(&m, now, b);
			want = model_peek(&m, now);
			if (after.remaining > want.remaining ||
			    after.remaining < want.remaining - 1)
				fail_msg("%s: remaining %lld after the refund, "
					 "want %lld (or one less)",
					 what, (long long)after.remaining,
					 (long long)want.remaining);
			/* Up by never more than a (in whole units). */
			assert_true(after.remaining - mid.remaining <=
				    (int64_t)ceil(a));
			want = model_peek(&m, now + 0.5);
			tkt_assert_decision(what, &later, &want);
			more = drain(t, key, now);
			assert_window_bound(what,
					    b + more + (history ? 0.6 : 0), 5,
					    0, 100);
		}
	}
	verify_clean(t);
}

/* Two commits refunded last-first (each refund finds the state its commit
 * wrote: exact) and first-first (each finds the state moved: conservative).
 * Either way back to the start: exactly, or within the conservative
 * rounding (never roomier, and equal half a millisecond later). */
static void
test_refund_two_commits_any_order(void **state)
{
	tkshm_table *t = anon(SPEC_B, 64);
	const double now = NOW0;

	(void)state;
	for (int order = 0; order < 2; order++) {
		char key[16];
		struct tk_commit c1, c2;
		tkshm_decision before, after, later, fresh_later;
		tkshm_stats s0, s1;

		snprintf(key, sizeof key, "two-%d", order);
		before = peek(t, key, now);
		fresh_later = peek(t, key, now + 0.5);
		assert_true(commit(t, key, 1, now, &c1).allowed);
		assert_true(commit(t, key, 1, now, &c2).allowed);
		assert_false(check(t, key, 1, now).allowed);
		s0 = stats(t);
		if (order) {
			assert_rc(tk_table_refund(t, &c1, 1, now), TKSHM_OK);
			assert_rc(tk_table_refund(t, &c2, 1, now), TKSHM_OK);
		} else {
			assert_rc(tk_table_refund(t, &c2, 1, now), TKSHM_OK);
			assert_rc(tk_table_refund(t, &c1, 1, now), TKSHM_OK);
		}
		s1 = stats(t);
		assert_int_equal(s1.multi_rollbacks - s0.multi_rollbacks, 2);
		after = peek(t, key, now);
		later = peek(t, key, now + 0.5);
		if (order == 0) {
			tkt_assert_decision("exact refunds", &after, &before);
			assert_int_equal(drain(t, key, now), 2);
		} else {
			assert_true(after.remaining <= before.remaining &&
				    after.remaining >= before.remaining - 1);
			tkt_assert_decision("conservative refunds, 0.5 ms on",
					    &later, &fresh_later);
			assert_int_equal(drain(t, key, now + 0.5), 2);
		}
	}
	verify_clean(t);
}

/* The window of the two tests below: about half of A's T. */
#define SPAN 50.5

/* Refund after tkshm_reset: the key was forgotten, there is nothing to give
 * back: a no-op. */
static void
test_refund_after_reset_is_noop(void **state)
{
	tkshm_table *t = anon(SPEC_A, 64);
	const double now = NOW0;
	struct tk_commit c;
	tkshm_decision fresh = peek(t, "r", now), after;
	tkshm_stats s0, s1;

	(void)state;
	assert_true(commit(t, "r", 2, now, &c).allowed);
	assert_rc(tkshm_reset(t, "r", 1), TKSHM_OK);
	s0 = stats(t);
	assert_rc(tk_table_refund(t, &c, 2, now), TKSHM_OK);
	s1 = stats(t);
	after = peek(t, "r", now);
	tkt_assert_decision("refund after reset", &after, &fresh);
	assert_int_equal(s1.multi_rollbacks, s0.multi_rollbacks);
	assert_int_equal(drain(t, "r", now), 5);
	verify_clean(t);
}

/* The same, but somebody checked the key again after the reset, before the
 * refund (in `all`: process X commits this dimension, the key is reset, Y
 * is admitted on it, X's next dimension loses a race and X gives back).
 * What X's commit consumed was forgotten by the reset; giving it back again
 * erases Y's admission, and the key admits more than GCRA allows after the
 * reset.  Same cost (Y's new state is bit-identical to the one the commit
 * wrote, so the "exact" restore applies) and other costs (conservative). */
static void
test_refund_after_reset_and_new_admission(void **state)
{
	tkshm_table *t = anon(SPEC_A, 64);
	const double now = NOW0;
	static const double costs[][2] = { { 1, 1 }, { 2, 1 }, { 1, 2 } };

	(void)state;
	for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
		char key[16], what[160];
		struct tk_commit c;
		tkshm_decision after;
		int more;

		snprintf(key, sizeof key, "rr-%zu", k);
		assert_true(commit(t, key, costs[k][0], now, &c).allowed);
		assert_rc(tkshm_reset(t, key, strlen(key)), TKSHM_OK);
		assert_true(check(t, key, costs[k][1], now).allowed);
		assert_rc(tk_table_refund(t, &c, costs[k][0], now), TKSHM_OK);
		/* About half a unit later, from the reset on (not exactly
		 * half: 0.5 ms more keeps the ulps of rounding out of the
		 * way). */
		after = peek(t, key, now + SPAN);
		more = drain(t, key, now + SPAN);
		snprintf(what, sizeof what,
			 "commit cost %g, reset, check cost %g at the same "
			 "now, refund; then peek remaining %lld at now + %g "
			 "(want %lld) and %d admitted",
			 costs[k][0], costs[k][1], (long long)after.remaining,
			 SPAN,
			 (long long)floor((500 - (100 * costs[k][1] - SPAN)) /
					  100),
			 more);
		assert_window_bound(what, costs[k][1] + more, 5, SPAN, 100);
	}
}

/* Commit at now0; the commit's consumption drains (fully or partly);
 * somebody is admitted on the key at a later now1; then the commit is given
 * back (as `all` does when a later dimension loses a race while this
 * process was descheduled between its commits).  What the commit took has
 * been (partly) returned by time already, so giving back all of it again
 * takes the newcomer's consumption: GCRA's window bound breaks. */
static void
test_refund_after_time_passed(void **state)
{
	tkshm_table *t = anon(SPEC_A, 64);
	const double now0 = NOW0;
	static const struct {
		double cost, later;
	} cases[] = {
		{ 1, 1000 }, { 1, 100 }, { 2, 5000 }, { 3, 250 }, { 1, 50 },
	};

	(void)state;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char key[16], what[200];
		struct tk_commit c;
		struct model m = model_a();
		const double now1 = now0 + cases[k].later, now2 = now1 + SPAN;
		tkshm_decision after, want;
		int more;

		snprintf(key, sizeof key, "tp-%zu", k);
		assert_true(commit(t, key, cases[k].cost, now0, &c).allowed);
		assert_true(check(t, key, 1, now1).allowed);
		assert_rc(tk_table_refund(t, &c, cases[k].cost, now1),
			  TKSHM_OK);
		/* As if the commit had never been: only the check at now1. */
		model_check(&m, now1, 1);
		want = model_peek(&m, now2);
		after = peek(t, key, now2);
		more = drain(t, key, now2);
		snprintf(what, sizeof what,
			 "commit cost %g at now0, check cost 1 at now1 = now0 "
			 "+ %g, refund; at now1 + %g: remaining %lld (want "
			 "%lld), %d admitted",
			 cases[k].cost, cases[k].later, SPAN,
			 (long long)after.remaining, (long long)want.remaining,
			 more);
		assert_window_bound(what, 1 + more, 5, SPAN, 100);
		if (after.remaining > want.remaining)
			fail_msg("%s: roomier than without the commit", what);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_all_one_denier_consumes_nothing,
					  close_tables),
		cmocka_unit_test_teardown(test_all_two_deniers, close_tables),
		cmocka_unit_test_teardown(test_all_admits_consumes_everywhere,
					  close_tables),
		cmocka_unit_test_teardown(test_all_admits_hand_computed,
					  close_tables),
		cmocka_unit_test_teardown(test_any_consumes_only_admitters,
					  close_tables),
		cmocka_unit_test_teardown(test_binding_hand_computed,
					  close_tables),
		cmocka_unit_test_teardown(test_random_against_model,
					  close_tables),
		cmocka_unit_test_teardown(test_bad_arguments, close_tables),
		cmocka_unit_test_teardown(test_efull_all_gives_back,
					  close_tables),
		cmocka_unit_test_teardown(test_efull_any_gives_back,
					  close_tables),
		cmocka_unit_test_teardown(test_repeated_key, close_tables),
		cmocka_unit_test_teardown(test_refund_exact, close_tables),
		cmocka_unit_test_teardown(test_refund_after_other_admission,
					  close_tables),
		cmocka_unit_test_teardown(test_refund_two_commits_any_order,
					  close_tables),
		cmocka_unit_test_teardown(test_refund_after_reset_is_noop,
					  close_tables),
		cmocka_unit_test_teardown(
			test_refund_after_reset_and_new_admission,
			close_tables),
		cmocka_unit_test_teardown(test_refund_after_time_passed,
					  close_tables),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
