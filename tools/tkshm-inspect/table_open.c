/*
 * table_open.c - opening tables, with the library's sentence in the error,
 * and the command line of commands that name more than one operand
 * (metrics PATH..., reset PATH KEY, set PATH KEY).
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"

const char *
ti_resolve_path(const char *path, char *buf, size_t len)
{
	if (strchr(path, '/'))
		return path;
	snprintf(buf, len, "%s/%s", TKSHM_DEFAULT_DIR, path);
	return buf;
}

const char *
ti_on_full_name(tkshm_on_full v)
{
	switch (v) {
	case TKSHM_ON_FULL_EVICT:
		return "evict";
	case TKSHM_ON_FULL_REFUSE:
		return "refuse";
	}
	return "unknown";
}

/* The library's explanation without a "cannot open PATH: " that would
 * repeat the start of our own message; NULL when it says no more than the
 * error's sentence ("not a regular file"). */
static const char *
ti_why(const char *why, const char *what, int rc)
{
	size_t n = strlen(what);

	if (strncmp(why, "cannot open ", 12) == 0 &&
	    strncmp(why + 12, what, n) == 0 &&
	    strncmp(why + 12 + n, ": ", 2) == 0)
		why += 12 + n + 2;
	if (why[0] == '\0' || strcasestr(tkshm_strerror(rc), why))
		return NULL;
	return why;
}

int
ti_open(const char *path, tkshm_options *o, tkshm_table **out)
{
	char why[512] = "", full[4200];
	const char *verb, *what, *more;
	int rc;

	o->errbuf = why;
	o->errbuf_len = sizeof why;
	rc = tkshm_open(path, o, out);
	o->errbuf = NULL;
	o->errbuf_len = 0;
	if (rc == TKSHM_OK)
		return TI_EXIT_OK;
	verb = !path || (o->flags & TKSHM_O_EXCL) ? "create" : "open";
	what = path ? ti_resolve_path(path, full, sizeof full) :
		      "an anonymous table";
	if ((more = ti_why(why, what, rc)) != NULL)
		ti_err("cannot %s %s: %s (%s)", verb, what, tkshm_strerror(rc),
		       more);
	else
		ti_err("cannot %s %s: %s", verb, what, tkshm_strerror(rc));
	/* An argument the library refuses (slots out of range, a path too
	 * long) is a usage error; anything else means no table. */
	return rc == TKSHM_EINVAL ? TI_EXIT_USAGE : TI_EXIT_OPEN;
}

int
ti_open_rdonly(const char **path, char *buf, size_t len, tkshm_table **out)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	int rc;

	o.flags = TKSHM_O_RDONLY;
	if ((rc = ti_open(*path, &o, out)) == TI_EXIT_OK)
		*path = ti_resolve_path(*path, buf, len);
	return rc;
}

int
ti_open_rdwr(const char **path, char *buf, size_t len, tkshm_table **out)
{
	/* No policy: adopt the stored one.  No TKSHM_O_CREATE: an operator's
	 * typo must not leave a new table behind. */
	tkshm_options o = TKSHM_OPTIONS_INIT;
	int rc;

	o.flags = 0;
	if ((rc = ti_open(*path, &o, out)) == TI_EXIT_OK)
		*path = ti_resolve_path(*path, buf, len);
	return rc;
}

/* --- several operands ---------------------------------------------------- */

/* The name of operand i in messages: the last name repeats (PATH...). */
static const char *
ti_operand_name(const struct ti_operands *ops, size_t i)
{
	size_t last = 0;

	while (ops->names[last + 1])
		last++;
	return ops->names[i < last ? i : last];
}

static int
ti_operand(void *ctx, const char *cmd, const char *v)
{
	struct ti_operands *ops = ctx;

	if (ops->n == ops->max)
		return ti_usage_error(cmd, "extra operand '%s'", v);
	if (v[0] == '\0')
		return ti_usage_error(cmd, "%s is empty",
				      ti_operand_name(ops, ops->n));
	ops->v[ops->n++] = v;
	return TI_GO_ON;
}

int
ti_cmdline_operands(struct ti_cmdline *c, struct ti_operands *ops, int argc,
		    char **argv)
{
	int rc;

	ops->n = 0;
	if ((rc = ti_cmdline_scan(c, argc, argv, ti_operand, ops)) != TI_GO_ON)
		return rc;
	if (ops->n < ops->min)
		return ti_usage_error(c->cmd, "missing %s",
				      ti_operand_name(ops, ops->n));
	return TI_GO_ON;
}
