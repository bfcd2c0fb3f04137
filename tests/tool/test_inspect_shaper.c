/*
 * test_inspect_shaper.c - drives the built tkshm-inspect (TKSHM_INSPECT_BIN)
 * through `replay` of leakyBucket (shaper) policies: each line is a
 * reservation, printed as {accepted, delayMs, retryAfterMs, waitMs}.
 *
 * Expected values come from hand-computed lines (ThrottleKit's formulas,
 * docs/semantics.md, "Leaky bucket") and, for seeded
 * timelines, from the same reservations made here through the library on
 * a table of the same policy: the tool must print exactly what
 * tkshm_reserve_at decides, waitMs to the last bit.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN

/* Runs tkshm-inspect with up to 15 arguments (NULL-terminated). */
#define RUN(p, input, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, (input))

#define SPEC_40 "leakyBucket:ratePerSec=40,maxQueueMs=30" /* T = 25 */

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

/* One printed reservation against the one expected: every member, in
 * this order and no other. */
static void
expect_line(const char *line, const tkshm_reservation *want, const char *what)
{
	static const char *const order[] = { "accepted", "delayMs",
					     "retryAfterMs", "waitMs" };
	cJSON *j = tkt_parse_json(line, what);
	const cJSON *m;
	size_t i = 0;

	cJSON_ArrayForEach(m, j)
	{
		if (i >= 4 || strcmp(m->string, order[i]) != 0)
			fail_msg("%s: member %zu is \"%s\": %s", what, i,
				 m->string, line);
		i++;
	}
	if (i != 4)
		fail_msg("%s: %zu members: %s", what, i, line);
	if (tkt_bool_at(j, "accepted") != want->accepted)
		fail_msg("%s: accepted %d, wanted %d: %s", what,
			 !want->accepted, want->accepted, line);
	tkt_expect_num(j, "delayMs", (double)want->delay_ms, what);
	tkt_expect_num(j, "retryAfterMs", (double)want->retry_after_ms, what);
	/* Exact: the tool prints the shortest decimal that reads back. */
	tkt_expect_num(j, "waitMs", want->wait_ms, what);
	cJSON_Delete(j);
}

static tkshm_reservation
resv(bool accepted, int64_t delay, int64_t retry, double wait)
{
	tkshm_reservation r;

	memset(&r, 0, sizeof r);
	r.accepted = accepted;
	r.delay_ms = delay;
	r.retry_after_ms = retry;
	r.wait_ms = wait;
	return r;
}

/* Hand-computed: T = 25 ms, a queue of 30 ms. */
static void
test_replay_shaper_by_hand(void **state)
{
	const char *input = "# the help's example\n"
			    "1000 a 1\n"
			    "1001.75 a 1\n" /* departure 1025: wait 23.25 */
			    "1001.75 a 1\n" /* 1050: wait 48.25 > 30 */
			    "\n"
			    "1020 a 1\n"   /* wait 30: accepted */
			    "1020 a 0.5\n" /* 1075 - 1020 = 55: 25 over */
			    "1000 b 3\n"   /* a cost beyond the queue, empty */
			    "1000 b 1\n"   /* 1075: 75 - 30 = 45 */
			    "2000 b 1\n";  /* idle again */
	const tkshm_reservation want[] = {
		resv(true, 0, 0, 0),	resv(true, 24, 0, 23.25),
		resv(false, 19, 19, 0), resv(true, 30, 0, 30),
		resv(false, 25, 25, 0), resv(true, 0, 0, 0),
		resv(false, 45, 45, 0), resv(true, 0, 0, 0),
	};
	const size_t nwant = sizeof want / sizeof want[0];
	struct tkt_proc p;
	char *lines[16], what[64];
	size_t n;

	(void)state;
	RUN(&p, input, "replay", "--policy", SPEC_40);
	tkt_expect_status(&p, 0, "replay of a shaper");
	if (p.err[0])
		fail_msg("stderr: %s", p.err);
	n = split_lines(p.out, lines, 16);
	assert_int_equal(n, nwant);
	for (size_t i = 0; i < n; i++) {
		snprintf(what, sizeof what, "line %zu", i + 1);
		expect_line(lines[i], &want[i], what);
	}
	tkt_proc_free(&p);
}

/* Seeded timelines of several keys, fractional times and costs, against
 * the library on a table of the same policy. */
static void
test_replay_shaper_matches_library(void **state)
{
	static const char *const specs[] = {
		"leakyBucket:ratePerSec=3,maxQueueMs=1000",
		"leakyBucket:ratePerSec=200,maxQueueMs=60000",
		"leakyBucket:ratePerSec=0.5,maxQueueMs=0",
		"leakyBucket:ratePerSec=123.456,maxQueueMs=77.7",
	};
	uint64_t s = 42;

	(void)state;
	for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
		enum {
			N = 300
		};
		tkshm_table *t = tkt_anon(specs[k], 64);
		tkshm_reservation want[N];
		double now = 1.7e12 + 0.375;
		char *input = NULL, **lines = calloc(N + 1, sizeof *lines);
		size_t len = 0, n;
		FILE *in = open_memstream(&input, &len);
		struct tkt_proc p;

		assert_non_null(lines);
		for (int i = 0; i < N; i++) {
			char key[8];
			double cost;

			s = s * 6364136223846793005u + 1442695040888963407u;
			snprintf(key, sizeof key, "k%u",
				 (unsigned)(s >> 60) % 4);
			cost = (s >> 40) % 5 == 0 ? 2.5 :
			       (s >> 40) % 7 == 0 ? 40 :
						    1;
			fprintf(in, "%.17g %s %.17g\n", now, key, cost);
			assert_rc(tkshm_reserve_at(t, key, strlen(key), cost,
						   now, &want[i]),
				  TKSHM_OK);
			now += (double)((s >> 20) % 4000) / 7.0;
		}
		fclose(in);
		RUN(&p, input, "replay", "--policy", specs[k]);
		tkt_expect_status(&p, 0, specs[k]);
		n = split_lines(p.out, lines, N + 1);
		assert_int_equal(n, N);
		for (size_t i = 0; i < n; i++) {
			char what[160];

			snprintf(what, sizeof what, "%s line %zu", specs[k],
				 i + 1);
			expect_line(lines[i], &want[i], what);
		}
		tkt_proc_free(&p);
		free(input);
		free(lines);
		tkshm_close(t);
	}
}

/* --table: replays reserve on a shared table file; the state persists
 * between replays and is what the library reads back; a table of another
 * policy is refused. */
static void
test_replay_shaper_table(void **state)
{
	const char *path = tkt_path("shaper.tk");
	tkshm_table *t = tkt_file(path, SPEC_40, 64);
	tkshm_reservation r;
	tkshm_entry e;
	struct tkt_proc p;
	char *lines[4];

	(void)state;
	RUN(&p, "1000 q 1\n1000 q 1\n", "replay", "--policy", SPEC_40,
	    "--table", path);
	tkt_expect_status(&p, 0, "replay --table");
	assert_int_equal(split_lines(p.out, lines, 4), 2);
	expect_line(lines[1], &(tkshm_reservation){ true, 25, 0, 25 },
		    "second reservation");
	tkt_proc_free(&p);
	/* A second replay continues: the queue holds 50 ms at 1000. */
	RUN(&p, "1000 q 1\n", "replay", "--policy", SPEC_40, "--table", path);
	tkt_expect_status(&p, 0, "second replay");
	assert_int_equal(split_lines(p.out, lines, 4), 1);
	expect_line(lines[0], &(tkshm_reservation){ false, 20, 20, 0 },
		    "after the first replay");
	tkt_proc_free(&p);
	/* The library sees the two departures, and nothing of the
	 * rejection. */
	assert_rc(tkshm_entry_get_at(t, "q", 1, 1000, &e), TKSHM_OK);
	assert_true(e.debt_ms == 50);
	assert_rc(tkshm_reserve_at(t, "q", 1, 1, 1020, &r), TKSHM_OK);
	assert_true(r.accepted && r.wait_ms == 30);
	tkshm_close(t);

	RUN(&p, "1000 q 1\n", "replay", "--policy",
	    "gcra:limit=10,periodMs=1000", "--table", path);
	tkt_expect_status(&p, 3, "another policy");
	tkt_expect_contains(p.err, "leakyBucket", "another policy");
	assert_int_equal(p.out_len, 0);
	tkt_proc_free(&p);
}

/* A bad line or a reservation the table cannot make stops the replay
 * after the lines before it, naming the line. */
static void
test_replay_shaper_errors(void **state)
{
	struct tkt_proc p;
	char *input = NULL;
	size_t len = 0;
	FILE *in;

	(void)state;
	RUN(&p, "1000 a 1\n1000 a 0\n1000 a 1\n", "replay", "--policy",
	    SPEC_40);
	tkt_expect_status(&p, 1, "cost 0");
	tkt_expect_contains(p.err, "tkshm-inspect: line 2: cost '0' refused",
			    "cost 0");
	assert_int_equal(strcmp(p.out, "{\"accepted\":true,\"delayMs\":0,"
				       "\"retryAfterMs\":0,\"waitMs\":0}\n"),
			 0);
	tkt_proc_free(&p);

	/* 8 slots that refuse to evict: the ninth live key has no room. */
	in = open_memstream(&input, &len);
	for (int i = 0; i < 9; i++)
		fprintf(in, "1000 key%d 1\n", i);
	fclose(in);
	RUN(&p, input, "replay", "--policy", SPEC_40, "--slots", "8",
	    "--on-full", "refuse");
	tkt_expect_status(&p, 1, "full table");
	tkt_expect_contains(p.err, "line 9: reservation failed", "full table");
	tkt_expect_contains(p.err, "TKSHM_EFULL", "full table");
	{
		char *lines[16];

		assert_int_equal(split_lines(p.out, lines, 16), 8);
	}
	tkt_proc_free(&p);
	free(input);

	RUN(&p, NULL, "replay", "--help");
	tkt_expect_status(&p, 0, "replay --help");
	tkt_expect_contains(p.out, "leakyBucket", "replay --help");
	tkt_expect_contains(p.out, "\"waitMs\"", "replay --help");
	tkt_proc_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_shaper_by_hand),
		cmocka_unit_test(test_replay_shaper_matches_library),
		cmocka_unit_test(test_replay_shaper_table),
		cmocka_unit_test(test_replay_shaper_errors),
	};
	return cmocka_run_group_tests_name("tool_inspect_shaper", tests, NULL,
					   tkt_teardown);
}
