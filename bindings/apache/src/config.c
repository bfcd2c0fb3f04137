/*
 * config.c - the module's directives and its per-directory configuration.
 *
 *   TkshmTable NAME FILE|anonymous POLICY [slots=N] [onFull=evict|refuse]
 *              [mode=OCTAL] [owner=USER] [group=NAME] [hugepages]
 *                                                          (server config)
 *   TkshmRedis [host=H] [port=N] [socket=PATH] [user=U] [password=P]
 *              [db=N] [timeoutMs=MS] [connectTimeoutMs=MS] (server config;
 *                                                   redis.c)
 *   TkshmLimit TABLE [key=EXPR] [cost=N]  |  TkshmLimit off
 *   TkshmHeaders draft|legacy|none
 *   TkshmIPv6Prefix BITS
 *   TkshmDenyStatus CODE
 *   TkshmOnError allow|deny
 *   TkshmDryRun on|off
 *   TkshmLogLevel emerg|alert|crit|error|warn|notice|info|debug
 *
 * Everything that can be checked while the configuration is read is
 * checked here (the arguments themselves by directive_parse.c), so that
 * `apachectl configtest` reports it with the file and line; what needs the whole configuration (a table used but never
 * defined) is checked once it is all read (check_config: tables.c, which
 * configtest runs too).
 */
#include <string.h>

#include "mod_tkshm.h"

#include "http_log.h"
#include "apr_strings.h"
#include "apr_user.h"

APLOG_USE_MODULE(tkshm);

const char *
tkap_where(const cmd_parms *cmd)
{
	return apr_psprintf(cmd->pool, "%s:%d", cmd->directive->filename,
			    cmd->directive->line_num);
}

/* What the parsers of directive_parse.c ask of httpd: user and group ids
 * (from the system, by APR) and the key= expression, compiled here and
 * kept for the limit being read. */
typedef struct tkap_env_ctx {
	cmd_parms *cmd;
	const ap_expr_info_t *key;
} tkap_env_ctx;

static bool
tkap_env_user(void *ctx, const char *name, int64_t *uid)
{
	tkap_env_ctx *e = ctx;
	apr_uid_t u;
	apr_gid_t g;

	if (apr_uid_get(&u, &g, name, e->cmd->temp_pool) != APR_SUCCESS)
		return false;
	*uid = (int64_t)u;
	return true;
}

static bool
tkap_env_group(void *ctx, const char *name, int64_t *gid)
{
	tkap_env_ctx *e = ctx;
	apr_gid_t g;

	if (apr_gid_get(&g, name, e->cmd->temp_pool) != APR_SUCCESS)
		return false;
	*gid = (int64_t)g;
	return true;
}

static bool
tkap_env_key(void *ctx, const char *expr, char *why, size_t why_len)
{
	tkap_env_ctx *e = ctx;
	const char *msg = NULL;

	e->key = ap_expr_parse_cmd(e->cmd, expr, AP_EXPR_FLAG_STRING_RESULT,
				   &msg, NULL);
	if (!msg)
		return true;
	apr_cpystrn(why, msg, why_len);
	return false;
}

/* The parsers' env for this directive, and a buffer that holds any of
 * their messages whole (a temporary one: a refusal is copied out). */
static char *
tkap_env_init(tkap_directive_env *env, tkap_env_ctx *ctx, cmd_parms *cmd,
	      int argc, char *const argv[], size_t *err_len)
{
	ctx->cmd = cmd;
	ctx->key = NULL;
	env->user_id = tkap_env_user;
	env->group_id = tkap_env_group;
	env->key_ok = tkap_env_key;
	env->ctx = ctx;
	*err_len = tkap_directive_err_size(argc, argv);
	return apr_palloc(cmd->temp_pool, *err_len);
}

/* TkshmTable NAME FILE POLICY [options...] */
static const char *
tkap_cmd_table(cmd_parms *cmd, void *unused, int argc, char *const argv[])
{
	const char *err;
	tkap_directive_env env;
	tkap_env_ctx ctx;
	tkap_table_def def;
	tkap_table *t;
	char *why;
	size_t why_len;

	(void)unused;
	if ((err = ap_check_cmd_context(cmd, GLOBAL_ONLY)))
		return err;
	why = tkap_env_init(&env, &ctx, cmd, argc, argv, &why_len);
	if (!tkap_parse_table(argc, argv, &env, &def, why, why_len))
		return apr_pstrdup(cmd->pool, why);

	t = tkap_table_named(cmd->pool, def.name);
	if (t->defined_at)
		return apr_psprintf(cmd->pool,
				    "TkshmTable %s is already defined at %s",
				    def.name, t->defined_at);
	t->defined_at = tkap_where(cmd);
	t->path = def.path ? apr_pstrdup(cmd->pool, def.path) : NULL;
	t->policy = def.policy;
	t->slots = def.slots;
	t->mode = def.mode;
	t->gid = def.gid;
	t->uid = def.uid;
	t->flags = def.flags;
	t->on_full = def.on_full;
	return NULL;
}

/* TkshmLimit TABLE [key=EXPR] [cost=N]  |  TkshmLimit off */
static const char *
tkap_cmd_limit(cmd_parms *cmd, void *conf, int argc, char *const argv[])
{
	tkap_dir_conf *c = conf;
	tkap_directive_env env;
	tkap_env_ctx ctx;
	tkap_limit_def def;
	tkap_limit lim, *slot;
	char *why;
	size_t why_len;

	why = tkap_env_init(&env, &ctx, cmd, argc, argv, &why_len);
	if (!tkap_parse_limit(argc, argv, c->limits ? c->limits->nelts : -1,
			      &env, &def, why, why_len))
		return apr_pstrdup(cmd->pool, why);
	if (def.off) {
		c->limits = apr_array_make(cmd->pool, 0, sizeof(tkap_limit));
		return NULL;
	}

	lim.table = tkap_table_named(cmd->pool, def.table);
	lim.key = def.key ? ctx.key : NULL;
	lim.cost = (double)def.cost;
	if (!lim.table->first_use)
		lim.table->first_use = tkap_where(cmd);
	if (!c->limits)
		c->limits = apr_array_make(cmd->pool, 2, sizeof(tkap_limit));
	slot = apr_array_push(c->limits);
	*slot = lim;
	if (c->limits->nelts == 2) {
		tkap_limit *first = (tkap_limit *)c->limits->elts;

		if (!first->table->multi_use)
			first->table->multi_use = tkap_where(cmd);
	}
	if (c->limits->nelts >= 2 && !lim.table->multi_use)
		lim.table->multi_use = tkap_where(cmd);
	return NULL;
}

/* The one-word directives: the parser's value, or its message (a fixed
 * sentence: it does not quote the word). */
static const char *
tkap_set_int(cmd_parms *cmd, int *field, const char *arg,
	     bool (*parse)(const char *, int *, char *, size_t))
{
	char why[256];

	return parse(arg, field, why, sizeof(why)) ?
		       NULL :
		       apr_pstrdup(cmd->pool, why);
}

static const char *
tkap_cmd_headers(cmd_parms *cmd, void *conf, const char *arg)
{
	return tkap_set_int(cmd, &((tkap_dir_conf *)conf)->headers, arg,
			    tkap_parse_headers);
}

static const char *
tkap_cmd_v6_prefix(cmd_parms *cmd, void *conf, const char *arg)
{
	return tkap_set_int(cmd, &((tkap_dir_conf *)conf)->v6_prefix, arg,
			    tkap_parse_v6_prefix);
}

static const char *
tkap_cmd_deny_status(cmd_parms *cmd, void *conf, const char *arg)
{
	return tkap_set_int(cmd, &((tkap_dir_conf *)conf)->deny_status, arg,
			    tkap_parse_deny_status);
}

static const char *
tkap_cmd_on_error(cmd_parms *cmd, void *conf, const char *arg)
{
	return tkap_set_int(cmd, &((tkap_dir_conf *)conf)->on_error, arg,
			    tkap_parse_on_error);
}

static const char *
tkap_cmd_dry_run(cmd_parms *cmd, void *conf, int on)
{
	tkap_dir_conf *c = conf;

	(void)cmd;
	c->dry_run = on ? 1 : 0;
	return NULL;
}

/* tkap_parse_log_level gives syslog's numbers, which httpd's levels are. */
_Static_assert(APLOG_EMERG == 0 && APLOG_ALERT == 1 && APLOG_CRIT == 2 &&
		       APLOG_ERR == 3 && APLOG_WARNING == 4 &&
		       APLOG_NOTICE == 5 && APLOG_INFO == 6 && APLOG_DEBUG == 7,
	       "httpd's log levels are not syslog's");

static const char *
tkap_cmd_log_level(cmd_parms *cmd, void *conf, const char *arg)
{
	return tkap_set_int(cmd, &((tkap_dir_conf *)conf)->log_level, arg,
			    tkap_parse_log_level);
}

/* In the server configuration, <VirtualHost>, <Location>, <Directory> and
 * <Files>; not in .htaccess (a table is the administrator's). */
#define TKAP_WHERE (RSRC_CONF | ACCESS_CONF)

const command_rec tkap_commands[] = {
	AP_INIT_TAKE_ARGV("TkshmTable", tkap_cmd_table, NULL, RSRC_CONF,
			  "a table: NAME FILE|anonymous POLICY [slots=N] "
			  "[onFull=evict|refuse] [mode=0600] [owner=USER] "
			  "[group=NAME] "
			  "[hugepages]"),
	AP_INIT_TAKE_ARGV("TkshmRedis", tkap_cmd_redis, NULL, RSRC_CONF,
			  "where the Redis of strict tables is: [host=H] "
			  "[port=N] [socket=PATH] [user=U] [password=P] [db=N] "
			  "[timeoutMs=MS] [connectTimeoutMs=MS]"),
	AP_INIT_TAKE_ARGV("TkshmLimit", tkap_cmd_limit, NULL, TKAP_WHERE,
			  "limit requests with a table: TABLE [key=EXPR] "
			  "[cost=N], or off"),
	AP_INIT_TAKE1("TkshmHeaders", tkap_cmd_headers, NULL, TKAP_WHERE,
		      "RateLimit headers: draft (default), legacy or none"),
	AP_INIT_TAKE1("TkshmIPv6Prefix", tkap_cmd_v6_prefix, NULL, TKAP_WHERE,
		      "bits of an IPv6 client address that key it (64)"),
	AP_INIT_TAKE1("TkshmDenyStatus", tkap_cmd_deny_status, NULL, TKAP_WHERE,
		      "the status of a denied request (429)"),
	AP_INIT_TAKE1("TkshmOnError", tkap_cmd_on_error, NULL, TKAP_WHERE,
		      "when a check fails: allow (default) or deny (503)"),
	AP_INIT_FLAG("TkshmDryRun", tkap_cmd_dry_run, NULL, TKAP_WHERE,
		     "on: count and log, never deny"),
	AP_INIT_TAKE1("TkshmLogLevel", tkap_cmd_log_level, NULL, TKAP_WHERE,
		      "the level denials are logged at (info)"),
	{ .name = NULL }, /* the end */
};

void *
tkap_dir_conf_create(apr_pool_t *p, char *dir)
{
	tkap_dir_conf *c = apr_pcalloc(p, sizeof(*c));

	(void)dir;
	c->limits = NULL;
	c->headers = -1;
	c->v6_prefix = -1;
	c->deny_status = -1;
	c->on_error = -1;
	c->dry_run = -1;
	c->log_level = -1;
	return c;
}

/* A section's own settings win; what it leaves unset comes from the
 * enclosing one.  Limits are a set: a section that names any replaces its
 * parent's (so a nested section never counts a request twice). */
void *
tkap_dir_conf_merge(apr_pool_t *p, void *parent, void *child)
{
	const tkap_dir_conf *a = parent, *b = child;
	tkap_dir_conf *c = apr_palloc(p, sizeof(*c));

	c->limits = b->limits ? b->limits : a->limits;
	c->headers = b->headers >= 0 ? b->headers : a->headers;
	c->v6_prefix = b->v6_prefix >= 0 ? b->v6_prefix : a->v6_prefix;
	c->deny_status = b->deny_status >= 0 ? b->deny_status : a->deny_status;
	c->on_error = b->on_error >= 0 ? b->on_error : a->on_error;
	c->dry_run = b->dry_run >= 0 ? b->dry_run : a->dry_run;
	c->log_level = b->log_level >= 0 ? b->log_level : a->log_level;
	return c;
}
