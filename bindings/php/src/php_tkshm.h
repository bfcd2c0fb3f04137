/*
 * php_tkshm.h - what the files of the PHP extension share.
 *
 * The extension is one module (module.c) with three classes and two
 * functions, one file each:
 *   exception.c  Tkshm\Exception: a library error code and its sentence
 *   decision.c   Tkshm\Decision: a check's read-only result
 *   registry.c   the process's open tables (one handle per table and
 *                process, kept across requests), and policy changes
 *   change.c     what a policy or size change did, as a PHP array
 *   table.c      Tkshm\Table: check, peek, reset, stats, policy,
 *                change, apply, plan, attach
 *   redis.c      Tkshm\Redis: the process's connection handles for
 *                strict tables, one per set of options, kept across
 *                requests
 *   http.c       Tkshm\headers() and Tkshm\client_key() (tkshm_http.h)
 */
#ifndef PHP_TKSHM_H
#define PHP_TKSHM_H

#include <php.h>

#include <sys/types.h>

#include <tkshm.h>
#include <tkshm_redis.h>

/* The registry is one list per process with no lock: a thread-safe (ZTS)
 * PHP would have several requests' threads in it at once. */
#ifdef ZTS
#error "tkshm's PHP extension is for the non-thread-safe PHP (PHP-FPM, CLI)"
#endif

#define PHP_TKSHM_VERSION "0.1.0"

extern zend_module_entry tkshm_module_entry;

/* ---- exception.c ---- */
extern zend_class_entry *tkshm_php_exception_ce;
void tkshm_php_exception_register(void);
/* Throws Tkshm\Exception with getCode() == code (a negative tkshm_error)
 * and the message `detail`, or the library's sentence when detail is NULL
 * or empty. */
void tkshm_php_throw(int code, const char *detail);

/* ---- decision.c ---- */
extern zend_class_entry *tkshm_php_decision_ce;
void tkshm_php_decision_register(void);
/* Makes `out` a new Tkshm\Decision holding *d. */
void tkshm_php_decision_new(zval *out, const tkshm_decision *d);
/* Reads a Tkshm\Decision back into *d.  Returns false (with an exception
 * thrown) when a field is not set, which only an object the extension did
 * not build can have. */
bool tkshm_php_decision_read(zend_object *obj, tkshm_decision *d);

/* ---- registry.c ---- */
/* One open table of this process, by path.  Entries live until the module
 * shuts down, so Table objects may point at them for as long as they
 * exist. */
typedef struct tkshm_php_handle {
	struct tkshm_php_handle *next;
	tkshm_table *table;
	char *path;   /* as the script wrote it */
	pid_t opener; /* the process that opened it */
	/* The Redis handle attached to the table (a strict one), or NULL.
	 * Redis handles live until module shutdown, after the tables, so
	 * this never outlives its handle. */
	tkshm_redis *redis;
} tkshm_php_handle;

/* The handle of the table at `path`, opened (and created with `mode` if
 * absent) on first use in this process and reused afterwards.  The policy
 * string `policy` and `slots` are applied to the live table whenever they
 * differ from it (a larger slots grows it; a smaller one is noted in the
 * text, tables do not shrink), as tkshm_open() applies them; with `keep`
 * a difference is TKSHM_EMISMATCH instead.  *change says what was done.
 * Returns TKSHM_OK or a library code, with a sentence in err when there is
 * one. */
int tkshm_php_registry_get(const char *path, const char *policy, uint64_t slots,
			   uint32_t mode, bool keep, tkshm_php_handle **out,
			   tkshm_change *change, char *err, size_t err_len);
/* Successful tkshm_open() calls made by the calling process. */
zend_long tkshm_php_registry_open_count(void);
/* Closes every handle (module shutdown). */
void tkshm_php_registry_close_all(void);

/* ---- change.c ---- */
/* Makes `out` the array of a change: kind ("none", "create", "in_place",
 * "replace"), states_kept, slots_before, slots_after, text. */
void tkshm_php_change_array(zval *out, const tkshm_change *c);
/* Appends to c->text that `asked` slots were not applied because a table
 * does not shrink, in the words tkshm_open() uses for it. */
void tkshm_php_change_note_shrink(tkshm_change *c, uint64_t asked);
/* `slots` (> 0) as a table is made with it: a power of two, at least 8. */
uint64_t tkshm_php_slots_rounded(uint64_t slots);
/* The table's canonical policy string now (another process may have
 * changed it) into buf (TKSHM_POLICY_MAX bytes); returns its length or a
 * library code. */
int tkshm_php_live_policy(tkshm_table *t, char *buf, size_t len);

/* ---- redis.c ---- */
extern zend_class_entry *tkshm_php_redis_ce;
extern const zend_function_entry tkshm_php_redis_methods[]; /* arginfo */
void tkshm_php_redis_register(void);
/* The handle of a constructed Tkshm\Redis object, or NULL with an Error
 * thrown (its constructor did not succeed). */
tkshm_redis *tkshm_php_redis_handle(zend_object *obj);
/* tkshm_redis_attach(), or TKSHM_ENOTSUP without the Redis tier. */
int tkshm_php_redis_attach(tkshm_table *t, tkshm_redis *r);
/* Closes every handle (module shutdown, after the tables). */
void tkshm_php_redis_close_all(void);

/* ---- table.c ---- */
extern zend_class_entry *tkshm_php_table_ce;
extern const zend_function_entry tkshm_php_table_methods[]; /* arginfo */
void tkshm_php_table_register(void);

/* ---- http.c ---- */
extern const zend_function_entry tkshm_php_functions[]; /* arginfo */
PHP_FUNCTION(tkshm_headers);
PHP_FUNCTION(tkshm_client_key);

#endif /* PHP_TKSHM_H */
