/*
 * test_locale_strict.c - a strict table in a program that set a locale
 * whose decimal point is a comma.
 *
 * The attack: setlocale(LC_ALL, "de_DE.UTF-8") (a PHP script, a Python
 * application), then strict checks on an explicit timeline with a
 * fractional now.  The now went to the Lua script as "1764000000000,25",
 * which it refused; every check was then a Redis fault, and a
 * failure=fail-open table admitted 100 of 100 checks at one instant where
 * the limit is 10 (flag TKSHM_DECISION_FALLBACK).
 */
#include <signal.h>
#include <string.h>

#include "redis_server.h"
#include "test_support.h"
#include "tkshm_redis.h"

#define NOW 1764000000000.25 /* a fraction: written with a decimal point */

static void
test_comma_locale_strict(void **state)
{
	tkshm_redis *r;
	tkshm_table *t;
	int admitted = 0;

	(void)state;
	if (!tkt_comma_locale())
		skip();
	r = tkt_strict_connect(tkt_srv.port, false, 2000);
	t = tkt_strict_table("gcra:limit=10,periodMs=1000;mode=strict,"
			     "failure=fail-open,prefix=loc",
			     r);
	for (int i = 0; i < 100; i++) {
		tkshm_decision d;

		assert_rc(tkshm_check_at(t, "k", 1, 1, NOW, &d), TKSHM_OK);
		if (d.flags & TKSHM_DECISION_FALLBACK)
			fail_msg("check %d fell back on the failure policy", i);
		admitted += d.allowed;
	}
	assert_int_equal(admitted, 10);
	tkshm_close(t);
	tkshm_redis_close(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comma_locale_strict),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, tkt_redis_group_setup,
				      tkt_redis_group_teardown);
}
