/*
 * test_locale_numbers.c - numbers in policy strings and in the Redis
 * scripts' arguments and replies do not depend on the process's locale.
 *
 * The attack: a program that sets a locale whose decimal point is a comma
 * (setlocale(LC_ALL, "de_DE.UTF-8") in a PHP script, Python's
 * locale.setlocale(locale.LC_ALL, "") on a German host).  strtod and %g
 * then follow it: "gcra:limit=2.5,periodMs=1000" was refused as "not a
 * number", tkshm_policy_format wrote "periodMs=1000,5" (which no parser
 * reads back), a strict check sent its now as "1764000000000,25" to a
 * Lua script that refused it, and a GCRA TAT Redis returned as
 * "1764000000000.5" decoded as an absent key.
 *
 * The locale: an installed one with a ',' decimal point, else one built
 * with localedef into the test's directory (LOCPATH); the test is skipped
 * only when neither is possible.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "algorithms/algorithm.h"
#include "base/words.h"
#ifdef TKSHM_HAVE_REDIS
#include <hiredis/hiredis.h>
#include "redis/state_codec.h"
#endif

static int
setup(void **state)
{
	(void)state;
	return tkt_comma_locale() ? 0 : -1;
}

static int
teardown(void **state)
{
	setlocale(LC_ALL, "C");
	return tkt_teardown(state);
}

/* Decimal numbers parse as the grammar says, in any locale. */
static void
test_parse_decimals(void **state)
{
	tkshm_policy p;
	char err[256] = "";

	(void)state;
	assert_rc(tkshm_policy_parse("gcra:limit=2.5,periodMs=1000", &p, err,
				     sizeof err),
		  TKSHM_OK);
	assert_true(p.u.gcra.limit == 2.5);
	assert_rc(tkshm_policy_parse("fixedWindow:limit=2.5,windowMs=1.5e3", &p,
				     err, sizeof err),
		  TKSHM_OK);
	assert_true(p.u.fixed_window.limit == 2.5);
	assert_true(p.u.fixed_window.window_ms == 1500);
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000;mode=lease,"
				     "leaseMs=1500.25",
				     &p, err, sizeof err),
		  TKSHM_OK);
	assert_true(p.global.lease_ms == 1500.25);
	/* The comma still separates options only. */
	assert_rc(tkshm_policy_parse("gcra:limit=0,5,periodMs=1000", &p, err,
				     sizeof err),
		  TKSHM_EPOLICY);
}

/* The formatter writes '.', and what it writes parses back. */
static void
test_format_round_trip(void **state)
{
	tkshm_policy p, q;
	char buf[TKSHM_POLICY_MAX], err[256] = "";

	(void)state;
	assert_rc(tkshm_policy_parse("gcra:limit=10,periodMs=1000.5;mode=lease,"
				     "leaseMs=1500.25",
				     &p, err, sizeof err),
		  TKSHM_OK);
	assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
	if (!strstr(buf, "periodMs=1000.5,") || !strstr(buf, "leaseMs=1500.25"))
		fail_msg("formatted as \"%s\"", buf);
	assert_rc(tkshm_policy_parse(buf, &q, err, sizeof err), TKSHM_OK);
	assert_true(tkshm_policy_equal(&p, &q));
}

#ifdef TKSHM_HAVE_REDIS
/* A script argument is written with '.', and a state Redis returns with
 * '.' is read as the number it is. */
static void
test_redis_numbers(void **state)
{
	char buf[TK_ARG_F64_LEN];
	char tat[] = "1764000000000.5";
	redisReply r = { .type = REDIS_REPLY_STRING,
			 .str = tat,
			 .len = sizeof tat - 1 };
	const redisReply *elems[] = { &r };
	tkshm_policy p = tkt_policy("gcra:limit=10,periodMs=1000");
	struct tk_algo a;
	uint64_t words[TK_ALGO_MAX_WORDS];
	bool present = false;

	(void)state;
	assert_int_equal(tk_arg_f64(buf, sizeof buf, 1764000000000.25), 16);
	assert_string_equal(buf, "1764000000000.25");
	assert_rc(tk_algo_init(&a, &p, NULL, 0), TKSHM_OK);
	assert_rc(tk_state_from_reply(&a, elems, 1, words, &present), TKSHM_OK);
	assert_true(present);
	assert_true(tk_word_f64(words[0]) == 1764000000000.5);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_decimals),
		cmocka_unit_test(test_format_round_trip),
#ifdef TKSHM_HAVE_REDIS
		cmocka_unit_test(test_redis_numbers),
#endif
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
