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
#include "http_main.h"
#include "unixd.h"
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

static const char *
tkap_on_full_name(tkshm_on_full f)
{
	return f == TKSHM_ON_FULL_REFUSE ? "refuse" : "evict";
}

/* Anonymous tables outlive a configuration generation: their state is
 * their mapping, which a restart must not drop.  The parent keeps them in
 * its process pool, by name; a generation that declares a table again
 * takes the handle over and applies its declaration to it (tkshm_apply:
 * in place, or a replacement that carries the states to a new mapping for
 * the parent and the children it forks from now on, while the children of
 * the old generation finish on the old one).  A generation that drops the
 * declaration closes it.  Children inherit the whole hash. */
typedef struct tkap_anon {
	tkshm_table *handle;
	unsigned generation; /* the last generation that declared it */
	/* What a live table cannot change: another value starts afresh. */
	tkshm_on_full on_full;
	uint32_t flags;
} tkap_anon;

#define TKAP_ANON_KEY "tkshm-anonymous-tables"

/* The generation being opened: counts tkap_tables_open calls in the
 * parent's life.  The count is kept in its process pool, as the anonymous
 * tables are: httpd unloads and loads the module again at every restart,
 * which starts the module's own variables over. */
static unsigned tkap_generation;

#define TKAP_GENERATION_KEY "tkshm-generation"

static unsigned
tkap_generation_next(server_rec *s)
{
	apr_pool_t *pp = s->process->pool;
	void *n = NULL;

	apr_pool_userdata_get(&n, TKAP_GENERATION_KEY, pp);
	if (!n) {
		n = apr_pcalloc(pp, sizeof(unsigned));
		apr_pool_userdata_set(n, TKAP_GENERATION_KEY,
				      apr_pool_cleanup_null, pp);
	}
	return ++*(unsigned *)n;
}

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

/* Closes the anonymous tables that the generation just opened no longer
 * declares. */
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

/* Applies the declaration to the anonymous table a previous generation
 * opened.  `slots=` smaller than the table's keeps its size, as
 * tkshm_open() does for a file (tables do not shrink).  Logs what was done
 * and returns true, or logs why not and returns false. */
static bool
tkap_anon_apply(server_rec *s, tkap_table *t, tkap_anon *a)
{
	tkshm_stats st;
	tkshm_change c;
	uint64_t slots = t->slots;
	int rc = tkshm_stats_get(a->handle, &st);

	/* tkshm_apply refuses to shrink: keep the size, as tkshm_open does. */
	if (rc == TKSHM_OK && tkap_slots_shrink(slots, st.slots))
		slots = 0;
	if (rc == TKSHM_OK)
		rc = tkshm_apply(a->handle, &t->policy, slots, &c);
	if (rc != TKSHM_OK) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s: cannot apply the "
			     "declaration to the anonymous table: %s (%s)",
			     t->name, t->defined_at, tkshm_strerror(rc),
			     tkshm_error_name(rc));
		return false;
	}
	if (slots != t->slots)
		tkap_change_note_shrink(&c, t->slots);
	a->generation = tkap_generation;
	t->handle = a->handle;
	tkap_change_log(s, t, &c, NULL);
	return true;
}

/* The anonymous table of the previous generation, when there is one that
 * can take this declaration: NULL if none (a new table is created).  One
 * whose onFull= or hugepages differ is closed, said, and not returned. */
static tkap_anon *
tkap_anon_previous(server_rec *s, const tkap_table *t)
{
	apr_hash_t *h = tkap_anon_tables(s);
	tkap_anon *a = apr_hash_get(h, t->name, APR_HASH_KEY_STRING);

	if (!a || (a->on_full == t->on_full && a->flags == t->flags))
		return a;
	ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
		     "TkshmTable %s at %s: onFull= or hugepages changed, "
		     "which a live table cannot take: a new anonymous "
		     "table, keys start afresh",
		     t->name, t->defined_at);
	tkshm_close(a->handle);
	apr_hash_set(h, t->name, APR_HASH_KEY_STRING, NULL);
	return NULL;
}

/* Keeps the anonymous table just created for the generations to come. */
static void
tkap_anon_keep(server_rec *s, const tkap_table *t)
{
	apr_pool_t *pp = s->process->pool;
	tkap_anon *a = apr_palloc(pp, sizeof(*a));

	a->handle = t->handle;
	a->generation = tkap_generation;
	a->on_full = t->on_full;
	a->flags = t->flags;
	apr_hash_set(tkap_anon_tables(s), apr_pstrdup(pp, t->name),
		     APR_HASH_KEY_STRING, a);
}

/* onFull= is fixed when a table is made, and tkshm_open() attaches a file
 * made with another one as it is: say so rather than let the declaration
 * claim what the table does not do. */
static void
tkap_on_full_check(server_rec *s, const tkap_table *t)
{
	tkshm_stats st;

	if (tkshm_stats_get(t->handle, &st) != TKSHM_OK ||
	    st.on_full == t->on_full)
		return;
	ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
		     "TkshmTable %s at %s: onFull=%s is declared, but %s was "
		     "made with onFull=%s, which it keeps (a table's onFull= "
		     "is fixed when it is made)",
		     t->name, t->defined_at, tkap_on_full_name(t->on_full),
		     t->path, tkap_on_full_name(st.on_full));
}

/* The file a path names (tkshm_open's rule: a bare name is in /dev/shm). */
static const char *
tkap_file_of(apr_pool_t *p, const char *path)
{
	return strchr(path, '/') ?
		       path :
		       apr_pstrcat(p, TKSHM_DEFAULT_DIR, "/", path, NULL);
}

/* Set (in the process pool, which outlives the module) once the parent
 * has forked children: from then on a restart has children of a previous
 * generation, which finish their requests on the tables as they were. */
#define TKAP_FORKED_KEY "tkshm-children-forked"

int
tkap_tables_forking(apr_pool_t *pconf, ap_scoreboard_e sb_type)
{
	apr_pool_t *pp = ap_server_conf->process->pool;

	(void)pconf;
	(void)sb_type;
	apr_pool_userdata_set(apr_pcalloc(pp, 1), TKAP_FORKED_KEY,
			      apr_pool_cleanup_null, pp);
	return OK;
}

static bool
tkap_children_forked(server_rec *s)
{
	void *v = NULL;

	apr_pool_userdata_get(&v, TKAP_FORKED_KEY, s->process->pool);
	return v != NULL;
}

/* Whether httpd's children (User, Group; the parent's own user when it
 * does not run as root, which is what they are then) may open the file
 * for reading and writing, by its permission bits (the owner's, else the
 * group's, else the others'). */
static bool
tkap_children_can_open(const struct stat *st)
{
	uid_t uid = ap_unixd_config.user_id;
	mode_t want;

	if (geteuid() != 0 || uid == 0)
		return true; /* the children are the file's creator, or root */
	if (st->st_uid == uid)
		want = S_IRUSR | S_IWUSR;
	else if (st->st_gid == ap_unixd_config.group_id)
		want = S_IRGRP | S_IWGRP;
	else
		want = S_IROTH | S_IWOTH;
	return (st->st_mode & want) == want;
}

/* A replaced file is followed by every process attached to the old one,
 * by its path, on its next check: the children of the generation before
 * a graceful restart too, with their own rights, while they finish the
 * requests they hold.  A file they may not open (the default: root's,
 * 0600) leaves those checks undecided (TkshmOnError): say so. */
static void
tkap_followers_check(apr_pool_t *p, server_rec *s, const tkap_table *t)
{
	struct stat st;

	if (!tkap_children_forked(s) ||
	    stat(tkap_file_of(p, t->path), &st) != 0 ||
	    tkap_children_can_open(&st))
		return;
	ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
		     "TkshmTable %s at %s: the children of the previous "
		     "generation cannot open %s (mode %04o) to follow its "
		     "replacement: the checks they make before they exit "
		     "are undecided (TkshmOnError); mode= and group= can "
		     "let them",
		     t->name, t->defined_at, t->path,
		     (unsigned)(st.st_mode & 07777));
}

/* Opens (creating if needed) the table's file, applying the declaration
 * to a table that differs (tkshm_open does), or takes over the anonymous
 * table of the previous generation and applies the declaration to it.
 * Logs what changed, or why it failed and returns false. */
static bool
tkap_table_open(apr_pool_t *pconf, server_rec *s, tkap_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_change change;
	char why[256] = "";
	struct stat st;
	bool existed = false;
	int rc;

	if (!t->path) {
		tkap_anon *a = tkap_anon_previous(s, t);

		if (a) {
			if (!tkap_anon_apply(s, t, a))
				return false;
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
	o.change = &change;
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
	tkap_change_log(s, t, &change, NULL);
	if (!t->path) {
		tkap_anon_keep(s, t);
		goto attached;
	}
	tkap_on_full_check(s, t);
	if (change.kind == TKSHM_CHANGE_REPLACE)
		tkap_followers_check(pconf, s, t);
	/* owner=: only a file this parent created is given away; one that
	 * existed keeps the owner it has (a replacement too: the library
	 * gives the new file the old one's owner and mode). */
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
	tkap_generation = tkap_generation_next(s);
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
