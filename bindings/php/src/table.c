/* Tkshm\Table: a table of this process (registry.c), and the calls on it.
 * A strict table decides its checks and peeks on Redis through the
 * Tkshm\Redis attached to it (redis.c).
 *
 * Bad input is the library's to refuse: an empty or too long key, a cost
 * that is NaN, infinite, <= 0 or too large, a NaN or negative now: each
 * comes back as its code (EKEYEMPTY, ECOST, ENOW...) before the table is
 * touched, and is thrown as Tkshm\Exception. */
#include "php_tkshm.h"

#include <zend_exceptions.h>

#include <string.h>
#include <unistd.h>

zend_class_entry *tkshm_php_table_ce;
static zend_object_handlers table_handlers;

typedef struct {
	tkshm_php_handle *h; /* NULL until constructed */
	/* What the construction, or the last apply(), did to the table. */
	tkshm_change change;
	/* The Tkshm\Redis attached through this object (UNDEF: none): the
	 * reference the table keeps, as the Python binding's does. */
	zval redis;
	zend_object std;
} table_object;

static inline table_object *
table_of(zend_object *obj)
{
	return (table_object *)((char *)obj - XtOffsetOf(table_object, std));
}

static zend_object *
table_create(zend_class_entry *ce)
{
	table_object *o = zend_object_alloc(sizeof(table_object), ce);

	zend_object_std_init(&o->std, ce);
	object_properties_init(&o->std, ce);
	o->std.handlers = &table_handlers;
	ZVAL_UNDEF(&o->redis);
	return &o->std;
}

static void
table_free(zend_object *obj)
{
	zval_ptr_dtor(&table_of(obj)->redis);
	zend_object_std_dtor(obj);
}

#define NOT_STRICT                                                            \
	"only a strict table (a policy with \";mode=strict\") takes a Redis " \
	"connection"

/* Attaches the Tkshm\Redis `redis` (NULL: detaches) to h's table and keeps
 * it in o.  The attachment is the handle's, like its policy: later
 * constructions in this process (later requests) find the table attached
 * until attach(null) or another attach.  Throws and returns false when the
 * table is not strict (ENOTSUP). */
static bool
attach(table_object *o, tkshm_php_handle *h, zend_object *redis)
{
	tkshm_redis *r = NULL;
	int rc;

	if (redis && !(r = tkshm_php_redis_handle(redis)))
		return false;
	/* Detaching what is not attached: nothing to do, even on a table
	 * that is not strict. */
	if (r || h->redis) {
		rc = tkshm_php_redis_attach(h->table, r);
		if (rc != TKSHM_OK) {
			tkshm_php_throw(rc, rc == TKSHM_ENOTSUP && r ?
						    NOT_STRICT :
						    NULL);
			return false;
		}
	}
	h->redis = r;
	zval_ptr_dtor(&o->redis);
	if (redis)
		ZVAL_OBJ_COPY(&o->redis, redis);
	else
		ZVAL_UNDEF(&o->redis);
	return true;
}

/* A policy that is not strict with a Redis: refused before the table is
 * opened or changed.  (A policy that does not parse is left to the
 * registry, which says why.) */
static bool
strict_or_throw(const zend_string *policy)
{
	tkshm_policy pol;

	if (tkshm_policy_parse(ZSTR_VAL(policy), &pol, NULL, 0) != TKSHM_OK ||
	    pol.global.mode == TKSHM_MODE_STRICT)
		return true;
	tkshm_php_throw(TKSHM_ENOTSUP, NOT_STRICT);
	return false;
}

/* The handle of $this, or NULL with an Error thrown (a Table whose
 * constructor failed or was never run). */
static tkshm_php_handle *
this_handle(zval *this_zv)
{
	tkshm_php_handle *h = table_of(Z_OBJ_P(this_zv))->h;

	if (!h)
		zend_throw_error(NULL, "Tkshm\\Table is not open (its "
				       "constructor did not succeed)");
	return h;
}

/* Negative slots are refused before the library sees them as huge. */
static bool
slots_ok(zend_long slots)
{
	if (slots >= 0)
		return true;
	tkshm_php_throw(TKSHM_EINVAL, "slots must be >= 0 (0: the default, "
				      "65536, or the table's own)");
	return false;
}

/* Z_PARAM_PATH_STR refuses a NUL byte in a path; a policy string with one
 * would be cut short by the parser, so it is refused too. */
static bool
policy_ok(const zend_string *policy)
{
	if (!memchr(ZSTR_VAL(policy), '\0', ZSTR_LEN(policy)))
		return true;
	tkshm_php_throw(TKSHM_EPOLICY, "the policy string contains a NUL byte");
	return false;
}

ZEND_METHOD(Tkshm_Table, __construct)
{
	table_object *o = table_of(Z_OBJ_P(ZEND_THIS));
	zend_string *path;
	zend_string *policy;
	zend_long slots = 0;
	zend_long mode = 0600;
	bool keep = false;
	zend_object *redis = NULL;
	tkshm_php_handle *h;
	tkshm_change change;
	char err[TKSHM_CHANGE_TEXT_MAX + 2 * TKSHM_POLICY_MAX] = "";
	int rc;

	ZEND_PARSE_PARAMETERS_START(2, 6)
	Z_PARAM_PATH_STR(path)
	Z_PARAM_STR(policy)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(slots)
	Z_PARAM_LONG(mode)
	Z_PARAM_BOOL(keep)
	Z_PARAM_OBJ_OF_CLASS_OR_NULL(redis, tkshm_php_redis_ce)
	ZEND_PARSE_PARAMETERS_END();

	if (o->h) {
		zend_throw_error(NULL, "Tkshm\\Table is already open");
		RETURN_THROWS();
	}
	if (ZSTR_LEN(path) == 0) {
		tkshm_php_throw(TKSHM_EINVAL,
				"the table path must not be empty (a name "
				"without '/' is a file in /dev/shm)");
		RETURN_THROWS();
	}
	if (!slots_ok(slots))
		RETURN_THROWS();
	/* Bits outside 0777 (setuid, setgid, sticky) are refused here as
	 * tkshm_open refuses them, with the mode in the message. */
	if (mode < 0) {
		tkshm_php_throw(TKSHM_EINVAL,
				"mode must be permission bits from 0 to 0777 "
				"(0 is 0600)");
		RETURN_THROWS();
	}
	if (mode > 0777) {
		char msg[160];

		snprintf(msg, sizeof msg,
			 "mode 0%lo has bits outside 0777: a table file takes "
			 "permission bits only (no setuid, setgid or sticky)",
			 (unsigned long)mode);
		tkshm_php_throw(TKSHM_EINVAL, msg);
		RETURN_THROWS();
	}
	if (!policy_ok(policy) || (redis && !strict_or_throw(policy)) ||
	    (redis && !tkshm_php_redis_handle(redis)))
		RETURN_THROWS();
	rc = tkshm_php_registry_get(ZSTR_VAL(path), ZSTR_VAL(policy),
				    (uint64_t)slots, (uint32_t)mode, keep, &h,
				    &change, err, sizeof(err));
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, err);
		RETURN_THROWS();
	}
	/* Only when given: a construction without one leaves the handle's
	 * attachment (made by an earlier request) as it is. */
	if (redis && !attach(o, h, redis))
		RETURN_THROWS();
	o->h = h;
	o->change = change;
}

ZEND_METHOD(Tkshm_Table, attach)
{
	zend_object *redis;
	tkshm_php_handle *h;

	ZEND_PARSE_PARAMETERS_START(1, 1)
	Z_PARAM_OBJ_OF_CLASS_OR_NULL(redis, tkshm_php_redis_ce)
	ZEND_PARSE_PARAMETERS_END();

	h = this_handle(ZEND_THIS);
	if (!h || !attach(table_of(Z_OBJ_P(ZEND_THIS)), h, redis))
		RETURN_THROWS();
}

/* $nowMs: null for the system clock. */
static double
now_or_clock(double now, bool now_is_null)
{
	return now_is_null ? tkshm_now_ms() : now;
}

ZEND_METHOD(Tkshm_Table, check)
{
	zend_string *key;
	zval *cost_zv = NULL;
	double cost = 1.0;
	double now = 0;
	bool now_is_null = true;
	tkshm_php_handle *h;
	tkshm_decision d;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 3)
	Z_PARAM_STR(key)
	Z_PARAM_OPTIONAL
	Z_PARAM_NUMBER(cost_zv)
	Z_PARAM_DOUBLE_OR_NULL(now, now_is_null)
	ZEND_PARSE_PARAMETERS_END();

	h = this_handle(ZEND_THIS);
	if (!h)
		RETURN_THROWS();
	if (cost_zv)
		cost = Z_TYPE_P(cost_zv) == IS_LONG ?
			       (double)Z_LVAL_P(cost_zv) :
			       Z_DVAL_P(cost_zv);
	rc = tkshm_check_at(h->table, ZSTR_VAL(key), ZSTR_LEN(key), cost,
			    now_or_clock(now, now_is_null), &d);
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	tkshm_php_decision_new(return_value, &d);
}

ZEND_METHOD(Tkshm_Table, peek)
{
	zend_string *key;
	double now = 0;
	bool now_is_null = true;
	tkshm_php_handle *h;
	tkshm_decision d;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 2)
	Z_PARAM_STR(key)
	Z_PARAM_OPTIONAL
	Z_PARAM_DOUBLE_OR_NULL(now, now_is_null)
	ZEND_PARSE_PARAMETERS_END();

	h = this_handle(ZEND_THIS);
	if (!h)
		RETURN_THROWS();
	rc = tkshm_peek_at(h->table, ZSTR_VAL(key), ZSTR_LEN(key),
			   now_or_clock(now, now_is_null), &d);
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	tkshm_php_decision_new(return_value, &d);
}

ZEND_METHOD(Tkshm_Table, reset)
{
	zend_string *key;
	tkshm_php_handle *h;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 1)
	Z_PARAM_STR(key)
	ZEND_PARSE_PARAMETERS_END();

	h = this_handle(ZEND_THIS);
	if (!h)
		RETURN_THROWS();
	rc = tkshm_reset(h->table, ZSTR_VAL(key), ZSTR_LEN(key));
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
}

/* Counters above 2^63 would not fit a PHP int; they cannot occur (a
 * counter grows by one per decision), but say so rather than wrap. */
static void
put_u64(zval *arr, const char *name, uint64_t v)
{
	if (v > (uint64_t)ZEND_LONG_MAX)
		add_assoc_double(arr, name, (double)v);
	else
		add_assoc_long(arr, name, (zend_long)v);
}

ZEND_METHOD(Tkshm_Table, stats)
{
	char canon[TKSHM_POLICY_MAX];
	tkshm_php_handle *h;
	tkshm_stats s;
	int rc;

	ZEND_PARSE_PARAMETERS_NONE();
	h = this_handle(ZEND_THIS);
	if (!h)
		RETURN_THROWS();
	rc = tkshm_stats_get(h->table, &s);
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	/* The C struct's names, as tkshm-inspect and the Python binding
	 * show them. */
	array_init(return_value);
	put_u64(return_value, "allowed", s.allowed);
	put_u64(return_value, "denied", s.denied);
	put_u64(return_value, "inserts", s.inserts);
	put_u64(return_value, "reclaims", s.reclaims);
	put_u64(return_value, "evictions", s.evictions);
	put_u64(return_value, "evictions_in_debt", s.evictions_in_debt);
	put_u64(return_value, "debt_restores", s.debt_restores);
	put_u64(return_value, "cas_retries", s.cas_retries);
	put_u64(return_value, "refusals", s.refusals);
	put_u64(return_value, "duplicates_killed", s.duplicates_killed);
	put_u64(return_value, "resets", s.resets);
	put_u64(return_value, "multi_rollbacks", s.multi_rollbacks);
	put_u64(return_value, "claims_stolen", s.claims_stolen);
	put_u64(return_value, "releases", s.releases);
	put_u64(return_value, "reaped", s.reaped);
	put_u64(return_value, "slots", s.slots);
	put_u64(return_value, "buckets", s.buckets);
	put_u64(return_value, "debt_cells", s.debt_cells);
	put_u64(return_value, "file_bytes", s.file_bytes);
	add_assoc_double(return_value, "bytes_per_key", s.bytes_per_key);
	add_assoc_double(return_value, "created_ms", s.created_ms);
	add_assoc_long(return_value, "layout_version",
		       (zend_long)s.layout_version);
	add_assoc_string(return_value, "on_full",
			 s.on_full == TKSHM_ON_FULL_REFUSE ? "refuse" :
							     "evict");
	add_assoc_bool(return_value, "anonymous", s.anonymous);
	rc = tkshm_policy_format(&s.policy, canon, sizeof(canon));
	if (rc < 0) {
		zval_ptr_dtor(return_value);
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	add_assoc_stringl(return_value, "policy", canon, (size_t)rc);
	/* This handle: the process that opened it (a forked child reuses
	 * its parent's, registry.c). */
	add_assoc_long(return_value, "handle_pid", (zend_long)h->opener);
}

/* The table's policy now: another process may have changed it since
 * this one opened it. */
ZEND_METHOD(Tkshm_Table, policy)
{
	char canon[TKSHM_POLICY_MAX];
	tkshm_php_handle *h;
	int rc;

	ZEND_PARSE_PARAMETERS_NONE();
	h = this_handle(ZEND_THIS);
	if (!h)
		RETURN_THROWS();
	rc = tkshm_php_live_policy(h->table, canon, sizeof(canon));
	if (rc < 0) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	RETURN_STRINGL(canon, (size_t)rc);
}

ZEND_METHOD(Tkshm_Table, change)
{
	table_object *o = table_of(Z_OBJ_P(ZEND_THIS));

	ZEND_PARSE_PARAMETERS_NONE();
	if (!this_handle(ZEND_THIS))
		RETURN_THROWS();
	tkshm_php_change_array(return_value, &o->change);
}

/* $policy null keeps the table's policy (a size change only); $slots 0
 * keeps its size.  The library's rules, unsoftened: a smaller $slots is
 * EINVAL here (the constructor, which states what a table is to be,
 * keeps the size instead). */
ZEND_METHOD(Tkshm_Table, apply)
{
	table_object *o = table_of(Z_OBJ_P(ZEND_THIS));
	zend_string *policy = NULL;
	zend_long slots = 0;
	char err[256] = "";
	tkshm_policy pol;
	tkshm_change change;
	int rc;

	ZEND_PARSE_PARAMETERS_START(1, 2)
	Z_PARAM_STR_OR_NULL(policy)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(slots)
	ZEND_PARSE_PARAMETERS_END();

	if (!this_handle(ZEND_THIS) || !slots_ok(slots))
		RETURN_THROWS();
	if (policy) {
		if (!policy_ok(policy))
			RETURN_THROWS();
		rc = tkshm_policy_parse(ZSTR_VAL(policy), &pol, err,
					sizeof(err));
		if (rc != TKSHM_OK) {
			tkshm_php_throw(rc, err);
			RETURN_THROWS();
		}
	}
	rc = tkshm_apply(o->h->table, policy ? &pol : NULL, (uint64_t)slots,
			 &change);
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, NULL);
		RETURN_THROWS();
	}
	o->change = change;
	tkshm_php_change_array(return_value, &change);
}

/* What `new Table($path, $policy, $slots)` would do, from the table's
 * header, changing nothing (tkshm_plan): for a deploy's check step. */
ZEND_METHOD(Tkshm_Table, plan)
{
	tkshm_options opts = TKSHM_OPTIONS_INIT;
	zend_string *path;
	zend_string *policy;
	zend_long slots = 0;
	char err[256] = "";
	tkshm_policy pol;
	tkshm_change change;
	int rc;

	ZEND_PARSE_PARAMETERS_START(2, 3)
	Z_PARAM_PATH_STR(path)
	Z_PARAM_STR(policy)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(slots)
	ZEND_PARSE_PARAMETERS_END();

	if (!slots_ok(slots) || !policy_ok(policy))
		RETURN_THROWS();
	rc = tkshm_policy_parse(ZSTR_VAL(policy), &pol, err, sizeof(err));
	if (rc == TKSHM_OK) {
		opts.policy = &pol;
		opts.slots = (uint64_t)slots;
		opts.errbuf = err;
		opts.errbuf_len = sizeof(err);
		rc = tkshm_plan(ZSTR_VAL(path), &opts, &change);
	}
	if (rc != TKSHM_OK) {
		tkshm_php_throw(rc, err);
		RETURN_THROWS();
	}
	tkshm_php_change_array(return_value, &change);
}

ZEND_METHOD(Tkshm_Table, openCount)
{
	ZEND_PARSE_PARAMETERS_NONE();
	RETURN_LONG(tkshm_php_registry_open_count());
}

void
tkshm_php_table_register(void)
{
	zend_class_entry ce;

	INIT_NS_CLASS_ENTRY(ce, "Tkshm", "Table", tkshm_php_table_methods);
	tkshm_php_table_ce = zend_register_internal_class_ex(&ce, NULL);
	/* A Table names a handle of this process: a copy would be another
	 * name for it, a serialized one would mean nothing elsewhere. */
	tkshm_php_table_ce->ce_flags |= ZEND_ACC_FINAL |
					ZEND_ACC_NO_DYNAMIC_PROPERTIES |
					ZEND_ACC_NOT_SERIALIZABLE;
	tkshm_php_table_ce->create_object = table_create;
	memcpy(&table_handlers, zend_get_std_object_handlers(),
	       sizeof(table_handlers));
	table_handlers.offset = XtOffsetOf(table_object, std);
	table_handlers.free_obj = table_free;
	table_handlers.clone_obj = NULL;
}
