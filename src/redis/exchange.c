/*
 * exchange.c - one guarded exchange with Redis for a table (its circuit
 * breaker and counters), the Redis names of the table's keys, and the
 * registration of this host for its limit: what the strict path
 * (strict.c) and the handle (redis_api.c) both build on.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "global/global_shm.h"
#include "redis/breaker.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "shm/atomic.h"

size_t
tk_redis_key_of(const struct tkshm_table *t, const void *key, size_t len,
		char *buf, size_t cap)
{
	size_t p = strnlen(t->policy.global.prefix, TKSHM_PREFIX_MAX);
	size_t n = p ? p + 1 + len : len;

	if (n >= cap)
		return 0;
	if (p) {
		memcpy(buf, t->policy.global.prefix, p);
		buf[p] = ':';
	}
	memcpy(buf + (p ? p + 1 : 0), key, len);
	buf[n] = '\0';
	return n;
}

size_t
tk_redis_multi_key_of(const struct tkshm_table *t, const void *key, size_t len,
		      char *buf, size_t cap)
{
	const char *k = key;
	const char *open = memchr(k, '{', len);
	bool tagged = open && memchr(open, '}', len - (size_t)(open - k));
	size_t p = strnlen(t->policy.global.prefix, TKSHM_PREFIX_MAX);
	size_t n = (p ? p + 1 : 0) + len + (tagged ? 0 : 2), at = 0;

	if (n >= cap)
		return 0;
	if (p) {
		memcpy(buf, t->policy.global.prefix, p);
		buf[p] = ':';
		at = p + 1;
	}
	if (!tagged)
		buf[at++] = '{';
	memcpy(buf + at, key, len);
	at += len;
	if (!tagged)
		buf[at++] = '}';
	buf[at] = '\0';
	return n;
}

int
tk_redis_call(struct tkshm_table *t, enum tk_script_id id,
	      const struct tk_args *keys, const struct tk_args *args,
	      tk_reply_valid_fn valid, void *ctx, redisReply **reply)
{
	struct tkshm_redis *r = t->redis;
	struct tk_global_shm *g = t->global;
	struct tk_conn_stats before, after;
	double now = tk_mono_ms();
	/* A probe may take a connect and a command. */
	double probe_ms =
		r->conf.connect_timeout_ms + 2 * r->conf.command_timeout_ms;
	int rc;

	*reply = NULL;
	if (!tk_breaker_allow(&g->breaker, now, probe_ms))
		return TKSHM_EUNAVAILABLE;
	tk_conn_stats_get(r->conn, &before);
	rc = tk_conn_eval(r->conn, id, keys, args, reply, NULL, 0);
	tk_conn_stats_get(r->conn, &after);
	tk_gcount(g, TK_G_REDIS_CALLS, after.calls - before.calls);
	tk_gcount(g, TK_G_NOSCRIPT_RELOADS,
		  after.noscript_reloads - before.noscript_reloads);
	if (rc == TKSHM_OK && valid && !valid(t, *reply, ctx)) {
		/* An answer that is not one (a wrong type, a field out of
		 * range) is no better than an error reply. */
		freeReplyObject(*reply);
		*reply = NULL;
		rc = TKSHM_EREDIS;
	}
	if (rc == TKSHM_OK) {
		tk_breaker_success(&g->breaker);
		return TKSHM_OK;
	}
	if (rc == TKSHM_ECROSSSLOT)
		return rc; /* nothing was sent: the caller's keys */
	/* No answer, an error reply (BUSY, LOADING, OOM, MOVED, NOSCRIPT
	 * again after the reload...) or an invalid one: Redis did not
	 * decide, and the breaker counts it. */
	tk_gcount(g, TK_G_REDIS_ERRORS, 1);
	(void)tk_breaker_failure(&g->breaker, tk_mono_ms(), r->breaker_failures,
				 r->breaker_open_ms);
	return rc;
}

void
tk_hosts_req_init(struct tk_hosts_req *q, const struct tkshm_table *t,
		  const char *host_id, double now, double ttl_ms)
{
	q->kl[0] = (size_t)snprintf(q->key, sizeof q->key, "tkshm:hosts:%s",
				    t->policy.global.prefix);
	q->kv[0] = q->key;
	q->al[0] = tk_arg_f64(q->now_s, sizeof q->now_s, now);
	q->av[0] = q->now_s;
	q->al[1] = strlen(host_id);
	q->av[1] = host_id;
	q->al[2] = tk_arg_f64(q->ttl_s, sizeof q->ttl_s, ttl_ms);
	q->av[2] = q->ttl_s;
	q->keys = (struct tk_args){ 1, q->kv, q->kl };
	q->args = (struct tk_args){ 3, q->av, q->al };
}

bool
tk_hosts_valid(const struct tkshm_table *t, const redisReply *y, void *unused)
{
	(void)t;
	(void)unused;
	return y && y->type == REDIS_REPLY_ARRAY && y->elements >= 1 &&
	       y->element[0] && y->element[0]->type == REDIS_REPLY_INTEGER &&
	       y->element[0]->integer >= 1 && y->element[0]->integer <= 1000000;
}

void
tk_hosts_store(struct tkshm_table *t, const redisReply *y)
{
	if (tk_hosts_valid(t, y, NULL))
		/* Relaxed: a hint for safe-share and lease sizing, read on
		 * its own (tk_global_hosts). */
		tk_store_relaxed(&t->global->hosts,
				 (uint64_t)y->element[0]->integer);
}

void
tk_redis_hosts_tick(struct tkshm_table *t)
{
	struct tk_global_shm *g = t->global;
	double now = tk_mono_ms();
	/* Relaxed: a schedule; the CAS below decides who registers. */
	uint64_t at = tk_load_relaxed(&g->hosts_at);
	struct tk_hosts_req q;
	redisReply *reply = NULL;

	if (now < tk_word_f64(at) + 1000.0)
		return;
	/* Relaxed CAS: one worker per second wins the turn; nothing else
	 * is published through it. */
	if (!tk_cas64_relaxed(&g->hosts_at, &at, tk_f64_word(now)))
		return;
	tk_hosts_req_init(&q, t, t->redis->host_id,
			  t->redis->server_time ? 0 : floor(tkshm_now_ms()),
			  5000);
	if (tk_redis_call(t, TK_SCRIPT_HOSTS, &q.keys, &q.args, tk_hosts_valid,
			  NULL, &reply) != TKSHM_OK)
		return;
	tk_hosts_store(t, reply);
	freeReplyObject(reply);
}
