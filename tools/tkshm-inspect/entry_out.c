/*
 * entry_out.c - what list, show and top share about the keys of a table:
 * collecting them (tkshm_entry_next_at), their fields by name, the --where
 * filters, sorting, and their text and JSON forms.
 *
 * Everything here reads entries the library filled and validated; a table
 * may be hostile, so no value is trusted to be small or consistent (times
 * are formatted as doubles, lengths are clamped to the label).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "inspect.h"

/* --- fields -------------------------------------------------------------- */

static const struct {
	const char *name;
	enum ti_field f;
} ti_fields[] = {
	{ "key", TI_F_KEY },
	{ "remaining", TI_F_REMAINING },
	{ "limit", TI_F_LIMIT },
	{ "debt", TI_F_DEBT },
	{ "debtMs", TI_F_DEBT },
	{ "denials", TI_F_DENIALS },
	{ "resetAt", TI_F_RESET_AT },
	{ "reset", TI_F_RESET_AT },
	{ "retryAfter", TI_F_RETRY_AFTER },
	{ "retryAfterMs", TI_F_RETRY_AFTER },
	{ "probe", TI_F_PROBE },
	{ "spendable", TI_F_SPENDABLE },
	{ "spendableNow", TI_F_SPENDABLE },
	{ "held", TI_F_HELD },
	{ "permitsHeld", TI_F_HELD },
	{ "holders", TI_F_HOLDERS },
	{ "holdersCount", TI_F_HOLDERS },
};

#define TI_FIELD_LIST                                                         \
	"key, remaining, limit, debt, denials, resetAt (reset), retryAfter, " \
	"probe, spendable, held, holders"

bool
ti_field_parse(const char *name, enum ti_field *out)
{
	for (size_t i = 0; i < sizeof ti_fields / sizeof ti_fields[0]; i++)
		if (strcasecmp(ti_fields[i].name, name) == 0) {
			*out = ti_fields[i].f;
			return true;
		}
	return false;
}

double
ti_field_value(const tkshm_entry *e, enum ti_field f)
{
	switch (f) {
	case TI_F_REMAINING:
		return (double)e->peek.remaining;
	case TI_F_LIMIT:
		return (double)e->peek.limit;
	case TI_F_DEBT:
		return e->debt_ms;
	case TI_F_DENIALS:
		return (double)e->denials;
	case TI_F_RESET_AT:
		return (double)e->peek.reset_at;
	case TI_F_RETRY_AFTER:
		return (double)e->peek.retry_after_ms;
	case TI_F_PROBE:
		return (double)e->probe;
	case TI_F_SPENDABLE:
		return (double)e->forecast.spendable_now;
	case TI_F_HELD:
		return (double)e->permits_held;
	case TI_F_HOLDERS:
		return (double)e->holders_n;
	case TI_F_KEY:
		break;
	}
	return 0;
}

/* Fields that do not come from the key's state. */
static bool
ti_field_stateless(enum ti_field f)
{
	return f == TI_F_DENIALS || f == TI_F_PROBE;
}

/* --- filters ------------------------------------------------------------- */

static const struct {
	const char *text;
	enum ti_op op;
} ti_ops[] = {
	/* Two-character operators first: "<=" is not "<" then "=5". */
	{ "<=", TI_OP_LE },	{ ">=", TI_OP_GE }, { "!=", TI_OP_NE },
	{ "^=", TI_OP_PREFIX }, { "<", TI_OP_LT },  { ">", TI_OP_GT },
	{ "=", TI_OP_EQ },
};

/* The operator at s; its length in *len, 0 if none. */
static bool
ti_op_at(const char *s, enum ti_op *op, size_t *len)
{
	for (size_t i = 0; i < sizeof ti_ops / sizeof ti_ops[0]; i++) {
		size_t n = strlen(ti_ops[i].text);

		if (strncmp(s, ti_ops[i].text, n) == 0) {
			*op = ti_ops[i].op;
			*len = n;
			return true;
		}
	}
	return false;
}

/* key OP VALUE: VALUE is an escaped key (key_text.c). */
static bool
ti_where_key(const char *cmd, const char *expr, const char *value,
	     struct ti_where *w)
{
	if (w->op != TI_OP_EQ && w->op != TI_OP_NE && w->op != TI_OP_PREFIX) {
		ti_usage_error(cmd,
			       "--where '%s': key takes only =, != or ^= "
			       "(prefix)",
			       expr);
		return false;
	}
	if (!ti_key_unescape(cmd, value, w->key, &w->key_len))
		return false;
	if (w->op == TI_OP_PREFIX && w->key_len > TKSHM_LABEL_MAX) {
		/* A table keeps only a key's first bytes: a longer prefix
		 * could not be told apart from one that differs later. */
		ti_usage_error(cmd,
			       "--where '%s': a prefix can be at most %d bytes "
			       "(the table keeps only a key's first %d)",
			       expr, TKSHM_LABEL_MAX, TKSHM_LABEL_MAX);
		return false;
	}
	return true;
}

bool
ti_where_parse(const char *cmd, const char *expr, struct ti_where *w)
{
	char name[32];
	size_t n = 0, oplen;

	memset(w, 0, sizeof *w);
	while ((expr[n] >= 'a' && expr[n] <= 'z') ||
	       (expr[n] >= 'A' && expr[n] <= 'Z'))
		n++;
	if (n == 0 || n >= sizeof name) {
		ti_usage_error(cmd,
			       "--where '%s': expected FIELD OP VALUE, e.g. "
			       "debt>5000 (fields: " TI_FIELD_LIST ")",
			       expr);
		return false;
	}
	memcpy(name, expr, n);
	name[n] = '\0';
	if (!ti_field_parse(name, &w->field)) {
		ti_usage_error(
			cmd,
			"--where '%s': unknown field '%s' (fields: " TI_FIELD_LIST
			")",
			expr, name);
		return false;
	}
	if (!ti_op_at(expr + n, &w->op, &oplen)) {
		ti_usage_error(cmd,
			       "--where '%s': unknown operator after '%s' "
			       "(operators: < <= > >= = !=, and ^= for key)",
			       expr, name);
		return false;
	}
	if (w->field == TI_F_KEY)
		return ti_where_key(cmd, expr, expr + n + oplen, w);
	if (w->op == TI_OP_PREFIX) {
		ti_usage_error(cmd, "--where '%s': ^= applies to key only",
			       expr);
		return false;
	}
	if (!ti_parse_decimal(expr + n + oplen, &w->num)) {
		ti_usage_error(cmd, "--where '%s': '%s' is not a number", expr,
			       expr + n + oplen);
		return false;
	}
	return true;
}

void
ti_where_resolve(struct ti_where *w, tkshm_table *t, double now)
{
	tkshm_entry e;
	int rc;

	if (w->field != TI_F_KEY || w->op == TI_OP_PREFIX)
		return;
	rc = tkshm_entry_get_at(t, w->key, w->key_len, now, &e);
	if (rc == TKSHM_OK || rc == TKSHM_ECORRUPT) {
		w->have_fp = true;
		w->fp = e.fingerprint;
	} else if (rc == TKSHM_ENOENT) {
		/* No REAL slot has fingerprint 0: the key matches nothing. */
		w->have_fp = true;
		w->fp = 0;
	}
	/* Otherwise (a key that kept moving) the label decides below. */
}

/* key= without a fingerprint: exact for keys that fit a label. */
static bool
ti_label_equals(const struct ti_where *w, const tkshm_entry *e)
{
	size_t want =
		w->key_len < TKSHM_LABEL_MAX ? w->key_len : TKSHM_LABEL_MAX;
	size_t len = w->key_len < 255 ? w->key_len : 255;

	return e->key_len == len && e->label_len == want &&
	       memcmp(e->label, w->key, want) == 0;
}

static bool
ti_where_match_key(const struct ti_where *w, const tkshm_entry *e)
{
	bool eq;

	if (w->op == TI_OP_PREFIX)
		return e->key_len != 0 && e->label_len >= w->key_len &&
		       memcmp(e->label, w->key, w->key_len) == 0;
	eq = w->have_fp ? e->fingerprint == w->fp : ti_label_equals(w, e);
	return w->op == TI_OP_EQ ? eq : !eq;
}

bool
ti_where_match(const struct ti_where *w, const tkshm_entry *e)
{
	double v;

	if (w->field == TI_F_KEY)
		return ti_where_match_key(w, e);
	if (!e->state_valid && !ti_field_stateless(w->field))
		return true;
	v = ti_field_value(e, w->field);
	switch (w->op) {
	case TI_OP_LT:
		return v < w->num;
	case TI_OP_LE:
		return v <= w->num;
	case TI_OP_GT:
		return v > w->num;
	case TI_OP_GE:
		return v >= w->num;
	case TI_OP_EQ:
		return v == w->num;
	case TI_OP_NE:
		return v != w->num;
	case TI_OP_PREFIX:
		break;
	}
	return false;
}

/* --- collecting and sorting ---------------------------------------------- */

static bool
ti_entries_grow(struct ti_entries *es)
{
	size_t cap = es->cap ? es->cap * 2 : 256;
	tkshm_entry *v;

	if (cap > SIZE_MAX / sizeof *v)
		return false;
	v = realloc(es->v, cap * sizeof *v);
	if (!v)
		return false;
	es->v = v;
	es->cap = cap;
	return true;
}

int
ti_entries_collect(tkshm_table *t, double now, struct ti_entries *es)
{
	uint64_t cursor = 0;
	int rc;

	es->n = 0;
	es->live = es->idle = es->corrupt = 0;
	for (;;) {
		if (es->n == es->cap && !ti_entries_grow(es))
			return TKSHM_ENOMEM;
		rc = tkshm_entry_next_at(t, &cursor, now, &es->v[es->n]);
		if (rc == TKSHM_ENOENT)
			return TKSHM_OK;
		if (rc != TKSHM_OK)
			return rc;
		if (!es->v[es->n].state_valid)
			es->corrupt++;
		else if (es->v[es->n].idle)
			es->idle++;
		else
			es->live++;
		es->n++;
	}
}

void
ti_entries_free(struct ti_entries *es)
{
	free(es->v);
	memset(es, 0, sizeof *es);
}

struct ti_sort {
	enum ti_field by;
	bool desc;
};

/* The bytes of e->label that hold the key's first bytes. */
static size_t
ti_label_len(const tkshm_entry *e)
{
	return e->label_len < TKSHM_LABEL_MAX ? e->label_len : TKSHM_LABEL_MAX;
}

static int
ti_cmp_labels(const tkshm_entry *a, const tkshm_entry *b)
{
	size_t la = ti_label_len(a), lb = ti_label_len(b);
	int c = memcmp(a->label, b->label, la < lb ? la : lb);

	if (c != 0)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

static int
ti_cmp_entries(const void *pa, const void *pb, void *ctx)
{
	const tkshm_entry *a = pa, *b = pb;
	const struct ti_sort *s = ctx;
	int c = 0;

	/* A corrupt state comes first in every order, so that --limit
	 * never hides one. */
	if (a->state_valid != b->state_valid)
		return a->state_valid ? 1 : -1;
	if (s->by == TI_F_KEY) {
		c = ti_cmp_labels(a, b);
	} else if (a->state_valid || ti_field_stateless(s->by)) {
		double x = ti_field_value(a, s->by);
		double y = ti_field_value(b, s->by);

		c = x < y ? -1 : x > y;
	}
	if (c != 0)
		return s->desc ? -c : c;
	return a->slot < b->slot ? -1 : a->slot > b->slot;
}

void
ti_entries_sort(tkshm_entry *v, size_t n, enum ti_field by, bool desc)
{
	struct ti_sort s = { by, desc };

	if (n > 1)
		qsort_r(v, n, sizeof *v, ti_cmp_entries, &s);
}

/* --- text ---------------------------------------------------------------- */

void
ti_entry_label_text(const tkshm_entry *e, char *buf, size_t cap)
{
	size_t n =
		e->label_len < TKSHM_LABEL_MAX ? e->label_len : TKSHM_LABEL_MAX;

	ti_key_escape(e->label, n, buf, cap);
}

bool
ti_entry_key_truncated(const tkshm_entry *e)
{
	return e->key_len > e->label_len;
}

void
ti_entry_key_text(const tkshm_entry *e, char *buf, size_t cap)
{
	size_t n;

	if (cap < 4)
		return;
	if (e->key_len == 0) {
		snprintf(buf, cap, "?%016" PRIx64, e->fingerprint);
		return;
	}
	ti_entry_label_text(e, buf, cap - 3);
	if (ti_entry_key_truncated(e)) {
		n = strlen(buf);
		memcpy(buf + n, "...", 4);
	}
}

const char *
ti_entry_state(const tkshm_entry *e)
{
	if (!e->state_valid)
		return "corrupt";
	return e->idle ? "idle" : "live";
}

void
ti_rel_time(double at_ms, double now_ms, char *buf, size_t cap)
{
	double d = at_ms - now_ms, a = fabs(d);
	char sign = d < 0 ? '-' : '+';

	if (!isfinite(d)) {
		snprintf(buf, cap, "?");
	} else if (a < 0.5) {
		snprintf(buf, cap, "now");
	} else if (a < 1000) {
		snprintf(buf, cap, "%c%.0fms", sign, a);
	} else if (a < 59950) {
		snprintf(buf, cap, "%c%.1fs", sign, a / 1000);
	} else if (a < 3600000) {
		double m = floor(a / 60000);
		snprintf(buf, cap, "%c%.0fm%02.0fs", sign, m,
			 floor((a - m * 60000) / 1000));
	} else if (a < 86400000) {
		double h = floor(a / 3600000);
		snprintf(buf, cap, "%c%.0fh%02.0fm", sign, h,
			 floor((a - h * 3600000) / 60000));
	} else {
		double dd = floor(a / 86400000);
		snprintf(buf, cap, "%c%.0fd%02.0fh", sign, dd,
			 floor((a - dd * 86400000) / 3600000));
	}
}

int
ti_now_opt(const char *cmd, const char *value, double *now)
{
	/* The library's bound on every time it takes. */
	if (!ti_parse_decimal(value, now) || *now < 0 || *now > TKSHM_NOW_MAX)
		return ti_usage_error(cmd,
				      "--now: '%s' is not a time in ms from 0 "
				      "to 2^42 (year 2109)",
				      value);
	return TI_GO_ON;
}

/* --- what a table's kind adds --------------------------------------------- */

tkshm_kind
ti_table_kind(tkshm_table *t)
{
	tkshm_stats st;

	/* Fails only for a NULL handle: then no kind adds anything. */
	if (tkshm_stats_get(t, &st) != TKSHM_OK)
		return (tkshm_kind)0;
	return st.policy.kind;
}

bool
ti_kind_has_permits(tkshm_kind k)
{
	return k == TKSHM_KIND_CONCURRENCY ||
	       k == TKSHM_KIND_ADAPTIVE_CONCURRENCY;
}

void
ti_entry_holders_text(const tkshm_entry *e, char *buf, size_t cap)
{
	uint32_t listed = e->holders_n < TKSHM_ENTRY_HOLDERS ?
				  e->holders_n :
				  TKSHM_ENTRY_HOLDERS;
	size_t n = 0;

	if (cap == 0)
		return;
	buf[0] = '\0';
	if (e->holders_n == 0) {
		snprintf(buf, cap, "-");
		return;
	}
	for (uint32_t i = 0; i < listed && n < cap; i++)
		n += (size_t)snprintf(
			buf + n, cap - n, "%s%" PRId32 "\u00d7%" PRIu32,
			i ? "," : "", e->holders[i].pid, e->holders[i].permits);
	if (e->holders_n > listed && n < cap)
		snprintf(buf + n, cap - n, ",+%" PRIu32 " more",
			 e->holders_n - listed);
}

int
ti_text_width(const char *s)
{
	int w = 0;

	/* Every byte but a UTF-8 continuation byte starts a character. */
	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

/* --- JSON ---------------------------------------------------------------- */

/* The members that come from the key's state: null when it is corrupt,
 * so a reader cannot take a zero for a value. */
static void
ti_entry_json_state(struct ti_json *j, const tkshm_entry *e)
{
	static const char *const names[] = {
		"idle",	   "remaining",	   "limit",
		"resetAt", "retryAfterMs", "allowed",
		"debtMs",  "spendableNow", "nextReplenishAt",
		"fullAt",
	};

	if (!e->state_valid) {
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			ti_json_null(j, names[i]);
		return;
	}
	ti_json_bool(j, "idle", e->idle);
	ti_json_i64(j, "remaining", e->peek.remaining);
	ti_json_i64(j, "limit", e->peek.limit);
	ti_json_i64(j, "resetAt", e->peek.reset_at);
	ti_json_i64(j, "retryAfterMs", e->peek.retry_after_ms);
	ti_json_bool(j, "allowed", e->peek.allowed);
	ti_json_num(j, "debtMs", e->debt_ms);
	ti_json_i64(j, "spendableNow", e->forecast.spendable_now);
	ti_json_i64(j, "nextReplenishAt", e->forecast.next_replenish_at);
	ti_json_i64(j, "fullAt", e->forecast.full_at);
}

/* What the table's kind adds: the shaper's queue wait, a concurrency key's
 * permits and holders, an adaptive limit's value and rttNoLoad.  Null when
 * the state is corrupt, as the state's other members. */
static void
ti_entry_json_kind(struct ti_json *j, const tkshm_entry *e, tkshm_kind kind)
{
	bool adaptive = kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY;

	if (kind == TKSHM_KIND_LEAKY_BUCKET) {
		/* A request reserved now departs after this wait (the debt
		 * of a departure time, leaky_bucket.h). */
		if (e->state_valid)
			ti_json_num(j, "queueWaitMs", e->debt_ms);
		else
			ti_json_null(j, "queueWaitMs");
		return;
	}
	if (!ti_kind_has_permits(kind))
		return;
	if (!e->state_valid) {
		ti_json_null(j, "permitsHeld");
		ti_json_null(j, "holdersCount");
		ti_json_null(j, "holders");
		if (adaptive) {
			ti_json_null(j, "adaptiveLimit");
			ti_json_null(j, "rttNoLoadMs");
		}
		return;
	}
	ti_json_u64(j, "permitsHeld", e->permits_held);
	ti_json_u64(j, "holdersCount", e->holders_n);
	ti_json_begin_arr(j, "holders");
	for (uint32_t i = 0; i < e->holders_n && i < TKSHM_ENTRY_HOLDERS; i++) {
		ti_json_begin_row(j, NULL);
		ti_json_i64(j, "pid", e->holders[i].pid);
		ti_json_u64(j, "permits", e->holders[i].permits);
		ti_json_end_obj(j);
	}
	ti_json_end_arr(j);
	if (adaptive) {
		ti_json_num(j, "adaptiveLimit", e->adaptive_limit);
		/* 0 is "no sample yet", not a latency. */
		if (e->rtt_noload_ms > 0)
			ti_json_num(j, "rttNoLoadMs", e->rtt_noload_ms);
		else
			ti_json_null(j, "rttNoLoadMs");
	}
}

void
ti_entry_json(struct ti_json *j, const tkshm_entry *e, tkshm_kind kind,
	      const char *key, size_t key_len)
{
	char label[TI_ENTRY_KEY_TEXT], fp[24];

	if (!key && e->key_len) {
		ti_entry_label_text(e, label, sizeof label);
		key = label;
		key_len = e->key_len;
	}
	snprintf(fp, sizeof fp, "%016" PRIx64, e->fingerprint);
	/* A key without a label is null, never a made-up string. */
	ti_json_string(j, "key", key);
	if (key)
		ti_json_u64(j, "keyLength", key_len);
	else
		ti_json_null(j, "keyLength");
	ti_json_bool(j, "keyTruncated", ti_entry_key_truncated(e));
	ti_json_string(j, "fingerprint", fp);
	ti_json_u64(j, "slot", e->slot);
	ti_json_u64(j, "probe", e->probe);
	ti_json_bool(j, "misplaced", e->misplaced);
	ti_json_bool(j, "stateValid", e->state_valid);
	ti_json_u64(j, "denials", e->denials);
	ti_entry_json_state(j, e);
	ti_entry_json_kind(j, e, kind);
}
