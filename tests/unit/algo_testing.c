/*
 * algo_testing.c - the shared plumbing of the pure algorithm tests
 * (algo_testing.h): golden-vector reading and replay, the checked
 * check/peek around one key, and the field-by-field comparisons.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo_testing.h"

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

/* A required member, or the test fails: a renamed field must not turn into
 * a silently skipped suite. */
cJSON *
gv_member(const cJSON *obj, const char *name)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!m)
		fail_msg("golden vectors: member \"%s\" missing", name);
	return m;
}

double
gv_number(const cJSON *obj, const char *name)
{
	cJSON *m = gv_member(obj, name);

	if (!cJSON_IsNumber(m))
		fail_msg("golden vectors: \"%s\" is not a number", name);
	return m->valuedouble;
}

/* An integral decision field (every one in the file is below 2^53). */
int64_t
gv_integer(const cJSON *obj, const char *name)
{
	double v = gv_number(obj, name);

	if (v != floor(v) || fabs(v) > 9007199254740992.0)
		fail_msg("golden vectors: \"%s\" = %.17g is not an integer",
			 name, v);
	return (int64_t)v;
}

/* The expected decision of one op, with `offset` added to resetAt. */
tkshm_decision
gv_expect(const cJSON *op, double offset)
{
	const cJSON *exp = gv_member(op, "expect");
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	if (!cJSON_IsBool(gv_member(exp, "allowed")))
		fail_msg("golden vectors: \"allowed\" is not a boolean");
	d.allowed = cJSON_IsTrue(gv_member(exp, "allowed"));
	d.limit = gv_integer(exp, "limit");
	d.remaining = gv_integer(exp, "remaining");
	d.reset_at = gv_integer(exp, "resetAt") + (int64_t)offset;
	d.retry_after_ms = gv_integer(exp, "retryAfterMs");
	return d;
}

/* True for a rateLimit suite of strategy kind `kind`. */
bool
gv_is_ratelimit(const cJSON *suite, const char *kind)
{
	const cJSON *prim =
		cJSON_GetObjectItemCaseSensitive(suite, "primitive");
	const cJSON *strat =
		cJSON_GetObjectItemCaseSensitive(suite, "strategy");
	const cJSON *k =
		strat ? cJSON_GetObjectItemCaseSensitive(strat, "kind") : NULL;

	return cJSON_IsString(prim) &&
	       strcmp(prim->valuestring, "rateLimit") == 0 &&
	       cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0;
}

/* True for a suite whose primitive is `prim`. */
bool
gv_is_primitive(const cJSON *suite, const char *prim)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(suite, "primitive");

	return cJSON_IsString(p) && strcmp(p->valuestring, prim) == 0;
}

unsigned
algo_gv_replay(const cJSON *golden, const struct algo_gv_replay *r,
	       double offset, unsigned *suites)
{
	const cJSON *suite;
	unsigned nsuites = 0, ops = 0;

	cJSON_ArrayForEach(suite, gv_member(golden, "suites"))
	{
		const cJSON *op;
		const char *name;
		struct algo_impl im;
		uint64_t st[ALGO_MAX_WORDS];
		bool present = false;
		unsigned n = 0;

		if (r->kind ? !gv_is_ratelimit(suite, r->kind) :
			      !gv_is_primitive(suite, r->prim))
			continue;
		name = gv_member(suite, "name")->valuestring;
		im = r->start(suite);
		memset(st, 0, sizeof st);
		cJSON_ArrayForEach(op, gv_member(suite, "ops"))
		{
			double now = gv_number(op, "now") + offset;
			double cost = gv_number(op, r->cost);
			tkshm_decision want = gv_expect(op, offset);
			tkshm_decision got;
			char what[160];

			if (r->cost_valid)
				assert_true(r->cost_valid(cost));
			got = algo_key_check(&im, &present, st, now, cost);
			snprintf(what, sizeof what, "%s op %u (offset %g)",
				 name, n, offset);
			algo_assert_decision(what, &got, &want);
			n++;
		}
		assert_true(n > 0);
		ops += n;
		nsuites++;
	}
	if (suites)
		*suites = nsuites;
	return ops;
}

/* ------------------------------------------------------------------------
 * One key through the code under test
 * ---------------------------------------------------------------------- */

tkshm_decision
algo_key_check(const struct algo_impl *im, bool *present, uint64_t *st,
	       double now, double cost)
{
	uint64_t out[ALGO_MAX_WORDS];
	tkshm_decision d;
	bool ok;

	assert_true(im->words <= ALGO_MAX_WORDS);
	for (unsigned i = 0; i < im->words; i++)
		out[i] = ALGO_UNTOUCHED;
	memset(&d, 0xA5, sizeof d); /* every field must be written */
	ok = im->check(im->a, *present, st, now, cost, out, &d);
	assert_true(ok == d.allowed);
	assert_true(d.remaining >= 0);
	if (ok) {
		assert_true(im->valid(im->a, out));
		algo_assert_real_words(im->what, out, im->words);
		memcpy(st, out, sizeof *out * im->words);
		*present = true;
	} else {
		for (unsigned i = 0; i < im->words; i++)
			assert_true(out[i] == ALGO_UNTOUCHED);
	}
	return d;
}

tkshm_decision
algo_key_peek(const struct algo_impl *im, bool present, const uint64_t *st,
	      double now)
{
	tkshm_decision d;

	memset(&d, 0xA5, sizeof d);
	im->peek(im->a, present, st, now, &d);
	assert_true(d.remaining >= 0);
	return d;
}

int
algo_golden_setup(void **state)
{
	*state = tkt_golden();
	return *state ? 0 : -1;
}

int
algo_golden_teardown(void **state)
{
	cJSON_Delete(*state);
	return 0;
}

/* ------------------------------------------------------------------------
 * Comparisons
 * ---------------------------------------------------------------------- */

/* Fails unless the decision matches on every field (flags included: the
 * pure transitions set none) and remaining is not negative. */
void
algo_assert_decision(const char *what, const tkshm_decision *got,
		     const tkshm_decision *want)
{
	tkt_assert_decision(what, got, want);
	if (got->flags != 0)
		fail_msg("%s: flags %#x, want 0", what, got->flags);
	if (got->remaining < 0)
		fail_msg("%s: remaining %lld is negative", what,
			 (long long)got->remaining);
}

/* Fails unless state word `i` holds exactly the double `want`. */
void
algo_assert_word(const char *what, const uint64_t *st, unsigned i, double want)
{
	if (st[i] != tk_f64_word(want))
		fail_msg("%s: state word %u = %.17g (%#llx), want %.17g "
			 "(%#llx)",
			 what, i, tk_word_f64(st[i]), (unsigned long long)st[i],
			 want, (unsigned long long)tk_f64_word(want));
}

/* A REAL state word never has its top 13 bits all set (I4). */
void
algo_assert_real_words(const char *what, const uint64_t *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if ((st[i] & UINT64_C(0xFFF8000000000000)) ==
		    UINT64_C(0xFFF8000000000000))
			fail_msg("%s: state word %u = %#llx has its top 13 "
				 "bits set",
				 what, i, (unsigned long long)st[i]);
}
