/* Tkshm.check_multi: several tables' keys decided at one instant as one
 * decision (tkshm_check_multi_at): in `all` mode nothing is consumed
 * unless every dimension admits.
 *
 * The GVL is released only when a dimension's table is strict with Redis
 * attached (a network round trip), as table.c does for one check; the
 * connections involved are then locked, each once, in address order (so
 * two threads never wait on each other), and the keys copied. */
#include "tkshm_rb.h"
#include "redis_conn.h"

#include <ruby/thread.h>

#include <stdlib.h>
#include <string.h>

typedef struct {
	tkshm_multi_mode mode;
	tkshm_dimension dims[TKSHM_MULTI_MAX];
	size_t n;
	double now;
	rb_redis_conn *conns[TKSHM_MULTI_MAX]; /* distinct, sorted */
	size_t nconns;
	tkshm_decision out, each[TKSHM_MULTI_MAX];
	size_t binding;
	int rc;
} multi_call;

static void
run_multi(multi_call *c)
{
	c->rc = tkshm_check_multi_at(c->mode, c->dims, c->n, c->now, &c->out,
				     c->each, &c->binding);
}

static void *
multi_nogvl(void *p)
{
	multi_call *c = p;

	for (size_t i = 0; i < c->nconns; i++)
		tkshm_rb_redis_conn_lock(c->conns[i]);
	run_multi(c);
	for (size_t i = c->nconns; i-- > 0;)
		tkshm_rb_redis_conn_unlock(c->conns[i]);
	return NULL;
}

static int
by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (rb_redis_conn *const *)a;
	uintptr_t y = (uintptr_t) * (rb_redis_conn *const *)b;

	return x < y ? -1 : x > y;
}

/* Adds `c` to the call's connections once. */
static void
add_conn(multi_call *call, rb_redis_conn *c)
{
	for (size_t i = 0; i < call->nconns; i++)
		if (call->conns[i] == c)
			return;
	call->conns[call->nconns++] = c;
}

/* Fills call->dims from [[table, key, cost], ...]; returns whether a
 * strict table with a connection is among them.  `refs` receives each
 * dimension's table state. */
static bool
fill_dims(multi_call *call, VALUE dims, tkshm_rb_table_ref *refs)
{
	for (size_t i = 0; i < call->n; i++) {
		VALUE d = rb_ary_entry(dims, (long)i);
		VALUE key;

		Check_Type(d, T_ARRAY);
		if (RARRAY_LEN(d) != 3)
			rb_raise(rb_eArgError,
				 "a dimension is [table, key, cost]");
		refs[i] = tkshm_rb_table_ref_of(rb_ary_entry(d, 0));
		/* A String itself, not one made by #to_str that nothing
		 * would keep alive during the call. */
		key = rb_ary_entry(d, 1);
		Check_Type(key, T_STRING);
		call->dims[i] =
			(tkshm_dimension){ refs[i].table, RSTRING_PTR(key),
					   (size_t)RSTRING_LEN(key),
					   NUM2DBL(rb_ary_entry(d, 2)) };
		if (refs[i].redis)
			add_conn(call, refs[i].redis);
	}
	return call->nconns > 0;
}

/* Copies the keys to `buf` (every key within TKSHM_KEY_MAX: else the
 * library refuses them before anything waits and nothing is copied). */
static bool
copy_keys(multi_call *call, char *buf)
{
	for (size_t i = 0; i < call->n; i++)
		if (call->dims[i].key_len == 0 ||
		    call->dims[i].key_len > TKSHM_KEY_MAX)
			return false;
	for (size_t i = 0; i < call->n; i++) {
		memcpy(buf, call->dims[i].key, call->dims[i].key_len);
		call->dims[i].key = buf;
		buf += call->dims[i].key_len;
	}
	return true;
}

static void
run_without_gvl(multi_call *call, tkshm_rb_table_ref *refs)
{
	qsort(call->conns, call->nconns, sizeof(call->conns[0]), by_address);
	for (size_t i = 0; i < call->n; i++)
		(*refs[i].inflight)++;
	call->rc = TKSHM_EINTR;
	rb_thread_call_without_gvl2(multi_nogvl, call, RUBY_UBF_IO, NULL);
	for (size_t i = 0; i < call->n; i++)
		(*refs[i].inflight)--;
	rb_thread_check_ints();
}

/* _check_multi(dims, all, now_ms): [decision, binding index, decisions] */
static VALUE
check_multi(VALUE self, VALUE dims, VALUE all, VALUE now)
{
	multi_call call = { 0 };
	tkshm_rb_table_ref refs[TKSHM_MULTI_MAX];
	char keys[TKSHM_MULTI_MAX * TKSHM_KEY_MAX];
	VALUE each;

	(void)self;
	Check_Type(dims, T_ARRAY);
	if (RARRAY_LEN(dims) < 1 || RARRAY_LEN(dims) > TKSHM_MULTI_MAX)
		tkshm_rb_raise(TKSHM_EINVAL, "1 to 16 dimensions");
	call.mode = RTEST(all) ? TKSHM_MULTI_ALL : TKSHM_MULTI_ANY;
	call.n = (size_t)RARRAY_LEN(dims);
	call.now = NIL_P(now) ? tkshm_now_ms() : NUM2DBL(now);
	if (fill_dims(&call, dims, refs) && copy_keys(&call, keys))
		run_without_gvl(&call, refs);
	else
		run_multi(&call);
	RB_GC_GUARD(dims);
	if (call.rc != TKSHM_OK)
		tkshm_rb_raise(call.rc, NULL);
	each = rb_ary_new_capa((long)call.n);
	for (size_t i = 0; i < call.n; i++)
		rb_ary_push(each, tkshm_rb_decision_new(&call.each[i]));
	return rb_ary_new_from_args(3, tkshm_rb_decision_new(&call.out),
				    SIZET2NUM(call.binding), each);
}

void
tkshm_rb_init_multi(VALUE m)
{
	rb_define_const(m, "MULTI_MAX", INT2NUM(TKSHM_MULTI_MAX));
	rb_define_module_function(m, "_check_multi", check_multi, 3);
}
