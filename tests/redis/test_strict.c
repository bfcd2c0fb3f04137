/*
 * test_strict.c - strict mode through the public API, against a private
 * redis-server: the same decisions as the shared-memory path for the same
 * timeline, the exact negative cache, the failure policies and the
 * circuit breaker, recovery, NOSCRIPT, fork.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis/neg_cache.h"
#include "shm/atomic.h"
#include "redis_server.h"
#include "test_support.h"

#define NOW 1.7e12 /* an explicit timeline (the safe shares use the clock) */
#include "tkshm.h"
#include "tkshm_redis.h"

static tkshm_redis *
connect_to(int port, bool server_time, double timeout_ms)
{
	return tkt_strict_connect(port, server_time, timeout_ms);
}

static tkshm_table *
strict_table(const char *spec, tkshm_redis *r)
{
	return tkt_strict_table(spec, r);
}

/* ------------------------------------------------------------------------
 * Same decisions as the shared-memory path
 * ---------------------------------------------------------------------- */

static uint64_t rng_state = 42;
static uint64_t
rng(void)
{
	return tkt_splitmix(&rng_state);
}

static void
test_same_decisions(void **state)
{
	static const char *specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"gcra:limit=3,periodMs=1000",
		"tokenBucket:capacity=7,refillPerSec=3",
		"fixedWindow:limit=5,windowMs=1000",
		"slidingWindow:limit=10,windowMs=1000,buckets=3",
		"slidingWindowLog:limit=5,windowMs=700",
		"quota:limit=20,resetCadence=calendar-day,offsetMinutes=330",
		"quota:limit=6,resetCadence=fixed,periodMs=1000,anchor=250",
		"quota:limit=9,resetCadence=rolling,periodMs=1000,buckets=4",
	};
	tkshm_redis *r = connect_to(tkt_srv.port, false, 2000);
	uint64_t cached = 0, compared = 0;

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		char spec[256];

		snprintf(spec, sizeof spec, "%s;mode=strict,prefix=same%zu",
			 specs[s], s);
		for (int tl = 0; tl < 12; tl++) {
			tkshm_table *g = strict_table(spec, r);
			tkshm_table *l = tkt_anon(specs[s], 1024);
			double now = 1.7e12 + tl * 37;
			char key[32];
			tkshm_stats st;

			snprintf(key, sizeof key, "k%d", tl);
			for (int i = 0; i < 40; i++) {
				tkshm_decision dg, dl;
				double cost = 1 + (double)(rng() % 4);

				now += (double)(rng() % 400);
				assert_rc(tkshm_check_at(l, key, strlen(key),
							 cost, now, &dl),
					  TKSHM_OK);
				assert_rc(tkshm_check_at(g, key, strlen(key),
							 cost, now, &dg),
					  TKSHM_OK);
				tkt_redis_persist_all(&tkt_srv);
				compared++;
				if (dg.flags & TKSHM_DECISION_CACHED) {
					/* A denial from the cache states
					 * bounds (neg_cache.h): never a
					 * retry or reset earlier than the
					 * table's, remaining 0. */
					cached++;
					assert_false(dg.allowed);
					assert_false(dl.allowed);
					assert_int_equal(dg.limit, dl.limit);
					assert_int_equal(dg.remaining, 0);
					assert_true(dg.reset_at >= dl.reset_at);
					assert_true(dg.retry_after_ms >=
						    dl.retry_after_ms);
					continue;
				}
				tkt_assert_decision(spec, &dg, &dl);
			}
			assert_rc(tkshm_stats_get(g, &st), TKSHM_OK);
			assert_int_equal(st.global.fallback_allowed +
						 st.global.fallback_denied,
					 0);
			tkshm_close(g);
			tkshm_close(l);
		}
	}
	printf("same decisions: %llu compared, %llu from the cache\n",
	       (unsigned long long)compared, (unsigned long long)cached);
	assert_true(cached > 0);
	tkshm_redis_close(r);
}

/* Multi all/any on Redis decides as the shared-memory multi, also with a
 * key named more than once (shapes 0 and 1: the same table and key). */
static void
test_multi_same(void **state)
{
	static const int shapes[3][3] = { { 1, 0, 1 },
					  { 1, 1, 1 },
					  { 0, 1, 2 } };
	tkshm_redis *r = connect_to(tkt_srv.port, false, 2000);
	const char *s1 = "gcra:limit=5,periodMs=1000,burst=3";
	const char *s2 = "fixedWindow:limit=4,windowMs=500";
	const char *s3 = "tokenBucket:capacity=6,refillPerSec=2";

	(void)state;
	for (int run = 0; run < 6; run++) {
		const int mode = run % 2, *shape = shapes[run / 2];
		tkshm_table *g[3] = {
			strict_table("gcra:limit=5,periodMs=1000,burst=3;"
				     "mode=strict,prefix=mg",
				     r),
			strict_table("fixedWindow:limit=4,windowMs=500;"
				     "mode=strict,prefix=mf",
				     r),
			strict_table("tokenBucket:capacity=6,refillPerSec=2;"
				     "mode=strict,prefix=mt",
				     r),
		};
		tkshm_table *l[3] = { tkt_anon(s1, 64), tkt_anon(s2, 64),
				      tkt_anon(s3, 64) };
		tkshm_multi_mode m = mode ? TKSHM_MULTI_ANY : TKSHM_MULTI_ALL;
		double now = 1.7e12 + 5;

		tkt_redis_flushall(&tkt_srv);
		for (int i = 0; i < 300; i++) {
			tkshm_dimension dg[3], dl[3];
			tkshm_decision og, ol, eg[3], el[3];
			size_t bg, bl;

			now += (double)(rng() % 300);
			for (int d = 0; d < 3; d++) {
				double cost = 1 + (double)(rng() % 3);

				dg[d] = (tkshm_dimension){ g[shape[d]], "u1", 2,
							   cost };
				dl[d] = (tkshm_dimension){ l[shape[d]], "u1", 2,
							   cost };
			}
			assert_rc(tkshm_check_multi_at(m, dl, 3, now, &ol, el,
						       &bl),
				  TKSHM_OK);
			assert_rc(tkshm_check_multi_at(m, dg, 3, now, &og, eg,
						       &bg),
				  TKSHM_OK);
			tkt_redis_persist_all(&tkt_srv);
			tkt_assert_decision("multi", &og, &ol);
			assert_int_equal(bg, bl);
			for (int d = 0; d < 3; d++)
				tkt_assert_decision("multi dim", &eg[d],
						    &el[d]);
		}
		for (int d = 0; d < 3; d++) {
			tkshm_stats sg, sl;

			/* Both count the decisions that stand, once each. */
			assert_rc(tkshm_stats_get(g[d], &sg), TKSHM_OK);
			assert_rc(tkshm_stats_get(l[d], &sl), TKSHM_OK);
			assert_int_equal(sg.allowed, sl.allowed);
			assert_int_equal(sg.denied, sl.denied);
			tkshm_close(g[d]);
			tkshm_close(l[d]);
		}
	}
	/* The keys are ThrottleKit's "name:raw" with the raw key as its
	 * hash tag. */
	assert_int_equal(tkt_redis_int(&tkt_srv, "EXISTS", "mg:{u1}", NULL), 1);
	tkshm_redis_close(r);
}

/* ------------------------------------------------------------------------
 * The negative cache never denies what Redis would admit
 * ---------------------------------------------------------------------- */

/* Two hosts (two tables: two caches) write one Redis key on one explicit
 * timeline: every cached denial is one Redis, asked at the same `now`
 * (read-back peek of cost 1), makes too; and it never admits. */
static void
test_cache_exact_two_hosts(void **state)
{
	static const char *specs[] = {
		"gcra:limit=20,periodMs=1000,burst=4;mode=strict,prefix=ce",
		"slidingWindowLog:limit=4,windowMs=500;mode=strict,prefix=ce",
		"tokenBucket:capacity=4,refillPerSec=8;mode=strict,prefix=ce",
		"fixedWindow:limit=4,windowMs=300;mode=strict,prefix=ce",
		"slidingWindow:limit=6,windowMs=600,buckets=3;mode=strict",
	};
	tkshm_redis *r = connect_to(tkt_srv.port, false, 2000);
	uint64_t cached = 0, total = 0;

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		tkshm_table *a = strict_table(specs[s], r);
		tkshm_table *b = strict_table(specs[s], r);
		double now = 1.7e12 + 11;

		tkt_redis_flushall(&tkt_srv);
		for (int i = 0; i < 800; i++) {
			tkshm_table *t = rng() % 2 ? a : b;
			tkshm_decision d, p;

			now += (double)(rng() % 40);
			assert_rc(tkshm_check_at(t, "x", 1, 1, now, &d),
				  TKSHM_OK);
			tkt_redis_persist_all(&tkt_srv);
			total++;
			if (!(d.flags & TKSHM_DECISION_CACHED))
				continue;
			cached++;
			assert_false(d.allowed);
			assert_rc(tkshm_peek_at(t, "x", 1, now, &p), TKSHM_OK);
			if (p.allowed)
				fail_msg("%s: the cache denied while Redis "
					 "admits (remaining %lld)",
					 specs[s], (long long)p.remaining);
		}
		tkshm_close(a);
		tkshm_close(b);
	}
	printf("two hosts: %llu checks, %llu denied from the cache\n",
	       (unsigned long long)total, (unsigned long long)cached);
	assert_true(cached > 0);
	tkshm_redis_close(r);
}

/* On the server's clock, the cache ages a state to an upper bound of
 * Redis's time: the estimate made after reading Redis's TIME is never
 * behind it.  And a cached denial's fields are computed from a lower
 * bound (the offset measured on receipt): one made before reading TIME
 * is never ahead of it. */
static void
test_cache_clock_bound(void **state)
{
	tkshm_redis *r = connect_to(tkt_srv.port, true, 2000);
	tkshm_table *t = strict_table(
		"gcra:limit=1000,periodMs=1000;mode=strict,prefix=cb", r);
	tkshm_decision d;
	double lowest = 1e9;

	(void)state;
	assert_true(isinf(tk_cache_now(t, 0))); /* no reply yet: no bound */
	for (int i = 0; i < 200; i++) {
		redisReply *y;
		double redis_ms, est, low;

		assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
		low = tkshm_now_ms() +
		      tk_word_f64(tk_load_relaxed(&t->global->offset_low));
		y = tkt_redis_cmd(&tkt_srv, "TIME", NULL);
		assert_int_equal(y->type, REDIS_REPLY_ARRAY);
		redis_ms = atof(y->element[0]->str) * 1000 +
			   floor(atof(y->element[1]->str) / 1000);
		freeReplyObject(y);
		est = tk_cache_now(t, 0);
		if (est - redis_ms < lowest)
			lowest = est - redis_ms;
		if (est < redis_ms)
			fail_msg("estimate %.3f is behind Redis's %.3f", est,
				 redis_ms);
		/* Redis's script floors TIME to the ms, as here. */
		if (floor(low) > redis_ms)
			fail_msg("lower bound %.3f is ahead of Redis's %.0f",
				 low, redis_ms);
	}
	printf("cache clock: estimate ahead of Redis by at least %.3f ms\n",
	       lowest);
	tkshm_close(t);
	tkshm_redis_close(r);
}

/* A denied key is admitted again once Redis would admit it (the cache
 * ages with the server's clock). */
static void
test_cache_recovers(void **state)
{
	tkshm_redis *r = connect_to(tkt_srv.port, true, 2000);
	tkshm_table *t = strict_table(
		"gcra:limit=10,periodMs=500,burst=2;mode=strict,prefix=cr", r);
	tkshm_decision d;
	tkshm_stats st;
	int denied = 0;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	for (int i = 0; i < 50; i++) {
		assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
		denied += !d.allowed;
	}
	assert_true(denied >= 40);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_true(st.global.cache_denials > 0);
	/* Redis calls: the two admissions and the first denial at most a
	 * few; the rest were answered locally. */
	assert_true(st.global.redis_calls < 10);
	usleep(120000); /* T = 50 ms: two emissions */
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkshm_close(t);
	tkshm_redis_close(r);
}

/* ------------------------------------------------------------------------
 * Failure policies, the breaker, recovery
 * ---------------------------------------------------------------------- */

static void
test_failure_policies(void **state)
{
	int holder, port = tkt_redis_refusing_port(&holder);
	tkshm_redis *r = connect_to(port, true, 100);
	tkshm_table *open = strict_table(
		"gcra:limit=5,periodMs=1000;mode=strict,failure=fail-open", r);
	tkshm_table *closed = strict_table(
		"gcra:limit=5,periodMs=1000;mode=strict,failure=fail-closed",
		r);
	tkshm_table *share = strict_table(
		"fixedWindow:limit=12,windowMs=86400000;mode=strict,"
		"failure=safe-share,hosts=3",
		r);
	int admitted = 0;
	tkshm_decision d;
	tkshm_stats st;

	(void)state;
	/* Connection refused from the start. */
	for (int i = 0; i < 20; i++) {
		assert_rc(tkshm_check(open, "k", 1, 1, &d), TKSHM_OK);
		assert_true(d.allowed);
		assert_true(d.flags & TKSHM_DECISION_FALLBACK);
		assert_rc(tkshm_check(closed, "k", 1, 1, &d), TKSHM_OK);
		assert_false(d.allowed);
		assert_true(d.flags & TKSHM_DECISION_FALLBACK);
		assert_rc(tkshm_check(share, "k", 1, 1, &d), TKSHM_OK);
		assert_true(d.flags & TKSHM_DECISION_FALLBACK);
		admitted += d.allowed;
	}
	/* safe-share: limit / hosts = 12 / 3 on this host. */
	assert_int_equal(admitted, 4);
	assert_rc(tkshm_stats_get(closed, &st), TKSHM_OK);
	assert_int_equal(st.global.fallback_denied, 20);
	assert_true(st.global.breaker_opens >= 1);
	/* The breaker kept the workers away: far fewer calls than checks. */
	assert_true(st.global.redis_errors <= 4);
	assert_false(st.global.redis_up);
	tkshm_close(open);
	tkshm_close(closed);
	tkshm_close(share);
	tkshm_redis_close(r);
	close(holder);
}

static void
test_kill_restart_recovers(void **state)
{
	tkshm_redis *r = connect_to(tkt_srv.port, true, 100);
	tkshm_table *t = strict_table(
		"gcra:limit=1000,periodMs=1000;mode=strict,failure=fail-closed",
		r);
	tkshm_decision d;
	tkshm_stats st;
	uint64_t calls;
	double t0;

	(void)state;
	assert_rc(tkshm_check(t, "a", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed && !(d.flags & TKSHM_DECISION_FALLBACK));
	tkt_redis_kill(&tkt_srv);
	for (int i = 0; i < 5; i++) {
		assert_rc(tkshm_check(t, "a", 1, 1, &d), TKSHM_OK);
		assert_false(d.allowed);
		assert_true(d.flags & TKSHM_DECISION_FALLBACK);
	}
	/* Open: thousands of checks, no call. */
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	calls = st.global.redis_calls;
	for (int i = 0; i < 5000; i++)
		assert_rc(tkshm_check(t, "a", 1, 1, &d), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_true(st.global.redis_calls - calls <= 1);
	tkt_redis_restart(&tkt_srv); /* a new connection loads the scripts */
	t0 = tkt_seconds();
	do {
		usleep(20000);
		assert_rc(tkshm_check(t, "a", 1, 1, &d), TKSHM_OK);
	} while (!d.allowed && tkt_seconds() - t0 < 5);
	assert_true(d.allowed);
	assert_false(d.flags & TKSHM_DECISION_FALLBACK);
	tkshm_close(t);
	tkshm_redis_close(r);
}

/* `all` while Redis cannot be reached consumes nothing unless every
 * dimension admits (docs/limits.md, "Several limits at once").  The safe shares
 * were charged one by one: a request that B (limit 1) denied still spent
 * A's share, so 11 denied requests left A (limit 10) with nothing for a
 * lone check; a key named three times, and a fail-closed dimension, did
 * the same. */
static void
test_multi_fallback_all_consumes_nothing(void **state)
{
	int holder, port = tkt_redis_refusing_port(&holder);
	tkshm_redis *r = connect_to(port, false, 100);
	tkshm_table *a = strict_table("fixedWindow:limit=10,windowMs=86400000;"
				      "mode=strict,failure=safe-share,hosts=1",
				      r);
	tkshm_table *b = strict_table("fixedWindow:limit=1,windowMs=86400000;"
				      "mode=strict,failure=safe-share,hosts=1",
				      r);
	tkshm_table *c = strict_table(
		"gcra:limit=5,periodMs=1000;mode=strict,failure=fail-closed",
		r);
	tkshm_dimension ab[2] = { { a, "k", 1, 1 }, { b, "k", 1, 1 } };
	tkshm_dimension ac[2] = { { a, "k", 1, 1 }, { c, "k", 1, 1 } };
	tkshm_dimension aaa[3] = { { a, "k", 1, 4 },
				   { a, "k", 1, 4 },
				   { a, "k", 1, 4 } };
	tkshm_decision d, each[3];
	int admitted = 0;

	(void)state;
	for (int i = 0; i < 12; i++) {
		assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, ab, 2, NOW, &d,
					       each, NULL),
			  TKSHM_OK);
		assert_true(each[0].flags & TKSHM_DECISION_FALLBACK);
		admitted += d.allowed;
		assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, ac, 2, NOW, &d,
					       NULL, NULL),
			  TKSHM_OK);
		assert_false(d.allowed);
		assert_rc(tkshm_check_multi_at(TKSHM_MULTI_ALL, aaa, 3, NOW, &d,
					       NULL, NULL),
			  TKSHM_OK);
		assert_false(d.allowed); /* 4 + 4 + 4 > the 9 left */
	}
	assert_int_equal(admitted, 1);
	/* A spent 1 on the one admitted request: 9 are left. */
	assert_rc(tkshm_check_at(a, "k", 1, 9, NOW, &d), TKSHM_OK);
	if (!d.allowed)
		fail_msg("A's share was spent by denied requests");
	assert_true(d.flags & TKSHM_DECISION_FALLBACK);
	tkshm_close(a);
	tkshm_close(b);
	tkshm_close(c);
	tkshm_redis_close(r);
	close(holder);
}

static void
test_pause_and_flush(void **state)
{
	tkshm_redis *r = connect_to(tkt_srv.port, true, 100);
	tkshm_table *t = strict_table(
		"fixedWindow:limit=100000,windowMs=86400000;mode=strict,"
		"failure=fail-open,prefix=pf",
		r);
	tkshm_decision d;
	tkshm_stats st;
	double t0;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed && !(d.flags & TKSHM_DECISION_FALLBACK));
	/* Paused longer than the timeout: the command is not resent. */
	tkt_redis_pause(&tkt_srv, 600);
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed && (d.flags & TKSHM_DECISION_FALLBACK));
	usleep(700000);
	/* The timed-out command was not resent: it ran at most once, when
	 * the pause ended (or never, if Redis dropped it with the closed
	 * connection). */
	assert_in_range(tkt_redis_int(&tkt_srv, "HGET", "pf:k", "c", NULL), 1,
			2);
	/* Recovered by itself once the breaker's probe got through. */
	t0 = tkt_seconds();
	do {
		usleep(20000);
		assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	} while ((d.flags & TKSHM_DECISION_FALLBACK) && tkt_seconds() - t0 < 5);
	assert_false(d.flags & TKSHM_DECISION_FALLBACK);
	/* SCRIPT FLUSH under a live connection: NOSCRIPT, reloaded, the
	 * same check goes through. */
	freeReplyObject(tkt_redis_cmd(&tkt_srv, "SCRIPT", "FLUSH", NULL));
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_false(d.flags & TKSHM_DECISION_FALLBACK);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_true(st.global.noscript_reloads >= 1);
	assert_true(st.global.redis_up);
	tkshm_close(t);
	tkshm_redis_close(r);
}

/* A child uses its parent's handle: its own connection, same limit. */
static void
test_fork_shares_the_limit(void **state)
{
	tkshm_redis *r = connect_to(tkt_srv.port, true, 2000);
	tkshm_table *t = strict_table(
		"fixedWindow:limit=50,windowMs=86400000;mode=strict,prefix=fk",
		r);
	int *admitted = tkt_shared(sizeof(int) * 4);
	tkshm_decision d;
	pid_t pids[4];
	int total = 0;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK); /* parent's */
	for (int c = 0; c < 4; c++) {
		pids[c] = fork();
		assert_true(pids[c] >= 0);
		if (pids[c] == 0) {
			int n = 0;

			for (int i = 0; i < 30; i++)
				if (tkshm_check(t, "k", 1, 1, &d) == TKSHM_OK &&
				    d.allowed &&
				    !(d.flags & TKSHM_DECISION_FALLBACK))
					n++;
			admitted[c] = n;
			_exit(0);
		}
	}
	for (int c = 0; c < 4; c++) {
		tkt_wait_ok(pids[c]);
		total += admitted[c];
	}
	assert_int_equal(total, 49); /* exactly the limit, less the parent's */
	assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
	assert_false(d.allowed);
	tkt_shared_free(admitted, sizeof(int) * 4);
	tkshm_close(t);
	tkshm_redis_close(r);
}

static void
test_bad_use(void **state)
{
	tkshm_table *local = tkt_anon("gcra:limit=5,periodMs=1000", 64);
	tkshm_table *s = tkt_anon("gcra:limit=5,periodMs=1000;mode=strict", 64);
	tkshm_redis *r = connect_to(tkt_srv.port, true, 2000);
	tkshm_redis_options o = TKSHM_REDIS_OPTIONS_INIT;
	tkshm_decision d;
	tkshm_key hk;
	char buf[64];

	(void)state;
	assert_rc(tkshm_redis_attach(local, r), TKSHM_ENOTSUP);
	assert_rc(tkshm_check(s, "k", 1, 1, &d), TKSHM_ENOREDIS);
	assert_rc(tkshm_redis_attach(s, r), TKSHM_OK);
	assert_rc(tkshm_key_hash(s, "k", 1, &hk), TKSHM_OK);
	assert_rc(tkshm_check_hashed(s, &hk, 1, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_redis_key(s, "k", 1, buf, sizeof buf), 1);
	assert_string_equal(buf, "k");
	o.command_timeout_ms = -1;
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_EINVAL);
	/* Durations are 0 (the default) or 1 ms to 1 hour: 1e-300 timed
	 * every exchange out (issue 18, item 6's sibling in the library). */
	{
		tkshm_redis *r2 = NULL;
		double *durations[] = { &o.connect_timeout_ms,
					&o.command_timeout_ms,
					&o.breaker_open_ms };

		for (size_t i = 0; i < 3; i++) {
			o.command_timeout_ms = 0;
			o.connect_timeout_ms = 0;
			o.breaker_open_ms = 0;
			*durations[i] = 1e-300;
			assert_rc(tkshm_redis_open(&o, &r2), TKSHM_EINVAL);
			*durations[i] = 0.999;
			assert_rc(tkshm_redis_open(&o, &r2), TKSHM_EINVAL);
			*durations[i] = 3600000.5;
			assert_rc(tkshm_redis_open(&o, &r2), TKSHM_EINVAL);
			*durations[i] = 1;
			assert_rc(tkshm_redis_open(&o, &r2), TKSHM_OK);
			tkshm_redis_close(r2);
		}
	}
	tkshm_close(local);
	tkshm_close(s);
	tkshm_redis_close(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_decisions),
		cmocka_unit_test(test_multi_same),
		cmocka_unit_test(test_cache_exact_two_hosts),
		cmocka_unit_test(test_cache_clock_bound),
		cmocka_unit_test(test_cache_recovers),
		cmocka_unit_test(test_failure_policies),
		cmocka_unit_test(test_multi_fallback_all_consumes_nothing),
		cmocka_unit_test(test_pause_and_flush),
		cmocka_unit_test(test_fork_shares_the_limit),
		cmocka_unit_test(test_bad_use),
		cmocka_unit_test(test_kill_restart_recovers),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, tkt_redis_group_setup,
				      tkt_redis_group_teardown);
}
