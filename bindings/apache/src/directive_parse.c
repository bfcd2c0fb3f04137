/*
 * directive_parse.c - the arguments of mod_tkshm's directives, without
 * httpd or APR (directive_parse.h): config.c calls these from its
 * directive callbacks, and the fuzz target calls them on arbitrary lines.
 *
 * Messages are written with snprintf into the caller's buffer; every
 * check runs on a local record copied out only on success, so a refused
 * directive leaves the caller's record as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tkshm_http.h>

#include "directive_parse.h"

/* Writes the message if there is room. */
static void
tkap_vfail(char *err, size_t err_len, const char *fmt, va_list ap)
{
	if (err_len > 0 && vsnprintf(err, err_len, fmt, ap) < 0)
		err[0] = '\0';
}

/* A refusal: `return tkap_fail(...)`. */
static bool __attribute__((format(printf, 3, 4)))
tkap_fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tkap_vfail(err, err_len, fmt, ap);
	va_end(ap);
	return false;
}

bool
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

	/* strtoull would skip spaces and take a sign: not in a number. */
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

/* A message quotes each argument at most twice (the policy: whole, and
 * its kind), besides its fixed text (under 256 bytes with any number it
 * prints) and one reason. */
size_t
tkap_directive_err_size(int argc, char *const argv[])
{
	size_t n = 256 + TKAP_WHY_MAX;

	for (int i = 0; i < argc; i++)
		n += 2 * strlen(argv[i]);
	return n;
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

static bool
tkap_policy_set(tkap_table_def *t, const char *spec, char *err, size_t err_len)
{
	char why[TKAP_WHY_MAX];
	size_t kind_len;

	if (tkshm_policy_parse(spec, &t->policy, why, sizeof(why)) != TKSHM_OK)
		return tkap_fail(err, err_len, "TkshmTable %s: policy '%s': %s",
				 t->name, spec, why);
	if (tkap_kind_checkable(t->policy.kind))
		return true;
	/* The kind as written, before the options. */
	kind_len = strcspn(spec, ":");
	return tkap_fail(err, err_len,
			 "TkshmTable %s: policy '%s': a %.*s table cannot "
			 "limit requests (use gcra, tokenBucket, fixedWindow, "
			 "slidingWindow, slidingWindowLog, quota or "
			 "tokenBudget)",
			 t->name, spec,
			 kind_len > INT_MAX ? INT_MAX : (int)kind_len, spec);
}

/* mode=: octal permission bits, 0 to 0777. */
static bool
tkap_parse_mode(const char *v, uint32_t *out)
{
	char *end;
	long m;

	if (*v < '0' || *v > '7')
		return false;
	errno = 0;
	m = strtol(v, &end, 8);
	if (*end != '\0' || errno != 0 || m < 0 || m > 0777)
		return false;
	*out = (uint32_t)m;
	return true;
}

/* The options after POLICY, by their index in the record of those seen. */
enum tkap_table_opt {
	TKAP_OPT_SLOTS,
	TKAP_OPT_ON_FULL,
	TKAP_OPT_MODE,
	TKAP_OPT_GROUP,
	TKAP_OPT_OWNER,
	TKAP_OPT_HUGEPAGES,
	TKAP_OPT_COUNT
};

/* A refused option: `return tkap_refuse_opt(...)`. */
static enum tkap_table_opt __attribute__((format(printf, 3, 4)))
tkap_refuse_opt(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tkap_vfail(err, err_len, fmt, ap);
	va_end(ap);
	return TKAP_OPT_COUNT;
}

/* One option after POLICY into *t.  Returns the option it is (for the
 * caller's check that none repeats), or TKAP_OPT_COUNT when refused. */
static enum tkap_table_opt
tkap_table_option(tkap_table_def *t, const char *a,
		  const tkap_directive_env *env, char *err, size_t err_len)
{
	const char *v;
	uint64_t n;
	int64_t id;
	enum tkap_table_opt which;

	if ((v = tkap_option(a, "slots"))) {
		which = TKAP_OPT_SLOTS;
		if (!tkap_parse_uint(v, 8, TKSHM_MAX_SLOTS, &n))
			return tkap_refuse_opt(
				err, err_len,
				"TkshmTable %s: slots=%s: expected an "
				"integer from 8 to %" PRIu64,
				t->name, v, (uint64_t)TKSHM_MAX_SLOTS);
		t->slots = n;
	} else if ((v = tkap_option(a, "onFull"))) {
		which = TKAP_OPT_ON_FULL;
		if (strcmp(v, "evict") == 0)
			t->on_full = TKSHM_ON_FULL_EVICT;
		else if (strcmp(v, "refuse") == 0)
			t->on_full = TKSHM_ON_FULL_REFUSE;
		else
			return tkap_refuse_opt(
				err, err_len,
				"TkshmTable %s: onFull=%s: expected "
				"evict or refuse",
				t->name, v);
	} else if ((v = tkap_option(a, "mode"))) {
		which = TKAP_OPT_MODE;
		if (!tkap_parse_mode(v, &t->mode))
			return tkap_refuse_opt(
				err, err_len,
				"TkshmTable %s: mode=%s: expected "
				"octal permission bits from 0 to 0777 "
				"(no setuid, setgid or sticky), such as "
				"0600",
				t->name, v);
	} else if ((v = tkap_option(a, "group"))) {
		which = TKAP_OPT_GROUP;
		if (*v == '\0' || !env->group_id(env->ctx, v, &id))
			return tkap_refuse_opt(
				err, err_len,
				"TkshmTable %s: group=%s: no such "
				"group",
				t->name, v);
		t->gid = id;
	} else if ((v = tkap_option(a, "owner"))) {
		which = TKAP_OPT_OWNER;
		if (*v == '\0' || !env->user_id(env->ctx, v, &id))
			return tkap_refuse_opt(
				err, err_len,
				"TkshmTable %s: owner=%s: no such "
				"user",
				t->name, v);
		t->uid = id;
	} else if (strcmp(a, "hugepages") == 0) {
		which = TKAP_OPT_HUGEPAGES;
		t->flags |= TKSHM_O_HUGEPAGES;
	} else {
		return tkap_refuse_opt(
			err, err_len,
			"TkshmTable %s: unknown option '%s' (slots=, "
			"onFull=, mode=, owner=, group=, hugepages)",
			t->name, a);
	}
	return which;
}

/* The options after POLICY, each at most once. */
static bool
tkap_table_options(tkap_table_def *t, int argc, char *const argv[],
		   const tkap_directive_env *env, char *err, size_t err_len)
{
	bool seen[TKAP_OPT_COUNT] = { false };

	for (int i = 0; i < argc; i++) {
		enum tkap_table_opt which =
			tkap_table_option(t, argv[i], env, err, err_len);

		if (which == TKAP_OPT_COUNT)
			return false;
		if (seen[which])
			return tkap_fail(err, err_len,
					 "TkshmTable %s: '%s' repeats an "
					 "option",
					 t->name, argv[i]);
		seen[which] = true;
	}
	return true;
}

bool
tkap_parse_table(int argc, char *const argv[], const tkap_directive_env *env,
		 tkap_table_def *out, char *err, size_t err_len)
{
	tkap_table_def def;
	const char *name, *path;

	if (argc < 3)
		return tkap_fail(err, err_len, "%s",
				 "TkshmTable takes a name, a file and a "
				 "policy: TkshmTable api /dev/shm/api "
				 "gcra:limit=10,periodMs=1000");
	name = argv[0];
	path = argv[1];
	if (!tkap_name_ok(name))
		return tkap_fail(err, err_len,
				 "TkshmTable: bad name '%s' (1 to %d letters, "
				 "digits, _ . -)",
				 name, TKAP_TABLE_NAME_MAX);
	/* "anonymous": no file, a mapping the children inherit (tables.c). */
	if (strcmp(path, "anonymous") == 0)
		path = NULL;
	/* tkshm_open takes a bare name as a file in /dev/shm; any other
	 * relative path would depend on httpd's working directory. */
	else if (path[0] != '/' && (path[0] == '\0' || strchr(path, '/')))
		return tkap_fail(err, err_len,
				 "TkshmTable %s: file '%s' must be an absolute "
				 "path or a bare name (a file in %s)",
				 name, path, TKSHM_DEFAULT_DIR);

	memset(&def, 0, sizeof(def));
	def.name = name;
	def.path = path;
	def.mode = 0600;
	def.gid = -1;
	def.uid = -1;
	def.on_full = TKSHM_ON_FULL_EVICT;
	if (!tkap_policy_set(&def, argv[2], err, err_len) ||
	    !tkap_table_options(&def, argc - 3, argv + 3, env, err, err_len))
		return false;
	/* An anonymous table has no file to own or share. */
	if (!path && (def.uid >= 0 || def.gid >= 0 || def.mode != 0600))
		return tkap_fail(err, err_len,
				 "TkshmTable %s: an anonymous table has no "
				 "file: mode=, owner= and group= do not apply",
				 name);
	*out = def;
	return true;
}

bool
tkap_parse_limit(int argc, char *const argv[], int section_limits,
		 const tkap_directive_env *env, tkap_limit_def *out, char *err,
		 size_t err_len)
{
	tkap_limit_def lim = { false, NULL, NULL, 1 };
	bool seen_key = false, seen_cost = false;

	if (argc < 1)
		return tkap_fail(err, err_len, "%s",
				 "TkshmLimit takes a table name, or off");
	if (strcmp(argv[0], "off") == 0) {
		if (argc > 1 || section_limits > 0)
			return tkap_fail(err, err_len, "%s",
					 "TkshmLimit off must be the only "
					 "TkshmLimit of its section");
		lim.off = true;
		*out = lim;
		return true;
	}
	if (section_limits == 0)
		return tkap_fail(err, err_len, "%s",
				 "TkshmLimit off is already set in this "
				 "section");
	if (section_limits >= TKSHM_MULTI_MAX)
		return tkap_fail(err, err_len,
				 "TkshmLimit: at most %d limits per section",
				 TKSHM_MULTI_MAX);
	if (!tkap_name_ok(argv[0]))
		return tkap_fail(err, err_len,
				 "TkshmLimit: bad table name '%s'", argv[0]);
	lim.table = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *v;

		if ((v = tkap_option(argv[i], "key")) && !seen_key) {
			char why[TKAP_WHY_MAX] = "";

			seen_key = true;
			if (!env->key_ok(env->ctx, v, why, sizeof(why))) {
				/* Quoted bounded whatever the env wrote. */
				why[sizeof(why) - 1] = '\0';
				return tkap_fail(err, err_len,
						 "TkshmLimit %s: key=%s: %s",
						 argv[0], v, why);
			}
			lim.key = v;
		} else if ((v = tkap_option(argv[i], "cost")) && !seen_cost) {
			uint64_t n;

			seen_cost = true;
			/* Whole units: every kind takes them (tokenBudget
			 * only them), and a request is one or more units. */
			if (!tkap_parse_uint(v, 1, (uint64_t)TKSHM_COST_MAX,
					     &n))
				return tkap_fail(err, err_len,
						 "TkshmLimit %s: cost=%s: "
						 "expected an integer >= 1",
						 argv[0], v);
			lim.cost = n;
		} else {
			return tkap_fail(err, err_len,
					 "TkshmLimit %s: unknown or repeated "
					 "option '%s' (key=, cost=)",
					 argv[0], argv[i]);
		}
	}
	*out = lim;
	return true;
}

bool
tkap_parse_headers(const char *arg, int *out, char *err, size_t err_len)
{
	if (strcmp(arg, "draft") == 0)
		*out = TKSHM_HTTP_DRAFT;
	else if (strcmp(arg, "legacy") == 0)
		*out = TKSHM_HTTP_LEGACY;
	else if (strcmp(arg, "none") == 0)
		*out = TKSHM_HTTP_NONE;
	else if (strcmp(arg, "off") == 0)
		/* The one vocabulary of every binding (tkshm_http.h). */
		return tkap_fail(err, err_len, "%s",
				 "TkshmHeaders off is spelled none (draft, "
				 "legacy or none, as in every binding)");
	else
		return tkap_fail(err, err_len, "%s",
				 "TkshmHeaders takes draft, legacy or none");
	return true;
}

bool
tkap_parse_v6_prefix(const char *arg, int *out, char *err, size_t err_len)
{
	uint64_t n;

	if (!tkap_parse_uint(arg, 1, 128, &n))
		return tkap_fail(err, err_len, "%s",
				 "TkshmIPv6Prefix takes a prefix length from "
				 "1 to 128");
	*out = (int)n;
	return true;
}

bool
tkap_parse_deny_status(const char *arg, int *out, char *err, size_t err_len)
{
	uint64_t n;

	if (!tkap_parse_uint(arg, 400, 599, &n))
		return tkap_fail(err, err_len, "%s",
				 "TkshmDenyStatus takes an HTTP error status "
				 "from 400 to 599 (429 by default)");
	*out = (int)n;
	return true;
}

bool
tkap_parse_on_error(const char *arg, int *out, char *err, size_t err_len)
{
	if (strcmp(arg, "allow") == 0)
		*out = TKAP_ON_ERROR_ALLOW;
	else if (strcmp(arg, "deny") == 0)
		*out = TKAP_ON_ERROR_DENY;
	else
		return tkap_fail(err, err_len, "%s",
				 "TkshmOnError takes allow or deny");
	return true;
}

/* The levels of LogLevel by syslog's number (without trace1..8: a denial
 * is not a trace). */
static const char *const tkap_levels[] = {
	"emerg", "alert", "crit", "error", "warn", "notice", "info", "debug",
};

bool
tkap_parse_log_level(const char *arg, int *out, char *err, size_t err_len)
{
	for (int i = 0; i < (int)(sizeof(tkap_levels) / sizeof(*tkap_levels));
	     i++)
		if (strcmp(arg, tkap_levels[i]) == 0) {
			*out = i;
			return true;
		}
	return tkap_fail(err, err_len, "%s",
			 "TkshmLogLevel takes emerg, alert, crit, error, "
			 "warn, notice, info (the default) or debug");
}
