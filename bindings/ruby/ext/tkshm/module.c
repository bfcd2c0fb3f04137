/* Init_tkshm, the errors, Tkshm::Decision, and the HTTP helpers every
 * binding shares (tkshm_http.h): Tkshm.client_key and Tkshm.headers. */
#include "tkshm_rb.h"

#include <math.h>
#include <string.h>

VALUE tkshm_rb_mTkshm;
VALUE tkshm_rb_cDecision;
static VALUE eError;

/* Every code the library returns, from TKSHM_ENULL down. */
#define FIRST_CODE TKSHM_ENULL
#define LAST_CODE  TKSHM_ECROSSSLOT

void
tkshm_rb_raise(int code, const char *detail)
{
	VALUE msg = rb_utf8_str_new_cstr(
		detail && *detail ? detail : tkshm_strerror(code));
	VALUE exc = rb_class_new_instance(1, &msg, eError);

	rb_iv_set(exc, "@code", INT2NUM(code));
	/* "TKSHM_EINVAL" -> "EINVAL", the name of the constant Tkshm::EINVAL */
	rb_iv_set(exc, "@name",
		  rb_usascii_str_new_cstr(tkshm_error_name(code) +
					  strlen("TKSHM_")));
	rb_exc_raise(exc);
}

VALUE
tkshm_rb_decision_new(const tkshm_decision *d)
{
	VALUE v = rb_struct_new(tkshm_rb_cDecision, d->allowed ? Qtrue : Qfalse,
				LL2NUM(d->limit), LL2NUM(d->remaining),
				LL2NUM(d->reset_at), LL2NUM(d->retry_after_ms),
				UINT2NUM(d->flags));

	return rb_obj_freeze(v);
}

void
tkshm_rb_decision_get(VALUE v, tkshm_decision *out)
{
	if (!rb_obj_is_kind_of(v, tkshm_rb_cDecision))
		rb_raise(rb_eTypeError, "expected a Tkshm::Decision");
	out->allowed = RTEST(rb_struct_aref(v, INT2FIX(0)));
	out->limit = NUM2LL(rb_struct_aref(v, INT2FIX(1)));
	out->remaining = NUM2LL(rb_struct_aref(v, INT2FIX(2)));
	out->reset_at = NUM2LL(rb_struct_aref(v, INT2FIX(3)));
	out->retry_after_ms = NUM2LL(rb_struct_aref(v, INT2FIX(4)));
	out->flags = NUM2UINT(rb_struct_aref(v, INT2FIX(5)));
}

/* Tkshm.client_key(addr, v6_prefix = 64): "192.0.2.7", "2001:db8::/64". */
static VALUE
client_key(int argc, VALUE *argv, VALUE self)
{
	VALUE addr, prefix;
	char out[TKSHM_HTTP_CLIENT_KEY_MAX];
	int rc;

	(void)self;
	rb_scan_args(argc, argv, "11", &addr, &prefix);
	rc = tkshm_http_client_key(
		StringValueCStr(addr),
		NIL_P(prefix) ? TKSHM_HTTP_V6_PREFIX_DEFAULT : NUM2UINT(prefix),
		out, sizeof(out));
	if (rc < 0)
		tkshm_rb_raise(rc, NULL);
	return rb_usascii_str_new(out, rc);
}

/* Tkshm.http_headers(decision, style, policy_name, window_s, now_ms): the
 * [name, value] pairs; lib/tkshm.rb's Tkshm.headers names the style. */
static VALUE
http_headers(VALUE self, VALUE decision, VALUE style, VALUE name,
	     VALUE window_s, VALUE now_ms)
{
	tkshm_decision d;
	tkshm_http_header out[TKSHM_HTTP_HEADERS_MAX];
	const char *cname = NIL_P(name) ? NULL : StringValueCStr(name);
	size_t need = TKSHM_HTTP_BUF_SIZE(cname ? strlen(cname) : 8);
	char *buf;
	VALUE pairs, tmp;
	int n;

	(void)self;
	tkshm_rb_decision_get(decision, &d);
	/* On the heap when large: the name's length is the caller's. */
	buf = ALLOCV_N(char, tmp, need);
	n = tkshm_http_headers(&d, (tkshm_http_style)NUM2INT(style), cname,
			       NIL_P(window_s) ? -1 : NUM2LL(window_s),
			       NUM2DBL(now_ms), out, buf, need);
	if (n < 0)
		tkshm_rb_raise(n,
			       n == TKSHM_EINVAL ?
				       "policy name must be printable ASCII" :
				       NULL);
	pairs = rb_ary_new_capa(n);
	for (int i = 0; i < n; i++)
		rb_ary_push(
			pairs,
			rb_assoc_new(rb_usascii_str_new_cstr(out[i].name),
				     rb_usascii_str_new_cstr(out[i].value)));
	ALLOCV_END(tmp);
	return pairs;
}

static VALUE
now_ms(VALUE self)
{
	(void)self;
	return DBL2NUM(tkshm_now_ms());
}

static VALUE
strerror_of(VALUE self, VALUE code)
{
	(void)self;
	return rb_usascii_str_new_cstr(tkshm_strerror(NUM2INT(code)));
}

static void
define_constants(VALUE m)
{
	for (int code = FIRST_CODE; code >= LAST_CODE; code--)
		rb_define_const(m, tkshm_error_name(code) + strlen("TKSHM_"),
				INT2NUM(code));
	rb_define_const(m, "KEY_MAX", INT2NUM(TKSHM_KEY_MAX));
	rb_define_const(
		m, "DEFAULT_DIR",
		rb_obj_freeze(rb_usascii_str_new_cstr(TKSHM_DEFAULT_DIR)));
	rb_define_const(m, "LEASE_KEY_MAX", INT2NUM(TKSHM_LEASE_KEY_MAX));
	rb_define_const(m, "DECISION_EVICTED_DEBTOR",
			UINT2NUM(TKSHM_DECISION_EVICTED_DEBTOR));
	rb_define_const(m, "DECISION_DEBT_RESTORED",
			UINT2NUM(TKSHM_DECISION_DEBT_RESTORED));
	rb_define_const(m, "DECISION_CACHED", UINT2NUM(TKSHM_DECISION_CACHED));
	rb_define_const(m, "DECISION_FALLBACK",
			UINT2NUM(TKSHM_DECISION_FALLBACK));
	rb_define_const(m, "DECISION_NO_LEASE",
			UINT2NUM(TKSHM_DECISION_NO_LEASE));
	rb_define_const(
		m, "LIBRARY_VERSION",
		rb_obj_freeze(rb_usascii_str_new_cstr(tkshm_version())));
#ifdef TKSHM_RB_HAVE_REDIS
	rb_define_const(m, "HAVE_REDIS", Qtrue);
#else
	rb_define_const(m, "HAVE_REDIS", Qfalse);
#endif
}

RUBY_FUNC_EXPORTED void
Init_tkshm(void)
{
	VALUE m = rb_define_module("Tkshm");

	tkshm_rb_mTkshm = m;
	/* Tkshm::Error#code is the library's negative code, #name its
	 * constant's name ("EKEYLONG"); lib/tkshm.rb defines the readers. */
	eError = rb_define_class_under(m, "Error", rb_eStandardError);
	rb_global_variable(&eError);
	/* A Struct, frozen as it is made: Ruby 3.1 has no Data. */
	tkshm_rb_cDecision = rb_struct_define_under(
		m, "Decision", "allowed", "limit", "remaining", "reset_at",
		"retry_after_ms", "flags", NULL);
	rb_global_variable(&tkshm_rb_cDecision);
	define_constants(m);
	rb_define_module_function(m, "client_key", client_key, -1);
	rb_define_module_function(m, "http_headers", http_headers, 5);
	rb_define_module_function(m, "now_ms", now_ms, 0);
	rb_define_module_function(m, "strerror", strerror_of, 1);
	tkshm_rb_init_table(m);
	tkshm_rb_init_redis(m);
	tkshm_rb_init_multi(m);
}
