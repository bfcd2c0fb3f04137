/*
 * test_inspect_permits.c - tkshm-inspect list, show, stats and metrics on
 * tables of the kinds that are not checked: concurrency tables whose
 * permits are held by live processes (a forked child holding two while the
 * tool runs), an adaptiveConcurrency table, and a leakyBucket table.
 *
 * Permits are taken through the library by this process and by the child,
 * so the holders (pids and counts) are known; every other number is the
 * library's own entry of the key (tkshm_entry_get_at on the test's handle)
 * or derived by hand.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN TKSHM_INSPECT_BIN

/* Runs tkshm-inspect with its arguments (NULL-terminated). */
#define RUN(p, ...) \
	tkt_run((p), (const char *const[]){ BIN, __VA_ARGS__, NULL }, NULL)

#define CONC_SPEC "concurrency:limit=8"
/* The time of every acquire, release and --now of the adaptive table. */
#define N      1700000000000.0
#define N_TEXT "1700000000000"

/* --- helpers ------------------------------------------------------------- */

static void
kill_child(pid_t pid)
{
	int status;

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void
acquire(tkshm_table *t, const char *key, double now, tkshm_permit *p)
{
	tkshm_decision d;

	assert_rc(tkshm_acquire_at(t, key, strlen(key), now, p, &d), TKSHM_OK);
	assert_true(d.allowed);
}

/* The test's own view of a key: the oracle for the tool's numbers. */
static tkshm_entry
oracle(tkshm_table *t, const char *key, double now)
{
	tkshm_entry e;

	assert_rc(tkshm_entry_get_at(t, key, strlen(key), now, &e), TKSHM_OK);
	return e;
}

/* Runs the tool (exit 0 expected) and parses its JSON. */
static cJSON *
run_json(const char *const argv[], const char *what)
{
	struct tkt_proc p;
	cJSON *j;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, what);
	j = tkt_parse_json(p.out, what);
	tkt_proc_free(&p);
	return j;
}

/* The key `key` of a list's JSON; fails unless exactly one. */
static const cJSON *
listed_key(const cJSON *list, const char *key)
{
	const cJSON *k, *found = NULL;

	cJSON_ArrayForEach(k, tkt_json_item(list, "keys"))
	{
		if (strcmp(tkt_str_at(k, "key"), key) != 0)
			continue;
		if (found)
			fail_msg("key %s listed twice", key);
		found = k;
	}
	if (!found)
		fail_msg("key %s not listed", key);
	return found;
}

/* holders[] of a key's JSON is exactly `pids` with `counts`, in order. */
static void
expect_holders(const cJSON *k, const pid_t *pids, const int *counts, size_t n,
	       const char *what)
{
	const cJSON *h = tkt_json_item(k, "holders"), *e;
	size_t i = 0;

	assert_true(cJSON_IsArray(h));
	tkt_expect_num(k, "holdersCount", (double)n, what);
	if ((size_t)cJSON_GetArraySize(h) != n)
		fail_msg("%s: %d holders listed, want %zu", what,
			 cJSON_GetArraySize(h), n);
	cJSON_ArrayForEach(e, h)
	{
		tkt_expect_num(e, "pid", pids[i], what);
		tkt_expect_num(e, "permits", counts[i], what);
		assert_int_equal(cJSON_GetArraySize(e), 2);
		i++;
	}
}

/* The line of `text` that starts with `start`; fails if none. */
static void
line_of(const char *text, const char *start, char *out, size_t cap)
{
	size_t n = strlen(start);

	for (const char *l = text; l && *l; l = strchr(l, '\n')) {
		if (*l == '\n')
			l++;
		if (strncmp(l, start, n) == 0) {
			const char *end = strchr(l, '\n');
			size_t len = end ? (size_t)(end - l) : strlen(l);

			if (len >= cap)
				len = cap - 1;
			memcpy(out, l, len);
			out[len] = '\0';
			return;
		}
	}
	fail_msg("no line starting with \"%s\" in:\n%s", start, text);
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

/* --- concurrency --------------------------------------------------------- */

/*
 * A child holds 2 permits of "api", another 1 of "db"; this process holds
 * 1 of "api" and 1 of "solo".  list and show name both processes with their
 * counts while the child runs; once it is killed it stays listed until a
 * reap takes its permits back, after which stats and metrics count what
 * was released and reaped.
 */
static void
test_concurrency_holders(void **state)
{
	const char *path = tkt_path("permits.tkshm");
	tkshm_table *t = tkt_file(path, CONC_SPEC, 64);
	pid_t me = getpid(), child, child_db;
	int one = 1;
	tkshm_permit mine, solo;
	const cJSON *k;
	struct tkt_proc p;
	char line[1024], want[64], *w[16];
	uint64_t reaped = 0;
	cJSON *j;

	(void)state;
	child = tkt_permit_holder(t, "api", 2, -1);
	child_db = tkt_permit_holder(t, "db", 1, -1);
	acquire(t, "api", tkshm_now_ms(), &mine);
	acquire(t, "solo", tkshm_now_ms(), &solo);

	/* list --json: both holders of "api", by ascending pid. */
	j = run_json((const char *const[]){ BIN, "list", path, "--json", NULL },
		     "list --json");
	k = listed_key(j, "api");
	tkt_expect_num(k, "permitsHeld", 3, "api");
	tkt_expect_num(k, "limit", 8, "api");
	tkt_expect_num(k, "remaining", 5, "api");
	if (child < me) {
		pid_t pp[2] = { child, me };
		int cc[2] = { 2, 1 };

		expect_holders(k, pp, cc, 2, "api");
	} else {
		pid_t pp[2] = { me, child };
		int cc[2] = { 1, 2 };

		expect_holders(k, pp, cc, 2, "api");
	}
	/* No debt, retry-after or adaptive members for a fixed limit. */
	assert_null(cJSON_GetObjectItemCaseSensitive(k, "adaptiveLimit"));
	assert_null(cJSON_GetObjectItemCaseSensitive(k, "queueWaitMs"));
	k = listed_key(j, "db");
	expect_holders(k, &child_db, &one, 1, "db");
	k = listed_key(j, "solo");
	expect_holders(k, &me, &one, 1, "solo");
	/* Sorted by permits held, the most first. */
	assert_string_equal(
		tkt_str_at(cJSON_GetArrayItem(tkt_json_item(j, "keys"), 0),
			   "key"),
		"api");
	cJSON_Delete(j);

	/* list, text: HELD and HOLDERS as pid×count. */
	RUN(&p, "list", path);
	tkt_expect_status(&p, 0, "list");
	line_of(p.out, "KEY ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 7);
	assert_string_equal(w[1], "HELD");
	assert_string_equal(w[6], "HOLDERS");
	line_of(p.out, "api ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 7);
	assert_string_equal(w[1], "3/8");
	assert_string_equal(w[2], "5");
	assert_string_equal(w[5], "live");
	if (child < me)
		snprintf(want, sizeof want, "%d\u00d72,%d\u00d71", (int)child,
			 (int)me);
	else
		snprintf(want, sizeof want, "%d\u00d71,%d\u00d72", (int)me,
			 (int)child);
	assert_string_equal(w[6], want);
	tkt_expect_contains(p.out, "3 keys shown of 3 live, 0 idle",
			    "list summary");
	tkt_proc_free(&p);

	/* --where and --sort on the permit fields. */
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--where", "held>=2", NULL },
		     "list --where held>=2");
	tkt_expect_num(j, "shown", 1, "held>=2");
	listed_key(j, "api");
	cJSON_Delete(j);
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--where", "holders=2", NULL },
		     "list --where holders=2");
	tkt_expect_num(j, "shown", 1, "holders=2");
	cJSON_Delete(j);

	/* show --json and show, text. */
	j = run_json((const char *const[]){ BIN, "show", path, "api", "--json",
					    NULL },
		     "show --json");
	assert_true(tkt_bool_at(j, "inTable"));
	tkt_expect_num(j, "permitsHeld", 3, "show api");
	tkt_expect_num(j, "holdersCount", 2, "show api");
	{
		const cJSON *e;
		bool saw_child = false, saw_me = false;

		cJSON_ArrayForEach(e, tkt_json_item(j, "holders"))
		{
			pid_t pid = (pid_t)tkt_num_at(e, "pid");

			if (pid == child) {
				tkt_expect_num(e, "permits", 2, "child");
				saw_child = true;
			} else if (pid == me) {
				tkt_expect_num(e, "permits", 1, "me");
				saw_me = true;
			}
		}
		assert_true(saw_child && saw_me);
	}
	cJSON_Delete(j);
	RUN(&p, "show", path, "api");
	tkt_expect_status(&p, 0, "show");
	tkt_expect_contains(p.out, "permits held: 3\n", "show");
	tkt_expect_contains(p.out, "holders: 2 processes\n", "show");
	snprintf(want, sizeof want, "holder: pid %d, 2 permits\n", (int)child);
	tkt_expect_contains(p.out, want, "show");
	snprintf(want, sizeof want, "holder: pid %d, 1 permit\n", (int)me);
	tkt_expect_contains(p.out, want, "show");
	tkt_proc_free(&p);

	/* This process gives "solo" back; the child dies holding "api". */
	assert_rc(tkshm_release(t, &solo, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	kill_child(child);
	/* Dead, but its permits are still the table's: still listed. */
	j = run_json((const char *const[]){ BIN, "show", path, "api", "--json",
					    NULL },
		     "show --json after the kill");
	tkt_expect_num(j, "permitsHeld", 3, "show api after the kill");
	cJSON_Delete(j);
	assert_rc(tkshm_reap(t, &reaped), TKSHM_OK);
	assert_int_equal(reaped, 2);
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--where", "key=api", NULL },
		     "list after the reap");
	k = listed_key(j, "api");
	tkt_expect_num(k, "permitsHeld", 1, "api after the reap");
	expect_holders(k, &me, &one, 1, "api after the reap");
	cJSON_Delete(j);

	/* stats: the permit counters, which only permit tables have. */
	j = run_json(
		(const char *const[]){ BIN, "stats", path, "--json", NULL },
		"stats --json");
	k = tkt_json_item(j, "counters");
	tkt_expect_num(k, "releases", 1, "stats");
	tkt_expect_num(k, "reaped", 2, "stats");
	/* Granted acquires: the children's 2 + 1, this process's 2. */
	tkt_expect_num(k, "allowed", 5, "stats");
	assert_int_equal(cJSON_GetArraySize(k), 15);
	cJSON_Delete(j);
	RUN(&p, "stats", path);
	tkt_expect_status(&p, 0, "stats");
	line_of(p.out, "  permit releases ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 3);
	assert_string_equal(w[2], "1");
	line_of(p.out, "  permits reaped ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 3);
	assert_string_equal(w[2], "2");
	tkt_proc_free(&p);

	/* metrics: the same counters, in both forms. */
	RUN(&p, "metrics", path);
	tkt_expect_status(&p, 0, "metrics");
	/* Labelled by the file's name. */
	snprintf(line, sizeof line, "tkshm_releases_total{table=\"%s\"} 1\n",
		 strrchr(path, '/') + 1);
	tkt_expect_contains(p.out, line, "metrics");
	snprintf(line, sizeof line, "tkshm_reaped_total{table=\"%s\"} 2\n",
		 strrchr(path, '/') + 1);
	tkt_expect_contains(p.out, line, "metrics");
	tkt_expect_contains(p.out, "# TYPE tkshm_reaped_total counter\n",
			    "metrics");
	tkt_proc_free(&p);
	j = run_json(
		(const char *const[]){ BIN, "metrics", "--json", path, NULL },
		"metrics --json");
	k = tkt_json_item(j, path);
	tkt_expect_num(k, "releases", 1, "metrics --json");
	tkt_expect_num(k, "reaped", 2, "metrics --json");
	cJSON_Delete(j);

	kill_child(child_db);
	assert_rc(tkshm_release(t, &mine, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	tkshm_close(t);
}

/* A gcra table next to a concurrency one: metrics keeps the gcra table's
 * metrics as they were and gives the permit counters to the other only. */
static void
test_metrics_mixed(void **state)
{
	const char *gpath = tkt_path("mixed-gcra.tkshm");
	const char *cpath = tkt_path("mixed-conc.tkshm");
	tkshm_table *g = tkt_file(gpath, "gcra:limit=10,periodMs=1000", 8);
	tkshm_table *c = tkt_file(cpath, CONC_SPEC, 8);
	struct tkt_proc p;
	char want[600];
	cJSON *j;

	(void)state;
	tkshm_close(g);
	tkshm_close(c);
	RUN(&p, "metrics", gpath, cpath);
	tkt_expect_status(&p, 0, "metrics mixed");
	snprintf(want, sizeof want, "tkshm_releases_total{table=\"%s\"} 0\n",
		 strrchr(cpath, '/') + 1);
	tkt_expect_contains(p.out, want, "metrics mixed");
	snprintf(want, sizeof want, "tkshm_releases_total{table=\"%s\"}",
		 strrchr(gpath, '/') + 1);
	assert_null(strstr(p.out, want));
	tkt_proc_free(&p);
	/* Only gcra: the permit metrics are not described at all. */
	RUN(&p, "metrics", gpath);
	tkt_expect_status(&p, 0, "metrics gcra");
	assert_null(strstr(p.out, "tkshm_releases_total"));
	assert_null(strstr(p.out, "tkshm_reaped_total"));
	tkt_proc_free(&p);
	j = run_json((const char *const[]){ BIN, "metrics", "--json", gpath,
					    cpath, NULL },
		     "metrics --json mixed");
	assert_null(cJSON_GetObjectItemCaseSensitive(tkt_json_item(j, gpath),
						     "releases"));
	tkt_expect_num(tkt_json_item(j, cpath), "releases", 0, "mixed");
	cJSON_Delete(j);
}

/* --- adaptive concurrency ------------------------------------------------ */

static void
test_adaptive(void **state)
{
	const char *path = tkt_path("adaptive.tkshm");
	tkshm_table *t = tkt_file(path,
				  "adaptiveConcurrency:algorithm=gradient2,"
				  "initialLimit=10,minLimit=1,maxLimit=16",
				  64);
	tkshm_permit pm[6];
	tkshm_entry e;
	const cJSON *k;
	struct tkt_proc p;
	char line[1024], want[64], *w[16];
	cJSON *j;

	(void)state;
	for (int i = 0; i < 6; i++)
		acquire(t, "svc", N, &pm[i]);

	/* Before any sample: the initial limit, no rttNoLoad. */
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--now", N_TEXT, NULL },
		     "adaptive list --json");
	k = listed_key(j, "svc");
	tkt_expect_num(k, "adaptiveLimit", 10, "svc");
	assert_true(cJSON_IsNull(tkt_json_item(k, "rttNoLoadMs")));
	tkt_expect_num(k, "permitsHeld", 6, "svc");
	cJSON_Delete(j);

	/* A 50 ms sample with 6 of 10 in flight: the limit grows. */
	assert_rc(tkshm_release_at(t, &pm[0], N + 50, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	e = oracle(t, "svc", N + 50);
	assert_true(e.adaptive_limit > 10);
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--now", "1700000000050", NULL },
		     "adaptive list --json after a sample");
	k = listed_key(j, "svc");
	tkt_expect_num(k, "adaptiveLimit", e.adaptive_limit, "svc");
	tkt_expect_num(k, "rttNoLoadMs", 50, "svc");
	tkt_expect_num(k, "permitsHeld", 5, "svc");
	tkt_expect_num(k, "limit", (double)e.peek.limit, "svc");
	cJSON_Delete(j);

	/* Text: HELD is against the floor of the limit; ADAPTIVE-LIMIT and
	 * RTT-NOLOAD follow REMAINING. */
	RUN(&p, "list", path, "--now", "1700000000050");
	tkt_expect_status(&p, 0, "adaptive list");
	line_of(p.out, "KEY ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 9);
	assert_string_equal(w[3], "ADAPTIVE-LIMIT");
	assert_string_equal(w[4], "RTT-NOLOAD");
	line_of(p.out, "svc ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 9);
	snprintf(want, sizeof want, "5/%lld", (long long)e.peek.limit);
	assert_string_equal(w[1], want);
	snprintf(want, sizeof want, "%.2f", e.adaptive_limit);
	assert_string_equal(w[3], want);
	assert_string_equal(w[4], "50.0ms");
	snprintf(want, sizeof want, "%d\u00d75", (int)getpid());
	assert_string_equal(w[8], want);
	tkt_proc_free(&p);

	RUN(&p, "show", path, "svc", "--now", "1700000000050");
	tkt_expect_status(&p, 0, "adaptive show");
	tkt_expect_contains(p.out, "rtt no-load: 50 ms\n", "show");
	tkt_expect_contains(p.out, "adaptive limit: 10.", "show");
	tkt_proc_free(&p);

	for (int i = 1; i < 6; i++)
		assert_rc(tkshm_release_at(t, &pm[i], N + 60,
					   TKSHM_OUTCOME_IGNORE),
			  TKSHM_OK);
	tkshm_close(t);
}

/* --- the shaper ---------------------------------------------------------- */

/* A leakyBucket key's debt is its queue's wait: list heads that column
 * QUEUE-WAIT and JSON adds queueWaitMs. */
static void
test_leaky_bucket(void **state)
{
	const char *path = tkt_path("shaper.tkshm");
	/* T = 100 ms; the queue holds floor(1000 / 100) + 1 = 11. */
	tkshm_table *t =
		tkt_file(path, "leakyBucket:ratePerSec=10,maxQueueMs=1000", 64);
	struct tkt_proc p;
	char line[1024], *w[16];
	const cJSON *k;
	cJSON *j;

	(void)state;
	/* As if an absent key had just spent 11 - 6 = 5 departures at N:
	 * the next departs 500 ms after N. */
	assert_rc(tkshm_set_remaining_at(t, "q", 1, 6, N), TKSHM_OK);
	assert_true(oracle(t, "q", N).debt_ms == 500);
	RUN(&p, "list", path, "--now", N_TEXT);
	tkt_expect_status(&p, 0, "shaper list");
	line_of(p.out, "KEY ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 10);
	assert_string_equal(w[6], "QUEUE-WAIT");
	line_of(p.out, "q ", line, sizeof line);
	assert_int_equal(split_words(line, w, 16), 10);
	assert_string_equal(w[1], "6");	 /* remaining */
	assert_string_equal(w[2], "11"); /* limit */
	assert_string_equal(w[6], "500");
	tkt_proc_free(&p);
	j = run_json((const char *const[]){ BIN, "list", path, "--json",
					    "--now", N_TEXT, NULL },
		     "shaper list --json");
	k = listed_key(j, "q");
	tkt_expect_num(k, "queueWaitMs", 500, "q");
	tkt_expect_num(k, "debtMs", 500, "q");
	assert_null(cJSON_GetObjectItemCaseSensitive(k, "permitsHeld"));
	cJSON_Delete(j);
	RUN(&p, "show", path, "q", "--now", N_TEXT);
	tkt_expect_status(&p, 0, "shaper show");
	tkt_expect_contains(p.out, "queue wait: 500 ms\n", "show");
	tkt_proc_free(&p);
	/* No permit counters on a shaper table. */
	j = run_json(
		(const char *const[]){ BIN, "stats", path, "--json", NULL },
		"shaper stats --json");
	assert_int_equal(cJSON_GetArraySize(tkt_json_item(j, "counters")), 13);
	cJSON_Delete(j);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrency_holders),
		cmocka_unit_test(test_metrics_mixed),
		cmocka_unit_test(test_adaptive),
		cmocka_unit_test(test_leaky_bucket),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
