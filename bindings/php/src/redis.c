/* Tkshm\Redis: a connection handle for strict tables (tkshm_redis.h),
 * made from an options array.
 *
 * Handles are the process's, like tables (registry.c): the first
 * construction with a set of options makes one, in memory that outlives
 * requests, and every later construction with the same options (every
 * request of a PHP-FPM worker) gets the same handle, so a worker keeps one
 * connection for its life instead of a connect, AUTH and SCRIPT LOAD per
 * request.  A handle connects on its first use in the process that uses it:
 * a child forked after (pcntl_fork) opens its own connection, never the
 * parent's socket.  One thread uses a handle at a time, as the library
 * asks: this PHP is the non-thread-safe build (php_tkshm.h).  Handles are
 * closed when the module shuts down, after the tables that may be attached
 * to them (module.c).
 *
 * Without the library's Redis tier (built without hiredis) the class exists
 * but its constructor throws ENOTSUP saying why. */
#include "php_tkshm.h"

#include <zend_exceptions.h>
#include <zend_smart_str.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

zend_class_entry *tkshm_php_redis_ce;
static zend_object_handlers redis_handlers;

/* A handle of this process and the options it was made with (strings
 * copied: later constructions compare theirs with them). */
typedef struct tkshm_php_redis {
	struct tkshm_php_redis *next;
	tkshm_redis_options o;
	tkshm_redis *r;
} tkshm_php_redis;

static tkshm_php_redis *handles;

typedef struct {
	tkshm_php_redis *h; /* NULL until constructed */
	zend_object std;
} redis_object;

static inline redis_object *
redis_of(zend_object *obj)
{
	return (redis_object *)((char *)obj - XtOffsetOf(redis_object, std));
}

static zend_object *
redis_create(zend_class_entry *ce)
{
	redis_object *o = zend_object_alloc(sizeof(redis_object), ce);

	zend_object_std_init(&o->std, ce);
	object_properties_init(&o->std, ce);
	o->std.handlers = &redis_handlers;
	return &o->std;
}

/* The option names, in the binding's camelCase (as $nowMs, $v6Prefix). */
enum {
	O_HOST,
	O_PORT,
	O_UNIX_PATH,
	O_USERNAME,
	O_PASSWORD,
	O_DB,
	O_CLUSTER,
	O_SENTINELS,
	O_SENTINEL_MASTER,
	O_CONNECT_TIMEOUT_MS,
	O_COMMAND_TIMEOUT_MS,
	O_BREAKER_FAILURES,
	O_BREAKER_OPEN_MS,
	O_SERVER_TIME,
	O_COUNT
};

static const char *const opt_names[O_COUNT] = {
	"host",
	"port",
	"unixPath",
	"username",
	"password",
	"db",
	"cluster",
	"sentinels",
	"sentinelMaster",
	"connectTimeoutMs",
	"commandTimeoutMs",
	"breakerFailures",
	"breakerOpenMs",
	"serverTime",
};

#define OPT_LIST                                                             \
	"host, port, unixPath, username, password, db, cluster, sentinels, " \
	"sentinelMaster, connectTimeoutMs, commandTimeoutMs, "               \
	"breakerFailures, breakerOpenMs, serverTime"

/* The array's values by option (NULL: absent or null).  An unknown key, a
 * typo included, is EINVAL: an option silently ignored is a setting the
 * caller believes in and does not have. */
static bool
collect(HashTable *ht, zval *v[O_COUNT])
{
	zend_string *key;
	zend_ulong idx;
	zval *val;

	memset(v, 0, sizeof(zval *) * O_COUNT);
	ZEND_HASH_FOREACH_KEY_VAL(ht, idx, key, val)
	{
		int i = 0;

		while (key && i < O_COUNT &&
		       strcmp(ZSTR_VAL(key), opt_names[i]))
			i++;
		if (!key || i == O_COUNT) {
			char msg[512];

			if (key)
				snprintf(msg, sizeof msg,
					 "unknown option '%s' (" OPT_LIST ")",
					 ZSTR_VAL(key));
			else
				snprintf(msg, sizeof msg,
					 "unknown option %lu: options are "
					 "named (" OPT_LIST ")",
					 (unsigned long)idx);
			tkshm_php_throw(TKSHM_EINVAL, msg);
			return false;
		}
		ZVAL_DEREF(val);
		v[i] = Z_TYPE_P(val) == IS_NULL ? NULL : val;
	}
	ZEND_HASH_FOREACH_END();
	return true;
}

/* A string option without a NUL byte (which would cut it short in C). */
static bool
str_opt(zval *v, int i, const char **out)
{
	if (!v)
		return true;
	if (Z_TYPE_P(v) != IS_STRING) {
		zend_type_error("Tkshm\\Redis option '%s' must be a string, %s "
				"given",
				opt_names[i], zend_zval_type_name(v));
		return false;
	}
	if (memchr(Z_STRVAL_P(v), '\0', Z_STRLEN_P(v))) {
		char msg[96];

		snprintf(msg, sizeof msg, "option '%s' contains a NUL byte",
			 opt_names[i]);
		tkshm_php_throw(TKSHM_EINVAL, msg);
		return false;
	}
	*out = Z_STRVAL_P(v);
	return true;
}

static bool
long_opt(zval *v, int i, zend_long *out)
{
	if (!v)
		return true;
	if (Z_TYPE_P(v) != IS_LONG) {
		zend_type_error("Tkshm\\Redis option '%s' must be an int, %s "
				"given",
				opt_names[i], zend_zval_type_name(v));
		return false;
	}
	*out = Z_LVAL_P(v);
	return true;
}

static bool
ms_opt(zval *v, int i, double *out)
{
	if (!v)
		return true;
	if (Z_TYPE_P(v) != IS_LONG && Z_TYPE_P(v) != IS_DOUBLE) {
		zend_type_error("Tkshm\\Redis option '%s' must be an int or a "
				"float (ms), %s given",
				opt_names[i], zend_zval_type_name(v));
		return false;
	}
	*out = zval_get_double(v);
	return true;
}

/* cluster, sentinels: "host:port,host:port" or a list of "host:port"
 * strings, joined with commas into *out (a new string).  An empty one is
 * EINVAL: it would silently mean "none". */
static bool
list_opt(zval *v, int i, zend_string **out)
{
	smart_str s = { 0 };
	zval *item;

	if (!v)
		return true;
	if (Z_TYPE_P(v) == IS_STRING) {
		*out = zend_string_copy(Z_STR_P(v));
	} else if (Z_TYPE_P(v) == IS_ARRAY) {
		ZEND_HASH_FOREACH_VAL(Z_ARRVAL_P(v), item)
		{
			ZVAL_DEREF(item);
			if (Z_TYPE_P(item) != IS_STRING) {
				smart_str_free(&s);
				zend_type_error("Tkshm\\Redis option '%s' must "
						"list strings, %s given",
						opt_names[i],
						zend_zval_type_name(item));
				return false;
			}
			if (s.s)
				smart_str_appendc(&s, ',');
			smart_str_append(&s, Z_STR_P(item));
		}
		ZEND_HASH_FOREACH_END();
		*out = s.s ? smart_str_extract(&s) : ZSTR_EMPTY_ALLOC();
	} else {
		zend_type_error("Tkshm\\Redis option '%s' must be a string or "
				"an array of strings, %s given",
				opt_names[i], zend_zval_type_name(v));
		return false;
	}
	if (ZSTR_LEN(*out) == 0) {
		char msg[96];

		zend_string_release(*out);
		*out = NULL;
		snprintf(msg, sizeof msg, "option '%s' names no server",
			 opt_names[i]);
		tkshm_php_throw(TKSHM_EINVAL, msg);
		return false;
	}
	return true;
}

/* The constructor's options, converted; lists joined (owned). */
struct redis_args {
	tkshm_redis_options o;
	zend_long port, db, failures;
	bool port_given;
	zend_string *cluster, *sentinels;
};

static bool
convert(zval *v[O_COUNT], struct redis_args *a)
{
	if (!str_opt(v[O_HOST], O_HOST, &a->o.host) ||
	    !long_opt(v[O_PORT], O_PORT, &a->port) ||
	    !str_opt(v[O_UNIX_PATH], O_UNIX_PATH, &a->o.unix_path) ||
	    !str_opt(v[O_USERNAME], O_USERNAME, &a->o.username) ||
	    !str_opt(v[O_PASSWORD], O_PASSWORD, &a->o.password) ||
	    !long_opt(v[O_DB], O_DB, &a->db) ||
	    !list_opt(v[O_CLUSTER], O_CLUSTER, &a->cluster) ||
	    !list_opt(v[O_SENTINELS], O_SENTINELS, &a->sentinels) ||
	    !str_opt(v[O_SENTINEL_MASTER], O_SENTINEL_MASTER,
		     &a->o.sentinel_master) ||
	    !ms_opt(v[O_CONNECT_TIMEOUT_MS], O_CONNECT_TIMEOUT_MS,
		    &a->o.connect_timeout_ms) ||
	    !ms_opt(v[O_COMMAND_TIMEOUT_MS], O_COMMAND_TIMEOUT_MS,
		    &a->o.command_timeout_ms) ||
	    !long_opt(v[O_BREAKER_FAILURES], O_BREAKER_FAILURES,
		      &a->failures) ||
	    !ms_opt(v[O_BREAKER_OPEN_MS], O_BREAKER_OPEN_MS,
		    &a->o.breaker_open_ms))
		return false;
	if (v[O_SERVER_TIME] && Z_TYPE_P(v[O_SERVER_TIME]) != IS_TRUE &&
	    Z_TYPE_P(v[O_SERVER_TIME]) != IS_FALSE) {
		zend_type_error("Tkshm\\Redis option 'serverTime' must be a "
				"bool, %s given",
				zend_zval_type_name(v[O_SERVER_TIME]));
		return false;
	}
	if (v[O_SERVER_TIME])
		a->o.server_time = Z_TYPE_P(v[O_SERVER_TIME]) == IS_TRUE;
	a->port_given = v[O_PORT] != NULL;
	return true;
}

/* What the library would only say as EINVAL, said with the option's name
 * (and rules it leaves implicit: port 0 is its default 6379, which a
 * caller who writes 'port' => 0 did not mean). */
static const char *
problem_of(const struct redis_args *a)
{
	if (a->port_given && (a->port < 1 || a->port > 65535))
		return "option 'port' must be 1 to 65535";
	if (a->db < 0 || a->db > INT_MAX)
		return "option 'db' must be 0 or more";
	if (a->failures < 0 || (zend_ulong)a->failures > UINT_MAX)
		return "option 'breakerFailures' must be 0 (the default, 3) "
		       "to 4294967295";
	if (a->cluster && a->sentinels)
		return "options 'cluster' and 'sentinels' are exclusive";
	if (!a->sentinels != !a->o.sentinel_master)
		return "options 'sentinels' and 'sentinelMaster' go together";
	if ((a->cluster || a->sentinels) &&
	    (a->o.host || a->o.unix_path || a->port_given))
		return "options 'cluster' and 'sentinels' name the servers: "
		       "no 'host', 'port' or 'unixPath' with them";
	if (a->o.host && a->o.unix_path)
		return "options 'host' and 'unixPath' are exclusive";
	return NULL;
}

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool
same_options(const tkshm_redis_options *a, const tkshm_redis_options *b)
{
	return same_str(a->host, b->host) && a->port == b->port &&
	       same_str(a->unix_path, b->unix_path) &&
	       same_str(a->username, b->username) &&
	       same_str(a->password, b->password) && a->db == b->db &&
	       same_str(a->cluster, b->cluster) &&
	       same_str(a->sentinels, b->sentinels) &&
	       same_str(a->sentinel_master, b->sentinel_master) &&
	       a->connect_timeout_ms == b->connect_timeout_ms &&
	       a->command_timeout_ms == b->command_timeout_ms &&
	       a->breaker_failures == b->breaker_failures &&
	       a->breaker_open_ms == b->breaker_open_ms &&
	       a->server_time == b->server_time;
}

static void
free_handle(tkshm_php_redis *h)
{
	tkshm_redis_options *o = &h->o;

	free((char *)o->host);
	free((char *)o->unix_path);
	free((char *)o->username);
	free((char *)o->password);
	free((char *)o->cluster);
	free((char *)o->sentinels);
	free((char *)o->sentinel_master);
	free(h);
}

/* *dst = a malloc'd copy of src (NULL stays NULL); false: no memory. */
static bool
dup_str(const char **dst, const char *src)
{
	*dst = src ? strdup(src) : NULL;
	return !src || *dst;
}

#ifdef TKSHM_PHP_HAVE_REDIS
/* This process's handle made with *o: found, or made and kept. */
static int
handle_for(const tkshm_redis_options *o, tkshm_php_redis **out)
{
	tkshm_php_redis *h;
	tkshm_redis_options *c;
	int rc;

	for (h = handles; h; h = h->next)
		if (same_options(&h->o, o)) {
			*out = h;
			return TKSHM_OK;
		}
	h = calloc(1, sizeof *h);
	if (!h)
		return TKSHM_ENOMEM;
	c = &h->o;
	*c = *o;
	c->host = c->unix_path = c->username = c->password = NULL;
	c->cluster = c->sentinels = c->sentinel_master = NULL;
	if (!dup_str(&c->host, o->host) ||
	    !dup_str(&c->unix_path, o->unix_path) ||
	    !dup_str(&c->username, o->username) ||
	    !dup_str(&c->password, o->password) ||
	    !dup_str(&c->cluster, o->cluster) ||
	    !dup_str(&c->sentinels, o->sentinels) ||
	    !dup_str(&c->sentinel_master, o->sentinel_master)) {
		free_handle(h);
		return TKSHM_ENOMEM;
	}
	/* No I/O: it connects on first use. */
	rc = tkshm_redis_open(o, &h->r);
	if (rc != TKSHM_OK) {
		free_handle(h);
		return rc;
	}
	h->next = handles;
	handles = h;
	*out = h;
	return TKSHM_OK;
}
#else
static int
handle_for(const tkshm_redis_options *o, tkshm_php_redis **out)
{
	(void)o;
	(void)out;
	(void)same_options;
	(void)dup_str;
	return TKSHM_ENOTSUP;
}
#endif

ZEND_METHOD(Tkshm_Redis, __construct)
{
	redis_object *obj = redis_of(Z_OBJ_P(ZEND_THIS));
	HashTable *options = NULL;
	struct redis_args a = { .o = TKSHM_REDIS_OPTIONS_INIT };
	zval *v[O_COUNT];
	const char *problem;
	int rc;

	ZEND_PARSE_PARAMETERS_START(0, 1)
	Z_PARAM_OPTIONAL
	Z_PARAM_ARRAY_HT(options)
	ZEND_PARSE_PARAMETERS_END();

	if (obj->h) {
		zend_throw_error(NULL, "Tkshm\\Redis is already constructed");
		RETURN_THROWS();
	}
	if (options && !collect(options, v))
		RETURN_THROWS();
	if (options && !convert(v, &a))
		goto out;
	if ((problem = problem_of(&a)) != NULL) {
		tkshm_php_throw(TKSHM_EINVAL, problem);
		goto out;
	}
	a.o.port = (int)a.port; /* 0 when not given: the default */
	a.o.db = (int)a.db;
	a.o.breaker_failures = (unsigned)a.failures;
	a.o.cluster = a.cluster ? ZSTR_VAL(a.cluster) : NULL;
	a.o.sentinels = a.sentinels ? ZSTR_VAL(a.sentinels) : NULL;
	rc = handle_for(&a.o, &obj->h);
	if (rc != TKSHM_OK)
		tkshm_php_throw(rc, rc == TKSHM_ENOTSUP ?
					    "tkshm was built without its Redis "
					    "tier (build it with "
					    "libhiredis-dev installed)" :
					    NULL);
out:
	if (a.cluster)
		zend_string_release(a.cluster);
	if (a.sentinels)
		zend_string_release(a.sentinels);
}

int
tkshm_php_redis_attach(tkshm_table *t, tkshm_redis *r)
{
#ifdef TKSHM_PHP_HAVE_REDIS
	return tkshm_redis_attach(t, r);
#else
	(void)t;
	(void)r;
	return TKSHM_ENOTSUP;
#endif
}

tkshm_redis *
tkshm_php_redis_handle(zend_object *obj)
{
	tkshm_php_redis *h = redis_of(obj)->h;

	if (!h) {
		zend_throw_error(NULL, "Tkshm\\Redis is not constructed (its "
				       "constructor did not succeed)");
		return NULL;
	}
	return h->r;
}

void
tkshm_php_redis_close_all(void)
{
	while (handles) {
		tkshm_php_redis *h = handles;

		handles = h->next;
#ifdef TKSHM_PHP_HAVE_REDIS
		tkshm_redis_close(h->r);
#endif
		free_handle(h);
	}
}

void
tkshm_php_redis_register(void)
{
	zend_class_entry ce;

	INIT_NS_CLASS_ENTRY(ce, "Tkshm", "Redis", tkshm_php_redis_methods);
	tkshm_php_redis_ce = zend_register_internal_class_ex(&ce, NULL);
	/* It names a handle of this process, as a Table does. */
	tkshm_php_redis_ce->ce_flags |= ZEND_ACC_FINAL |
					ZEND_ACC_NO_DYNAMIC_PROPERTIES |
					ZEND_ACC_NOT_SERIALIZABLE;
	tkshm_php_redis_ce->create_object = redis_create;
	memcpy(&redis_handlers, zend_get_std_object_handlers(),
	       sizeof(redis_handlers));
	redis_handlers.offset = XtOffsetOf(redis_object, std);
	redis_handlers.clone_obj = NULL;
}
