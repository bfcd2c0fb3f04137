/*
 * inspect.h - what the files of tkshm-inspect share: exit codes, the
 * subcommands' entry points, option parsing, diagnostics, table opening and
 * JSON output.  The tool uses only the public API (include/tkshm.h).
 */
#ifndef TKSHM_INSPECT_H
#define TKSHM_INSPECT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tkshm.h"

#define TI_PROG "tkshm-inspect"

/* Exit codes (documented in --help and tkshm-inspect.1). */
enum ti_exit {
	TI_EXIT_OK = 0,	   /* success */
	TI_EXIT_CHECK = 1, /* verify found problems; show: key absent or
				 corrupt; reset: key absent; a malformed
				 replay line; a write refused (EFULL) or
				 unsettled (EBUSY) */
	TI_EXIT_USAGE = 2, /* bad command line */
	TI_EXIT_OPEN = 3,  /* cannot open, create or attach the table */
	TI_EXIT_IO = 4,	   /* I/O error (reading input, writing output) or
				 another system failure */
};

/* --- subcommands (cmd_*.c): each returns an exit code ------------------ */

struct ti_command {
	const char *name;
	const char *summary;		   /* one line for --help */
	int (*run)(int argc, char **argv); /* argv[0] is the name */
	void (*usage)(FILE *f);		   /* the subcommand's --help */
};

int ti_cmd_create(int argc, char **argv);
int ti_cmd_replay(int argc, char **argv);
int ti_cmd_verify(int argc, char **argv);
int ti_cmd_stats(int argc, char **argv);
int ti_cmd_list(int argc, char **argv);
int ti_cmd_show(int argc, char **argv);
int ti_cmd_top(int argc, char **argv);
int ti_cmd_metrics(int argc, char **argv);
int ti_cmd_serve(int argc, char **argv);
int ti_cmd_reset(int argc, char **argv);
int ti_cmd_set(int argc, char **argv);
int ti_cmd_plan(int argc, char **argv);
int ti_cmd_apply(int argc, char **argv);
int ti_cmd_resize(int argc, char **argv);
void ti_usage_create(FILE *f);
void ti_usage_replay(FILE *f);
void ti_usage_verify(FILE *f);
void ti_usage_stats(FILE *f);
void ti_usage_list(FILE *f);
void ti_usage_show(FILE *f);
void ti_usage_top(FILE *f);
void ti_usage_metrics(FILE *f);
void ti_usage_serve(FILE *f);

/* The file `metrics --textfile DIR` writes in DIR. */
#define TI_TEXTFILE_NAME "tkshm.prom"

/* The Prometheus exposition of the tables at `paths` into f, keys
 * classified at `now`; with `errors`, a last gauge tkshm_status_errors
 * counting the tables that could not be read (each also reported on
 * standard error).  Returns the worst exit code of the tables. */
int ti_metrics_write(FILE *f, const char **paths, size_t np, double now,
		     bool errors);
void ti_usage_reset(FILE *f);
void ti_usage_set(FILE *f);
void ti_usage_plan(FILE *f);
void ti_usage_apply(FILE *f);
void ti_usage_resize(FILE *f);

/* The exit-code table, printed by every --help (main.c). */
void ti_print_exit_codes(FILE *f);

/* Figures derived from a table's stats and occupancy scan (cmd_stats.c),
 * shared by stats and metrics. */
struct ti_figures {
	double occupancy;      /* (live + idle + placeholders) / slots */
	double idle_fraction;  /* idle / (live + idle); 0 without keys */
	double denied_percent; /* 100 * denied / (allowed + denied) */
};
void ti_figures_of(const tkshm_stats *s, const tkshm_usage *u,
		   struct ti_figures *f);

/* --- diagnostics (diag.c) ------------------------------------------------ */

/* Prints "tkshm-inspect: <message>\n" to stderr. */
void ti_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ti_err(), then "Try 'tkshm-inspect CMD --help'."; returns TI_EXIT_USAGE. */
int ti_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Flushes stdout; on a write error reports it and returns TI_EXIT_IO,
 * otherwise returns `rc`. */
int ti_finish_stdout(int rc);

/* --- option values (args.c) --------------------------------------------- */

/* Value parsers: false (after reporting a usage error) when invalid. */
bool ti_parse_u64(const char *cmd, const char *opt, const char *s,
		  uint64_t *out);
bool ti_parse_mode(const char *cmd, const char *s, uint32_t *out);
bool ti_parse_on_full(const char *cmd, const char *s, tkshm_on_full *out);
bool ti_parse_policy(const char *cmd, const char *s, tkshm_policy *out);
/* A finite decimal number (digits, sign, '.', exponent; no hex, inf, nan). */
bool ti_parse_decimal(const char *s, double *out);

/* --- a subcommand's command line (cmdline.c) ----------------------------- */

#define TI_GO_ON (-1) /* an option handler's "carry on" */

/* Takes one option of a subcommand other than --help (`name` without the
 * "--", `value` NULL if it takes none); returns TI_GO_ON or, after reporting
 * the problem, the exit code to end with. */
typedef int ti_opt_fn(void *ctx, const char *cmd, const char *name,
		      const char *value);
/* Takes one operand, the same way. */
typedef int ti_operand_fn(void *ctx, const char *cmd, const char *operand);

/* getopt_long(3)'s table of a subcommand: every option but --help has val
 * 0 (the handler is told its name); the table ends with TI_OPT_END. */
#define TI_OPT_HELP                            \
	{                                      \
		"help", no_argument, NULL, 'h' \
	}
#define TI_OPT_FLAG(name)                    \
	{                                    \
		(name), no_argument, NULL, 0 \
	}
#define TI_OPT_VALUE(name)                         \
	{                                          \
		(name), required_argument, NULL, 0 \
	}
#define TI_OPT_END               \
	{                        \
		NULL, 0, NULL, 0 \
	}

struct ti_cmdline {
	const char *cmd;	   /* for messages: "create" */
	void (*usage)(FILE *f);	   /* printed by --help */
	const struct option *opts; /* including TI_OPT_HELP */
	ti_opt_fn *opt; /* the other options; NULL when there are none */
	void *ctx;	/* handed to `opt` */
	/* NULL: the command takes one PATH operand; otherwise it takes none,
	 * and this says why in the message refusing one. */
	const char *no_operand;
	const char *path; /* out: the PATH operand */
};

/* A command taking PATH; set no_operand afterwards for one that does not. */
#define TI_CMDLINE(name, usage_fn, opt_list, opt_fn, opt_ctx)           \
	{                                                               \
		.cmd = (name), .usage = (usage_fn), .opts = (opt_list), \
		.opt = (opt_fn), .ctx = (opt_ctx)                       \
	}

/* Reads argv (argv[0] is the subcommand's name) with getopt_long(3), in
 * order (options and operands mixed, "--" ending the options): --help or
 * -h prints the usage to stdout, operands go to `operand`, other options to
 * c->opt.  An option is spelled whole: what getopt_long would take beyond
 * that (an abbreviation such as --js, a cluster such as -hx) is refused as
 * an unknown option.  Returns TI_GO_ON, or the exit code to end with (0
 * after --help). */
int ti_cmdline_scan(struct ti_cmdline *c, int argc, char **argv,
		    ti_operand_fn *operand, void *operand_ctx);

/* ti_cmdline_scan() for a command taking one PATH operand (c->path; a
 * second one, or any when c->no_operand is set, is a usage error); then a
 * command that takes PATH needs a non-empty one. */
int ti_cmdline_parse(struct ti_cmdline *c, int argc, char **argv);

/* The options that describe a table, shared by create and replay:
 * --policy, --slots, --mode and --on-full. */
struct ti_table_opts {
	tkshm_options o; /* o.policy is left NULL: point it at `policy` */
	tkshm_policy policy;
	bool have_policy;
	bool have_on_full;
};
#define TI_TABLE_OPTS_INIT              \
	{                               \
		.o = TKSHM_OPTIONS_INIT \
	}

/* A ti_opt_fn for those options (ctx: a struct ti_table_opts). */
int ti_table_opt(void *ctx, const char *cmd, const char *name,
		 const char *value);

/* --- tables (table_open.c) ----------------------------------------------- */

/* Opens `path` (NULL: an anonymous table) with `o`, adding an errbuf.
 * Returns TI_EXIT_OK, or after reporting "cannot open PATH:
 * <tkshm_strerror> (<errbuf>)" TI_EXIT_USAGE for an argument the library
 * refuses (TKSHM_EINVAL) and TI_EXIT_OPEN for anything else. */
int ti_open(const char *path, tkshm_options *o, tkshm_table **out);
/* ti_open() of the existing table *path, mapped read-only; then *path
 * becomes the name of its file (ti_resolve_path() into buf). */
int ti_open_rdonly(const char **path, char *buf, size_t len, tkshm_table **out);
/* The same, mapped read-write, adopting the stored policy (never creates):
 * for the commands that change a key (reset, set). */
int ti_open_rdwr(const char **path, char *buf, size_t len, tkshm_table **out);

/* Operands of a command that takes more than one (table_open.c). */
struct ti_operands {
	const char *const *names; /* for messages, NULL-terminated; the last
				     names every further operand */
	size_t min, max;	  /* how many are needed, allowed */
	const char **v;		  /* out: max entries */
	size_t n;		  /* out */
};
/* ti_cmdline_parse() for such a command: operands go to ops->v (each
 * non-empty, at most ops->max, at least ops->min); c->path is unused. */
int ti_cmdline_operands(struct ti_cmdline *c, struct ti_operands *ops, int argc,
			char **argv);
/* The file a path names: a path without '/' is in TKSHM_DEFAULT_DIR. */
const char *ti_resolve_path(const char *path, char *buf, size_t len);
/* "evict" or "refuse". */
const char *ti_on_full_name(tkshm_on_full v);

/* --- keys (key_text.c) -------------------------------------------------- */

/* The longest escaped key: every byte as "\xNN", plus the NUL. */
#define TI_KEY_TEXT_MAX (4 * TKSHM_KEY_MAX + 1)

/* Writes key[0..len) as text into buf (cap bytes, NUL-terminated, cut at a
 * whole escape if it does not fit): bytes 0x21..0x7e as they are, a
 * backslash as "\\", any other byte as "\xNN". */
void ti_key_escape(const unsigned char *key, size_t len, char *buf, size_t cap);
/* Reads a KEY operand written that way into out (TKSHM_KEY_MAX bytes);
 * false, after a usage error, for a bad escape, an empty or too long key. */
bool ti_key_unescape(const char *cmd, const char *text, unsigned char *out,
		     size_t *len);

/* --- JSON (json_out.c) --------------------------------------------------- */

/* A JSON string (quotes included); invalid UTF-8 becomes U+FFFD. */
void ti_json_str(FILE *f, const char *s);
/* The shortest decimal that reads back as v; null if not finite. */
void ti_json_double(FILE *f, double v);
/* One decision as ThrottleKit's object, fields in ThrottleKit's order. */
void ti_json_decision(FILE *f, const tkshm_decision *d);

/* A small writer for nested objects and arrays that places the commas.
 * Objects are written one member a line and arrays on one line, unless
 * asked otherwise: a "row" is an object on one line, a "list" an array of
 * one element a line (list's keys).  Not pretty: everything on one line
 * (top's JSON lines).  The outermost value ends with a newline. */
#define TI_JSON_DEPTH 8
struct ti_json {
	FILE *f;
	int depth;
	bool first[TI_JSON_DEPTH];
	bool flat[TI_JSON_DEPTH]; /* elements on one line */
	bool pretty;
};
void ti_json_init(struct ti_json *j, FILE *f, bool pretty);
void ti_json_begin_obj(struct ti_json *j, const char *key);
void ti_json_end_obj(struct ti_json *j);
void ti_json_begin_row(struct ti_json *j, const char *key);
void ti_json_begin_arr(struct ti_json *j, const char *key);
void ti_json_begin_list(struct ti_json *j, const char *key);
void ti_json_end_arr(struct ti_json *j);
/* Members: `key` NULL inside an array. */
void ti_json_u64(struct ti_json *j, const char *key, uint64_t v);
void ti_json_i64(struct ti_json *j, const char *key, int64_t v);
void ti_json_num(struct ti_json *j, const char *key, double v);
void ti_json_bool(struct ti_json *j, const char *key, bool v);
/* A NULL v is written as null. */
void ti_json_string(struct ti_json *j, const char *key, const char *v);
void ti_json_null(struct ti_json *j, const char *key);

/* --- keys of a table: list, show, top (entry_out.c) ---------------------- */

/* The fields --where, --sort and top rank by. */
enum ti_field {
	TI_F_KEY,
	TI_F_REMAINING,
	TI_F_LIMIT,
	TI_F_DEBT,
	TI_F_DENIALS,
	TI_F_RESET_AT,
	TI_F_RETRY_AFTER,
	TI_F_PROBE,
	TI_F_SPENDABLE,
	TI_F_HELD,    /* concurrency kinds: permits held (0 for others) */
	TI_F_HOLDERS, /* ... and the processes holding them */
};
/* A field by name ("debt", "resetAt", "reset", ...); false if unknown. */
bool ti_field_parse(const char *name, enum ti_field *out);
/* The value of a numeric field (not TI_F_KEY); the entry's state must be
 * valid for every field but denials and probe. */
double ti_field_value(const tkshm_entry *e, enum ti_field f);

/* One --where EXPR: FIELD OP VALUE. */
enum ti_op {
	TI_OP_LT,
	TI_OP_LE,
	TI_OP_GT,
	TI_OP_GE,
	TI_OP_EQ,
	TI_OP_NE,
	TI_OP_PREFIX, /* ^=, keys only */
};
struct ti_where {
	enum ti_field field;
	enum ti_op op;
	double num;			  /* numeric fields */
	unsigned char key[TKSHM_KEY_MAX]; /* TI_F_KEY: the bytes */
	size_t key_len;
	bool have_fp; /* key=, key!=: the key's fingerprint, found in the
			 table by ti_where_resolve */
	uint64_t fp;
};
/* Parses EXPR; false after a usage error naming what is wrong. */
bool ti_where_parse(const char *cmd, const char *expr, struct ti_where *w);
/* Finds the fingerprint of an exact key (key=, key!=) in table t, so that
 * keys longer than a label and keys without one match exactly. */
void ti_where_resolve(struct ti_where *w, tkshm_table *t, double now);
/* Whether e passes w.  An entry with a corrupt state has no numbers, so
 * numeric filters never exclude it (it is always listed). */
bool ti_where_match(const struct ti_where *w, const tkshm_entry *e);

/* Every entry of a table, in slot order. */
struct ti_entries {
	tkshm_entry *v;
	size_t n, cap;
	uint64_t live, idle, corrupt;
};
/* Walks t at now into es (emptied first).  Returns TKSHM_OK, TKSHM_ENOMEM
 * or the walk's error. */
int ti_entries_collect(tkshm_table *t, double now, struct ti_entries *es);
void ti_entries_free(struct ti_entries *es);
/* Orders v: entries with a corrupt state first, then by `by` (keys by
 * their bytes), ties by slot. */
void ti_entries_sort(tkshm_entry *v, size_t n, enum ti_field by, bool desc);

/* The key as shown: its escaped text, "..." after it when the label holds
 * only a prefix, or "?" and the fingerprint when there is no label. */
#define TI_ENTRY_KEY_TEXT (4 * TKSHM_LABEL_MAX + 24)
void ti_entry_key_text(const tkshm_entry *e, char *buf, size_t cap);
/* The escaped label alone (""); what a KEY operand or key= takes. */
void ti_entry_label_text(const tkshm_entry *e, char *buf, size_t cap);
bool ti_entry_key_truncated(const tkshm_entry *e);
/* "live", "idle" or "corrupt". */
const char *ti_entry_state(const tkshm_entry *e);
/* A time relative to now: "now", "+250ms", "+1.2s", "+3m05s", "+2h10m",
 * "+4d03h" (a past time with '-'). */
void ti_rel_time(double at_ms, double now_ms, char *buf, size_t cap);

/* --- what a table's kind adds (entry_out.c) ------------------------------ */

/* The table's kind (from its stats; every handle can read them). */
tkshm_kind ti_table_kind(tkshm_table *t);
/* concurrency and adaptiveConcurrency: keys hold permits. */
bool ti_kind_has_permits(tkshm_kind k);
/* The longest holders text: TKSHM_ENTRY_HOLDERS "pid×count" and a tail. */
#define TI_HOLDERS_TEXT (TKSHM_ENTRY_HOLDERS * 24 + 32)
/* The processes holding a key's permits, by ascending pid: "4242×2,4250×1"
 * (× is U+00D7), ",+N more" when more hold them than an entry lists, "-"
 * when none does. */
void ti_entry_holders_text(const tkshm_entry *e, char *buf, size_t cap);
/* Columns on a terminal a UTF-8 string takes (one per character). */
int ti_text_width(const char *s);

/* The entry's members: key, keyLength, keyTruncated, fingerprint, slot,
 * probe, misplaced, stateValid, denials, idle, remaining, limit, resetAt,
 * retryAfterMs, allowed, debtMs, spendableNow, nextReplenishAt, fullAt (the
 * state's members null when it is corrupt), then what the table's `kind`
 * adds: leakyBucket queueWaitMs; concurrency permitsHeld, holdersCount and
 * holders ([{pid, permits}], by ascending pid, at most
 * TKSHM_ENTRY_HOLDERS); adaptiveConcurrency also adaptiveLimit and
 * rttNoLoadMs (null before the first sample).  `key` (escaped) and
 * `key_len` name the whole key when the caller knows it (show); NULL: the
 * label. */
void ti_entry_json(struct ti_json *j, const tkshm_entry *e, tkshm_kind kind,
		   const char *key, size_t key_len);

/* --now MS: TI_GO_ON, or a usage error for anything but a time >= 0. */
int ti_now_opt(const char *cmd, const char *value, double *now);

#endif /* TKSHM_INSPECT_H */
