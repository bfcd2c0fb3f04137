/*
 * main.c - tkshm-inspect: the command table, --help, --version, dispatch,
 * and the guard against a table file that shrinks while it is mapped.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inspect.h"

static const struct ti_command ti_commands[] = {
	{ "create", "create a table file", ti_cmd_create, ti_usage_create },
	{ "replay", "replay NOW_MS KEY COST lines, print decisions as JSON",
	  ti_cmd_replay, ti_usage_replay },
	{ "verify", "check the invariants of a table (read-only)",
	  ti_cmd_verify, ti_usage_verify },
	{ "stats", "print counters, geometry, policy and occupancy",
	  ti_cmd_stats, ti_usage_stats },
	{ "metrics", "print counters in the Prometheus text format",
	  ti_cmd_metrics, ti_usage_metrics },
#ifdef TI_HAVE_SERVE
	{ "serve", "serve the metrics over HTTP for Prometheus to scrape",
	  ti_cmd_serve, ti_usage_serve },
#endif
	{ "list", "list live keys with their state, filtered and sorted",
	  ti_cmd_list, ti_usage_list },
	{ "show", "show one key", ti_cmd_show, ti_usage_show },
	{ "top", "rank keys by debt or denials, refreshing live", ti_cmd_top,
	  ti_usage_top },
	{ "reset", "forget a key (unblock it)", ti_cmd_reset, ti_usage_reset },
	{ "set", "set a key's remaining units, or block it until a time",
	  ti_cmd_set, ti_usage_set },
	{ "plan", "say what a new policy or size would do to a table",
	  ti_cmd_plan, ti_usage_plan },
	{ "apply", "change a live table's policy and/or size", ti_cmd_apply,
	  ti_usage_apply },
	{ "resize", "grow a live table, every key kept", ti_cmd_resize,
	  ti_usage_resize },
};
#define TI_NCOMMANDS (sizeof ti_commands / sizeof ti_commands[0])

void
ti_print_exit_codes(FILE *f)
{
	fputs("Exit status:\n"
	      "  0  success\n"
	      "  1  verify found problems; show: the key is not in the\n"
	      "     table or its state is corrupt; reset: the key is not\n"
	      "     in the table (nothing reset); a check of the input\n"
	      "     failed (a malformed replay line) or a write did not\n"
	      "     succeed (table full, contention that did not settle)\n"
	      "  2  usage error\n"
	      "  3  cannot open, create or attach the table\n"
	      "  4  I/O error (reading input, writing output), the table\n"
	      "     file changed size while it was read (SIGBUS), or another\n"
	      "     system failure\n",
	      f);
}

static void
ti_usage(FILE *f)
{
	fputs("Usage: " TI_PROG " COMMAND [OPTIONS] [ARGS]\n"
	      "       " TI_PROG " COMMAND --help\n"
	      "       " TI_PROG " --help | --version\n"
	      "\n"
	      "Inspects and exercises tkshm shared-memory rate-limit tables.\n"
	      "A table path without '/' names a file in " TKSHM_DEFAULT_DIR
	      ".\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (size_t i = 0; i < TI_NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", ti_commands[i].name,
			ti_commands[i].summary);
	fputs("  help     show the help of a command\n"
	      "\n"
	      "Policies are ThrottleKit strategy strings, e.g.\n"
	      "  gcra:limit=10,periodMs=1000,burst=5\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
	fputs("\nSee tkshm-inspect(1).\n", f);
}

static void
ti_version(void)
{
	printf("%s %d.%d.%d (libtkshm %s, table layout %u)\n", TI_PROG,
	       TKSHM_VERSION_MAJOR, TKSHM_VERSION_MINOR, TKSHM_VERSION_PATCH,
	       tkshm_version(), (unsigned)tkshm_layout_version());
}

static const struct ti_command *
ti_find(const char *name)
{
	for (size_t i = 0; i < TI_NCOMMANDS; i++)
		if (strcmp(ti_commands[i].name, name) == 0)
			return &ti_commands[i];
	return NULL;
}

/* A table file truncated by another process after we mapped it raises
 * SIGBUS on the first read of a page past its new end: the library cannot
 * prevent it (it never installs handlers), so the tool turns it into a
 * message and exit status 4 instead of a crash.  SIGSEGV gets the same
 * treatment with its own words, so that a bug is not reported as a
 * truncation.  Only async-signal-safe calls: write(2) and _exit(2). */
static void
ti_fault(int sig)
{
	static const char bus[] = TI_PROG ": the table file changed size while "
					  "it was read (SIGBUS)\n";
	static const char segv[] = TI_PROG ": invalid memory access while "
					   "reading (SIGSEGV)\n";
	ssize_t n;

	if (sig == SIGBUS)
		n = write(STDERR_FILENO, bus, sizeof bus - 1);
	else
		n = write(STDERR_FILENO, segv, sizeof segv - 1);
	(void)n;
	_exit(TI_EXIT_IO);
}

static void
ti_guard_faults(void)
{
	/* An alternate stack lets the handler run even when the fault is a
	 * stack overflow. */
	static char stack[64 * 1024];
	stack_t ss = { .ss_sp = stack, .ss_size = sizeof stack };
	struct sigaction sa;

	(void)sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ti_fault;
	sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGBUS, &sa, NULL);
	(void)sigaction(SIGSEGV, &sa, NULL);
}

int
main(int argc, char **argv)
{
	const struct ti_command *c;
	const char *name;

	ti_guard_faults();
	if (argc < 2) {
		ti_usage(stderr);
		return TI_EXIT_USAGE;
	}
	name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		ti_usage(stdout);
		return ti_finish_stdout(TI_EXIT_OK);
	}
	if (strcmp(name, "--version") == 0) {
		ti_version();
		return ti_finish_stdout(TI_EXIT_OK);
	}
	if (strcmp(name, "help") == 0) {
		if (argc == 2) {
			ti_usage(stdout);
			return ti_finish_stdout(TI_EXIT_OK);
		}
		if (argc > 3)
			return ti_usage_error(NULL, "help takes one command");
		c = ti_find(argv[2]);
		if (!c)
			return ti_usage_error(NULL, "unknown command '%s'",
					      argv[2]);
		c->usage(stdout);
		return ti_finish_stdout(TI_EXIT_OK);
	}
	if (name[0] == '-')
		return ti_usage_error(NULL, "unknown option '%s'", name);
	c = ti_find(name);
	if (!c)
		return ti_usage_error(NULL, "unknown command '%s'", name);
	return c->run(argc - 1, argv + 1);
}
