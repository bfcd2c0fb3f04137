/*
 * cmdline.c - a subcommand's command line, read with getopt_long(3): --help,
 * the operands, handing its own options to a handler; and the handler for
 * the table options that create and replay share.
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"

/* The option of `opts` that the argument `arg` ("--name" or "--name=VALUE")
 * spells whole, or NULL; *len is the length of the name. */
static const struct option *
ti_long_named(const struct option *opts, const char *arg, size_t *len)
{
	const char *name = arg + 2;

	*len = strcspn(name, "=");
	for (const struct option *o = opts; o->name; o++)
		if (strlen(o->name) == *len && memcmp(o->name, name, *len) == 0)
			return o;
	return NULL;
}

/* The usage error for the argument `arg` that getopt_long refused (r '?',
 * or ':' for a missing value) or took beyond the tool's syntax. */
static int
ti_refuse(const struct ti_cmdline *c, const char *arg, int r)
{
	const struct option *o;
	size_t len;

	if (arg[0] != '-' || arg[1] != '-')
		return ti_usage_error(c->cmd, "unknown option '%s'", arg);
	o = ti_long_named(c->opts, arg, &len);
	if (!o)
		return ti_usage_error(c->cmd, "unknown option '--%.*s'",
				      (int)len, arg + 2);
	if (r == ':')
		return ti_usage_error(c->cmd, "option '--%s' needs a value",
				      o->name);
	return ti_usage_error(c->cmd, "option '--%s' takes no value", o->name);
}

int
ti_cmdline_scan(struct ti_cmdline *c, int argc, char **argv,
		ti_operand_fn *operand, void *operand_ctx)
{
	int r, idx, at, rc;
	size_t len;

	/* "-": operands are returned in order (1), so that the first
	 * mistake is the one reported; ":": a missing value is told apart
	 * (':').  The messages are ours (opterr 0); optind 0 starts afresh. */
	opterr = 0;
	optind = 0;
	for (;;) {
		at = optind ? optind : 1; /* the argument getopt reads next */
		idx = -1;
		r = getopt_long(argc, argv, "-:h", c->opts, &idx);
		if (r == -1)
			break;
		if (r == 1) {
			rc = operand(operand_ctx, c->cmd, optarg);
		} else if (r == 'h' && idx < 0) {
			/* -h alone, not the start of a cluster ("-hx"). */
			if (strcmp(argv[at], "-h") != 0)
				return ti_refuse(c, argv[at], '?');
			c->usage(stdout);
			return ti_finish_stdout(TI_EXIT_OK);
		} else if (r == '?' || r == ':' || idx < 0 ||
			   ti_long_named(c->opts, argv[at], &len) !=
				   &c->opts[idx]) {
			/* Refused, or an abbreviation getopt_long took. */
			return ti_refuse(c, argv[at], r);
		} else if (c->opts[idx].val == 'h') {
			c->usage(stdout);
			return ti_finish_stdout(TI_EXIT_OK);
		} else {
			rc = c->opt(c->ctx, c->cmd, c->opts[idx].name, optarg);
		}
		if (rc != TI_GO_ON)
			return rc;
	}
	/* After "--": the rest are operands. */
	for (int i = optind; i < argc; i++)
		if ((rc = operand(operand_ctx, c->cmd, argv[i])) != TI_GO_ON)
			return rc;
	return TI_GO_ON;
}

static int
ti_path_operand(void *ctx, const char *cmd, const char *v)
{
	struct ti_cmdline *c = ctx;

	if (c->no_operand)
		return ti_usage_error(cmd, "unexpected operand '%s' (%s)", v,
				      c->no_operand);
	if (c->path)
		return ti_usage_error(cmd, "extra operand '%s'", v);
	c->path = v;
	return TI_GO_ON;
}

int
ti_cmdline_parse(struct ti_cmdline *c, int argc, char **argv)
{
	int rc;

	c->path = NULL;
	if ((rc = ti_cmdline_scan(c, argc, argv, ti_path_operand, c)) !=
	    TI_GO_ON)
		return rc;
	if (c->no_operand)
		return TI_GO_ON;
	if (!c->path)
		return ti_usage_error(c->cmd, "missing PATH");
	if (c->path[0] == '\0')
		return ti_usage_error(c->cmd, "PATH is empty");
	return TI_GO_ON;
}

int
ti_table_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_table_opts *t = ctx;

	if (strcmp(name, "policy") == 0) {
		if (!ti_parse_policy(cmd, value, &t->policy))
			return TI_EXIT_USAGE;
		t->have_policy = true;
	} else if (strcmp(name, "slots") == 0) {
		if (!ti_parse_u64(cmd, "slots", value, &t->o.slots))
			return TI_EXIT_USAGE;
		if (t->o.slots == 0)
			return ti_usage_error(cmd,
					      "--slots must be at least 1");
	} else if (strcmp(name, "mode") == 0) {
		if (!ti_parse_mode(cmd, value, &t->o.mode))
			return TI_EXIT_USAGE;
	} else if (strcmp(name, "on-full") == 0) {
		if (!ti_parse_on_full(cmd, value, &t->o.on_full))
			return TI_EXIT_USAGE;
		t->have_on_full = true;
	} else {
		return ti_usage_error(cmd, "unknown option '--%s'", name);
	}
	return TI_GO_ON;
}
