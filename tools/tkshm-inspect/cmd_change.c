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

/* resize takes no --policy, so its help does not offer one. */
static void
ti_change_usage(FILE *f, const char *cmd, bool takes_policy, const char *what)
{
	fprintf(f, "Usage: " TI_PROG " %s PATH %s [--json]\n\n%s\nOptions:\n",
		cmd, takes_policy ? "[--policy SPEC] [--slots N]" : "--slots N",
		what);
	if (takes_policy)
		fputs("  --policy SPEC     the new policy, e.g.\n"
		      "                    gcra:limit=40,periodMs=1000\n",
		      f);
	fputs("  --slots N         the new capacity in keys, rounded up to a\n"
	      "                    power of two; fewer than the table has is\n"
	      "                    refused (exit 2): a table does not shrink\n"
	      "  --json            print the change as one JSON object\n"
	      "  -h, --help        show this help\n"
	      "\n"
	      "Same kind, same state shape: the policy is written in place\n"
	      "and every key keeps its state.  Another kind or shape, or more\n"
	      "slots: a new table replaces the old one under PATH, and every\n"
	      "key is carried over where the kinds convert.\n"
	      "Prints PATH and what is or would be done, e.g.\n"
	      "  /dev/shm/api: limit 20 -> 40, states kept\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

void
ti_usage_plan(FILE *f)
{
	ti_change_usage(
		f, "plan", true,
		"Says what `apply` would do to the table PATH, changing "
		"nothing.\n");
}

void
ti_usage_apply(FILE *f)
{
	ti_change_usage(f, "apply", true,
			"Changes the policy and/or the capacity of the live "
			"table PATH.\n");
}

void
ti_usage_resize(FILE *f)
{
	ti_change_usage(f, "resize", false,
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

/* `policy`: the policy in force after the change (apply) or that would be
 * (plan), in JSON as create gives it. */
static int
ti_change_print(const struct ti_change *ch, const char *path,
		const tkshm_change *c, const tkshm_policy *policy)
{
	if (ch->json) {
		struct ti_json j;
		char spec[TKSHM_POLICY_MAX];

		if (tkshm_policy_format(policy, spec, sizeof spec) < 0)
			spec[0] = '\0';
		ti_json_init(&j, stdout, true);
		ti_json_begin_obj(&j, NULL);
		ti_json_string(&j, "table", path);
		ti_json_string(&j, "kind", tkshm_change_name(c->kind));
		ti_json_bool(&j, "statesKept", c->states_kept);
		ti_json_u64(&j, "slotsBefore", c->slots_before);
		ti_json_u64(&j, "slotsAfter", c->slots_after);
		ti_json_string(&j, "policy", spec);
		ti_json_string(&j, "text", c->text);
		ti_json_end_obj(&j);
	} else {
		printf("%s: %s\n", path, c->text);
	}
	return ti_finish_stdout(TI_EXIT_OK);
}

/* The capacity a table asked for `asked` slots gets: the next power of
 * two, at least 8 (tkshm_options.slots).  asked <= TKSHM_MAX_SLOTS. */
static uint64_t
ti_rounded_slots(uint64_t asked)
{
	uint64_t n = 8;

	while (n < asked)
		n <<= 1;
	return n;
}

/* Refuses an --slots the table cannot take before the library is asked,
 * so that the message says why (tkshm_apply's TKSHM_EINVAL does not say
 * which): more than any table holds, or fewer than the table's `have`
 * once rounded (100 asked of a 128-slot table is no change; 64 is a
 * shrink).  plan refuses what apply would.  Returns TI_GO_ON or the exit
 * code. */
static int
ti_check_slots(const char *cmd, const char *path, uint64_t asked, uint64_t have)
{
	if (asked == 0)
		return TI_GO_ON;
	if (asked > TKSHM_MAX_SLOTS)
		return ti_usage_error(cmd,
				      "--slots %" PRIu64 " is more than a "
				      "table can hold (%" PRIu64 ")",
				      asked, (uint64_t)TKSHM_MAX_SLOTS);
	if (ti_rounded_slots(asked) < have) {
		ti_err("%s has %" PRIu64 " slots, more than the %" PRIu64
		       " asked: a table does not shrink (nothing changed)",
		       path, have, asked);
		return TI_EXIT_USAGE;
	}
	return TI_GO_ON;
}

/* The exit status for a change the library refused (nothing changed). */
static int
ti_change_exit(int rc)
{
	switch (rc) {
	case TKSHM_EPOLICY:
	case TKSHM_EINVAL:
		return TI_EXIT_USAGE;
	case TKSHM_EBUSY: /* another process's change did not finish */
		return TI_EXIT_CHECK;
	case TKSHM_ENOMEM:
	case TKSHM_ESYSTEM:
		return TI_EXIT_IO;
	default: /* the table, or its replacement, cannot be opened or
		    created: EPERM, ENOSPC, EBADMAGIC... */
		return TI_EXIT_OPEN;
	}
}

/* Parses the command line of `cmd`; returns TI_GO_ON or the exit code. */
static int
ti_change_parse(struct ti_cmdline *c, int argc, char **argv, bool need_slots)
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
static const struct option ti_change_opts[] = {
	TI_OPT_HELP,
	TI_OPT_VALUE("policy"),
	TI_OPT_VALUE("slots"),
	TI_OPT_FLAG("json"),
	TI_OPT_END,
};

int
ti_cmd_plan(int argc, char **argv)
{
	struct ti_change ch = { .to = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c = TI_CMDLINE("plan", ti_usage_plan, ti_change_opts,
					 ti_change_opt, &ch);
	tkshm_change change;
	tkshm_stats st;
	tkshm_table *t;
	char full[4200];
	int k, rc;

	if ((k = ti_change_parse(&c, argc, argv, false)) != TI_GO_ON)
		return k;
	/* Opened first for the message a missing or foreign file deserves,
	 * its size, and the stored policy when none is given. */
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	tkshm_stats_get(t, &st);
	tkshm_close(t);
	k = ti_check_slots("plan", c.path, ch.to.o.slots, st.slots);
	if (k != TI_GO_ON)
		return k;
	if (!ch.to.have_policy)
		ch.to.policy = st.policy;
	ch.to.o.policy = &ch.to.policy;
	/* Without TKSHM_O_CREATE: a table removed since is an error, not a
	 * table that would be created. */
	ch.to.o.flags = 0;
	rc = tkshm_plan(c.path, &ch.to.o, &change);
	if (rc != TKSHM_OK) {
		ti_err("cannot plan a change of %s: %s", c.path,
		       tkshm_strerror(rc));
		return ti_change_exit(rc);
	}
	return ti_change_print(&ch, c.path, &change, &ch.to.policy);
}

/* apply and resize: the change through a read-write handle. */
static int
ti_change_run(struct ti_change *ch, const char *cmd, const char *path)
{
	tkshm_change change;
	tkshm_stats st;
	tkshm_table *t;
	char full[4200];
	int k, rc;

	if ((k = ti_open_rdwr(&path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	tkshm_stats_get(t, &st);
	k = ti_check_slots(cmd, path, ch->to.o.slots, st.slots);
	if (k != TI_GO_ON) {
		tkshm_close(t);
		return k;
	}
	rc = tkshm_apply(t, ch->to.have_policy ? &ch->to.policy : NULL,
			 ch->to.o.slots, &change);
	/* The handle follows its own change: the policy now in force. */
	if (rc == TKSHM_OK)
		tkshm_stats_get(t, &st);
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_err("cannot change %s: %s (nothing changed)", path,
		       tkshm_strerror(rc));
		return ti_change_exit(rc);
	}
	return ti_change_print(ch, path, &change, &st.policy);
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
	return ti_change_run(&ch, "apply", c.path);
}

int
ti_cmd_resize(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,
		TI_OPT_VALUE("slots"),
		TI_OPT_FLAG("json"),
		TI_OPT_END,
	};
	struct ti_change ch = { .to = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c =
		TI_CMDLINE("resize", ti_usage_resize, opts, ti_change_opt, &ch);
	int k;

	if ((k = ti_change_parse(&c, argc, argv, true)) != TI_GO_ON)
		return k;
	return ti_change_run(&ch, "resize", c.path);
}
