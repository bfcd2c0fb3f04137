/*
 * cmd_show.c - `tkshm-inspect show PATH KEY [--now MS] [--json]`: one key
 * with every field list shows plus its forecast, through a read-only
 * mapping (tkshm_entry_get_at).  A key without a slot is reported (exit 1)
 * with what a check would see of it (tkshm_peek_at: remembered debt).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

/* tkshm_entry_get_at's TKSHM_EBUSY means the key's record kept moving
 * under writers; a few more looks usually catch it still. */
#define TI_SHOW_TRIES 8

void
ti_usage_show(FILE *f)
{
	fputs("Usage: " TI_PROG " show PATH KEY [--now MS] [--json]\n"
	      "\n"
	      "Maps the table PATH read-only and prints the key KEY, one\n"
	      "\"name: value\" line a field: its slot, fingerprint and probe\n"
	      "position, the label the table keeps (its first 19 bytes), its\n"
	      "state (live, idle or corrupt), what a cost-1 check would see\n"
	      "now (allowed, remaining, limit, reset-at, retry-after), its\n"
	      "debt, denials since it was inserted, and its forecast for\n"
	      "cost 1 (spendable now, next replenish at, full at).\n"
	      "\n"
	      "A key of a leakyBucket table also shows its queue wait (ms a\n"
	      "request reserved now would wait).  A key of a concurrency table\n"
	      "shows the permits held and the processes holding them, one\n"
	      "\"holder: pid PID, N permits\" line each by ascending pid (the\n"
	      "first 8), as the table names them: a holder that died stays\n"
	      "until its permits are taken back.  An adaptiveConcurrency key\n"
	      "adds its limit's value (the limit shown is its floor) and its\n"
	      "rtt no-load (the least latency of the current and previous\n"
	      "window).\n"
	      "\n"
	      "KEY is written as list shows it: bytes 0x21..0x7e as they are,\n"
	      "a backslash as \\\\, any byte as \\xNN (a space is \\x20).\n"
	      "\n"
	      "A key the table has no slot for is reported as \"key not in the\n"
	      "table\" (exit 1), after what a check would see of it now\n"
	      "(an evicted key's remembered debt shows there).  A key whose\n"
	      "stored state is corrupt also exits 1.\n"
	      "\n"
	      "Options:\n"
	      "  --now MS          decode the state at this time (epoch ms;\n"
	      "                    default: the system clock)\n"
	      "  --json            print one JSON object: table, now, inTable,\n"
	      "                    then list's fields, the kind's included\n"
	      "                    (or, for an absent key, key, keyLength and\n"
	      "                    peek)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

struct ti_show {
	const char *path, *key_text;
	unsigned char key[TKSHM_KEY_MAX];
	size_t key_len;
	char key_canon[TI_KEY_TEXT_MAX]; /* the key escaped back */
	bool json, have_now;
	double now;
	tkshm_kind kind; /* the table's */
};

static int
ti_show_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_show *s = ctx;

	if (strcmp(name, "json") == 0) {
		s->json = true;
		return TI_GO_ON;
	}
	s->have_now = true;
	return ti_now_opt(cmd, value, &s->now);
}

static int
ti_show_operand(void *ctx, const char *cmd, const char *v)
{
	struct ti_show *s = ctx;

	if (!s->path) {
		if (v[0] == '\0')
			return ti_usage_error(cmd, "PATH is empty");
		s->path = v;
	} else if (!s->key_text) {
		s->key_text = v;
	} else {
		return ti_usage_error(cmd, "extra operand '%s'", v);
	}
	return TI_GO_ON;
}

/* PATH KEY and the options; TI_GO_ON or the exit code to end with. */
static int
ti_show_args(struct ti_show *s, int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP, TI_OPT_FLAG("json"),
					      TI_OPT_VALUE("now"), TI_OPT_END };
	struct ti_cmdline c =
		TI_CMDLINE("show", ti_usage_show, opts, ti_show_opt, s);
	int rc;

	if ((rc = ti_cmdline_scan(&c, argc, argv, ti_show_operand, s)) !=
	    TI_GO_ON)
		return rc;
	if (!s->path)
		return ti_usage_error("show", "missing PATH");
	if (!s->key_text)
		return ti_usage_error("show", "missing KEY");
	if (!ti_key_unescape("show", s->key_text, s->key, &s->key_len))
		return TI_EXIT_USAGE;
	ti_key_escape(s->key, s->key_len, s->key_canon, sizeof s->key_canon);
	return TI_GO_ON;
}

/* "name: 1700000003000 (+3.0s)" */
static void
ti_show_time(const char *name, int64_t at, double now)
{
	char rel[32];

	ti_rel_time((double)at, now, rel, sizeof rel);
	printf("%s: %" PRId64 " (%s)\n", name, at, rel);
}

static void
ti_show_decision(const tkshm_decision *d, double now)
{
	printf("allowed: %s\n", d->allowed ? "yes" : "no");
	printf("remaining: %" PRId64 "\n", d->remaining);
	printf("limit: %" PRId64 "\n", d->limit);
	ti_show_time("reset at", d->reset_at, now);
	printf("retry after: %" PRId64 " ms\n", d->retry_after_ms);
}

/* table, now and key: the first lines, present or not. */
static void
ti_show_head(const struct ti_show *s)
{
	printf("table: %s\n", s->path);
	fputs("now: ", stdout);
	/* The shortest form that reads back: --now 1000.5 stays 1000.5. */
	ti_json_double(stdout, s->now);
	printf("\nkey: %s\n", s->key_canon);
}

/* What the table's kind adds to a key with a valid state. */
static void
ti_show_kind(const struct ti_show *s, const tkshm_entry *e)
{
	uint32_t listed = e->holders_n < TKSHM_ENTRY_HOLDERS ?
				  e->holders_n :
				  TKSHM_ENTRY_HOLDERS;

	if (s->kind == TKSHM_KIND_LEAKY_BUCKET) {
		/* The debt of a departure time (leaky_bucket.h). */
		fputs("queue wait: ", stdout);
		ti_json_double(stdout, e->debt_ms);
		fputs(" ms\n", stdout);
		return;
	}
	if (!ti_kind_has_permits(s->kind))
		return;
	printf("permits held: %" PRIu32 "\n", e->permits_held);
	printf("holders: %" PRIu32 " process%s\n", e->holders_n,
	       e->holders_n == 1 ? "" : "es");
	for (uint32_t i = 0; i < listed; i++)
		printf("holder: pid %" PRId32 ", %" PRIu32 " permit%s\n",
		       e->holders[i].pid, e->holders[i].permits,
		       e->holders[i].permits == 1 ? "" : "s");
	if (e->holders_n > listed)
		printf("holders not listed: %" PRIu32 "\n",
		       e->holders_n - listed);
	if (s->kind != TKSHM_KIND_ADAPTIVE_CONCURRENCY)
		return;
	fputs("adaptive limit: ", stdout);
	ti_json_double(stdout, e->adaptive_limit);
	if (e->rtt_noload_ms > 0) {
		fputs("\nrtt no-load: ", stdout);
		ti_json_double(stdout, e->rtt_noload_ms);
		fputs(" ms\n", stdout);
	} else {
		fputs("\nrtt no-load: none yet\n", stdout);
	}
}

static void
ti_show_text(const struct ti_show *s, const tkshm_entry *e)
{
	char label[TI_ENTRY_KEY_TEXT];

	ti_show_head(s);
	printf("key length: %zu\n", s->key_len);
	printf("in table: yes\n");
	if (e->key_len) {
		ti_entry_key_text(e, label, sizeof label);
		printf("label: %s\n", label);
	} else {
		/* An insert racing this read, or a writer killed while it
		 * wrote the label. */
		printf("label: none\n");
	}
	printf("fingerprint: %016" PRIx64 "\n", e->fingerprint);
	printf("slot: %" PRIu64 "\n", e->slot);
	printf("probe: %" PRIu32 "%s\n", e->probe,
	       e->misplaced ? " (misplaced: outside its window)" : "");
	printf("state: %s\n", ti_entry_state(e));
	printf("denials: %" PRIu64 "\n", e->denials);
	if (!e->state_valid)
		return;
	ti_show_decision(&e->peek, s->now);
	fputs("debt: ", stdout);
	ti_json_double(stdout, e->debt_ms);
	fputs(" ms\n", stdout);
	printf("spendable now: %" PRId64 "\n", e->forecast.spendable_now);
	ti_show_time("next replenish at", e->forecast.next_replenish_at,
		     s->now);
	ti_show_time("full at", e->forecast.full_at, s->now);
	ti_show_kind(s, e);
}

static void
ti_show_json(const struct ti_show *s, const tkshm_entry *e)
{
	struct ti_json j;

	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", s->path);
	ti_json_num(&j, "now", s->now);
	ti_json_bool(&j, "inTable", true);
	ti_entry_json(&j, e, s->kind, s->key_canon, s->key_len);
	ti_json_end_obj(&j);
}

/* The key has no slot: what a check would see of it, then exit 1. */
static int
ti_show_absent(const struct ti_show *s, tkshm_table *t)
{
	tkshm_decision d;
	struct ti_json j;
	int rc = tkshm_peek_at(t, s->key, s->key_len, s->now, &d);

	if (s->json) {
		ti_json_init(&j, stdout, true);
		ti_json_begin_obj(&j, NULL);
		ti_json_string(&j, "table", s->path);
		ti_json_num(&j, "now", s->now);
		ti_json_bool(&j, "inTable", false);
		ti_json_string(&j, "key", s->key_canon);
		ti_json_u64(&j, "keyLength", s->key_len);
		if (rc == TKSHM_OK) {
			/* ThrottleKit's decision object, in its order. */
			ti_json_begin_row(&j, "peek");
			ti_json_bool(&j, "allowed", d.allowed);
			ti_json_i64(&j, "limit", d.limit);
			ti_json_i64(&j, "remaining", d.remaining);
			ti_json_i64(&j, "resetAt", d.reset_at);
			ti_json_i64(&j, "retryAfterMs", d.retry_after_ms);
			ti_json_end_obj(&j);
		} else {
			ti_json_null(&j, "peek");
		}
		ti_json_end_obj(&j);
	} else {
		ti_show_head(s);
		printf("key length: %zu\n", s->key_len);
		printf("in table: no\n");
		if (rc == TKSHM_OK) {
			ti_show_decision(&d, s->now);
			printf("remembered debt: %s\n",
			       d.remaining < d.limit ? "yes" : "no");
		} else {
			printf("peek: %s\n", tkshm_strerror(rc));
		}
	}
	rc = ti_finish_stdout(TI_EXIT_CHECK);
	ti_err("show: key not in the table: %s", s->key_canon);
	return rc;
}

int
ti_cmd_show(int argc, char **argv)
{
	struct ti_show s = { 0 };
	tkshm_table *t;
	tkshm_entry e;
	char full[4200];
	int k, rc = TKSHM_EBUSY;

	if ((k = ti_show_args(&s, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&s.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	if (!s.have_now)
		s.now = tkshm_now_ms();
	s.kind = ti_table_kind(t);
	for (int i = 0; i < TI_SHOW_TRIES && rc == TKSHM_EBUSY; i++)
		rc = tkshm_entry_get_at(t, s.key, s.key_len, s.now, &e);
	if (rc == TKSHM_ENOENT) {
		k = ti_show_absent(&s, t);
		tkshm_close(t);
		return k;
	}
	tkshm_close(t);
	/* A corrupt key comes back filled (state_valid false): shown below,
	 * with the corrupt state's exit status. */
	if (rc != TKSHM_OK && rc != TKSHM_ECORRUPT) {
		/* As replay, reset and set report a check that did not
		 * settle (TKSHM_EBUSY) or a corrupt key. */
		ti_err("show: cannot read key %s of %s: %s", s.key_canon,
		       s.path, tkshm_strerror(rc));
		return TI_EXIT_CHECK;
	}
	if (s.json)
		ti_show_json(&s, &e);
	else
		ti_show_text(&s, &e);
	if (!e.state_valid) {
		k = ti_finish_stdout(TI_EXIT_CHECK);
		ti_err("show: the stored state of key %s is corrupt (run "
		       "verify)",
		       s.key_canon);
		return k;
	}
	return ti_finish_stdout(TI_EXIT_OK);
}
