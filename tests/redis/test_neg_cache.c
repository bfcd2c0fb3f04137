/*
 * test_neg_cache.c - strict mode's negative cache after another host
 * consumed (issue 18, item 7), against a private redis-server.
 *
 * Hosts A and B are two strict tables (two caches) on one Redis key; a
 * third table, C, is the truth: its cache is cleared before each use, so
 * its check is one script on Redis, ThrottleKit's RedisStore decision on
 * the same key at the same `now`.  A denial A answers from its cache must
 * not tell a client to retry earlier than Redis would (retryAfterMs and
 * resetAt never below C's), and reports remaining 0 (never above C's).
 * Also: a denied sliding-log decision trims the ZSET's expired stamps,
 * as ThrottleKit's script does.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_server.h"
#include "test_support.h"
#include "tkshm.h"
#include "tkshm_redis.h"

static uint64_t rng_state = 7;
static uint64_t
rng(void)
{
	return tkt_splitmix(&rng_state);
}

/* What the cached denials of one timeline told, against the truth. */
struct tally {
	uint64_t cached;   /* denials A answered from its cache */
	uint64_t differed; /* ... whose fields were not Redis's, bit for bit */
	uint64_t early;	   /* ... whose retryAfterMs was below Redis's */
	uint64_t reset;	   /* ... whose resetAt was below Redis's */
	uint64_t above;	   /* ... whose remaining was above Redis's */
	int64_t worst_ms;  /* the most retryAfterMs was below Redis's */
	double late_ms;	   /* the sum of what it was above Redis's */
};

/* Redis's decision for `cost` at `now`: C's cache is cleared first, so
 * C's check is one script on the key. */
static void
truth(tkshm_table *c, const char *key, double cost, double now,
      tkshm_decision *d)
{
	assert_rc(tkshm_reset(c, key, strlen(key)), TKSHM_OK);
	assert_rc(tkshm_check_at(c, key, strlen(key), cost, now, d), TKSHM_OK);
	assert_int_equal(d->flags & TKSHM_DECISION_CACHED, 0);
}

/* A's cached denial `a` against Redis's `c` for the same check. */
static void
compare(const char *spec, const tkshm_decision *a, const tkshm_decision *c,
	struct tally *t)
{
	t->cached++;
	if (c->allowed)
		fail_msg("%s: the cache denied what Redis admits", spec);
	assert_int_equal(a->limit, c->limit);
	t->differed += a->remaining != c->remaining ||
		       a->reset_at != c->reset_at ||
		       a->retry_after_ms != c->retry_after_ms;
	t->early += a->retry_after_ms < c->retry_after_ms;
	t->reset += a->reset_at < c->reset_at;
	t->above += a->remaining > c->remaining;
	if (a->retry_after_ms > c->retry_after_ms)
		t->late_ms += (double)(a->retry_after_ms - c->retry_after_ms);
	if (c->retry_after_ms - a->retry_after_ms > t->worst_ms)
		t->worst_ms = c->retry_after_ms - a->retry_after_ms;
}

/* Hosts A and B check one key on one explicit timeline, B with costs up
 * to `b_cost`; every denial A answers from its cache is compared with
 * Redis's.  Steps are short against the windows, so that A's cache keeps
 * denying while B consumes. */
static void
run_two_hosts(const char *spec, double step_ms, double b_cost, struct tally *t,
	      tkshm_redis *r)
{
	tkshm_table *a = tkt_strict_table(spec, r);
	tkshm_table *b = tkt_strict_table(spec, r);
	tkshm_table *c = tkt_strict_table(spec, r);

	tkt_redis_flushall(&tkt_srv);
	for (int tl = 0; tl < 6; tl++) {
		double now = 1.7e12 + 1000.0 * 1000 * tl + 11;
		char key[16];

		snprintf(key, sizeof key, "k%d", tl);
		for (int i = 0; i < 300; i++) {
			tkshm_decision da, dc;
			double cost;

			now += (double)(rng() % (uint64_t)step_ms);
			if (rng() % 2) {
				cost = 1 + (double)(rng() % (uint64_t)b_cost);
				assert_rc(tkshm_check_at(b, key, strlen(key),
							 cost, now, &da),
					  TKSHM_OK);
				tkt_redis_persist_all(&tkt_srv);
				continue;
			}
			cost = 1 + (double)(rng() % 4);
			assert_rc(tkshm_check_at(a, key, strlen(key), cost, now,
						 &da),
				  TKSHM_OK);
			tkt_redis_persist_all(&tkt_srv);
			if (!(da.flags & TKSHM_DECISION_CACHED))
				continue;
			assert_false(da.allowed);
			truth(c, key, cost, now, &dc);
			tkt_redis_persist_all(&tkt_srv);
			compare(spec, &da, &dc, t);
		}
	}
	tkshm_close(a);
	tkshm_close(b);
	tkshm_close(c);
}

/* Every strict algorithm: after B consumed, no denial A answers from its
 * cache tells a retry (or reset) earlier than Redis's. */
static void
test_cached_denial_never_early(void **state)
{
	static const struct {
		const char *spec;
		double step_ms, b_cost;
	} cases[] = {
		{ "gcra:limit=10,periodMs=1000,burst=5", 60, 2 },
		{ "gcra:limit=3,periodMs=1000", 150, 1 },
		{ "tokenBucket:capacity=5,refillPerSec=4", 120, 2 },
		{ "tokenBucket:capacity=7,refillPerSec=3.5", 150, 1 },
		{ "fixedWindow:limit=6,windowMs=1000", 60, 2 },
		{ "slidingWindow:limit=8,windowMs=1000,buckets=4", 60, 2 },
		{ "slidingWindow:limit=20,windowMs=1000,buckets=3", 30, 3 },
		{ "slidingWindowLog:limit=5,windowMs=1000", 60, 1 },
		{ "slidingWindowLog:limit=6,windowMs=360000", 9000, 1 },
		{ "quota:limit=8,resetCadence=calendar-day", 60000, 2 },
		{ "quota:limit=6,resetCadence=fixed,periodMs=1000,anchor=250",
		  60, 2 },
		{ "quota:limit=9,resetCadence=rolling,periodMs=1000,buckets=4",
		  60, 2 },
	};
	tkshm_redis *r = tkt_strict_connect(tkt_srv.port, false, 2000);
	uint64_t wrong = 0;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char spec[256];
		struct tally t = { 0, 0, 0, 0, 0, 0, 0 };

		snprintf(spec, sizeof spec, "%s;mode=strict,prefix=nc%zu",
			 cases[i].spec, i);
		run_two_hosts(spec, cases[i].step_ms, cases[i].b_cost, &t, r);
		printf("%-58s %4llu cached: %3llu differ, retry early %3llu "
		       "(by up to %lld ms), reset early %3llu, remaining "
		       "above %3llu; retry late by %.1f ms on average\n",
		       cases[i].spec, (unsigned long long)t.cached,
		       (unsigned long long)t.differed,
		       (unsigned long long)t.early, (long long)t.worst_ms,
		       (unsigned long long)t.reset, (unsigned long long)t.above,
		       t.cached ? t.late_ms / (double)t.cached : 0.0);
		/* The timeline must exercise the cache. */
		assert_true(t.cached >= 20);
		wrong += t.early + t.reset + t.above;
	}
	tkshm_redis_close(r);
	assert_int_equal(wrong, 0);
}

/* The six minutes, on a sliding log of 3 per 10 minutes: A's
 * cache holds A's one stamp; B adds one 6 minutes later; a minute after,
 * A's cost-3 check is denied from the cache.  Redis's retry is 9 minutes
 * (B's stamp must leave), the stale cache said 3. */
static void
test_sliding_log_six_minutes(void **state)
{
	const char *spec = "slidingWindowLog:limit=3,windowMs=600000;"
			   "mode=strict,prefix=six";
	tkshm_redis *r = tkt_strict_connect(tkt_srv.port, false, 2000);
	tkshm_table *a = tkt_strict_table(spec, r);
	tkshm_table *b = tkt_strict_table(spec, r);
	tkshm_table *c = tkt_strict_table(spec, r);
	double t0 = 1.7e12;
	tkshm_decision d, dc;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	assert_rc(tkshm_check_at(a, "u", 1, 1, t0, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkt_redis_persist_all(&tkt_srv);
	assert_rc(tkshm_check_at(b, "u", 1, 1, t0 + 360000, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkt_redis_persist_all(&tkt_srv);
	assert_rc(tkshm_check_at(a, "u", 1, 3, t0 + 420000, &d), TKSHM_OK);
	assert_true(d.flags & TKSHM_DECISION_CACHED);
	truth(c, "u", 3, t0 + 420000, &dc);
	assert_false(dc.allowed);
	assert_int_equal(dc.retry_after_ms, 540000);
	printf("six minutes: cached retry %lld ms, reset %lld; Redis's %lld, "
	       "%lld\n",
	       (long long)d.retry_after_ms, (long long)d.reset_at,
	       (long long)dc.retry_after_ms, (long long)dc.reset_at);
	assert_true(d.retry_after_ms >= dc.retry_after_ms);
	assert_true(d.reset_at >= dc.reset_at);
	assert_int_equal(d.remaining, 0);
	tkshm_close(a);
	tkshm_close(b);
	tkshm_close(c);
	tkshm_redis_close(r);
}

/* The shaper: a rejection from the cache states the delay Redis would
 * (nobody can reserve while the queue is over maxQueueMs, so the cached
 * departure is the true one). */
static void
test_shaper_cached_rejection(void **state)
{
	const char *spec = "leakyBucket:ratePerSec=10,maxQueueMs=500;"
			   "mode=strict,prefix=shp";
	tkshm_redis *r = tkt_strict_connect(tkt_srv.port, false, 2000);
	tkshm_table *a = tkt_strict_table(spec, r);
	tkshm_table *b = tkt_strict_table(spec, r);
	tkshm_table *c = tkt_strict_table(spec, r);
	double now = 1.7e12 + 3;
	uint64_t cached = 0;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	for (int i = 0; i < 600; i++) {
		tkshm_table *t = rng() % 2 ? a : b;
		tkshm_reservation ra, rc;
		double cost = 1 + (double)(rng() % 5);

		now += (double)(rng() % 60);
		assert_rc(tkshm_reserve_at(t, "q", 1, cost, now, &ra),
			  TKSHM_OK);
		tkt_redis_persist_all(&tkt_srv);
		if (ra.accepted || t != a)
			continue;
		assert_rc(tkshm_reset(c, "q", 1), TKSHM_OK);
		assert_rc(tkshm_reserve_at(c, "q", 1, cost, now, &rc),
			  TKSHM_OK);
		tkt_redis_persist_all(&tkt_srv);
		assert_false(rc.accepted);
		cached++;
		assert_true(ra.retry_after_ms >= rc.retry_after_ms);
		assert_true(ra.delay_ms >= rc.delay_ms);
	}
	printf("shaper: %llu rejections of A compared\n",
	       (unsigned long long)cached);
	assert_true(cached > 20);
	tkshm_close(a);
	tkshm_close(b);
	tkshm_close(c);
	tkshm_redis_close(r);
}

/* On the server's clock (the default), with two hosts and real time: a
 * cached denial's retry is never earlier than that of Redis asked right
 * after it (Redis's clock only advances in between, and for these kinds
 * a later decision's retry is only shorter, or the check is admitted). */
static void
test_server_clock_never_early(void **state)
{
	static const char *specs[] = {
		"gcra:limit=50,periodMs=1000,burst=5;mode=strict,prefix=sc",
		"fixedWindow:limit=5,windowMs=200;mode=strict,prefix=sc",
		"tokenBucket:capacity=4,refillPerSec=20;mode=strict,prefix=sc",
		"slidingWindowLog:limit=5,windowMs=300;mode=strict,prefix=sc",
	};
	tkshm_redis *r = tkt_strict_connect(tkt_srv.port, true, 2000);
	uint64_t cached = 0;

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		tkshm_table *a = tkt_strict_table(specs[s], r);
		tkshm_table *b = tkt_strict_table(specs[s], r);
		tkshm_table *c = tkt_strict_table(specs[s], r);

		tkt_redis_flushall(&tkt_srv);
		for (int i = 0; i < 2000; i++) {
			tkshm_decision da, dc;
			double cost = 1 + (double)(rng() % 3);

			assert_rc(tkshm_check(b, "x", 1, 1, &da), TKSHM_OK);
			assert_rc(tkshm_check(a, "x", 1, cost, &da), TKSHM_OK);
			if (!(da.flags & TKSHM_DECISION_CACHED))
				continue;
			assert_rc(tkshm_reset(c, "x", 1), TKSHM_OK);
			assert_rc(tkshm_check(c, "x", 1, cost, &dc), TKSHM_OK);
			cached++;
			if (dc.allowed)
				continue; /* time passed: Redis admits now */
			if (da.retry_after_ms < dc.retry_after_ms)
				fail_msg("%s: cached retry %lld ms, Redis's "
					 "%lld ms",
					 specs[s], (long long)da.retry_after_ms,
					 (long long)dc.retry_after_ms);
		}
		tkshm_close(a);
		tkshm_close(b);
		tkshm_close(c);
	}
	printf("server clock: %llu cached denials compared\n",
	       (unsigned long long)cached);
	assert_true(cached > 0);
	tkshm_redis_close(r);
}

/* A denied sliding-log check leaves the ZSET as ThrottleKit's script
 * does: the stamps at or before now - windowMs are trimmed. */
static void
test_denied_log_trims_zset(void **state)
{
	const char *spec = "slidingWindowLog:limit=3,windowMs=1000;"
			   "mode=strict,prefix=trim";
	tkshm_redis *r = tkt_strict_connect(tkt_srv.port, false, 2000);
	tkshm_table *t = tkt_strict_table(spec, r);
	double base = 1.7e12;
	tkshm_decision d;
	redisReply *y;

	(void)state;
	tkt_redis_flushall(&tkt_srv);
	for (int i = 0; i < 3; i++) {
		assert_rc(tkshm_check_at(t, "z", 1, 1, base + 100.0 * i, &d),
			  TKSHM_OK);
		assert_true(d.allowed);
	}
	tkt_redis_persist_all(&tkt_srv);
	assert_int_equal(tkt_redis_int(&tkt_srv, "ZCARD", "trim:z", NULL), 3);
	/* At base + 1050 the first stamp has left the window; two live
	 * ones and a cost of 2 are denied, by Redis (the cache cleared). */
	assert_rc(tkshm_reset(t, "z", 1), TKSHM_OK);
	assert_rc(tkshm_check_at(t, "z", 1, 2, base + 1050, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_int_equal(d.flags & TKSHM_DECISION_CACHED, 0);
	assert_int_equal(tkt_redis_int(&tkt_srv, "ZCARD", "trim:z", NULL), 2);
	y = tkt_redis_cmd(&tkt_srv, "ZRANGEBYSCORE", "trim:z", "-inf",
			  "1700000000050", NULL);
	assert_int_equal(y->type, REDIS_REPLY_ARRAY);
	assert_int_equal(y->elements, 0);
	freeReplyObject(y);
	/* A denial writes no TTL: the key keeps none (persist_all above). */
	assert_int_equal(tkt_redis_int(&tkt_srv, "PTTL", "trim:z", NULL), -1);
	/* Everything expired: the denial of an unsatisfiable cost empties
	 * the log, and Redis drops the key. */
	assert_rc(tkshm_reset(t, "z", 1), TKSHM_OK);
	assert_rc(tkshm_check_at(t, "z", 1, 4, base + 5000, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_int_equal(tkt_redis_int(&tkt_srv, "EXISTS", "trim:z", NULL), 0);
	tkshm_close(t);
	tkshm_redis_close(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cached_denial_never_early),
		cmocka_unit_test(test_sliding_log_six_minutes),
		cmocka_unit_test(test_shaper_cached_rejection),
		cmocka_unit_test(test_server_clock_never_early),
		cmocka_unit_test(test_denied_log_trims_zset),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, tkt_redis_group_setup,
				      tkt_redis_group_teardown);
}
