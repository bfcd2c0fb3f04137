/*
 * directive_parse.h - the arguments of mod_tkshm's directives, read and
 * checked without httpd or APR: strings in, a plain record and a verdict
 * out, and on refusal a sentence in the caller's buffer.  config.c keeps
 * the Apache side (contexts, pools, the table registry); what needs the
 * system or httpd (user and group names, key= expressions) is asked of the
 * caller through tkap_directive_env, so that the fuzz target
 * (tests/fuzz/fuzz_apache_directive.c) can drive the same code.
 *
 * Every parser leaves its output untouched when it refuses (a refused
 * directive changes nothing), writes at most err_len bytes to err (always
 * NUL-terminated when err_len > 0; err may be NULL when err_len is 0), and
 * never writes to its arguments.  Returned pointers point into argv.
 */
#ifndef TKAP_DIRECTIVE_PARSE_H
#define TKAP_DIRECTIVE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tkshm.h>

/** The longest table name: it is also the RateLimit policy name. */
#define TKAP_TABLE_NAME_MAX 64

/** The longest reason a parser takes from the library or from the
 *  caller's env (with its NUL), quoted in a message. */
#define TKAP_WHY_MAX 256

/** What TkshmOnError does when a check fails (a full table that refuses
 *  to evict, contention that does not settle, a key that is too long). */
enum tkap_on_error {
	TKAP_ON_ERROR_ALLOW = 0, /* let the request through (the default) */
	TKAP_ON_ERROR_DENY = 1,	 /* answer 503 */
};

/** What the parsers ask of their caller.  user_id/group_id: true and the
 *  id when the name (never empty) is a user/group of the system.  key_ok:
 *  true if `expr` is a valid key= expression, else false and why (a
 *  NUL-terminated sentence of at most why_len bytes). */
typedef struct tkap_directive_env {
	bool (*user_id)(void *ctx, const char *name, int64_t *uid);
	bool (*group_id)(void *ctx, const char *name, int64_t *gid);
	bool (*key_ok)(void *ctx, const char *expr, char *why, size_t why_len);
	void *ctx;
} tkap_directive_env;

/** TkshmTable NAME FILE|anonymous POLICY [options]: the definition. */
typedef struct tkap_table_def {
	const char *name; /* argv[0] */
	/** argv[1]; NULL: an anonymous table ("anonymous"). */
	const char *path;
	tkshm_policy policy;
	uint64_t slots; /* 0: the library's default */
	uint32_t mode;	/* 0600 unless mode= */
	int64_t gid;	/* -1 unless group= */
	int64_t uid;	/* -1 unless owner= */
	uint32_t flags; /* TKSHM_O_HUGEPAGES or 0 */
	tkshm_on_full on_full;
} tkap_table_def;

/** TkshmLimit TABLE [key=EXPR] [cost=N] | TkshmLimit off. */
typedef struct tkap_limit_def {
	bool off;
	const char *table; /* argv[0]; NULL when off */
	const char *key;   /* the key= value (env->key_ok accepted it); NULL:
			      the client's address */
	uint64_t cost;	   /* 1 to TKSHM_COST_MAX; 1 unless cost= */
} tkap_limit_def;

/** Table names are also RateLimit policy names and appear in logs: 1 to
 *  TKAP_TABLE_NAME_MAX letters, digits and _ . - */
bool tkap_name_ok(const char *name);

/** A whole decimal number in [min, max] and nothing else (no sign, no
 *  space): *out set and true; else false and *out unchanged. */
bool tkap_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/** The value when `arg` is "name=value", else NULL. */
const char *tkap_option(const char *arg, const char *name);

/** Bytes of an err buffer that hold any message of the parsers below about
 *  these arguments whole: its fixed text, the arguments it quotes and a
 *  reason of at most TKAP_WHY_MAX. */
size_t tkap_directive_err_size(int argc, char *const argv[]);

/** TkshmTable's arguments (argv[0] is NAME). */
bool tkap_parse_table(int argc, char *const argv[],
		      const tkap_directive_env *env, tkap_table_def *out,
		      char *err, size_t err_len);

/** TkshmLimit's arguments.  section_limits: the limits the section already
 *  has (-1: none set, 0: "TkshmLimit off"). */
bool tkap_parse_limit(int argc, char *const argv[], int section_limits,
		      const tkap_directive_env *env, tkap_limit_def *out,
		      char *err, size_t err_len);

/** TkshmHeaders draft|legacy|none: a tkshm_http_style. */
bool tkap_parse_headers(const char *arg, int *out, char *err, size_t err_len);

/** TkshmIPv6Prefix 1..128. */
bool tkap_parse_v6_prefix(const char *arg, int *out, char *err, size_t err_len);

/** TkshmDenyStatus 400..599. */
bool tkap_parse_deny_status(const char *arg, int *out, char *err,
			    size_t err_len);

/** TkshmOnError allow|deny: an enum tkap_on_error. */
bool tkap_parse_on_error(const char *arg, int *out, char *err, size_t err_len);

/** TkshmLogLevel emerg..debug: syslog's level, 0 (emerg) to 7 (debug),
 *  which httpd's APLOG_ levels are (config.c checks it). */
bool tkap_parse_log_level(const char *arg, int *out, char *err, size_t err_len);

#endif /* TKAP_DIRECTIVE_PARSE_H */
