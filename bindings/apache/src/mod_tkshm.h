/*
 * mod_tkshm.h - what the files of the Apache module share: the tables that
 * TkshmTable declares, the limits that TkshmLimit puts on a section, and
 * the per-directory configuration.
 *
 * Life of a table: the directives only describe it (tables.c keeps one
 * record per name, whichever of TkshmTable and TkshmLimit names it first);
 * post_config opens every table in the parent process, as root, before any
 * child is forked, and the children inherit the mapping (a tkshm handle
 * survives fork()), so every child of every MPM decides on the same shared
 * state and no child needs the right to open the file.  A restart reads the
 * configuration again and attaches the same files: their state survives.
 */
#ifndef MOD_TKSHM_H
#define MOD_TKSHM_H

#include <stdbool.h>
#include <stdint.h>

#include "httpd.h"
#include "http_config.h"
#include "ap_expr.h"
#include "scoreboard.h"
#include "apr_tables.h"

#include <tkshm.h>
#include <tkshm_http.h>

#include "directive_parse.h"

/* httpd finds the module by this symbol: the only one the module exports
 * (mod_tkshm.map), hence default visibility in a -fvisibility=hidden
 * build. */
extern module AP_MODULE_DECLARE_DATA tkshm_module
	__attribute__((visibility("default")));

/** One table, named by TkshmTable (its definition) and by TkshmLimit (its
 *  uses), in either order.  Lives in the configuration pool. */
typedef struct tkap_table {
	const char *name;
	/** TkshmTable's "file:line"; NULL while no TkshmTable names it. */
	const char *defined_at;
	/** The first TkshmLimit naming it, for the error when none defines
	 *  it. */
	const char *first_use;
	/** The first TkshmLimit naming it in a section of several limits
	 *  (checked together by tkshm_check_multi_at); NULL if none. */
	const char *multi_use;
	/* The definition (valid when defined_at is set). */
	/** NULL: an anonymous table (TkshmTable NAME anonymous ...). */
	const char *path;
	tkshm_policy policy;
	uint64_t slots;
	uint32_t mode;
	int64_t gid;
	/** owner=: the owner of a created file; -1: the creator (root). */
	int64_t uid;
	uint32_t flags;
	tkshm_on_full on_full;
	/** Opened by post_config in the parent, inherited by the children;
	 *  closed when the configuration pool is cleared. */
	tkshm_table *handle;
} tkap_table;

/** A key longer than its table takes is replaced by this prefix and the
 *  hex SHA-1 of the key (limit.c). */
#define TKAP_LONG_KEY_PREFIX "\x01sha1:"
#define TKAP_LONG_KEY_LEN    (sizeof(TKAP_LONG_KEY_PREFIX) - 1 + 40)

/** One TkshmLimit: a table, the key of a request in it, and what a
 *  request costs. */
typedef struct tkap_limit {
	tkap_table *table;
	/** NULL: the client's address (tkshm_http_client_key). */
	const ap_expr_info_t *key;
	double cost;
} tkap_limit;

/** Per-directory configuration (also the server's defaults).  Fields left
 *  unset (-1, NULL) take the enclosing section's value when merged. */
typedef struct tkap_dir_conf {
	/** The limits of this section, an array of tkap_limit: NULL when the
	 *  section sets none (it inherits its parent's), empty after
	 *  "TkshmLimit off".  At most TKSHM_MULTI_MAX. */
	apr_array_header_t *limits;
	int headers;	 /* a tkshm_http_style */
	int v6_prefix;	 /* bits of an IPv6 client address kept in its key */
	int deny_status; /* the status of a denial */
	int on_error;	 /* an enum tkap_on_error (directive_parse.h) */
	int dry_run;	 /* 1: count and log, never deny */
	int log_level;	 /* of denials: an APLOG_ level */
} tkap_dir_conf;

/* config.c: the directives (their arguments: directive_parse.h) and the
 * per-directory configuration; tkap_where, "file:line" of the directive
 * being read (for later errors). */
extern const command_rec tkap_commands[];
const char *tkap_where(const cmd_parms *cmd);
void *tkap_dir_conf_create(apr_pool_t *p, char *dir);
void *tkap_dir_conf_merge(apr_pool_t *p, void *parent, void *child);

/* tables.c: the registry of tables of one configuration generation. */
tkap_table *tkap_table_named(apr_pool_t *pconf, const char *name);
/* check_config (configtest too): every table used is defined, lease tables
 * decide alone.  post_config: opens every table. */
int tkap_tables_check(apr_pool_t *pconf, server_rec *s);
int tkap_tables_open(apr_pool_t *pconf, server_rec *s);
/* pre_mpm: the parent is about to fork the generation's children. */
int tkap_tables_forking(apr_pool_t *pconf, ap_scoreboard_e sb_type);

/* The tables of the running generation, sorted by name (status.c). */
apr_array_header_t *tkap_tables_list(apr_pool_t *p);

/** tkshm-status?prometheus: the tables in Prometheus's text format, with
 *  tkshm-inspect's metric names (status_prom.c). */
void tkap_status_prometheus(request_rec *r, const apr_array_header_t *tables);

/* change.c: what an edited declaration does to a live table.  plan:
 * under httpd -t only, one line per table a start would create or change
 * (tkshm_plan); an error for a file a start could not open.  log: one
 * notice line of what tkshm_open() or tkshm_apply() did, unless nothing;
 * `when` (NULL: none) follows the table's name.  note_shrink: appends to
 * c->text that slots=`asked` left the table's size as it was. */
int tkap_tables_plan(apr_pool_t *p, server_rec *s);
void tkap_change_log(server_rec *s, const tkap_table *t, const tkshm_change *c,
		     const char *when);
void tkap_change_note_shrink(tkshm_change *c, uint64_t asked);
/* slots=`asked` (0: none) asks for fewer than a table of `slots` has. */
bool tkap_slots_shrink(uint64_t asked, uint64_t slots);

/* status.c: the tkshm-status handler. */
int tkap_status_handler(request_rec *r);

/* redis.c: TkshmRedis, the connection of strict tables.  check: a strict
 * table can be served (TkshmRedis set, an MPM without threads); open: the
 * handle, before the tables; attach: to one strict table.  Each logs why
 * and returns false on failure. */
const char *tkap_cmd_redis(cmd_parms *cmd, void *unused, int argc,
			   char *const argv[]);
bool tkap_redis_check(server_rec *s, const tkap_table *t);
bool tkap_redis_open(server_rec *s);
bool tkap_redis_attach(server_rec *s, tkap_table *t);

/* limit.c: the check of a request (the header_parser hook). */
int tkap_limit_request(request_rec *r);

#endif /* MOD_TKSHM_H */
