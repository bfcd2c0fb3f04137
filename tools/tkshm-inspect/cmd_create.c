/*
 * cmd_create.c - `tkshm-inspect create PATH --policy SPEC [...]`: creates a
 * table file, refusing a path that exists.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

void
ti_usage_create(FILE *f)
{
	fputs("Usage: " TI_PROG " create PATH --policy SPEC [--slots N]\n"
	      "                     [--mode OCTAL] [--on-full evict|refuse]\n"
	      "                     [--json]\n"
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
	      "  --mode OCTAL      permission bits of the file, 1 to 777\n"
	      "                    (default 0600)\n"
	      "  --on-full WHAT    when a key's probe window holds only live\n"
	      "                    keys: 'evict' the least-indebted key\n"
	      "                    (default) or 'refuse' the check\n"
	      "  --json            print the result as one JSON object\n"
	      "                    (mode as an octal string, \"0640\")\n"
	      "  -h, --help        show this help\n"
	      "\n"
	      "Prints the created path, its slots, size and policy.\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

struct ti_create {
	struct ti_table_opts to;
	bool json;
};

static int
ti_create_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_create *cr = ctx;

	if (strcmp(name, "json") == 0) {
		cr->json = true;
		return TI_GO_ON;
	}
	return ti_table_opt(&cr->to, cmd, name, value);
}

static void
ti_create_print_json(const char *path, const tkshm_stats *st, unsigned mode,
		     const char *spec)
{
	struct ti_json j;

	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", path);
	ti_json_u64(&j, "slots", st->slots);
	ti_json_u64(&j, "fileBytes", st->file_bytes);
	ti_json_string(&j, "onFull", ti_on_full_name(st->on_full));
	{
		char octal[8];

		snprintf(octal, sizeof octal, "%04o", mode & 07777);
		ti_json_string(&j, "mode", octal);
	}
	ti_json_string(&j, "policy", spec);
	ti_json_end_obj(&j);
}

int
ti_cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,
		TI_OPT_VALUE("policy"),
		TI_OPT_VALUE("slots"),
		TI_OPT_VALUE("mode"),
		TI_OPT_VALUE("on-full"),
		TI_OPT_FLAG("json"),
		TI_OPT_END,
	};
	struct ti_create cr = { .to = TI_TABLE_OPTS_INIT };
	struct ti_table_opts *to = &cr.to;
	struct ti_cmdline c =
		TI_CMDLINE("create", ti_usage_create, opts, ti_create_opt, &cr);
	tkshm_table *t;
	tkshm_stats st;
	char full[4200], spec[256];
	int k;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if (!to->have_policy)
		return ti_usage_error("create", "missing --policy SPEC");

	to->o.policy = &to->policy;
	to->o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	if ((k = ti_open(c.path, &to->o, &t)) != TI_EXIT_OK)
		return k;
	tkshm_stats_get(t, &st);
	if (tkshm_policy_format(&st.policy, spec, sizeof spec) < 0)
		spec[0] = '\0';
	if (cr.json)
		ti_create_print_json(
			ti_resolve_path(c.path, full, sizeof full), &st,
			(unsigned)(to->o.mode ? to->o.mode : 0600), spec);
	else
		printf("created %s: %" PRIu64 " slots, %" PRIu64
		       " bytes, on-full %s, mode %04o, policy %s\n",
		       ti_resolve_path(c.path, full, sizeof full), st.slots,
		       st.file_bytes, ti_on_full_name(st.on_full),
		       (unsigned)(to->o.mode ? to->o.mode : 0600), spec);
	tkshm_close(t);
	return ti_finish_stdout(TI_EXIT_OK);
}
