/*
 * test_bench_redis_tier.c - keeps the Redis tier's benchmark honest: a
 * --quick run of tkshm_bench_redis_tier exits 0 and writes a machine
 * record and one record per case and phase whose figures make sense:
 *
 *   every measured row  decisions > 0, allowed <= decisions, latency
 *                       samples and ordered quantiles
 *   local               a healthy row each for the key set (gcra and
 *                       fixedWindow) and the hot key
 *   strict              Redis calls per 1,000 decisions at most 1,000 plus
 *                       the host registration a worker sends once a second
 *                       (safe-share); on the hot key the negative cache
 *                       answers most checks, so far fewer
 *   lease               the agent's round trips per 1,000 decisions below
 *                       1,000, leases granted, checks admitted
 *   strict and lease    a redis_down row after each healthy row, and a
 *                       "topology": "single"
 *   cluster             the key sets of strict and lease again with
 *                       "topology": "cluster" (healthy only), the same
 *                       checks, and keys_per_master: every one of the 3
 *                       masters serves some of the keys
 *
 * Without redis-server the Redis cases are skipped with a reason, which
 * the test accepts (the local rows are still required); so are the
 * cluster's without redis-cli.
 *
 * Usage: test_bench_redis_tier PATH-OF-tkshm_bench_redis_tier
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"

static const char *tier_path;

/* What the rows of the run held, counted by check_row. */
struct seen {
	int machine, local, strict, strict_hot, lease_gcra, lease_window;
	int down, skipped;
};

/* The rows of one run: on one redis-server each, and on the cluster. */
struct seen_all {
	struct seen single, cluster;
};

/* A cluster row's keys are spread over its 3 masters, each serving some
 * (1,000 keys: about a third each). */
static void
check_cluster(const cJSON *o)
{
	const cJSON *per =
		cJSON_GetObjectItemCaseSensitive(o, "keys_per_master");
	const cJSON *e;
	double sum = 0;
	int n = 0;

	assert_true(tkt_num_at(o, "cluster_masters") == 3);
	assert_true(tkt_num_at(o, "cluster_replicas") == 3);
	if (cJSON_GetObjectItemCaseSensitive(o, "skipped"))
		return;
	assert_true(cJSON_IsArray(per));
	cJSON_ArrayForEach(e, per)
	{
		assert_true(cJSON_IsNumber(e));
		assert_true(e->valuedouble > 0);
		sum += e->valuedouble;
		n++;
	}
	assert_int_equal(n, 3);
	assert_true(sum == tkt_num_at(o, "keys"));
}

static void
check_latency(const cJSON *o)
{
	assert_true(tkt_num_at(o, "samples") > 0);
	assert_true(tkt_num_at(o, "p50_ns") > 0);
	assert_true(tkt_num_at(o, "p50_ns") <= tkt_num_at(o, "p99_ns"));
	assert_true(tkt_num_at(o, "p99_ns") <= tkt_num_at(o, "p999_ns"));
	assert_true(tkt_num_at(o, "p999_ns") <= tkt_num_at(o, "max_ns"));
}

static void
check_healthy(const cJSON *o, const char *mode, bool hot, struct seen *s)
{
	/* The workers' count: a strict table's own counters also count
	 * the negative cache's inserts (redis_tier.c). */
	double decisions = tkt_num_at(o, "decisions");

	assert_true(tkt_num_at(o, "table_decisions") > 0);
	if (strcmp(mode, "local") == 0) {
		s->local++;
		return;
	}
	if (strcmp(mode, "strict") == 0) {
		/* One script per decision that reaches Redis, and a host
		 * registration at most once a second (and once at the
		 * start of the phase). */
		double allowance = ceil(tkt_num_at(o, "seconds")) + 1;

		assert_true(tkt_num_at(o, "redis_calls") <=
			    decisions + allowance);
		/* (written with 4 decimals) */
		assert_true(tkt_num_at(o, "redis_calls_per_1000") <=
			    1000 * (decisions + allowance) / decisions + 0.001);
		if (hot) {
			/* Denied from shared memory, not by Redis. */
			assert_true(tkt_num_at(o, "cached") > 0);
			assert_true(tkt_num_at(o, "redis_calls_per_1000") <
				    500);
			s->strict_hot++;
		} else {
			assert_true(tkt_num_at(o, "redis_calls") > 0);
			s->strict++;
		}
		return;
	}
	assert_string_equal(mode, "lease");
	assert_true(tkt_num_at(o, "round_trips_per_1000") >= 0);
	assert_true(tkt_num_at(o, "round_trips_per_1000") < 1000);
	assert_true(tkt_num_at(o, "leases_total") > 0);
	assert_true(tkt_num_at(o, "allowed") > 0);
	if (strcmp(tkt_str_at(o, "algo"), "gcra") == 0)
		s->lease_gcra++;
	else
		s->lease_window++;
}

static void
check_row(const cJSON *o, struct seen_all *all)
{
	struct seen *s = &all->single;
	const char *mode, *phase;
	bool hot;

	assert_string_equal(tkt_str_at(o, "suite"), "redis_tier");
	if (strcmp(tkt_str_at(o, "record"), "machine") == 0) {
		assert_true(tkt_num_at(o, "cpus") >= 1);
		(void)tkt_str_at(o, "os");
		assert_true(tkt_bool_at(o, "quick"));
		s->machine++;
		return;
	}
	assert_string_equal(tkt_str_at(o, "record"), "case");
	mode = tkt_str_at(o, "mode");
	/* Every Redis row says where Redis ran; local rows do not. */
	if (strcmp(mode, "local") == 0) {
		assert_null(cJSON_GetObjectItemCaseSensitive(o, "topology"));
	} else if (strcmp(tkt_str_at(o, "topology"), "cluster") == 0) {
		check_cluster(o);
		s = &all->cluster;
	} else {
		assert_string_equal(tkt_str_at(o, "topology"), "single");
	}
	hot = tkt_num_at(o, "keys") == 1;
	assert_true(tkt_num_at(o, "procs") >= 1);
	(void)tkt_str_at(o, "policy");
	if (cJSON_GetObjectItemCaseSensitive(o, "skipped")) {
		/* Only a case that needs redis-server, with a reason. */
		assert_true(strcmp(mode, "local") != 0);
		assert_true(strlen(tkt_str_at(o, "skipped")) > 0);
		s->skipped++;
		return;
	}
	assert_true(tkt_num_at(o, "decisions") > 0);
	/* The workers stop at each phase boundary while the table's counters
	 * are read, so both counts cover the same checks; a strict table's
	 * also counts the negative cache's inserts (redis_tier.c). */
	if (strcmp(mode, "strict") == 0)
		assert_true(tkt_num_at(o, "table_decisions") >=
			    tkt_num_at(o, "decisions"));
	else
		assert_true(tkt_num_at(o, "table_decisions") ==
			    tkt_num_at(o, "decisions"));
	assert_true(tkt_num_at(o, "per_worker_per_sec") > 0);
	assert_true(tkt_num_at(o, "allowed") <= tkt_num_at(o, "decisions"));
	assert_true(tkt_num_at(o, "seconds") > 0);
	check_latency(o);
	phase = tkt_str_at(o, "phase");
	if (strcmp(phase, "healthy") == 0) {
		check_healthy(o, mode, hot, s);
	} else {
		assert_string_equal(phase, "redis_down");
		assert_true(strcmp(mode, "local") != 0);
		assert_true(s == &all->single);
		s->down++;
	}
}

static void
quick_run_writes_json(void **state)
{
	const char *out = tkt_path("redis_tier.jsonl");
	const char *argv[] = { tier_path, "--quick", "--out", out, NULL };
	struct tkt_proc p;
	struct seen_all all;
	struct seen *s = &all.single, *c = &all.cluster;
	char *text, *line, *save = NULL;

	(void)state;
	memset(&all, 0, sizeof all);
	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, "tkshm_bench_redis_tier --quick");
	text = tkt_read_file(out, NULL);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = tkt_parse_json(line, "a JSON line");

		check_row(o, &all);
		cJSON_Delete(o);
	}
	free(text);
	tkt_proc_free(&p);
	/* --quick: every case once, with 2 workers; on the cluster the
	 * key sets of strict and lease. */
	assert_int_equal(s->machine, 1);
	assert_int_equal(s->local, 3);
	if (c->skipped) {
		print_message("Redis Cluster cases skipped: %d\n", c->skipped);
		assert_int_equal(c->skipped, 3);
	} else {
		assert_int_equal(c->strict, 1);
		assert_int_equal(c->strict_hot, 0);
		assert_int_equal(c->lease_gcra, 1);
		assert_int_equal(c->lease_window, 1);
		assert_int_equal(c->down, 0);
	}
	if (s->skipped) {
		print_message("Redis cases skipped: %d\n", s->skipped);
		assert_int_equal(s->skipped, 4);
		return;
	}
	assert_int_equal(s->strict, 1);
	assert_int_equal(s->strict_hot, 1);
	assert_int_equal(s->lease_gcra, 1);
	assert_int_equal(s->lease_window, 1);
	assert_int_equal(s->down, 4);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quick_run_writes_json),
	};

	if (argc != 2) {
		fprintf(stderr, "usage: %s PATH-OF-tkshm_bench_redis_tier\n",
			argv[0]);
		return 2;
	}
	tier_path = argv[1];
	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
