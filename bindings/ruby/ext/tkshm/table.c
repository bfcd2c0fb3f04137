/* Tkshm::Table: one tkshm_table handle of this process.
 *
 * The GVL: a check of a local table takes well under a microsecond and
 * never waits, so it runs holding the GVL (releasing and retaking it would
 * cost more than the check).  Two kinds of call can wait, and release it so
 * that the process's other Ruby threads (Puma's) run meanwhile:
 *   - opening, which may create and allocate a large file, or replace a
 *     table whose policy changed;
 *   - a check or peek of a strict table with Redis attached: a network
 *     round trip of up to the connection's command timeout.
 * While a call runs without the GVL its key is a private copy, and
 * `inflight` keeps close from freeing the handle under it. */
#include "tkshm_rb.h"
#include "redis_conn.h"

#include <ruby/thread.h>

#include <math.h>
#include <string.h>

typedef struct {
	tkshm_table *t;	      /* NULL once closed */
	rb_redis_conn *redis; /* the attached connection, or NULL */
	VALUE redis_obj;      /* its Tkshm::Redis, kept alive (marked) */
	tkshm_change change;  /* what opening did */
	int inflight;	      /* calls running without the GVL */
} rb_table;

static void
table_mark(void *p)
{
	rb_gc_mark(((rb_table *)p)->redis_obj);
}

static void
detach(rb_table *o)
{
	if (!o->redis)
		return;
#ifdef TKSHM_RB_HAVE_REDIS
	if (o->t)
		(void)tkshm_redis_attach(o->t, NULL);
#endif
	tkshm_rb_redis_conn_release(o->redis);
	o->redis = NULL;
	o->redis_obj = Qnil;
}

/* GC: detach, unmap and free only (tkshm_close writes nothing). */
static void
table_free(void *p)
{
	rb_table *o = p;

	detach(o);
	if (o->t)
		tkshm_close(o->t);
	xfree(o);
}

static const rb_data_type_t table_type = {
	.wrap_struct_name = "Tkshm::Table",
	.function = { .dmark = table_mark, .dfree = table_free },
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE
table_alloc(VALUE klass)
{
	rb_table *o;
	VALUE v = TypedData_Make_Struct(klass, rb_table, &table_type, o);

	o->redis_obj = Qnil;
	return v;
}

static rb_table *
open_table(VALUE self)
{
	rb_table *o;

	TypedData_Get_Struct(self, rb_table, &table_type, o);
	if (!o->t)
		rb_raise(rb_eIOError, "closed Tkshm::Table");
	return o;
}

/* For multi.c: the open table `v`'s state (TypeError for another object,
 * IOError when closed). */
tkshm_rb_table_ref
tkshm_rb_table_ref_of(VALUE v)
{
	rb_table *o;
	tkshm_rb_table_ref ref;

	if (!rb_typeddata_is_kind_of(v, &table_type))
		rb_raise(rb_eTypeError, "expected a Tkshm::Table");
	o = open_table(v);
	ref.table = o->t;
	ref.redis = o->redis;
	ref.inflight = &o->inflight;
	return ref;
}

/* --- opening ------------------------------------------------------------ */

typedef struct {
	const char *path;
	tkshm_options opts;
	tkshm_table *out;
	int rc;
} open_call;

static void *
open_nogvl(void *p)
{
	open_call *c = p;

	c->rc = tkshm_open(c->path, &c->opts, &c->out);
	return NULL;
}

/* _open(path or nil, policy or nil, slots, mode, create, keep): called once
 * by Table#initialize (lib/tkshm/table.rb), which names the options. */
static VALUE
table_open(VALUE self, VALUE path, VALUE policy, VALUE slots, VALUE mode,
	   VALUE create, VALUE keep)
{
	rb_table *o;
	open_call c = { NULL, TKSHM_OPTIONS_INIT, NULL, 0 };
	tkshm_policy pol;
	char err[256] = "";
	VALUE path_copy = NIL_P(path) ? Qnil : rb_str_new_frozen(path);
	long long nslots = NUM2LL(slots), nmode = NUM2LL(mode);

	TypedData_Get_Struct(self, rb_table, &table_type, o);
	if (o->t)
		rb_raise(rb_eRuntimeError, "Tkshm::Table is open already");
	if (nslots < 0)
		tkshm_rb_raise(TKSHM_EINVAL, "slots must be 0 or more");
	if (nmode < 0 || nmode > 0777)
		tkshm_rb_raise(TKSHM_EINVAL, "mode must be within 0 to 0777");
	if (!NIL_P(policy)) {
		int rc = tkshm_policy_parse(StringValueCStr(policy), &pol, err,
					    sizeof(err));
		if (rc != TKSHM_OK)
			tkshm_rb_raise(rc, err);
		c.opts.policy = &pol;
	}
	c.path = NIL_P(path_copy) ? NULL : StringValueCStr(path_copy);
	c.opts.slots = (uint64_t)nslots;
	c.opts.mode = (uint32_t)nmode;
	c.opts.flags = (RTEST(create) ? TKSHM_O_CREATE : 0) |
		       (RTEST(keep) ? TKSHM_O_KEEP : 0);
	c.opts.errbuf = err;
	c.opts.errbuf_len = sizeof(err);
	c.opts.change = &o->change;
	rb_thread_call_without_gvl(open_nogvl, &c, RUBY_UBF_IO, NULL);
	RB_GC_GUARD(path_copy);
	if (c.rc != TKSHM_OK)
		tkshm_rb_raise(c.rc, err);
	o->t = c.out;
	return self;
}

/* --- checks --------------------------------------------------------------- */

typedef struct {
	tkshm_table *t;
	rb_redis_conn *redis;
	const char *key;
	size_t key_len;
	double cost, now;
	bool peek;
	tkshm_decision d;
	int rc;
} check_call;

static void
run_check(check_call *c)
{
	if (c->peek)
		c->rc = tkshm_peek_at(c->t, c->key, c->key_len, c->now, &c->d);
	else
		c->rc = tkshm_check_at(c->t, c->key, c->key_len, c->cost,
				       c->now, &c->d);
}

/* The connection is one thread's at a time (tkshm_redis.h): the lock is
 * taken here, without the GVL, so a thread waiting for it blocks no other
 * Ruby thread. */
static void *
check_nogvl(void *p)
{
	check_call *c = p;

	tkshm_rb_redis_conn_lock(c->redis);
	run_check(c);
	tkshm_rb_redis_conn_unlock(c->redis);
	return NULL;
}

static double
now_arg(VALUE now)
{
	return NIL_P(now) ? tkshm_now_ms() : NUM2DBL(now);
}

static VALUE
decide(VALUE self, VALUE key, double cost, VALUE now, bool peek)
{
	rb_table *o = open_table(self);
	check_call c;

	StringValue(key);
	c = (check_call){ o->t,
			  o->redis,
			  RSTRING_PTR(key),
			  (size_t)RSTRING_LEN(key),
			  cost,
			  now_arg(now),
			  peek,
			  { 0 },
			  TKSHM_EINTR };
	/* A key the library refuses at once (empty, too long) never waits,
	 * and is never copied onto the stack. */
	if (!o->redis || c.key_len == 0 || c.key_len > TKSHM_KEY_MAX) {
		run_check(&c);
	} else {
		/* The key's bytes are copied (at most TKSHM_KEY_MAX): another
		 * thread may change the string while this one waits on Redis. */
		char copy[TKSHM_KEY_MAX];

		memcpy(copy, c.key, c.key_len);
		c.key = copy;
		/* _gvl2: no interrupt is raised before inflight is down;
		 * an interrupt pending before the call skips it (rc stays
		 * EINTR) and is raised by rb_thread_check_ints. */
		o->inflight++;
		rb_thread_call_without_gvl2(check_nogvl, &c, RUBY_UBF_IO, NULL);
		o->inflight--;
		rb_thread_check_ints();
	}
	RB_GC_GUARD(key);
	if (c.rc != TKSHM_OK)
		tkshm_rb_raise(c.rc, NULL);
	return tkshm_rb_decision_new(&c.d);
}

/* check(key, cost = 1, now_ms = nil) */
static VALUE
table_check(int argc, VALUE *argv, VALUE self)
{
	VALUE key, cost, now;

	rb_scan_args(argc, argv, "12", &key, &cost, &now);
	return decide(self, key, NIL_P(cost) ? 1.0 : NUM2DBL(cost), now, false);
}

/* peek(key, now_ms = nil) */
static VALUE
table_peek(int argc, VALUE *argv, VALUE self)
{
	VALUE key, now;

	rb_scan_args(argc, argv, "11", &key, &now);
	return decide(self, key, 1.0, now, true);
}

static VALUE
table_reset(VALUE self, VALUE key)
{
	rb_table *o = open_table(self);
	int rc;

	StringValue(key);
	rc = tkshm_reset(o->t, RSTRING_PTR(key), (size_t)RSTRING_LEN(key));
	if (rc != TKSHM_OK)
		tkshm_rb_raise(rc, NULL);
	return Qnil;
}

/* block(key, until_ms, now_ms = nil): every check before until_ms is
 * denied (GCRA and token bucket tables; others raise ENOTSUP). */
static VALUE
table_block(int argc, VALUE *argv, VALUE self)
{
	rb_table *o = open_table(self);
	VALUE key, until, now;
	int rc;

	rb_scan_args(argc, argv, "21", &key, &until, &now);
	StringValue(key);
	rc = tkshm_block_at(o->t, RSTRING_PTR(key), (size_t)RSTRING_LEN(key),
			    NUM2DBL(until), now_arg(now));
	if (rc != TKSHM_OK)
		tkshm_rb_raise(rc, NULL);
	return Qnil;
}

/* --- the rest ------------------------------------------------------------ */

static VALUE
table_policy(VALUE self)
{
	rb_table *o = open_table(self);
	tkshm_stats s;
	char buf[1024];
	int rc = tkshm_stats_get(o->t, &s);

	if (rc == TKSHM_OK)
		rc = tkshm_policy_format(&s.policy, buf, sizeof(buf));
	if (rc < 0)
		tkshm_rb_raise(rc, NULL);
	return rb_usascii_str_new_cstr(buf);
}

#define SET(h, name, v) rb_hash_aset(h, ID2SYM(rb_intern(name)), v)

static VALUE
global_stats(const tkshm_stats *s)
{
	VALUE g = rb_hash_new();

	SET(g, "redis_calls", ULL2NUM(s->global.redis_calls));
	SET(g, "redis_errors", ULL2NUM(s->global.redis_errors));
	SET(g, "breaker_opens", ULL2NUM(s->global.breaker_opens));
	SET(g, "cache_denials", ULL2NUM(s->global.cache_denials));
	SET(g, "fallback_allowed", ULL2NUM(s->global.fallback_allowed));
	SET(g, "fallback_denied", ULL2NUM(s->global.fallback_denied));
	SET(g, "no_lease", ULL2NUM(s->global.no_lease));
	SET(g, "redis_up", s->global.redis_up ? Qtrue : Qfalse);
	SET(g, "agent_pid", LL2NUM(s->global.agent_pid));
	return g;
}

/* stats: the counters and geometry, a Hash with Symbol keys. */
static VALUE
table_stats(VALUE self)
{
	rb_table *o = open_table(self);
	tkshm_stats s;
	VALUE h = rb_hash_new();
	int rc = tkshm_stats_get(o->t, &s);

	if (rc != TKSHM_OK)
		tkshm_rb_raise(rc, NULL);
	SET(h, "allowed", ULL2NUM(s.allowed));
	SET(h, "denied", ULL2NUM(s.denied));
	SET(h, "inserts", ULL2NUM(s.inserts));
	SET(h, "reclaims", ULL2NUM(s.reclaims));
	SET(h, "evictions", ULL2NUM(s.evictions));
	SET(h, "evictions_in_debt", ULL2NUM(s.evictions_in_debt));
	SET(h, "debt_restores", ULL2NUM(s.debt_restores));
	SET(h, "cas_retries", ULL2NUM(s.cas_retries));
	SET(h, "refusals", ULL2NUM(s.refusals));
	SET(h, "resets", ULL2NUM(s.resets));
	SET(h, "slots", ULL2NUM(s.slots));
	SET(h, "file_bytes", ULL2NUM(s.file_bytes));
	SET(h, "bytes_per_key", DBL2NUM(s.bytes_per_key));
	SET(h, "created_ms", DBL2NUM(s.created_ms));
	SET(h, "layout_version", UINT2NUM(s.layout_version));
	SET(h, "anonymous", s.anonymous ? Qtrue : Qfalse);
	SET(h, "global", global_stats(&s));
	return h;
}

/* change: what opening did, {kind:, states_kept:, slots_before:,
 * slots_after:, text:}. */
static VALUE
table_change(VALUE self)
{
	rb_table *o = open_table(self);
	VALUE h = rb_hash_new();

	SET(h, "kind",
	    rb_usascii_str_new_cstr(tkshm_change_name(o->change.kind)));
	SET(h, "states_kept", o->change.states_kept ? Qtrue : Qfalse);
	SET(h, "slots_before", ULL2NUM(o->change.slots_before));
	SET(h, "slots_after", ULL2NUM(o->change.slots_after));
	SET(h, "text", rb_usascii_str_new_cstr(o->change.text));
	return h;
}

/* attach(redis or nil): checks and peeks of this strict table go to Redis
 * through it; nil detaches. */
static VALUE
table_attach(VALUE self, VALUE redis)
{
	rb_table *o = open_table(self);
	rb_redis_conn *c = NIL_P(redis) ? NULL : tkshm_rb_redis_conn(redis);

	if (o->inflight)
		tkshm_rb_raise(TKSHM_EBUSY,
			       "another thread is using the table");
	if (!c) {
		detach(o);
		return Qnil;
	}
#ifdef TKSHM_RB_HAVE_REDIS
	{
		int rc =
			tkshm_redis_attach(o->t, tkshm_rb_redis_conn_handle(c));

		if (rc != TKSHM_OK)
			tkshm_rb_raise(rc,
				       rc == TKSHM_ENOTSUP ?
					       "only a strict table (a policy "
					       "with \";mode=strict\") takes a "
					       "Redis connection" :
					       NULL);
	}
#endif
	tkshm_rb_redis_conn_retain(c);
	if (o->redis)
		tkshm_rb_redis_conn_release(o->redis);
	o->redis = c;
	o->redis_obj = redis;
	return Qnil;
}

static VALUE
table_redis(VALUE self)
{
	return open_table(self)->redis_obj;
}

static VALUE
table_close(VALUE self)
{
	rb_table *o;

	TypedData_Get_Struct(self, rb_table, &table_type, o);
	if (!o->t)
		return Qnil;
	if (o->inflight)
		tkshm_rb_raise(TKSHM_EBUSY,
			       "another thread is using the table");
	detach(o);
	tkshm_close(o->t);
	o->t = NULL;
	return Qnil;
}

static VALUE
table_closed_p(VALUE self)
{
	rb_table *o;

	TypedData_Get_Struct(self, rb_table, &table_type, o);
	return o->t ? Qfalse : Qtrue;
}

void
tkshm_rb_init_table(VALUE m)
{
	VALUE c = rb_define_class_under(m, "Table", rb_cObject);

	rb_define_alloc_func(c, table_alloc);
	rb_define_private_method(c, "_open", table_open, 6);
	rb_define_method(c, "check", table_check, -1);
	rb_define_method(c, "peek", table_peek, -1);
	rb_define_method(c, "reset", table_reset, 1);
	rb_define_method(c, "block", table_block, -1);
	rb_define_method(c, "policy", table_policy, 0);
	rb_define_method(c, "stats", table_stats, 0);
	rb_define_method(c, "change", table_change, 0);
	rb_define_method(c, "attach", table_attach, 1);
	rb_define_method(c, "redis", table_redis, 0);
	rb_define_method(c, "close", table_close, 0);
	rb_define_method(c, "closed?", table_closed_p, 0);
}
