/*
 * table_open.c - opening tables, with the library's sentence in the error.
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

int
ti_open(const char *path, tkshm_options *o, tkshm_table **out)
{
	char why[512] = "", full[4200];
	const char *verb, *what;
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
	if (why[0])
		ti_err("cannot %s %s: %s (%s)", verb, what, tkshm_strerror(rc),
		       why);
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
