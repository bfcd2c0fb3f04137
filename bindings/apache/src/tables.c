/*
 * tables.c - the tables of one configuration generation: one record per
 * name, made by whichever directive names it first (TkshmLimit may come
 * before the TkshmTable it uses), and opened once the whole configuration
 * is read (post_config), in the parent process.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mod_tkshm.h"

#include "http_log.h"
#include "apr_hash.h"
#include "apr_strings.h"
#include <errno.h>
#include <stdlib.h>

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

/* Anonymous tables outlive a configuration generation: their state is
 * their mapping, which a restart must not drop.  The parent keeps them in
 * its process pool, keyed by their declaration, and a generation that
 * declares a table the same way takes the mapping over; one that changes
 * or drops the declaration closes it.  Children inherit the whole hash. */
typedef struct tkap_anon {
	tkshm_table *handle;
	unsigned generation; /* the last generation that declared it */
} tkap_anon;

#define TKAP_ANON_KEY "tkshm-anonymous-tables"

/* The generation being opened: counts tkap_tables_open calls. */
static unsigned tkap_generation;

static apr_hash_t *
tkap_anon_tables(server_rec *s)
{
	apr_pool_t *pp = s->process->pool;
	void *h = NULL;

	apr_pool_userdata_get(&h, TKAP_ANON_KEY, pp);
	if (!h) {
		h = apr_hash_make(pp);
		apr_pool_userdata_set(h, TKAP_ANON_KEY, apr_pool_cleanup_null,
				      pp);
	}
	return h;
}

/* What must be equal for a restart to keep an anonymous table's state:
 * its name, its policy (canonical), its size and how it fills. */
static const char *
tkap_anon_key(apr_pool_t *p, const tkap_table *t)
{
	char policy[TKSHM_POLICY_MAX];

	if (tkshm_policy_format(&t->policy, policy, sizeof(policy)) < 0)
		policy[0] = '\0'; /* not reached: the policy was parsed */
	return apr_psprintf(
		p, "%s %s slots=%" APR_UINT64_T_FMT " onFull=%d flags=%u",
		t->name, policy, (apr_uint64_t)t->slots, (int)t->on_full,
		(unsigned)t->flags);
}

/* Closes the anonymous tables that the generation just opened no longer
 * declares as they were. */
static void
tkap_anon_sweep(server_rec *s)
{
	apr_hash_t *h = tkap_anon_tables(s);

	for (apr_hash_index_t *i = apr_hash_first(NULL, h); i;
	     i = apr_hash_next(i)) {
		const void *key;
		void *val;
		tkap_anon *a;

		apr_hash_this(i, &key, NULL, &val);
		a = val;
		if (a->generation != tkap_generation) {
			tkshm_close(a->handle);
			apr_hash_set(h, key, APR_HASH_KEY_STRING, NULL);
		}
	}
}

/* The file a path names (tkshm_open's rule: a bare name is in /dev/shm). */
static const char *
tkap_file_of(apr_pool_t *p, const char *path)
{
	return strchr(path, '/') ?
		       path :
		       apr_pstrcat(p, TKSHM_DEFAULT_DIR, "/", path, NULL);
}

/* Opens (creating if needed) the table's file, or takes over the anonymous
 * table of the previous generation.  Logs why and returns false on
 * failure. */
static bool
tkap_table_open(apr_pool_t *pconf, server_rec *s, tkap_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char why[256] = "";
	const char *anon_key = NULL;
	struct stat st;
	bool existed = false;
	int rc;

	if (!t->path) {
		apr_hash_t *h = tkap_anon_tables(s);
		tkap_anon *a;

		anon_key = tkap_anon_key(s->process->pool, t);
		a = apr_hash_get(h, anon_key, APR_HASH_KEY_STRING);
		if (a) {
			a->generation = tkap_generation;
			t->handle = a->handle;
			goto attached;
		}
	} else {
		existed = stat(tkap_file_of(pconf, t->path), &st) == 0;
	}
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
			     t->name, t->defined_at,
			     t->path ? t->path : "an anonymous table",
			     tkshm_strerror(rc), tkshm_error_name(rc),
			     why[0] ? ": " : "", why);
		return false;
	}
	if (anon_key) {
		tkap_anon *a = apr_palloc(s->process->pool, sizeof(*a));

		a->handle = t->handle;
		a->generation = tkap_generation;
		apr_hash_set(tkap_anon_tables(s), anon_key, APR_HASH_KEY_STRING,
			     a);
		goto attached;
	}
	/* owner=: only a file this parent created is given away; one that
	 * existed keeps the owner it has. */
	if (t->uid >= 0 && !existed &&
	    chown(tkap_file_of(pconf, t->path), (uid_t)t->uid, (gid_t)-1) !=
		    0) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, errno, s,
			     "TkshmTable %s at %s: cannot give %s to its "
			     "owner",
			     t->name, t->defined_at, t->path);
		tkshm_close(t->handle);
		t->handle = NULL;
		return false;
	}
	apr_pool_cleanup_register(pconf, t, tkap_table_close,
				  apr_pool_cleanup_null);
attached:
	if (t->policy.global.mode == TKSHM_MODE_STRICT)
		return tkap_redis_attach(s, t);
	return true;
}

static int
tkap_name_cmp(const void *a, const void *b)
{
	return strcmp((*(tkap_table *const *)a)->name,
		      (*(tkap_table *const *)b)->name);
}

apr_array_header_t *
tkap_tables_list(apr_pool_t *p)
{
	apr_array_header_t *out = apr_array_make(p, 8, sizeof(tkap_table *));

	if (!tkap_registry)
		return out;
	for (apr_hash_index_t *i = apr_hash_first(p, tkap_registry); i;
	     i = apr_hash_next(i))
		*(tkap_table **)apr_array_push(out) = apr_hash_this_val(i);
	qsort(out->elts, (size_t)out->nelts, sizeof(tkap_table *),
	      tkap_name_cmp);
	return out;
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
	tkap_generation++;
	if (tkap_registry) {
		if (!tkap_redis_open(s)) /* before the tables it serves */
			return HTTP_INTERNAL_SERVER_ERROR;
		for (apr_hash_index_t *i = apr_hash_first(pconf, tkap_registry);
		     i; i = apr_hash_next(i))
			if (!tkap_table_open(pconf, s, apr_hash_this_val(i)))
				return HTTP_INTERNAL_SERVER_ERROR; /* stops */
	}
	/* Even with no table left: those the configuration dropped go. */
	tkap_anon_sweep(s);
	return OK;
}
