/*
 * test_multi_repeat.c - tkshm_check_multi_at naming one key more than once
 * (issue 18, item 1).
 *
 * The attack: `all` naming the same key of a fixedWindow, quota or
 * tokenBudget table three times on a fresh window, with a total cost above
 * the limit ({k, cost 2} x 3 at limit 5).  Each dimension alone admits, so
 * `all` committed the first two, the third denied, and the give-backs
 * brought the count to 0: a state the verifier and every later check took
 * for corrupt (TKSHM_ECORRUPT until a reset, which mod_tkshm's default
 * TkshmOnError turned into admissions), after a loop that re-decided and
 * re-committed the same request 64 times, counting each commit in
 * `allowed`.
 *
 * What is required, for every kind a check takes and both modes:
 *   - repeated dimensions decide as the same checks would one after
 *     another on one state (the reference here: tkshm_check_at three times
 *     on a fresh table of the same policy);
 *   - a denied `all` consumes nothing and leaves the key as fresh as it
 *     was, valid for tkshm_verify and for every later check;
 *   - the counters count decisions: one per dimension that stands (a denied
 *     `all` counts its denier, nothing in `allowed`, no rollback);
 *   - a give-back that brings a count to 0 leaves a valid state;
 *   - the same key on two tables is two keys; two handles of one segment
 *     are one table.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "shm/table.h"

#define NOW0 1.7e12 /* no window boundary within the steps below */
#define KEY  "k"

/* One policy per kind a check takes, each of limit 5, and a cost that the
 * third of three checks denies (a token budget admits while some budget
 * is left before a debit, so its cost is 3). */
struct kind {
	const char *spec;
	double cost;
};

static const struct kind kinds[] = {
	{ "fixedWindow:limit=5,windowMs=60000", 2 },
	{ "quota:limit=5,resetCadence=calendar-day", 2 },
	{ "quota:limit=5,resetCadence=fixed,periodMs=60000", 2 },
	{ "quota:limit=5,resetCadence=rolling,periodMs=60000,buckets=10", 2 },
	{ "tokenBudget:budget=5,windowMs=60000", 3 },
	{ "gcra:limit=5,periodMs=60000,burst=5", 2 },
	{ "tokenBucket:capacity=5,refillPerSec=1", 2 },
	{ "slidingWindow:limit=5,windowMs=60000", 2 },
	{ "slidingWindowLog:limit=5,windowMs=60000", 2 },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static tkshm_decision
check(tkshm_table *t, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, KEY, strlen(KEY), cost, now, &d), TKSHM_OK);
	return d;
}

static tkshm_decision
peek(tkshm_table *t, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, KEY, strlen(KEY), now, &d), TKSHM_OK);
	return d;
}

static tkshm_stats
stats(tkshm_table *t)
{
	tkshm_stats s;

	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	return s;
}

static void
verify_clean(const char *what, tkshm_table *t)
{
	uint64_t problems = 1;
	int rc = tkshm_verify(t, NULL, NULL, &problems);

	if (rc != TKSHM_OK || problems != 0)
		fail_msg("%s: tkshm_verify = %s, %llu problems", what,
			 tkshm_error_name(rc), (unsigned long long)problems);
}

static void
assert_counted(const char *what, tkshm_table *t, const tkshm_stats *before,
	       uint64_t allowed, uint64_t denied)
{
	tkshm_stats s = stats(t);

	if (s.allowed - before->allowed != allowed ||
	    s.denied - before->denied != denied ||
	    s.multi_rollbacks != before->multi_rollbacks)
		fail_msg("%s: allowed +%llu, denied +%llu, multi_rollbacks "
			 "+%llu; want +%llu, +%llu, +0",
			 what,
			 (unsigned long long)(s.allowed - before->allowed),
			 (unsigned long long)(s.denied - before->denied),
			 (unsigned long long)(s.multi_rollbacks -
					      before->multi_rollbacks),
			 (unsigned long long)allowed,
			 (unsigned long long)denied);
}

/* The decisions of `n` checks of KEY, cost `cost`, one after another at
 * `now` on a fresh table of `spec`: what the repeated dimensions must
 * decide.  `after`, if not NULL: the peek once they are made. */
static void
in_sequence(const char *spec, double cost, unsigned n, double now,
	    tkshm_decision *seq, tkshm_decision *after)
{
	tkshm_table *r = tkt_anon(spec, 64);

	for (unsigned i = 0; i < n; i++)
		seq[i] = check(r, cost, now);
	if (after)
		*after = peek(r, now);
	tkshm_close(r);
}

static void
assert_each(const char *what, const tkshm_decision *got,
	    const tkshm_decision *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char w[256];

		snprintf(w, sizeof w, "%s, dimension %zu", what, i);
		tkt_assert_decision(w, &got[i], &want[i]);
	}
}

/* Every dimension {t, KEY, cost}. */
static void
thrice(tkshm_dimension *dims, tkshm_table *t, double cost)
{
	for (int i = 0; i < 3; i++)
		dims[i] = (tkshm_dimension){ t, KEY, strlen(KEY), cost };
}

/* A multi check of three dimensions that must return TKSHM_OK. */
static tkshm_decision
multi3(const char *what, tkshm_multi_mode mode, const tkshm_dimension *dims,
       double now, tkshm_decision *each, size_t *binding)
{
	tkshm_decision out;
	int rc = tkshm_check_multi_at(mode, dims, 3, now, &out, each, binding);

	if (rc != TKSHM_OK)
		fail_msg("%s: %s of {k, %g} x 3 = %s", what,
			 mode == TKSHM_MULTI_ALL ? "all" : "any", dims[0].cost,
			 tkshm_error_name(rc));
	return out;
}

/* KEY of t decides at `now` as a fresh key of `spec`: nothing consumed. */
static void
assert_fresh(const char *spec, tkshm_table *t, double now)
{
	tkshm_table *r = tkt_anon(spec, 64);
	tkshm_decision want = peek(r, now), got = peek(t, now);

	tkshm_close(r);
	tkt_assert_decision(spec, &got, &want);
}

/* Three checks of KEY in t decide as `seq` (three checks of a fresh key):
 * the key has its whole limit. */
static void
assert_whole(const char *spec, tkshm_table *t, double cost, double now,
	     const tkshm_decision *seq)
{
	for (int i = 0; i < 3; i++) {
		tkshm_decision d = check(t, cost, now);
		tkt_assert_decision(spec, &d, &seq[i]);
	}
	verify_clean(spec, t);
}

/* Runs one case for every kind. */
static void
each_kind(void (*run)(const char *spec, double cost, size_t k))
{
	for (size_t k = 0; k < NKINDS; k++)
		run(kinds[k].spec, kinds[k].cost, k);
}

/* `all` with {KEY, cost} three times on a fresh key: denied like the third
 * of three checks in a row, nothing consumed, the key valid and whole. */
static void
all_denied(const char *spec, double c, size_t k)
{
	tkshm_table *t = tkt_anon(spec, 64);
	tkshm_dimension dims[3];
	tkshm_decision seq[3], each[3], out;
	tkshm_stats s0 = stats(t);
	size_t b = 99;

	(void)k;
	in_sequence(spec, c, 3, NOW0, seq, NULL);
	/* The case is the issue's: two admit, the third denies. */
	assert_true(seq[0].allowed && seq[1].allowed && !seq[2].allowed);
	thrice(dims, t, c);
	out = multi3(spec, TKSHM_MULTI_ALL, dims, NOW0, each, &b);
	assert_false(out.allowed);
	assert_int_equal(b, 2);
	assert_each(spec, each, seq, 3);
	assert_counted(spec, t, &s0, 0, 1);
	verify_clean(spec, t);
	assert_fresh(spec, t, NOW0);
	assert_whole(spec, t, c, NOW0, seq);
	tkshm_close(t);
}

static void
test_all_denied_consumes_nothing(void **state)
{
	(void)state;
	each_kind(all_denied);
}

/* The loop: the same denied request twenty times (three cost-1
 * dimensions on limit 2, the mod_tkshm case; here with the kinds' costs)
 * admits none, counts twenty denials, and leaves the key fresh. */
static void
all_denied_20(const char *spec, double c, size_t k)
{
	tkshm_table *t = tkt_anon(spec, 64);
	tkshm_dimension dims[3];
	tkshm_stats s0 = stats(t);
	int admitted = 0;

	(void)k;
	thrice(dims, t, c);
	for (int i = 0; i < 20; i++)
		admitted += multi3(spec, TKSHM_MULTI_ALL, dims, NOW0 + i, NULL,
				   NULL)
				    .allowed;
	assert_int_equal(admitted, 0);
	assert_counted(spec, t, &s0, 0, 20);
	assert_fresh(spec, t, NOW0 + 19);
	verify_clean(spec, t);
	tkshm_close(t);
}

static void
test_all_denied_repeatedly(void **state)
{
	(void)state;
	each_kind(all_denied_20);
}

/* Room for all three (cost 1): each sees the ones before it, all are
 * consumed, one `allowed` each. */
static void
all_admitted(const char *spec, double c, size_t k)
{
	tkshm_table *t = tkt_anon(spec, 64);
	tkshm_dimension dims[3];
	tkshm_decision seq[3], each[3], out, after, p;
	tkshm_stats s0 = stats(t);
	size_t b = 99;

	(void)c;
	(void)k;
	in_sequence(spec, 1, 3, NOW0, seq, &after);
	thrice(dims, t, 1);
	out = multi3(spec, TKSHM_MULTI_ALL, dims, NOW0, each, &b);
	assert_true(out.allowed);
	assert_each(spec, each, seq, 3);
	assert_int_equal(b, 2); /* the least remaining */
	assert_counted(spec, t, &s0, 3, 0);
	p = peek(t, NOW0);
	tkt_assert_decision(spec, &p, &after);
	verify_clean(spec, t);
	tkshm_close(t);
}

static void
test_all_admitted_in_sequence(void **state)
{
	(void)state;
	each_kind(all_admitted);
}

/* `any`: the dimensions run in order on one state, each admitted one
 * consumed; the third is denied. */
static void
any_in_sequence(const char *spec, double c, size_t k)
{
	tkshm_table *t = tkt_anon(spec, 64);
	tkshm_dimension dims[3];
	tkshm_decision seq[3], each[3], out, after, p;
	tkshm_stats s0 = stats(t);

	(void)k;
	in_sequence(spec, c, 3, NOW0, seq, &after);
	thrice(dims, t, c);
	out = multi3(spec, TKSHM_MULTI_ANY, dims, NOW0, each, NULL);
	assert_true(out.allowed);
	assert_each(spec, each, seq, 3);
	assert_counted(spec, t, &s0, 2, 1);
	p = peek(t, NOW0);
	tkt_assert_decision(spec, &p, &after);
	verify_clean(spec, t);
	tkshm_close(t);
}

static void
test_any_in_sequence(void **state)
{
	(void)state;
	each_kind(any_in_sequence);
}

/* A repeated key next to another table's denier: `all` decides every
 * dimension on the stored states first, and that denial ends it (the
 * Redis script's rule): both repeats report the fresh key's decision. */
static void
test_all_other_denier(void **state)
{
	const char *spec = kinds[0].spec;
	tkshm_table *t = tkt_anon(spec, 64);
	tkshm_table *u = tkt_anon("fixedWindow:limit=1,windowMs=60000", 64);
	tkshm_dimension dims[3];
	tkshm_decision seq[1], each[3], out;
	size_t b = 99;

	(void)state;
	in_sequence(spec, 2, 1, NOW0, seq, NULL);
	thrice(dims, t, 2);
	dims[2].table = u;
	out = multi3(spec, TKSHM_MULTI_ALL, dims, NOW0, each, &b);
	assert_false(out.allowed);
	assert_int_equal(b, 2);
	tkt_assert_decision("first", &each[0], &seq[0]);
	tkt_assert_decision("second", &each[1], &seq[0]);
	assert_fresh(spec, t, NOW0);
	verify_clean("t", t);
	tkshm_close(t);
	tkshm_close(u);
}

/* The same key on two tables is two keys: no repeat. */
static void
two_tables(const char *spec, double c, size_t k)
{
	tkshm_table *t1 = tkt_anon(spec, 64), *t2 = tkt_anon(spec, 64);
	tkshm_dimension dims[3];
	tkshm_decision seq[2], each[3], out;

	(void)k;
	in_sequence(spec, c, 2, NOW0, seq, NULL);
	thrice(dims, t1, c);
	dims[1].table = t2;
	out = multi3(spec, TKSHM_MULTI_ALL, dims, NOW0, each, NULL);
	assert_true(out.allowed);
	tkt_assert_decision(spec, &each[0], &seq[0]);
	tkt_assert_decision(spec, &each[1], &seq[0]);
	tkt_assert_decision(spec, &each[2], &seq[1]);
	verify_clean(spec, t1);
	verify_clean(spec, t2);
	tkshm_close(t1);
	tkshm_close(t2);
}

static void
test_two_tables_are_two_keys(void **state)
{
	(void)state;
	each_kind(two_tables);
}

/* Two handles of one table file name one key: a repeat. */
static void
two_handles(const char *spec, double c, size_t k)
{
	char name[32];
	tkshm_table *h1, *h2;
	tkshm_dimension dims[3];
	tkshm_decision seq[3], each[3], out;
	tkshm_stats s0;

	snprintf(name, sizeof name, "two-handles-%zu.tk", k);
	h1 = tkt_file(tkt_path(name), spec, 64);
	h2 = tkt_file(tkt_path(name), spec, 64);
	s0 = stats(h1);
	in_sequence(spec, c, 3, NOW0, seq, NULL);
	thrice(dims, h1, c);
	dims[1].table = h2;
	out = multi3(spec, TKSHM_MULTI_ALL, dims, NOW0, each, NULL);
	assert_false(out.allowed);
	assert_each(spec, each, seq, 3);
	assert_counted(spec, h1, &s0, 0, 1);
	assert_fresh(spec, h2, NOW0);
	verify_clean(spec, h1);
	tkshm_close(h1);
	tkshm_close(h2);
}

static void
test_two_handles_one_table(void **state)
{
	(void)state;
	each_kind(two_handles);
}

/* A give-back that brings a count to 0: two commits, the later given back
 * exactly, the earlier then by what the algorithm proves is still owed
 * (the key moved since it).  The state left is valid everywhere: verify,
 * the operator's entry, peeks and checks, which decide as a fresh key. */
static void
give_back_to_zero(const char *spec, double c, size_t k)
{
	tkshm_table *t = tkt_anon(spec, 64);
	struct tk_commit c1, c2;
	tkshm_decision d, seq[3];
	tkshm_entry e;
	bool gcra = strncmp(spec, "gcra:", 5) == 0;

	(void)k;
	memset(&c1, 0, sizeof c1);
	memset(&c2, 0, sizeof c2);
	assert_rc(tk_table_check(t, KEY, 1, c, NOW0, &d, &c1), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tk_table_check(t, KEY, 1, c, NOW0, &d, &c2), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tk_table_refund(t, &c2, c, NOW0), TKSHM_OK);
	assert_rc(tk_table_refund(t, &c1, c, NOW0), TKSHM_OK);
	verify_clean(spec, t);
	/* GCRA's one word is restored exactly both times: absent. */
	assert_rc(tkshm_entry_get_at(t, KEY, 1, NOW0, &e),
		  gcra ? TKSHM_ENOENT : TKSHM_OK);
	if (!gcra && !e.state_valid)
		fail_msg("%s: the entry's state is not valid", spec);
	assert_fresh(spec, t, NOW0);
	in_sequence(spec, c, 3, NOW0, seq, NULL);
	assert_whole(spec, t, c, NOW0, seq);
	tkshm_close(t);
}

static void
test_give_back_to_zero_is_valid(void **state)
{
	(void)state;
	each_kind(give_back_to_zero);
}

static int
teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_denied_consumes_nothing),
		cmocka_unit_test(test_all_denied_repeatedly),
		cmocka_unit_test(test_all_admitted_in_sequence),
		cmocka_unit_test(test_any_in_sequence),
		cmocka_unit_test(test_all_other_denier),
		cmocka_unit_test(test_two_tables_are_two_keys),
		cmocka_unit_test(test_two_handles_one_table),
		cmocka_unit_test(test_give_back_to_zero_is_valid),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
