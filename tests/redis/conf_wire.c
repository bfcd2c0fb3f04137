/*
 * conf_wire.c - the Redis conformance tests' bridge (conf_wire.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <string.h>

#include "conf_wire.h"
#include "shm/wide.h"

void
conf_redis_up(struct conf_redis *r)
{
	struct tk_redis_conf conf;
	int rc;

	memset(r, 0, sizeof *r);
	tkt_redis_start(&r->srv);
	tkt_redis_conf(&r->srv, &conf);
	/* Generous: the sanitizer builds are slow, and a test never wants
	 * its own timeout to decide anything. */
	conf.connect_timeout_ms = 10000;
	conf.command_timeout_ms = 10000;
	assert_rc(tk_conn_new(&conf, &r->conn), TKSHM_OK);
	rc = tk_conn_ready(r->conn);
	if (rc != TKSHM_OK)
		fail_msg("tk_conn_ready: %s", tkshm_error_name(rc));
}

void
conf_redis_down(struct conf_redis *r)
{
	tk_conn_free(r->conn);
	r->conn = NULL;
	tkt_redis_stop(&r->srv);
}

void
conf_args_init(struct conf_args *a)
{
	a->n = 0;
}

void
conf_args_f64(struct conf_args *a, double v)
{
	size_t len;

	assert_true(a->n < CONF_ARGS_MAX);
	len = tk_arg_f64(a->buf[a->n], sizeof a->buf[a->n], v);
	if (len == 0)
		fail_msg("tk_arg_f64(%.17g) failed", v);
	a->v[a->n] = a->buf[a->n];
	a->len[a->n] = len;
	a->n++;
}

void
conf_args_str(struct conf_args *a, const char *s)
{
	size_t len = strlen(s);

	assert_true(a->n < CONF_ARGS_MAX);
	assert_true(len < sizeof a->buf[a->n]);
	memcpy(a->buf[a->n], s, len + 1);
	a->v[a->n] = a->buf[a->n];
	a->len[a->n] = len;
	a->n++;
}

enum tk_script_id
conf_check_args(const tkshm_policy *p, double now, double cost,
		struct conf_args *a)
{
	conf_args_init(a);
	conf_args_f64(a, now);
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		conf_args_f64(a, p->u.gcra.period_ms);
		conf_args_f64(a, p->u.gcra.limit);
		conf_args_f64(a, p->u.gcra.burst);
		conf_args_f64(a, cost);
		return TK_SCRIPT_GCRA;
	case TKSHM_KIND_TOKEN_BUCKET:
		conf_args_f64(a, p->u.token_bucket.capacity);
		conf_args_f64(a, p->u.token_bucket.refill_per_sec);
		conf_args_f64(a, cost);
		return TK_SCRIPT_TOKEN_BUCKET;
	case TKSHM_KIND_FIXED_WINDOW:
		conf_args_f64(a, p->u.fixed_window.limit);
		conf_args_f64(a, p->u.fixed_window.window_ms);
		conf_args_f64(a, cost);
		return TK_SCRIPT_FIXED_WINDOW;
	case TKSHM_KIND_SLIDING_WINDOW:
		conf_args_f64(a, p->u.sliding_window.window_ms);
		conf_args_f64(a, p->u.sliding_window.limit);
		conf_args_f64(a, cost);
		conf_args_f64(a, p->u.sliding_window.buckets);
		return TK_SCRIPT_SLIDING_WINDOW;
	case TKSHM_KIND_SLIDING_LOG:
		conf_args_f64(a, p->u.sliding_log.window_ms);
		conf_args_f64(a, p->u.sliding_log.limit);
		conf_args_f64(a, cost);
		return TK_SCRIPT_SLIDING_LOG;
	case TKSHM_KIND_QUOTA:
		if (p->u.quota.reset_cadence == TKSHM_QUOTA_ROLLING) {
			/* ThrottleKit's rolling quota is its slidingWindow. */
			conf_args_f64(a, p->u.quota.period_ms);
			conf_args_f64(a, p->u.quota.limit);
			conf_args_f64(a, cost);
			conf_args_f64(a, p->u.quota.buckets);
			return TK_SCRIPT_SLIDING_WINDOW;
		}
		conf_args_f64(a, p->u.quota.limit);
		conf_args_f64(a, cost);
		conf_args_f64(a, p->u.quota.reset_cadence);
		conf_args_f64(a, p->u.quota.period_ms);
		conf_args_f64(a, p->u.quota.anchor);
		/* The same double tk_calendar_init derives. */
		conf_args_f64(a, p->u.quota.offset_minutes * 60000);
		conf_args_f64(a, p->u.quota.week_starts_on);
		return TK_SCRIPT_QUOTA;
	case TKSHM_KIND_LEAKY_BUCKET:
		conf_args_f64(a, p->u.leaky_bucket.rate_per_sec);
		conf_args_f64(a, p->u.leaky_bucket.max_queue_ms);
		conf_args_f64(a, cost);
		return TK_SCRIPT_LEAKY;
	default:
		fail_msg("no Redis script for kind %d", (int)p->kind);
	}
	return TK_SCRIPT_COUNT;
}

redisReply *
conf_eval(struct conf_redis *r, enum tk_script_id id, const char *const *keys,
	  int nkeys, const struct conf_args *a)
{
	size_t klen[CONF_ARGS_MAX];
	struct tk_args k, v;
	redisReply *reply = NULL;
	char err[512] = "";
	int rc;

	assert_true(nkeys >= 0 && nkeys <= CONF_ARGS_MAX);
	for (int i = 0; i < nkeys; i++)
		klen[i] = strlen(keys[i]);
	k.n = nkeys;
	k.v = keys;
	k.len = klen;
	v.n = a->n;
	v.v = a->v;
	v.len = a->len;
	rc = tk_conn_eval(r->conn, id, &k, &v, &reply, err, sizeof err);
	if (rc != TKSHM_OK)
		fail_msg("%s: %s (%s)", tk_script_name(id),
			 tkshm_error_name(rc), err);
	assert_non_null(reply);
	for (int i = 0; r->persist && i < nkeys; i++) {
		const char *argv[2] = { "PERSIST", keys[i] };
		size_t alen[2] = { 7, klen[i] };
		struct tk_args cmd = { 2, argv, alen };
		redisReply *y = NULL;

		rc = tk_conn_command(r->conn, &cmd, &y, err, sizeof err);
		if (rc != TKSHM_OK)
			fail_msg("PERSIST: %s (%s)", tkshm_error_name(rc), err);
		freeReplyObject(y);
	}
	return reply;
}

void
conf_decode(const tkshm_table *t, const redisReply *const *elems, size_t n,
	    struct conf_state *st)
{
	int rc;

	memset(st, 0, sizeof *st);
	rc = tk_state_from_reply(&t->algo, elems, n, st->w, &st->present);
	if (rc != TKSHM_OK)
		fail_msg("tk_state_from_reply (%zu elements): %s", n,
			 tkshm_error_name(rc));
}

void
conf_redis_check(struct conf_redis *r, const tkshm_table *t, const char *key,
		 double now, double cost, tkshm_decision *d, int64_t *now_ms,
		 struct conf_state *st)
{
	const redisReply *const *state;
	struct conf_args a;
	enum tk_script_id id = conf_check_args(&t->policy, now, cost, &a);
	redisReply *reply = conf_eval(r, id, &key, 1, &a);
	size_t n;

	assert_rc(tk_reply_check(reply, d, now_ms, &state, &n), TKSHM_OK);
	conf_decode(t, state, n, st);
	freeReplyObject(reply);
}

void
conf_redis_reserve(struct conf_redis *r, const tkshm_table *t, const char *key,
		   double now, double cost, tkshm_reservation *res,
		   int64_t *now_ms, struct conf_state *st)
{
	const redisReply *const *state;
	struct conf_args a;
	enum tk_script_id id = conf_check_args(&t->policy, now, cost, &a);
	redisReply *reply;
	size_t n;

	assert_int_equal(id, TK_SCRIPT_LEAKY);
	reply = conf_eval(r, id, &key, 1, &a);
	assert_rc(tk_reply_reservation(reply, res, now_ms, &state, &n),
		  TKSHM_OK);
	conf_decode(t, state, n, st);
	freeReplyObject(reply);
}

/* Not inlined, and the key copied to a full-size buffer: gcc at -O2 would
 * otherwise follow a short literal into XXH3's long-input path, which it
 * never takes, and warn (-Warray-bounds) about reads past it. */
static __attribute__((noinline)) void
conf_where(tkshm_table *t, const char *key, struct tk_where *w)
{
	char buf[TKSHM_KEY_MAX];
	size_t len = strlen(key);

	assert_true(len > 0 && len <= sizeof buf);
	memcpy(buf, key, len);
	tk_where_of(t, tk_key_fp(t, buf, len), w);
}

void
conf_shm_state(tkshm_table *t, const char *key, struct conf_state *st)
{
	struct tk_where w;
	uint64_t word;
	int rc;

	memset(st, 0, sizeof *st);
	conf_where(t, key, &w);
	if (!tk_algo_is_wide(&t->algo)) {
		st->present = tk_find_real(t, &w, &word) >= 0;
		if (st->present)
			st->w[0] = word;
		return;
	}
	rc = tk_wide_lookup(t, &w, st->w);
	if (rc < 0)
		fail_msg("tk_wide_lookup(%s): %s", key, tkshm_error_name(rc));
	st->present = rc == 1;
	if (!st->present)
		memset(st->w, 0, sizeof st->w);
}

void
conf_log_pruned(const tkshm_table *t, double now, struct conf_state *st)
{
	const struct tk_sliding_log *a = &t->algo.u.sliding_log;
	struct tk_sliding_log_view v;
	unsigned live;

	if (t->algo.kind != TKSHM_KIND_SLIDING_LOG || !st->present)
		return;
	tk_sliding_log_eval(a, st->w, now, &v);
	live = v.n - v.first;
	memmove(st->w + 1, st->w + 1 + v.first, sizeof st->w[0] * live);
	memset(st->w + 1 + live, 0, sizeof st->w[0] * (a->cap - live));
	st->w[0] = live;
	/* An empty ZSET is no key. */
	if (live == 0)
		memset(st, 0, sizeof *st);
}

void
conf_redis_raw_state(struct conf_redis *r, const tkshm_table *t,
		     const char *key, struct conf_state *st)
{
	const char *v[6];
	size_t len[6];
	struct tk_args a;
	redisReply *reply = NULL;
	char err[512] = "";
	int n = 0, rc;

	switch (tk_state_read_type(&t->algo)) {
	case 1:
		v[n++] = "GET";
		v[n++] = key;
		break;
	case 2:
		v[n++] = "HMGET";
		v[n++] = key;
		v[n++] = "t";
		v[n++] = "l";
		break;
	case 3:
		v[n++] = "HMGET";
		v[n++] = key;
		v[n++] = "s";
		v[n++] = "c";
		break;
	case 4:
		v[n++] = "HGETALL";
		v[n++] = key;
		break;
	case 5:
		v[n++] = "ZRANGE";
		v[n++] = key;
		v[n++] = "0";
		v[n++] = "-1";
		v[n++] = "WITHSCORES";
		break;
	default:
		fail_msg("no Redis encoding for kind %d", (int)t->algo.kind);
	}
	for (int i = 0; i < n; i++)
		len[i] = strlen(v[i]);
	a.n = n;
	a.v = v;
	a.len = len;
	rc = tk_conn_command(r->conn, &a, &reply, err, sizeof err);
	if (rc != TKSHM_OK)
		fail_msg("%s %s: %s (%s)", v[0], key, tkshm_error_name(rc),
			 err);
	if (reply->type == REDIS_REPLY_ARRAY)
		conf_decode(t, (const redisReply *const *)reply->element,
			    reply->elements, st);
	else /* GET: one string or nil */
		conf_decode(t, (const redisReply *const *)&reply, 1, st);
	freeReplyObject(reply);
}

void
conf_redis_read_state(struct conf_redis *r, const tkshm_table *t,
		      const char *key, double now, int64_t *now_ms,
		      struct conf_state *st)
{
	struct conf_args a;
	redisReply *reply;

	conf_args_init(&a);
	conf_args_f64(&a, now);
	conf_args_f64(&a, tk_state_read_type(&t->algo));
	reply = conf_eval(r, TK_SCRIPT_READ, &key, 1, &a);
	assert_int_equal(reply->type, REDIS_REPLY_ARRAY);
	assert_true(reply->elements >= 1);
	assert_int_equal(reply->element[0]->type, REDIS_REPLY_INTEGER);
	*now_ms = reply->element[0]->integer;
	conf_decode(t, (const redisReply *const *)reply->element + 1,
		    reply->elements - 1, st);
	freeReplyObject(reply);
}

void
conf_assert_state(const char *what, const tkshm_table *t,
		  const struct conf_state *got, const struct conf_state *want)
{
	if (got->present != want->present)
		fail_msg("%s: state %s, want %s", what,
			 got->present ? "present" : "absent",
			 want->present ? "present" : "absent");
	if (!got->present)
		return;
	for (unsigned i = 0; i < t->algo.words; i++)
		if (got->w[i] != want->w[i])
			fail_msg("%s: state word %u is %#llx (%.17g), want "
				 "%#llx (%.17g)",
				 what, i, (unsigned long long)got->w[i],
				 tk_word_f64(got->w[i]),
				 (unsigned long long)want->w[i],
				 tk_word_f64(want->w[i]));
}

/* mulberry32: a 32-bit state stepped by 0x6D2B79F5, then mixed by two
 * xorshift-multiply rounds into 32 output bits. */
double
conf_rng_next(struct conf_rng *r)
{
	uint32_t t;

	r->s += 0x6D2B79F5u;
	t = r->s;
	t = (t ^ (t >> 15)) * (t | 1u);
	t ^= t + (t ^ (t >> 7)) * (t | 61u);
	t ^= t >> 14;
	return (double)t / 4294967296.0;
}
