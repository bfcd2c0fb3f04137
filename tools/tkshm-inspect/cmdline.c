/*
 * cmdline.c - what every subcommand does with its command line (--help, the
 * PATH operand, handing its own options to a handler), and the handler for
 * the table options that create and replay share.
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"

int
ti_cmdline_parse(struct ti_cmdline *c, int argc, char **argv)
{
	struct ti_args a;
	const char *v;
	int k, rc;

	c->path = NULL;
	ti_args_init(&a, argc, argv, c->cmd);
	while ((k = ti_args_next(&a, c->opts, c->nopts, &v)) != TI_ARG_END) {
		switch (k) {
		case TI_ARG_ERROR:
			return TI_EXIT_USAGE;
		case TI_ARG_OPERAND:
			if (c->no_operand)
				return ti_usage_error(c->cmd,
						      "unexpected operand '%s' "
						      "(%s)",
						      v, c->no_operand);
			if (c->path)
				return ti_usage_error(c->cmd,
						      "extra operand '%s'", v);
			c->path = v;
			break;
		default:
			if (strcmp(c->opts[k].name, "help") == 0) {
				c->usage(stdout);
				return ti_finish_stdout(TI_EXIT_OK);
			}
			rc = c->opt(c->ctx, c->cmd, c->opts[k].name, v);
			if (rc != TI_GO_ON)
				return rc;
			break;
		}
	}
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
