/*
 * strict.c - strict mode: one atomic Lua script per decision (strict.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/decision.h"
#include "redis/neg_cache.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "redis/strict.h"
#include "redis/strict_args.h"

/* "prefix:" + a key + NUL. */
#define TK_RKEY_MAX (TKSHM_PREFIX_MAX + 4 + TKSHM_KEY_MAX)

/* A key's Redis name and the one-key KEYS vector naming it (pointing
 * into the struct: filled in place, never copied). */
struct tk_rkey {
	char name[TK_RKEY_MAX];
	const char *v[1];
	size_t len[1];
	struct tk_args keys;
};

/* False when "prefix:key" does not fit. */
static bool
tk_rkey_init(struct tk_rkey *k, const struct tkshm_table *t, const void *key,
	     size_t len)
{
	k->len[0] = tk_redis_key_of(t, key, len, k->name, sizeof k->name);
	k->v[0] = k->name;
	k->keys = (struct tk_args){ 1, k->v, k->len };
	return k->len[0] != 0;
}

/* The first n elements of an array reply, as integers; false for any
 * other shape (a reply is never trusted to be what the script sends). */
static bool
tk_reply_ints(const redisReply *r, size_t n, int64_t *v)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!r->element[i] ||
		    r->element[i]->type != REDIS_REPLY_INTEGER)
			return false;
		v[i] = r->element[i]->integer;
	}
	return true;
}

/* A bulk string holding a double ('%.17g'); false for anything else. */
static bool
tk_reply_f64(const redisReply *r, double *v)
{
	char buf[64], *end;

	if (!r || r->type != REDIS_REPLY_STRING || r->len == 0 ||
	    r->len >= sizeof buf)
		return false;
	memcpy(buf, r->str, r->len);
	buf[r->len] = '\0';
	*v = strtod(buf, &end);
	return *end == '\0' && isfinite(*v);
}

static void
tk_decision_of(const int64_t *v, tkshm_decision *d)
{
	memset(d, 0, sizeof *d);
	d->allowed = v[0] == 1;
	d->limit = v[1];
	d->remaining = v[2];
	d->reset_at = v[3];
	d->retry_after_ms = v[4];
}

/* The key this host's safe share of `key` is kept under, in the same
 * table: a tag no caller's key can start with ("\xff"), then the key's
 * 128-bit hash. */
static struct tk_keyref
tk_share_key(const struct tkshm_table *t, const void *key, size_t len,
	     unsigned char buf[24])
{
	static const unsigned char tag[4] = { 0xff, 's', 'h', ':' };
	XXH128_hash_t h = XXH3_128bits_withSeed(key, len, t->seed);
	struct tk_keyref k;

	memcpy(buf, tag, sizeof tag);
	memcpy(buf + 4, &h.low64, 8);
	memcpy(buf + 12, &h.high64, 8);
	memset(buf + 20, 0, 4);
	k.fp = tk_key_fp(t, buf, 20);
	k.label = buf;
	k.len = 20;
	return k;
}

/* True while the table's circuit is open: the call would be turned away,
 * so the failure policy decides before any argument is formatted.  (A
 * half-open circuit goes on to tk_redis_call, where one caller wins the
 * probe.) */
static bool
tk_strict_circuit_open(const struct tkshm_table *t)
{
	/* Relaxed: a hint; tk_redis_call's breaker decides for real. */
	double until = tk_word_f64(atomic_load_explicit(
		&t->global->breaker.open_until, memory_order_relaxed));

	return until != 0 && tk_mono_coarse_ms() < until;
}

/* The failure policy's decision for a check Redis did not answer. */
static int
tk_strict_fallback(struct tkshm_table *t, const void *key, size_t len,
		   double cost, double now, tkshm_decision *d)
{
	const struct tkshm_redis *r = t->redis;
	double cap = tk_algo_capacity(&t->algo);

	memset(d, 0, sizeof *d);
	d->limit = (int64_t)cap;
	switch (t->policy.global.failure) {
	case TKSHM_FAILURE_OPEN:
		d->allowed = true;
		d->remaining = (int64_t)cap;
		d->reset_at = (int64_t)ceil(now);
		break;
	case TKSHM_FAILURE_CLOSED:
		d->retry_after_ms = (int64_t)ceil(r->breaker_open_ms);
		d->reset_at = (int64_t)ceil(now + r->breaker_open_ms);
		break;
	default: {
		unsigned char buf[24];
		struct tk_keyref k = tk_share_key(t, key, len, buf);
		double hosts =
			tk_global_hosts(t->global, t->policy.global.hosts);
		double charge = cost * hosts;
		int rc;

		if (charge > TKSHM_COST_MAX)
			charge = TKSHM_COST_MAX;
		/* The local clock: this share never meets Redis's. */
		rc = tk_table_check_ref(t, &k, charge, tkshm_now_ms(), d, NULL);
		if (rc != TKSHM_OK)
			return rc;
		d->remaining = (int64_t)floor((double)d->remaining / hosts);
		break;
	}
	}
	d->flags |= TKSHM_DECISION_FALLBACK;
	tk_gcount(t->global,
		  d->allowed ? TK_G_FALLBACK_ALLOWED : TK_G_FALLBACK_DENIED, 1);
	return TKSHM_OK;
}

static int
tk_strict_check(struct tkshm_table *t, const void *key, size_t len, double cost,
		double now, tkshm_decision *out)
{
	struct tk_rkey k;
	struct tk_argv a;
	enum tk_script_id id;
	redisReply *reply = NULL;
	int64_t v[6];
	double sent;
	int rc;

	if (!tk_rkey_init(&k, t, key, len))
		return TKSHM_EKEYLONG;
	if (tk_cache_denies(t, key, len, cost, now, out)) {
		tk_count(t, TK_C_DENIED, 1);
		tk_gcount(t->global, TK_G_CACHE_DENIALS, 1);
		return TKSHM_OK;
	}
	if (tk_strict_circuit_open(t))
		return tk_strict_fallback(t, key, len, cost, now, out);
	sent = tkshm_now_ms();
	id = tk_strict_args(t, t->redis->server_time ? 0 : now, cost, &a);
	rc = tk_redis_call(t, id, &k.keys, &a.args, &reply);
	if (rc == TKSHM_EUNAVAILABLE)
		return tk_strict_fallback(t, key, len, cost, now, out);
	if (rc != TKSHM_OK)
		return rc;
	if (!tk_reply_ints(reply, 6, v)) {
		freeReplyObject(reply);
		return TKSHM_EREDIS;
	}
	tk_decision_of(v, out);
	tk_cache_store(t, key, len, reply, 6,
		       t->redis->server_time ? (double)v[5] : now, sent);
	freeReplyObject(reply);
	tk_count(t, out->allowed ? TK_C_ALLOWED : TK_C_DENIED, 1);
	if (t->policy.global.failure == TKSHM_FAILURE_SAFE_SHARE)
		tk_redis_hosts_tick(t);
	return TKSHM_OK;
}

static int
tk_strict_peek(struct tkshm_table *t, const void *key, size_t len, double now,
	       tkshm_decision *out)
{
	struct tk_rkey k;
	struct tk_argv a;
	uint64_t words[TK_ALGO_MAX_WORDS];
	redisReply *reply = NULL;
	bool present = false;
	int64_t v[1];
	int rc;

	if (!tk_rkey_init(&k, t, key, len))
		return TKSHM_EKEYLONG;
	tk_strict_read_args(t, t->redis->server_time ? 0 : now, &a);
	rc = tk_redis_call(t, TK_SCRIPT_READ, &k.keys, &a.args, &reply);
	if (rc != TKSHM_OK)
		return rc;
	/* {now, state...}: the state read back and decided by the C
	 * algorithm's own peek formula. */
	rc = TKSHM_EREDIS;
	if (tk_reply_ints(reply, 1, v) &&
	    tk_state_from_reply(
		    &t->algo, (const redisReply *const *)reply->element + 1,
		    reply->elements - 1, words, &present) == TKSHM_OK) {
		tk_algo_peek_w(&t->algo, present, words,
			       t->redis->server_time ? (double)v[0] : now, out);
		rc = TKSHM_OK;
	}
	freeReplyObject(reply);
	return rc;
}

static int
tk_strict_reserve(struct tkshm_table *t, const void *key, size_t len,
		  double cost, double now, tkshm_reservation *out)
{
	struct tk_rkey k;
	struct tk_argv a;
	redisReply *reply = NULL;
	tkshm_decision d;
	int64_t v[3], rn;
	double sent, wait;
	int rc;

	if (!tk_rkey_init(&k, t, key, len))
		return TKSHM_EKEYLONG;
	memset(out, 0, sizeof *out);
	if (tk_cache_denies(t, key, len, cost, now, &d)) {
		/* A rejection, as reserve.c states one. */
		out->delay_ms = d.retry_after_ms;
		out->retry_after_ms = d.retry_after_ms;
		tk_count(t, TK_C_DENIED, 1);
		tk_gcount(t->global, TK_G_CACHE_DENIALS, 1);
		return TKSHM_OK;
	}
	sent = tkshm_now_ms();
	(void)tk_strict_args(t, t->redis->server_time ? 0 : now, cost, &a);
	rc = tk_strict_circuit_open(t) ?
		     TKSHM_EUNAVAILABLE :
		     tk_redis_call(t, TK_SCRIPT_LEAKY, &k.keys, &a.args,
				   &reply);
	if (rc == TKSHM_EUNAVAILABLE) {
		struct tk_keyref share;
		unsigned char buf[24];
		double hosts =
			tk_global_hosts(t->global, t->policy.global.hosts);

		switch (t->policy.global.failure) {
		case TKSHM_FAILURE_OPEN:
			out->accepted = true;
			break;
		case TKSHM_FAILURE_CLOSED:
			out->delay_ms =
				(int64_t)ceil(t->redis->breaker_open_ms);
			out->retry_after_ms = out->delay_ms;
			break;
		default:
			share = tk_share_key(t, key, len, buf);
			rc = tk_reserve_ref(t, &share, cost * hosts,
					    tkshm_now_ms(), out);
			if (rc != TKSHM_OK)
				return rc;
			break;
		}
		tk_gcount(t->global,
			  out->accepted ? TK_G_FALLBACK_ALLOWED :
					  TK_G_FALLBACK_DENIED,
			  1);
		return TKSHM_OK;
	}
	if (rc != TKSHM_OK)
		return rc;
	/* {accepted, delayMs, retryAfterMs, wait (string), now, state} */
	rc = TKSHM_EREDIS;
	if (tk_reply_ints(reply, 3, v) && reply->elements >= 5 &&
	    tk_reply_f64(reply->element[3], &wait) &&
	    reply->element[4]->type == REDIS_REPLY_INTEGER) {
		rn = reply->element[4]->integer;
		out->accepted = v[0] == 1;
		out->delay_ms = v[1];
		out->retry_after_ms = v[2];
		out->wait_ms = wait;
		tk_cache_store(t, key, len, reply, 5,
			       t->redis->server_time ? (double)rn : now, sent);
		tk_count(t, out->accepted ? TK_C_ALLOWED : TK_C_DENIED, 1);
		rc = TKSHM_OK;
	}
	freeReplyObject(reply);
	if (rc == TKSHM_OK &&
	    t->policy.global.failure == TKSHM_FAILURE_SAFE_SHARE)
		tk_redis_hosts_tick(t);
	return rc;
}

/* ThrottleKit's multi types: 1 gcra, 2 tokenBucket, 3 fixedWindow, then
 * three parameters (multi.lua). */
static void
tk_multi_dim_args(const struct tkshm_table *t, double cost, double *v)
{
	const tkshm_policy *p = &t->policy;

	v[1] = cost;
	v[4] = 0;
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		v[0] = 1;
		v[2] = p->u.gcra.period_ms;
		v[3] = p->u.gcra.limit;
		v[4] = p->u.gcra.burst;
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
		v[0] = 2;
		v[2] = p->u.token_bucket.capacity;
		v[3] = p->u.token_bucket.refill_per_sec;
		break;
	default: /* fixed window (checked by the caller) */
		v[0] = 3;
		v[2] = p->u.fixed_window.limit;
		v[3] = p->u.fixed_window.window_ms;
		break;
	}
}

/* Redis did not answer a multi check: each dimension by its own failure
 * policy (a safe share consumes on its own; `all` then admits only if
 * every dimension did). */
static int
tk_multi_fallback(const tkshm_dimension *dims, size_t n, double now,
		  tkshm_decision *each)
{
	for (size_t i = 0; i < n; i++) {
		int rc = tk_strict_fallback(dims[i].table, dims[i].key,
					    dims[i].key_len, dims[i].cost, now,
					    &each[i]);
		if (rc != TKSHM_OK)
			return rc;
	}
	return TKSHM_OK;
}

static int
tk_strict_multi(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		double now, tkshm_decision *each)
{
	struct tkshm_table *t0 = dims[0].table;
	char kbuf[TKSHM_MULTI_MAX][TK_RKEY_MAX + 2];
	const char *kv[TKSHM_MULTI_MAX];
	size_t kl[TKSHM_MULTI_MAX];
	char abuf[3 + 5 * TKSHM_MULTI_MAX][40];
	const char *av[3 + 5 * TKSHM_MULTI_MAX];
	size_t al[3 + 5 * TKSHM_MULTI_MAX];
	struct tk_args keys = { (int)n, kv, kl }, args = { 0, av, al };
	double head[3] = { t0->redis->server_time ? 0 : now,
			   mode == TKSHM_MULTI_ALL ? 1 : 0, (double)n };
	redisReply *reply = NULL;
	int64_t v[6 + 5 * TKSHM_MULTI_MAX];
	bool all_ok = true;
	int rc;

	for (size_t i = 0; i < n; i++) {
		kl[i] = tk_redis_multi_key_of(dims[i].table, dims[i].key,
					      dims[i].key_len, kbuf[i],
					      sizeof kbuf[i]);
		if (!kl[i])
			return TKSHM_EKEYLONG;
		kv[i] = kbuf[i];
	}
	for (int i = 0; i < 3; i++, args.n++)
		/* cppcheck-suppress unreadVariable ; read through args.len */
		al[args.n] =
			tk_arg_f64(abuf[args.n], sizeof abuf[args.n], head[i]);
	for (size_t i = 0; i < n; i++) {
		double d[5];

		tk_multi_dim_args(dims[i].table, dims[i].cost, d);
		for (int j = 0; j < 5; j++, args.n++)
			/* cppcheck-suppress unreadVariable ; see above */
			al[args.n] = tk_arg_f64(abuf[args.n],
						sizeof abuf[args.n], d[j]);
	}
	for (int i = 0; i < args.n; i++)
		av[i] = abuf[i];
	rc = tk_redis_call(t0, TK_SCRIPT_MULTI, &keys, &args, &reply);
	if (rc == TKSHM_EUNAVAILABLE)
		return tk_multi_fallback(dims, n, now, each);
	if (rc != TKSHM_OK)
		return rc;
	if (!tk_reply_ints(reply, 6 + 5 * n, v)) {
		freeReplyObject(reply);
		return TKSHM_EREDIS;
	}
	freeReplyObject(reply);
	for (size_t i = 0; i < n; i++) {
		tk_decision_of(&v[6 + 5 * i], &each[i]);
		all_ok = all_ok && each[i].allowed;
	}
	/* As the shared-memory path counts (multi.c): each decision that
	 * stands, once; a denied `all` counts its deniers only (the others
	 * consumed nothing). */
	for (size_t i = 0; i < n; i++) {
		if (!each[i].allowed)
			tk_count(dims[i].table, TK_C_DENIED, 1);
		else if (mode == TKSHM_MULTI_ANY || all_ok)
			tk_count(dims[i].table, TK_C_ALLOWED, 1);
	}
	return TKSHM_OK;
}

const struct tk_strict_ops tk_strict_ops = {
	tk_strict_check,
	tk_strict_peek,
	tk_strict_reserve,
	tk_strict_multi,
};
