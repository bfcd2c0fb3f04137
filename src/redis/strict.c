/*
 * strict.c - strict mode: one atomic Lua script per decision (strict.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/decision.h"
#include "base/clock.h"
#include "global/global_shm.h"
#include "redis/neg_cache.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "redis/strict.h"
#include "redis/strict_args.h"
#include "shaper/reserve.h"
#include "shm/atomic.h"
#include "shm/multi.h"

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

/* A check script's answer, as tk_check_valid decodes it. */
struct tk_check_ans {
	tkshm_decision d;
	int64_t now;
};

/* True when the state listing a reply ends with decodes for the table's
 * algorithm (tk_state_from_reply; a kind without a Redis encoding has
 * none to check). */
static bool
tk_state_valid(const struct tkshm_table *t, const redisReply *const *state,
	       size_t n)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	bool present;

	return tk_state_from_reply(&t->algo, state, n, words, &present) !=
	       TKSHM_EREDIS;
}

/* A check script's reply (state_codec.h): six integers whose decision
 * the table's algorithm can make, then a state listing that decodes.
 * Anything else is a Redis fault (tk_redis_call). */
static bool
tk_check_valid(const struct tkshm_table *t, const redisReply *r, void *ctx)
{
	struct tk_check_ans *x = ctx;
	const redisReply *const *state;
	size_t n;

	return tk_reply_check(r, &x->d, &x->now, &state, &n) == TKSHM_OK &&
	       x->now >= 0 && tk_decision_accept(&t->algo, &x->d) &&
	       tk_state_valid(t, state, n);
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

/* This host's safe share of `key` (the failure policy safe-share): its
 * key, and what a cost charges it (*charge: cost * hosts, at most
 * TKSHM_COST_MAX), N being *hosts. */
static struct tk_keyref
tk_share_of(const struct tkshm_table *t, const void *key, size_t len,
	    double cost, unsigned char buf[24], double *charge, double *hosts)
{
	*hosts = tk_global_hosts(t->global, t->policy.global.hosts);
	*charge = cost * *hosts;
	if (*charge > TKSHM_COST_MAX)
		*charge = TKSHM_COST_MAX;
	return tk_share_key(t, key, len, buf);
}

/* True while the table's circuit is open: the call would be turned away,
 * so the failure policy decides before any argument is formatted.  (A
 * half-open circuit goes on to tk_redis_call, where one caller wins the
 * probe.) */
static bool
tk_strict_circuit_open(const struct tkshm_table *t)
{
	/* Relaxed: a hint; tk_redis_call's breaker decides for real. */
	double until =
		tk_word_f64(tk_load_relaxed(&t->global->breaker.open_until));

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
		d->retry_after_ms =
			tk_denial_retry((int64_t)ceil(r->breaker_open_ms));
		d->reset_at = (int64_t)ceil(now + r->breaker_open_ms);
		break;
	default: {
		unsigned char buf[24];
		double charge, hosts;
		struct tk_keyref k =
			tk_share_of(t, key, len, cost, buf, &charge, &hosts);
		/* The local clock: this share never meets Redis's. */
		int rc = tk_table_check_ref(t, &k, charge, tkshm_now_ms(), d,
					    NULL);

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
	struct tk_check_ans ans;
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
	rc = tk_redis_call(t, id, &k.keys, &a.args, tk_check_valid, &ans,
			   &reply);
	if (rc != TKSHM_OK) /* whatever the fault: the failure policy */
		return tk_strict_fallback(t, key, len, cost, now, out);
	*out = ans.d;
	tk_cache_store(t, key, len, reply, 6,
		       t->redis->server_time ? (double)ans.now : now, sent);
	freeReplyObject(reply);
	tk_count(t, out->allowed ? TK_C_ALLOWED : TK_C_DENIED, 1);
	if (t->policy.global.failure == TKSHM_FAILURE_SAFE_SHARE)
		tk_redis_hosts_tick(t);
	return TKSHM_OK;
}

/* read.lua's answer, as tk_read_valid decodes it. */
struct tk_read_ans {
	uint64_t words[TK_ALGO_MAX_WORDS];
	bool present;
	int64_t now;
};

/* {now, state...}: an integer now >= 0, then a listing that decodes. */
static bool
tk_read_valid(const struct tkshm_table *t, const redisReply *r, void *ctx)
{
	struct tk_read_ans *x = ctx;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    !r->element[0] || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[0]->integer < 0)
		return false;
	x->now = r->element[0]->integer;
	return tk_state_from_reply(
		       &t->algo, (const redisReply *const *)r->element + 1,
		       r->elements - 1, x->words, &x->present) == TKSHM_OK;
}

static int
tk_strict_peek(struct tkshm_table *t, const void *key, size_t len, double now,
	       tkshm_decision *out)
{
	struct tk_rkey k;
	struct tk_argv a;
	struct tk_read_ans ans;
	redisReply *reply = NULL;
	int rc;

	if (!tk_rkey_init(&k, t, key, len))
		return TKSHM_EKEYLONG;
	tk_strict_read_args(t, t->redis->server_time ? 0 : now, &a);
	/* A peek decides nothing, so a fault is the caller's to see (the
	 * breaker still counts it). */
	rc = tk_redis_call(t, TK_SCRIPT_READ, &k.keys, &a.args, tk_read_valid,
			   &ans, &reply);
	if (rc != TKSHM_OK)
		return rc;
	/* The state read back, decided by the C algorithm's own peek
	 * formula. */
	tk_algo_peek_w(&t->algo, ans.present, ans.words,
		       t->redis->server_time ? (double)ans.now : now, out);
	freeReplyObject(reply);
	return TKSHM_OK;
}

/* The failure policy's reservation, for a shaper Redis did not answer
 * (as tk_strict_fallback decides a check). */
static int
tk_reserve_fallback(struct tkshm_table *t, const void *key, size_t len,
		    double cost, tkshm_reservation *out)
{
	memset(out, 0, sizeof *out);
	switch (t->policy.global.failure) {
	case TKSHM_FAILURE_OPEN:
		out->accepted = true;
		break;
	case TKSHM_FAILURE_CLOSED:
		out->delay_ms = (int64_t)ceil(t->redis->breaker_open_ms);
		out->retry_after_ms = out->delay_ms;
		break;
	default: {
		unsigned char buf[24];
		double charge, hosts;
		struct tk_keyref k =
			tk_share_of(t, key, len, cost, buf, &charge, &hosts);
		int rc = tk_reserve_ref(t, &k, charge, tkshm_now_ms(), out);

		if (rc != TKSHM_OK)
			return rc;
		break;
	}
	}
	tk_gcount(t->global,
		  out->accepted ? TK_G_FALLBACK_ALLOWED : TK_G_FALLBACK_DENIED,
		  1);
	return TKSHM_OK;
}

/* leaky.lua's answer, as tk_reserve_valid decodes it. */
struct tk_reserve_ans {
	tkshm_reservation res;
	int64_t now;
};

static bool
tk_reserve_valid(const struct tkshm_table *t, const redisReply *r, void *ctx)
{
	struct tk_reserve_ans *x = ctx;
	const redisReply *const *state;
	size_t n;

	memset(&x->res, 0, sizeof x->res);
	return tk_reply_reservation(r, &x->res, &x->now, &state, &n) ==
		       TKSHM_OK &&
	       x->now >= 0 && tk_reservation_valid(&x->res) &&
	       tk_state_valid(t, state, n);
}

static int
tk_strict_reserve(struct tkshm_table *t, const void *key, size_t len,
		  double cost, double now, tkshm_reservation *out)
{
	struct tk_rkey k;
	struct tk_argv a;
	struct tk_reserve_ans ans;
	redisReply *reply = NULL;
	tkshm_decision d;
	double sent;

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
	/* {accepted, delayMs, retryAfterMs, wait (string), now, state};
	 * whatever the fault, the failure policy decides. */
	if (tk_strict_circuit_open(t) ||
	    tk_redis_call(t, TK_SCRIPT_LEAKY, &k.keys, &a.args,
			  tk_reserve_valid, &ans, &reply) != TKSHM_OK)
		return tk_reserve_fallback(t, key, len, cost, out);
	*out = ans.res;
	tk_cache_store(t, key, len, reply, 5,
		       t->redis->server_time ? (double)ans.now : now, sent);
	freeReplyObject(reply);
	tk_count(t, out->accepted ? TK_C_ALLOWED : TK_C_DENIED, 1);
	if (t->policy.global.failure == TKSHM_FAILURE_SAFE_SHARE)
		tk_redis_hosts_tick(t);
	return TKSHM_OK;
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

/* The safe shares of an `all` that Redis did not answer, share[0..m)
 * (dimension idx[j] of the request, its share key and charge), decided
 * together: a shared-memory `all` of the share keys, which consumes
 * nothing unless every share admits.  With `closed` (another dimension's
 * failure policy denies) nothing may be consumed: each share is only
 * decided.  Fills each[idx[j]]. */
static int
tk_multi_shares(const tkshm_dimension *share, const size_t *idx,
		const double *hosts, size_t m, bool closed,
		tkshm_decision *each)
{
	tkshm_decision sd[TKSHM_MULTI_MAX];
	/* The local clock: a share never meets Redis's. */
	double now = tkshm_now_ms();
	int rc = TKSHM_OK;

	for (size_t j = 0; closed && j < m && rc == TKSHM_OK; j++) {
		struct tk_decided dd;
		struct tkshm_table *t = share[j].table;

		rc = tk_table_decide(
			t, tk_key_fp(t, share[j].key, share[j].key_len), now,
			&share[j].cost, 1, &sd[j], &dd);
		if (rc == TKSHM_OK && !sd[j].allowed)
			tk_count(t, TK_C_DENIED, 1);
	}
	if (!closed)
		rc = tk_multi_local(TKSHM_MULTI_ALL, share, m, now, sd);
	if (rc != TKSHM_OK)
		return rc;
	for (size_t j = 0; j < m; j++) {
		tkshm_decision *d = &each[idx[j]];

		*d = sd[j];
		d->remaining = (int64_t)floor((double)d->remaining / hosts[j]);
		d->flags |= TKSHM_DECISION_FALLBACK;
		tk_gcount(share[j].table->global,
			  d->allowed ? TK_G_FALLBACK_ALLOWED :
				       TK_G_FALLBACK_DENIED,
			  1);
	}
	return TKSHM_OK;
}

/* Redis did not answer a multi check: each dimension by its own failure
 * policy.  `any` decides them one by one.  `all` consumes nothing unless
 * every dimension admits (docs/cross-host.md): fail-open and fail-closed dimensions
 * consume nothing, and the safe shares are decided together
 * (tk_multi_shares). */
static int
tk_multi_fallback(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		  double now, tkshm_decision *each)
{
	tkshm_dimension share[TKSHM_MULTI_MAX];
	unsigned char buf[TKSHM_MULTI_MAX][24];
	double hosts[TKSHM_MULTI_MAX];
	size_t idx[TKSHM_MULTI_MAX], m = 0;
	bool closed = false;

	for (size_t i = 0; i < n; i++) {
		struct tkshm_table *t = dims[i].table;
		struct tk_keyref k;
		double charge;

		if (mode == TKSHM_MULTI_ANY ||
		    t->policy.global.failure != TKSHM_FAILURE_SAFE_SHARE) {
			int rc = tk_strict_fallback(
				t, dims[i].key, dims[i].key_len, dims[i].cost,
				now, &each[i]);
			if (rc != TKSHM_OK)
				return rc;
			closed = closed || !each[i].allowed;
			continue;
		}
		k = tk_share_of(t, dims[i].key, dims[i].key_len, dims[i].cost,
				buf[m], &charge, &hosts[m]);
		share[m].table = t;
		share[m].key = buf[m];
		share[m].key_len = k.len;
		share[m].cost = charge;
		idx[m++] = i;
	}
	return m ? tk_multi_shares(share, idx, hosts, m, closed, each) :
		   TKSHM_OK;
}

/* multi.lua's answer, decoded into each[] by tk_multi_valid. */
struct tk_multi_ans {
	const tkshm_dimension *dims;
	size_t n;
	tkshm_decision *each;
};

/* {binding decision (5), now, then per dimension allowed, limit,
 * remaining, resetAt, retryAfterMs}: integers, each dimension's a
 * decision its own table's algorithm can make. */
static bool
tk_multi_valid(const struct tkshm_table *t, const redisReply *r, void *ctx)
{
	struct tk_multi_ans *x = ctx;

	(void)t;
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 6 + 5 * x->n)
		return false;
	for (size_t i = 0; i < 6 + 5 * x->n; i++)
		if (!r->element[i] ||
		    r->element[i]->type != REDIS_REPLY_INTEGER)
			return false;
	if (r->element[5]->integer < 0)
		return false;
	for (size_t i = 0; i < x->n; i++) {
		redisReply *const *v = r->element + 6 + 5 * i;
		tkshm_decision *d = &x->each[i];

		if (v[0]->integer != 0 && v[0]->integer != 1)
			return false;
		memset(d, 0, sizeof *d);
		d->allowed = v[0]->integer == 1;
		d->limit = v[1]->integer;
		d->remaining = v[2]->integer;
		d->reset_at = v[3]->integer;
		d->retry_after_ms = v[4]->integer;
		if (!tk_decision_accept(&x->dims[i].table->algo, d))
			return false;
	}
	return true;
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
	struct tk_multi_ans ans = { dims, n, each };
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
	rc = tk_redis_call(t0, TK_SCRIPT_MULTI, &keys, &args, tk_multi_valid,
			   &ans, &reply);
	if (rc == TKSHM_ECROSSSLOT)
		return rc;  /* the caller's keys, not a Redis fault */
	if (rc != TKSHM_OK) /* whatever the fault: each failure policy */
		return tk_multi_fallback(mode, dims, n, now, each);
	freeReplyObject(reply);
	/* Counted as the shared-memory path counts. */
	tk_multi_count(mode, dims, n, each);
	return TKSHM_OK;
}

const struct tk_strict_ops tk_strict_ops = {
	tk_strict_check,
	tk_strict_peek,
	tk_strict_reserve,
	tk_strict_multi,
};
