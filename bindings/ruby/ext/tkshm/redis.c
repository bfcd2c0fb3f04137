/* Tkshm::Redis: the connection settings of strict tables, and the
 * reference-counted, locked connection behind them (redis_conn.h).
 * Without the library's Redis tier, Tkshm::Redis.new raises ENOTSUP. */
#include "tkshm_rb.h"
#include "redis_conn.h"

#include <pthread.h>
#include <string.h>

struct rb_redis_conn {
	tkshm_redis *r;
	pthread_mutex_t lock;
	int refs; /* the Ruby object's and each attached table's; changed
		     holding the GVL only */
};

void
tkshm_rb_redis_conn_retain(rb_redis_conn *c)
{
	c->refs++;
}

void
tkshm_rb_redis_conn_release(rb_redis_conn *c)
{
	if (--c->refs > 0)
		return;
#ifdef TKSHM_RB_HAVE_REDIS
	tkshm_redis_close(c->r);
#endif
	pthread_mutex_destroy(&c->lock);
	xfree(c);
}

tkshm_redis *
tkshm_rb_redis_conn_handle(rb_redis_conn *c)
{
	return c->r;
}

void
tkshm_rb_redis_conn_lock(rb_redis_conn *c)
{
	if (c)
		pthread_mutex_lock(&c->lock);
}

void
tkshm_rb_redis_conn_unlock(rb_redis_conn *c)
{
	if (c)
		pthread_mutex_unlock(&c->lock);
}

/* The Ruby object holds a pointer to its connection (NULL until
 * configured). */
static void
redis_free(void *p)
{
	rb_redis_conn **slot = p;

	if (*slot)
		tkshm_rb_redis_conn_release(*slot);
	xfree(slot);
}

static const rb_data_type_t redis_type = {
	.wrap_struct_name = "Tkshm::Redis",
	.function = { .dmark = NULL, .dfree = redis_free },
	.flags = RUBY_TYPED_FREE_IMMEDIATELY,
};

static VALUE
redis_alloc(VALUE klass)
{
	rb_redis_conn **slot;

	return TypedData_Make_Struct(klass, rb_redis_conn *, &redis_type, slot);
}

rb_redis_conn *
tkshm_rb_redis_conn(VALUE v)
{
	rb_redis_conn **slot;

	if (!rb_typeddata_is_kind_of(v, &redis_type))
		rb_raise(rb_eTypeError, "expected a Tkshm::Redis");
	slot = RTYPEDDATA_DATA(v);
	if (!*slot)
		rb_raise(rb_eArgError, "Tkshm::Redis not configured");
	return *slot;
}

#ifdef TKSHM_RB_HAVE_REDIS
/* One option of the Hash lib/tkshm/redis.rb passes (Symbol keys, already
 * checked against the known names; nil: not given). */
static VALUE
opt(VALUE h, const char *name)
{
	return rb_hash_aref(h, ID2SYM(rb_intern(name)));
}

static const char *
opt_str(VALUE h, const char *name)
{
	VALUE v = opt(h, name);

	return NIL_P(v) ? NULL : StringValueCStr(v);
}

static double
opt_ms(VALUE h, const char *name)
{
	VALUE v = opt(h, name);

	return NIL_P(v) ? 0 : NUM2DBL(v);
}

static void
fill_options(VALUE h, tkshm_redis_options *o)
{
	VALUE v;

	o->host = opt_str(h, "host");
	o->port = NIL_P(v = opt(h, "port")) ? 0 : NUM2INT(v);
	o->unix_path = opt_str(h, "unix_path");
	o->username = opt_str(h, "username");
	o->password = opt_str(h, "password");
	o->db = NIL_P(v = opt(h, "db")) ? 0 : NUM2INT(v);
	o->cluster = opt_str(h, "cluster");
	o->sentinels = opt_str(h, "sentinels");
	o->sentinel_master = opt_str(h, "sentinel_master");
	o->connect_timeout_ms = opt_ms(h, "connect_timeout_ms");
	o->command_timeout_ms = opt_ms(h, "command_timeout_ms");
	o->breaker_failures =
		NIL_P(v = opt(h, "breaker_failures")) ? 0 : NUM2UINT(v);
	o->breaker_open_ms = opt_ms(h, "breaker_open_ms");
	v = opt(h, "server_time");
	o->server_time = NIL_P(v) ? true : RTEST(v);
}
#endif

/* _configure(options): makes the connection handle (it connects on first
 * use, in the process that uses it: a forked worker gets its own). */
static VALUE
redis_configure(VALUE self, VALUE h)
{
	rb_redis_conn **slot;

	TypedData_Get_Struct(self, rb_redis_conn *, &redis_type, slot);
	if (*slot)
		rb_raise(rb_eRuntimeError, "Tkshm::Redis configured already");
	Check_Type(h, T_HASH);
#ifdef TKSHM_RB_HAVE_REDIS
	{
		tkshm_redis_options o = TKSHM_REDIS_OPTIONS_INIT;
		tkshm_redis *r = NULL;
		rb_redis_conn *c;
		int rc;

		fill_options(h, &o);
		rc = tkshm_redis_open(&o, &r);
		RB_GC_GUARD(h);
		if (rc != TKSHM_OK)
			tkshm_rb_raise(rc, NULL);
		c = ZALLOC(rb_redis_conn);
		c->r = r;
		pthread_mutex_init(&c->lock, NULL);
		c->refs = 1;
		*slot = c;
	}
#else
	tkshm_rb_raise(TKSHM_ENOTSUP,
		       "this tkshm was built without its Redis "
		       "tier (install libhiredis-dev and rebuild)");
#endif
	return self;
}

/* last_error: why this process's last exchange failed ("" if it worked). */
static VALUE
redis_last_error(VALUE self)
{
	char buf[512] = "";
#ifdef TKSHM_RB_HAVE_REDIS
	rb_redis_conn *c = tkshm_rb_redis_conn(self);

	tkshm_rb_redis_conn_lock(c);
	(void)tkshm_redis_last_error(c->r, buf, sizeof(buf));
	tkshm_rb_redis_conn_unlock(c);
#else
	(void)self;
#endif
	return rb_utf8_str_new_cstr(buf);
}

void
tkshm_rb_init_redis(VALUE m)
{
	VALUE c = rb_define_class_under(m, "Redis", rb_cObject);

	rb_define_alloc_func(c, redis_alloc);
	rb_define_private_method(c, "_configure", redis_configure, 1);
	rb_define_method(c, "last_error", redis_last_error, 0);
}
