/* Tkshm\Decision: a check's result as a final, readonly class with typed
 * properties, so PHP itself refuses every write, unset, reference or new
 * property.  Only the extension makes one: it writes the property slots
 * directly, which is how a readonly property is first initialised from C;
 * `new` throws (get_constructor) and, as the class is internal, final and
 * has its own create_object, Reflection cannot instantiate it without a
 * constructor either. */
#include "php_tkshm.h"

#include <zend_exceptions.h>

zend_class_entry *tkshm_php_decision_ce;
static zend_object_handlers decision_handlers;

/* The properties in declaration order: their slot numbers. */
enum {
	PROP_ALLOWED,
	PROP_LIMIT,
	PROP_REMAINING,
	PROP_RESET_AT,
	PROP_RETRY_AFTER_MS,
	PROP_FLAGS,
	PROP_COUNT
};

/* The fields are int64_t (epoch ms in resetAt): a 32-bit PHP int would
 * cut them. */
_Static_assert(sizeof(zend_long) == sizeof(int64_t),
	       "tkshm's PHP extension needs a 64-bit PHP (zend_long)");

static zend_object *
decision_create(zend_class_entry *ce)
{
	zend_object *obj = zend_objects_new(ce);

	object_properties_init(obj, ce);
	obj->handlers = &decision_handlers;
	return obj;
}

static zend_function *
decision_get_constructor(zend_object *obj)
{
	(void)obj;
	zend_throw_error(NULL, "Tkshm\\Decision cannot be constructed: "
			       "Tkshm\\Table::check() and peek() return one");
	return NULL;
}

static void
declare(const char *name, uint32_t type_mask)
{
	zval undef;
	zend_string *s = zend_string_init_interned(name, strlen(name), 1);

	ZVAL_UNDEF(&undef);
	zend_declare_typed_property(tkshm_php_decision_ce, s, &undef,
				    ZEND_ACC_PUBLIC | ZEND_ACC_READONLY, NULL,
				    (zend_type)ZEND_TYPE_INIT_MASK(type_mask));
	zend_string_release(s);
}

void
tkshm_php_decision_register(void)
{
	zend_class_entry ce;

	INIT_NS_CLASS_ENTRY(ce, "Tkshm", "Decision", NULL);
	tkshm_php_decision_ce = zend_register_internal_class_ex(&ce, NULL);
	tkshm_php_decision_ce->ce_flags |=
		ZEND_ACC_FINAL | ZEND_ACC_READONLY_CLASS |
		ZEND_ACC_NO_DYNAMIC_PROPERTIES | ZEND_ACC_NOT_SERIALIZABLE;
	tkshm_php_decision_ce->create_object = decision_create;
	memcpy(&decision_handlers, zend_get_std_object_handlers(),
	       sizeof(decision_handlers));
	decision_handlers.get_constructor = decision_get_constructor;

	/* In the order of the enum above. */
	declare("allowed", MAY_BE_BOOL);
	declare("limit", MAY_BE_LONG);
	declare("remaining", MAY_BE_LONG);
	declare("resetAt", MAY_BE_LONG);
	declare("retryAfterMs", MAY_BE_LONG);
	declare("flags", MAY_BE_LONG);
}

static void
set_slot(zend_object *obj, int slot, zend_long v)
{
	zval *p = OBJ_PROP_NUM(obj, slot);

	ZVAL_LONG(p, v);
	/* Initialised: no longer the "uninitialised" typed slot. */
	Z_PROP_FLAG_P(p) = 0;
}

void
tkshm_php_decision_new(zval *out, const tkshm_decision *d)
{
	zend_object *obj = decision_create(tkshm_php_decision_ce);
	zval *p = OBJ_PROP_NUM(obj, PROP_ALLOWED);

	ZVAL_BOOL(p, d->allowed);
	Z_PROP_FLAG_P(p) = 0;
	set_slot(obj, PROP_LIMIT, (zend_long)d->limit);
	set_slot(obj, PROP_REMAINING, (zend_long)d->remaining);
	set_slot(obj, PROP_RESET_AT, (zend_long)d->reset_at);
	set_slot(obj, PROP_RETRY_AFTER_MS, (zend_long)d->retry_after_ms);
	set_slot(obj, PROP_FLAGS, (zend_long)d->flags);
	ZVAL_OBJ(out, obj);
}

bool
tkshm_php_decision_read(zend_object *obj, tkshm_decision *d)
{
	zval *allowed = OBJ_PROP_NUM(obj, PROP_ALLOWED);
	bool set =
		Z_TYPE_P(allowed) == IS_TRUE || Z_TYPE_P(allowed) == IS_FALSE;

	for (int i = PROP_LIMIT; i < PROP_COUNT; i++)
		set = set && Z_TYPE_P(OBJ_PROP_NUM(obj, i)) == IS_LONG;
	if (!set) {
		zend_throw_error(NULL, "Tkshm\\Decision is not initialised");
		return false;
	}
	memset(d, 0, sizeof(*d));
	d->allowed = Z_TYPE_P(allowed) == IS_TRUE;
	d->limit = Z_LVAL_P(OBJ_PROP_NUM(obj, PROP_LIMIT));
	d->remaining = Z_LVAL_P(OBJ_PROP_NUM(obj, PROP_REMAINING));
	d->reset_at = Z_LVAL_P(OBJ_PROP_NUM(obj, PROP_RESET_AT));
	d->retry_after_ms = Z_LVAL_P(OBJ_PROP_NUM(obj, PROP_RETRY_AFTER_MS));
	d->flags = (uint32_t)Z_LVAL_P(OBJ_PROP_NUM(obj, PROP_FLAGS));
	return true;
}
