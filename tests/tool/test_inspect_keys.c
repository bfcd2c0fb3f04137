/*
 * test_inspect_keys.c - tkshm-inspect list, show and top against tables
 * filled through the library with known contents: exact values in text and
 * JSON (checked against tkshm_entry_get_at on the test's own handle, and by
 * hand for a few), every --where operator, sort orders, --limit, --idle,
 * present, absent and evicted keys, escaped keys round-tripping from list
 * to show, a corrupt state, and top under a pseudo-terminal (redraw
 * sequences, ranking, window height, SIGINT), through a pipe (text and
 * JSON lines) and ranked by rate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/layout.h"
#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN

/* Runs tkshm-inspect with its arguments (NULL-terminated). */
#define RUN(p, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, NULL)

/* The fixture's time: every check of the main table happens at N (or
 * before it), and every list and show is asked --now N. */
#define N	1700000000000.0
#define N_TEXT	"1700000000000"
#define SPEC	"gcra:limit=10,periodMs=10000,burst=10" /* T = 1000 ms */
#define LONGKEY "a-very-long-key-of-more-than-19-bytes"
#define BINKEY     \
	"\x01\xff" \
	"bin"

/* The main table's keys: how many checks at N (and denials after them). */
static const struct fixture_key {
	const char *key;
	size_t len;
	const char *text; /* as list shows it */
	int checks, denials;
	double debt; /* ms, by hand: checks x T (delta: checked at N-500) */
} keys[] = {
	{ "alpha", 5, "alpha", 3, 0, 3000 },
	{ "beta", 4, "beta", 10, 2, 10000 },
	{ "gamma key", 9, "gamma\\x20key", 1, 0, 1000 },
	{ BINKEY, 5, "\\x01\\xffbin", 5, 0, 5000 },
	{ LONGKEY, sizeof LONGKEY - 1, "a-very-long-key-of-...", 2, 0, 2000 },
	{ "user:1", 6, "user:1", 4, 0, 4000 },
	{ "user:2", 6, "user:2", 6, 0, 6000 },
	{ "delta", 5, "delta", 10, 12, 9500 },
};
#define NKEYS (sizeof keys / sizeof keys[0])

/* Default order (debt descending) by index into keys[]. */
static const int by_debt[NKEYS] = { 1, 7, 6, 3, 5, 0, 4, 2 };

static char main_path[512];
static tkshm_table *main_t;
static char top_path[512];
static tkshm_table *top_t; /* made by the first top test */

/* --- helpers ------------------------------------------------------------- */

/* Splits `s` (modified) into lines, empty ones included. */
static size_t
split_lines(char *s, char **lines, size_t max)
{
	size_t n = 0;

	while (*s) {
		char *nl = strchr(s, '\n');

		if (n == max)
			fail_msg("more than %zu lines", max);
		lines[n++] = s;
		if (!nl)
			break;
		*nl = '\0';
		s = nl + 1;
	}
	return n;
}

/* Splits a line (modified) into blank-separated words. */
static size_t
split_words(char *s, char **w, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *t = strtok_r(s, " ", &save); t;
	     t = strtok_r(NULL, " ", &save)) {
		if (n == max)
			fail_msg("more than %zu words", max);
		w[n++] = t;
	}
	return n;
}

static size_t
count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* a, b (and c) all present, in that order. */
static void
expect_order(const char *frame, const char *a, const char *b, const char *c)
{
	const char *pa = strstr(frame, a), *pb = strstr(frame, b);
	const char *pc = c ? strstr(frame, c) : NULL;

	if (!pa || !pb || pa > pb || (c && (!pc || pb > pc)))
		fail_msg("expected %s, %s%s%s in that order:\n%s", a, b,
			 c ? ", " : "", c ? c : "", frame);
}

/* The test's own view of a key: the oracle for the tool's numbers. */
static tkshm_entry
oracle(tkshm_table *t, const void *key, size_t len, double now)
{
	tkshm_entry e;
	int rc = tkshm_entry_get_at(t, key, len, now, &e);

	/* A corrupt key comes back filled, with state_valid false. */
	if (rc != TKSHM_ECORRUPT)
		assert_rc(rc, TKSHM_OK);
	return e;
}

static void
check_n(tkshm_table *t, const char *key, size_t len, int n, double now,
	bool want_allowed)
{
	tkshm_decision d;

	for (int i = 0; i < n; i++) {
		assert_rc(tkshm_check_at(t, key, len, 1, now, &d), TKSHM_OK);
		if (d.allowed != want_allowed)
			fail_msg("check %d of '%s': allowed %d", i, key,
				 d.allowed);
	}
}

/* `list --json` of the main table at N with extra arguments, parsed. */
static cJSON *
list_json(const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[16] = { BIN,	  "list", main_path,
				 "--now", N_TEXT, "--json" };
	const char *extra[] = { a1, a2, a3, a4 };
	size_t n = 6;
	struct tkt_proc p;
	cJSON *j;

	for (size_t i = 0; i < 4 && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, "list --json");
	j = tkt_parse_json(p.out, "list --json");
	tkt_proc_free(&p);
	return j;
}

/* The "key" members of a list's keys, joined with '|'. */
static void
keys_of(const cJSON *j, char *buf, size_t cap)
{
	const cJSON *k;
	size_t n = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(k, tkt_json_item(j, "keys"))
	{
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "|" : "",
				      tkt_str_at(k, "key"));
		if (n >= cap)
			fail_msg("keys_of: buffer too small");
	}
}

/* keys[] indices as the JSON key texts, joined with '|'. */
static void
keys_want(const int *idx, size_t n, char *buf, size_t cap)
{
	size_t m = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char text[128];

		/* JSON holds the label: no "..." */
		snprintf(text, sizeof text, "%s", keys[idx[i]].text);
		if (strstr(text, "..."))
			*strstr(text, "...") = '\0';
		m += (size_t)snprintf(buf + m, cap - m, "%s%s", m ? "|" : "",
				      text);
	}
}

/* --- fixture ------------------------------------------------------------- */

static int
setup_main(void **state)
{
	tkshm_decision d;

	(void)state;
	snprintf(main_path, sizeof main_path, "%s", tkt_path("keys.tbl"));
	main_t = tkt_file(main_path, SPEC, 256);
	for (size_t i = 0; i < NKEYS; i++) {
		/* delta is filled half a unit earlier: debt 9500, no tie
		 * with beta's 10000. */
		double at = strcmp(keys[i].key, "delta") == 0 ? N - 500 : N;

		check_n(main_t, keys[i].key, keys[i].len, keys[i].checks, at,
			true);
		check_n(main_t, keys[i].key, keys[i].len, keys[i].denials, N,
			false);
	}
	/* Idle at N: its TAT (N - 19000) is in the past. */
	assert_rc(tkshm_check_at(main_t, "old", 3, 1, N - 20000, &d), TKSHM_OK);
	return 0;
}

static int
teardown_main(void **state)
{
	tkshm_close(main_t);
	tkshm_close(top_t);
	return tkt_teardown(state);
}

/* --- list ---------------------------------------------------------------- */

/* Every column of every row, by hand and against the library. */
static void
test_list_text(void **state)
{
	struct tkt_proc p;
	char *lines[32], *w[16], rel[16];
	const char *rem;
	size_t n, col;

	(void)state;
	RUN(&p, "list", main_path, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "list");
	n = split_lines(p.out, lines, 32);
	/* Header, 8 rows, summary. */
	assert_int_equal(n, NKEYS + 2);
	assert_string_equal(lines[NKEYS + 1], "8 keys shown of 8 live, 1 idle");
	assert_true(strncmp(lines[0], "KEY ", 4) == 0);
	/* Aligned: every row's REMAINING ends where its heading does. */
	rem = strstr(lines[0], "REMAINING");
	assert_non_null(rem);
	col = (size_t)(rem - lines[0]) + strlen("REMAINING") - 1;
	for (size_t r = 0; r < NKEYS; r++) {
		const struct fixture_key *k = &keys[by_debt[r]];
		tkshm_entry e = oracle(main_t, k->key, k->len, N);
		char want[64];

		assert_true(strlen(lines[r + 1]) > col + 1);
		if (lines[r + 1][col] < '0' || lines[r + 1][col] > '9' ||
		    lines[r + 1][col + 1] != ' ')
			fail_msg("row %zu not aligned:\n%s\n%s", r, lines[0],
				 lines[r + 1]);
		assert_int_equal(split_words(lines[r + 1], w, 16), 10);
		assert_string_equal(w[0], k->text);
		snprintf(want, sizeof want, "%lld",
			 (long long)e.peek.remaining);
		assert_string_equal(w[1], want);
		assert_string_equal(w[2], "10");
		snprintf(want, sizeof want, "%lld", (long long)e.peek.reset_at);
		assert_string_equal(w[3], want);
		snprintf(want, sizeof want, "%lld",
			 (long long)e.peek.retry_after_ms);
		assert_string_equal(w[5], want);
		snprintf(want, sizeof want, "%.0f", k->debt);
		assert_string_equal(w[6], want);
		snprintf(want, sizeof want, "%d", k->denials);
		assert_string_equal(w[7], want);
		snprintf(want, sizeof want, "%u", e.probe);
		assert_string_equal(w[8], want);
		assert_string_equal(w[9], "live");
		/* reset-at is N + debt: relative "+X.Ys". */
		snprintf(rel, sizeof rel, "+%.1fs", k->debt / 1000);
		assert_string_equal(w[4], rel);
	}
	tkt_proc_free(&p);

	/* By hand: alpha spent 3 of 10; beta spent all and was denied
	 * twice, retrying after one emission interval. */
	RUN(&p, "list", main_path, "--now", N_TEXT, "--where", "key=alpha");
	tkt_expect_status(&p, 0, "list key=alpha");
	n = split_lines(p.out, lines, 32);
	assert_int_equal(n, 3);
	assert_int_equal(split_words(lines[1], w, 16), 10);
	assert_string_equal(w[1], "7");
	assert_string_equal(w[3], "1700000003000");
	assert_string_equal(w[4], "+3.0s");
	assert_string_equal(w[6], "3000");
	assert_string_equal(lines[2],
			    "1 key shown of 8 live, 1 idle; 1 matched");
	tkt_proc_free(&p);
	RUN(&p, "list", main_path, "--now", N_TEXT, "--where", "key=beta");
	n = split_lines(p.out, lines, 32);
	assert_int_equal(n, 3);
	assert_int_equal(split_words(lines[1], w, 16), 10);
	assert_string_equal(w[1], "0");
	assert_string_equal(w[5], "1000");
	assert_string_equal(w[7], "2");
	tkt_proc_free(&p);
}

/* Every field of every key against the library's own entry. */
static void
test_list_json(void **state)
{
	cJSON *j = list_json(NULL, NULL, NULL, NULL);
	const cJSON *k;
	size_t i = 0;

	(void)state;
	assert_string_equal(tkt_str_at(j, "table"), main_path);
	tkt_expect_num(j, "now", N, "list");
	tkt_expect_num(j, "shown", 8, "list");
	tkt_expect_num(j, "matched", 8, "list");
	tkt_expect_num(j, "live", 8, "list");
	tkt_expect_num(j, "idle", 1, "list");
	tkt_expect_num(j, "corrupt", 0, "list");
	assert_int_equal(cJSON_GetArraySize(tkt_json_item(j, "keys")), 8);
	cJSON_ArrayForEach(k, tkt_json_item(j, "keys"))
	{
		const struct fixture_key *fk = &keys[by_debt[i++]];
		tkshm_entry e = oracle(main_t, fk->key, fk->len, N);
		bool lng = fk->len > TKSHM_LABEL_MAX;
		char fp[24];

		snprintf(fp, sizeof fp, "%016llx",
			 (unsigned long long)e.fingerprint);
		assert_string_equal(tkt_str_at(k, "fingerprint"), fp);
		assert_int_equal(tkt_bool_at(k, "keyTruncated"), lng);
		tkt_expect_num(k, "keyLength", (double)fk->len, fk->text);
		if (lng)
			assert_string_equal(tkt_str_at(k, "key"),
					    "a-very-long-key-of-");
		tkt_expect_num(k, "slot", (double)e.slot, fk->text);
		tkt_expect_num(k, "probe", e.probe, fk->text);
		assert_false(tkt_bool_at(k, "misplaced"));
		assert_true(tkt_bool_at(k, "stateValid"));
		assert_false(tkt_bool_at(k, "idle"));
		tkt_expect_num(k, "remaining", (double)e.peek.remaining,
			       fk->text);
		tkt_expect_num(k, "limit", 10, fk->text);
		tkt_expect_num(k, "resetAt", N + fk->debt, fk->text);
		tkt_expect_num(k, "retryAfterMs", (double)e.peek.retry_after_ms,
			       fk->text);
		assert_int_equal(tkt_bool_at(k, "allowed"), e.peek.allowed);
		tkt_expect_num(k, "debtMs", fk->debt, fk->text);
		tkt_expect_num(k, "denials", fk->denials, fk->text);
		tkt_expect_num(k, "spendableNow",
			       (double)e.forecast.spendable_now, fk->text);
		tkt_expect_num(k, "nextReplenishAt",
			       (double)e.forecast.next_replenish_at, fk->text);
		tkt_expect_num(k, "fullAt", (double)e.forecast.full_at,
			       fk->text);
	}
	/* alpha by hand: 7 left, 7 spendable, one more unit in 1 s. */
	k = cJSON_GetArrayItem(tkt_json_item(j, "keys"), 5);
	assert_string_equal(tkt_str_at(k, "key"), "alpha");
	tkt_expect_num(k, "remaining", 7, "alpha");
	tkt_expect_num(k, "spendableNow", 7, "alpha");
	tkt_expect_num(k, "nextReplenishAt", N + 1000, "alpha");
	tkt_expect_num(k, "fullAt", N + 3000, "alpha");
	assert_true(tkt_bool_at(k, "allowed"));
	/* The key's escapes survive JSON. */
	k = cJSON_GetArrayItem(tkt_json_item(j, "keys"), 3);
	assert_string_equal(tkt_str_at(k, "key"), "\\x01\\xffbin");
	cJSON_Delete(j);
}

static void
test_list_filters(void **state)
{
	static const struct {
		const char *w1, *w2;
		int want[NKEYS];
		size_t n;
	} cases[] = {
		{ "remaining<1", NULL, { 1, 7 }, 2 },
		{ "remaining<=4", NULL, { 1, 7, 6 }, 3 },
		{ "debt>5000", NULL, { 1, 7, 6 }, 3 },
		{ "debt>=5000", NULL, { 1, 7, 6, 3 }, 4 },
		{ "denials=2", NULL, { 1 }, 1 },
		{ "denials!=0", NULL, { 1, 7 }, 2 },
		{ "denials>=10", NULL, { 7 }, 1 },
		{ "debtMs<1500", NULL, { 2 }, 1 },
		{ "key=alpha", NULL, { 0 }, 1 },
		{ "key!=alpha", NULL, { 1, 7, 6, 3, 5, 4, 2 }, 7 },
		{ "key^=user:", NULL, { 6, 5 }, 2 },
		{ "key=gamma\\x20key", NULL, { 2 }, 1 },
		{ "key=\\x01\\xFFbin", NULL, { 3 }, 1 },
		/* Exact beyond the label: found by fingerprint. */
		{ "key=" LONGKEY, NULL, { 4 }, 1 },
		{ "key=a-very-long-key-of-more-than-19-bytez", NULL, { 0 }, 0 },
		{ "key^=a-very-long-key-of-", NULL, { 4 }, 1 },
		{ "key=nobody", NULL, { 0 }, 0 },
		{ "debt>2000", "remaining>=5", { 3, 5, 0 }, 3 },
		{ "key^=user", "debt<5000", { 5 }, 1 },
		{ "resetAt>1700000005000", NULL, { 1, 7, 6 }, 3 },
		{ "reset=1700000003000", NULL, { 0 }, 1 },
		{ "retryAfter>0", NULL, { 1, 7 }, 2 },
		{ "spendable=5", NULL, { 3 }, 1 },
		{ "limit=10", NULL, { 1, 7, 6, 3, 5, 0, 4, 2 }, 8 },
		{ "limit!=10", NULL, { 0 }, 0 },
		{ "probe<8", NULL, { 1, 7, 6, 3, 5, 0, 4, 2 }, 8 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char got[512], want[512];
		cJSON *j =
			list_json("--where", cases[i].w1,
				  cases[i].w2 ? "--where" : NULL, cases[i].w2);

		keys_of(j, got, sizeof got);
		keys_want(cases[i].want, cases[i].n, want, sizeof want);
		if (strcmp(got, want) != 0)
			fail_msg("--where %s%s%s: got [%s], want [%s]",
				 cases[i].w1, cases[i].w2 ? " --where " : "",
				 cases[i].w2 ? cases[i].w2 : "", got, want);
		tkt_expect_num(j, "matched", (double)cases[i].n, cases[i].w1);
		tkt_expect_num(j, "live", 8, cases[i].w1);
		cJSON_Delete(j);
	}
}

static void
test_list_usage_errors(void **state)
{
	static const struct {
		const char *opt, *value, *named;
	} cases[] = {
		{ "--where", "foo<1", "unknown field 'foo'" },
		{ "--where", "debt~1", "unknown operator" },
		{ "--where", "debt<abc", "'abc' is not a number" },
		{ "--where", "debt<", "is not a number" },
		{ "--where", "<5", "expected FIELD OP VALUE" },
		{ "--where", "remaining^=1", "key only" },
		{ "--where", "key<abc", "key takes only" },
		{ "--where", "key^=12345678901234567890", "at most 19" },
		{ "--where", "key=\\q", "bad escape" },
		{ "--where", "key=", "empty" },
		{ "--sort", "bogus", "unknown field 'bogus'" },
		{ "--limit", "0", "at least 1" },
		{ "--limit", "x", "--limit" },
		{ "--now", "-1", "--now" },
		{ "--bogus", "1", "--bogus" },
	};
	struct tkt_proc p;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		RUN(&p, "list", main_path, cases[i].opt, cases[i].value);
		tkt_expect_status(&p, 2, cases[i].value);
		tkt_expect_contains(p.err, cases[i].named, cases[i].value);
		tkt_expect_contains(p.err, "list --help", cases[i].value);
		assert_string_equal(p.out, "");
		tkt_proc_free(&p);
	}
	RUN(&p, "list");
	tkt_expect_status(&p, 2, "list without PATH");
	tkt_proc_free(&p);
	RUN(&p, "list", tkt_path("absent.tbl"));
	tkt_expect_status(&p, 3, "list of a missing table");
	tkt_proc_free(&p);
}

static void
test_list_sort_limit(void **state)
{
	static const int by_key[NKEYS] = { 3, 4, 0, 1, 7, 2, 5, 6 };
	static const int debt_asc[NKEYS] = { 2, 4, 0, 5, 3, 6, 7, 1 };
	int rev[NKEYS];
	char got[512], want[512];
	struct tkt_proc p;
	cJSON *j;
	const cJSON *k;
	double last = INFINITY;

	(void)state;
	j = list_json("--sort", "key", NULL, NULL);
	keys_of(j, got, sizeof got);
	keys_want(by_key, NKEYS, want, sizeof want);
	assert_string_equal(got, want);
	cJSON_Delete(j);
	for (size_t i = 0; i < NKEYS; i++)
		rev[i] = by_key[NKEYS - 1 - i];
	j = list_json("--sort", "key", "--desc", NULL);
	keys_of(j, got, sizeof got);
	keys_want(rev, NKEYS, want, sizeof want);
	assert_string_equal(got, want);
	cJSON_Delete(j);
	j = list_json("--asc", NULL, NULL, NULL);
	keys_of(j, got, sizeof got);
	keys_want(debt_asc, NKEYS, want, sizeof want);
	assert_string_equal(got, want);
	cJSON_Delete(j);

	/* Denials descending: delta (12), beta (2), then the zeros. */
	j = list_json("--sort", "denials", NULL, NULL);
	assert_string_equal(
		tkt_str_at(cJSON_GetArrayItem(tkt_json_item(j, "keys"), 0),
			   "key"),
		"delta");
	assert_string_equal(
		tkt_str_at(cJSON_GetArrayItem(tkt_json_item(j, "keys"), 1),
			   "key"),
		"beta");
	cJSON_Delete(j);
	/* Remaining descending: never increasing. */
	j = list_json("--sort", "remaining", NULL, NULL);
	assert_int_equal(cJSON_GetArraySize(tkt_json_item(j, "keys")), 8);
	cJSON_ArrayForEach(k, tkt_json_item(j, "keys"))
	{
		assert_true(tkt_num_at(k, "remaining") <= last);
		last = tkt_num_at(k, "remaining");
	}
	assert_true(last == 0);
	cJSON_Delete(j);

	/* --limit after sorting. */
	j = list_json("--limit", "3", NULL, NULL);
	keys_of(j, got, sizeof got);
	keys_want(by_debt, 3, want, sizeof want);
	assert_string_equal(got, want);
	tkt_expect_num(j, "shown", 3, "--limit 3");
	tkt_expect_num(j, "matched", 8, "--limit 3");
	cJSON_Delete(j);
	j = list_json("--limit", "2", "--sort", "spendable");
	keys_of(j, got, sizeof got);
	assert_string_equal(got, "gamma\\x20key|a-very-long-key-of-");
	cJSON_Delete(j);
	RUN(&p, "list", main_path, "--now", N_TEXT, "--limit", "3");
	tkt_expect_status(&p, 0, "list --limit 3");
	tkt_expect_contains(p.out,
			    "\n3 keys shown of 8 live, 1 idle; 8 matched\n",
			    "--limit summary");
	assert_int_equal(count_of(p.out, "\n"), 5);
	tkt_proc_free(&p);
}

static void
test_list_idle(void **state)
{
	cJSON *j = list_json("--idle", NULL, NULL, NULL);
	const cJSON *old;
	struct tkt_proc p;

	(void)state;
	tkt_expect_num(j, "shown", 9, "--idle");
	old = cJSON_GetArrayItem(tkt_json_item(j, "keys"),
				 8); /* debt 0: last */
	assert_string_equal(tkt_str_at(old, "key"), "old");
	assert_true(tkt_bool_at(old, "idle"));
	tkt_expect_num(old, "remaining", 10, "old");
	tkt_expect_num(old, "debtMs", 0, "old");
	cJSON_Delete(j);
	j = list_json("--where", "key=old", NULL, NULL);
	tkt_expect_num(j, "shown", 0, "idle key without --idle");
	cJSON_Delete(j);

	/* 20 s later every key is idle. */
	RUN(&p, "list", main_path, "--now", "1700000020000");
	tkt_expect_status(&p, 0, "list later");
	tkt_expect_contains(p.out, "0 keys shown of 0 live, 9 idle", "later");
	tkt_proc_free(&p);
	RUN(&p, "list", main_path, "--now", "1700000020000", "--idle",
	    "--where", "key^=user");
	tkt_expect_contains(p.out, "2 keys shown of 0 live, 9 idle; 2 matched",
			    "later --idle");
	tkt_expect_contains(p.out, "  idle\n", "later --idle");
	tkt_proc_free(&p);
}

/* --- show ---------------------------------------------------------------- */

static void
test_show(void **state)
{
	tkshm_entry e = oracle(main_t, "beta", 4, N);
	struct tkt_proc p;
	cJSON *j;

	(void)state;
	RUN(&p, "show", main_path, "alpha", "--now", N_TEXT);
	tkt_expect_status(&p, 0, "show alpha");
	tkt_expect_contains(p.out, "key: alpha\n", "show alpha");
	tkt_expect_contains(p.out, "in table: yes\n", "show alpha");
	tkt_expect_contains(p.out, "state: live\n", "show alpha");
	tkt_expect_contains(p.out, "allowed: yes\n", "show alpha");
	tkt_expect_contains(p.out, "remaining: 7\n", "show alpha");
	tkt_expect_contains(p.out, "limit: 10\n", "show alpha");
	tkt_expect_contains(p.out, "reset at: 1700000003000 (+3.0s)\n",
			    "alpha");
	tkt_expect_contains(p.out, "retry after: 0 ms\n", "show alpha");
	tkt_expect_contains(p.out, "debt: 3000 ms\n", "show alpha");
	tkt_expect_contains(p.out, "denials: 0\n", "show alpha");
	tkt_expect_contains(p.out, "spendable now: 7\n", "show alpha");
	tkt_expect_contains(p.out, "next replenish at: 1700000001000 (+1.0s)\n",
			    "show alpha");
	tkt_expect_contains(p.out, "full at: 1700000003000 (+3.0s)\n", "alpha");
	tkt_proc_free(&p);

	RUN(&p, "show", main_path, "beta", "--now", N_TEXT, "--json");
	tkt_expect_status(&p, 0, "show beta --json");
	j = tkt_parse_json(p.out, "show --json");
	assert_true(tkt_bool_at(j, "inTable"));
	assert_string_equal(tkt_str_at(j, "key"), "beta");
	tkt_expect_num(j, "denials", 2, "beta");
	tkt_expect_num(j, "remaining", 0, "beta");
	tkt_expect_num(j, "retryAfterMs", 1000, "beta");
	assert_false(tkt_bool_at(j, "allowed"));
	tkt_expect_num(j, "debtMs", 10000, "beta");
	tkt_expect_num(j, "slot", (double)e.slot, "beta");
	tkt_expect_num(j, "fullAt", (double)e.forecast.full_at, "beta");
	tkt_expect_num(j, "nextReplenishAt",
		       (double)e.forecast.next_replenish_at, "beta");
	cJSON_Delete(j);
	tkt_proc_free(&p);

	/* The whole key, not the label's 19 bytes. */
	RUN(&p, "show", main_path, LONGKEY, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "show long key");
	tkt_expect_contains(p.out, "key: " LONGKEY "\n", "long key");
	tkt_expect_contains(p.out, "key length: 37\n", "long key");
	tkt_expect_contains(p.out, "label: a-very-long-key-of-...\n", "long");
	tkt_expect_contains(p.out, "debt: 2000 ms\n", "long key");
	tkt_proc_free(&p);

	/* Absent: exit 1, the message, and what a peek sees. */
	RUN(&p, "show", main_path, "nobody", "--now", N_TEXT);
	tkt_expect_status(&p, 1, "show absent");
	tkt_expect_contains(p.err, "key not in the table", "show absent");
	tkt_expect_contains(p.out, "in table: no\n", "show absent");
	tkt_expect_contains(p.out, "remaining: 10\n", "show absent");
	tkt_expect_contains(p.out, "remembered debt: no\n", "show absent");
	tkt_proc_free(&p);
	RUN(&p, "show", main_path, "nobody", "--now", N_TEXT, "--json");
	tkt_expect_status(&p, 1, "show absent --json");
	j = tkt_parse_json(p.out, "show absent --json");
	assert_false(tkt_bool_at(j, "inTable"));
	tkt_expect_num(tkt_json_item(j, "peek"), "remaining", 10,
		       "absent peek");
	assert_true(tkt_bool_at(tkt_json_item(j, "peek"), "allowed"));
	cJSON_Delete(j);
	tkt_proc_free(&p);

	/* Usage. */
	RUN(&p, "show", main_path);
	tkt_expect_status(&p, 2, "show without KEY");
	tkt_expect_contains(p.err, "missing KEY", "show without KEY");
	tkt_proc_free(&p);
	RUN(&p, "show", main_path, "a\\xZZ");
	tkt_expect_status(&p, 2, "show with a bad escape");
	tkt_proc_free(&p);
	RUN(&p, "show", main_path, "a", "b");
	tkt_expect_status(&p, 2, "show with an extra operand");
	tkt_proc_free(&p);
	RUN(&p, "show", tkt_path("absent.tbl"), "a");
	tkt_expect_status(&p, 3, "show of a missing table");
	tkt_proc_free(&p);
}

/* An evicted key has no slot, but a peek shows its remembered debt. */
static void
test_show_evicted(void **state)
{
	const char *path = tkt_path("evict.tbl");
	tkshm_table *t = tkt_file(path, SPEC, 8);
	char key[8], evicted[8] = "";
	tkshm_entry e;
	struct tkt_proc p;

	(void)state;
	/* 8 slots are one window: the ninth key evicts the least
	 * indebted (k0, one check). */
	for (int i = 0; i < 9; i++) {
		snprintf(key, sizeof key, "k%d", i);
		check_n(t, key, 2, i + 1, N, true);
	}
	for (int i = 0; i < 9; i++) {
		snprintf(key, sizeof key, "k%d", i);
		if (tkshm_entry_get_at(t, key, 2, N, &e) == TKSHM_ENOENT)
			snprintf(evicted, sizeof evicted, "%s", key);
	}
	assert_string_equal(evicted, "k0");
	RUN(&p, "show", path, evicted, "--now", N_TEXT);
	tkt_expect_status(&p, 1, "show evicted");
	tkt_expect_contains(p.err, "key not in the table", "show evicted");
	tkt_expect_contains(p.out, "in table: no\n", "show evicted");
	tkt_expect_contains(p.out, "remaining: 9\n", "show evicted");
	tkt_expect_contains(p.out, "remembered debt: yes\n", "show evicted");
	tkt_proc_free(&p);
	tkshm_close(t);
}

/* Key text printed by list, passed to show, finds the same key. */
static void
test_key_round_trip(void **state)
{
	struct tkt_proc p, q;
	char *lines[32], *w[16];
	size_t n, found = 0;

	(void)state;
	RUN(&p, "list", main_path, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "list");
	n = split_lines(p.out, lines, 32);
	for (size_t r = 1; r + 1 < n; r++) {
		const struct fixture_key *k = &keys[by_debt[r - 1]];
		tkshm_entry e = oracle(main_t, k->key, k->len, N);
		char want[64];

		split_words(lines[r], w, 16);
		if (strstr(w[0], "..."))
			continue; /* only a prefix: not a key */
		RUN(&q, "show", main_path, w[0], "--now", N_TEXT);
		tkt_expect_status(&q, 0, w[0]);
		snprintf(want, sizeof want, "fingerprint: %016llx\n",
			 (unsigned long long)e.fingerprint);
		tkt_expect_contains(q.out, want, w[0]);
		snprintf(want, sizeof want, "key: %s\n", w[0]);
		tkt_expect_contains(q.out, want, w[0]);
		tkt_proc_free(&q);
		found++;
	}
	/* Every key but the long one, the escaped ones included. */
	assert_int_equal(found, NKEYS - 1);
	tkt_proc_free(&p);
}

/* --- a corrupt state ----------------------------------------------------- */

/* Overwrites the state word of `slot` with -1.0, a TAT no GCRA state
 * can have (I4), keeping its fingerprint: a REAL slot with a bad state. */
static void
corrupt_slot(const char *path, uint64_t slot)
{
	struct tk_header h;
	struct tk_slot s;
	int fd = open(path, O_RDWR);
	off_t off;
	double bad = -1.0;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	off = (off_t)(h.buckets_off + slot * sizeof s);
	assert_int_equal(pread(fd, &s, sizeof s, off), (ssize_t)sizeof s);
	memcpy(&s.st, &bad, sizeof bad);
	assert_int_equal(pwrite(fd, &s, sizeof s, off), (ssize_t)sizeof s);
	close(fd);
}

/* Makes the label of `slot` name another fingerprint (its check, the low
 * 32 bits of w[0], changed): the table then holds no intact label for the
 * key (as after a writer killed while it wrote one). */
static void
unlabel_slot(const char *path, uint64_t slot)
{
	struct tk_header h;
	struct tk_label l;
	int fd = open(path, O_RDWR);
	off_t off;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	off = (off_t)(h.labels_off + slot * sizeof l);
	assert_int_equal(pread(fd, &l, sizeof l, off), (ssize_t)sizeof l);
	l.w[0] ^= 1;
	assert_int_equal(pwrite(fd, &l, sizeof l, off), (ssize_t)sizeof l);
	close(fd);
}

static void
test_corrupt_state(void **state)
{
	const char *path = tkt_path("corrupt.tbl");
	tkshm_table *t = tkt_file(path, SPEC, 64);
	tkshm_entry e;
	struct tkt_proc p;
	cJSON *j;
	const cJSON *k;
	char want[64];

	(void)state;
	check_n(t, "good1", 5, 2, N, true);
	check_n(t, "good2", 5, 6, N, true);
	check_n(t, "bad", 3, 1, N, true);
	e = oracle(t, "bad", 3, N);
	corrupt_slot(path, e.slot);

	RUN(&p, "list", path, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "list with a corrupt state");
	/* First, whatever the order, with its known columns. */
	tkt_expect_contains(p.out, "\nbad ", "corrupt listed first");
	expect_order(p.out, "\nbad ", "\ngood2 ", NULL);
	tkt_expect_contains(p.out, "corrupt\n", "corrupt state shown");
	tkt_expect_contains(p.out, "3 keys shown of 2 live, 0 idle, 1 corrupt",
			    "summary");
	tkt_proc_free(&p);
	/* In every order: by key descending it would be last. */
	RUN(&p, "list", path, "--now", N_TEXT, "--sort", "key", "--desc");
	tkt_expect_status(&p, 0, "list --sort key --desc");
	expect_order(p.out, "\nbad ", "\ngood2 ", "\ngood1 ");
	tkt_proc_free(&p);

	/* Numeric filters cannot drop it; a key filter can. */
	RUN(&p, "list", path, "--now", N_TEXT, "--json", "--where",
	    "debt>100000", "--sort", "key", "--asc");
	tkt_expect_status(&p, 0, "list --json corrupt");
	j = tkt_parse_json(p.out, "list --json corrupt");
	tkt_expect_num(j, "shown", 1, "corrupt");
	tkt_expect_num(j, "corrupt", 1, "corrupt");
	k = cJSON_GetArrayItem(tkt_json_item(j, "keys"), 0);
	assert_string_equal(tkt_str_at(k, "key"), "bad");
	assert_false(tkt_bool_at(k, "stateValid"));
	assert_true(cJSON_IsNull(tkt_json_item(k, "remaining")));
	assert_true(cJSON_IsNull(tkt_json_item(k, "debtMs")));
	tkt_expect_num(k, "slot", (double)e.slot, "corrupt");
	cJSON_Delete(j);
	tkt_proc_free(&p);
	RUN(&p, "list", path, "--now", N_TEXT, "--where", "key=good1");
	tkt_expect_contains(p.out, "1 key shown", "key filter");
	assert_null(strstr(p.out, "corrupt\n"));
	tkt_proc_free(&p);

	/* Without a label: '?' and the fingerprint, null in JSON, and
	 * key= still finds it (by fingerprint). */
	e = oracle(t, "good2", 5, N);
	unlabel_slot(path, e.slot);
	snprintf(want, sizeof want, "\n?%016llx ",
		 (unsigned long long)e.fingerprint);
	RUN(&p, "list", path, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "list without a label");
	tkt_expect_contains(p.out, want, "list without a label");
	tkt_proc_free(&p);
	RUN(&p, "list", path, "--now", N_TEXT, "--json", "--where",
	    "key=good2");
	j = tkt_parse_json(p.out, "list --json without a label");
	tkt_expect_num(j, "shown", 1, "key= without a label");
	k = cJSON_GetArrayItem(tkt_json_item(j, "keys"), 0);
	assert_true(cJSON_IsNull(tkt_json_item(k, "key")));
	assert_true(cJSON_IsNull(tkt_json_item(k, "keyLength")));
	tkt_expect_num(k, "debtMs", 6000, "without a label");
	cJSON_Delete(j);
	tkt_proc_free(&p);
	e = oracle(t, "bad", 3, N);

	RUN(&p, "show", path, "bad", "--now", N_TEXT);
	tkt_expect_status(&p, 1, "show of a corrupt state");
	tkt_expect_contains(p.out, "state: corrupt\n", "show corrupt");
	tkt_expect_contains(p.err, "corrupt", "show corrupt");
	tkt_proc_free(&p);
	RUN(&p, "top", path, "--iterations", "1", "--json");
	tkt_expect_status(&p, 0, "top of a corrupt state");
	j = tkt_parse_json(p.out, "top corrupt");
	k = cJSON_GetArrayItem(tkt_json_item(j, "keys"), 0);
	assert_false(tkt_bool_at(k, "stateValid"));
	cJSON_Delete(j);
	tkt_proc_free(&p);
	tkshm_close(t);
}

/* --- top ----------------------------------------------------------------- */

#define TOP_SPEC "gcra:limit=100,periodMs=1000000,burst=100" /* T = 10 s */

/* Three keys whose debts stay far apart for the whole test (even a slow
 * one): about 500 s, 200 s and 50 s, falling by 1 ms per ms, on the real
 * clock top uses. */
static void
top_table(void)
{
	if (top_t)
		return;
	snprintf(top_path, sizeof top_path, "%s", tkt_path("top.tbl"));
	top_t = tkt_file(top_path, TOP_SPEC, 64);
	for (int i = 0; i < 50; i++) {
		tkshm_decision d;

		assert_rc(tkshm_check(top_t, "rank1-hot", 9, 1, &d), TKSHM_OK);
		if (i < 20)
			assert_rc(tkshm_check(top_t, "rank2-warm", 10, 1, &d),
				  TKSHM_OK);
		if (i < 5)
			assert_rc(tkshm_check(top_t, "rank3-cool", 10, 1, &d),
				  TKSHM_OK);
	}
}

struct pty_out {
	char *buf;
	size_t len, cap;
	int status;
};

static void
pty_append(struct pty_out *o, const char *data, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->buf = realloc(o->buf, o->cap);
		assert_non_null(o->buf);
	}
	memcpy(o->buf + o->len, data, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

/* Runs BIN under a pseudo-terminal of `rows` lines; meanwhile keeps
 * checking rank1-hot (its debt only grows) and, if `interrupt`, sends
 * SIGINT once a first frame was drawn. */
static void
run_pty(const char *const argv[], unsigned short rows, bool interrupt,
	struct pty_out *o)
{
	struct winsize ws = { .ws_row = rows, .ws_col = 200 };
	double deadline = tkt_seconds() + 20;
	bool sent = false;
	int master, st;
	pid_t pid;

	memset(o, 0, sizeof *o);
	pty_append(o, "", 0);
	pid = forkpty(&master, NULL, NULL, &ws);
	assert_true(pid >= 0);
	if (pid == 0) {
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (;;) {
		struct pollfd pfd = { master, POLLIN, 0 };
		char buf[4096];
		tkshm_decision d;
		ssize_t n;

		if (tkt_seconds() > deadline) {
			kill(pid, SIGKILL);
			fail_msg("top under a pty did not end:\n%s", o->buf);
		}
		if (interrupt && !sent && strstr(o->buf, "\033[J")) {
			kill(pid, SIGINT);
			sent = true;
		}
		if (poll(&pfd, 1, 10) == 0) {
			assert_rc(tkshm_check(top_t, "rank1-hot", 9, 1, &d),
				  TKSHM_OK);
			continue;
		}
		n = read(master, buf, sizeof buf);
		if (n > 0)
			pty_append(o, buf, (size_t)n);
		else if (n < 0 && errno == EINTR)
			continue;
		else
			break; /* EIO: the child's side is closed */
	}
	close(master);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	o->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The text after the last "\033[H": the last frame drawn. */
static const char *
last_frame(const char *out)
{
	const char *p = strstr(out, "\033[H"), *q;

	assert_non_null(p);
	while ((q = strstr(p + 1, "\033[H")))
		p = q;
	return p;
}

static void
test_top_tty(void **state)
{
	const char *const argv[] = { BIN,	   "top", top_path,
				     "--interval", "100", "--iterations",
				     "3",	   NULL };
	struct pty_out o;
	const char *f;

	(void)state;
	top_table();
	run_pty(argv, 40, false, &o);
	if (o.status != 0)
		fail_msg("top exited %d:\n%s", o.status, o.buf);
	/* Cursor hidden first, shown last; three redraws in place. */
	assert_true(strncmp(o.buf, "\033[?25l", 6) == 0);
	assert_non_null(strstr(o.buf + o.len - 12, "\033[?25h"));
	assert_int_equal(count_of(o.buf, "\033[H"), 3);
	assert_int_equal(count_of(o.buf, "\033[J"), 3);
	assert_true(count_of(o.buf, "\033[K") >= 3 * 7);
	f = last_frame(o.buf);
	tkt_expect_contains(f, top_path, "header");
	tkt_expect_contains(f, "3 live", "header");
	tkt_expect_contains(f, "allowed/s:", "header");
	expect_order(f, "rank1-hot", "rank2-warm", "rank3-cool");
	free(o.buf);

	/* A window of 7 lines: 4 of header, 2 rows, the last line free. */
	{
		const char *const one[] = { BIN,      "top",
					    top_path, "--iterations",
					    "1",      NULL };

		run_pty(one, 7, false, &o);
		assert_int_equal(o.status, 0);
		f = last_frame(o.buf);
		expect_order(f, "rank1-hot", "rank2-warm", NULL);
		assert_null(strstr(f, "rank3-cool"));
		free(o.buf);
	}
}

static void
test_top_sigint(void **state)
{
	const char *const argv[] = { BIN,	   "top", top_path,
				     "--interval", "100", NULL };
	struct pty_out o;

	(void)state;
	top_table();
	run_pty(argv, 40, true, &o);
	if (o.status != 0)
		fail_msg("top after SIGINT exited %d:\n%s", o.status, o.buf);
	assert_true(o.len > 12);
	/* The terminal gets its cursor back. */
	assert_non_null(strstr(o.buf + o.len - 12, "\033[?25h"));
	free(o.buf);
}

static void
test_top_pipe(void **state)
{
	struct tkt_proc p;
	char *lines[16];
	size_t n;

	(void)state;
	top_table();
	RUN(&p, "top", top_path, "--interval", "100", "--iterations", "2",
	    "--json");
	tkt_expect_status(&p, 0, "top --json");
	assert_null(strchr(p.out, '\033'));
	n = split_lines(p.out, lines, 16);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		cJSON *j = tkt_parse_json(lines[i], "top --json line");
		const cJSON *k = tkt_json_item(j, "keys");
		double last = INFINITY;
		const cJSON *e;

		assert_string_equal(tkt_str_at(j, "table"), top_path);
		assert_string_equal(tkt_str_at(j, "by"), "debt");
		tkt_expect_num(j, "live", 3, "top --json");
		assert_int_equal(cJSON_GetArraySize(k), 3);
		assert_string_equal(tkt_str_at(cJSON_GetArrayItem(k, 0), "key"),
				    "rank1-hot");
		assert_string_equal(tkt_str_at(cJSON_GetArrayItem(k, 2), "key"),
				    "rank3-cool");
		cJSON_ArrayForEach(e, k)
		{
			assert_true(tkt_num_at(e, "debtMs") < last);
			last = tkt_num_at(e, "debtMs");
		}
		/* Rates need a previous refresh. */
		if (i == 0)
			assert_true(cJSON_IsNull(
				tkt_json_item(j, "allowedPerSec")));
		else
			assert_true(tkt_num_at(j, "allowedPerSec") >= 0);
		cJSON_Delete(j);
	}
	tkt_proc_free(&p);

	/* Text frames one after another, a blank line between, --limit. */
	RUN(&p, "top", top_path, "--interval", "100", "--iterations", "2",
	    "--limit", "2");
	tkt_expect_status(&p, 0, "top text");
	assert_null(strchr(p.out, '\033'));
	assert_int_equal(count_of(p.out, "\nKEY "), 2);
	assert_int_equal(count_of(p.out, "\n\ntkshm-inspect top"), 1);
	assert_int_equal(count_of(p.out, "rank1-hot"), 2);
	assert_int_equal(count_of(p.out, "rank3-cool"), 0);
	expect_order(p.out, "rank1-hot", "rank2-warm", NULL);
	tkt_proc_free(&p);
}

/* Ranked by denials per second: a key denied all the time comes before
 * one with many more denials that has stopped being denied. */
static void
test_top_rate(void **state)
{
	const char *path = tkt_path("rate.tbl");
	tkshm_table *t = tkt_file(path, "gcra:limit=1,periodMs=100000000", 64);
	struct tkt_proc p;
	char *lines[16];
	size_t n;
	pid_t helper;

	(void)state;
	check_n(t, "rate-slow", 9, 1, tkshm_now_ms(), true);
	check_n(t, "rate-slow", 9, 1000, tkshm_now_ms(), false);
	check_n(t, "rate-fast", 9, 1, tkshm_now_ms(), true);
	check_n(t, "rate-fast", 9, 5, tkshm_now_ms(), false);

	RUN(&p, "top", path, "--by", "denials", "--iterations", "1", "--json");
	tkt_expect_status(&p, 0, "top --by denials");
	expect_order(p.out, "\"rate-slow\"", "\"rate-fast\"", NULL);
	tkt_proc_free(&p);

	helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) {
		for (;;) {
			tkshm_decision d;

			tkshm_check(t, "rate-fast", 9, 1, &d);
			usleep(1000);
		}
	}
	RUN(&p, "top", path, "--by", "rate", "--interval", "150",
	    "--iterations", "3", "--json");
	kill(helper, SIGKILL);
	waitpid(helper, NULL, 0);
	tkt_expect_status(&p, 0, "top --by rate");
	n = split_lines(p.out, lines, 16);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		cJSON *j = tkt_parse_json(lines[i], "top --by rate");
		const cJSON *k = tkt_json_item(j, "keys");
		const cJSON *k0 = cJSON_GetArrayItem(k, 0);
		const cJSON *k1 = cJSON_GetArrayItem(k, 1);

		assert_string_equal(tkt_str_at(j, "by"), "rate");
		assert_int_equal(cJSON_GetArraySize(k), 2);
		if (i == 0) {
			/* No rates yet: total denials break the tie. */
			assert_true(cJSON_IsNull(
				tkt_json_item(k0, "deniedPerSec")));
			assert_string_equal(tkt_str_at(k0, "key"), "rate-slow");
		} else {
			assert_string_equal(tkt_str_at(k0, "key"), "rate-fast");
			assert_true(tkt_num_at(k0, "deniedPerSec") > 0);
			assert_string_equal(tkt_str_at(k1, "key"), "rate-slow");
			tkt_expect_num(k1, "deniedPerSec", 0, "rate-slow");
			assert_true(tkt_num_at(j, "deniedPerSec") > 0);
		}
		cJSON_Delete(j);
	}
	tkt_proc_free(&p);
	tkshm_close(t);
}

static void
test_top_usage(void **state)
{
	static const struct {
		const char *opt, *value, *named;
	} cases[] = {
		{ "--by", "speed", "'speed'" },
		{ "--interval", "5", "--interval" },
		{ "--interval", "x", "--interval" },
		{ "--iterations", "0", "--iterations" },
		{ "--limit", "0", "--limit" },
	};
	struct tkt_proc p;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		RUN(&p, "top", main_path, cases[i].opt, cases[i].value);
		tkt_expect_status(&p, 2, cases[i].value);
		tkt_expect_contains(p.err, cases[i].named, cases[i].value);
		tkt_proc_free(&p);
	}
	RUN(&p, "top", tkt_path("absent.tbl"), "--iterations", "1");
	tkt_expect_status(&p, 3, "top of a missing table");
	tkt_proc_free(&p);
}

static void
test_help(void **state)
{
	static const char *const cmds[] = { "list", "show", "top" };
	struct tkt_proc p;

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char usage[64];

		RUN(&p, cmds[i], "--help");
		tkt_expect_status(&p, 0, cmds[i]);
		snprintf(usage, sizeof usage, "Usage: tkshm-inspect %s PATH",
			 cmds[i]);
		tkt_expect_contains(p.out, usage, cmds[i]);
		tkt_expect_contains(p.out, "Exit status:", cmds[i]);
		assert_string_equal(p.err, "");
		tkt_proc_free(&p);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_list_text),
		cmocka_unit_test(test_list_json),
		cmocka_unit_test(test_list_filters),
		cmocka_unit_test(test_list_usage_errors),
		cmocka_unit_test(test_list_sort_limit),
		cmocka_unit_test(test_list_idle),
		cmocka_unit_test(test_show),
		cmocka_unit_test(test_show_evicted),
		cmocka_unit_test(test_key_round_trip),
		cmocka_unit_test(test_corrupt_state),
		cmocka_unit_test(test_top_tty),
		cmocka_unit_test(test_top_sigint),
		cmocka_unit_test(test_top_pipe),
		cmocka_unit_test(test_top_rate),
		cmocka_unit_test(test_top_usage),
	};

	return cmocka_run_group_tests(tests, setup_main, teardown_main);
}
