/*
 * test_redis_faults.c - a Redis that answers, but not with an answer
 * (issue 18, items 4 and 5, and item 8's hostile fields).
 *
 * A scripted server (support/fake_redis.h) answers every script with an
 * error reply (BUSY, LOADING, OOM, ERR, MOVED, NOSCRIPT for ever), a
 * reply of the wrong type, a decision whose fields no algorithm makes
 * (a negative remaining or retryAfter), a byte every 40 ms, or a header
 * announcing 2^31 elements or a 100 MB string.  Each is a Redis fault:
 * the check is decided by the table's failure policy (a fail-closed
 * table never admits), the breaker counts it and opens, and the check
 * ends within its command timeout, allocating a small bounded amount.
 * A real redis-server busy in a script (-BUSY) is decided the same way,
 * and a lease agent whose leases all fail counts and reports it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/agent.h"
#include "fake_redis.h"
#include "redis_server.h"
#include "test_support.h"
#include "tkshm.h"
#include "tkshm_redis.h"

#define GCRA "gcra:limit=5,periodMs=1000,burst=5"

/* A check of `t` that Redis did not decide: TKSHM_OK, the failure
 * policy's decision (flagged), `allowed` as that policy says. */
static void
expect_fallback(const char *what, tkshm_table *t, bool allowed)
{
	tkshm_decision d;
	int rc = tkshm_check(t, "k", 1, 1, &d);

	if (rc != TKSHM_OK)
		fail_msg("%s: the check failed with %s instead of applying "
			 "the failure policy",
			 what, tkshm_error_name(rc));
	if (d.allowed != allowed || !(d.flags & TKSHM_DECISION_FALLBACK))
		fail_msg("%s: allowed %d flags %u (want allowed %d, decided "
			 "by the failure policy)",
			 what, d.allowed, d.flags, allowed);
}

/* ------------------------------------------------------------------------
 * Item 4 and item 8: every reply that is not an answer is a fault
 * ---------------------------------------------------------------------- */

struct bad_reply {
	const char *name, *bytes;
};

static const struct bad_reply bad_replies[] = {
	{ "BUSY", "-BUSY Redis is busy running a script. You can only call "
		  "SCRIPT KILL or SHUTDOWN NOSAVE.\r\n" },
	{ "LOADING", "-LOADING Redis is loading the dataset in memory\r\n" },
	{ "OOM", "-OOM command not allowed when used memory > "
		 "'maxmemory'.\r\n" },
	{ "ERR", "-ERR Error running script\r\n" },
	{ "MOVED", "-MOVED 3999 127.0.0.1:6381\r\n" },
	{ "NOSCRIPT for ever", "-NOSCRIPT No matching script.\r\n" },
	{ "an integer", ":1\r\n" },
	{ "a string", "$2\r\nok\r\n" },
	{ "a status", "+OK\r\n" },
	{ "a nil", "$-1\r\n" },
	{ "an empty array", "*0\r\n" },
	{ "a short array", "*3\r\n:1\r\n:5\r\n:4\r\n" },
	{ "strings for integers",
	  "*6\r\n$1\r\n1\r\n$1\r\n5\r\n$1\r\n4\r\n$1\r\n0\r\n$1\r\n0\r\n"
	  "$1\r\n0\r\n" },
	/* Item 8: fields out of range. */
	{ "a negative remaining",
	  "*6\r\n:1\r\n:5\r\n:-3\r\n:1000\r\n:0\r\n:1000\r\n" },
	{ "a negative retryAfter",
	  "*6\r\n:0\r\n:5\r\n:0\r\n:1000\r\n:-5000\r\n:1000\r\n" },
	{ "allowed 2", "*6\r\n:2\r\n:5\r\n:4\r\n:1000\r\n:0\r\n:1000\r\n" },
	{ "remaining above limit",
	  "*6\r\n:1\r\n:5\r\n:99\r\n:1000\r\n:0\r\n:1000\r\n" },
	{ "another limit",
	  "*6\r\n:1\r\n:500\r\n:4\r\n:1000\r\n:0\r\n:1000\r\n" },
	{ "an admission with a retryAfter",
	  "*6\r\n:1\r\n:5\r\n:4\r\n:1000\r\n:7\r\n:1000\r\n" },
	{ "a negative now", "*6\r\n:1\r\n:5\r\n:4\r\n:1000\r\n:0\r\n:-1\r\n" },
	{ "a state that is not one",
	  "*7\r\n:1\r\n:5\r\n:4\r\n:1000\r\n:0\r\n:1000\r\n*1\r\n:1\r\n" },
};

/* Each bad reply, to a fail-closed table: denied by the policy at
 * every check, counted, and the breaker opens (2 failures). */
static void
test_bad_replies_fail_closed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_replies / sizeof bad_replies[0];
	     i++) {
		const struct bad_reply *b = &bad_replies[i];
		struct tkt_fake f;
		tkshm_redis *r;
		tkshm_table *t;
		tkshm_stats st;

		tkt_fake_start(&f, b->bytes, strlen(b->bytes), 0, 0);
		r = tkt_strict_connect(f.port, true, 500);
		t = tkt_strict_table(GCRA ";mode=strict,failure=fail-closed",
				     r);
		for (int n = 0; n < 3; n++)
			expect_fallback(b->name, t, false);
		assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
		if (st.global.redis_errors < 2 || st.global.breaker_opens < 1)
			fail_msg("%s: %llu Redis errors, %llu openings of the "
				 "breaker (want >= 2 and >= 1)",
				 b->name,
				 (unsigned long long)st.global.redis_errors,
				 (unsigned long long)st.global.breaker_opens);
		assert_int_equal(st.allowed, 0);
		tkshm_close(t);
		tkshm_redis_close(r);
		tkt_fake_stop(&f);
	}
}

/* The policy decides both ways: fail-open admits, flagged. */
static void
test_bad_reply_fail_open(void **state)
{
	static const char busy[] = "-BUSY Redis is busy\r\n";
	struct tkt_fake f;
	tkshm_redis *r;
	tkshm_table *t;

	(void)state;
	tkt_fake_start(&f, busy, sizeof busy - 1, 0, 0);
	r = tkt_strict_connect(f.port, true, 500);
	t = tkt_strict_table(GCRA ";mode=strict,failure=fail-open", r);
	for (int n = 0; n < 3; n++)
		expect_fallback("fail-open", t, true);
	tkshm_close(t);
	tkshm_redis_close(r);
	tkt_fake_stop(&f);
}

/* Siblings: the shaper's reservation and a multi-dimensional check of
 * fail-closed tables. */
static void
test_reserve_and_multi_fail_closed(void **state)
{
	static const char err[] = "-LOADING Redis is loading\r\n";
	/* A multi check's layout (6 + 5 per dimension), the first
	 * dimension's remaining negative; no reservation's layout. */
	static const char neg[] =
		"*16\r\n:1\r\n:5\r\n:4\r\n:1000\r\n:0\r\n:1000\r\n"
		":1\r\n:5\r\n:-4\r\n:1000\r\n:0\r\n"
		":1\r\n:5\r\n:4\r\n:1000\r\n:0\r\n";
	const char *replies[2] = { err, neg };

	(void)state;
	for (int i = 0; i < 2; i++) {
		struct tkt_fake f;
		tkshm_redis *r;
		tkshm_table *s, *a, *b;
		tkshm_reservation res;
		tkshm_dimension dims[2];
		tkshm_decision d, each[2];

		tkt_fake_start(&f, replies[i], strlen(replies[i]), 0, 0);
		r = tkt_strict_connect(f.port, true, 500);
		s = tkt_strict_table(
			"leakyBucket:ratePerSec=10,maxQueueMs=1000;"
			"mode=strict,failure=fail-closed",
			r);
		a = tkt_strict_table(GCRA ";mode=strict,failure=fail-closed,"
					  "prefix=a",
				     r);
		b = tkt_strict_table("fixedWindow:limit=5,windowMs=1000;mode="
				     "strict,failure=fail-closed,prefix=b",
				     r);
		assert_rc(tkshm_reserve(s, "k", 1, 1, &res), TKSHM_OK);
		assert_false(res.accepted);
		dims[0] = (tkshm_dimension){ a, "k", 1, 1 };
		dims[1] = (tkshm_dimension){ b, "k", 1, 1 };
		assert_rc(tkshm_check_multi(TKSHM_MULTI_ALL, dims, 2, &d, each,
					    NULL),
			  TKSHM_OK);
		assert_false(d.allowed);
		assert_true(each[0].flags & TKSHM_DECISION_FALLBACK);
		tkshm_close(s);
		tkshm_close(a);
		tkshm_close(b);
		tkshm_redis_close(r);
		tkt_fake_stop(&f);
	}
}

/* ------------------------------------------------------------------------
 * Item 5: bounded in time and memory
 * ---------------------------------------------------------------------- */

static long
minor_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/* One check of a fail-closed table against `f`, with a 50 ms command
 * timeout: denied by the policy, within 0.5 s (ten timeouts: a loaded
 * machine), touching fewer than `faults` new pages (the sanitizers
 * touch more than a plain build: 1,125 at most under ASan). */
static void
bounded_check(const char *what, const struct tkt_fake *f, long faults)
{
	tkshm_redis *r = tkt_strict_connect(f->port, true, 50);
	tkshm_table *t =
		tkt_strict_table(GCRA ";mode=strict,failure=fail-closed", r);
	double t0;
	long pf0;

	/* Table and connection made: only the check is measured. */
	t0 = tkt_seconds();
	pf0 = minor_faults();
	expect_fallback(what, t, false);
	t0 = tkt_seconds() - t0;
	pf0 = minor_faults() - pf0;
	fprintf(stderr, "%s: %.3f s, %ld page faults\n", what, t0, pf0);
	if (t0 > 0.5 || pf0 > faults)
		fail_msg("%s: the check took %.3f s and %ld page faults "
			 "(command timeout 50 ms; want < 0.5 s, < %ld)",
			 what, t0, pf0, faults);
	tkshm_close(t);
	tkshm_redis_close(r);
}

/* A status reply of `len` bytes ("+aaa...\r\n"). */
static void
trickle_reply(char *reply, size_t len)
{
	reply[0] = '+';
	memset(reply + 1, 'a', len - 3);
	memcpy(reply + len - 2, "\r\n", 2);
}

/* A reply one byte every 40 ms: each read is within the timeout, the
 * reply is not. */
static void
test_trickle_is_bounded(void **state)
{
	char reply[400];
	struct tkt_fake f;

	(void)state;
	trickle_reply(reply, sizeof reply);
	tkt_fake_start(&f, reply, sizeof reply, 40, 0);
	bounded_check("a byte every 40 ms", &f, 5000);
	tkt_fake_stop(&f);
	/* Every gap well within the timeout, however the machine is
	 * loaded: 4 s of reply. */
	tkt_fake_start(&f, reply, sizeof reply, 10, 0);
	bounded_check("a byte every 10 ms", &f, 5000);
	tkt_fake_stop(&f);
}

/* Headers that announce more than any reply holds. */
static void
test_huge_headers_are_bounded(void **state)
{
	static const char arr[] = "*2147483647\r\n";
	static const char nested[] = "*1\r\n*1\r\n*2000000000\r\n";
	static const char bulk[] = "$100000000\r\n";
	struct tkt_fake f;

	(void)state;
	tkt_fake_start(&f, arr, sizeof arr - 1, 0, 0);
	bounded_check("*2147483647", &f, 5000);
	tkt_fake_stop(&f);
	tkt_fake_start(&f, nested, sizeof nested - 1, 0, 0);
	bounded_check("a nested *2000000000", &f, 5000);
	tkt_fake_stop(&f);
	/* A 100 MB string sent as fast as it is taken. */
	tkt_fake_start(&f, bulk, sizeof bulk - 1, 0, 100000000);
	bounded_check("$100000000 and its bytes", &f, 5000);
	tkt_fake_stop(&f);
}

/* ------------------------------------------------------------------------
 * -BUSY from a real redis-server
 * ---------------------------------------------------------------------- */

static void
test_busy_real_server(void **state)
{
	static const char *const args[] = { "--busy-reply-threshold", "10",
					    NULL };
	struct tkt_redis srv;
	redisContext *busy;
	redisReply *y;
	tkshm_redis *r;
	tkshm_table *t;
	tkshm_decision d;
	tkshm_stats st;
	int done = 0;

	(void)state;
	memset(&srv, 0, sizeof srv);
	tkt_redis_start_args(&srv, args);
	r = tkt_strict_connect(srv.port, true, 500);
	t = tkt_strict_table(GCRA ";mode=strict,failure=fail-closed", r);
	/* Connected and answered once. */
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.flags & TKSHM_DECISION_FALLBACK, 0);
	/* A script that loops until SCRIPT KILL, sent and not waited
	 * for; past busy-reply-threshold every command gets -BUSY. */
	busy = tkt_redis_connect(&srv);
	assert_int_equal(
		redisAppendCommand(busy, "EVAL %s 0", "while true do end"),
		REDIS_OK);
	while (!done)
		assert_int_equal(redisBufferWrite(busy, &done), REDIS_OK);
	for (;;) {
		y = tkt_redis_cmd(&srv, "PING", NULL);
		if (y->type == REDIS_REPLY_ERROR &&
		    strncmp(y->str, "BUSY", 4) == 0)
			break;
		freeReplyObject(y);
		usleep(10000);
	}
	freeReplyObject(y);
	for (int n = 0; n < 3; n++)
		expect_fallback("-BUSY", t, false);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_true(st.global.redis_errors >= 2);
	assert_true(st.global.breaker_opens >= 1);
	freeReplyObject(tkt_redis_cmd(&srv, "SCRIPT", "KILL", NULL));
	redisFree(busy);
	tkshm_close(t);
	tkshm_redis_close(r);
	tkt_redis_stop(&srv);
}

/* ------------------------------------------------------------------------
 * The lease agent
 * ---------------------------------------------------------------------- */

/* A fail-closed fixedWindow lease table at tkt_path(name), prefix
 * `name`, its limit and window in `limit_window` ("limit=100,windowMs=
 * 1000"), served by a new agent of Redis at `port`. */
static struct tk_agent *
lease_agent(const char *name, const char *limit_window, int port,
	    double timeout_ms, double open_ms, tkshm_table **t)
{
	const char *path = tkt_path(name);
	struct tk_agent_conf c;
	struct tk_agent *a;
	char spec[256], err[256] = "";

	snprintf(spec, sizeof spec,
		 "fixedWindow:%s;mode=lease,failure=fail-closed,prefix=%s",
		 limit_window, name);
	unlink(path);
	*t = tkt_file(path, spec, 256);
	tk_agent_conf_init(&c);
	c.redis.port = port;
	c.redis.command_timeout_ms = timeout_ms;
	c.redis.connect_timeout_ms = timeout_ms;
	c.breaker_open_ms = open_ms;
	assert_rc(tk_agent_new(&c, &a, err, sizeof err), TKSHM_OK);
	assert_rc(tk_agent_add_table(a, path, err, sizeof err), TKSHM_OK);
	return a;
}

/* Every script of the agent answers -BUSY: each round counts it in the
 * table's redis_errors and says Redis is down, so the workers apply the
 * failure policy (fail-closed: denied, flagged). */
static void
test_agent_counts_error_replies(void **state)
{
	static const char busy[] = "-BUSY Redis is busy running a script\r\n";
	struct tk_agent *a;
	struct tkt_fake f;
	tkshm_table *t;
	tkshm_decision d;
	tkshm_stats st;

	(void)state;
	tkt_fake_start(&f, busy, sizeof busy - 1, 0, 0);
	a = lease_agent("lease", "limit=100,windowMs=1000", f.port, 500, 1, &t);
	for (int i = 0; i < 5; i++) {
		/* Demand, so the agent has leases to ask for. */
		(void)tkshm_check(t, "k", 1, 1, &d);
		tk_agent_round(a, tkshm_now_ms(), NULL);
		usleep(2000);
	}
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	if (st.global.redis_errors == 0 || st.global.redis_up)
		fail_msg("the agent's scripts all failed, yet the table shows "
			 "%llu Redis errors and Redis %s",
			 (unsigned long long)st.global.redis_errors,
			 st.global.redis_up ? "up" : "down");
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_true(d.flags & TKSHM_DECISION_FALLBACK);
	tk_agent_free(a);
	tkshm_close(t);
	tkt_fake_stop(&f);
}

/* The agent's pipelined leases and heartbeats against a server that
 * trickles: each round ends within its command timeout (50 ms) too. */
static void
test_agent_trickle_is_bounded(void **state)
{
	char reply[400];
	struct tk_agent *a;
	struct tkt_fake f;
	tkshm_table *t;
	tkshm_decision d;

	(void)state;
	trickle_reply(reply, sizeof reply);
	tkt_fake_start(&f, reply, sizeof reply, 10, 0);
	a = lease_agent("lease3", "limit=100,windowMs=1000", f.port, 50, 1, &t);
	for (int i = 0; i < 3; i++) {
		double t0;

		(void)tkshm_check(t, "k", 1, 1, &d);
		usleep(2000); /* past the breaker's period */
		t0 = tkt_seconds();
		tk_agent_round(a, tkshm_now_ms(), NULL);
		t0 = tkt_seconds() - t0;
		if (t0 > 0.5)
			fail_msg("round %d took %.3f s (command timeout "
				 "50 ms)",
				 i, t0);
	}
	tk_agent_free(a);
	tkshm_close(t);
	tkt_fake_stop(&f);
}

/* A fault of one key (its Redis key holds a string: WRONGTYPE) is a
 * fault all the same, but the key is not asked for again before the
 * breaker's period, so the other keys keep their leases and the rounds
 * do not fail one after the other. */
static void
test_agent_one_bad_key(void **state)
{
	struct tk_agent_round tot;
	struct tk_agent *a;
	struct tkt_redis srv;
	tkshm_table *t;
	tkshm_decision d;
	tkshm_stats st;
	double end;

	(void)state;
	memset(&srv, 0, sizeof srv);
	tkt_redis_start(&srv);
	freeReplyObject(tkt_redis_cmd(&srv, "SET", "lease2:bad", "x", NULL));
	a = lease_agent("lease2", "limit=100000,windowMs=60000", srv.port, 1000,
			400, &t);
	end = tkt_seconds() + 0.3;
	while (tkt_seconds() < end) {
		(void)tkshm_check(t, "good", 4, 1, &d);
		(void)tkshm_check(t, "bad", 3, 1, &d);
		tk_agent_round(a, tkshm_now_ms(), NULL);
		usleep(1000);
	}
	tk_agent_totals(a, &tot);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	if (st.global.redis_errors < 1 || st.global.redis_errors > 2 ||
	    tot.units_granted < 1)
		fail_msg("one bad key in 0.3 s (breaker period 0.4 s): %llu "
			 "Redis errors, %llu units granted",
			 (unsigned long long)st.global.redis_errors,
			 (unsigned long long)tot.units_granted);
	tk_agent_free(a);
	tkshm_close(t);
	tkt_redis_stop(&srv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_replies_fail_closed),
		cmocka_unit_test(test_bad_reply_fail_open),
		cmocka_unit_test(test_reserve_and_multi_fail_closed),
		cmocka_unit_test(test_trickle_is_bounded),
		cmocka_unit_test(test_huge_headers_are_bounded),
		cmocka_unit_test(test_busy_real_server),
		cmocka_unit_test(test_agent_counts_error_replies),
		cmocka_unit_test(test_agent_trickle_is_bounded),
		cmocka_unit_test(test_agent_one_bad_key),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
