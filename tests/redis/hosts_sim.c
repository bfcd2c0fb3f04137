/*
 * hosts_sim.c - simulated hosts for the Redis tier's tests (hosts_sim.h).
 */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "hosts_sim.h"
#include "test_support.h"
#include "tkshm.h"
#include "tkshm_redis.h"

struct sim *
sim_new(void)
{
	return tkt_shared(sizeof(struct sim));
}

void
sim_free(struct sim *s)
{
	tkt_shared_free(s, sizeof *s);
}

void
sim_table(struct sim_host *h, int index, const char *spec)
{
	char name[64];

	snprintf(name, sizeof name, "host%d.tk", index);
	snprintf(h->path, sizeof h->path, "%s", tkt_path(name));
	unlink(h->path);
	tkshm_close(tkt_file(h->path, spec, 256));
}

static void
sim_sleep_ms(double ms)
{
	struct timespec ts = {
		(time_t)(ms / 1000),
		(long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)
	};

	nanosleep(&ts, NULL);
}

void
sim_agent(struct sim *s, struct sim_host *h, int index, int port)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct tk_agent_conf c;
		struct tk_agent *a;
		char err[256];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		tk_agent_conf_init(&c);
		c.redis.port = port;
		if (s->redis_cluster)
			snprintf(c.redis.cluster, sizeof c.redis.cluster, "%s",
				 s->redis_cluster);
		c.redis.command_timeout_ms = 100;
		c.redis.connect_timeout_ms = 100;
		c.heartbeat_ms =
			s->agent_heartbeat_ms > 0 ? s->agent_heartbeat_ms : 100;
		c.breaker_open_ms = 200;
		snprintf(c.host_id, sizeof c.host_id, "sim-host-%d", index);
		if (tk_agent_new(&c, &a, err, sizeof err) != TKSHM_OK ||
		    tk_agent_add_table(a, h->path, err, sizeof err) !=
			    TKSHM_OK) {
			fprintf(stderr, "agent %d: %s\n", index, err);
			_exit(1);
		}
		while (!s->stop_agents) {
			tk_agent_round(a, tkshm_now_ms(), NULL);
			sim_sleep_ms(c.poll_ms);
		}
		tk_agent_free(a);
		_exit(0);
	}
	h->agent = pid;
}

static void
sim_worker_run(struct sim *s, const char *path, const char *key, int gap_us,
	       int redis_port, struct sim_worker *w)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_redis *r = NULL;
	tkshm_table *t;

	o.flags = 0;
	if (s->worker_nice)
		(void)setpriority(PRIO_PROCESS, 0, s->worker_nice);
	if (tkshm_open(path, &o, &t) != TKSHM_OK)
		_exit(2);
	if (redis_port > 0) {
		tkshm_redis_options ro = TKSHM_REDIS_OPTIONS_INIT;

		ro.port = redis_port;
		if (s->redis_cluster) {
			ro.port = 0;
			ro.cluster = s->redis_cluster;
		}
		/* The worker's clock is sent, so each admission's stamp is
		 * the time Redis decided it at. */
		ro.server_time = false;
		if (tkshm_redis_open(&ro, &r) != TKSHM_OK ||
		    tkshm_redis_attach(t, r) != TKSHM_OK)
			_exit(3);
	}
	while (!s->stop_workers) {
		tkshm_decision d;
		double now = tkshm_now_ms();
		struct timespec a, b;
		int rc;

		clock_gettime(CLOCK_MONOTONIC, &a);
		rc = tkshm_check_at(t, key, strlen(key), 1, now, &d);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (rc != TKSHM_OK)
			_exit(4);
		w->checks++;
		{
			int ph = s->record_latency - 1;

			if (ph >= 0 && ph < 2 &&
			    w->nlat[ph] < SIM_LATENCY_SAMPLES)
				w->lat_us[ph][w->nlat[ph]++] =
					(float)((double)(b.tv_sec - a.tv_sec) *
							1e6 +
						(double)(b.tv_nsec -
							 a.tv_nsec) /
							1e3);
		}
		if (d.flags & TKSHM_DECISION_FALLBACK)
			w->fallback++;
		if (d.allowed) {
			double wms = s->window_ms;

			w->admitted++;
			if (wms > 0 &&
			    floor(now / wms) != floor(tkshm_now_ms() / wms))
				w->ambiguous++;
			else if (w->nstamps < SIM_MAX_ADMITS)
				w->stamps[w->nstamps++] = now;
		} else {
			w->denied++;
		}
		if (gap_us)
			usleep((useconds_t)gap_us);
		else if (!d.allowed)
			sched_yield();
	}
	tkshm_close(t);
	tkshm_redis_close(r);
	_exit(0);
}

void
sim_workers_keys(struct sim *s, struct sim_host *h, int index,
		 const char *const keys[SIM_WORKERS], const int *gap_us,
		 int redis_port)
{
	for (int i = 0; i < SIM_WORKERS; i++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			sim_worker_run(s, h->path, keys[i], gap_us[index],
				       redis_port, &s->w[index][i]);
		}
		h->workers[i] = pid;
	}
}

void
sim_workers(struct sim *s, struct sim_host *h, int index, const char *key,
	    const int *gap_us, int redis_port)
{
	const char *keys[SIM_WORKERS];

	for (int i = 0; i < SIM_WORKERS; i++)
		keys[i] = key;
	sim_workers_keys(s, h, index, keys, gap_us, redis_port);
}

void
sim_stop(struct sim *s, struct sim_host *hosts, int n)
{
	s->stop_workers = 1;
	for (int h = 0; h < n; h++)
		for (int i = 0; i < SIM_WORKERS; i++)
			if (hosts[h].workers[i] > 0) {
				tkt_wait_ok(hosts[h].workers[i]);
				hosts[h].workers[i] = 0;
			}
	s->stop_agents = 1;
	for (int h = 0; h < n; h++)
		if (hosts[h].agent > 0) {
			tkt_wait_ok(hosts[h].agent);
			hosts[h].agent = 0;
		}
}

static int
sim_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The admissions of hosts [h0, h1), of their worker `only` (-1: all),
 * sorted. */
static double *
sim_stamps_of(const struct sim *s, int h0, int h1, int only, uint64_t *n)
{
	int i0 = only < 0 ? 0 : only, i1 = only < 0 ? SIM_WORKERS : only + 1;
	uint64_t total = 0, k = 0;
	double *all;

	for (int h = h0; h < h1; h++)
		for (int i = i0; i < i1; i++)
			total += s->w[h][i].nstamps;
	all = malloc(sizeof *all * (total ? total : 1));
	assert_non_null(all);
	for (int h = h0; h < h1; h++)
		for (int i = i0; i < i1; i++) {
			memcpy(all + k, s->w[h][i].stamps,
			       sizeof *all * s->w[h][i].nstamps);
			k += s->w[h][i].nstamps;
		}
	qsort(all, total, sizeof *all, sim_cmp);
	*n = total;
	return all;
}

uint64_t
sim_ambiguous(const struct sim *s)
{
	uint64_t n = 0;

	for (int h = 0; h < SIM_HOSTS; h++)
		for (int i = 0; i < SIM_WORKERS; i++)
			n += s->w[h][i].ambiguous;
	return n;
}

double *
sim_stamps(const struct sim *s, uint64_t *n)
{
	return sim_stamps_of(s, 0, SIM_HOSTS, -1, n);
}

double *
sim_host_stamps(const struct sim *s, int h, uint64_t *n)
{
	return sim_stamps_of(s, h, h + 1, -1, n);
}

double *
sim_worker_stamps(const struct sim *s, int hosts, int w, uint64_t *n)
{
	return sim_stamps_of(s, 0, hosts, w, n);
}

uint64_t
sim_max_in_window(const double *st, uint64_t n, double w)
{
	uint64_t best = 0, lo = 0;

	for (uint64_t hi = 0; hi < n; hi++) {
		while (st[hi] - st[lo] >= w)
			lo++;
		if (hi - lo + 1 > best)
			best = hi - lo + 1;
	}
	return best;
}

uint64_t
sim_max_aligned(const double *st, uint64_t n, double w, double from, double to,
		uint64_t *windows, uint64_t *total)
{
	uint64_t best = 0, count = 0, nw = 0, sum = 0;
	double cur = -1;

	for (uint64_t i = 0; i <= n; i++) {
		double win = i < n ? (double)(int64_t)(st[i] / w) : -2;

		if (win != cur) {
			if (cur >= 0 && cur * w >= from &&
			    (cur + 1) * w <= to) {
				nw++;
				sum += count;
				if (count > best)
					best = count;
			}
			cur = win;
			count = 0;
		}
		count++;
	}
	*windows = nw;
	*total = sum;
	return best;
}

static int
sim_fcmp(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return x < y ? -1 : x > y;
}

double
sim_p99_us(const struct sim *s, int phase)
{
	float *all = malloc(sizeof *all * SIM_HOSTS * SIM_WORKERS *
			    SIM_LATENCY_SAMPLES);
	uint64_t n = 0;
	double p;

	assert_non_null(all);
	for (int h = 0; h < SIM_HOSTS; h++)
		for (int i = 0; i < SIM_WORKERS; i++) {
			memcpy(all + n, s->w[h][i].lat_us[phase - 1],
			       sizeof *all * s->w[h][i].nlat[phase - 1]);
			n += s->w[h][i].nlat[phase - 1];
		}
	assert_true(n > 0);
	qsort(all, n, sizeof *all, sim_fcmp);
	p = all[(size_t)((double)(n - 1) * 0.99)];
	free(all);
	return p;
}
