/*
 * test_redis_golden.c - ThrottleKit's golden vectors through our Redis
 * scripts, and the lease and heartbeat scripts against their formulas.
 *
 * Golden: every rateLimit op of tests/data/throttlekit-golden-vectors.json
 * is replayed through the check script of its strategy with now + 1000
 * (now = 0 means the server's TIME on the Redis path, so ThrottleKit's own
 * Redis replay shifts by 1000 too), expecting resetAt + 1000 and every
 * other field as the file says.  Each suite starts on a fresh key; the
 * state the script leaves is also compared with a table replaying the
 * same ops.
 *
 * Leases: lease_gcra.lua and lease_window.lua grant what their formulas
 * (scripts' headers) compute from the state the key holds, write the state
 * the formulas say, and a check of the same key afterwards (gcra.lua,
 * fixed_window.lua) decides as tkshm's algorithm does on that state: the
 * leased units are consumed from the one limit.  hosts.lua counts the hosts
 * whose last heartbeat is at most ttlMs old.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conf_wire.h"

/* The file's documented shape (tests/data/README.md): 9 rateLimit suites
 * of 54 ops. */
#define GOLDEN_RATELIMIT_SUITES 9
#define GOLDEN_RATELIMIT_OPS	54
#define GOLDEN_OFFSET		1000.0

static struct conf_redis redis;

static int
group_setup(void **state)
{
	(void)state;
	conf_redis_up(&redis);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	conf_redis_down(&redis);
	tkt_cleanup();
	return 0;
}

static tkshm_decision
expected(const cJSON *op)
{
	const cJSON *e = tkt_json_item(op, "expect");
	tkshm_decision d;

	d.allowed = tkt_bool_at(e, "allowed");
	d.limit = (int64_t)tkt_num_at(e, "limit");
	d.remaining = (int64_t)tkt_num_at(e, "remaining");
	d.reset_at = (int64_t)(tkt_num_at(e, "resetAt") + GOLDEN_OFFSET);
	d.retry_after_ms = (int64_t)tkt_num_at(e, "retryAfterMs");
	d.flags = 0;
	return d;
}

static void
test_golden_vectors(void **state)
{
	cJSON *golden = tkt_golden();
	const cJSON *suite;
	unsigned suites = 0, ops = 0;

	(void)state;
	cJSON_ArrayForEach(suite, tkt_json_item(golden, "suites"))
	{
		const cJSON *strategy, *op;
		const char *name;
		tkshm_table *t;
		char spec[512], key[64];

		if (strcmp(tkt_str_at(suite, "primitive"), "rateLimit") != 0)
			continue;
		name = tkt_str_at(suite, "name");
		strategy = tkt_json_item(suite, "strategy");
		tkt_spec_of(tkt_str_at(strategy, "kind"),
			    tkt_json_item(strategy, "options"), spec,
			    sizeof spec);
		t = tkt_anon(spec, 64);
		snprintf(key, sizeof key, "golden:%u", suites);
		cJSON_ArrayForEach(op, tkt_json_item(suite, "ops"))
		{
			double now = tkt_num_at(op, "now") + GOLDEN_OFFSET;
			double cost = tkt_num_at(op, "cost");
			tkshm_decision want = expected(op), got, shm;
			struct conf_state rst, sst;
			int64_t now_ms;
			char what[256];

			snprintf(what, sizeof what, "%s op %u (now %.17g)",
				 name, ops, now);
			conf_redis_check(&redis, t, key, now, cost, &got,
					 &now_ms, &rst);
			tkt_assert_decision(what, &got, &want);
			assert_int_equal(now_ms, (int64_t)floor(now));
			assert_rc(tkshm_check_at(t, key, strlen(key), cost, now,
						 &shm),
				  TKSHM_OK);
			tkt_assert_decision(what, &shm, &want);
			conf_shm_state(t, key, &sst);
			conf_assert_state(what, t, &rst, &sst);
			ops++;
		}
		tkshm_close(t);
		suites++;
	}
	cJSON_Delete(golden);
	assert_int_equal(suites, GOLDEN_RATELIMIT_SUITES);
	assert_int_equal(ops, GOLDEN_RATELIMIT_OPS);
}

/* ------------------------------------------------------------------------
 * Leases
 * ---------------------------------------------------------------------- */

/* A lease script's reply: {granted, now, third}. */
static void
lease_reply(const redisReply *r, int64_t *g, int64_t *now_ms)
{
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 3);
	assert_int_equal(r->element[0]->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->element[1]->type, REDIS_REPLY_INTEGER);
	*g = r->element[0]->integer;
	*now_ms = r->element[1]->integer;
}

/* lease_gcra.lua's formula on state {present, tat}: the grant and the TAT
 * after. */
static int64_t
model_lease_gcra(const struct tk_gcra *gc, bool present, double tat, double now,
		 double want, double *tat_after)
{
	double eff = present && tat > now ? tat : now;
	double rem = floor((gc->tau - (eff - now)) / gc->T);
	double g;

	if (!(rem >= 0))
		rem = 0;
	g = want < rem ? want : rem;
	*tat_after = g >= 1 ? eff + gc->T * g : tat;
	return (int64_t)g;
}

static void
lease_gcra_once(tkshm_table *t, const char *key, double now, double want)
{
	const struct tk_gcra *gc = &t->algo.u.gcra;
	struct conf_state before, after;
	struct conf_args a;
	redisReply *r;
	int64_t g, now_ms, g_model;
	double tat_after;
	char buf[TK_ARG_F64_LEN];

	conf_redis_raw_state(&redis, t, key, &before);
	g_model = model_lease_gcra(gc, before.present, tk_word_f64(before.w[0]),
				   now, want, &tat_after);
	conf_args_init(&a);
	conf_args_f64(&a, now);
	conf_args_f64(&a, t->policy.u.gcra.period_ms);
	conf_args_f64(&a, t->policy.u.gcra.limit);
	conf_args_f64(&a, t->policy.u.gcra.burst);
	conf_args_f64(&a, want);
	r = conf_eval(&redis, TK_SCRIPT_LEASE_GCRA, &key, 1, &a);
	lease_reply(r, &g, &now_ms);
	assert_int_equal(g, g_model);
	assert_int_equal(now_ms, (int64_t)floor(now));
	assert_int_equal(r->element[2]->type, REDIS_REPLY_STRING);
	conf_redis_raw_state(&redis, t, key, &after);
	if (g == 0) {
		/* Nothing written: the state is as it was. */
		conf_assert_state("lease_gcra g = 0", t, &after, &before);
		if (!before.present)
			assert_int_equal(r->element[2]->len, 0);
	} else {
		assert_true(after.present);
		assert_true(tk_word_f64(after.w[0]) == tat_after);
		snprintf(buf, sizeof buf, "%.17g", tat_after);
		assert_string_equal(r->element[2]->str, buf);
	}
	freeReplyObject(r);
}

/* gcra.lua on the key decides as tkshm's GCRA on the state Redis holds:
 * what a lease took is gone for every check. */
static void
check_after_lease(tkshm_table *t, const char *key, double now, double cost)
{
	struct conf_state st, rst;
	tkshm_decision want, got;
	uint64_t next[TK_ALGO_MAX_WORDS]; /* any kind's state fits */
	int64_t now_ms;

	conf_redis_raw_state(&redis, t, key, &st);
	tk_algo_check_w(&t->algo, st.present, st.w, now, cost, next, &want);
	conf_redis_check(&redis, t, key, now, cost, &got, &now_ms, &rst);
	tkt_assert_decision("gcra.lua after a lease", &got, &want);
}

static void
test_lease_gcra(void **state)
{
	/* T = 100 ms, tau = 500 ms: leases and checks share 5 tokens. */
	tkshm_table *t = tkt_anon("gcra:limit=10,periodMs=1000,burst=5", 64);
	const char *key = "lease:gcra";
	double now = 1.7e12;

	(void)state;
	lease_gcra_once(t, key, now, 3);       /* a cold key: all 3 */
	lease_gcra_once(t, key, now, 10);      /* what is left */
	lease_gcra_once(t, key, now, 1);       /* nothing left: 0 */
	check_after_lease(t, key, now, 1);     /* and a check is denied */
	lease_gcra_once(t, key, now + 250, 4); /* refilled meanwhile */
	check_after_lease(t, key, now + 260, 1);
	lease_gcra_once(t, key, now + 5000, 2); /* idle again */
	check_after_lease(t, key, now + 5000, 2);
	lease_gcra_once(t, "lease:gcra:cold", now, 1);
	tkshm_close(t);
}

static void
lease_window_once(tkshm_table *t, const char *key, double now, double want)
{
	const struct tk_fixed_window *fw = &t->algo.u.fixed_window;
	struct conf_state before, after;
	double ws = floor(now / fw->window_ms) * fw->window_ms;
	double count, room, g_model;
	struct conf_args a;
	redisReply *r;
	int64_t g, now_ms;

	conf_redis_raw_state(&redis, t, key, &before);
	count = before.present && tk_word_f64(before.w[0]) == ws ?
			tk_word_f64(before.w[1]) :
			0;
	room = floor(fw->limit - count);
	if (!(room >= 0))
		room = 0;
	g_model = want < room ? want : room;
	conf_args_init(&a);
	conf_args_f64(&a, now);
	conf_args_f64(&a, fw->limit);
	conf_args_f64(&a, fw->window_ms);
	conf_args_f64(&a, want);
	r = conf_eval(&redis, TK_SCRIPT_LEASE_WINDOW, &key, 1, &a);
	lease_reply(r, &g, &now_ms);
	assert_int_equal(g, (int64_t)g_model);
	assert_int_equal(now_ms, (int64_t)floor(now));
	assert_int_equal(r->element[2]->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->element[2]->integer,
			 (int64_t)ceil(ws + fw->window_ms));
	conf_redis_raw_state(&redis, t, key, &after);
	if (g == 0) {
		conf_assert_state("lease_window g = 0", t, &after, &before);
	} else {
		assert_true(after.present);
		assert_true(tk_word_f64(after.w[0]) == ws);
		assert_true(tk_word_f64(after.w[1]) == count + g_model);
	}
	freeReplyObject(r);
}

/* fixed_window.lua on the key (ThrottleKit's fixedWindow.check) decides
 * as tkshm's fixed window on the state Redis holds. */
static tkshm_decision
window_check(tkshm_table *t, const char *key, double now, double cost)
{
	struct conf_state st, rst;
	tkshm_decision want, got;
	uint64_t next[TK_ALGO_MAX_WORDS];
	int64_t now_ms;

	conf_redis_raw_state(&redis, t, key, &st);
	tk_algo_check_w(&t->algo, st.present, st.w, now, cost, next, &want);
	conf_redis_check(&redis, t, key, now, cost, &got, &now_ms, &rst);
	tkt_assert_decision("fixed_window.lua after a lease", &got, &want);
	return got;
}

static void
test_lease_window(void **state)
{
	tkshm_table *t = tkt_anon("fixedWindow:limit=10,windowMs=1000", 64);
	const char *key = "lease:window";
	double now = 1.7e12 + 100;
	tkshm_decision d;

	(void)state;
	d = window_check(t, key, now, 3); /* a check first: 3 counted */
	assert_true(d.allowed);
	lease_window_once(t, key, now + 10, 4); /* 4 of the 7 left */
	d = window_check(t, key, now + 20, 2);	/* the check sees 7 */
	assert_true(d.allowed);
	lease_window_once(t, key, now + 30, 5); /* only 1 left */
	d = window_check(t, key, now + 40, 1);	/* the lease took it all */
	assert_false(d.allowed);
	lease_window_once(t, key, now + 50, 1);	  /* 0: nothing written */
	lease_window_once(t, key, now + 1000, 6); /* the next window */
	d = window_check(t, key, now + 1000, 4);
	assert_true(d.allowed);
	d = window_check(t, key, now + 1001, 1);
	assert_false(d.allowed);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * Heartbeats
 * ---------------------------------------------------------------------- */

static void
test_hosts(void **state)
{
	static const struct {
		const char *host;
		double at;
	} beats[] = {
		{ "h1", 1000 }, { "h2", 1500 }, { "h3", 2000 }, { "h2", 2400 },
		{ "h3", 2600 }, { "h1", 2601 }, { "h4", 5000 }, { "h2", 5100 },
	};
	const double ttl = 1000;
	double last[4] = { -1, -1, -1, -1 };
	const char *key = "hosts:{t}";

	(void)state;
	for (size_t i = 0; i < sizeof beats / sizeof beats[0]; i++) {
		struct conf_args a;
		redisReply *r;
		long long live = 0;
		int h = beats[i].host[1] - '1';

		last[h] = beats[i].at;
		/* The model: hosts whose last beat is at most ttl old. */
		for (int j = 0; j < 4; j++)
			if (last[j] >= 0 && last[j] >= beats[i].at - ttl)
				live++;
		conf_args_init(&a);
		conf_args_f64(&a, beats[i].at);
		conf_args_str(&a, beats[i].host);
		conf_args_f64(&a, ttl);
		r = conf_eval(&redis, TK_SCRIPT_HOSTS, &key, 1, &a);
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		assert_int_equal(r->elements, 2);
		assert_int_equal(r->element[0]->integer, live);
		assert_int_equal(r->element[1]->integer,
				 (long long)beats[i].at);
		freeReplyObject(r);
		/* The set outlives no host by more than 2 ttl. */
		{
			long long pttl =
				tkt_redis_int(&redis.srv, "PTTL", key, NULL);
			assert_true(pttl > 0 && pttl <= 2 * ttl);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_vectors),
		cmocka_unit_test(test_lease_gcra),
		cmocka_unit_test(test_lease_window),
		cmocka_unit_test(test_hosts),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
