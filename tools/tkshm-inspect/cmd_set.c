/*
 * cmd_set.c - `tkshm-inspect set PATH KEY (--remaining N | --block-for MS |
 * --block-until EPOCH_MS) [--now MS] [--json]`: an operator's override of
 * one key (tkshm_set_remaining_at, tkshm_block_at), then the key's state as
 * a cost-1 check would see it.  The table is attached read-write with its
 * stored policy and never created.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "inspect.h"

void
ti_usage_set(FILE *f)
{
	fputs("Usage: " TI_PROG
	      " set PATH KEY (--remaining N | --block-for MS |"
	      "\n"
	      "                  --block-until EPOCH_MS) [--now MS] [--json]\n"
	      "\n"
	      "Overrides KEY in the existing table PATH, in one atomic step\n"
	      "that concurrent checks see before or after, then prints the\n"
	      "key's state as a check of cost 1 would see it: remaining,\n"
	      "limit, resetAt (epoch ms of full replenishment) and\n"
	      "retryAfterMs.  An absent key is inserted.  Exactly one of:\n"
	      "  --remaining N     the key holds N units now (0 <= N <= the\n"
	      "                    limit: GCRA's burst, a bucket's capacity,\n"
	      "                    a tokenBudget's whole tokens) and refills\n"
	      "                    from there as the policy says; N equal to\n"
	      "                    the limit is a reset\n"
	      "  --block-for MS    deny every check for MS milliseconds (> 0)\n"
	      "  --block-until EPOCH_MS\n"
	      "                    deny every check until that time (after now)\n"
	      "Blocking needs a gcra or tokenBucket table; windowed algorithms\n"
	      "restart with every window, so block those with --remaining 0.\n"
	      "\n"
	      "KEY is written as list prints it: bytes 0x21..0x7e as they are,\n"
	      "'\\\\' for a backslash and '\\xNN' for any other byte.\n"
	      "A remaining count out of range, or a block on another algorithm,\n"
	      "is a usage error (2); no write permission gives 3; a full probe\n"
	      "window on a table that refuses to evict, contention that does\n"
	      "not settle or a corrupt key gives 1.\n"
	      "\n"
	      "Options:\n"
	      "  --now MS          the time of the override (epoch ms; default:\n"
	      "                    the system clock)\n"
	      "  --json            print {\"table\",\"key\",\"remaining\","
	      "\"limit\",\n"
	      "                    \"resetAt\",\"retryAfterMs\"} on one line, and\n"
	      "                    \"blockedUntil\" (epoch ms) for a block\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

enum ti_set_what {
	TI_SET_NONE,
	TI_SET_REMAINING,
	TI_SET_BLOCK_FOR,
	TI_SET_BLOCK_UNTIL
};

struct ti_set_opts {
	bool json, have_now;
	double now;
	enum ti_set_what what;
	double value;
	double until; /* a block's end, once now is known */
};

static int
ti_set_time(const char *cmd, const char *opt, const char *value, double *out)
{
	if (!ti_parse_decimal(value, out) || *out < 0)
		return ti_usage_error(
			cmd, "--%s: '%s' is not a time in ms >= 0", opt, value);
	return TI_GO_ON;
}

/* --remaining, --block-for, --block-until: exactly one, once. */
static int
ti_set_action(struct ti_set_opts *s, const char *cmd, const char *name,
	      const char *value)
{
	if (s->what != TI_SET_NONE)
		return ti_usage_error(cmd, "give exactly one of --remaining, "
					   "--block-for and --block-until");
	if (strcmp(name, "remaining") == 0) {
		s->what = TI_SET_REMAINING;
		/* Its range is the table's: the library checks it, and the
		 * message names the limit. */
		if (!ti_parse_decimal(value, &s->value))
			return ti_usage_error(cmd,
					      "--remaining: '%s' is not a "
					      "number",
					      value);
		return TI_GO_ON;
	}
	if (strcmp(name, "block-for") == 0) {
		s->what = TI_SET_BLOCK_FOR;
		if (!ti_parse_decimal(value, &s->value) || !(s->value > 0))
			return ti_usage_error(cmd,
					      "--block-for: '%s' is not a "
					      "duration in ms > 0",
					      value);
		return TI_GO_ON;
	}
	s->what = TI_SET_BLOCK_UNTIL;
	return ti_set_time(cmd, name, value, &s->value);
}

static int
ti_set_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_set_opts *s = ctx;

	if (strcmp(name, "json") == 0) {
		s->json = true;
		return TI_GO_ON;
	}
	if (strcmp(name, "now") == 0) {
		s->have_now = true;
		return ti_now_opt(cmd, value, &s->now);
	}
	return ti_set_action(s, cmd, name, value);
}

/* What --remaining may be at most: the ceiling a decision reports, unrounded
 * (GCRA: the burst, a bucket: its capacity, a tokenBudget: whole tokens). */
static double
ti_capacity(const tkshm_policy *p)
{
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		return p->u.gcra.burst;
	case TKSHM_KIND_TOKEN_BUCKET:
		return p->u.token_bucket.capacity;
	case TKSHM_KIND_FIXED_WINDOW:
		return p->u.fixed_window.limit;
	case TKSHM_KIND_SLIDING_WINDOW:
		return p->u.sliding_window.limit;
	case TKSHM_KIND_SLIDING_LOG:
		return p->u.sliding_log.limit;
	case TKSHM_KIND_QUOTA:
		return p->u.quota.limit;
	case TKSHM_KIND_TOKEN_BUDGET:
		return floor(p->u.token_budget.budget);
	case TKSHM_KIND_LEAKY_BUCKET:
		/* The queue in cost-1 requests (src/algorithms/leaky_bucket.h). */
		return floor(p->u.leaky_bucket.max_queue_ms /
			     (1000 / p->u.leaky_bucket.rate_per_sec)) +
		       1;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		break; /* permits are not set: TKSHM_ENOTSUP */
	}
	return NAN;
}

/* The override itself. */
static int
ti_set_apply(tkshm_table *t, const unsigned char *key, size_t len,
	     const struct ti_set_opts *s)
{
	switch (s->what) {
	case TI_SET_REMAINING:
		return tkshm_set_remaining_at(t, key, len, s->value, s->now);
	default:
		return tkshm_block_at(t, key, len, s->until, s->now);
	}
}

/* Exit code for a failed override, after saying why. */
static int
ti_set_failed(tkshm_table *t, const char *path, const char *key,
	      const struct ti_set_opts *s, int rc)
{
	tkshm_stats st;
	double cap;

	tkshm_stats_get(t, &st);
	cap = ti_capacity(&st.policy);
	switch (rc) {
	case TKSHM_EINVAL:
		if (s->what != TI_SET_REMAINING)
			return ti_usage_error("set",
					      "the block must end after now");
		if (s->value >= 0 && s->value <= cap)
			return ti_usage_error("set",
					      "remaining must be a whole "
					      "number between 0 and the limit "
					      "%.17g for this table",
					      cap);
		return ti_usage_error(
			"set",
			"remaining must be between 0 and the limit %.17g", cap);
	case TKSHM_ENOTSUP:
		return ti_usage_error("set",
				      "blocking needs a gcra or tokenBucket "
				      "table; use --remaining 0");
	}
	ti_err("cannot set %s in %s: %s", key, path, tkshm_strerror(rc));
	switch (rc) {
	case TKSHM_EREADONLY:
	case TKSHM_EPERM:
		return TI_EXIT_OPEN;
	case TKSHM_EFULL:
	case TKSHM_EBUSY:
	case TKSHM_ECORRUPT:
		/* As replay reports a check the table cannot make; a corrupt
		 * key is for verify to explain. */
		return TI_EXIT_CHECK;
	default:
		return TI_EXIT_IO;
	}
}

/* The key's state after the override, as a cost-1 check sees it.  A key set
 * to its full limit was reset and has no slot: peek shows it then. */
static int
ti_set_state(tkshm_table *t, const unsigned char *key, size_t len, double now,
	     tkshm_decision *d)
{
	tkshm_entry e;
	int rc = tkshm_entry_get_at(t, key, len, now, &e);

	if (rc == TKSHM_OK && e.state_valid) {
		*d = e.peek;
		return TKSHM_OK;
	}
	return tkshm_peek_at(t, key, len, now, d);
}

/* A block's end is printed as well: a token bucket's decision tells when
 * its next token is due once it refills, not when the block ends.  It is
 * shown as the decision's times are, in whole ms: the first whole ms at
 * which the block is over (the system clock's `now` has fractions). */
static void
ti_set_print(const char *path, const char *key, const tkshm_decision *d,
	     const struct ti_set_opts *s)
{
	bool block = s->what != TI_SET_REMAINING;
	double until = ceil(s->until);
	struct ti_json j;

	if (!s->json) {
		printf("set %s: ", key);
		if (block)
			printf("blocked until %.0f; ", until);
		printf("remaining %" PRId64 " of %" PRId64 ", resetAt %" PRId64
		       ", retryAfterMs %" PRId64 "\n",
		       d->remaining, d->limit, d->reset_at, d->retry_after_ms);
		return;
	}
	ti_json_init(&j, stdout, false);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", path);
	ti_json_string(&j, "key", key);
	ti_json_num(&j, "remaining", (double)d->remaining);
	ti_json_num(&j, "limit", (double)d->limit);
	ti_json_num(&j, "resetAt", (double)d->reset_at);
	ti_json_num(&j, "retryAfterMs", (double)d->retry_after_ms);
	if (block)
		ti_json_num(&j, "blockedUntil", until);
	ti_json_end_obj(&j);
}

/* Opens the table, overrides, reads the key back; returns the exit code. */
static int
ti_set_run(const char *path, const unsigned char *key, size_t len,
	   const struct ti_set_opts *s)
{
	char full[4200], text[TI_KEY_TEXT_MAX];
	tkshm_decision d;
	tkshm_table *t;
	int k, rc;

	if ((k = ti_open_rdwr(&path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	ti_key_escape(key, len, text, sizeof text);
	rc = ti_set_apply(t, key, len, s);
	if (rc != TKSHM_OK) {
		k = ti_set_failed(t, path, text, s, rc);
		tkshm_close(t);
		return k;
	}
	rc = ti_set_state(t, key, len, s->now, &d);
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_err("%s was set in %s, but cannot be read back: %s", text,
		       path, tkshm_strerror(rc));
		/* Another writer scribbled on the key after our write: like a
		 * refused write, a key that reads as corrupt (or will not
		 * settle) is for verify to explain. */
		return rc == TKSHM_ECORRUPT || rc == TKSHM_EBUSY ?
			       TI_EXIT_CHECK :
			       TI_EXIT_IO;
	}
	ti_set_print(path, text, &d, s);
	return ti_finish_stdout(TI_EXIT_OK);
}

int
ti_cmd_set(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,
		TI_OPT_FLAG("json"),
		TI_OPT_VALUE("now"),
		TI_OPT_VALUE("remaining"),
		TI_OPT_VALUE("block-for"),
		TI_OPT_VALUE("block-until"),
		TI_OPT_END,
	};
	static const char *const names[] = { "PATH", "KEY", NULL };
	const char *v[2];
	struct ti_operands ops = { .names = names, .min = 2, .max = 2, .v = v };
	struct ti_set_opts so = { 0 };
	struct ti_cmdline c =
		TI_CMDLINE("set", ti_usage_set, opts, ti_set_opt, &so);
	unsigned char key[TKSHM_KEY_MAX];
	size_t len;
	int k;

	if ((k = ti_cmdline_operands(&c, &ops, argc, argv)) != TI_GO_ON)
		return k;
	if (so.what == TI_SET_NONE)
		return ti_usage_error("set",
				      "give one of --remaining N, --block-for "
				      "MS and --block-until EPOCH_MS");
	if (!ti_key_unescape("set", v[1], key, &len))
		return TI_EXIT_USAGE;
	if (!so.have_now)
		so.now = tkshm_now_ms();
	so.until = so.what == TI_SET_BLOCK_FOR ? so.now + so.value : so.value;
	/* Checked here, before the table is opened, to name the option. */
	if (so.what == TI_SET_BLOCK_UNTIL && !(so.value > so.now))
		return ti_usage_error("set",
				      "--block-until %.17g is not after now "
				      "(%.17g)",
				      so.value, so.now);
	return ti_set_run(v[0], key, len, &so);
}
