/*
 * cmd_create.c - `tkshm-inspect create PATH --policy SPEC [...]`: creates a
 * table file, refusing a path that exists.
 */
#include <inttypes.h>
#include <stdio.h>

#include "inspect.h"

void
ti_usage_create(FILE *f)
{
	fputs("Usage: " TI_PROG " create PATH --policy SPEC [--slots N]\n"
	      "                     [--mode OCTAL] [--on-full evict|refuse]\n"
	      "\n"
	      "Creates the table file PATH (a name without '/' is created "
	      "in " TKSHM_DEFAULT_DIR ").\n"
	      "Refuses (exit 3) if PATH exists.\n"
	      "\n"
	      "Options:\n"
	      "  --policy SPEC     the table's policy, e.g.\n"
	      "                    gcra:limit=10,periodMs=1000,burst=5\n"
	      "                    (required; fixed for the table's life)\n"
	      "  --slots N         capacity in keys, rounded up to a power of\n"
	      "                    two, at least 8 (default 65536)\n"
	      "  --mode OCTAL      permission bits of the file (default 0600)\n"
	      "  --on-full WHAT    when a key's probe window holds only live\n"
	      "                    keys: 'evict' the least-indebted key\n"
	      "                    (default) or 'refuse' the check\n"
	      "  -h, --help        show this help\n"
	      "\n"
	      "Prints the created path, its slots, size and policy.\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

int
ti_cmd_create(int argc, char **argv)
{
	static const struct ti_opt opts[] = {
		{ "help", false }, { "policy", true },	{ "slots", true },
		{ "mode", true },  { "on-full", true },
	};
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy policy;
	bool have_policy = false;
	const char *path = NULL, *v;
	tkshm_table *t;
	tkshm_stats st;
	struct ti_args a;
	char full[4200], spec[256];
	int k;

	ti_args_init(&a, argc, argv, "create");
	while ((k = ti_args_next(&a, opts, sizeof opts / sizeof opts[0], &v)) !=
	       TI_ARG_END) {
		switch (k) {
		case TI_ARG_ERROR:
			return TI_EXIT_USAGE;
		case TI_ARG_OPERAND:
			if (path)
				return ti_usage_error("create",
						      "extra operand '%s'", v);
			path = v;
			break;
		case 0:
			ti_usage_create(stdout);
			return ti_finish_stdout(TI_EXIT_OK);
		case 1:
			if (!ti_parse_policy("create", v, &policy))
				return TI_EXIT_USAGE;
			have_policy = true;
			break;
		case 2:
			if (!ti_parse_u64("create", "slots", v, &o.slots))
				return TI_EXIT_USAGE;
			if (o.slots == 0)
				return ti_usage_error(
					"create", "--slots must be at least 1");
			break;
		case 3:
			if (!ti_parse_mode("create", v, &o.mode))
				return TI_EXIT_USAGE;
			break;
		case 4:
			if (!ti_parse_on_full("create", v, &o.on_full))
				return TI_EXIT_USAGE;
			break;
		}
	}
	if (!path)
		return ti_usage_error("create", "missing PATH");
	if (path[0] == '\0')
		return ti_usage_error("create", "PATH is empty");
	if (!have_policy)
		return ti_usage_error("create", "missing --policy SPEC");

	o.policy = &policy;
	o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	if ((k = ti_open(path, &o, &t)) != TI_EXIT_OK)
		return k;
	tkshm_stats_get(t, &st);
	if (tkshm_policy_format(&st.policy, spec, sizeof spec) < 0)
		spec[0] = '\0';
	printf("created %s: %" PRIu64 " slots, %" PRIu64
	       " bytes, on-full %s, mode %04o, policy %s\n",
	       ti_resolve_path(path, full, sizeof full), st.slots,
	       st.file_bytes, ti_on_full_name(st.on_full),
	       (unsigned)(o.mode ? o.mode : 0600), spec);
	tkshm_close(t);
	return ti_finish_stdout(TI_EXIT_OK);
}
