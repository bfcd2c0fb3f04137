/*
 * cmd_list.c - `tkshm-inspect list PATH [--where EXPR]... [--sort FIELD]
 * [--asc|--desc] [--limit N] [--idle] [--now MS] [--json]`: the keys of a
 * table with their decoded state, filtered and sorted, through a read-only
 * mapping and without a lock (tkshm_entry_next_at).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

/* More filters than anybody types; each holds a whole key. */
#define TI_WHERE_MAX 32

void
ti_usage_list(FILE *f)
{
	fputs("Usage: " TI_PROG " list PATH [--where EXPR]... [--sort FIELD]\n"
	      "                   [--asc|--desc] [--limit N] [--idle]\n"
	      "                   [--now MS] [--json]\n"
	      "\n"
	      "Maps the table PATH read-only and lists its live keys with what\n"
	      "a cost-1 check would see now: remaining, limit, reset-at (epoch\n"
	      "ms and relative), retry-after, debt (ms until the key is as good\n"
	      "as new), denials since the key was inserted and its position in\n"
	      "its probe window.  No lock is taken and nothing is written.\n"
	      "\n"
	      "The columns follow the table's kind.  A leakyBucket table shows\n"
	      "QUEUE-WAIT (ms a request reserved now would wait) where others\n"
	      "show DEBT.  A concurrency table shows HELD (permits held / the\n"
	      "limit in force), REMAINING, DENIALS (refused acquires), PROBE,\n"
	      "STATE and HOLDERS: the processes holding permits, by pid, as\n"
	      "PID\u00d7PERMITS (the first 8; \",+N more\" after them).  An\n"
	      "adaptiveConcurrency table adds ADAPTIVE-LIMIT (the limit's value;\n"
	      "HELD shows its floor) and RTT-NOLOAD (the least latency of the\n"
	      "current and previous window; - before the first sample).  Holders\n"
	      "are shown as the table names them: a process that died holding\n"
	      "a permit stays listed until its permits are taken back.\n"
	      "\n"
	      "A key is shown escaped (bytes other than 0x21..0x7e as \\xNN, a\n"
	      "backslash as \\\\), as show, reset and set take it.  The table\n"
	      "keeps only a key's first 19 bytes: a longer key is shown as\n"
	      "those followed by \"...\".  A key without a readable label is\n"
	      "shown as '?' and its fingerprint.  A key whose stored state is\n"
	      "corrupt is always listed, first, as \"corrupt\" (run verify).\n"
	      "\n"
	      "Options:\n"
	      "  --where EXPR      keep keys where FIELD OP VALUE holds; several\n"
	      "                    --where must all hold.  Numeric fields:\n"
	      "                    remaining, limit, debt, denials, resetAt\n"
	      "                    (or reset), retryAfter, probe, spendable,\n"
	      "                    held (permits), holders (processes);\n"
	      "                    operators < <= > >= = !=.  Keys: key=TEXT\n"
	      "                    (exact), key!=TEXT, key^=TEXT (prefix, at\n"
	      "                    most 19 bytes), TEXT escaped as shown.\n"
	      "                    e.g. --where 'remaining<1' --where "
	      "'debt>5000'\n"
	      "  --sort FIELD      order by a numeric field or key (default\n"
	      "                    debt; held for a concurrency table);\n"
	      "                    numbers descending, keys ascending\n"
	      "  --asc, --desc     sort ascending or descending (default:\n"
	      "                    descending, ascending for key)\n"
	      "  --limit N         show at most N keys (after sorting)\n"
	      "  --idle            also list idle keys (as good as absent)\n"
	      "  --now MS          decode states at this time (epoch ms;\n"
	      "                    default: the system clock)\n"
	      "  --json            print one JSON object: table, now, keys,\n"
	      "                    shown, matched (before --limit), live,\n"
	      "                    idle, corrupt.  Each key: key (escaped;\n"
	      "                    null without a label), keyLength (255:\n"
	      "                    255 or more), keyTruncated, fingerprint,\n"
	      "                    slot, probe, misplaced, stateValid,\n"
	      "                    denials, idle, remaining, limit, resetAt,\n"
	      "                    retryAfterMs, allowed, debtMs, spendableNow,\n"
	      "                    nextReplenishAt, fullAt (null when the\n"
	      "                    state is corrupt); leakyBucket adds\n"
	      "                    queueWaitMs; concurrency adds permitsHeld,\n"
	      "                    holdersCount and holders ([{pid, permits}]);\n"
	      "                    adaptiveConcurrency also adaptiveLimit and\n"
	      "                    rttNoLoadMs (null before the first sample)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

struct ti_list_opts {
	struct ti_where where[TI_WHERE_MAX];
	size_t nwhere;
	enum ti_field sort;
	bool have_sort; /* --sort given (else the kind's default) */
	int dir;	/* 0: the field's default, 1 ascending, -1 descending */
	uint64_t limit; /* 0: no limit */
	bool idle, json, have_now;
	double now;
};

static int
ti_list_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_list_opts *o = ctx;

	if (strcmp(name, "where") == 0) {
		if (o->nwhere == TI_WHERE_MAX)
			return ti_usage_error(cmd, "more than %d --where",
					      TI_WHERE_MAX);
		if (!ti_where_parse(cmd, value, &o->where[o->nwhere]))
			return TI_EXIT_USAGE;
		o->nwhere++;
	} else if (strcmp(name, "sort") == 0) {
		if (!ti_field_parse(value, &o->sort))
			return ti_usage_error(cmd, "--sort: unknown field '%s'",
					      value);
		o->have_sort = true;
	} else if (strcmp(name, "asc") == 0 || strcmp(name, "desc") == 0) {
		o->dir = name[0] == 'a' ? 1 : -1;
	} else if (strcmp(name, "limit") == 0) {
		if (!ti_parse_u64(cmd, "limit", value, &o->limit))
			return TI_EXIT_USAGE;
		if (o->limit == 0)
			return ti_usage_error(cmd,
					      "--limit must be at least 1");
	} else if (strcmp(name, "idle") == 0) {
		o->idle = true;
	} else if (strcmp(name, "json") == 0) {
		o->json = true;
	} else {
		o->have_now = true;
		return ti_now_opt(cmd, value, &o->now);
	}
	return TI_GO_ON;
}

static bool
ti_list_keep(const struct ti_list_opts *o, const tkshm_entry *e)
{
	if (e->state_valid && e->idle && !o->idle)
		return false;
	for (size_t i = 0; i < o->nwhere; i++)
		if (!ti_where_match(&o->where[i], e))
			return false;
	return true;
}

/* --- text ---------------------------------------------------------------- */

enum {
	TI_COL_KEY,
	TI_COL_REMAINING,
	TI_COL_LIMIT,
	TI_COL_RESET_AT,
	TI_COL_IN,
	TI_COL_RETRY,
	TI_COL_DEBT,
	TI_COL_DENIALS,
	TI_COL_PROBE,
	TI_COL_STATE,
	/* concurrency kinds */
	TI_COL_HELD,
	TI_COL_ADAPTIVE,
	TI_COL_RTT,
	TI_COL_HOLDERS,
	TI_NCOLS
};

static const char *const ti_col_names[TI_NCOLS] = {
	"KEY",	       "REMAINING",	 "LIMIT",      "RESET-AT", "IN",
	"RETRY-AFTER", "DEBT",		 "DENIALS",    "PROBE",	   "STATE",
	"HELD",	       "ADAPTIVE-LIMIT", "RTT-NOLOAD", "HOLDERS",
};

/* The columns a table's kind shows, in order.  A permit has no time at
 * which it comes back (reset-at is now, retry-after 0, debt 0), so a
 * concurrency table shows who holds its permits instead; the holders go
 * last, as the one column whose width has no bound worth aligning to. */
static const int ti_cols_limiter[] = {
	TI_COL_KEY,   TI_COL_REMAINING, TI_COL_LIMIT, TI_COL_RESET_AT,
	TI_COL_IN,    TI_COL_RETRY,	TI_COL_DEBT,  TI_COL_DENIALS,
	TI_COL_PROBE, TI_COL_STATE,
};
static const int ti_cols_conc[] = {
	TI_COL_KEY,   TI_COL_HELD,  TI_COL_REMAINING, TI_COL_DENIALS,
	TI_COL_PROBE, TI_COL_STATE, TI_COL_HOLDERS,
};
static const int ti_cols_adaptive[] = {
	TI_COL_KEY,	 TI_COL_HELD,  TI_COL_REMAINING,
	TI_COL_ADAPTIVE, TI_COL_RTT,   TI_COL_DENIALS,
	TI_COL_PROBE,	 TI_COL_STATE, TI_COL_HOLDERS,
};

struct ti_cols {
	const int *v;
	size_t n;
	/* leakyBucket: DEBT is the queue's wait (leaky_bucket.h: the debt
	 * of a departure time is how long a request reserved now waits). */
	const char *debt_name;
};

static struct ti_cols
ti_cols_of(tkshm_kind kind)
{
	struct ti_cols c = { ti_cols_limiter,
			     sizeof ti_cols_limiter / sizeof(int), "DEBT" };

	if (kind == TKSHM_KIND_LEAKY_BUCKET) {
		c.debt_name = "QUEUE-WAIT";
	} else if (kind == TKSHM_KIND_CONCURRENCY) {
		c.v = ti_cols_conc;
		c.n = sizeof ti_cols_conc / sizeof(int);
	} else if (kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY) {
		c.v = ti_cols_adaptive;
		c.n = sizeof ti_cols_adaptive / sizeof(int);
	}
	return c;
}

/* TI_HOLDERS_TEXT: the widest cell. */
#define TI_CELL TI_HOLDERS_TEXT

/* The cells of one row (every column, whichever the kind shows); those of
 * a corrupt state are "-". */
static void
ti_list_cells(const tkshm_entry *e, double now, char c[TI_NCOLS][TI_CELL])
{
	ti_entry_key_text(e, c[TI_COL_KEY], TI_CELL);
	snprintf(c[TI_COL_DENIALS], TI_CELL, "%" PRIu64, e->denials);
	snprintf(c[TI_COL_PROBE], TI_CELL, "%" PRIu32, e->probe);
	snprintf(c[TI_COL_STATE], TI_CELL, "%s%s", ti_entry_state(e),
		 e->misplaced ? ",misplaced" : "");
	if (!e->state_valid) {
		for (int i = 0; i < TI_NCOLS; i++)
			if (i != TI_COL_KEY && i != TI_COL_DENIALS &&
			    i != TI_COL_PROBE && i != TI_COL_STATE)
				snprintf(c[i], TI_CELL, "-");
		return;
	}
	snprintf(c[TI_COL_REMAINING], TI_CELL, "%" PRId64, e->peek.remaining);
	snprintf(c[TI_COL_LIMIT], TI_CELL, "%" PRId64, e->peek.limit);
	snprintf(c[TI_COL_RESET_AT], TI_CELL, "%" PRId64, e->peek.reset_at);
	ti_rel_time((double)e->peek.reset_at, now, c[TI_COL_IN], TI_CELL);
	snprintf(c[TI_COL_RETRY], TI_CELL, "%" PRId64, e->peek.retry_after_ms);
	snprintf(c[TI_COL_DEBT], TI_CELL, "%.0f", e->debt_ms);
	snprintf(c[TI_COL_HELD], TI_CELL, "%" PRIu32 "/%" PRId64,
		 e->permits_held, e->peek.limit);
	/* Enough digits to see it move between samples, not all 17. */
	snprintf(c[TI_COL_ADAPTIVE], TI_CELL, "%.2f", e->adaptive_limit);
	if (e->rtt_noload_ms > 0)
		snprintf(c[TI_COL_RTT], TI_CELL, "%.1fms", e->rtt_noload_ms);
	else
		snprintf(c[TI_COL_RTT], TI_CELL, "-");
	ti_entry_holders_text(e, c[TI_COL_HOLDERS], TI_CELL);
}

/* Pads to `w` terminal columns, not bytes: a holder's "×" is two bytes. */
static void
ti_list_cell(const char *s, int w, bool left)
{
	int pad = w - ti_text_width(s);

	if (!left)
		printf("%*s", pad > 0 ? pad : 0, "");
	fputs(s, stdout);
	if (left)
		printf("%*s", pad > 0 ? pad : 0, "");
}

static void
ti_list_row(const struct ti_cols *cols, char c[TI_NCOLS][TI_CELL], const int *w)
{
	for (size_t k = 0; k < cols->n; k++) {
		int i = cols->v[k];
		/* Words are left-aligned: the key, the state, the holders. */
		bool left = i == TI_COL_KEY || i == TI_COL_STATE ||
			    i == TI_COL_HOLDERS;

		if (k)
			fputs("  ", stdout);
		/* The last column is not padded: no trailing blanks. */
		ti_list_cell(c[i], k + 1 == cols->n ? 0 : w[i], left);
	}
	putchar('\n');
}

static void
ti_list_text(const tkshm_entry *v, size_t n, const struct ti_entries *es,
	     size_t matched, const struct ti_list_opts *o, tkshm_kind kind)
{
	char c[TI_NCOLS][TI_CELL], rc[TI_NCOLS][TI_CELL];
	struct ti_cols cols = ti_cols_of(kind);
	int w[TI_NCOLS];

	/* Two passes: widths first, so millions of rows need no cells
	 * kept in memory. */
	for (int i = 0; i < TI_NCOLS; i++)
		snprintf(c[i], TI_CELL, "%s", ti_col_names[i]);
	snprintf(c[TI_COL_DEBT], TI_CELL, "%s", cols.debt_name);
	for (int i = 0; i < TI_NCOLS; i++)
		w[i] = ti_text_width(c[i]);
	for (size_t r = 0; r < n; r++) {
		ti_list_cells(&v[r], o->now, rc);
		for (int i = 0; i < TI_NCOLS; i++)
			if (ti_text_width(rc[i]) > w[i])
				w[i] = ti_text_width(rc[i]);
	}
	ti_list_row(&cols, c, w);
	for (size_t r = 0; r < n; r++) {
		ti_list_cells(&v[r], o->now, rc);
		ti_list_row(&cols, rc, w);
	}
	printf("%zu key%s shown of %" PRIu64 " live, %" PRIu64 " idle", n,
	       n == 1 ? "" : "s", es->live, es->idle);
	if (es->corrupt)
		printf(", %" PRIu64 " corrupt", es->corrupt);
	if (o->nwhere || matched != n)
		printf("; %zu matched", matched);
	putchar('\n');
}

/* --- JSON ---------------------------------------------------------------- */

static void
ti_list_json(const char *path, const tkshm_entry *v, size_t n,
	     const struct ti_entries *es, size_t matched, double now,
	     tkshm_kind kind)
{
	struct ti_json j;

	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", path);
	ti_json_num(&j, "now", now);
	/* One key a line: readable, and a million keys stay greppable. */
	ti_json_begin_list(&j, "keys");
	for (size_t i = 0; i < n; i++) {
		ti_json_begin_row(&j, NULL);
		ti_entry_json(&j, &v[i], kind, NULL, 0);
		ti_json_end_obj(&j);
	}
	ti_json_end_arr(&j);
	ti_json_u64(&j, "shown", n);
	ti_json_u64(&j, "matched", matched);
	ti_json_u64(&j, "live", es->live);
	ti_json_u64(&j, "idle", es->idle);
	ti_json_u64(&j, "corrupt", es->corrupt);
	ti_json_end_obj(&j);
}

int
ti_cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,	      TI_OPT_VALUE("where"),
		TI_OPT_VALUE("sort"), TI_OPT_FLAG("asc"),
		TI_OPT_FLAG("desc"),  TI_OPT_VALUE("limit"),
		TI_OPT_FLAG("idle"),  TI_OPT_VALUE("now"),
		TI_OPT_FLAG("json"),  TI_OPT_END,
	};
	struct ti_list_opts lo = { .sort = TI_F_DEBT };
	struct ti_cmdline c =
		TI_CMDLINE("list", ti_usage_list, opts, ti_list_opt, &lo);
	struct ti_entries es = { 0 };
	tkshm_table *t;
	tkshm_kind kind;
	char full[4200];
	size_t m = 0, shown;
	bool desc;
	int k, rc;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	if (!lo.have_now)
		lo.now = tkshm_now_ms();
	kind = ti_table_kind(t);
	/* Permits have no debt (nothing frees them but a release): the
	 * busiest keys are those holding the most. */
	if (!lo.have_sort && ti_kind_has_permits(kind))
		lo.sort = TI_F_HELD;
	for (size_t i = 0; i < lo.nwhere; i++)
		ti_where_resolve(&lo.where[i], t, lo.now);
	rc = ti_entries_collect(t, lo.now, &es);
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_entries_free(&es);
		ti_err("cannot read the keys of %s: %s", c.path,
		       tkshm_strerror(rc));
		return TI_EXIT_IO;
	}
	/* Filter in place, then sort what is left. */
	for (size_t i = 0; i < es.n; i++)
		if (ti_list_keep(&lo, &es.v[i]))
			es.v[m++] = es.v[i];
	desc = lo.dir ? lo.dir < 0 : lo.sort != TI_F_KEY;
	ti_entries_sort(es.v, m, lo.sort, desc);
	shown = lo.limit && lo.limit < m ? (size_t)lo.limit : m;
	if (lo.json)
		ti_list_json(c.path, es.v, shown, &es, m, lo.now, kind);
	else
		ti_list_text(es.v, shown, &es, m, &lo, kind);
	ti_entries_free(&es);
	return ti_finish_stdout(TI_EXIT_OK);
}
