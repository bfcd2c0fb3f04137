/*
 * cmd_verify.c - `tkshm-inspect verify PATH [--json]`: checks every
 * invariant of a table through a read-only mapping (the table is never
 * written).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

void
ti_usage_verify(FILE *f)
{
	fputs("Usage: " TI_PROG " verify PATH [--json]\n"
	      "\n"
	      "Maps the table PATH read-only and checks the header and every\n"
	      "invariant of the slot protocol (tkshm_verify): each key in its\n"
	      "own window, never behind an EMPTY slot, valid states, at most\n"
	      "one REAL slot per key, valid remembered debts.  Prints one line\n"
	      "per problem, then a summary; the table is never written, and\n"
	      "a table in use may be verified (any report is real).\n"
	      "Exit status 0 when every invariant holds, 1 otherwise.\n"
	      "\n"
	      "Options:\n"
	      "  --json            print one JSON object: {\"table\", \"ok\",\n"
	      "                    \"slots\", \"problemCount\", \"problems\"}\n"
	      "                    (the first 1000 problems as sentences)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

/* The most problem sentences kept for --json (all are counted). */
#define TI_VERIFY_KEEP 1000

struct ti_verify {
	bool json;
	char *kept[TI_VERIFY_KEEP];
	size_t nkept;
};

static void
ti_problem(void *ctx, const char *problem)
{
	struct ti_verify *v = ctx;

	if (!v->json) {
		printf("problem: %s\n", problem);
		return;
	}
	if (v->nkept < TI_VERIFY_KEEP) {
		char *copy = strdup(problem);

		if (copy)
			v->kept[v->nkept++] = copy;
	}
}

static int
ti_verify_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_verify *v = ctx;

	(void)cmd;
	(void)value;
	if (strcmp(name, "json") == 0)
		v->json = true;
	return TI_GO_ON;
}

static void
ti_verify_print_json(const struct ti_verify *v, const char *path,
		     uint64_t slots, uint64_t problems)
{
	struct ti_json j;

	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", path);
	ti_json_bool(&j, "ok", problems == 0);
	ti_json_u64(&j, "slots", slots);
	ti_json_u64(&j, "problemCount", problems);
	ti_json_begin_arr(&j, "problems");
	for (size_t i = 0; i < v->nkept; i++)
		ti_json_string(&j, NULL, v->kept[i]);
	ti_json_end_arr(&j);
	ti_json_end_obj(&j);
}

int
ti_cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP, TI_OPT_FLAG("json"),
					      TI_OPT_END };
	struct ti_verify v = { 0 };
	struct ti_cmdline c =
		TI_CMDLINE("verify", ti_usage_verify, opts, ti_verify_opt, &v);
	tkshm_table *t;
	tkshm_stats st;
	uint64_t problems = 0;
	char full[4200];
	int k, rc;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	rc = tkshm_verify(t, ti_problem, &v, &problems);
	tkshm_stats_get(t, &st);
	tkshm_close(t);
	if (rc != TKSHM_OK && rc != TKSHM_ECORRUPT) {
		fflush(stdout);
		ti_err("cannot verify %s: %s", c.path, tkshm_strerror(rc));
		k = TI_EXIT_IO;
		goto out;
	}
	if (rc == TKSHM_ECORRUPT && problems == 0)
		problems = 1;
	if (v.json)
		ti_verify_print_json(&v, c.path, st.slots, problems);
	else if (problems == 0)
		printf("%s: ok: every invariant holds (%" PRIu64 " slots)\n",
		       c.path, st.slots);
	else
		printf("%s: %" PRIu64 " problem%s found (%" PRIu64 " slots)\n",
		       c.path, problems, problems == 1 ? "" : "s", st.slots);
	k = problems ? TI_EXIT_CHECK : TI_EXIT_OK;
out:
	for (size_t i = 0; i < v.nkept; i++)
		free(v.kept[i]);
	return ti_finish_stdout(k);
}
