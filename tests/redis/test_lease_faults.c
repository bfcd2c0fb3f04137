/*
 * test_lease_faults.c - lease mode while Redis fails: killed and
 * restarted mid-run, paused longer than the timeout, its scripts flushed,
 * refusing connections at start.  Each failure policy does what it
 * promises, workers never wait on Redis, and the agents recover by
 * themselves.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "hosts_sim.h"
#include "redis_server.h"
#include "test_support.h"
#include "tkshm.h"

static const int gaps[SIM_HOSTS] = { 0, 400, 4000 };

static void
host_stats(const struct sim_host *h, tkshm_stats *st)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t;

	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(h->path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, st), TKSHM_OK);
	tkshm_close(t);
}

/* Waits up to 4 s for host h to hold more than `leases` leases: after
 * Redis comes back, the agents lease again once every host has stopped
 * spending its safe share (the handover's settling time, then a window
 * boundary for a fixed window). */
static void
wait_leases(const struct sim_host *h, uint64_t leases)
{
	double t0 = tkt_seconds();
	tkshm_stats st;

	do {
		usleep(20000);
		host_stats(h, &st);
	} while (st.global.leases <= leases && tkt_seconds() - t0 < 4);
	assert_true(st.global.leases > leases);
}

static uint64_t
fallbacks(const struct sim *s)
{
	uint64_t n = 0;

	for (int h = 0; h < SIM_HOSTS; h++)
		for (int i = 0; i < SIM_WORKERS; i++)
			n += s->w[h][i].fallback;
	return n;
}

/* Up, then killed for 2.6 s (safe-share: each host keeps to a third of
 * the limit), then restarted: the agents lease again by themselves. */
static void
test_kill_restart_safe_share(void **state)
{
	struct sim *s = sim_new();
	struct sim_host hosts[SIM_HOSTS];
	double down_from, down_to, p99_up, p99_down;
	uint64_t fb_recovered, leases_before;
	tkshm_stats st;

	(void)state;
	memset(hosts, 0, sizeof hosts);
	s->window_ms = 1000;
	freeReplyObject(tkt_redis_cmd(&tkt_srv, "FLUSHALL", NULL));
	for (int h = 0; h < SIM_HOSTS; h++) {
		sim_table(&hosts[h], h,
			  "fixedWindow:limit=300,windowMs=1000;mode=lease,"
			  "failure=safe-share,prefix=lf1");
		sim_agent(s, &hosts[h], h, tkt_srv.port);
	}
	usleep(400000);
	host_stats(&hosts[0], &st);
	assert_int_equal(st.global.hosts, 3); /* learned from Redis */
	assert_true(st.global.redis_up);
	s->record_latency = 1;
	for (int h = 0; h < SIM_HOSTS; h++)
		sim_workers(s, &hosts[h], h, "api", gaps, 0);
	usleep(1200000);
	s->record_latency = 2;
	tkt_redis_kill(&tkt_srv);
	down_from = tkshm_now_ms();
	usleep(2600000);
	down_to = tkshm_now_ms();
	s->record_latency = 0;
	host_stats(&hosts[0], &st);
	assert_false(st.global.redis_up);
	assert_true(st.global.fallback_allowed > 0);
	leases_before = st.global.leases;
	tkt_redis_restart(&tkt_srv);
	usleep(1000000);
	fb_recovered = fallbacks(s);
	usleep(500000);
	/* Recovered: no decision fell back in the last half second. */
	assert_int_equal(fallbacks(s), fb_recovered);
	host_stats(&hosts[0], &st);
	assert_true(st.global.redis_up);
	wait_leases(&hosts[0], leases_before);
	sim_stop(s, hosts, SIM_HOSTS);

	/* While down, from the first full window on (leased credit ends
	 * with its window): each host admits at most limit / 3 per window. */
	for (int h = 0; h < SIM_HOSTS; h++) {
		uint64_t n, nw, total, most;
		double *st_h = sim_host_stamps(s, h, &n);

		most = sim_max_aligned(st_h, n, 1000, down_from, down_to, &nw,
				       &total);
		printf("down: host %d: %llu full windows, most %llu (share "
		       "100)\n",
		       h, (unsigned long long)nw, (unsigned long long)most);
		assert_true(nw >= 1);
		assert_true(most <= 100);
		if (h == 0) /* the share is used (but for a straddler) */
			assert_in_range(most, 99, 100);
		free(st_h);
	}
	p99_up = sim_p99_us(s, 1);
	p99_down = sim_p99_us(s, 2);
	printf("check latency p99: %.2f us with Redis up, %.2f us with Redis "
	       "down\n",
	       p99_up, p99_down);
	/* Never a Redis timeout (100 ms) on a worker's path. */
	assert_true(p99_down < 5000);
	sim_free(s);
}

/* One host whose agent has leased, then Redis killed: credit is spent,
 * then the failure policy decides; fail-closed denies, fail-open admits. */
static void
run_policy(const char *spec, bool want_allowed)
{
	struct sim *s = sim_new();
	struct sim_host h;
	tkshm_table *t;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_decision d;
	int fb = 0;
	double t0;

	memset(&h, 0, sizeof h);
	freeReplyObject(tkt_redis_cmd(&tkt_srv, "FLUSHALL", NULL));
	sim_table(&h, 0, spec);
	sim_agent(s, &h, 0, tkt_srv.port);
	o.flags = 0;
	assert_rc(tkshm_open(h.path, &o, &t), TKSHM_OK);
	/* Demand, then credit (fail-open admits before the agent has
	 * reached Redis, flagged as a fallback). */
	t0 = tkt_seconds();
	do {
		assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
		usleep(1000);
	} while ((!d.allowed || (d.flags & TKSHM_DECISION_FALLBACK)) &&
		 tkt_seconds() - t0 < 3);
	assert_true(d.allowed);
	assert_false(d.flags & TKSHM_DECISION_FALLBACK);
	tkt_redis_kill(&tkt_srv);
	t0 = tkt_seconds();
	while (tkt_seconds() - t0 < 1.5) {
		assert_rc(tkshm_check(t, "k", 1, 1, &d), TKSHM_OK);
		if (d.flags & TKSHM_DECISION_FALLBACK) {
			assert_int_equal(d.allowed, want_allowed);
			fb++;
		}
		usleep(500);
	}
	assert_true(fb > 100);
	tkshm_close(t);
	tkt_redis_restart(&tkt_srv);
	sim_stop(s, &h, 1);
	sim_free(s);
}

static void
test_fail_closed(void **state)
{
	(void)state;
	run_policy("gcra:limit=100,periodMs=1000;mode=lease,"
		   "failure=fail-closed,prefix=lf2",
		   false);
}

static void
test_fail_open(void **state)
{
	(void)state;
	run_policy("gcra:limit=100,periodMs=1000;mode=lease,"
		   "failure=fail-open,prefix=lf3",
		   true);
}

/* Paused longer than the command timeout, then SCRIPT FLUSH: the agent
 * times out once, never blocks a worker, and keeps leasing after. */
static void
test_pause_and_flush(void **state)
{
	struct sim *s = sim_new();
	struct sim_host hosts[SIM_HOSTS];
	uint64_t leases;
	tkshm_stats st;

	(void)state;
	memset(hosts, 0, sizeof hosts);
	freeReplyObject(tkt_redis_cmd(&tkt_srv, "FLUSHALL", NULL));
	for (int h = 0; h < SIM_HOSTS; h++) {
		sim_table(&hosts[h], h,
			  "gcra:limit=300,periodMs=1000;mode=lease,"
			  "leaseMs=200,prefix=lf4");
		sim_agent(s, &hosts[h], h, tkt_srv.port);
	}
	usleep(300000);
	for (int h = 0; h < SIM_HOSTS; h++)
		sim_workers(s, &hosts[h], h, "api", gaps, 0);
	usleep(500000);
	s->record_latency = 2;
	tkt_redis_pause(&tkt_srv, 700);
	usleep(900000);
	s->record_latency = 0;
	host_stats(&hosts[0], &st);
	leases = st.global.leases;
	freeReplyObject(tkt_redis_cmd(&tkt_srv, "SCRIPT", "FLUSH", NULL));
	wait_leases(&hosts[0], leases);
	host_stats(&hosts[0], &st);
	assert_true(st.global.redis_up);
	sim_stop(s, hosts, SIM_HOSTS);
	printf("check latency p99 during the pause: %.2f us\n",
	       sim_p99_us(s, 2));
	assert_true(sim_p99_us(s, 2) < 5000);
	sim_free(s);
}

/* Redis down when the agents start: the failure policy from the first
 * check; leases once it comes up. */
static void
test_refused_at_start(void **state)
{
	struct sim *s = sim_new();
	struct sim_host hosts[SIM_HOSTS];
	uint64_t fb;
	tkshm_stats st;

	(void)state;
	memset(hosts, 0, sizeof hosts);
	tkt_redis_kill(&tkt_srv);
	for (int h = 0; h < SIM_HOSTS; h++) {
		sim_table(&hosts[h], h,
			  "fixedWindow:limit=300,windowMs=1000;mode=lease,"
			  "hosts=3,prefix=lf5");
		sim_agent(s, &hosts[h], h, tkt_srv.port);
	}
	for (int h = 0; h < SIM_HOSTS; h++)
		sim_workers(s, &hosts[h], h, "api", gaps, 0);
	usleep(500000);
	assert_true(fallbacks(s) > 0);
	host_stats(&hosts[0], &st);
	assert_false(st.global.redis_up);
	assert_true(st.global.agent_pid > 0);
	tkt_redis_restart(&tkt_srv);
	usleep(1200000);
	fb = fallbacks(s);
	usleep(400000);
	assert_int_equal(fallbacks(s), fb);
	host_stats(&hosts[0], &st);
	assert_true(st.global.redis_up);
	wait_leases(&hosts[0], 0);
	sim_stop(s, hosts, SIM_HOSTS);
	/* The agents detached: no pid left behind. */
	host_stats(&hosts[0], &st);
	assert_int_equal(st.global.agent_pid, 0);
	sim_free(s);
}

/* One table, one agent: a second agent is refused while the first
 * serves it. */
static void
test_one_agent_per_table(void **state)
{
	struct sim *s = sim_new();
	struct sim_host h;
	struct tk_agent_conf c;
	struct tk_agent *a;
	char err[256] = "";

	(void)state;
	memset(&h, 0, sizeof h);
	sim_table(&h, 0, "gcra:limit=100,periodMs=1000;mode=lease,prefix=lf6");
	sim_agent(s, &h, 0, tkt_srv.port);
	usleep(200000);
	tk_agent_conf_init(&c);
	c.redis.port = tkt_srv.port;
	assert_rc(tk_agent_new(&c, &a, err, sizeof err), TKSHM_OK);
	assert_rc(tk_agent_add_table(a, h.path, err, sizeof err), TKSHM_EBUSY);
	tkt_expect_contains(err, "served by another agent", "refusal");
	sim_stop(s, &h, 1);
	/* Once it has stopped, the table can be served again. */
	assert_rc(tk_agent_add_table(a, h.path, err, sizeof err), TKSHM_OK);
	tk_agent_free(a);
	sim_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_restart_safe_share),
		cmocka_unit_test(test_fail_closed),
		cmocka_unit_test(test_fail_open),
		cmocka_unit_test(test_pause_and_flush),
		cmocka_unit_test(test_refused_at_start),
		cmocka_unit_test(test_one_agent_per_table),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, tkt_redis_group_setup,
				      tkt_redis_group_teardown);
}
