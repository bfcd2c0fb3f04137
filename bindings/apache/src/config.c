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
 *   TkshmHeaders draft|legacy|off
 *   TkshmIPv6Prefix BITS
 *   TkshmDenyStatus CODE
 *   TkshmOnError allow|deny
 *   TkshmDryRun on|off
 *   TkshmLogLevel emerg|alert|crit|error|warn|notice|info|debug
 *
 * Everything that can be checked while the configuration is read is
 * checked here, so that `apachectl configtest` reports it with the file
 * and line; what needs the whole configuration (a table used but never
 * defined) is checked once it is all read (check_config: tables.c, which
 * configtest runs too).
 */
#include <errno.h>
#include <stdlib.h>
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

/* Table names are also RateLimit policy names and appear in logs: kept to
 * letters, digits and _ . - */
static bool
tkap_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > TKAP_TABLE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

bool
tkap_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

const char *
tkap_option(const char *arg, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n) == 0 && arg[n] == '=')
		return arg + n + 1;
	return NULL;
}

/* The kinds a request can be checked against (tkshm_check_at); the shaper
 * and the concurrency kinds have calls of their own. */
static bool
tkap_kind_checkable(tkshm_kind kind)
{
	switch (kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_TOKEN_BUCKET:
	case TKSHM_KIND_FIXED_WINDOW:
	case TKSHM_KIND_SLIDING_WINDOW:
	case TKSHM_KIND_SLIDING_LOG:
	case TKSHM_KIND_QUOTA:
	case TKSHM_KIND_TOKEN_BUDGET:
		return true;
	default:
		return false;
	}
}

static const char *
tkap_policy_set(cmd_parms *cmd, tkap_table *t, const char *spec)
{
	char why[256];

	if (tkshm_policy_parse(spec, &t->policy, why, sizeof(why)) != TKSHM_OK)
		return apr_psprintf(cmd->pool, "TkshmTable %s: policy '%s': %s",
				    t->name, spec, why);
	if (!tkap_kind_checkable(t->policy.kind))
		return apr_psprintf(
			cmd->pool,
			"TkshmTable %s: policy '%s': a %s table "
			"cannot limit requests (use gcra, "
			"tokenBucket, fixedWindow, slidingWindow, "
			"slidingWindowLog, quota or tokenBudget)",
			t->name, spec,
			apr_pstrndup(cmd->temp_pool, spec, strcspn(spec, ":")));
	return NULL;
}

/* The options after POLICY, each at most once. */
static const char *
tkap_table_options(cmd_parms *cmd, tkap_table *t, int argc, char *const argv[])
{
	bool seen_slots = false, seen_full = false, seen_mode = false,
	     seen_group = false, seen_huge = false, seen_owner = false;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		bool *seen;
		uint64_t n;

		if ((v = tkap_option(a, "slots"))) {
			seen = &seen_slots;
			if (!tkap_parse_uint(v, 8, TKSHM_MAX_SLOTS, &n))
				return apr_psprintf(
					cmd->pool,
					"TkshmTable %s: slots=%s: expected an "
					"integer from 8 to %" APR_UINT64_T_FMT,
					t->name, v,
					(apr_uint64_t)TKSHM_MAX_SLOTS);
			t->slots = n;
		} else if ((v = tkap_option(a, "onFull"))) {
			seen = &seen_full;
			if (strcmp(v, "evict") == 0)
				t->on_full = TKSHM_ON_FULL_EVICT;
			else if (strcmp(v, "refuse") == 0)
				t->on_full = TKSHM_ON_FULL_REFUSE;
			else
				return apr_psprintf(cmd->pool,
						    "TkshmTable %s: onFull=%s: "
						    "expected evict or refuse",
						    t->name, v);
		} else if ((v = tkap_option(a, "mode"))) {
			char *end;
			long m;

			seen = &seen_mode;
			errno = 0;
			m = strtol(v, &end, 8);
			if (*v < '0' || *v > '7' || *end != '\0' ||
			    errno != 0 || m < 0 || m > 0777)
				return apr_psprintf(cmd->pool,
						    "TkshmTable %s: mode=%s: "
						    "expected octal permission "
						    "bits such as 0600",
						    t->name, v);
			t->mode = (uint32_t)m;
		} else if ((v = tkap_option(a, "group"))) {
			apr_gid_t gid;

			seen = &seen_group;
			if (*v == '\0' ||
			    apr_gid_get(&gid, v, cmd->temp_pool) != APR_SUCCESS)
				return apr_psprintf(cmd->pool,
						    "TkshmTable %s: group=%s: "
						    "no such group",
						    t->name, v);
			t->gid = (int64_t)gid;
		} else if ((v = tkap_option(a, "owner"))) {
			apr_uid_t uid;
			apr_gid_t gid;

			seen = &seen_owner;
			if (*v == '\0' ||
			    apr_uid_get(&uid, &gid, v, cmd->temp_pool) !=
				    APR_SUCCESS)
				return apr_psprintf(cmd->pool,
						    "TkshmTable %s: owner=%s: "
						    "no such user",
						    t->name, v);
			t->uid = (int64_t)uid;
		} else if (strcmp(a, "hugepages") == 0) {
			seen = &seen_huge;
			t->flags |= TKSHM_O_HUGEPAGES;
		} else {
			return apr_psprintf(cmd->pool,
					    "TkshmTable %s: unknown option "
					    "'%s' (slots=, onFull=, mode=, "
					    "owner=, group=, hugepages)",
					    t->name, a);
		}
		if (*seen)
			return apr_psprintf(cmd->pool,
					    "TkshmTable %s: '%s' repeats an "
					    "option",
					    t->name, a);
		*seen = true;
	}
	return NULL;
}

/* TkshmTable NAME FILE POLICY [options...] */
static const char *
tkap_cmd_table(cmd_parms *cmd, void *unused, int argc, char *const argv[])
{
	const char *err, *name, *path;
	tkap_table def, *t;

	(void)unused;
	if ((err = ap_check_cmd_context(cmd, GLOBAL_ONLY)))
		return err;
	if (argc < 3)
		return "TkshmTable takes a name, a file and a policy: "
		       "TkshmTable api /dev/shm/api gcra:limit=10,periodMs=1000";
	name = argv[0];
	path = argv[1];
	if (!tkap_name_ok(name))
		return apr_psprintf(cmd->pool,
				    "TkshmTable: bad name '%s' (1 to %d "
				    "letters, digits, _ . -)",
				    name, TKAP_TABLE_NAME_MAX);
	/* "anonymous": no file, a mapping the children inherit (tables.c). */
	if (strcmp(path, "anonymous") == 0)
		path = NULL;
	/* tkshm_open takes a bare name as a file in /dev/shm; any other
	 * relative path would depend on httpd's working directory. */
	else if (path[0] != '/' && (path[0] == '\0' || strchr(path, '/')))
		return apr_psprintf(cmd->pool,
				    "TkshmTable %s: file '%s' must be an "
				    "absolute path or a bare name (a file in "
				    "%s)",
				    name, path, TKSHM_DEFAULT_DIR);

	/* Everything is checked on a copy: a refused directive leaves the
	 * record as it was. */
	memset(&def, 0, sizeof(def));
	def.name = name;
	def.mode = 0600;
	def.gid = -1;
	def.uid = -1;
	def.on_full = TKSHM_ON_FULL_EVICT;
	if ((err = tkap_policy_set(cmd, &def, argv[2])) ||
	    (err = tkap_table_options(cmd, &def, argc - 3, argv + 3)))
		return err;
	/* An anonymous table has no file to own or share. */
	if (!path && (def.uid >= 0 || def.gid >= 0 || def.mode != 0600))
		return apr_psprintf(cmd->pool,
				    "TkshmTable %s: an anonymous table has no "
				    "file: mode=, owner= and group= do not "
				    "apply",
				    name);

	t = tkap_table_named(cmd->pool, name);
	if (t->defined_at)
		return apr_psprintf(cmd->pool,
				    "TkshmTable %s is already defined at %s",
				    name, t->defined_at);
	t->defined_at = tkap_where(cmd);
	t->path = path ? apr_pstrdup(cmd->pool, path) : NULL;
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
	tkap_limit lim = { NULL, NULL, 1.0 };
	bool seen_key = false, seen_cost = false;
	tkap_limit *slot;

	if (argc < 1)
		return "TkshmLimit takes a table name, or off";
	if (strcmp(argv[0], "off") == 0) {
		if (argc > 1 || (c->limits && c->limits->nelts > 0))
			return "TkshmLimit off must be the only TkshmLimit of "
			       "its section";
		c->limits = apr_array_make(cmd->pool, 0, sizeof(tkap_limit));
		return NULL;
	}
	if (c->limits && c->limits->nelts == 0)
		return "TkshmLimit off is already set in this section";
	if (c->limits && c->limits->nelts >= TKSHM_MULTI_MAX)
		return apr_psprintf(cmd->pool,
				    "TkshmLimit: at most %d limits per section",
				    TKSHM_MULTI_MAX);
	if (!tkap_name_ok(argv[0]))
		return apr_psprintf(cmd->pool,
				    "TkshmLimit: bad table name '%s'", argv[0]);
	for (int i = 1; i < argc; i++) {
		const char *v;

		if ((v = tkap_option(argv[i], "key")) && !seen_key) {
			const char *why = NULL;

			seen_key = true;
			lim.key = ap_expr_parse_cmd(
				cmd, v, AP_EXPR_FLAG_STRING_RESULT, &why, NULL);
			if (why)
				return apr_psprintf(cmd->pool,
						    "TkshmLimit %s: key=%s: %s",
						    argv[0], v, why);
		} else if ((v = tkap_option(argv[i], "cost")) && !seen_cost) {
			uint64_t n;

			seen_cost = true;
			/* Whole units: every kind takes them (tokenBudget
			 * only them), and a request is one or more units. */
			if (!tkap_parse_uint(v, 1, (uint64_t)TKSHM_COST_MAX,
					     &n))
				return apr_psprintf(cmd->pool,
						    "TkshmLimit %s: cost=%s: "
						    "expected an integer >= 1",
						    argv[0], v);
			lim.cost = (double)n;
		} else {
			return apr_psprintf(
				cmd->pool,
				"TkshmLimit %s: unknown or repeated "
				"option '%s' (key=, cost=)",
				argv[0], argv[i]);
		}
	}

	lim.table = tkap_table_named(cmd->pool, argv[0]);
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

static const char *
tkap_cmd_headers(cmd_parms *cmd, void *conf, const char *arg)
{
	tkap_dir_conf *c = conf;

	(void)cmd;
	if (strcmp(arg, "draft") == 0)
		c->headers = TKSHM_HTTP_DRAFT;
	else if (strcmp(arg, "legacy") == 0)
		c->headers = TKSHM_HTTP_LEGACY;
	else if (strcmp(arg, "off") == 0)
		c->headers = TKSHM_HTTP_NONE;
	else
		return "TkshmHeaders takes draft, legacy or off";
	return NULL;
}

static const char *
tkap_cmd_v6_prefix(cmd_parms *cmd, void *conf, const char *arg)
{
	tkap_dir_conf *c = conf;
	uint64_t n;

	(void)cmd;
	if (!tkap_parse_uint(arg, 1, 128, &n))
		return "TkshmIPv6Prefix takes a prefix length from 1 to 128";
	c->v6_prefix = (int)n;
	return NULL;
}

static const char *
tkap_cmd_deny_status(cmd_parms *cmd, void *conf, const char *arg)
{
	tkap_dir_conf *c = conf;
	uint64_t n;

	(void)cmd;
	if (!tkap_parse_uint(arg, 400, 599, &n))
		return "TkshmDenyStatus takes an HTTP error status from 400 "
		       "to 599 (429 by default)";
	c->deny_status = (int)n;
	return NULL;
}

static const char *
tkap_cmd_on_error(cmd_parms *cmd, void *conf, const char *arg)
{
	tkap_dir_conf *c = conf;

	(void)cmd;
	if (strcmp(arg, "allow") == 0)
		c->on_error = TKAP_ON_ERROR_ALLOW;
	else if (strcmp(arg, "deny") == 0)
		c->on_error = TKAP_ON_ERROR_DENY;
	else
		return "TkshmOnError takes allow or deny";
	return NULL;
}

static const char *
tkap_cmd_dry_run(cmd_parms *cmd, void *conf, int on)
{
	tkap_dir_conf *c = conf;

	(void)cmd;
	c->dry_run = on ? 1 : 0;
	return NULL;
}

/* The levels of LogLevel, by name (without trace1..8: a denial is not a
 * trace). */
static const char *const tkap_levels[] = {
	[APLOG_EMERG] = "emerg",  [APLOG_ALERT] = "alert",
	[APLOG_CRIT] = "crit",	  [APLOG_ERR] = "error",
	[APLOG_WARNING] = "warn", [APLOG_NOTICE] = "notice",
	[APLOG_INFO] = "info",	  [APLOG_DEBUG] = "debug",
};

static const char *
tkap_cmd_log_level(cmd_parms *cmd, void *conf, const char *arg)
{
	tkap_dir_conf *c = conf;

	(void)cmd;
	for (int i = 0; i < (int)(sizeof(tkap_levels) / sizeof(*tkap_levels));
	     i++)
		if (strcmp(arg, tkap_levels[i]) == 0) {
			c->log_level = i;
			return NULL;
		}
	return "TkshmLogLevel takes emerg, alert, crit, error, warn, notice, "
	       "info (the default) or debug";
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
		      "RateLimit headers: draft (default), legacy or off"),
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
