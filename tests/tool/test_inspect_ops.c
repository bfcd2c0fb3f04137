/*
 * test_inspect_ops.c - drives the built tkshm-inspect (TKSHM_INSPECT_BIN)
 * through `stats` (derived figures), `metrics` (Prometheus text and JSON),
 * `reset` and `set`.  Tables are filled through the library in this process
 * at made-up times, so every expected number is computed here, and what the
 * tool changed is read back through the library.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"
#include "shm/protocol.h"
#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN

/* Runs tkshm-inspect with up to 15 arguments (NULL-terminated). */
#define RUN(p, input, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, (input))

#define GCRA_SPEC "gcra:limit=10,periodMs=1000,burst=5"

/* --- helpers ------------------------------------------------------------- */

/* The usage error the tool gives for `argv`: exit 2 and `why` on stderr. */
static void
expect_usage(const char *const argv[], const char *why)
{
	struct tkt_proc p;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 2, why);
	tkt_expect_contains(p.err, "tkshm-inspect: ", why);
	tkt_expect_contains(p.err, why, argv[1]);
	if (p.out_len != 0)
		fail_msg("%s: a usage error printed on stdout: %s", why, p.out);
	tkt_proc_free(&p);
}

static tkshm_decision
check_at(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, strlen(key), cost, now, &d), TKSHM_OK);
	return d;
}

/* Writes a placeholder {fp, PLACEHOLDER} into the first EMPTY slot of the
 * table file, as an insert killed after its claim leaves one. */
static void
plant_placeholder(const char *path)
{
	struct tk_header h;
	struct tk_slot s;
	int fd = open(path, O_RDWR);
	uint64_t i, n;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	n = h.nbuckets * TK_SLOTS_PER_BUCKET;
	for (i = 0; i < n; i++) {
		off_t at = (off_t)(h.buckets_off + i * sizeof s);

		assert_int_equal(pread(fd, &s, sizeof s, at),
				 (ssize_t)sizeof s);
		if (s.fp != 0)
			continue;
		s.fp = UINT64_C(0x1234567890abcdef);
		s.st = tk_st_placeholder(77);
		assert_int_equal(pwrite(fd, &s, sizeof s, at),
				 (ssize_t)sizeof s);
		break;
	}
	assert_true(i < n);
	close(fd);
}

/* The figures table: GCRA_SPEC, 64 slots, everything at 1000 (so nothing
 * is idle while keys are inserted, and nothing is reclaimed): six keys take
 * 1 unit (idle again from 1100), four take the whole burst of 5 (live until
 * 1500) and two of those are denied once more; plus one placeholder.  At
 * 1300: 10 allowed, 2 denied, 4 live, 6 idle, 1 placeholder, 53 empty. */
static void
make_figures_table(const char *path)
{
	tkshm_table *t = tkt_file(path, GCRA_SPEC, 64);
	char key[16];

	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof key, "idle%d", i);
		assert_true(check_at(t, key, 1, 1000).allowed);
	}
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof key, "live%d", i);
		assert_true(check_at(t, key, 5, 1000).allowed);
	}
	assert_false(check_at(t, "live0", 1, 1000).allowed);
	assert_false(check_at(t, "live1", 1, 1000).allowed);
	tkshm_close(t);
	plant_placeholder(path);
}

/* The library's own scan of `path` at `now`, read-only. */
static tkshm_usage
library_usage(const char *path, double now)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t;
	tkshm_usage u;

	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_usage_get(t, now, &u), TKSHM_OK);
	tkshm_close(t);
	return u;
}

static tkshm_stats
library_stats(const char *path)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t;
	tkshm_stats s;

	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	tkshm_close(t);
	return s;
}

/* A read-write handle on an existing table, for reading keys back. */
static tkshm_table *
attach(const char *path)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t;

	o.flags = 0;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	return t;
}

static tkshm_decision
peek_at(const char *path, const void *key, size_t len, double now)
{
	tkshm_table *t = attach(path);
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, key, len, now, &d), TKSHM_OK);
	tkshm_close(t);
	return d;
}

/* --- help ---------------------------------------------------------------- */

static void
test_help(void **state)
{
	static const char *const cmds[] = { "metrics", "reset", "set",
					    "stats" };
	struct tkt_proc p;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		char want[64];

		RUN(&p, NULL, cmds[i], "--help");
		tkt_expect_status(&p, 0, cmds[i]);
		snprintf(want, sizeof want, "Usage: tkshm-inspect %s", cmds[i]);
		tkt_expect_contains(p.out, want, "--help");
		tkt_expect_contains(p.out, "Exit status:", "--help");
		tkt_proc_free(&p);
		RUN(&p, NULL, "help", cmds[i]);
		tkt_expect_status(&p, 0, "help CMD");
		tkt_expect_contains(p.out, want, "help CMD");
		tkt_proc_free(&p);
	}
	RUN(&p, NULL, "set", "--help");
	tkt_expect_contains(p.out, "--block-until", "set --help");
	tkt_expect_contains(p.out, "--remaining", "set --help");
	tkt_proc_free(&p);
	RUN(&p, NULL, "metrics", "--help");
	tkt_expect_contains(p.out, "tkshm_decisions_total", "metrics --help");
	tkt_proc_free(&p);
}

/* --- stats --------------------------------------------------------------- */

static void
test_stats_figures(void **state)
{
	const char *path = tkt_path("figures.tkshm");
	tkshm_usage lib;
	struct tkt_proc p;
	const cJSON *u, *c, *h, *e;
	cJSON *j;
	double sum = 0;
	size_t i = 0;

	(void)state;
	make_figures_table(path);
	lib = library_usage(path, 1300);
	assert_int_equal(lib.placeholders, 1); /* the plant worked */

	RUN(&p, NULL, "stats", path, "--json", "--now", "1300");
	tkt_expect_status(&p, 0, "stats --json");
	j = tkt_parse_json(p.out, "stats --json");
	tkt_proc_free(&p);
	c = tkt_json_item(j, "counters");
	tkt_expect_num(c, "allowed", 10, "counters");
	tkt_expect_num(c, "denied", 2, "counters");
	tkt_expect_num(c, "evictionsInDebt", 0, "counters");
	tkt_expect_num(c, "casRetries", 0, "counters");
	tkt_expect_num(c, "refusals", 0, "counters");
	assert_int_equal(cJSON_GetArraySize(c), 13); /* counters only */
	tkt_expect_num(j, "deniedPercent", 100.0 * 2.0 / 12.0, "stats");
	u = tkt_json_item(j, "usage");
	tkt_expect_num(u, "live", 4, "usage");
	tkt_expect_num(u, "idle", 6, "usage");
	tkt_expect_num(u, "placeholders", 1, "usage");
	tkt_expect_num(u, "dead", 0, "usage");
	tkt_expect_num(u, "empty", 53, "usage");
	tkt_expect_num(u, "occupancyRatio", 11.0 / 64.0, "usage");
	tkt_expect_num(u, "idleFraction", 6.0 / 10.0, "usage");
	/* The histogram counts keys (live and idle), placeholders not. */
	h = tkt_json_item(u, "probeHist");
	assert_int_equal(cJSON_GetArraySize(h), TKSHM_WINDOW_SLOTS);
	cJSON_ArrayForEach(e, h)
	{
		assert_true(cJSON_IsNumber(e));
		assert_true(e->valuedouble == (double)lib.probe_hist[i]);
		sum += e->valuedouble;
		i++;
	}
	assert_true(sum == 10);
	cJSON_Delete(j);

	/* The text form shows the same figures. */
	RUN(&p, NULL, "stats", path, "--now", "1300");
	tkt_expect_status(&p, 0, "stats");
	tkt_expect_contains(p.out, "denied share         16.67%", "stats text");
	tkt_expect_contains(p.out, "occupancy            17.19% of slots",
			    "stats text");
	tkt_expect_contains(p.out, "idle fraction        60.00% of keys",
			    "stats text");
	tkt_expect_contains(p.out, "evictions in debt    0", "stats text");
	tkt_expect_contains(p.out, "CAS retries          0", "stats text");
	tkt_expect_contains(p.out, "refusals             0", "stats text");
	tkt_expect_contains(p.out, "probe length", "stats text");
	{
		char line[64];

		for (i = 0; i < TKSHM_WINDOW_SLOTS; i++) {
			snprintf(line, sizeof line, "\n  %-20zu %llu (", i,
				 (unsigned long long)lib.probe_hist[i]);
			tkt_expect_contains(p.out, line, "stats histogram");
		}
	}
	tkt_proc_free(&p);

	/* Denied % is of decisions: a fresh table has none and shows 0. */
	path = tkt_path("fresh.tkshm");
	tkshm_close(tkt_file(path, GCRA_SPEC, 8));
	RUN(&p, NULL, "stats", path, "--json");
	tkt_expect_status(&p, 0, "stats of a fresh table");
	j = tkt_parse_json(p.out, "stats --json");
	tkt_expect_num(j, "deniedPercent", 0, "fresh");
	tkt_expect_num(tkt_json_item(j, "usage"), "occupancyRatio", 0, "fresh");
	tkt_expect_num(tkt_json_item(j, "usage"), "idleFraction", 0, "fresh");
	cJSON_Delete(j);
	tkt_proc_free(&p);
}

/* --- metrics ------------------------------------------------------------- */

/* One sample of the exposition: name, the table label (unescaped) and the
 * other label's value, if any. */
struct sample {
	char name[64], table[512], other[32];
	double value;
};

#define MAX_SAMPLES 256

/* Reads one label value after its opening quote; returns the character
 * after the closing quote. */
static const char *
read_label(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s && *s != '"'; s++) {
		char c = *s;

		if (c == '\\') {
			s++;
			if (*s == 'n')
				c = '\n';
			else if (*s == '\\' || *s == '"')
				c = *s;
			else
				fail_msg("bad escape \\%c in a label", *s);
		} else if (c == '\n') {
			fail_msg("raw newline in a label value");
		}
		if (n + 1 >= cap)
			fail_msg("label value too long");
		out[n++] = c;
	}
	if (*s != '"')
		fail_msg("unterminated label value");
	out[n] = '\0';
	return s + 1;
}

static void
parse_sample(const char *line, struct sample *s)
{
	const char *p = strchr(line, '{');
	char *end;

	memset(s, 0, sizeof *s);
	if (!p || (size_t)(p - line) >= sizeof s->name)
		fail_msg("sample without labels: %s", line);
	memcpy(s->name, line, (size_t)(p - line));
	if (strncmp(p, "{table=\"", 8) != 0)
		fail_msg("first label is not table: %s", line);
	p = read_label(p + 8, s->table, sizeof s->table);
	if (*p == ',') {
		p = strchr(p, '"');
		if (!p)
			fail_msg("bad second label: %s", line);
		p = read_label(p + 1, s->other, sizeof s->other);
	}
	if (strncmp(p, "} ", 2) != 0)
		fail_msg("bad label set end: %s", line);
	s->value = strtod(p + 2, &end);
	if (end == p + 2 || *end != '\0')
		fail_msg("bad value: %s", line);
}

/* Parses the exposition, checking its structure: every metric has one HELP
 * and one TYPE line before its samples, its samples are together, and
 * counters (and only they) end in _total.  Returns the samples. */
static size_t
parse_exposition(char *text, struct sample *out, size_t *nmetrics)
{
	char seen[32][64], cur[64] = "", *save = NULL;
	size_t nseen = 0, n = 0;
	bool typed = false;

	for (char *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		char name[64], type[16];

		if (sscanf(l, "# HELP %63s", name) == 1) {
			for (size_t i = 0; i < nseen; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("%s described twice", name);
			assert_true(nseen < 32);
			strcpy(seen[nseen++], name);
			strcpy(cur, name);
			typed = false;
			continue;
		}
		if (sscanf(l, "# TYPE %63s %15s", name, type) == 2) {
			bool total =
				strlen(name) > 6 &&
				strcmp(name + strlen(name) - 6, "_total") == 0;
			if (strcmp(name, cur) != 0 || typed)
				fail_msg("TYPE out of place: %s", l);
			if (strcmp(type, total ? "counter" : "gauge") != 0)
				fail_msg("%s has type %s", name, type);
			typed = true;
			continue;
		}
		if (l[0] == '#')
			fail_msg("unexpected comment: %s", l);
		assert_true(n < MAX_SAMPLES);
		parse_sample(l, &out[n]);
		if (strcmp(out[n].name, cur) != 0 || !typed)
			fail_msg("sample outside its metric's block: %s", l);
		n++;
	}
	*nmetrics = nseen;
	return n;
}

/* The value of metric `name` for `table` (and `other`, or "" for none);
 * fails unless exactly one sample matches. */
static double
sample_of(const struct sample *s, size_t n, const char *name, const char *table,
	  const char *other)
{
	size_t found = 0;
	double v = 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(s[i].name, name) == 0 &&
		    strcmp(s[i].table, table) == 0 &&
		    strcmp(s[i].other, other) == 0) {
			found++;
			v = s[i].value;
		}
	if (found != 1)
		fail_msg("%zu samples of %s{table=%s,%s}", found, name, table,
			 other);
	return v;
}

/* What the test knows of a table it filled. */
struct expect {
	const char *path, *name;
	double allowed, denied, inserts, slots;
	double live, idle, placeholder, dead, empty;
	double bytes, created_s;
};

static const char *const zero_counters[] = {
	"tkshm_reclaims_total",		 "tkshm_evictions_total",
	"tkshm_evictions_in_debt_total", "tkshm_debt_restores_total",
	"tkshm_cas_retries_total",	 "tkshm_refusals_total",
	"tkshm_duplicates_killed_total", "tkshm_resets_total",
	"tkshm_multi_rollbacks_total",	 "tkshm_claims_stolen_total",
};
#define NZERO (sizeof zero_counters / sizeof zero_counters[0])

static void
check_table_samples(const struct sample *s, size_t n, const struct expect *e)
{
	const char *t = e->name;
	const char *states[] = { "live", "idle", "placeholder", "dead",
				 "empty" };
	const double keys[] = { e->live, e->idle, e->placeholder, e->dead,
				e->empty };

	assert_true(sample_of(s, n, "tkshm_decisions_total", t, "allowed") ==
		    e->allowed);
	assert_true(sample_of(s, n, "tkshm_decisions_total", t, "denied") ==
		    e->denied);
	assert_true(sample_of(s, n, "tkshm_inserts_total", t, "") ==
		    e->inserts);
	for (size_t i = 0; i < NZERO; i++)
		if (sample_of(s, n, zero_counters[i], t, "") != 0)
			fail_msg("%s is not 0", zero_counters[i]);
	assert_true(sample_of(s, n, "tkshm_slots", t, "") == e->slots);
	for (size_t i = 0; i < 5; i++)
		if (sample_of(s, n, "tkshm_keys", t, states[i]) != keys[i])
			fail_msg("tkshm_keys{state=%s} of %s is not %g",
				 states[i], t, keys[i]);
	assert_true(sample_of(s, n, "tkshm_occupancy_ratio", t, "") ==
		    (e->live + e->idle + e->placeholder) / e->slots);
	assert_true(sample_of(s, n, "tkshm_table_bytes", t, "") == e->bytes);
	assert_true(sample_of(s, n, "tkshm_bytes_per_key", t, "") ==
		    e->bytes / e->slots);
	assert_true(sample_of(s, n, "tkshm_created_timestamp_seconds", t, "") ==
		    e->created_s);
}

static void
check_table_json(const cJSON *root, const struct expect *e)
{
	const cJSON *o = tkt_json_item(root, e->path), *d, *k;

	d = tkt_json_item(o, "decisions");
	tkt_expect_num(d, "allowed", e->allowed, e->path);
	tkt_expect_num(d, "denied", e->denied, e->path);
	tkt_expect_num(o, "inserts", e->inserts, e->path);
	tkt_expect_num(o, "evictionsInDebt", 0, e->path);
	tkt_expect_num(o, "casRetries", 0, e->path);
	tkt_expect_num(o, "claimsStolen", 0, e->path);
	tkt_expect_num(o, "slots", e->slots, e->path);
	k = tkt_json_item(o, "keys");
	tkt_expect_num(k, "live", e->live, e->path);
	tkt_expect_num(k, "idle", e->idle, e->path);
	tkt_expect_num(k, "placeholder", e->placeholder, e->path);
	tkt_expect_num(k, "dead", e->dead, e->path);
	tkt_expect_num(k, "empty", e->empty, e->path);
	tkt_expect_num(o, "occupancyRatio",
		       (e->live + e->idle + e->placeholder) / e->slots,
		       e->path);
	tkt_expect_num(o, "tableBytes", e->bytes, e->path);
	tkt_expect_num(o, "bytesPerKey", e->bytes / e->slots, e->path);
	tkt_expect_num(o, "createdTimestampSeconds", e->created_s, e->path);
	/* 12 counters (decisions is one object), slots, keys, 4 gauges. */
	assert_int_equal(cJSON_GetArraySize(o), 18);
}

/* The exposition's escaping of a label value, written independently of the
 * tool's: backslash, double quote and newline. */
static void
prom_escape(const char *s, char *out, size_t cap)
{
	size_t n = 0;

	for (; *s; s++) {
		const char *r = *s == '\\' ? "\\\\" :
				*s == '"'  ? "\\\"" :
				*s == '\n' ? "\\n" :
					     NULL;
		size_t m = r ? 2 : 1;

		assert_true(n + m < cap);
		if (r)
			memcpy(out + n, r, 2);
		else
			out[n] = *s;
		n += m;
	}
	out[n] = '\0';
}

static void
fill_expect(struct expect *e, const char *path)
{
	tkshm_stats st = library_stats(path);
	struct stat sb;

	assert_int_equal(stat(path, &sb), 0);
	e->path = path;
	/* The `table` label: the file's name without its directory. */
	e->name = strrchr(path, '/') + 1;
	e->bytes = (double)sb.st_size;
	e->created_s = st.created_ms / 1000.0;
}

static void
test_metrics(void **state)
{
	char a[512], b[512], escaped[1024], *text;
	const char *missing = tkt_path("no-such.tkshm");
	struct sample *s = calloc(MAX_SAMPLES, sizeof *s);
	struct expect ea = { 0 }, eb = { 0 };
	struct tkt_proc p;
	size_t n, nmetrics;
	double before = tkshm_now_ms();
	tkshm_table *t;
	cJSON *j;

	(void)state;
	assert_non_null(s);
	snprintf(a, sizeof a, "%s", tkt_path("m-figures.tkshm"));
	/* A name with every character the format escapes. */
	snprintf(b, sizeof b, "%s", tkt_path("we\"ird\\na\nme.tkshm"));
	make_figures_table(a);
	fill_expect(&ea, a);
	ea.allowed = 10, ea.denied = 2, ea.inserts = 10, ea.slots = 64;
	ea.live = 4, ea.idle = 6, ea.placeholder = 1, ea.empty = 53;

	/* A token bucket: "t" spends all 10 at 1000 and is denied once;
	 * "u" and "v" spend 1, refilled by 1200.  At 1300 "t" holds 1.5. */
	t = tkt_file(b, "tokenBucket:capacity=10,refillPerSec=5", 8);
	assert_true(check_at(t, "t", 10, 1000).allowed);
	assert_false(check_at(t, "t", 1, 1000).allowed);
	assert_true(check_at(t, "u", 1, 1000).allowed);
	assert_true(check_at(t, "v", 1, 1000).allowed);
	tkshm_close(t);
	fill_expect(&eb, b);
	eb.allowed = 3, eb.denied = 1, eb.inserts = 3, eb.slots = 8;
	eb.live = 1, eb.idle = 2, eb.empty = 5;
	/* Created by this test just now. */
	assert_true(ea.created_s * 1000 >= before - 1000 &&
		    eb.created_s * 1000 <= tkshm_now_ms() + 1000);

	RUN(&p, NULL, "metrics", a, missing, b, "--now", "1300");
	/* A table that cannot be opened: exit 3, the others still out. */
	tkt_expect_status(&p, 3, "metrics with a missing table");
	tkt_expect_contains(p.err, "cannot open", "metrics stderr");
	tkt_expect_contains(p.err, missing, "metrics stderr");
	prom_escape(eb.name, escaped, sizeof escaped);
	tkt_expect_contains(p.out, escaped, "the escaped label");
	text = strdup(p.out);
	n = parse_exposition(text, s, &nmetrics);
	assert_int_equal(nmetrics, 18);
	/* 12 counters + decisions' second series + slots, 5 keys, 4 gauges:
	 * 23 samples per table. */
	assert_int_equal(n, 2 * 23);
	check_table_samples(s, n, &ea);
	check_table_samples(s, n, &eb);
	free(text);
	tkt_proc_free(&p);

	/* --json: the same numbers, keyed by path. */
	RUN(&p, NULL, "metrics", "--json", a, b, missing, "--now=1300");
	tkt_expect_status(&p, 3, "metrics --json with a missing table");
	j = tkt_parse_json(p.out, "metrics --json");
	assert_int_equal(cJSON_GetArraySize(j), 2);
	check_table_json(j, &ea);
	check_table_json(j, &eb);
	cJSON_Delete(j);
	tkt_proc_free(&p);

	/* A table named twice is printed once; all open: exit 0. */
	RUN(&p, NULL, "metrics", a, a, "--now", "1300");
	tkt_expect_status(&p, 0, "metrics A A");
	text = strdup(p.out);
	n = parse_exposition(text, s, &nmetrics);
	assert_int_equal(n, 23);
	check_table_samples(s, n, &ea);
	free(text);
	tkt_proc_free(&p);

	/* Two tables of one name in two directories: the second is
	 * labelled by its whole path, so no two samples share labels. */
	{
		char dir[512], twin[600];
		struct expect et = { 0 };

		snprintf(dir, sizeof dir, "%s", tkt_path("twin"));
		assert_int_equal(mkdir(dir, 0700), 0);
		snprintf(twin, sizeof twin, "%s/m-figures.tkshm", dir);
		make_figures_table(twin);
		fill_expect(&et, twin);
		et.name = twin;
		et.allowed = 10, et.denied = 2, et.inserts = 10, et.slots = 64;
		et.live = 4, et.idle = 6, et.placeholder = 1, et.empty = 53;
		RUN(&p, NULL, "metrics", a, twin, "--now", "1300");
		tkt_expect_status(&p, 0, "metrics of two tables of one name");
		text = strdup(p.out);
		n = parse_exposition(text, s, &nmetrics);
		assert_int_equal(n, 2 * 23);
		check_table_samples(s, n, &ea);
		check_table_samples(s, n, &et);
		free(text);
		tkt_proc_free(&p);
	}

	expect_usage((const char *const[]){ BIN, "metrics", NULL },
		     "missing PATH");
	expect_usage(
		(const char *const[]){ BIN, "metrics", a, "--now", "x", NULL },
		"--now");
	free(s);
}

/* --- reset --------------------------------------------------------------- */

static void
test_reset(void **state)
{
	const char *path = tkt_path("reset.tkshm");
	/* Bytes that need both escapes: a space, a backslash, 0x01. */
	static const char odd[] = "a b\\c\x01";
	tkshm_table *t = tkt_file(path, GCRA_SPEC, 64);
	tkshm_decision d;
	struct tkt_proc p;
	struct stat sb;
	cJSON *j;

	(void)state;
	assert_true(check_at(t, "k", 5, 1000).allowed);
	assert_true(check_at(t, odd, 5, 1000).allowed);
	assert_true(check_at(t, "other", 5, 1000).allowed);
	tkshm_close(t);

	RUN(&p, NULL, "reset", path, "k");
	tkt_expect_status(&p, 0, "reset");
	assert_string_equal(p.out, "reset k\n");
	tkt_proc_free(&p);
	/* Forgotten: a full burst again; the other keys untouched. */
	d = peek_at(path, "k", 1, 1000);
	assert_int_equal(d.remaining, 5);
	d = peek_at(path, "other", 5, 1000);
	assert_int_equal(d.remaining, 0);

	/* The key as list prints it; --json. */
	RUN(&p, NULL, "reset", "--json", path, "a\\x20b\\\\c\\x01");
	tkt_expect_status(&p, 0, "reset of an escaped key");
	j = tkt_parse_json(p.out, "reset --json");
	assert_string_equal(tkt_str_at(j, "table"), path);
	assert_string_equal(tkt_str_at(j, "key"), "a\\x20b\\\\c\\x01");
	assert_true(cJSON_IsTrue(tkt_json_item(j, "reset")));
	assert_true(cJSON_IsTrue(tkt_json_item(j, "inTable")));
	assert_int_equal(cJSON_GetArraySize(j), 4);
	cJSON_Delete(j);
	tkt_proc_free(&p);
	d = peek_at(path, odd, sizeof odd - 1, 1000);
	assert_int_equal(d.remaining, 5);
	assert_int_equal(library_stats(path).resets, 2);

	/* An absent key: said, exit 1 (test_reset_absent_key). */
	RUN(&p, NULL, "reset", path, "never-seen");
	tkt_expect_status(&p, 1, "reset of an absent key");
	tkt_proc_free(&p);

	expect_usage((const char *const[]){ BIN, "reset", path, NULL },
		     "missing KEY");
	expect_usage(
		(const char *const[]){ BIN, "reset", path, "a", "b", NULL },
		"extra operand");
	expect_usage((const char *const[]){ BIN, "reset", path, "a\\q", NULL },
		     "bad escape");
	expect_usage((const char *const[]){ BIN, "reset", path, "", NULL },
		     "KEY is empty");
	/* A missing table: exit 3, and reset never creates one. */
	RUN(&p, NULL, "reset", tkt_path("absent.tkshm"), "k");
	tkt_expect_status(&p, 3, "reset of a missing table");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_ENOENT),
			    "missing table");
	tkt_proc_free(&p);
	assert_int_equal(stat(tkt_path("absent.tkshm"), &sb), -1);
}

/* Issue 18: `reset FILE no-such-key` printed "reset no-such-key" and
 * exited 0, so a mistyped key looked reset.  Now: said on stderr, nothing
 * on stdout (--json: reset false), exit 1, and nothing reset.  A key
 * evicted in debt is not in the table either, but a reset clears its
 * remembered debt: that is a reset (exit 0), and says so. */
static void
test_reset_absent_key(void **state)
{
	/* A day per unit: the debt lasts the whole test, whatever its pace. */
	const char *path = tkt_path("reset-absent.tkshm");
	tkshm_table *t =
		tkt_file(path, "gcra:limit=10,periodMs=86400000,burst=10", 8);
	double now = tkshm_now_ms();
	char key[8], evicted[8] = "", want[128], never[32];
	tkshm_decision d;
	tkshm_entry e;
	struct tkt_proc p;
	cJSON *j;

	(void)state;
	/* 8 slots are one window: the ninth key evicts the least indebted,
	 * k0 (one check). */
	for (int i = 0; i < 9; i++) {
		snprintf(key, sizeof key, "k%d", i);
		for (int c = 0; c <= i; c++)
			(void)check_at(t, key, 1, now);
	}
	for (int i = 0; i < 9; i++) {
		snprintf(key, sizeof key, "k%d", i);
		if (tkshm_entry_get_at(t, key, 2, now, &e) == TKSHM_ENOENT)
			snprintf(evicted, sizeof evicted, "%s", key);
	}
	tkshm_close(t);
	assert_string_equal(evicted, "k0");

	/* A key never seen whose debt cell k0's eviction did not fill: the
	 * cells are shared, so "no-such-key" itself could inherit k0's debt
	 * (then the reset clears it, as below) for some table seeds. */
	for (int i = 0;; i++) {
		snprintf(never, sizeof never, "no-such-key-%d", i);
		d = peek_at(path, never, strlen(never), now);
		if (d.remaining == d.limit)
			break;
		assert_true(i < 1000);
	}
	snprintf(want, sizeof want,
		 "reset: key not in the table, nothing reset: %s", never);
	RUN(&p, NULL, "reset", path, never);
	tkt_expect_status(&p, 1, "reset of a key never seen");
	assert_string_equal(p.out, "");
	tkt_expect_contains(p.err, want, "reset of a key never seen");
	tkt_proc_free(&p);
	RUN(&p, NULL, "reset", "--json", path, never);
	tkt_expect_status(&p, 1, "reset --json of a key never seen");
	j = tkt_parse_json(p.out, "reset --json of a key never seen");
	assert_false(tkt_bool_at(j, "reset"));
	assert_false(tkt_bool_at(j, "inTable"));
	cJSON_Delete(j);
	tkt_proc_free(&p);
	assert_int_equal(library_stats(path).resets, 0);

	/* The evicted debtor: its debt is cleared, a full burst again. */
	d = peek_at(path, evicted, strlen(evicted), now);
	assert_true(d.remaining < d.limit);
	RUN(&p, NULL, "reset", path, evicted);
	tkt_expect_status(&p, 0, "reset of an evicted debtor");
	snprintf(want, sizeof want,
		 "reset %s (not in the table; its remembered debt cleared)\n",
		 evicted);
	assert_string_equal(p.out, want);
	tkt_proc_free(&p);
	d = peek_at(path, evicted, strlen(evicted), now);
	assert_int_equal(d.remaining, d.limit);
	assert_int_equal(library_stats(path).resets, 1);
	/* Then there is nothing left to reset. */
	RUN(&p, NULL, "reset", path, evicted);
	tkt_expect_status(&p, 1, "a second reset of the evicted key");
	tkt_proc_free(&p);
	assert_int_equal(library_stats(path).resets, 1);
}

/* --- set ----------------------------------------------------------------- */

/* `set PATH KEY ARGS... --json`, parsed; fails unless it exits 0. */
static cJSON *
set_json(const char *const argv[])
{
	struct tkt_proc p;
	cJSON *j;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, "set --json");
	j = tkt_parse_json(p.out, "set --json");
	tkt_proc_free(&p);
	return j;
}

static void
expect_state(const cJSON *j, double remaining, double limit, double reset_at,
	     double retry_after, const char *what)
{
	tkt_expect_num(j, "remaining", remaining, what);
	tkt_expect_num(j, "limit", limit, what);
	tkt_expect_num(j, "resetAt", reset_at, what);
	tkt_expect_num(j, "retryAfterMs", retry_after, what);
}

static void
test_set_gcra(void **state)
{
	const char *path = tkt_path("set-gcra.tkshm");
	tkshm_decision before, after;
	tkshm_table *t;
	struct tkt_proc p;
	cJSON *j;

	(void)state;
	tkshm_close(tkt_file(path, GCRA_SPEC, 64));

	/* T = 100 ms, burst 5: 2 left at 1000 means TAT = 1000 + 3 T. */
	j = set_json((const char *const[]){ BIN, "set", path, "k",
					    "--remaining", "2", "--now", "1000",
					    "--json", NULL });
	assert_string_equal(tkt_str_at(j, "table"), path);
	assert_string_equal(tkt_str_at(j, "key"), "k");
	expect_state(j, 2, 5, 1300, 0, "--remaining 2");
	assert_int_equal(cJSON_GetArraySize(j), 6);
	cJSON_Delete(j);
	/* The table agrees: exactly two admitted at 1000, then denied. */
	t = attach(path);
	assert_true(check_at(t, "k", 1, 1000).allowed);
	assert_true(check_at(t, "k", 1, 1000).allowed);
	assert_false(check_at(t, "k", 1, 1000).allowed);
	tkshm_close(t);

	/* Blocked for a minute from 1000: denied until 61000. */
	j = set_json((const char *const[]){ BIN, "set", path, "k",
					    "--block-for", "60000", "--now",
					    "1000", "--json", NULL });
	tkt_expect_num(j, "remaining", 0, "--block-for");
	tkt_expect_num(j, "retryAfterMs", 60000, "--block-for");
	tkt_expect_num(j, "blockedUntil", 61000, "--block-for");
	cJSON_Delete(j);
	t = attach(path);
	assert_false(check_at(t, "k", 1, 60999).allowed);
	assert_true(check_at(t, "k", 1, 61000).allowed);
	tkshm_close(t);

	/* --block-until an epoch ms. */
	j = set_json((const char *const[]){ BIN, "set", path, "b",
					    "--block-until", "5000", "--now",
					    "1000", "--json", NULL });
	tkt_expect_num(j, "retryAfterMs", 4000, "--block-until");
	cJSON_Delete(j);

	/* The limit itself is a reset: the key starts fresh. */
	j = set_json((const char *const[]){ BIN, "set", path, "b",
					    "--remaining", "5", "--now", "2000",
					    "--json", NULL });
	expect_state(j, 5, 5, 2000, 0, "--remaining = limit");
	cJSON_Delete(j);

	/* The text form. */
	RUN(&p, NULL, "set", path, "c", "--remaining=0", "--now", "1000");
	tkt_expect_status(&p, 0, "set text");
	assert_string_equal(p.out, "set c: remaining 0 of 5, resetAt 1500, "
				   "retryAfterMs 100\n");
	tkt_proc_free(&p);
	/* A block shows its end in whole ms: TAT = 1100.5 + tau - T. */
	RUN(&p, NULL, "set", path, "d", "--block-for", "100.5", "--now",
	    "1000");
	tkt_expect_status(&p, 0, "set --block-for text");
	assert_string_equal(p.out, "set d: blocked until 1101; remaining 0 of "
				   "5, resetAt 1501, retryAfterMs 101\n");
	tkt_proc_free(&p);

	/* Out of range: exit 2, naming the limit; nothing changed. */
	before = peek_at(path, "k", 1, 61000);
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--remaining", "6", NULL },
		     "remaining must be between 0 and the limit 5");
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--remaining", "-1", NULL },
		     "remaining must be between 0 and the limit 5");
	expect_usage((const char *const[]){ BIN, "set", path, "k", NULL },
		     "give one of");
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--remaining", "1", "--block-for",
					    "5", NULL },
		     "exactly one");
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--block-for", "0", NULL },
		     "--block-for");
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--block-until", "500", "--now",
					    "1000", NULL },
		     "is not after now");
	expect_usage((const char *const[]){ BIN, "set", path, "--remaining",
					    "1", NULL },
		     "missing KEY");
	expect_usage((const char *const[]){ BIN, "set", path, "k", "x",
					    "--remaining", "1", NULL },
		     "extra operand");
	expect_usage((const char *const[]){ BIN, "set", path, "k",
					    "--remaining", "one", NULL },
		     "--remaining");
	after = peek_at(path, "k", 1, 61000);
	tkt_assert_decision("k after refused sets", &after, &before);
	RUN(&p, NULL, "set", tkt_path("absent.tkshm"), "k", "--remaining", "1");
	tkt_expect_status(&p, 3, "set on a missing table");
	tkt_proc_free(&p);
}

static void
test_set_other_kinds(void **state)
{
	const char *fw = tkt_path("set-fw.tkshm");
	const char *tb = tkt_path("set-tb.tkshm");
	const char *budget = tkt_path("set-budget.tkshm");
	tkshm_table *t;
	cJSON *j;

	(void)state;
	/* A fixed window cannot be blocked; --remaining 0 empties the
	 * window, which ends at 2000. */
	tkshm_close(tkt_file(fw, "fixedWindow:limit=5,windowMs=1000", 8));
	expect_usage((const char *const[]){ BIN, "set", fw, "k", "--block-for",
					    "100", NULL },
		     "blocking needs a gcra or tokenBucket table; use "
		     "--remaining 0");
	j = set_json((const char *const[]){ BIN, "set", fw, "k", "--remaining",
					    "0", "--now", "1500", "--json",
					    NULL });
	expect_state(j, 0, 5, 2000, 500, "fixedWindow --remaining 0");
	cJSON_Delete(j);
	t = attach(fw);
	assert_false(check_at(t, "k", 1, 1999).allowed);
	assert_true(check_at(t, "k", 1, 2000).allowed);
	tkshm_close(t);

	/* A token bucket blocked until 2000 refills from empty from there:
	 * one token after 200 ms (5 per second).  (Its decision's
	 * retryAfterMs is the bucket's 200 ms, not the block's end: the
	 * library's formula does not look at a refill time ahead of now, so
	 * the tool prints blockedUntil as well.) */
	tkshm_close(tkt_file(tb, "tokenBucket:capacity=10,refillPerSec=5", 8));
	j = set_json((const char *const[]){ BIN, "set", tb, "k",
					    "--block-until", "2000", "--now",
					    "1000", "--json", NULL });
	tkt_expect_num(j, "remaining", 0, "tokenBucket block");
	tkt_expect_num(j, "limit", 10, "tokenBucket block");
	tkt_expect_num(j, "blockedUntil", 2000, "tokenBucket block");
	cJSON_Delete(j);
	t = attach(tb);
	assert_false(check_at(t, "k", 1, 2100).allowed);
	assert_true(check_at(t, "k", 1, 2200).allowed);
	tkshm_close(t);

	/* A tokenBudget counts whole tokens: floor(10.5) = 10. */
	tkshm_close(
		tkt_file(budget, "tokenBudget:budget=10.5,windowMs=1000", 8));
	expect_usage((const char *const[]){ BIN, "set", budget, "k",
					    "--remaining", "2.5", NULL },
		     "whole number between 0 and the limit 10");
	expect_usage((const char *const[]){ BIN, "set", budget, "k",
					    "--remaining", "11", NULL },
		     "remaining must be between 0 and the limit 10");
	j = set_json((const char *const[]){ BIN, "set", budget, "k",
					    "--remaining", "3", "--now", "1000",
					    "--json", NULL });
	expect_state(j, 3, 10, 2000, 0, "tokenBudget --remaining 3");
	cJSON_Delete(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_stats_figures),
		cmocka_unit_test(test_metrics),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_reset_absent_key),
		cmocka_unit_test(test_set_gcra),
		cmocka_unit_test(test_set_other_kinds),
	};
	return cmocka_run_group_tests_name("tool_inspect_ops", tests, NULL,
					   tkt_teardown);
}
