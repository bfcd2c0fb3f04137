/*
 * cmd_change.c - changing a live table: `plan` (what a change would do),
 * `apply` (a new policy and/or more slots) and `resize` (more slots), all
 * through the library's lifecycle (tkshm_plan, tkshm_apply;
 * docs/lifecycle.md).  Every process attached to the table follows on its
 * next call.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

static void
ti_change_usage(FILE *f, const char *cmd, const char *synopsis,
		const char *what)
{
	fprintf(f,
		"Usage: " TI_PROG " %s PATH %s [--json]\n"
		"\n"
		"%s"
		"\n"
		"Options:\n"
		"  --policy SPEC     the new policy, e.g.\n"
		"                    gcra:limit=20,periodMs=1000\n"
		"  --slots N         the new capacity in keys, rounded up to a\n"
		"                    power of two; a table does not shrink\n"
		"  --json            print the change as one JSON object\n"
		"  -h, --help        show this help\n"
		"\n"
		"Same kind, same state shape: the policy is written in place\n"
		"and every key keeps its state.  Another kind or shape, or more\n"
		"slots: a new table replaces the old one under PATH, and every\n"
		"key is carried over where the kinds convert.\n"
		"\n",
		cmd, synopsis, what);
	ti_print_exit_codes(f);
}

void
ti_usage_plan(FILE *f)
{
	ti_change_usage(f, "plan", "[--policy SPEC] [--slots N]",
			"Says what `apply` would do to the table PATH, changing "
			"nothing.\n");
}

void
ti_usage_apply(FILE *f)
{
	ti_change_usage(f, "apply", "[--policy SPEC] [--slots N]",
			"Changes the policy and/or the capacity of the live "
			"table PATH.\n");
}

void
ti_usage_resize(FILE *f)
{
	ti_change_usage(f, "resize", "--slots N",
			"Grows the live table PATH to N slots, every key and "
			"its state carried over.\n");
}

struct ti_change {
	struct ti_table_opts to;
	bool json;
};

static int
ti_change_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_change *ch = ctx;

	if (strcmp(name, "json") == 0) {
		ch->json = true;
		return TI_GO_ON;
	}
	return ti_table_opt(&ch->to, cmd, name, value);
}

static int
ti_change_print(const struct ti_change *ch, const char *path,
		const tkshm_change *c)
{
	if (ch->json) {
		struct ti_json j;

		ti_json_init(&j, stdout, true);
		ti_json_begin_obj(&j, NULL);
		ti_json_string(&j, "table", path);
		ti_json_string(&j, "kind", tkshm_change_name(c->kind));
		ti_json_bool(&j, "statesKept", c->states_kept);
		ti_json_u64(&j, "slotsBefore", c->slots_before);
		ti_json_u64(&j, "slotsAfter", c->slots_after);
		ti_json_string(&j, "text", c->text);
		ti_json_end_obj(&j);
	} else {
		printf("%s: %s\n", path, c->text);
	}
	return ti_finish_stdout(TI_EXIT_OK);
}

/* Parses the command line of `cmd`; returns TI_GO_ON or the exit code. */
static int
ti_change_parse(struct ti_cmdline *c, int argc, char **argv,
		bool need_slots)
{
	const struct ti_change *ch = c->ctx;
	int k = ti_cmdline_parse(c, argc, argv);

	if (k != TI_GO_ON)
		return k;
	if (need_slots && ch->to.o.slots == 0)
		return ti_usage_error(c->cmd, "missing --slots N");
	if (!ch->to.have_policy && ch->to.o.slots == 0)
		return ti_usage_error(c->cmd, "give --policy SPEC, --slots N "
					      "or both");
	return TI_GO_ON;
}

/* No --mode or --on-full: they are fixed when a table is created. */
static const struct ti_opt ti_change_opts[] = {
	{ "help", false },
	{ "policy", true },
	{ "slots", true },
	{ "json", false },
};

int
ti_cmd_plan(int argc, char **argv)
{
	struct ti_change ch = { .to = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c = TI_CMDLINE("plan", ti_usage_plan, ti_change_opts,
					 ti_change_opt, &ch);
	tkshm_change change;
	tkshm_table *t;
	char full[4200];
	int k, rc;

	if ((k = ti_change_parse(&c, argc, argv, false)) != TI_GO_ON)
		return k;
	/* The stored policy when none is given: plan only the slots. */
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	if (!ch.to.have_policy) {
		tkshm_stats st;

		tkshm_stats_get(t, &st);
		ch.to.policy = st.policy;
	}
	tkshm_close(t);
	ch.to.o.policy = &ch.to.policy;
	rc = tkshm_plan(c.path, &ch.to.o, &change);
	if (rc != TKSHM_OK) {
		ti_err("cannot plan a change of %s: %s", c.path,
		       tkshm_strerror(rc));
		return rc == TKSHM_EINVAL ? TI_EXIT_USAGE : TI_EXIT_OPEN;
	}
	return ti_change_print(&ch, c.path, &change);
}

/* apply and resize: the change through a read-write handle. */
static int
ti_change_run(struct ti_change *ch, const char *path)
{
	tkshm_change change;
	tkshm_table *t;
	char full[4200];
	int k, rc;

	if ((k = ti_open_rdwr(&path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	rc = tkshm_apply(t, ch->to.have_policy ? &ch->to.policy : NULL,
			 ch->to.o.slots, &change);
	if (rc == TKSHM_EINVAL && ch->to.o.slots) {
		tkshm_stats st;

		tkshm_stats_get(t, &st);
		tkshm_close(t);
		ti_err("%s has %" PRIu64 " slots: a table does not shrink "
		       "(nothing changed)",
		       path, st.slots);
		return TI_EXIT_USAGE;
	}
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_err("cannot change %s: %s (nothing changed)", path,
		       tkshm_strerror(rc));
		return rc == TKSHM_EPOLICY ? TI_EXIT_USAGE : TI_EXIT_CHECK;
	}
	return ti_change_print(ch, path, &change);
}

int
ti_cmd_apply(int argc, char **argv)
{
	struct ti_change ch = { .to = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c = TI_CMDLINE("apply", ti_usage_apply,
					 ti_change_opts, ti_change_opt, &ch);
	int k;

	if ((k = ti_change_parse(&c, argc, argv, false)) != TI_GO_ON)
		return k;
	return ti_change_run(&ch, c.path);
}

int
ti_cmd_resize(int argc, char **argv)
{
	static const struct ti_opt opts[] = {
		{ "help", false },
		{ "slots", true },
		{ "json", false },
	};
	struct ti_change ch = { .to = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c = TI_CMDLINE("resize", ti_usage_resize, opts,
					 ti_change_opt, &ch);
	int k;

	if ((k = ti_change_parse(&c, argc, argv, true)) != TI_GO_ON)
		return k;
	return ti_change_run(&ch, c.path);
}
