/*
 * cmd_top.c - `tkshm-inspect top PATH [--by debt|denials|rate]
 * [--interval MS] [--iterations N] [--limit N] [--json]`: the keys of a
 * table ranked by debt, by denials, or by denials per second, refreshed
 * every interval until interrupted or after N refreshes.
 *
 * On a terminal each frame is drawn in place (cursor home, every line
 * cleared to its end, the rest of the screen cleared), the cursor hidden
 * meanwhile and shown again on every way out; SIGINT and SIGTERM end the
 * loop cleanly (exit 0).  Elsewhere frames follow one another, separated
 * by a blank line, without escapes; --json prints one object a line.
 * Rates come from differences between two refreshes: a key's denial tally
 * (matched by slot and fingerprint) and the table's allowed and denied
 * counters, over the monotonic time between the two walks.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "inspect.h"

#define TI_TOP_MIN_INTERVAL 10
#define TI_TOP_MAX_INTERVAL 86400000u
#define TI_TOP_ROWS	    20 /* rows without a terminal or --limit */
#define TI_TOP_HEAD	    4  /* title, totals, a blank line, columns */

/* ANSI sequences of a redraw. */
#define TI_ESC_HIDE  "\033[?25l"
#define TI_ESC_SHOW  "\033[?25h"
#define TI_ESC_HOME  "\033[H"
#define TI_ESC_EOL   "\033[K"
#define TI_ESC_CLEAR "\033[J"

void
ti_usage_top(FILE *f)
{
	fputs("Usage: " TI_PROG " top PATH [--by debt|denials|rate]\n"
	      "                  [--interval MS] [--iterations N] [--limit N]\n"
	      "                  [--json]\n"
	      "\n"
	      "Maps the table PATH read-only and ranks its keys, refreshing\n"
	      "every interval until interrupted (Ctrl-C: exit 0) or after N\n"
	      "refreshes.  The header shows the table, the time, live and idle\n"
	      "keys, and requests allowed and denied per second (from the\n"
	      "table's counters).  Each row shows a key (escaped as list shows\n"
	      "it), its debt in ms, denials since it was inserted, denials per\n"
	      "second since the previous refresh, remaining, limit and\n"
	      "retry-after.  Rates are \"-\" on the first refresh.\n"
	      "\n"
	      "On a terminal the frame is redrawn in place and rows are limited\n"
	      "to the window's height; otherwise frames follow one another,\n"
	      "separated by a blank line.  No lock is taken and nothing is\n"
	      "written to the table.\n"
	      "\n"
	      "Options:\n"
	      "  --by WHAT         rank by 'debt' (default: ms until the key is\n"
	      "                    as good as new), 'denials' (since each key\n"
	      "                    was inserted) or 'rate' (denials per second\n"
	      "                    since the previous refresh)\n"
	      "  --interval MS     time between refreshes (default 1000, at\n"
	      "                    least 10)\n"
	      "  --iterations N    stop after N refreshes (default: never)\n"
	      "  --limit N         at most N rows (default: what the terminal\n"
	      "                    holds, or 20)\n"
	      "  --json            one JSON object a line per refresh: table,\n"
	      "                    now, by, live, idle, corrupt, allowedPerSec,\n"
	      "                    deniedPerSec and keys (list's fields plus\n"
	      "                    deniedPerSec); rates null on the first\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

enum ti_by {
	TI_BY_DEBT,
	TI_BY_DENIALS,
	TI_BY_RATE
};

static const char *const ti_by_names[] = { "debt", "denials", "rate" };

struct ti_top_opts {
	enum ti_by by;
	uint64_t interval, iterations, limit; /* 0: forever, automatic */
	bool json;
};

static int
ti_top_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_top_opts *o = ctx;

	if (strcmp(name, "json") == 0) {
		o->json = true;
	} else if (strcmp(name, "by") == 0) {
		for (o->by = TI_BY_DEBT; o->by <= TI_BY_RATE; o->by++)
			if (strcmp(value, ti_by_names[o->by]) == 0)
				return TI_GO_ON;
		return ti_usage_error(
			cmd, "--by: '%s' is not debt, denials or rate", value);
	} else if (strcmp(name, "interval") == 0) {
		if (!ti_parse_u64(cmd, "interval", value, &o->interval))
			return TI_EXIT_USAGE;
		if (o->interval < TI_TOP_MIN_INTERVAL ||
		    o->interval > TI_TOP_MAX_INTERVAL)
			return ti_usage_error(
				cmd, "--interval must be within %d..%u ms",
				TI_TOP_MIN_INTERVAL, TI_TOP_MAX_INTERVAL);
	} else {
		uint64_t *v =
			strcmp(name, "limit") == 0 ? &o->limit : &o->iterations;

		if (!ti_parse_u64(cmd, name, value, v))
			return TI_EXIT_USAGE;
		if (*v == 0)
			return ti_usage_error(cmd, "--%s must be at least 1",
					      name);
	}
	return TI_GO_ON;
}

/* --- signals and sleeping ------------------------------------------------ */

static volatile sig_atomic_t ti_top_stop;

static void
ti_top_on_signal(int sig)
{
	(void)sig;
	ti_top_stop = 1;
}

struct ti_top_signals {
	struct sigaction old_int, old_term;
};

static void
ti_top_catch(struct ti_top_signals *s)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ti_top_on_signal;
	sigemptyset(&sa.sa_mask);
	/* SA_RESTART keeps a frame's write whole; clock_nanosleep still
	 * returns EINTR, which is what wakes the loop. */
	sa.sa_flags = SA_RESTART;
	ti_top_stop = 0;
	sigaction(SIGINT, &sa, &s->old_int);
	sigaction(SIGTERM, &sa, &s->old_term);
}

static void
ti_top_release(const struct ti_top_signals *s)
{
	sigaction(SIGINT, &s->old_int, NULL);
	sigaction(SIGTERM, &s->old_term, NULL);
}

static double
ti_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Sleeps until `deadline` (monotonic ms), or until a signal stops us. */
static void
ti_top_sleep_until(double deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline / 1e3);
	ts.tv_nsec = (long)((deadline - (double)ts.tv_sec * 1e3) * 1e6);
	if (ts.tv_nsec < 0)
		ts.tv_nsec = 0;
	if (ts.tv_nsec > 999999999)
		ts.tv_nsec = 999999999;
	while (!ti_top_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
					       &ts, NULL) == EINTR)
		;
}

/* --- one refresh ---------------------------------------------------------- */

struct ti_top_row {
	const tkshm_entry *e;
	double rate; /* denials per second; NAN on the first refresh */
};

struct ti_top {
	struct ti_top_opts o;
	const char *path;
	tkshm_table *t;
	bool tty;
	unsigned frame;
	struct ti_entries cur, prev; /* prev: the previous walk, slot order */
	tkshm_stats st, prev_st;
	double now, mono, prev_mono;
	double allowed_ps, denied_ps; /* NAN on the first refresh */
	struct ti_top_row *rows;
	size_t nrows, rows_cap;
	unsigned short cols; /* 0: no width limit */
};

/* The previous walk's entry of the same slot, if it held the same key. */
static const tkshm_entry *
ti_top_previous(const struct ti_top *tp, const tkshm_entry *e)
{
	size_t lo = 0, hi = tp->prev.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const tkshm_entry *p = &tp->prev.v[mid];

		if (p->slot == e->slot)
			return p->fingerprint == e->fingerprint ? p : NULL;
		if (p->slot < e->slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Denials per second of e since the previous walk. */
static double
ti_top_rate(const struct ti_top *tp, const tkshm_entry *e, double secs)
{
	const tkshm_entry *p;
	uint64_t delta = e->denials;

	if (tp->frame == 0 || secs <= 0)
		return NAN;
	/* A key new since then (or re-inserted: its tally restarted) made
	 * all its denials meanwhile. */
	p = ti_top_previous(tp, e);
	if (p && p->denials <= e->denials)
		delta = e->denials - p->denials;
	return (double)delta / secs;
}

static double
ti_top_value(enum ti_by by, const struct ti_top_row *r)
{
	switch (by) {
	case TI_BY_DEBT:
		return r->e->state_valid ? r->e->debt_ms : 0;
	case TI_BY_DENIALS:
		return (double)r->e->denials;
	case TI_BY_RATE:
		return isnan(r->rate) ? 0 : r->rate;
	}
	return 0;
}

static int
ti_top_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct ti_top_row *a = pa, *b = pb;
	enum ti_by by = *(const enum ti_by *)ctx;
	double x, y;

	/* A corrupt state first, as in list. */
	if (a->e->state_valid != b->e->state_valid)
		return a->e->state_valid ? 1 : -1;
	x = ti_top_value(by, a);
	y = ti_top_value(by, b);
	if (x != y)
		return x > y ? -1 : 1;
	if (a->e->denials != b->e->denials)
		return a->e->denials > b->e->denials ? -1 : 1;
	return a->e->slot < b->e->slot ? -1 : a->e->slot > b->e->slot;
}

/* A key is ranked when it is live, corrupt, or has something to show
 * for the ranking (denials of a key gone idle). */
static bool
ti_top_ranked(enum ti_by by, const struct ti_top_row *r)
{
	return !r->e->state_valid || !r->e->idle || ti_top_value(by, r) > 0;
}

static bool
ti_top_rank(struct ti_top *tp)
{
	double secs = (tp->mono - tp->prev_mono) / 1e3;

	if (tp->cur.n > tp->rows_cap) {
		struct ti_top_row *r = realloc(tp->rows, tp->cur.n * sizeof *r);

		if (!r)
			return false;
		tp->rows = r;
		tp->rows_cap = tp->cur.n;
	}
	tp->nrows = 0;
	for (size_t i = 0; i < tp->cur.n; i++) {
		struct ti_top_row r = { &tp->cur.v[i],
					ti_top_rate(tp, &tp->cur.v[i], secs) };

		if (ti_top_ranked(tp->o.by, &r))
			tp->rows[tp->nrows++] = r;
	}
	if (tp->nrows > 1)
		qsort_r(tp->rows, tp->nrows, sizeof *tp->rows, ti_top_cmp,
			&tp->o.by);
	return true;
}

/* Requests per second from the table's counters since the last refresh. */
static double
ti_top_per_sec(uint64_t now, uint64_t before, double secs)
{
	return now >= before ? (double)(now - before) / secs : 0;
}

/* Reads the table: entries, counters, rates, ranking. */
static int
ti_top_refresh(struct ti_top *tp)
{
	struct ti_entries swap = tp->prev;
	double secs;
	int rc;

	tp->prev = tp->cur;
	tp->cur = swap;
	tp->prev_st = tp->st;
	tp->prev_mono = tp->mono;
	tp->now = tkshm_now_ms();
	tp->mono = ti_mono_ms();
	if ((rc = ti_entries_collect(tp->t, tp->now, &tp->cur)) != TKSHM_OK)
		return rc;
	tkshm_stats_get(tp->t, &tp->st);
	secs = (tp->mono - tp->prev_mono) / 1e3;
	tp->allowed_ps = tp->denied_ps = NAN;
	if (tp->frame > 0 && secs > 0) {
		tp->allowed_ps = ti_top_per_sec(tp->st.allowed,
						tp->prev_st.allowed, secs);
		tp->denied_ps =
			ti_top_per_sec(tp->st.denied, tp->prev_st.denied, secs);
	}
	return ti_top_rank(tp) ? TKSHM_OK : TKSHM_ENOMEM;
}

/* --- drawing -------------------------------------------------------------- */

/* One line of a text frame: cut to the terminal's width, so that nothing
 * wraps and shifts the redraw, and cleared to its end. */
static void ti_top_line(const struct ti_top *tp, FILE *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
ti_top_line(const struct ti_top *tp, FILE *f, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (tp->cols && n > tp->cols)
		n = tp->cols;
	fwrite(buf, 1, n, f);
	fputs(tp->tty ? TI_ESC_EOL "\n" : "\n", f);
}

static void
ti_top_rate_text(double v, char *buf, size_t cap)
{
	if (isnan(v))
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.1f", v);
}

enum {
	TI_TC_KEY,
	TI_TC_DEBT,
	TI_TC_DENIALS,
	TI_TC_RATE,
	TI_TC_REMAINING,
	TI_TC_LIMIT,
	TI_TC_RETRY,
	TI_TC_STATE,
	TI_TC_N
};

static const char *const ti_tc_names[TI_TC_N] = {
	"KEY",	     "DEBT",  "DENIALS",     "DENIED/S",
	"REMAINING", "LIMIT", "RETRY-AFTER", "STATE",
};

#define TI_TCELL 112

static void
ti_top_cells(const struct ti_top_row *r, char c[TI_TC_N][TI_TCELL])
{
	const tkshm_entry *e = r->e;

	ti_entry_key_text(e, c[TI_TC_KEY], TI_TCELL);
	snprintf(c[TI_TC_DENIALS], TI_TCELL, "%" PRIu64, e->denials);
	ti_top_rate_text(r->rate, c[TI_TC_RATE], TI_TCELL);
	snprintf(c[TI_TC_STATE], TI_TCELL, "%s", ti_entry_state(e));
	if (!e->state_valid) {
		snprintf(c[TI_TC_DEBT], TI_TCELL, "-");
		snprintf(c[TI_TC_REMAINING], TI_TCELL, "-");
		snprintf(c[TI_TC_LIMIT], TI_TCELL, "-");
		snprintf(c[TI_TC_RETRY], TI_TCELL, "-");
		return;
	}
	snprintf(c[TI_TC_DEBT], TI_TCELL, "%.0f", e->debt_ms);
	snprintf(c[TI_TC_REMAINING], TI_TCELL, "%" PRId64, e->peek.remaining);
	snprintf(c[TI_TC_LIMIT], TI_TCELL, "%" PRId64, e->peek.limit);
	snprintf(c[TI_TC_RETRY], TI_TCELL, "%" PRId64, e->peek.retry_after_ms);
}

static void
ti_top_row_line(const struct ti_top *tp, FILE *f, char c[TI_TC_N][TI_TCELL],
		const int *w)
{
	char line[512];
	size_t n = 0;

	for (int i = 0; i < TI_TC_N && n < sizeof line; i++) {
		bool left = i == TI_TC_KEY || i == TI_TC_STATE;
		int width = i == TI_TC_STATE ? 0 : w[i];

		n += (size_t)snprintf(line + n, sizeof line - n,
				      i ? "  %*s" : "%*s",
				      left ? -width : width, c[i]);
	}
	ti_top_line(tp, f, "%s", line);
}

/* How many rows this frame shows. */
static size_t
ti_top_shown(const struct ti_top *tp, unsigned short win_rows)
{
	size_t max = tp->o.limit ? (size_t)tp->o.limit : TI_TOP_ROWS;

	if (tp->tty && !tp->o.json) {
		/* Every line ends with a newline: one line fewer than the
		 * window, or the screen scrolls. */
		size_t fit = win_rows > TI_TOP_HEAD + 1 ?
				     (size_t)win_rows - TI_TOP_HEAD - 1 :
				     0;

		max = tp->o.limit && tp->o.limit < fit ? (size_t)tp->o.limit :
							 fit;
	}
	return tp->nrows < max ? tp->nrows : max;
}

static void
ti_top_text(const struct ti_top *tp, FILE *f, size_t shown)
{
	char c[TI_TC_N][TI_TCELL], clock[16], aps[32], dps[32], bad[40] = "";
	int w[TI_TC_N];
	time_t secs = (time_t)(tp->now / 1e3);
	struct tm tm;

	if (!localtime_r(&secs, &tm) ||
	    strftime(clock, sizeof clock, "%H:%M:%S", &tm) == 0)
		snprintf(clock, sizeof clock, "?");
	ti_top_rate_text(tp->allowed_ps, aps, sizeof aps);
	ti_top_rate_text(tp->denied_ps, dps, sizeof dps);
	ti_top_line(tp, f, TI_PROG " top  %s  %s  by %s, every %" PRIu64 " ms",
		    tp->path, clock, ti_by_names[tp->o.by], tp->o.interval);
	if (tp->cur.corrupt)
		snprintf(bad, sizeof bad, ", %" PRIu64 " corrupt",
			 tp->cur.corrupt);
	ti_top_line(tp, f,
		    "keys: %" PRIu64 " live, %" PRIu64 " idle%s, %zu ranked, "
		    "%zu shown   allowed/s: %s   denied/s: %s",
		    tp->cur.live, tp->cur.idle, bad, tp->nrows, shown, aps,
		    dps);
	ti_top_line(tp, f, "%s", "");
	for (int i = 0; i < TI_TC_N; i++)
		w[i] = (int)strlen(ti_tc_names[i]);
	for (size_t r = 0; r < shown; r++) {
		ti_top_cells(&tp->rows[r], c);
		for (int i = 0; i < TI_TC_N; i++)
			if ((int)strlen(c[i]) > w[i])
				w[i] = (int)strlen(c[i]);
	}
	for (int i = 0; i < TI_TC_N; i++)
		snprintf(c[i], TI_TCELL, "%s", ti_tc_names[i]);
	ti_top_row_line(tp, f, c, w);
	for (size_t r = 0; r < shown; r++) {
		ti_top_cells(&tp->rows[r], c);
		ti_top_row_line(tp, f, c, w);
	}
}

static void
ti_top_json(const struct ti_top *tp, FILE *f, size_t shown)
{
	struct ti_json j;

	/* Not pretty: one JSON object a line, a line a refresh. */
	ti_json_init(&j, f, false);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "table", tp->path);
	ti_json_num(&j, "now", tp->now);
	ti_json_string(&j, "by", ti_by_names[tp->o.by]);
	ti_json_u64(&j, "live", tp->cur.live);
	ti_json_u64(&j, "idle", tp->cur.idle);
	ti_json_u64(&j, "corrupt", tp->cur.corrupt);
	ti_json_u64(&j, "ranked", tp->nrows);
	ti_json_num(&j, "allowedPerSec", tp->allowed_ps);
	ti_json_num(&j, "deniedPerSec", tp->denied_ps);
	ti_json_begin_arr(&j, "keys");
	for (size_t i = 0; i < shown; i++) {
		ti_json_begin_obj(&j, NULL);
		ti_entry_json(&j, tp->rows[i].e, tp->st.policy.kind, NULL, 0);
		ti_json_num(&j, "deniedPerSec", tp->rows[i].rate);
		ti_json_end_obj(&j);
	}
	ti_json_end_arr(&j);
	ti_json_end_obj(&j);
}

static unsigned short
ti_top_window(struct ti_top *tp)
{
	struct winsize ws;

	tp->cols = 0;
	if (!tp->tty || tp->o.json)
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0) {
		ws.ws_row = 24;
		ws.ws_col = 80;
	}
	tp->cols = ws.ws_col;
	return ws.ws_row;
}

/* Draws the frame into memory, then writes it at once: a terminal never
 * shows half a frame.  False when standard output fails. */
static bool
ti_top_draw(struct ti_top *tp)
{
	char *buf = NULL;
	size_t len = 0, shown;
	FILE *f = open_memstream(&buf, &len);
	bool redraw = tp->tty && !tp->o.json;

	if (!f)
		return false;
	shown = ti_top_shown(tp, ti_top_window(tp));
	if (redraw)
		fputs(TI_ESC_HOME, f);
	else if (tp->frame > 0 && !tp->o.json)
		fputc('\n', f);
	if (tp->o.json)
		ti_top_json(tp, f, shown);
	else
		ti_top_text(tp, f, shown);
	if (redraw)
		fputs(TI_ESC_CLEAR, f);
	if (fclose(f) != 0) {
		free(buf);
		return false;
	}
	fwrite(buf, 1, len, stdout);
	free(buf);
	return fflush(stdout) == 0;
}

/* --- the loop ------------------------------------------------------------- */

static int
ti_top_loop(struct ti_top *tp)
{
	double next = ti_mono_ms();
	int rc;

	for (tp->frame = 0; !ti_top_stop; tp->frame++) {
		if (tp->o.iterations && tp->frame >= tp->o.iterations)
			break;
		if (tp->frame > 0) {
			ti_top_sleep_until(next);
			if (ti_top_stop)
				break;
		}
		next = ti_mono_ms() + (double)tp->o.interval;
		if ((rc = ti_top_refresh(tp)) != TKSHM_OK) {
			ti_err("top: cannot read the keys of %s: %s", tp->path,
			       tkshm_strerror(rc));
			return TI_EXIT_IO;
		}
		if (!ti_top_draw(tp)) {
			/* A failed stdout is reported once, at the end. */
			if (!ferror(stdout))
				ti_err("top: out of memory");
			return TI_EXIT_IO;
		}
	}
	return TI_EXIT_OK;
}

int
ti_cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
		TI_OPT_HELP,
		TI_OPT_VALUE("by"),
		TI_OPT_VALUE("interval"),
		TI_OPT_VALUE("iterations"),
		TI_OPT_VALUE("limit"),
		TI_OPT_FLAG("json"),
		TI_OPT_END,
	};
	struct ti_top tp = { .o = { .interval = 1000 } };
	struct ti_cmdline c =
		TI_CMDLINE("top", ti_usage_top, opts, ti_top_opt, &tp.o);
	struct ti_top_signals sigs;
	char full[4200];
	int k;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &tp.t)) !=
	    TI_EXIT_OK)
		return k;
	tp.path = c.path;
	tp.tty = isatty(STDOUT_FILENO) == 1;
	ti_top_catch(&sigs);
	if (tp.tty && !tp.o.json)
		fputs(TI_ESC_HIDE, stdout);
	k = ti_top_loop(&tp);
	/* Whatever ended the loop, the terminal gets its cursor back. */
	if (tp.tty && !tp.o.json)
		fputs(TI_ESC_SHOW, stdout);
	ti_top_release(&sigs);
	tkshm_close(tp.t);
	ti_entries_free(&tp.cur);
	ti_entries_free(&tp.prev);
	free(tp.rows);
	return ti_finish_stdout(k);
}
