/*
 * tables.c - checking and attaching the lease tables (tables.h).
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "tables.h"
#include "tkshm.h"

static const char *
sd_mode_name(tkshm_global_mode m)
{
	switch (m) {
	case TKSHM_MODE_LOCAL:
		return "local";
	case TKSHM_MODE_STRICT:
		return "strict";
	case TKSHM_MODE_LEASE:
		return "lease";
	}
	return "unknown";
}

/* One table: it opens, and its policy's mode is lease. */
static bool
sd_table_check(const struct sd_conf *c, const struct sd_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char why[256] = "";
	tkshm_table *h;
	tkshm_stats st;
	int rc;

	o.flags = TKSHM_O_RDONLY;
	o.errbuf = why;
	o.errbuf_len = sizeof why;
	if ((rc = tkshm_open(t->path, &o, &h)) != TKSHM_OK) {
		sd_log(LOG_ERR, "%s:%u: table %s: %s%s%s%s", c->file, t->line,
		       t->path, tkshm_strerror(rc), why[0] ? " (" : "", why,
		       why[0] ? ")" : "");
		return false;
	}
	tkshm_stats_get(h, &st);
	tkshm_close(h);
	if (st.policy.global.mode != TKSHM_MODE_LEASE) {
		sd_log(LOG_ERR,
		       "%s:%u: table %s is not a lease table (its mode is %s; "
		       "a lease table's policy ends in ';mode=lease')",
		       c->file, t->line, t->path,
		       sd_mode_name(st.policy.global.mode));
		return false;
	}
	return true;
}

bool
sd_tables_check(const struct sd_conf *c)
{
	for (size_t i = 0; i < c->ntables; i++)
		if (!sd_table_check(c, &c->tables[i]))
			return false;
	return true;
}

bool
sd_tables_attach(const struct sd_conf *c, struct tk_agent *a)
{
	for (size_t i = 0; i < c->ntables; i++) {
		const struct sd_table *t = &c->tables[i];
		char err[256] = "";
		int rc;

		/* The same check as --check first, for the same message
		 * whatever the engine's wording. */
		if (!sd_table_check(c, t))
			return false;
		rc = tk_agent_add_table(a, t->path, err, sizeof err);
		if (rc != TKSHM_OK) {
			sd_log(LOG_ERR, "%s:%u: table %s: %s", c->file, t->line,
			       t->path, err[0] ? err : tkshm_strerror(rc));
			return false;
		}
	}
	return true;
}

/* Whether table `path` is in c's list. */
static bool
sd_tables_has(const struct sd_conf *c, const char *path)
{
	for (size_t i = 0; i < c->ntables; i++)
		if (strcmp(c->tables[i].path, path) == 0)
			return true;
	return false;
}

bool
sd_tables_removed(const struct sd_conf *cur, const struct sd_conf *next)
{
	bool any = false;

	for (size_t i = 0; i < cur->ntables; i++)
		if (!sd_tables_has(next, cur->tables[i].path)) {
			sd_log(LOG_ERR,
			       "reload: %s no longer names table %s: detaching "
			       "a table needs a restart",
			       next->file, cur->tables[i].path);
			any = true;
		}
	return any;
}

bool
sd_tables_check_new(const struct sd_conf *cur, const struct sd_conf *next)
{
	for (size_t i = 0; i < next->ntables; i++)
		if (!sd_tables_has(cur, next->tables[i].path) &&
		    !sd_table_check(next, &next->tables[i]))
			return false;
	return true;
}

/* Drops from next's list the tables from `from` on that cur does not
 * serve: those an attach that failed at `from` never reached. */
static void
sd_tables_keep_attached(const struct sd_conf *cur, struct sd_conf *next,
			size_t from)
{
	size_t n = from;

	for (size_t i = from; i < next->ntables; i++)
		if (sd_tables_has(cur, next->tables[i].path))
			next->tables[n++] = next->tables[i];
	next->ntables = n;
}

size_t
sd_tables_attach_new(const struct sd_conf *cur, struct sd_conf *next,
		     struct tk_agent *a, bool *ok)
{
	size_t added = 0;

	*ok = true;
	for (size_t i = 0; i < next->ntables; i++) {
		const struct sd_table *t = &next->tables[i];
		char err[256] = "";
		int rc;

		if (sd_tables_has(cur, t->path))
			continue;
		rc = tk_agent_add_table(a, t->path, err, sizeof err);
		if (rc != TKSHM_OK) {
			sd_log(LOG_ERR, "%s:%u: table %s: %s", next->file,
			       t->line, t->path,
			       err[0] ? err : tkshm_strerror(rc));
			sd_tables_keep_attached(cur, next, i);
			*ok = false;
			return added;
		}
		added++;
	}
	return added;
}
