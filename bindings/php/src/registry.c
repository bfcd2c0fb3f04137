/* The process's open tables.
 *
 * A PHP-FPM worker serves thousands of requests, and each request runs the
 * script from the top: `new Tkshm\Table(...)` in every request must not map
 * the table again.  The first construction in a process opens the table and
 * keeps the handle here, in memory that outlives requests (malloc, not
 * PHP's per-request allocator); every later construction with the same
 * path gets the same handle.  The list is short (one entry per table a
 * site uses) and searched only when a Table is constructed, never by a
 * check.
 *
 * Policy edits.  A construction says what the table is to be, in every
 * request, so a later construction compares the policy and slots it asks
 * for with the live table (one tkshm_stats_get) and applies a difference
 * with tkshm_apply(), exactly as the first one's tkshm_open() does: an
 * index.php edited while workers serve on changes the table on the first
 * request that runs the new script, with no reload and no exception.  It
 * is compared with the live table, not with what this process asked
 * before, so that an edit undone while a worker sat idle is undone in the
 * table too.  (A site whose scripts ask one path for two policies makes
 * them take turns: one path, one policy.)
 *
 * fork().  A child inherits this list and the mappings it names.  The
 * library's handles survive fork (tkshm.h: "children may keep using the
 * parent's handle"; its per-process state is re-derived in the child), so
 * a child deliberately reuses what it inherited: a table opened by a
 * parent before forking (the CLI with pcntl_fork, or an opcache.preload
 * script in the PHP-FPM master) stays one mapping shared with the parent,
 * exactly as a table opened before Apache forks its children.  Each entry
 * records the pid that opened it, and the open counter below counts only
 * the calling process's own opens, so a child that reuses inherited
 * handles reports 0 (Table::openCount(), stats()['handle_pid']). */
#include "php_tkshm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tkshm_php_handle *handles;

/* tkshm_open() calls that succeeded, and the process they belong to: a
 * forked child starts from 0. */
static zend_long opens;
static pid_t opens_pid;

static void
count_open(void)
{
	pid_t me = getpid();

	if (opens_pid != me) {
		opens_pid = me;
		opens = 0;
	}
	opens++;
}

zend_long
tkshm_php_registry_open_count(void)
{
	return opens_pid == getpid() ? opens : 0;
}

static tkshm_php_handle *
find(const char *path)
{
	for (tkshm_php_handle *h = handles; h; h = h->next)
		if (strcmp(h->path, path) == 0)
			return h;
	return NULL;
}

/* The first construction in this process: tkshm_open() creates the table,
 * or attaches and applies the policy and slots asked (refusing any
 * difference with TKSHM_EMISMATCH under keep), and says which. */
static int
open_new(const char *path, const tkshm_policy *pol, uint64_t slots,
	 uint32_t mode, bool keep, tkshm_php_handle **out, tkshm_change *change,
	 char *err, size_t err_len)
{
	tkshm_options opts = TKSHM_OPTIONS_INIT;
	tkshm_php_handle *h;
	int rc;

	h = calloc(1, sizeof(*h));
	if (!h)
		return TKSHM_ENOMEM;
	h->path = strdup(path);
	if (!h->path) {
		free(h);
		return TKSHM_ENOMEM;
	}
	opts.policy = pol;
	opts.slots = slots;
	opts.mode = mode;
	opts.flags = TKSHM_O_CREATE | (keep ? TKSHM_O_KEEP : 0);
	opts.errbuf = err;
	opts.errbuf_len = err_len;
	opts.change = change;
	rc = tkshm_open(path, &opts, &h->table);
	if (rc != TKSHM_OK) {
		free(h->path);
		free(h);
		return rc;
	}
	count_open();
	h->opener = getpid();
	h->next = handles;
	handles = h;
	*out = h;
	return TKSHM_OK;
}

/* keep: the table must already be as asked, slots included (as
 * TKSHM_O_KEEP has it).  The sentence is tkshm_open()'s for TKSHM_O_KEEP,
 * with tkshm_plan()'s account of the difference and the binding's word for
 * the flag. */
static int
refuse_change(tkshm_php_handle *h, const tkshm_policy *pol, const char *canon,
	      uint64_t slots, char *err, size_t err_len)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char live[TKSHM_POLICY_MAX];
	tkshm_change c;

	o.policy = pol;
	o.slots = slots;
	if (tkshm_plan(h->path, &o, &c) != TKSHM_OK)
		snprintf(c.text, sizeof(c.text), "another policy or size");
	if (tkshm_php_live_policy(h->table, live, sizeof(live)) < 0)
		live[0] = '\0';
	snprintf(err, err_len,
		 "table policy is \"%s\", not \"%s\" (%s); keep asks to change "
		 "nothing",
		 live, canon, c.text);
	return TKSHM_EMISMATCH;
}

static void
unchanged(tkshm_change *c, uint64_t slots)
{
	memset(c, 0, sizeof(*c));
	c->kind = TKSHM_CHANGE_NONE;
	c->states_kept = true;
	c->slots_before = c->slots_after = slots;
	snprintf(c->text, sizeof(c->text), "unchanged");
}

/* A later construction: the handle is this process's already, but the
 * script may now ask for another policy or more slots (an edited
 * index.php in a worker that serves on), and another process may have
 * changed the table meanwhile.  Whatever differs from the live table now
 * is applied, as tkshm_open() would: a construction says what the table
 * is to be, every time. */
static int
apply_asked(tkshm_php_handle *h, const tkshm_policy *pol, const char *canon,
	    uint64_t slots, bool keep, tkshm_change *change, char *err,
	    size_t err_len)
{
	uint64_t asked = slots ? tkshm_php_slots_rounded(slots) : 0;
	tkshm_stats st;
	int rc;

	/* Twice at most: another process may grow the table past `asked`
	 * between the look and the apply, which tkshm_apply() refuses as a
	 * shrink (TKSHM_EINVAL); the second look sees the new size. */
	for (int attempt = 0; attempt < 2; attempt++) {
		bool same;
		uint64_t grow;

		rc = tkshm_stats_get(h->table, &st);
		if (rc != TKSHM_OK)
			return rc;
		same = tkshm_policy_equal(pol, &st.policy);
		if (keep) {
			if (!same || (asked && asked != st.slots))
				return refuse_change(h, pol, canon, slots, err,
						     err_len);
			unchanged(change, st.slots);
			return TKSHM_OK;
		}
		grow = asked > st.slots ? asked : 0;
		if (same && !grow) {
			unchanged(change, st.slots);
			break;
		}
		/* The rounded size: the library rounds it anyway. */
		rc = tkshm_apply(h->table, pol, grow, change);
		if (rc != TKSHM_EINVAL || !grow)
			break;
	}
	if (rc == TKSHM_OK && asked && asked < change->slots_after)
		tkshm_php_change_note_shrink(change, asked);
	return rc;
}

int
tkshm_php_registry_get(const char *path, const char *policy, uint64_t slots,
		       uint32_t mode, bool keep, tkshm_php_handle **out,
		       tkshm_change *change, char *err, size_t err_len)
{
	char canon[TKSHM_POLICY_MAX];
	tkshm_php_handle *h;
	tkshm_policy pol;
	int rc;

	rc = tkshm_policy_parse(policy, &pol, err, err_len);
	if (rc != TKSHM_OK)
		return rc;
	rc = tkshm_policy_format(&pol, canon, sizeof(canon));
	if (rc < 0)
		return rc;
	h = find(path);
	if (!h)
		return open_new(path, &pol, slots, mode, keep, out, change, err,
				err_len);
	rc = apply_asked(h, &pol, canon, slots, keep, change, err, err_len);
	if (rc == TKSHM_OK)
		*out = h;
	return rc;
}

int
tkshm_php_live_policy(tkshm_table *t, char *buf, size_t len)
{
	tkshm_stats st;
	int rc = tkshm_stats_get(t, &st);

	return rc == TKSHM_OK ? tkshm_policy_format(&st.policy, buf, len) : rc;
}

void
tkshm_php_registry_close_all(void)
{
	while (handles) {
		tkshm_php_handle *h = handles;

		handles = h->next;
		tkshm_close(h->table);
		free(h->path);
		free(h);
	}
}
