/*
 * change.c - what an edited TkshmTable does to the live table, said where
 * the operator looks: by `apachectl configtest` (httpd -t) before a
 * restart, from tkshm_plan(), and in the error log when a start or a
 * restart has done it (tables.c calls tkap_change_log with what
 * tkshm_open() or tkshm_apply() report).
 *
 * configtest runs in a process of its own, which sees a table file but not
 * the anonymous tables of a running httpd (they are that httpd's memory):
 * for those it says so instead of guessing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mod_tkshm.h"

#include "http_log.h"
#include "http_core.h"
#include "apr_strings.h"

APLOG_USE_MODULE(tkshm);

bool
tkap_slots_shrink(uint64_t asked, uint64_t slots)
{
	/* A declared size rounds up to a power of two, so it is below the
	 * table's (a power of two) exactly when it is at most half of it. */
	return asked != 0 && asked <= slots / 2;
}

void
tkap_change_note_shrink(tkshm_change *c, uint64_t asked)
{
	char note[128];
	size_t used = strlen(c->text);

	snprintf(note, sizeof(note),
		 "slots %" PRIu64 " kept (%" PRIu64
		 " asked: a table does not shrink)",
		 c->slots_after, asked);
	if (c->kind == TKSHM_CHANGE_NONE) /* its text is "unchanged" */
		used = 0;
	snprintf(c->text + used, sizeof(c->text) - used, "%s%s",
		 used ? ", " : "", note);
}

void
tkap_change_log(server_rec *s, const tkap_table *t, const tkshm_change *c,
		const char *when)
{
	/* tkshm_open() keeps a table's size when slots= asks for fewer and
	 * says so in its text, with kind NONE: that is worth a line too. */
	if (c->kind == TKSHM_CHANGE_NONE &&
	    !tkap_slots_shrink(t->slots, c->slots_after))
		return;
	/* notice: httpd writes it whatever LogLevel says, to stderr before
	 * the error log is open (configtest) and to the error log after. */
	ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
		     "TkshmTable %s at %s%s%s%s%s: %s", t->name, t->defined_at,
		     t->path ? " (" : "", t->path ? t->path : "",
		     t->path ? ")" : "", when ? when : "", c->text);
}

/* What a start would do to one table file, said; false (httpd -t fails)
 * when the start would fail on it too: a file that is no table, another
 * layout, a policy the library refuses.  A file configtest may not read
 * (run without httpd's rights) is only warned about. */
static bool
tkap_table_plan(server_rec *s, const tkap_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_change c;
	char why[256] = "";
	int rc;

	o.policy = &t->policy;
	o.slots = t->slots;
	o.mode = t->mode;
	o.gid = t->gid;
	o.flags |= t->flags;
	o.on_full = t->on_full;
	o.errbuf = why;
	o.errbuf_len = sizeof(why);
	rc = tkshm_plan(t->path, &o, &c);
	if (rc == TKSHM_EPERM) {
		ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s,
			     "TkshmTable %s at %s: cannot read %s to say "
			     "what a start does to it: %s",
			     t->name, t->defined_at, t->path,
			     tkshm_strerror(rc));
		return true;
	}
	if (rc != TKSHM_OK) {
		ap_log_error(APLOG_MARK, APLOG_EMERG, 0, s,
			     "TkshmTable %s at %s: cannot open %s: %s (%s)%s%s",
			     t->name, t->defined_at, t->path,
			     tkshm_strerror(rc), tkshm_error_name(rc),
			     why[0] ? ": " : "", why);
		return false;
	}
	tkap_change_log(s, t, &c, ", on the next start or restart");
	return true;
}

int
tkap_tables_plan(apr_pool_t *p, server_rec *s)
{
	apr_array_header_t *tables;
	int state = ap_state_query(AP_SQ_RUN_MODE);

	/* Only httpd -t: a start says what it did instead (tables.c), and
	 * the dump modes (-S, -M) print what they are asked for. */
	if (state != AP_SQ_RM_CONFIG_TEST)
		return OK;
	tables = tkap_tables_list(p);
	for (int i = 0; i < tables->nelts; i++) {
		const tkap_table *t = APR_ARRAY_IDX(tables, i, tkap_table *);

		if (t->path) {
			if (!tkap_table_plan(s, t))
				return HTTP_INTERNAL_SERVER_ERROR;
			continue;
		}
		ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
			     "TkshmTable %s at %s: anonymous, so configtest "
			     "cannot see a running httpd's table; a restart "
			     "applies this declaration to it and logs what "
			     "it did",
			     t->name, t->defined_at);
	}
	return OK;
}
