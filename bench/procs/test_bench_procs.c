/*
 * test_bench_procs.c - keeps the multi-process benchmark honest.
 *
 *   mutex_decides_as_tkshm  the mutex baseline and tkshm make the same
 *                           decisions, field by field, over a seeded
 *                           timeline on a tight policy (admissions,
 *                           denials, idle keys, costs above the burst):
 *                           the baseline runs tkshm's algorithm on the
 *                           same kind of table, so the benchmark compares
 *                           the lock, not the arithmetic
 *   redis_decides_as_tkshm  the same for the redis-strict Lua script (skipped
 *                           without hiredis or redis-server)
 *   quick_run_writes_json   tkshm_bench_procs --quick exits 0 and writes one
 *                           JSON line per case with every field the report
 *                           generator reads; tkshm and mutex made decisions
 *                           in every scenario; redis has numbers or a reason
 *
 * Usage: test_bench_procs PATH-OF-tkshm_bench_procs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_mutex.h"
#include "baseline_redis.h"
#include "keys.h"
#include "test_support.h"

static const char *driver_path;

#define TIMELINE_POLICY "gcra:limit=10,periodMs=1000,burst=5"
#define TIMELINE_STEPS	4000
#define TIMELINE_KEYS	8

/* One step of the shared timeline: key, cost, now. */
struct step {
	char key[16];
	size_t key_len;
	double cost, now;
};

/* The same seeded steps for every implementation: now moves forward by
 * 0..149 ms with fractions (and sometimes stays), costs include fractions
 * and one above the burst, so every branch of the transition is taken. */
static struct step *
timeline(void)
{
	static const double costs[] = { 1, 1, 1, 2, 0.5, 3, 6 };
	struct step *s = calloc(TIMELINE_STEPS, sizeof *s);
	uint64_t seed = 2024;
	double now = 1751234567890.25;

	assert_non_null(s);
	for (int i = 0; i < TIMELINE_STEPS; i++) {
		uint64_t r = keys_splitmix64(&seed);

		if (r % 4 != 0)
			now += (double)(r % 150) + 0.125 * (double)(r % 8);
		s[i].key_len =
			(size_t)snprintf(s[i].key, sizeof s[i].key, "client:%u",
					 (unsigned)(r >> 32) % TIMELINE_KEYS);
		s[i].cost = costs[(r >> 16) % 7];
		s[i].now = now;
	}
	return s;
}

static void
mutex_decides_as_tkshm(void **state)
{
	tkshm_policy p = tkt_policy(TIMELINE_POLICY);
	tkshm_table *t = tkt_anon(TIMELINE_POLICY, 64);
	struct mtx_table *m = NULL;
	struct step *s = timeline();
	int allowed = 0, denied = 0;
	char err[256];

	(void)state;
	assert_rc(mtx_create(64, &p, &m, err, sizeof err), TKSHM_OK);
	for (int i = 0; i < TIMELINE_STEPS; i++) {
		tkshm_decision want, got;
		char what[64];

		assert_rc(tkshm_check_at(t, s[i].key, s[i].key_len, s[i].cost,
					 s[i].now, &want),
			  TKSHM_OK);
		assert_rc(mtx_check_at(m, s[i].key, s[i].key_len, s[i].cost,
				       s[i].now, &got),
			  TKSHM_OK);
		snprintf(what, sizeof what, "step %d (%s cost %g)", i, s[i].key,
			 s[i].cost);
		tkt_assert_decision(what, &got, &want);
		if (want.allowed)
			allowed++;
		else
			denied++;
	}
	/* The timeline must exercise both outcomes, or it proves little. */
	assert_true(allowed > TIMELINE_STEPS / 10);
	assert_true(denied > TIMELINE_STEPS / 10);
	assert_int_equal(mtx_evictions(m), 0);
	free(s);
	mtx_destroy(m);
	tkshm_close(t);
}

static void
redis_decides_as_tkshm(void **state)
{
	tkshm_policy p = tkt_policy(TIMELINE_POLICY);
	tkshm_table *t;
	struct redis_server srv;
	struct redis_client *c = NULL;
	struct step *s;
	char why[256];
	int started = redis_server_start(&srv, why, sizeof why);

	(void)state;
	if (started == 1) {
		print_message("skipped: %s\n", why);
		skip();
	}
	if (started != 0)
		fail_msg("redis-server: %s", why);
	if (redis_client_open(srv.port, &p, &c, why, sizeof why) != TKSHM_OK) {
		redis_server_stop(&srv);
		fail_msg("redis client: %s", why);
	}
	t = tkt_anon(TIMELINE_POLICY, 64);
	s = timeline();
	/* A shorter timeline: each step is a round trip. */
	for (int i = 0; i < TIMELINE_STEPS / 4; i++) {
		tkshm_decision want, got;
		char what[64];
		int rc = redis_client_check(c, s[i].key, s[i].key_len,
					    s[i].cost, s[i].now, &got);

		if (rc != TKSHM_OK) {
			snprintf(why, sizeof why, "%s", redis_client_error(c));
			redis_client_close(c);
			redis_server_stop(&srv);
			fail_msg("step %d: %s", i, why);
		}
		assert_rc(tkshm_check_at(t, s[i].key, s[i].key_len, s[i].cost,
					 s[i].now, &want),
			  TKSHM_OK);
		snprintf(what, sizeof what, "step %d (%s cost %g)", i, s[i].key,
			 s[i].cost);
		if (got.allowed != want.allowed ||
		    got.remaining != want.remaining ||
		    got.reset_at != want.reset_at ||
		    got.retry_after_ms != want.retry_after_ms) {
			redis_client_close(c);
			redis_server_stop(&srv);
			tkt_assert_decision(what, &got, &want);
		}
	}
	free(s);
	redis_client_close(c);
	redis_server_stop(&srv);
	tkshm_close(t);
}

static bool
one_of(const char *s, const char *const *words)
{
	for (; *words; words++)
		if (strcmp(s, *words) == 0)
			return true;
	return false;
}

/* Checks one JSON line; counts measured rows per scenario and impl. */
static void
check_row(const cJSON *o, int *measured, int *redis_rows)
{
	static const char *const scenarios[] = { "uniform100k", "hotkey",
						 "keys10M",	"sigstop",
						 "redis",	NULL };
	static const char *const impls[] = { "tkshm", "mutex", "redis-strict",
					     NULL };
	static const char *const nums[] = {
		"seconds", "decisions", "decisions_per_sec",
		"allowed", "p50_ns",	"p99_ns",
		"p999_ns", "max_ns",	NULL
	};
	const char *scenario = tkt_str_at(o, "scenario");
	const char *impl = tkt_str_at(o, "impl");
	const cJSON *skipped = cJSON_GetObjectItemCaseSensitive(o, "skipped");
	int si = 0, ii = 0;

	assert_string_equal(tkt_str_at(o, "suite"), "procs");
	if (!one_of(scenario, scenarios) || !one_of(impl, impls))
		fail_msg("unknown scenario/impl %s/%s", scenario, impl);
	assert_true(tkt_num_at(o, "procs") >= 1);
	assert_true(tkt_num_at(o, "keys") >= 1);
	(void)tkt_bool_at(o, "hugepages");
	if (strcmp(scenario, "redis") == 0)
		(*redis_rows)++;
	if (skipped) {
		/* Only redis may be skipped, with a reason and no numbers. */
		assert_string_equal(impl, "redis-strict");
		assert_true(cJSON_IsString(skipped) &&
			    strlen(skipped->valuestring) > 0);
		assert_null(cJSON_GetObjectItemCaseSensitive(
			o, "decisions_per_sec"));
		return;
	}
	for (const char *const *n = nums; *n; n++)
		assert_true(tkt_num_at(o, *n) >= 0);
	assert_true(tkt_num_at(o, "decisions_per_sec") > 0);
	assert_true(tkt_num_at(o, "allowed") <= tkt_num_at(o, "decisions"));
	assert_true(tkt_num_at(o, "p50_ns") <= tkt_num_at(o, "p99_ns"));
	assert_true(tkt_num_at(o, "p99_ns") <= tkt_num_at(o, "p999_ns"));
	assert_true(tkt_num_at(o, "p999_ns") <= tkt_num_at(o, "max_ns"));
	if (strcmp(scenario, "sigstop") == 0) {
		const char *v = tkt_str_at(o, "variant");

		assert_true(strcmp(v, "anywhere") == 0 ||
			    strcmp(v, "in_critical_section") == 0);
		assert_true(tkt_num_at(o, "per_sec_before") > 0);
		assert_true(tkt_num_at(o, "per_sec_during") >= 0);
		assert_true(tkt_num_at(o, "per_sec_after") > 0);
		assert_true(tkt_num_at(o, "stopped_ms") > 0);
	}
	if (strcmp(scenario, "keys10M") == 0) {
		assert_true(tkt_num_at(o, "fill_seconds") > 0);
		assert_true(tkt_num_at(o, "shmem_huge_kb") >= 0);
		/* The batched row: groups of 16, every request decided. */
		if (cJSON_GetObjectItemCaseSensitive(o, "batch")) {
			assert_true(tkt_num_at(o, "batch") == 16);
			assert_true(tkt_bool_at(o, "hugepages"));
		}
	}
	while (strcmp(scenarios[si], scenario) != 0)
		si++;
	while (strcmp(impls[ii], impl) != 0)
		ii++;
	measured[si * 3 + ii]++;
}

static void
quick_run_writes_json(void **state)
{
	const char *out = tkt_path("procs.jsonl");
	const char *argv[] = { driver_path, "--quick", "--out", out, NULL };
	struct tkt_proc p;
	int measured[5 * 3] = { 0 }, redis_rows = 0, lines = 0;
	char *text, *line, *save = NULL;

	(void)state;
	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, "tkshm_bench_procs --quick");
	text = tkt_read_file(out, NULL);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = tkt_parse_json(line, "a JSON line");

		check_row(o, measured, &redis_rows);
		cJSON_Delete(o);
		lines++;
	}
	free(text);
	tkt_proc_free(&p);
	/* uniform100k and hotkey: 1 and 2 processes; keys10M: tkshm three
	 * times (without and with huge pages, and batched), mutex once;
	 * sigstop: 2 variants. */
	for (int si = 0; si < 4; si++) {
		int want_tk = si == 2 ? 3 : 2, want_mx = si == 2 ? 1 : 2;

		if (measured[si * 3 + 0] != want_tk ||
		    measured[si * 3 + 1] != want_mx)
			fail_msg("scenario %d: %d tkshm and %d mutex rows", si,
				 measured[si * 3 + 0], measured[si * 3 + 1]);
	}
	assert_int_equal(redis_rows, 2);
	assert_int_equal(lines, 2 + 2 + 2 + 2 + 4 + 4 + 2);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mutex_decides_as_tkshm),
		cmocka_unit_test(redis_decides_as_tkshm),
		cmocka_unit_test(quick_run_writes_json),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-OF-tkshm_bench_procs\n",
			argv[0]);
		return 2;
	}
	driver_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
