/*
 * cmd_verify.c - `tkshm-inspect verify PATH`: checks every invariant of a
 * table through a read-only mapping (the table is never written).
 */
#include <inttypes.h>
#include <stdio.h>

#include "inspect.h"

void
ti_usage_verify(FILE *f)
{
	fputs("Usage: " TI_PROG " verify PATH\n"
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
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

static void
ti_problem(void *ctx, const char *problem)
{
	(void)ctx;
	printf("problem: %s\n", problem);
}

int
ti_cmd_verify(int argc, char **argv)
{
	static const struct ti_opt opts[] = { { "help", false } };
	struct ti_cmdline c =
		TI_CMDLINE("verify", ti_usage_verify, opts, NULL, NULL);
	tkshm_table *t;
	tkshm_stats st;
	uint64_t problems = 0;
	char full[4200];
	int k, rc;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	rc = tkshm_verify(t, ti_problem, NULL, &problems);
	tkshm_stats_get(t, &st);
	tkshm_close(t);
	if (rc != TKSHM_OK && rc != TKSHM_ECORRUPT) {
		fflush(stdout);
		ti_err("cannot verify %s: %s", c.path, tkshm_strerror(rc));
		return ti_finish_stdout(TI_EXIT_IO);
	}
	if (rc == TKSHM_ECORRUPT && problems == 0)
		problems = 1;
	if (problems == 0)
		printf("%s: ok: every invariant holds (%" PRIu64 " slots)\n",
		       c.path, st.slots);
	else
		printf("%s: %" PRIu64 " problem%s found (%" PRIu64 " slots)\n",
		       c.path, problems, problems == 1 ? "" : "s", st.slots);
	return ti_finish_stdout(problems ? TI_EXIT_CHECK : TI_EXIT_OK);
}
