/*
 * test_bad_input.c - every kind of bad argument is refused with its own
 * error, and nothing changes.
 *
 * tkshm.h: "Bad input is refused with an error before anything is changed."
 * Each refusal below is followed by a comparison of the table's counters and
 * of a peek of a key with known state, taken before and after.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"

#define SPEC "gcra:limit=10,periodMs=1000,burst=5"
#define NOW  5000.0

/* Every code of enum tkshm_error. */
static const int all_codes[] = {
	TKSHM_OK,	    TKSHM_ENULL,     TKSHM_EINVAL,   TKSHM_EKEYEMPTY,
	TKSHM_EKEYLONG,	    TKSHM_ECOST,     TKSHM_ENOW,     TKSHM_EPOLICY,
	TKSHM_EMISMATCH,    TKSHM_EBADMAGIC, TKSHM_EVERSION, TKSHM_ESIZE,
	TKSHM_ECORRUPT,	    TKSHM_ESYMLINK,  TKSHM_ENOTFILE, TKSHM_EPERM,
	TKSHM_ENOENT,	    TKSHM_EEXIST,    TKSHM_ENOSPC,   TKSHM_ENOMEM,
	TKSHM_ESYSTEM,	    TKSHM_EFULL,     TKSHM_EBUSY,    TKSHM_EREADONLY,
	TKSHM_ENOTSUP,	    TKSHM_EINTR,     TKSHM_ENOTHELD, TKSHM_ENOREDIS,
	TKSHM_EUNAVAILABLE, TKSHM_EREDIS,    TKSHM_ECROSSSLOT,
};
static const char *all_names[] = {
	"TKSHM_OK",	   "TKSHM_ENULL",	 "TKSHM_EINVAL",
	"TKSHM_EKEYEMPTY", "TKSHM_EKEYLONG",	 "TKSHM_ECOST",
	"TKSHM_ENOW",	   "TKSHM_EPOLICY",	 "TKSHM_EMISMATCH",
	"TKSHM_EBADMAGIC", "TKSHM_EVERSION",	 "TKSHM_ESIZE",
	"TKSHM_ECORRUPT",  "TKSHM_ESYMLINK",	 "TKSHM_ENOTFILE",
	"TKSHM_EPERM",	   "TKSHM_ENOENT",	 "TKSHM_EEXIST",
	"TKSHM_ENOSPC",	   "TKSHM_ENOMEM",	 "TKSHM_ESYSTEM",
	"TKSHM_EFULL",	   "TKSHM_EBUSY",	 "TKSHM_EREADONLY",
	"TKSHM_ENOTSUP",   "TKSHM_EINTR",	 "TKSHM_ENOTHELD",
	"TKSHM_ENOREDIS",  "TKSHM_EUNAVAILABLE", "TKSHM_EREDIS",
	"TKSHM_ECROSSSLOT",
};
#define NCODES (sizeof all_codes / sizeof all_codes[0])
_Static_assert(sizeof all_codes / sizeof all_codes[0] ==
		       sizeof all_names / sizeof all_names[0],
	       "one name per code");

/* One table with one key in a known, partly consumed state. */
struct fixture {
	tkshm_table *t;
	tkshm_stats stats;
	tkshm_decision peek;
	char long_key[TKSHM_KEY_MAX + 1];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	tkshm_decision d;

	if (!f)
		return -1;
	f->t = tkt_anon(SPEC, 64);
	memset(f->long_key, 'k', sizeof f->long_key);
	/* Two units of five used: remaining 3, so any consumption shows. */
	if (tkshm_check_at(f->t, "victim", 6, 2, NOW, &d) != TKSHM_OK ||
	    !d.allowed || d.remaining != 3)
		return -1;
	if (tkshm_stats_get(f->t, &f->stats) != TKSHM_OK ||
	    tkshm_peek_at(f->t, "victim", 6, NOW, &f->peek) != TKSHM_OK)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	tkshm_close(f->t);
	free(f);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

/* Nothing changed since setup: counters, the victim's state, the slots. */
static void
assert_unchanged(const struct fixture *f)
{
	tkshm_stats s;
	tkshm_decision p;
	tkshm_usage u;

	assert_rc(tkshm_stats_get(f->t, &s), TKSHM_OK);
	assert_int_equal(s.allowed, f->stats.allowed);
	assert_int_equal(s.denied, f->stats.denied);
	assert_int_equal(s.inserts, f->stats.inserts);
	assert_int_equal(s.reclaims, f->stats.reclaims);
	assert_int_equal(s.evictions, f->stats.evictions);
	assert_int_equal(s.refusals, f->stats.refusals);
	assert_int_equal(s.resets, f->stats.resets);
	assert_int_equal(s.cas_retries, f->stats.cas_retries);
	assert_rc(tkshm_peek_at(f->t, "victim", 6, NOW, &p), TKSHM_OK);
	assert_int_equal(p.allowed, f->peek.allowed);
	assert_int_equal(p.remaining, f->peek.remaining);
	assert_int_equal(p.reset_at, f->peek.reset_at);
	assert_int_equal(p.retry_after_ms, f->peek.retry_after_ms);
	/* Exactly one key in the table: a refused call inserted nothing. */
	assert_rc(tkshm_usage_get(f->t, NOW, &u), TKSHM_OK);
	assert_int_equal(u.live + u.idle + u.placeholders + u.dead, 1);
}

/* ------------------------------------------------------------------------
 * check
 * ---------------------------------------------------------------------- */

static void
test_check_null_pointers(void **state)
{
	struct fixture *f = *state;
	tkshm_decision d;

	assert_rc(tkshm_check_at(NULL, "victim", 6, 1, NOW, &d), TKSHM_ENULL);
	assert_rc(tkshm_check_at(f->t, "victim", 6, 1, NOW, NULL), TKSHM_ENULL);
	assert_rc(tkshm_check_at(f->t, NULL, 6, 1, NOW, &d), TKSHM_ENULL);
	assert_rc(tkshm_check(NULL, "victim", 6, 1, &d), TKSHM_ENULL);
	assert_rc(tkshm_check(f->t, "victim", 6, 1, NULL), TKSHM_ENULL);
	assert_rc(tkshm_check(f->t, NULL, 6, 1, &d), TKSHM_ENULL);
	assert_unchanged(f);
}

static void
test_check_keys(void **state)
{
	struct fixture *f = *state;
	tkshm_decision d;

	assert_rc(tkshm_check_at(f->t, "victim", 0, 1, NOW, &d),
		  TKSHM_EKEYEMPTY);
	assert_rc(tkshm_check_at(f->t, "", 0, 1, NOW, &d), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_check_at(f->t, f->long_key, TKSHM_KEY_MAX + 1, 1, NOW,
				 &d),
		  TKSHM_EKEYLONG);
	assert_rc(tkshm_check_at(f->t, f->long_key, SIZE_MAX, 1, NOW, &d),
		  TKSHM_EKEYLONG);
	assert_unchanged(f);

	/* Exactly TKSHM_KEY_MAX bytes is a key like any other, distinct from
	 * its own prefixes. */
	assert_rc(tkshm_check_at(f->t, f->long_key, TKSHM_KEY_MAX, 5, NOW, &d),
		  TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_rc(tkshm_check_at(f->t, f->long_key, TKSHM_KEY_MAX - 1, 5, NOW,
				 &d),
		  TKSHM_OK);
	assert_true(d.allowed);
	/* Keys are bytes: an embedded NUL is part of the key. */
	assert_rc(tkshm_check_at(f->t, "a\0b", 3, 5, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_check_at(f->t, "a\0c", 3, 5, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);
}

static void
test_check_costs(void **state)
{
	static const double bad[] = {
		NAN,   -NAN,	 -1,	    0,
		-0.0,  INFINITY, -INFINITY, 9007199254740992.0, /* 2^53 */
		1e300, -1e-300,
	};
	struct fixture *f = *state;
	tkshm_decision d;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = tkshm_check_at(f->t, "victim", 6, bad[i], NOW, &d);
		if (rc != TKSHM_ECOST)
			fail_msg("cost %g: %s, wanted TKSHM_ECOST", bad[i],
				 tkshm_error_name(rc));
	}
	assert_unchanged(f);

	/* 2^53 - 1 is the largest cost accepted (and denied: it exceeds the
	 * burst).  The smallest positive double would add nothing to a TAT
	 * (src/algorithms/resolution.h): refused, like a cost of 0. */
	assert_rc(tkshm_check_at(f->t, "victim", 6, TKSHM_COST_MAX, NOW, &d),
		  TKSHM_OK);
	assert_false(d.allowed);
	assert_rc(tkshm_check_at(f->t, "tiny", 4, 4.9406564584124654e-324, NOW,
				 &d),
		  TKSHM_ECOST);
	assert_rc(tkshm_check_at(f->t, "frac", 4, 0.5, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);
}

static void
test_check_nows(void **state)
{
	static const double bad[] = { NAN,	 -NAN,	   -1,	   -1e-300,
				      -INFINITY, INFINITY, -1.7e12 };
	struct fixture *f = *state;
	tkshm_decision d;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = tkshm_check_at(f->t, "victim", 6, 1, bad[i], &d);
		if (rc != TKSHM_ENOW)
			fail_msg("now %g: %s, wanted TKSHM_ENOW", bad[i],
				 tkshm_error_name(rc));
		rc = tkshm_peek_at(f->t, "victim", 6, bad[i], &d);
		if (rc != TKSHM_ENOW)
			fail_msg("peek now %g: %s, wanted TKSHM_ENOW", bad[i],
				 tkshm_error_name(rc));
	}
	assert_unchanged(f);
	/* 0 is a valid time (the golden vectors start there). */
	assert_rc(tkshm_check_at(f->t, "zero", 4, 1, 0, &d), TKSHM_OK);
	assert_true(d.allowed);
}

/* ------------------------------------------------------------------------
 * peek, reset, batches, introspection
 * ---------------------------------------------------------------------- */

static void
test_peek_bad_input(void **state)
{
	struct fixture *f = *state;
	tkshm_decision d;

	assert_rc(tkshm_peek_at(NULL, "victim", 6, NOW, &d), TKSHM_ENULL);
	assert_rc(tkshm_peek_at(f->t, "victim", 6, NOW, NULL), TKSHM_ENULL);
	assert_rc(tkshm_peek_at(f->t, NULL, 6, NOW, &d), TKSHM_ENULL);
	assert_rc(tkshm_peek_at(f->t, "victim", 0, NOW, &d), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_peek_at(f->t, f->long_key, TKSHM_KEY_MAX + 1, NOW, &d),
		  TKSHM_EKEYLONG);
	assert_rc(tkshm_peek(NULL, "victim", 6, &d), TKSHM_ENULL);
	assert_rc(tkshm_peek(f->t, "victim", 6, NULL), TKSHM_ENULL);
	assert_unchanged(f);
}

static void
test_reset_bad_input(void **state)
{
	struct fixture *f = *state;

	assert_rc(tkshm_reset(NULL, "victim", 6), TKSHM_ENULL);
	assert_rc(tkshm_reset(f->t, NULL, 6), TKSHM_ENULL);
	assert_rc(tkshm_reset(f->t, "victim", 0), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_reset(f->t, f->long_key, TKSHM_KEY_MAX + 1),
		  TKSHM_EKEYLONG);
	assert_unchanged(f);
}

static void
test_check_many_bad_input(void **state)
{
	struct fixture *f = *state;
	tkshm_request r[2] = { { "victim", 6, 1 }, { "other", 5, 1 } };
	tkshm_decision out[2];
	size_t done = 5;

	assert_rc(tkshm_check_many_at(NULL, r, 2, NOW, out, &done),
		  TKSHM_ENULL);
	assert_int_equal(done, 0);
	done = 5;
	assert_rc(tkshm_check_many_at(f->t, NULL, 2, NOW, out, &done),
		  TKSHM_ENULL);
	assert_int_equal(done, 0);
	done = 5;
	assert_rc(tkshm_check_many_at(f->t, r, 2, NOW, NULL, &done),
		  TKSHM_ENULL);
	assert_int_equal(done, 0);
	assert_rc(tkshm_check_many_at(f->t, r, 2, -1, out, NULL), TKSHM_ENOW);
	assert_rc(tkshm_check_many(NULL, r, 2, out, NULL), TKSHM_ENULL);
	r[1].cost = NAN;
	assert_rc(tkshm_check_many(f->t, r, 2, out, NULL), TKSHM_ECOST);
	assert_unchanged(f);
}

static void
test_introspection_bad_input(void **state)
{
	struct fixture *f = *state;
	tkshm_stats s;
	tkshm_usage u;
	tkshm_table *t = (tkshm_table *)0x1;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy(SPEC);

	assert_rc(tkshm_stats_get(NULL, &s), TKSHM_ENULL);
	assert_rc(tkshm_stats_get(f->t, NULL), TKSHM_ENULL);
	assert_rc(tkshm_usage_get(NULL, NOW, &u), TKSHM_ENULL);
	assert_rc(tkshm_usage_get(f->t, NOW, NULL), TKSHM_ENULL);
	assert_rc(tkshm_usage_get(f->t, NAN, &u), TKSHM_ENOW);
	assert_rc(tkshm_usage_get(f->t, -1, &u), TKSHM_ENOW);
	assert_rc(tkshm_usage_get(f->t, INFINITY, &u), TKSHM_ENOW);
	assert_rc(tkshm_verify(NULL, NULL, NULL, NULL), TKSHM_ENULL);
	assert_rc(tkshm_close(NULL), TKSHM_OK);

	/* tkshm_open: NULL out, a wrong options size, a bad on_full, an
	 * invalid policy; *out stays as it was. */
	o.policy = &p;
	assert_rc(tkshm_open(NULL, &o, NULL), TKSHM_ENULL);
	o.size = sizeof o - 1;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EINVAL);
	o.size = sizeof o;
	o.on_full = (tkshm_on_full)7;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EINVAL);
	o.on_full = TKSHM_ON_FULL_EVICT;
	p.u.gcra.limit = -1;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EPOLICY);
	/* An anonymous table cannot be read-only, nor made without a
	 * policy. */
	p = tkt_policy(SPEC);
	o.flags = TKSHM_O_CREATE | TKSHM_O_RDONLY;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EINVAL);
	o.flags = TKSHM_O_CREATE;
	o.policy = NULL;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EPOLICY);
	assert_rc(tkshm_open(NULL, NULL, &t), TKSHM_EPOLICY);
	assert_ptr_equal(t, (tkshm_table *)0x1);
	assert_unchanged(f);
}

/* ------------------------------------------------------------------------
 * Error strings
 * ---------------------------------------------------------------------- */

static void
test_error_strings(void **state)
{
	static const int unknown[] = {
		1,	-1,    -30899,		-30930,
		-30999, 30901, -2147483647 - 1, 2147483647
	};

	(void)state;
	for (size_t i = 0; i < NCODES; i++) {
		const char *s = tkshm_strerror(all_codes[i]);
		const char *n = tkshm_error_name(all_codes[i]);

		assert_non_null(s);
		assert_non_null(n);
		assert_true(s[0] != '\0');
		/* The name is the enumerator's own spelling. */
		assert_string_equal(n, all_names[i]);
		assert_string_not_equal(s, "unknown tkshm error");
		for (size_t j = 0; j < i; j++) {
			if (strcmp(s, tkshm_strerror(all_codes[j])) == 0)
				fail_msg("%s and %s share the sentence \"%s\"",
					 all_names[i], all_names[j], s);
			if (all_codes[i] == all_codes[j])
				fail_msg("%s and %s share code %d",
					 all_names[i], all_names[j],
					 all_codes[i]);
		}
		/* Codes are negative (OK is 0) and in the library's band. */
		if (all_codes[i] != TKSHM_OK)
			assert_in_range(-all_codes[i], 30900, 30999);
	}
	for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		const char *s = tkshm_strerror(unknown[i]);
		const char *n = tkshm_error_name(unknown[i]);

		assert_non_null(s);
		assert_string_equal(s, "unknown tkshm error");
		assert_non_null(n);
		assert_true(n[0] != '\0');
		for (size_t j = 0; j < NCODES; j++)
			assert_string_not_equal(n, all_names[j]);
	}
	/* Every code of the band that the library knows is in all_codes:
	 * a code added to the enum (as TKSHM_EINTR and TKSHM_ENOTHELD were)
	 * fails here until this test lists it. */
	for (int c = -30999; c <= -30900; c++) {
		bool listed = false;

		for (size_t j = 0; j < NCODES; j++)
			listed = listed || all_codes[j] == c;
		if (!listed &&
		    strcmp(tkshm_strerror(c), "unknown tkshm error") != 0)
			fail_msg("code %d (%s) is not listed in all_codes", c,
				 tkshm_error_name(c));
	}
	/* The codes are stable: the two added for permits and the shaper. */
	assert_int_equal(TKSHM_EINTR, -30924);
	assert_int_equal(TKSHM_ENOTHELD, -30925);
	/* ... and the three of the Redis tier. */
	assert_int_equal(TKSHM_ENOREDIS, -30926);
	assert_int_equal(TKSHM_EUNAVAILABLE, -30927);
	assert_int_equal(TKSHM_EREDIS, -30928);
	/* ... and Redis Cluster's. */
	assert_int_equal(TKSHM_ECROSSSLOT, -30929);
}

static void
test_versions(void **state)
{
	char want[32];
	tkshm_stats s;
	tkshm_table *t;

	(void)state;
	snprintf(want, sizeof want, "%d.%d.%d", TKSHM_VERSION_MAJOR,
		 TKSHM_VERSION_MINOR, TKSHM_VERSION_PATCH);
	assert_string_equal(tkshm_version(), want);
	assert_true(tkshm_layout_version() >= 1);
	t = tkt_anon(SPEC, 8);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_int_equal(s.layout_version, tkshm_layout_version());
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Read-only handles
 * ---------------------------------------------------------------------- */

static void
test_readonly_handle(void **state)
{
	const char *path = tkt_path("readonly.tk");
	tkshm_table *rw = tkt_file(path, SPEC, 64), *ro = NULL;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_request reqs[2] = { { "k", 1, 1 }, { "j", 1, 1 } };
	tkshm_decision d, prw, pro, out[2];
	tkshm_stats srw, sro, after;
	tkshm_usage u;
	uint64_t problems = 99;
	size_t done = 3;

	(void)state;
	assert_rc(tkshm_check_at(rw, "k", 1, 3, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);

	o.flags = TKSHM_O_RDONLY; /* policy NULL: adopt the stored one */
	assert_rc(tkshm_open(path, &o, &ro), TKSHM_OK);
	assert_rc(tkshm_stats_get(rw, &srw), TKSHM_OK);

	assert_rc(tkshm_check_at(ro, "k", 1, 1, NOW, &d), TKSHM_EREADONLY);
	assert_rc(tkshm_check_at(ro, "new", 3, 1, NOW, &d), TKSHM_EREADONLY);
	assert_rc(tkshm_check(ro, "k", 1, 1, &d), TKSHM_EREADONLY);
	assert_rc(tkshm_check_many_at(ro, reqs, 2, NOW, out, &done),
		  TKSHM_EREADONLY);
	assert_int_equal(done, 0);
	assert_rc(tkshm_reset(ro, "k", 1), TKSHM_EREADONLY);

	/* Reads work and see what the writer wrote. */
	assert_rc(tkshm_peek_at(ro, "k", 1, NOW, &pro), TKSHM_OK);
	assert_rc(tkshm_peek_at(rw, "k", 1, NOW, &prw), TKSHM_OK);
	assert_int_equal(pro.allowed, prw.allowed);
	assert_int_equal(pro.limit, prw.limit);
	assert_int_equal(pro.remaining, prw.remaining);
	assert_int_equal(pro.reset_at, prw.reset_at);
	assert_int_equal(pro.retry_after_ms, prw.retry_after_ms);
	assert_int_equal(pro.remaining, 2);
	assert_rc(tkshm_stats_get(ro, &sro), TKSHM_OK);
	assert_int_equal(sro.allowed, srw.allowed);
	assert_int_equal(sro.inserts, srw.inserts);
	assert_true(tkshm_policy_equal(&sro.policy, &srw.policy));
	assert_rc(tkshm_verify(ro, NULL, NULL, &problems), TKSHM_OK);
	assert_int_equal(problems, 0);
	assert_rc(tkshm_usage_get(ro, NOW, &u), TKSHM_OK);
	assert_int_equal(u.live, 1);

	/* Nothing the refused calls did reached the table. */
	assert_rc(tkshm_stats_get(rw, &after), TKSHM_OK);
	assert_int_equal(after.allowed, srw.allowed);
	assert_int_equal(after.denied, srw.denied);
	assert_int_equal(after.inserts, srw.inserts);
	assert_int_equal(after.resets, srw.resets);
	assert_rc(tkshm_peek_at(rw, "k", 1, NOW, &prw), TKSHM_OK);
	assert_int_equal(prw.remaining, 2);

	/* The writer's later changes show through the read-only mapping. */
	assert_rc(tkshm_check_at(rw, "k", 1, 2, NOW, &d), TKSHM_OK);
	assert_rc(tkshm_peek_at(ro, "k", 1, NOW, &pro), TKSHM_OK);
	assert_int_equal(pro.remaining, 0);
	assert_false(pro.allowed);

	tkshm_close(ro);
	tkshm_close(rw);
	assert_int_equal(unlink(path), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_check_null_pointers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_keys, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_costs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_nows, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_peek_bad_input, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reset_bad_input, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_check_many_bad_input,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_introspection_bad_input,
						setup, teardown),
		cmocka_unit_test(test_error_strings),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_readonly_handle),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
