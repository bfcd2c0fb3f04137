/*
 * ngx_http_tkshm_tables.c - the tables of a configuration cycle, opened
 * by the master once the whole configuration is read and checked, before
 * it forks the workers (which inherit the mappings), and closed with the
 * cycle's pool.  The hook is the init of a small shared memory zone of the
 * module: nginx calls it after every directive, variable and "user" is
 * settled, and a failure there fails the load without ending the master
 * (at start nginx does not start, at a reload the master keeps the running
 * configuration), which a failing init_module would.  The "nginx -s"
 * signaller reads the configuration too, and maps no zone.
 *
 * "nginx -t" changes nothing: it asks tkshm_plan() what opening each table
 * would do and says so.  A reload ("nginx -s reload") opens every table
 * file again in the master: the same policy attaches as it is, another one
 * changes the live table per docs/lifecycle.md (in place, or by a
 * replacement the old workers follow through the path).  An anonymous
 * table has no path: the master keeps its mapping while any cycle
 * declares it, so a reload (even one that fails) keeps its state too.
 */
#include "ngx_http_tkshm.h"

#include <unistd.h>

/* The master's anonymous tables, by name, each held by the cycles that
 * declare it: the cycle being replaced and the new one share the mapping,
 * and whichever is destroyed last (the old one after a successful reload,
 * the new one after a failed one) unmaps it.  Module memory outlives the
 * cycles (the module is never unloaded: -z nodelete). */
typedef struct ngx_http_tkshm_anon_s ngx_http_tkshm_anon_t;

struct ngx_http_tkshm_anon_s {
	ngx_http_tkshm_anon_t *next;
	tkshm_table *handle;
	ngx_uint_t refs;
	size_t name_len;
	u_char name[NGX_HTTP_TKSHM_NAME_MAX];
};

static ngx_http_tkshm_anon_t *ngx_http_tkshm_anons;

static ngx_http_tkshm_anon_t *
ngx_http_tkshm_anon_find(ngx_http_tkshm_table_t *t)
{
	ngx_http_tkshm_anon_t *a;

	for (a = ngx_http_tkshm_anons; a; a = a->next) {
		if (a->name_len == t->name.len &&
		    ngx_strncmp(a->name, t->name.data, t->name.len) == 0) {
			return a;
		}
	}
	return NULL;
}

static void
ngx_http_tkshm_anon_release(void *data)
{
	ngx_http_tkshm_anon_t *a = data, **pp;

	if (--a->refs > 0) {
		return;
	}
	for (pp = &ngx_http_tkshm_anons; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	tkshm_close(a->handle);
	ngx_free(a);
}

static void
ngx_http_tkshm_table_close(void *data)
{
	ngx_http_tkshm_table_t *t = data;

	/* The master's handle only: the workers have their own (fork). */
	tkshm_close(t->handle);
	t->handle = NULL;
}

static void
ngx_http_tkshm_options(ngx_http_tkshm_table_t *t, tkshm_options *o,
		       tkshm_change *change, char *err, size_t err_len)
{
	tkshm_options init = TKSHM_OPTIONS_INIT;

	*o = init;
	o->policy = &t->policy;
	o->slots = t->slots;
	o->mode = t->mode;
	o->on_full = t->on_full;
	o->errbuf = err;
	o->errbuf_len = err_len;
	o->change = change;
}

/* Opens (or holds once more, applying the policy) anonymous table t for
 * this cycle; its release goes onto the cycle's pool. */
static int
ngx_http_tkshm_anon_open(ngx_cycle_t *cycle, ngx_http_tkshm_table_t *t,
			 tkshm_options *o, tkshm_change *change)
{
	int rc;
	ngx_pool_cleanup_t *cln;
	ngx_http_tkshm_anon_t *a;

	cln = ngx_pool_cleanup_add(cycle->pool, 0);
	if (cln == NULL) {
		return TKSHM_ENOMEM;
	}
	a = ngx_http_tkshm_anon_find(t);
	if (a != NULL) {
		rc = tkshm_apply(a->handle, &t->policy, t->slots, change);
		if (rc != TKSHM_OK) {
			return rc;
		}
	} else {
		a = ngx_alloc(sizeof(ngx_http_tkshm_anon_t), cycle->log);
		if (a == NULL) {
			return TKSHM_ENOMEM;
		}
		rc = tkshm_open(NULL, o, &a->handle);
		if (rc != TKSHM_OK) {
			ngx_free(a);
			return rc;
		}
		a->refs = 0;
		a->name_len = t->name.len;
		ngx_memcpy(a->name, t->name.data, t->name.len);
		a->next = ngx_http_tkshm_anons;
		ngx_http_tkshm_anons = a;
	}
	a->refs++;
	cln->handler = ngx_http_tkshm_anon_release;
	cln->data = a;
	/* The cycle's record uses the shared handle; it is not its to close. */
	t->handle = a->handle;
	return TKSHM_OK;
}

/* The workers run as the "user" directive says; a table file the root
 * master has just made (created, or replaced on a policy change) is given
 * to them, for a worker follows a replacement by opening the path itself,
 * or to owner= and group= when the table names them.  A file that was
 * there keeps its owner. */
static void
ngx_http_tkshm_give_to_workers(ngx_cycle_t *cycle, ngx_http_tkshm_table_t *t)
{
	u_char path[NGX_MAX_PATH];
	ngx_uid_t uid;
	ngx_gid_t gid;
	ngx_core_conf_t *ccf;

	ccf = (ngx_core_conf_t *)ngx_get_conf(cycle->conf_ctx, ngx_core_module);
	uid = t->uid >= 0 ? (ngx_uid_t)t->uid : ccf->user;
	gid = t->gid >= 0 ? (ngx_gid_t)t->gid : ccf->group;
	if (geteuid() != 0 || uid == (ngx_uid_t)NGX_CONF_UNSET_UINT) {
		return;
	}
	/* A bare name is a file of TKSHM_DEFAULT_DIR, as tkshm_open has it. */
	if (ngx_strlchr(t->path.data, t->path.data + t->path.len, '/') ==
	    NULL) {
		ngx_snprintf(path, sizeof(path), "%s/%V%Z", TKSHM_DEFAULT_DIR,
			     &t->path);
	} else {
		ngx_snprintf(path, sizeof(path), "%V%Z", &t->path);
	}
	path[sizeof(path) - 1] = '\0';
	/* an owner= without group=: the group stays the creator's */
	if (t->uid >= 0 && t->gid < 0) {
		gid = (ngx_gid_t)-1;
	}
	if (lchown((char *)path, uid, gid) == -1) {
		ngx_log_error(
			NGX_LOG_WARN, cycle->log, ngx_errno,
			"tkshm_table %V: chown(\"%s\") to its owner "
			"failed: the workers may not follow a replacement "
			"of the table",
			&t->name, path);
	}
}

static ngx_int_t
ngx_http_tkshm_open_one(ngx_cycle_t *cycle, ngx_http_tkshm_table_t *t)
{
	int rc;
	char err[256] = "";
	tkshm_change change;
	tkshm_options o;

	ngx_http_tkshm_options(t, &o, &change, err, sizeof(err));
	change.kind = TKSHM_CHANGE_NONE;
	change.text[0] = '\0';
	if (t->path.len == 0) {
		rc = ngx_http_tkshm_anon_open(cycle, t, &o, &change);
	} else {
		rc = tkshm_open((char *)t->path.data, &o, &t->handle);
	}
	if (rc != TKSHM_OK) {
		ngx_log_error(
			NGX_LOG_EMERG, cycle->log, 0,
			"tkshm_table %V (%V:%ui): cannot open \"%s\": %s%s%s",
			&t->name, &t->file, t->line,
			t->path.len ? (char *)t->path.data : "anonymous",
			tkshm_strerror(rc), err[0] ? ": " : "", err);
		return NGX_ERROR;
	}
	if (t->path.len != 0 && (change.kind == TKSHM_CHANGE_CREATE ||
				 change.kind == TKSHM_CHANGE_REPLACE)) {
		ngx_http_tkshm_give_to_workers(cycle, t);
	}
	if (change.kind != TKSHM_CHANGE_NONE) {
		ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
			      "tkshm_table %V: %s: %s", &t->name,
			      tkshm_change_name(change.kind), change.text);
	}
	return NGX_OK;
}

/* What opening would do, changing nothing: said by "nginx -t", and
 * checked before a load opens any table, so that a table file that cannot
 * be opened fails the load before another table's policy was changed. */
static ngx_int_t
ngx_http_tkshm_plan_one(ngx_cycle_t *cycle, ngx_http_tkshm_table_t *t)
{
	int rc;
	char err[256] = "";
	tkshm_change change;
	tkshm_options o;

	if (t->path.len == 0) {
		return NGX_OK; /* nothing to plan: made at start */
	}
	ngx_http_tkshm_options(t, &o, NULL, err, sizeof(err));
	rc = tkshm_plan((char *)t->path.data, &o, &change);
	if (rc != TKSHM_OK) {
		ngx_log_error(
			NGX_LOG_EMERG, cycle->log, 0,
			"tkshm_table %V (%V:%ui): \"%V\" cannot be opened: "
			"%s%s%s",
			&t->name, &t->file, t->line, &t->path,
			tkshm_strerror(rc), err[0] ? ": " : "", err);
		return NGX_ERROR;
	}
	/* Said to the person running "nginx -t", as nginx's own verdict is. */
	if (ngx_test_config && change.kind != TKSHM_CHANGE_NONE) {
		ngx_log_stderr(
			0,
			"[notice] tkshm_table %V: a start or reload would "
			"%s it: %s",
			&t->name,
			change.kind == TKSHM_CHANGE_CREATE ? "create" :
							     "change",
			change.text);
	}
	return NGX_OK;
}

/* The zone's init: the tables of the cycle being loaded (the zone's
 * memory itself is not used). */
static ngx_int_t
ngx_http_tkshm_zone_init(ngx_shm_zone_t *zone, void *data)
{
	ngx_uint_t i;
	ngx_pool_cleanup_t *cln;
	ngx_http_tkshm_main_conf_t *mcf = zone->data;
	ngx_http_tkshm_table_t **tables = mcf->tables.elts;

	(void)data;
	for (i = 0; i < mcf->tables.nelts; i++) {
		if (ngx_http_tkshm_plan_one(mcf->cycle, tables[i]) != NGX_OK) {
			return NGX_ERROR;
		}
	}
	if (ngx_test_config) {
		return NGX_OK;
	}
	for (i = 0; i < mcf->tables.nelts; i++) {
		cln = ngx_pool_cleanup_add(mcf->cycle->pool, 0);
		if (cln == NULL) {
			return NGX_ERROR;
		}
		if (ngx_http_tkshm_open_one(mcf->cycle, tables[i]) != NGX_OK) {
			return NGX_ERROR;
		}
		if (tables[i]->path.len != 0) {
			cln->handler = ngx_http_tkshm_table_close;
			cln->data = tables[i];
		}
	}
	return NGX_OK;
}

/* Postconfiguration: asks for the zone whose init opens the tables. */
ngx_int_t
ngx_http_tkshm_open_tables(ngx_conf_t *cf, ngx_http_tkshm_main_conf_t *mcf)
{
	static ngx_str_t name = ngx_string("ngx_http_tkshm_tables");
	ngx_shm_zone_t *zone;

	mcf->cycle = cf->cycle;
	zone = ngx_shared_memory_add(cf, &name, 8 * ngx_pagesize,
				     &ngx_http_tkshm_module);
	if (zone == NULL) {
		return NGX_ERROR;
	}
	zone->init = ngx_http_tkshm_zone_init;
	zone->data = mcf;
	return NGX_OK;
}
