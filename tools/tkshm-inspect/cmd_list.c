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
	      "A key is shown escaped (bytes other than 0x21..0x7e as \\xNN, a\n"
	      "backslash as \\\\), as show, reset and set take it.  The table\n"
	      "keeps only a key's first 23 bytes: a longer key is shown as\n"
	      "those followed by \"...\".  A key without a readable label is\n"
	      "shown as '?' and its fingerprint.  A key whose stored state is\n"
	      "corrupt is always listed, first, as \"corrupt\" (run verify).\n"
	      "\n"
	      "Options:\n"
	      "  --where EXPR      keep keys where FIELD OP VALUE holds; several\n"
	      "                    --where must all hold.  Numeric fields:\n"
	      "                    remaining, limit, debt, denials, resetAt\n"
	      "                    (or reset), retryAfter, probe, spendable;\n"
	      "                    operators < <= > >= = !=.  Keys: key=TEXT\n"
	      "                    (exact), key!=TEXT, key^=TEXT (prefix, at\n"
	      "                    most 23 bytes), TEXT escaped as shown.\n"
	      "                    e.g. --where 'remaining<1' --where "
	      "'debt>5000'\n"
	      "  --sort FIELD      order by a numeric field or key (default\n"
	      "                    debt); numbers descending, keys ascending\n"
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
	      "                    state is corrupt)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

struct ti_list_opts {
	struct ti_where where[TI_WHERE_MAX];
	size_t nwhere;
	enum ti_field sort;
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
	TI_NCOLS
};

static const char *const ti_col_names[TI_NCOLS] = {
	"KEY",	       "REMAINING", "LIMIT",   "RESET-AT", "IN",
	"RETRY-AFTER", "DEBT",	    "DENIALS", "PROBE",	   "STATE",
};

#define TI_CELL 128

/* The cells of one row; those of a corrupt state are "-". */
static void
ti_list_cells(const tkshm_entry *e, double now, char c[TI_NCOLS][TI_CELL])
{
	ti_entry_key_text(e, c[TI_COL_KEY], TI_CELL);
	snprintf(c[TI_COL_DENIALS], TI_CELL, "%" PRIu64, e->denials);
	snprintf(c[TI_COL_PROBE], TI_CELL, "%" PRIu32, e->probe);
	snprintf(c[TI_COL_STATE], TI_CELL, "%s%s", ti_entry_state(e),
		 e->misplaced ? ",misplaced" : "");
	if (!e->state_valid) {
		for (int i = TI_COL_REMAINING; i <= TI_COL_DEBT; i++)
			snprintf(c[i], TI_CELL, "-");
		return;
	}
	snprintf(c[TI_COL_REMAINING], TI_CELL, "%" PRId64, e->peek.remaining);
	snprintf(c[TI_COL_LIMIT], TI_CELL, "%" PRId64, e->peek.limit);
	snprintf(c[TI_COL_RESET_AT], TI_CELL, "%" PRId64, e->peek.reset_at);
	ti_rel_time((double)e->peek.reset_at, now, c[TI_COL_IN], TI_CELL);
	snprintf(c[TI_COL_RETRY], TI_CELL, "%" PRId64, e->peek.retry_after_ms);
	snprintf(c[TI_COL_DEBT], TI_CELL, "%.0f", e->debt_ms);
}

static void
ti_list_row(char c[TI_NCOLS][TI_CELL], const int *w)
{
	for (int i = 0; i < TI_NCOLS; i++) {
		/* The key and the state are words: left-aligned. */
		bool left = i == TI_COL_KEY || i == TI_COL_STATE;

		printf(i ? "  %*s" : "%*s", left ? -w[i] : w[i], c[i]);
	}
	putchar('\n');
}

static void
ti_list_text(const tkshm_entry *v, size_t n, const struct ti_entries *es,
	     size_t matched, const struct ti_list_opts *o)
{
	char c[TI_NCOLS][TI_CELL];
	int w[TI_NCOLS];

	/* Two passes: widths first, so millions of rows need no cells
	 * kept in memory. */
	for (int i = 0; i < TI_NCOLS; i++) {
		w[i] = (int)strlen(ti_col_names[i]);
		snprintf(c[i], TI_CELL, "%s", ti_col_names[i]);
	}
	for (size_t r = 0; r < n; r++) {
		char rc[TI_NCOLS][TI_CELL];

		ti_list_cells(&v[r], o->now, rc);
		for (int i = 0; i < TI_NCOLS; i++)
			if ((int)strlen(rc[i]) > w[i])
				w[i] = (int)strlen(rc[i]);
	}
	/* The last column is not padded: no trailing blanks. */
	w[TI_COL_STATE] = 0;
	ti_list_row(c, w);
	for (size_t r = 0; r < n; r++) {
		ti_list_cells(&v[r], o->now, c);
		ti_list_row(c, w);
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
	     const struct ti_entries *es, size_t matched, double now)
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
		ti_entry_json(&j, &v[i], NULL, 0);
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
	static const struct ti_opt opts[] = {
		{ "help", false }, { "where", true }, { "sort", true },
		{ "asc", false },  { "desc", false }, { "limit", true },
		{ "idle", false }, { "now", true },   { "json", false },
	};
	struct ti_list_opts lo = { .sort = TI_F_DEBT };
	struct ti_cmdline c =
		TI_CMDLINE("list", ti_usage_list, opts, ti_list_opt, &lo);
	struct ti_entries es = { 0 };
	tkshm_table *t;
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
		ti_list_json(c.path, es.v, shown, &es, m, lo.now);
	else
		ti_list_text(es.v, shown, &es, m, &lo);
	ti_entries_free(&es);
	return ti_finish_stdout(TI_EXIT_OK);
}
