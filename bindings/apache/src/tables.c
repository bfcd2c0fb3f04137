/*
 * tables.c - the tables of one configuration generation: one record per
 * name, made by whichever directive names it first (TkshmLimit may come
 * before the TkshmTable it uses), and opened once the whole configuration
 * is read (post_config), in the parent process.
 */
#include "mod_tkshm.h"

#include "http_log.h"
#include "apr_hash.h"
#include "apr_strings.h"

APLOG_USE_MODULE(tkshm);

/* The records of the generation being configured, in its configuration
 * pool; forgotten when that pool is cleared (a restart reads the
 * configuration into a new one). */
static apr_hash_t *tkap_registry;

static apr_status_t
tkap_registry_forget(void *unused)
{
	(void)unused;
	tkap_registry = NULL;
	return APR_SUCCESS;
}

tkap_table *
tkap_table_named(apr_pool_t *pconf, const char *name)
{
	tkap_table *t;

	if (!tkap_registry) {
		tkap_registry = apr_hash_make(pconf);
		apr_pool_cleanup_register(pconf, NULL, tkap_registry_forget,
					  apr_pool_cleanup_null);
	}
	t = apr_hash_get(tkap_registry, name, APR_HASH_KEY_STRING);
	if (!t) {
		t = apr_pcalloc(pconf, sizeof(*t));
		t->name = apr_pstrdup(pconf, name);
		apr_hash_set(tkap_registry, t->name, APR_HASH_KEY_STRING, t);
	}
	return t;
}

/* The parent's handle goes with its configuration; children hold their
 * own copies of the handle and mapping (fork), which this does not touch. */
static apr_status_t
tkap_table_close(void *data)
{
	tkap_table *t = data;

	tkshm_close(t->handle);
	t->handle = NULL;
	return APR_SUCCESS;
}

/* What only the whole configuration shows: every table used is defined,
 * and no lease table shares a section with other limits.  Logs why and
 * returns false when not. */
static bool
tkap_table_complete(server_rec *s, const tkap_table *t)
{
	if (!t->defined_at) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmLimit at %s uses table '%s', which no "
			     "TkshmTable defines",
			     t->first_use, t->name);
		return false;
	}
	if (t->multi_use && t->policy.global.mode != TKSHM_MODE_LOCAL) {
		/* tkshm_check_multi_at cannot give back what a lease table
		 * spent, nor mix a strict table's Redis script with local
		 * tables: such a table decides alone. */
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmLimit at %s combines table '%s' (a %s "
			     "table, %s) with other limits of its section; a "
			     "lease or strict table must be the only "
			     "TkshmLimit of a section",
			     t->multi_use, t->name,
			     t->policy.global.mode == TKSHM_MODE_LEASE ?
				     "lease" :
				     "strict",
			     t->defined_at);
		return false;
	}
	if (t->policy.global.mode == TKSHM_MODE_STRICT)
		return tkap_redis_check(s, t);
	return true;
}

/* Opens (creating if needed) the table's file.  Logs why and returns false
 * on failure. */
static bool
tkap_table_open(apr_pool_t *pconf, server_rec *s, tkap_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char why[256] = "";
	int rc;

	o.policy = &t->policy;
	o.slots = t->slots;
	o.mode = t->mode;
	o.gid = t->gid;
	o.flags |= t->flags; /* TKSHM_O_CREATE and the options */
	o.on_full = t->on_full;
	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	rc = tkshm_open(t->path, &o, &t->handle);
	if (rc != TKSHM_OK) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s: cannot open %s: %s (%s)%s%s",
			     t->name, t->defined_at, t->path,
			     tkshm_strerror(rc), tkshm_error_name(rc),
			     why[0] ? ": " : "", why);
		return false;
	}
	apr_pool_cleanup_register(pconf, t, tkap_table_close,
				  apr_pool_cleanup_null);
	if (t->policy.global.mode == TKSHM_MODE_STRICT)
		return tkap_redis_attach(s, t);
	return true;
}

int
tkap_tables_check(apr_pool_t *pconf, server_rec *s)
{
	if (!tkap_registry)
		return OK; /* the configuration names no table */
	for (apr_hash_index_t *i = apr_hash_first(pconf, tkap_registry); i;
	     i = apr_hash_next(i))
		if (!tkap_table_complete(s, apr_hash_this_val(i)))
			return HTTP_INTERNAL_SERVER_ERROR; /* httpd stops */
	return OK;
}

int
tkap_tables_open(apr_pool_t *pconf, server_rec *s)
{
	if (!tkap_registry)
		return OK;
	if (!tkap_redis_open(s)) /* before the tables it is attached to */
		return HTTP_INTERNAL_SERVER_ERROR;
	for (apr_hash_index_t *i = apr_hash_first(pconf, tkap_registry); i;
	     i = apr_hash_next(i))
		if (!tkap_table_open(pconf, s, apr_hash_this_val(i)))
			return HTTP_INTERNAL_SERVER_ERROR; /* httpd stops */
	return OK;
}
