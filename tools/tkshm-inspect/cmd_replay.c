/*
 * cmd_replay.c - `tkshm-inspect replay`: runs "NOW_MS KEY COST" lines from
 * standard input through a real table and prints each decision as one
 * ThrottleKit JSON object per line.  A limiter's line is a check
 * (tkshm_check_at); a shaper's (leakyBucket) is a reservation
 * (tkshm_reserve_at), printed as ThrottleKit's {accepted, delayMs} with
 * tkshm's retry-after and exact wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "replay_line.h"

void
ti_usage_replay(FILE *f)
{
	fputs("Usage: " TI_PROG " replay --policy SPEC [--table PATH] "
	      "[--slots N]\n"
	      "                     [--on-full evict|refuse]\n"
	      "\n"
	      "Reads lines 'NOW_MS KEY COST' from standard input (fields\n"
	      "separated by whitespace; NOW_MS and COST decimal numbers, KEY a\n"
	      "token without whitespace; blank lines and lines starting with\n"
	      "'#' are skipped), checks each against a table at time NOW_MS\n"
	      "and prints one JSON object per line, with ThrottleKit's fields:\n"
	      "  {\"allowed\":true,\"limit\":5,\"remaining\":4,"
	      "\"resetAt\":1100,\"retryAfterMs\":0}\n"
	      "\n"
	      "With a leakyBucket policy (the shaper) each line reserves a\n"
	      "departure instead (tkshm_reserve_at) and prints ThrottleKit's\n"
	      "shaper answer, then the retry-after and the exact wait in ms:\n"
	      "  {\"accepted\":true,\"delayMs\":24,\"retryAfterMs\":0,"
	      "\"waitMs\":23.25}\n"
	      "delayMs is ceil(waitMs) when accepted; when rejected it is\n"
	      "the wait beyond maxQueueMs, rounded up (then also\n"
	      "retryAfterMs; waitMs is 0).\n"
	      "\n"
	      "Without --table the table is a fresh anonymous one that lives\n"
	      "for this replay only.  With --table PATH the existing table is\n"
	      "attached (never created) and must have the policy SPEC; several\n"
	      "replays may share one table at once.\n"
	      "\n"
	      "A malformed line (wrong field count, bad number, a key or cost\n"
	      "the library refuses), or a check or reservation the table\n"
	      "cannot make (a full probe window on a table that refuses to\n"
	      "evict), stops the replay with a message naming the line number\n"
	      "on standard error and exit status 1, after the decisions of the\n"
	      "lines before it were printed.\n"
	      "\n"
	      "Options:\n"
	      "  --policy SPEC     the policy, e.g.\n"
	      "                    gcra:limit=10,periodMs=1000,burst=5 "
	      "(required)\n"
	      "  --table PATH      replay through this existing table\n"
	      "  --slots N         slots of the anonymous table (default 65536);\n"
	      "                    with --table, must equal the table's\n"
	      "  --on-full WHAT    'evict' (default) or 'refuse', for the\n"
	      "                    anonymous table only\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

/* Reports a bad line after flushing the decisions printed before it. */
static int ti_bad_line(unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
ti_bad_line(unsigned long line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	fflush(stdout);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ti_err("line %lu: %s", line, msg);
	return ti_finish_stdout(TI_EXIT_CHECK);
}

/* A reservation as one JSON line: ThrottleKit's shaper fields in its
 * order, then tkshm's. */
static void
ti_json_reservation(FILE *f, const tkshm_reservation *r)
{
	fprintf(f,
		"{\"accepted\":%s,\"delayMs\":%" PRId64
		",\"retryAfterMs\":%" PRId64 ",\"waitMs\":",
		r->accepted ? "true" : "false", r->delay_ms, r->retry_after_ms);
	ti_json_double(f, r->wait_ms);
	fputs("}\n", f);
}

/* Checks (a limiter) or reserves (the shaper) one line's request and
 * prints the outcome; the library's return code. */
static int
ti_replay_request(tkshm_table *t, bool shaper, const char *key, double cost,
		  double now)
{
	tkshm_decision d;
	tkshm_reservation r;
	int rc;

	if (shaper) {
		rc = tkshm_reserve_at(t, key, strlen(key), cost, now, &r);
		if (rc == TKSHM_OK)
			ti_json_reservation(stdout, &r);
		return rc;
	}
	rc = tkshm_check_at(t, key, strlen(key), cost, now, &d);
	if (rc == TKSHM_OK)
		ti_json_decision(stdout, &d);
	return rc;
}

/* Runs one line; returns -1 to go on, or the exit code. */
static int
ti_replay_line(tkshm_table *t, bool shaper, unsigned long line, char *text,
	       size_t len)
{
	struct ti_replay_fields f;
	char msg[TI_LINE_MSG_MAX], sbuf[48];
	int rc;

	switch (ti_replay_line_parse(text, len, &f, msg, sizeof msg)) {
	case TI_LINE_SKIP:
		return -1;
	case TI_LINE_BAD:
		return ti_bad_line(line, "%s", msg);
	case TI_LINE_REQUEST:
		break;
	}
	rc = ti_replay_request(t, shaper, f.key, f.cost, f.now);
	switch (rc) {
	case TKSHM_OK:
		return -1;
	case TKSHM_ENOW:
		return ti_bad_line(
			line, "NOW_MS '%s' refused: %s",
			ti_short_token(f.now_text, sbuf, sizeof sbuf),
			tkshm_strerror(rc));
	case TKSHM_ECOST:
		return ti_bad_line(
			line, "cost '%s' refused: %s",
			ti_short_token(f.cost_text, sbuf, sizeof sbuf),
			tkshm_strerror(rc));
	case TKSHM_EKEYEMPTY:
	case TKSHM_EKEYLONG:
		return ti_bad_line(line, "KEY '%s' refused: %s",
				   ti_short_token(f.key, sbuf, sizeof sbuf),
				   tkshm_strerror(rc));
	default:
		return ti_bad_line(line, "%s failed: %s (%s)",
				   shaper ? "reservation" : "check",
				   tkshm_strerror(rc), tkshm_error_name(rc));
	}
}

/* replay's options: the table options and --table. */
struct ti_replay_opts {
	struct ti_table_opts t;
	const char *table;
};

static int
ti_replay_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_replay_opts *r = ctx;

	if (strcmp(name, "table") != 0)
		return ti_table_opt(&r->t, cmd, name, value);
	if (value[0] == '\0')
		return ti_usage_error(cmd, "--table PATH is empty");
	r->table = value;
	return TI_GO_ON;
}

int
ti_cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,
		TI_OPT_VALUE("policy"),
		TI_OPT_VALUE("table"),
		TI_OPT_VALUE("slots"),
		TI_OPT_VALUE("on-full"),
		TI_OPT_END,
	};
	struct ti_replay_opts ro = { .t = TI_TABLE_OPTS_INIT };
	struct ti_cmdline c =
		TI_CMDLINE("replay", ti_usage_replay, opts, ti_replay_opt, &ro);
	tkshm_table *t;
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long line = 0;
	bool shaper;
	int k, rc = -1;

	c.no_operand = "input is read from standard input";
	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if (!ro.t.have_policy)
		return ti_usage_error("replay", "missing --policy SPEC");
	if (ro.table && ro.t.have_on_full)
		return ti_usage_error("replay",
				      "--on-full is fixed when a table is "
				      "created; it cannot be given with "
				      "--table");

	ro.t.o.policy = &ro.t.policy;
	/* Attach only: a table shared by replays is made by `create`, and
	 * a replay never changes a table's policy (`apply` does). */
	ro.t.o.flags = ro.table ? TKSHM_O_KEEP : TKSHM_O_CREATE;
	if ((k = ti_open(ro.table, &ro.t.o, &t)) != TI_EXIT_OK)
		return k;
	/* An attached table has the policy SPEC (ti_open checked it). */
	shaper = ro.t.policy.kind == TKSHM_KIND_LEAKY_BUCKET;

	while (rc < 0) {
		errno = 0;
		n = getline(&buf, &cap, stdin);
		if (n < 0) {
			if (ferror(stdin)) {
				fflush(stdout);
				ti_err("cannot read standard input: %s",
				       strerror(errno ? errno : EIO));
				rc = ti_finish_stdout(TI_EXIT_IO);
			} else {
				rc = ti_finish_stdout(TI_EXIT_OK);
			}
			break;
		}
		line++;
		rc = ti_replay_line(t, shaper, line, buf, (size_t)n);
		if (rc < 0 && ferror(stdout))
			rc = ti_finish_stdout(TI_EXIT_OK);
	}
	free(buf);
	tkshm_close(t);
	return rc;
}
