/* The process's open tables.
 *
 * A PHP-FPM worker serves thousands of requests, and each request runs the
 * script from the top: `new Tkshm\Table(...)` in every request must not map
 * the table again.  The first construction in a process opens the table and
 * keeps the handle here, in memory that outlives requests (malloc, not
 * PHP's per-request allocator); every later construction with the same
 * path, policy and slots gets the same handle.  The list is short (one
 * entry per table a site uses) and searched only when a Table is
 * constructed, never by a check.
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

/* key = path NUL canonical-policy NUL slots, in a malloc'ed buffer. */
static char *
make_key(const char *path, const char *canon, uint64_t slots, size_t *len)
{
	char num[24];
	size_t pl = strlen(path), cl = strlen(canon), nl;
	char *k;

	nl = (size_t)snprintf(num, sizeof(num), "%llu",
			      (unsigned long long)slots);
	k = malloc(pl + 1 + cl + 1 + nl);
	if (!k)
		return NULL;
	memcpy(k, path, pl + 1);
	memcpy(k + pl + 1, canon, cl + 1);
	memcpy(k + pl + 1 + cl + 1, num, nl);
	*len = pl + 1 + cl + 1 + nl;
	return k;
}

static tkshm_php_handle *
find(const char *key, size_t len)
{
	for (tkshm_php_handle *h = handles; h; h = h->next)
		if (h->key_len == len && memcmp(h->key, key, len) == 0)
			return h;
	return NULL;
}

static int
open_new(const char *path, const tkshm_policy *pol, uint64_t slots,
	 uint32_t mode, char *key, size_t key_len, tkshm_php_handle **out,
	 char *err, size_t err_len)
{
	tkshm_options opts = TKSHM_OPTIONS_INIT;
	tkshm_php_handle *h;
	tkshm_stats st;
	char canon[TKSHM_POLICY_MAX];
	int rc;

	h = calloc(1, sizeof(*h));
	if (!h)
		return TKSHM_ENOMEM;
	opts.policy = pol;
	opts.slots = slots;
	opts.mode = mode;
	opts.errbuf = err;
	opts.errbuf_len = err_len;
	rc = tkshm_open(path, &opts, &h->table);
	if (rc != TKSHM_OK) {
		free(h);
		return rc;
	}
	count_open();
	/* The table's own policy, as stored in its header. */
	rc = tkshm_stats_get(h->table, &st);
	if (rc == TKSHM_OK)
		rc = tkshm_policy_format(&st.policy, canon, sizeof(canon));
	if (rc >= 0) {
		h->policy_len = (size_t)rc;
		h->policy = malloc(h->policy_len + 1);
		rc = h->policy ? TKSHM_OK : TKSHM_ENOMEM;
	}
	if (rc != TKSHM_OK) {
		tkshm_close(h->table);
		free(h);
		return rc;
	}
	memcpy(h->policy, canon, h->policy_len + 1);
	h->key = key;
	h->key_len = key_len;
	h->opener = getpid();
	h->next = handles;
	handles = h;
	*out = h;
	return TKSHM_OK;
}

int
tkshm_php_registry_get(const char *path, const char *policy, uint64_t slots,
		       uint32_t mode, tkshm_php_handle **out, char *err,
		       size_t err_len)
{
	tkshm_policy pol;
	char canon[TKSHM_POLICY_MAX];
	tkshm_php_handle *h;
	size_t key_len;
	char *key;
	int rc;

	/* The key names the policy canonically, so that option order and
	 * spelled-out defaults do not open a second handle. */
	rc = tkshm_policy_parse(policy, &pol, err, err_len);
	if (rc != TKSHM_OK)
		return rc;
	rc = tkshm_policy_format(&pol, canon, sizeof(canon));
	if (rc < 0)
		return rc;
	key = make_key(path, canon, slots, &key_len);
	if (!key)
		return TKSHM_ENOMEM;
	h = find(key, key_len);
	if (h) {
		free(key);
		*out = h;
		return TKSHM_OK;
	}
	rc = open_new(path, &pol, slots, mode, key, key_len, out, err, err_len);
	if (rc != TKSHM_OK)
		free(key);
	return rc;
}

void
tkshm_php_registry_close_all(void)
{
	while (handles) {
		tkshm_php_handle *h = handles;

		handles = h->next;
		tkshm_close(h->table);
		free(h->key);
		free(h->policy);
		free(h);
	}
}
