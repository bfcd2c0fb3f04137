/*
 * test_inspect.c - drives the built tkshm-inspect binary (TKSHM_INSPECT_BIN)
 * through fork/exec and pipes: golden-vector replays, malformed input,
 * create/stats/replay on one table, verify on good, corrupt and foreign
 * files, --help, and two replays sharing one table at once.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"
#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN

/* --- helpers ------------------------------------------------------------- */

/* Runs tkshm-inspect with up to 15 arguments (NULL-terminated). */
#define RUN(p, input, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, (input))

/* Splits `s` (modified) into lines; returns their number. */
static size_t
split_lines(char *s, char **lines, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	for (char *l = strtok_r(s, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		if (n == max)
			fail_msg("more than %zu lines", max);
		lines[n++] = l;
	}
	return n;
}

static size_t
count_lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* `stats --json PATH [--now MS]`, parsed. */
static cJSON *
stats_json(const char *path, const char *now)
{
	struct tkt_proc p;
	cJSON *j;

	if (now)
		RUN(&p, NULL, "stats", path, "--json", "--now", now);
	else
		RUN(&p, NULL, "stats", "--json", path);
	tkt_expect_status(&p, 0, "stats --json");
	j = tkt_parse_json(p.out, "stats --json");
	tkt_proc_free(&p);
	return j;
}

static void
create_table(const char *path, const char *spec, const char *slots)
{
	struct tkt_proc p;

	RUN(&p, NULL, "create", path, "--policy", spec, "--slots", slots);
	tkt_expect_status(&p, 0, "create");
	tkt_expect_contains(p.out, "created", "create output");
	tkt_proc_free(&p);
}

/* Checks one output line against a golden `expect` object, resetAt moved
 * by `offset`: the five fields, in ThrottleKit's order, and nothing else. */
static void
check_decision(const char *line, const cJSON *expect, double offset,
	       const char *what)
{
	static const char *const names[] = { "allowed", "limit", "remaining",
					     "resetAt", "retryAfterMs" };
	cJSON *got = tkt_parse_json(line, what);
	const cJSON *f = got->child;

	for (size_t i = 0; i < 5; i++, f = f ? f->next : NULL) {
		const cJSON *want =
			cJSON_GetObjectItemCaseSensitive(expect, names[i]);
		if (!f || strcmp(f->string, names[i]) != 0)
			fail_msg("%s: field %zu is not \"%s\": %s", what, i,
				 names[i], line);
		if (!want)
			fail_msg("%s: golden vector lacks %s", what, names[i]);
		if (i == 0) {
			if (!cJSON_IsBool(f) ||
			    cJSON_IsTrue(f) != cJSON_IsTrue(want))
				fail_msg("%s: allowed differs: %s", what, line);
			continue;
		}
		if (!cJSON_IsNumber(f) ||
		    f->valuedouble != want->valuedouble + (i == 3 ? offset : 0))
			fail_msg("%s: %s is %s, expected %.17g", what, names[i],
				 line,
				 want->valuedouble + (i == 3 ? offset : 0));
	}
	if (f)
		fail_msg("%s: extra field \"%s\": %s", what, f->string, line);
	cJSON_Delete(got);
}

/* --- tests --------------------------------------------------------------- */

static void
test_help_and_version(void **state)
{
	static const char *const cmds[] = { "create", "replay", "verify",
					    "stats" };
	struct tkt_proc p;

	(void)state;
	RUN(&p, NULL, "--help");
	tkt_expect_status(&p, 0, "--help");
	tkt_expect_contains(p.out, "Usage:", "--help");
	tkt_expect_contains(p.out, "Exit status:", "--help");
	tkt_proc_free(&p);
	for (size_t i = 0; i < 4; i++) {
		RUN(&p, NULL, cmds[i], "--help");
		tkt_expect_status(&p, 0, cmds[i]);
		tkt_expect_contains(p.out, cmds[i], "subcommand --help");
		tkt_expect_contains(p.out, "Exit status:", "subcommand --help");
		tkt_proc_free(&p);
		RUN(&p, NULL, "help", cmds[i]);
		tkt_expect_status(&p, 0, "help CMD");
		tkt_proc_free(&p);
	}
	RUN(&p, NULL, "--version");
	tkt_expect_status(&p, 0, "--version");
	tkt_expect_contains(p.out, tkshm_version(), "--version");
	tkt_proc_free(&p);

	/* Usage errors: exit 2, message prefixed on stderr. */
	RUN(&p, NULL, "frobnicate");
	tkt_expect_status(&p, 2, "unknown command");
	tkt_expect_contains(p.err, "tkshm-inspect: ", "unknown command");
	tkt_proc_free(&p);
	RUN(&p, NULL, "stats", "--bogus", "x");
	tkt_expect_status(&p, 2, "unknown option");
	tkt_proc_free(&p);
	RUN(&p, NULL, "replay");
	tkt_expect_status(&p, 2, "replay without --policy");
	tkt_proc_free(&p);
	RUN(&p, NULL, "replay", "--policy", "gcra:limit=0,periodMs=1000");
	tkt_expect_status(&p, 2, "invalid policy");
	tkt_proc_free(&p);
	RUN(&p, NULL, "create", tkt_path("never"), "--policy",
	    "gcra:limit=1,periodMs=1", "--mode", "999");
	tkt_expect_status(&p, 2, "bad --mode");
	tkt_proc_free(&p);
	RUN(&p, NULL, "create", tkt_path("never"), "--policy",
	    "gcra:limit=1,periodMs=1", "--slots", "999999999999999");
	tkt_expect_status(&p, 2, "--slots beyond the library's maximum");
	tkt_proc_free(&p);
	tkt_run(&p, (const char *const[]){ BIN, NULL }, NULL);
	tkt_expect_status(&p, 2, "no arguments");
	tkt_proc_free(&p);
}

/* Every rateLimit suite of the golden vectors (every algorithm), with
 * `offset` added to every now and resetAt, and (offset 0 only, as
 * ThrottleKit publishes them) every tokenBudget suite. */
static void
replay_golden(double offset)
{
	cJSON *g = tkt_golden();
	const cJSON *suites = cJSON_GetObjectItemCaseSensitive(g, "suites");
	const cJSON *s;
	int replayed = 0, budgets = 0;

	cJSON_ArrayForEach(s, suites)
	{
		const cJSON *strat =
			cJSON_GetObjectItemCaseSensitive(s, "strategy");
		const cJSON *ops, *op, *key;
		const char *name = tkt_str_at(s, "name");
		const char *prim = tkt_str_at(s, "primitive");
		bool budget = strcmp(prim, "tokenBudget") == 0;
		char spec[256], *input = NULL, *lines[256];
		size_t len = 0, n, i = 0;
		FILE *in;
		struct tkt_proc p;

		if (budget && offset == 0)
			tkt_spec_of(
				"tokenBudget",
				cJSON_GetObjectItemCaseSensitive(s, "options"),
				spec, sizeof spec);
		else if (strcmp(prim, "rateLimit") == 0 && strat)
			tkt_spec_of(tkt_str_at(strat, "kind"),
				    cJSON_GetObjectItemCaseSensitive(strat,
								     "options"),
				    spec, sizeof spec);
		else
			continue;
		key = cJSON_GetObjectItemCaseSensitive(s, "key");
		ops = cJSON_GetObjectItemCaseSensitive(s, "ops");
		in = open_memstream(&input, &len);
		fprintf(in, "# %s\n", name);
		cJSON_ArrayForEach(op, ops)
		{
			const cJSON *c = cJSON_GetObjectItemCaseSensitive(
				op, budget ? "tokens" : "cost");
			fprintf(in, "%.17g %s %.17g\n",
				tkt_num_at(op, "now") + offset,
				cJSON_IsString(key) ? key->valuestring : "k",
				cJSON_IsNumber(c) ? c->valuedouble : 1.0);
		}
		fclose(in);

		RUN(&p, input, "replay", "--policy", spec);
		tkt_expect_status(&p, 0, name);
		if (p.err[0])
			fail_msg("%s: stderr: %s", name, p.err);
		n = split_lines(p.out, lines, 256);
		if (n != (size_t)cJSON_GetArraySize(ops))
			fail_msg("%s: %zu output lines for %d ops", name, n,
				 cJSON_GetArraySize(ops));
		cJSON_ArrayForEach(op, ops)
		{
			char what[160];
			snprintf(what, sizeof what, "%s op %zu (offset %g)",
				 name, i, offset);
			check_decision(
				lines[i],
				cJSON_GetObjectItemCaseSensitive(op, "expect"),
				offset, what);
			i++;
		}
		tkt_proc_free(&p);
		free(input);
		replayed++;
		budgets += budget;
	}
	cJSON_Delete(g);
	/* tests/data/README.md: 9 rateLimit suites and 3 tokenBudget. */
	assert_int_equal(replayed, offset == 0 ? 12 : 9);
	assert_int_equal(budgets, offset == 0 ? 3 : 0);
}

static void
test_replay_golden_shifted(void **state)
{
	(void)state;
	replay_golden(1000);
}

static void
test_replay_golden_as_given(void **state)
{
	(void)state;
	replay_golden(0);
}

static void
test_replay_malformed(void **state)
{
	static const struct {
		const char *bad, *why;
	} cases[] = {
		{ "5 k\n", "expected 3 fields" },
		{ "5 k 1 extra\n", "expected 3 fields" },
		{ "abc k 1\n", "NOW_MS" },
		{ "5 k 1x\n", "COST" },
		{ "5 k 0\n", "cost" },
		{ "5 k -1\n", "cost" },
		{ "5 k 1e400\n", "COST" },
		{ "-5 k 1\n", "NOW_MS" },
		{ "0x10 k 1\n", "NOW_MS" },
	};
	const char *head = "# replay\n1000 k 1\n\n   \n1000 k 1\n";

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char input[256];
		struct tkt_proc p;

		snprintf(input, sizeof input, "%s%s1000 k 1\n", head,
			 cases[i].bad);
		RUN(&p, input, "replay", "--policy",
		    "gcra:limit=10,periodMs=1000,burst=5");
		if (p.status == 0)
			fail_msg("line \"%s\" accepted", cases[i].bad);
		tkt_expect_status(&p, 1, cases[i].bad);
		/* Line 6 (comments and blank lines count), named on stderr
		 * with the tool's prefix, after the two good decisions. */
		tkt_expect_contains(p.err,
				    "tkshm-inspect: line 6: ", cases[i].bad);
		tkt_expect_contains(p.err, cases[i].why, cases[i].bad);
		if (count_lines(p.out) != 2)
			fail_msg("%s: %zu decisions before the bad line:\n%s",
				 cases[i].bad, count_lines(p.out), p.out);
		tkt_proc_free(&p);
	}
	{
		/* A key longer than TKSHM_KEY_MAX. */
		char *input = malloc(TKSHM_KEY_MAX + 64);
		struct tkt_proc p;

		strcpy(input, "1 ");
		memset(input + 2, 'x', TKSHM_KEY_MAX + 1);
		strcpy(input + 2 + TKSHM_KEY_MAX + 1, " 1\n");
		RUN(&p, input, "replay", "--policy",
		    "gcra:limit=10,periodMs=1000");
		tkt_expect_status(&p, 1, "long key");
		tkt_expect_contains(p.err, "line 1: KEY", "long key");
		tkt_proc_free(&p);
		free(input);
	}
}

static void
test_create_stats_replay(void **state)
{
	const char *spec = "gcra:limit=10,periodMs=1000,burst=5";
	const char *path = tkt_path("csr.tkshm");
	const char *input = "1000 k 1\n1000 k 1\n1000 k 1\n1000 k 1\n"
			    "1000 k 1\n1000 k 1\n1000 k 1\n";
	const cJSON *c, *u;
	cJSON *j;
	struct tkt_proc p;
	struct stat sb;

	(void)state;
	create_table(path, spec, "100");

	/* create --json reports what it made. */
	RUN(&p, NULL, "create", tkt_path("csr-json.tkshm"), "--json",
	    "--policy", spec, "--slots", "20", "--mode", "0640");
	tkt_expect_status(&p, 0, "create --json");
	j = cJSON_Parse(p.out);
	assert_non_null(j);
	assert_string_equal(tkt_str_at(j, "table"), tkt_path("csr-json.tkshm"));
	assert_int_equal((int)tkt_num_at(j, "slots"), 32);
	assert_string_equal(tkt_str_at(j, "mode"), "0640");
	assert_string_equal(tkt_str_at(j, "policy"), spec);
	assert_string_equal(tkt_str_at(j, "onFull"), "evict");
	assert_true(tkt_num_at(j, "fileBytes") > 0);
	cJSON_Delete(j);
	tkt_proc_free(&p);

	/* A second create of the same path is refused with exit 3. */
	RUN(&p, NULL, "create", path, "--policy", spec);
	tkt_expect_status(&p, 3, "create over an existing table");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_EEXIST), "EEXIST");
	tkt_proc_free(&p);

	j = stats_json(path, NULL);
	assert_int_equal((int)tkt_num_at(j, "slots"), 128); /* 100 rounded up */
	assert_string_equal(tkt_str_at(j, "policy"), spec);
	assert_string_equal(tkt_str_at(j, "onFull"), "evict");
	assert_string_equal(tkt_str_at(j, "path"), path);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "anonymous")));
	assert_true(tkt_num_at(j, "fileBytes") > 0);
	assert_true(tkt_num_at(j, "createdMs") > 1.5e12);
	c = cJSON_GetObjectItemCaseSensitive(j, "counters");
	assert_non_null(c);
	assert_int_equal(cJSON_GetArraySize(c), 13);
	for (const cJSON *f = c->child; f; f = f->next)
		if (!cJSON_IsNumber(f) || f->valuedouble != 0)
			fail_msg("counter %s is not 0 on a new table",
				 f->string);
	u = cJSON_GetObjectItemCaseSensitive(j, "usage");
	assert_int_equal((int)tkt_num_at(u, "empty"), 128);
	assert_int_equal(
		cJSON_GetArraySize(cJSON_GetObjectItem(u, "probeHist")),
		TKSHM_WINDOW_SLOTS);
	cJSON_Delete(j);

	/* Replay through the table: 5 admitted (the burst), 2 denied. */
	RUN(&p, input, "replay", "--policy", spec, "--table", path);
	tkt_expect_status(&p, 0, "replay --table");
	assert_int_equal(count_lines(p.out), 7);
	tkt_proc_free(&p);

	j = stats_json(path, "1000");
	c = cJSON_GetObjectItemCaseSensitive(j, "counters");
	assert_int_equal((int)tkt_num_at(c, "allowed"), 5);
	assert_int_equal((int)tkt_num_at(c, "denied"), 2);
	assert_int_equal((int)tkt_num_at(c, "inserts"), 1);
	u = cJSON_GetObjectItemCaseSensitive(j, "usage");
	assert_int_equal((int)tkt_num_at(u, "live"), 1);
	assert_int_equal((int)tkt_num_at(u, "empty"), 127);
	cJSON_Delete(j);

	/* The state persisted: a second replay continues where it was. */
	RUN(&p, "1000 k 1\n", "replay", "--policy", spec, "--table", path);
	tkt_expect_status(&p, 0, "second replay");
	tkt_expect_contains(p.out, "\"allowed\":false", "second replay");
	tkt_proc_free(&p);

	/* Another policy, another size, or no table: exit 3, explained. */
	RUN(&p, "1000 k 1\n", "replay", "--policy",
	    "gcra:limit=10,periodMs=1000,burst=6", "--table", path);
	tkt_expect_status(&p, 3, "policy mismatch");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_EMISMATCH), "mismatch");
	tkt_expect_contains(p.err, "burst=5",
			    "mismatch names the table's policy");
	assert_int_equal(p.out_len, 0);
	tkt_proc_free(&p);
	RUN(&p, "", "replay", "--policy", spec, "--table", path, "--slots",
	    "4096");
	tkt_expect_status(&p, 3, "slots mismatch");
	tkt_proc_free(&p);
	RUN(&p, "", "replay", "--policy", spec, "--table",
	    tkt_path("missing.tkshm"));
	tkt_expect_status(&p, 3, "missing table");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_ENOENT), "missing");
	tkt_proc_free(&p);
	/* ... and replay never creates it. */
	assert_int_equal(stat(tkt_path("missing.tkshm"), &sb), -1);

	/* The text form. */
	RUN(&p, NULL, "stats", path);
	tkt_expect_status(&p, 0, "stats");
	tkt_expect_contains(p.out, spec, "stats text");
	tkt_expect_contains(p.out, "allowed", "stats text");
	tkt_proc_free(&p);

	/* --mode and --on-full reach the file and the header. */
	path = tkt_path("refuse.tkshm");
	RUN(&p, NULL, "create", path, "--policy", spec, "--mode", "0640",
	    "--on-full=refuse", "--slots", "8");
	tkt_expect_status(&p, 0, "create --mode --on-full");
	tkt_proc_free(&p);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0640);
	j = stats_json(path, NULL);
	assert_string_equal(tkt_str_at(j, "onFull"), "refuse");
	assert_int_equal((int)tkt_num_at(j, "slots"), 8);
	cJSON_Delete(j);
}

/* Issue 18: create --mode with a setuid, setgid or sticky bit made such a
 * file.  A usage error (2) naming the bits, and no file. */
static void
test_create_mode_outside_0777(void **state)
{
	static const char *const modes[] = { "4755", "2660", "1600", "7777",
					     "04600" };
	const char *path = tkt_path("setuid.tkshm");
	struct tkt_proc p;
	struct stat sb;
	char want[96];

	(void)state;
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		RUN(&p, NULL, "create", path, "--policy",
		    "gcra:limit=1,periodMs=1", "--mode", modes[i]);
		snprintf(want, sizeof want, "--mode: %s has bits outside 0777",
			 modes[i]);
		tkt_expect_status(&p, 2, want);
		tkt_expect_contains(p.err, want, modes[i]);
		tkt_proc_free(&p);
		if (lstat(path, &sb) == 0)
			fail_msg("--mode %s created %s with mode %04o",
				 modes[i], path,
				 (unsigned)(sb.st_mode & 07777));
	}
	RUN(&p, NULL, "create", path, "--policy", "gcra:limit=1,periodMs=1",
	    "--mode", "777", "--slots", "8");
	tkt_expect_status(&p, 0, "--mode 777");
	tkt_proc_free(&p);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0777);
}

static void
test_verify(void **state)
{
	const char *spec = "gcra:limit=10,periodMs=1000,burst=5";
	const char *path = tkt_path("verify.tkshm");
	const char *junk = tkt_path("junk");
	struct tk_header h;
	struct tk_slot slot;
	struct tkt_proc p;
	cJSON *j;
	char *before, *after, *filler;
	size_t blen, alen;
	uint64_t nslots, victim;
	int fd;

	(void)state;
	create_table(path, spec, "64");
	RUN(&p, "1000 a 1\n1000 b 1\n1000 c 2\n", "replay", "--policy", spec,
	    "--table", path);
	tkt_expect_status(&p, 0, "replay");
	tkt_proc_free(&p);

	RUN(&p, NULL, "verify", path);
	tkt_expect_status(&p, 0, "verify of a good table");
	tkt_expect_contains(p.out, "ok", "verify output");
	tkt_proc_free(&p);
	RUN(&p, NULL, "verify", "--json", path);
	tkt_expect_status(&p, 0, "verify --json of a good table");
	j = cJSON_Parse(p.out);
	assert_non_null(j);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal((int)tkt_num_at(j, "slots"), 64);
	assert_int_equal((int)tkt_num_at(j, "problemCount"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "problems")),
			 0);
	cJSON_Delete(j);
	tkt_proc_free(&p);

	/* Corrupt one EMPTY slot: fp 0 with a non-zero state breaks I4. */
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	assert_memory_equal(h.magic, TK_MAGIC, TK_MAGIC_LEN);
	nslots = h.nbuckets * TK_SLOTS_PER_BUCKET;
	for (victim = 0; victim < nslots; victim++) {
		assert_int_equal(
			pread(fd, &slot, sizeof slot,
			      (off_t)(h.buckets_off + victim * sizeof slot)),
			(ssize_t)sizeof slot);
		if (slot.fp == 0)
			break;
	}
	assert_true(victim < nslots);
	slot.fp = 0;
	slot.st = UINT64_C(0x4000000000000000); /* 2.0 as a double */
	assert_int_equal(pwrite(fd, &slot, sizeof slot,
				(off_t)(h.buckets_off + victim * sizeof slot)),
			 (ssize_t)sizeof slot);
	close(fd);

	before = tkt_read_file(path, &blen);
	RUN(&p, NULL, "verify", path);
	tkt_expect_status(&p, 1, "verify of a corrupt table");
	tkt_expect_contains(p.out, "I4", "verify names the invariant");
	tkt_expect_contains(p.out, "1 problem", "verify summary");
	tkt_proc_free(&p);
	RUN(&p, NULL, "verify", path, "--json");
	tkt_expect_status(&p, 1, "verify --json of a corrupt table");
	j = cJSON_Parse(p.out);
	assert_non_null(j);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "ok")));
	assert_int_equal((int)tkt_num_at(j, "problemCount"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "problems")),
			 1);
	tkt_expect_contains(
		cJSON_GetArrayItem(cJSON_GetObjectItem(j, "problems"), 0)
			->valuestring,
		"I4", "the JSON problem names the invariant");
	cJSON_Delete(j);
	tkt_proc_free(&p);
	after = tkt_read_file(path, &alen);
	/* verify never writes the table. */
	assert_int_equal(blen, alen);
	assert_memory_equal(before, after, blen);
	free(before);
	free(after);

	/* A file that is not a table: exit 3, with the library's words. */
	filler = malloc(8192);
	memset(filler, 'x', 8192);
	fd = open(junk, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, filler, 8192), 8192);
	close(fd);
	free(filler);
	RUN(&p, NULL, "verify", junk);
	tkt_expect_status(&p, 3, "verify of a non-table");
	tkt_expect_contains(p.err, "tkshm-inspect: ", "non-table");
	tkt_expect_contains(p.err, tkshm_strerror(TKSHM_EBADMAGIC),
			    "non-table");
	tkt_proc_free(&p);
	RUN(&p, NULL, "stats", junk);
	tkt_expect_status(&p, 3, "stats of a non-table");
	tkt_proc_free(&p);
	RUN(&p, NULL, "verify", tkt_path("absent"));
	tkt_expect_status(&p, 3, "verify of a missing file");
	tkt_proc_free(&p);
	RUN(&p, NULL, "verify", tkt_tmpdir());
	tkt_expect_status(&p, 3, "verify of a directory");
	tkt_proc_free(&p);
}

/* Large enough that the test feeds both replays' stdin in several chunks,
 * alternately, so the two processes run at the same time. */
#define CONC_LINES 20000
#define CONC_BURST 15000

static void
test_concurrent_replays(void **state)
{
	char spec[128];
	const char *path = tkt_path("shared.tkshm");
	struct tkt_proc ps[2];
	char *input;
	size_t allowed = 0, denied = 0, split[2] = { 0, 0 };
	const cJSON *c;
	cJSON *j;

	(void)state;
	/* One unit a day: nothing is replenished during the test. */
	snprintf(spec, sizeof spec, "gcra:limit=1,periodMs=86400000,burst=%d",
		 CONC_BURST);
	create_table(path, spec, "64");
	input = malloc(CONC_LINES * 16 + 1);
	assert_non_null(input);
	input[0] = '\0';
	for (int i = 0, off = 0; i < CONC_LINES; i++)
		off += sprintf(input + off, "%d hot 1\n", 1000 + i);

	for (int k = 0; k < 2; k++)
		tkt_proc_start(&ps[k],
			       (const char *const[]){ BIN, "replay", "--policy",
						      spec, "--table", path,
						      NULL },
			       input);
	tkt_proc_finish(ps, 2);
	for (int k = 0; k < 2; k++) {
		char **lines = malloc((CONC_LINES + 1) * sizeof *lines);
		size_t n;

		assert_non_null(lines);
		tkt_expect_status(&ps[k], 0, "concurrent replay");
		n = split_lines(ps[k].out, lines, CONC_LINES + 1);
		assert_int_equal(n, CONC_LINES);
		for (size_t i = 0; i < n; i++) {
			if (strncmp(lines[i], "{\"allowed\":true,", 16) == 0) {
				allowed++;
				split[k]++;
			} else if (strncmp(lines[i], "{\"allowed\":false,",
					   17) == 0)
				denied++;
			else
				fail_msg("bad line %s", lines[i]);
		}
		free(lines);
		tkt_proc_free(&ps[k]);
	}
	free(input);
	print_message("concurrent replays admitted %zu + %zu\n", split[0],
		      split[1]);
	/* The two replays together never exceed the burst, and nothing is
	 * lost: exactly the burst is admitted. */
	assert_int_equal(allowed, CONC_BURST);
	assert_int_equal(denied, 2 * CONC_LINES - CONC_BURST);

	j = stats_json(path, NULL);
	c = cJSON_GetObjectItemCaseSensitive(j, "counters");
	assert_int_equal((int)tkt_num_at(c, "allowed"), CONC_BURST);
	assert_int_equal((int)tkt_num_at(c, "denied"),
			 2 * CONC_LINES - CONC_BURST);
	cJSON_Delete(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test(test_replay_golden_shifted),
		cmocka_unit_test(test_replay_golden_as_given),
		cmocka_unit_test(test_replay_malformed),
		cmocka_unit_test(test_create_stats_replay),
		cmocka_unit_test(test_create_mode_outside_0777),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_concurrent_replays),
	};
	return cmocka_run_group_tests_name("tool_inspect", tests, NULL,
					   tkt_teardown);
}
