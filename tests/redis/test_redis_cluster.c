/*
 * test_redis_cluster.c - strict and lease tables on a Redis Cluster of 3
 * masters and 3 replicas started by the test (support/redis_cluster.c),
 * through src/redis/cluster.c:
 *   - exact: a key on each master, checked by 3 simulated hosts (each its
 *     own table and connection), admits exactly its limit;
 *   - a multi-key check across slots is refused (TKSHM_ECROSSSLOT, the
 *     keys named, nothing counted against Redis); with one tag it is one
 *     script;
 *   - a slot moved under load, its keys half-way (ASK), then all (MOVED):
 *     still exactly the limit;
 *   - lease tables: tkshm-syncd's engine serves keys on every master;
 *   - a master killed and its replica promoted: fail-closed denies in the
 *     gap, and after it the key goes on from its replicated count.
 * And a Sentinel-managed primary failed over under load.
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "hosts_sim.h"
#include "redis_cluster.h"
#include "test_support.h"
#include "tkshm.h"
#include "tkshm_redis.h"

#define HOSTS 3
#define NKEYS 3

static struct tkt_cluster cl;

/* What the hosts did, in shared memory. */
struct tally {
	volatile int stop;
	uint64_t admitted[HOSTS][NKEYS], denied[HOSTS][NKEYS];
	uint64_t fallback[HOSTS], errors[HOSTS];
};

static int
setup(void **state)
{
	(void)state;
	if (!tkt_cluster_available()) {
		print_message("redis-cli not found: skipped\n");
		exit(77);
	}
	tkt_cluster_start(&cl);
	return 0;
}

static int
teardown(void **state)
{
	tkt_cluster_stop(&cl);
	return tkt_teardown(state);
}

/* A key named after `tag` (prefix "cl:" in Redis) whose slot the
 * master of rank master_rank serves. */
static void
key_on(const char *tag, int master_rank, char *key, size_t len)
{
	int seen = -1, want;

	for (int i = 0, rank = 0; i < TKT_CLUSTER_NODES; i++)
		if (cl.master[i] && rank++ == master_rank)
			seen = i;
	want = seen;
	for (int n = 0; n < 100000; n++) {
		char redis_key[80];

		snprintf(key, len, "%s%d-%d", tag, master_rank, n);
		snprintf(redis_key, sizeof redis_key, "cl:%s", key);
		if (tkt_cluster_master_of_slot(
			    &cl, tkt_key_slot(redis_key, strlen(redis_key))) ==
		    want)
			return;
	}
	fail_msg("no key found on master %d", master_rank);
}

static tkshm_table *
strict_table(const char *name, const char *spec, tkshm_redis **r)
{
	tkshm_redis_options ro = TKSHM_REDIS_OPTIONS_INIT;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy(spec);
	tkshm_table *t;

	o.policy = &p;
	o.slots = 256;
	assert_rc(tkshm_open(tkt_path(name), &o, &t), TKSHM_OK);
	ro.cluster = tkt_cluster_seeds(&cl);
	ro.command_timeout_ms = 200;
	ro.connect_timeout_ms = 200;
	ro.breaker_open_ms = 100;
	assert_rc(tkshm_redis_open(&ro, r), TKSHM_OK);
	assert_rc(tkshm_redis_attach(t, *r), TKSHM_OK);
	return t;
}

/* Host h: its own table and connection, checking keys[] in turn until
 * told to stop, `gap_us` between rounds. */
static pid_t
host(struct tally *y, int h, const char *spec, char keys[NKEYS][32], int gap_us)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char name[32];
		tkshm_redis *r;
		tkshm_table *t;

		snprintf(name, sizeof name, "host%d.tk", h);
		t = strict_table(name, spec, &r);
		while (!y->stop) {
			for (int k = 0; k < NKEYS; k++) {
				tkshm_decision d;
				int rc = tkshm_check(t, keys[k],
						     strlen(keys[k]), 1, &d);

				if (rc != TKSHM_OK)
					y->errors[h]++;
				else if (d.flags & TKSHM_DECISION_FALLBACK)
					y->fallback[h]++;
				else if (d.allowed)
					y->admitted[h][k]++;
				else
					y->denied[h][k]++;
			}
			if (gap_us)
				usleep((useconds_t)gap_us);
		}
		_exit(0);
	}
	return pid;
}

static struct tally *
run_hosts(const char *spec, char keys[NKEYS][32], int gap_us, pid_t pids[HOSTS])
{
	struct tally *y = tkt_shared(sizeof *y);

	for (int h = 0; h < HOSTS; h++) {
		char name[32];

		snprintf(name, sizeof name, "host%d.tk", h);
		unlink(tkt_path(name));
		pids[h] = host(y, h, spec, keys, gap_us);
	}
	return y;
}

static void
stop_hosts(struct tally *y, pid_t pids[HOSTS])
{
	y->stop = 1;
	for (int h = 0; h < HOSTS; h++)
		assert_int_equal(waitpid(pids[h], NULL, 0), pids[h]);
}

static uint64_t
admitted(const struct tally *y, int k)
{
	uint64_t n = 0;

	for (int h = 0; h < HOSTS; h++)
		n += y->admitted[h][k];
	return n;
}

/* Limit 40 per key, nothing refilled during the test (one per 27 h). */
#define GCRA_40                                                    \
	"gcra:limit=40,periodMs=4000000000;mode=strict,prefix=cl," \
	"failure=fail-closed"

static void
test_exact_on_every_master(void **state)
{
	char keys[NKEYS][32];
	pid_t pids[HOSTS];
	struct tally *y;

	(void)state;
	for (int m = 0; m < NKEYS; m++)
		key_on("x", m, keys[m], sizeof keys[m]);
	y = run_hosts(GCRA_40, keys, 0, pids);
	usleep(1500000);
	stop_hosts(y, pids);
	for (int k = 0; k < NKEYS; k++) {
		print_message("  key %s (master %d): %llu admitted\n", keys[k],
			      k, (unsigned long long)admitted(y, k));
		assert_int_equal(admitted(y, k), 40);
	}
	for (int h = 0; h < HOSTS; h++) {
		assert_int_equal(y->errors[h], 0);
		assert_int_equal(y->fallback[h], 0);
	}
	tkt_shared_free(y, sizeof *y);
}

static void
test_multi_across_slots(void **state)
{
	tkshm_redis *r;
	tkshm_table *t = strict_table("multi.tk", GCRA_40, &r);
	tkshm_dimension dims[2];
	tkshm_decision out, each[2];
	tkshm_stats st;
	char why[256];

	(void)state;
	memset(dims, 0, sizeof dims);
	dims[0].table = t;
	dims[0].key = "a:minute";
	dims[0].key_len = strlen("a:minute");
	dims[0].cost = 1;
	dims[1] = dims[0];
	dims[1].key = "b:day";
	dims[1].key_len = strlen("b:day");
	/* Two raw keys: two hash tags ("cl:{a:minute}", "cl:{b:day}"). */
	assert_rc(tkshm_check_multi(TKSHM_MULTI_ALL, dims, 2, &out, each, NULL),
		  TKSHM_ECROSSSLOT);
	assert_rc(tkshm_redis_last_error(r, why, sizeof why), TKSHM_OK);
	print_message("  %s\n", why);
	assert_non_null(strstr(why, "cl:{a:minute}"));
	assert_non_null(strstr(why, "cl:{b:day}"));
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.global.redis_errors, 0);
	/* One tag: one slot, one script. */
	dims[0].key = "{u1}:minute";
	dims[0].key_len = strlen("{u1}:minute");
	dims[1].key = "{u1}:day";
	dims[1].key_len = strlen("{u1}:day");
	for (int i = 0; i < 45; i++)
		assert_rc(tkshm_check_multi(TKSHM_MULTI_ALL, dims, 2, &out,
					    each, NULL),
			  TKSHM_OK);
	assert_false(out.allowed);
	assert_rc(tkshm_stats_get(t, &st), TKSHM_OK);
	assert_int_equal(st.global.redis_errors, 0);
	tkshm_redis_attach(t, NULL);
	tkshm_redis_close(r);
	tkshm_close(t);
}

/* A slot moved while 3 hosts check its key: half its keys moved (the key
 * answered by ASK from the target), then all (MOVED). */
static void
test_slot_moved_under_load(void **state)
{
	char keys[NKEYS][32], redis_key[80];
	int slot, from, to = -1;
	pid_t pids[HOSTS];
	struct tally *y;

	(void)state;
	for (int m = 0; m < NKEYS; m++)
		key_on("m", m, keys[m], sizeof keys[m]);
	snprintf(redis_key, sizeof redis_key, "cl:%s", keys[0]);
	slot = tkt_key_slot(redis_key, strlen(redis_key));
	from = tkt_cluster_master_of_slot(&cl, slot);
	for (int i = 0; i < TKT_CLUSTER_NODES && to < 0; i++)
		if (cl.master[i] && i != from)
			to = i;
	y = run_hosts("gcra:limit=300,periodMs=4000000000;mode=strict,"
		      "prefix=cl,failure=fail-closed",
		      keys, 2000, pids);
	usleep(300000);
	tkt_cluster_migrate_begin(&cl, slot, to, 0);
	tkt_cluster_migrate_key(&cl, redis_key, strlen(redis_key));
	usleep(300000);
	tkt_cluster_migrate_end(&cl);
	usleep(1500000);
	stop_hosts(y, pids);
	print_message("  slot %d moved %d -> %d: %llu admitted of 300\n", slot,
		      from, to, (unsigned long long)admitted(y, 0));
	assert_int_equal(tkt_cluster_master_of_slot(&cl, slot), to);
	for (int k = 0; k < NKEYS; k++)
		assert_int_equal(admitted(y, k), 300);
	tkt_shared_free(y, sizeof *y);
}

/* Lease tables: each host's agent leases for keys on every master. */
static void
test_lease_on_every_master(void **state)
{
	static char seeds[128];
	struct sim *s = sim_new();
	struct sim_host hosts[SIM_HOSTS];
	char keys[SIM_WORKERS][32];
	const char *kp[SIM_WORKERS];
	const int gaps[SIM_HOSTS] = { 200, 200, 200 };
	uint64_t per_key[SIM_WORKERS] = { 0 };
	double from, to, windows;

	(void)state;
	snprintf(seeds, sizeof seeds, "%s", tkt_cluster_seeds(&cl));
	s->redis_cluster = seeds;
	memset(hosts, 0, sizeof hosts);
	for (int w = 0; w < SIM_WORKERS; w++) {
		char rk[80];

		/* prefix "ls": the lease keys are "ls:<key>" */
		for (int n = 0;; n++) {
			snprintf(keys[w], sizeof keys[w], "l%d-%d", w, n);
			snprintf(rk, sizeof rk, "ls:%s", keys[w]);
			if (tkt_cluster_master_of_slot(
				    &cl, tkt_key_slot(rk, strlen(rk))) ==
			    tkt_cluster_master_of_slot(&cl, w ? 16383 : 0))
				break;
		}
		kp[w] = keys[w];
	}
	for (int h = 0; h < SIM_HOSTS; h++) {
		sim_table(&hosts[h], h,
			  "fixedWindow:limit=100,windowMs=1000;mode=lease,"
			  "prefix=ls");
		sim_agent(s, &hosts[h], h, 0);
	}
	usleep(2000000);
	from = tkshm_now_ms();
	for (int h = 0; h < SIM_HOSTS; h++)
		sim_workers_keys(s, &hosts[h], h, kp, gaps, 0);
	usleep(3000000);
	sim_stop(s, hosts, SIM_HOSTS);
	to = tkshm_now_ms();
	/* The 1 s windows the workers' time touched. */
	windows = floor(to / 1000) - floor(from / 1000) + 1;
	for (int h = 0; h < SIM_HOSTS; h++)
		for (int w = 0; w < SIM_WORKERS; w++)
			per_key[w] += s->w[h][w].admitted;
	for (int w = 0; w < SIM_WORKERS; w++) {
		print_message("  lease key %s: %llu admitted in %.0f windows "
			      "of 100\n",
			      keys[w], (unsigned long long)per_key[w], windows);
		/* Leases flowed for both (0 before: the agent's requests
		 * for the other master's keys all failed), and at most the
		 * limit in each window. */
		assert_true(per_key[w] >= 100);
		assert_true((double)per_key[w] <= 100 * windows);
	}
	sim_free(s);
}

/* Last: a master killed under load, its replica promoted. */
static void
test_master_killed(void **state)
{
	char keys[NKEYS][32], redis_key[80];
	pid_t pids[HOSTS];
	struct tally *y;
	int slot, master;

	(void)state;
	for (int m = 0; m < NKEYS; m++)
		key_on("f", m, keys[m], sizeof keys[m]);
	snprintf(redis_key, sizeof redis_key, "cl:%s", keys[0]);
	slot = tkt_key_slot(redis_key, strlen(redis_key));
	master = tkt_cluster_master_of_slot(&cl, slot);
	y = run_hosts("gcra:limit=1000,periodMs=4000000000;mode=strict,"
		      "prefix=cl,failure=fail-closed",
		      keys, 5000, pids);
	usleep(500000);
	/* Every write so far on the replica: the loss of asynchronous
	 * replication is not what this test measures. */
	tkt_cluster_wait_replicated(&cl, master);
	tkt_cluster_kill_master(&cl, master);
	tkt_cluster_wait_promoted(&cl, master);
	usleep(1000000);
	stop_hosts(y, pids);
	print_message("  master %d killed: key %s %llu admitted, %llu "
		      "fail-closed denials, %llu errors\n",
		      master, keys[0], (unsigned long long)admitted(y, 0),
		      (unsigned long long)(y->fallback[0] + y->fallback[1] +
					   y->fallback[2]),
		      (unsigned long long)(y->errors[0] + y->errors[1] +
					   y->errors[2]));
	/* The gap: fail-closed denied (nothing admitted without Redis);
	 * after it the replica's count goes on: never above the limit. */
	assert_true(admitted(y, 0) <= 1000);
	assert_true(y->fallback[0] + y->fallback[1] + y->fallback[2] > 0);
	for (int h = 0; h < HOSTS; h++)
		assert_int_equal(y->errors[h], 0);
	tkt_shared_free(y, sizeof *y);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_on_every_master),
		cmocka_unit_test(test_multi_across_slots),
		cmocka_unit_test(test_slot_moved_under_load),
		cmocka_unit_test(test_lease_on_every_master),
		cmocka_unit_test(test_master_killed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
