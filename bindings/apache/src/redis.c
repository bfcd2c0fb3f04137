/*
 * redis.c - the Redis connection of strict tables (TkshmRedis).
 *
 * One connection handle per configuration generation, made in the parent
 * before the tables are opened and attached to every strict table; the
 * children inherit it, and each connects on its first strict check (a
 * handle never shares a socket across fork()).  A handle serves one thread
 * at a time, so strict tables need an MPM without threads (prefork): a
 * threaded MPM is refused when the configuration is checked.
 *
 * Without the library's Redis tier (built without hiredis) the directive
 * and strict tables are refused with a sentence saying so.
 */
#include <string.h>

#include "mod_tkshm.h"

#include "ap_mpm.h"
#include "http_log.h"
#include "apr_strings.h"

#ifdef TKAP_HAVE_REDIS
#include <tkshm_redis.h>
#endif

APLOG_USE_MODULE(tkshm);

#ifdef TKAP_HAVE_REDIS

/* The generation's TkshmRedis, in its configuration pool. */
static struct {
	const char *defined_at; /* "file:line"; NULL: no TkshmRedis */
	tkshm_redis_options o;
	tkshm_redis *handle; /* made by tkap_redis_open */
} tkap_redis;

static apr_status_t
tkap_redis_forget(void *unused)
{
	(void)unused;
	tkshm_redis_close(tkap_redis.handle);
	memset(&tkap_redis, 0, sizeof(tkap_redis));
	return APR_SUCCESS;
}

/* TkshmRedis [host=H] [port=N] [socket=PATH] [user=U] [password=P] [db=N]
 *            [timeoutMs=MS] [connectTimeoutMs=MS]
 *            [cluster=H:P,H:P...] [sentinels=H:P,... master=NAME] */
const char *
tkap_cmd_redis(cmd_parms *cmd, void *unused, int argc, char *const argv[])
{
	tkshm_redis_options o = TKSHM_REDIS_OPTIONS_INIT;
	const char *err;

	(void)unused;
	if ((err = ap_check_cmd_context(cmd, GLOBAL_ONLY)))
		return err;
	if (tkap_redis.defined_at)
		return apr_psprintf(cmd->pool,
				    "TkshmRedis is already set at %s",
				    tkap_redis.defined_at);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v;
		uint64_t n;

		if ((v = tkap_option(a, "host")) && *v) {
			o.host = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "cluster")) && *v) {
			o.cluster = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "sentinels")) && *v) {
			o.sentinels = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "master")) && *v) {
			o.sentinel_master = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "socket")) && *v == '/') {
			o.unix_path = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "user")) && *v) {
			o.username = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "password")) && *v) {
			o.password = apr_pstrdup(cmd->pool, v);
		} else if ((v = tkap_option(a, "port")) &&
			   tkap_parse_uint(v, 1, 65535, &n)) {
			o.port = (int)n;
		} else if ((v = tkap_option(a, "db")) &&
			   tkap_parse_uint(v, 0, 1000000, &n)) {
			o.db = (int)n;
		} else if ((v = tkap_option(a, "timeoutMs")) &&
			   tkap_parse_uint(v, 1, 60000, &n)) {
			o.command_timeout_ms = (double)n;
		} else if ((v = tkap_option(a, "connectTimeoutMs")) &&
			   tkap_parse_uint(v, 1, 60000, &n)) {
			o.connect_timeout_ms = (double)n;
		} else {
			return apr_psprintf(
				cmd->pool,
				"TkshmRedis: bad option '%s' (host=, port=1.."
				"65535, socket=/path, cluster=H:P,H:P..., "
				"sentinels=H:P,... with master=NAME, user=, "
				"password=, db=N, timeoutMs=, connectTimeoutMs= "
				"1..60000)",
				a);
		}
	}
	if (!o.sentinels != !o.sentinel_master)
		return "TkshmRedis: sentinels= and master= go together";
	if ((o.cluster || o.sentinels) && (o.host || o.port || o.unix_path))
		return "TkshmRedis: cluster= or sentinels= name the servers: "
		       "without host=, port= or socket=";
	if (o.cluster && o.sentinels)
		return "TkshmRedis: cluster= and sentinels= are exclusive";
	/* Registered before any table is opened, so run after every table
	 * is closed: a handle outlives the tables attached to it. */
	apr_pool_cleanup_register(cmd->pool, NULL, tkap_redis_forget,
				  apr_pool_cleanup_null);
	tkap_redis.o = o;
	tkap_redis.defined_at = tkap_where(cmd);
	return NULL;
}

bool
tkap_redis_check(server_rec *s, const tkap_table *t)
{
	int threaded = AP_MPMQ_NOT_SUPPORTED;

	if (!tkap_redis.defined_at) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s is strict: TkshmRedis must "
			     "say where Redis is",
			     t->name, t->defined_at);
		return false;
	}
	if (ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded) == APR_SUCCESS &&
	    threaded != AP_MPMQ_NOT_SUPPORTED) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s is strict, which needs an "
			     "MPM without threads (prefork): a Redis "
			     "connection serves one thread at a time",
			     t->name, t->defined_at);
		return false;
	}
	return true;
}

bool
tkap_redis_open(server_rec *s)
{
	int rc;

	/* tkap_redis_forget, registered with the settings, closes it */
	if (!tkap_redis.defined_at || tkap_redis.handle)
		return true;
	rc = tkshm_redis_open(&tkap_redis.o, &tkap_redis.handle);
	if (rc != TKSHM_OK) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmRedis at %s: %s (%s)", tkap_redis.defined_at,
			     tkshm_strerror(rc), tkshm_error_name(rc));
		return false;
	}
	return true;
}

bool
tkap_redis_attach(server_rec *s, tkap_table *t)
{
	int rc = tkshm_redis_attach(t->handle, tkap_redis.handle);

	if (rc != TKSHM_OK) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s: cannot attach Redis: %s",
			     t->name, t->defined_at, tkshm_strerror(rc));
		return false;
	}
	return true;
}

#else /* !TKAP_HAVE_REDIS */

#define TKAP_NO_REDIS                                                       \
	"mod_tkshm was built with a library without its Redis tier (build " \
	"it with libhiredis-dev installed)"

const char *
tkap_cmd_redis(cmd_parms *cmd, void *unused, int argc, char *const argv[])
{
	(void)cmd;
	(void)unused;
	(void)argc;
	(void)argv;
	return "TkshmRedis: " TKAP_NO_REDIS;
}

bool
tkap_redis_check(server_rec *s, const tkap_table *t)
{
	ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
		     "TkshmTable %s at %s is strict: " TKAP_NO_REDIS, t->name,
		     t->defined_at);
	return false;
}

bool
tkap_redis_open(server_rec *s)
{
	(void)s;
	return true; /* no TkshmRedis can have been read */
}

bool
tkap_redis_attach(server_rec *s, tkap_table *t)
{
	return tkap_redis_check(s, t);
}

#endif /* TKAP_HAVE_REDIS */
