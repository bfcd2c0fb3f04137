/*
 * redis_tier.c - tkshm_bench_redis_tier: the Redis tier with real
 * processes.  Strict tables (one Lua script per decision, denials answered
 * by the negative cache) and lease tables (a sync agent leases budget,
 * workers spend it in shared memory), next to the local check they build
 * on:
 *
 *   decisions/s per worker, Redis calls per 1,000 decisions (strict and
 *   lease), the agent's round trips per 1,000 decisions (lease), and p50 /
 *   p99 check latency with Redis healthy and again after redis-server is
 *   killed with SIGKILL (the failure policy, safe-share, then decides).
 *
 *   tkshm_bench_redis_tier [--quick] [--seconds S] [--procs LIST]
 *                          [--keys N] [--mode LIST] [--skip-cluster]
 *                          [--out FILE]
 *
 * Every case gets a fresh table file, and a Redis case its own
 * redis-server on 127.0.0.1 and a free port (baseline_redis.c), so no case
 * inherits another's keys, leases or host registrations.  A lease case
 * also forks one agent process running tk_agent_round() every poll
 * period (1 ms), as tkshm-syncd does.  Workers are forked as in driver.c
 * and check keys as fast as they can with tkshm_check(); the parent moves
 * them through the phases:
 *
 *   warm-up  strict: connect and load the scripts; lease: the agent
 *            leases nothing until its start's handover has settled, then
 *            its first leases are of one unit and grow with the observed
 *            rate (src/agent/agent.c), so the first round trips say
 *            nothing of the steady state;
 *   healthy  timed: counts, latency, the table's counters before and
 *            after (tkshm_stats_get);
 *   down     timed from the moment redis-server is SIGKILLed (strict and
 *            lease only): leased credit is spent first, then the failure
 *            policy decides; what a worker pays meanwhile is the point.
 *
 * Then the key-set cases of strict and lease run again on a Redis Cluster
 * (tier_cluster.c: 3 masters and 3 replicas on 127.0.0.1, started once
 * for them all, FLUSHALL on every master before each case), the workers'
 * handles and the agent given its masters as seeds: the same figures with
 * the keys spread over every master (their count per master is
 * reported), healthy phase only (no node is killed; the hot key, one
 * slot, would load one master).  Their records say "topology":
 * "cluster", the others' Redis records "single".  --skip-cluster leaves
 * them out.
 *
 * Prints a table on stdout and writes JSON lines to FILE (default
 * bench/results/redis_tier.jsonl in the source tree): first one machine
 * record, then one record per case and phase (fields in README.md).
 * Exit 0 when every case ran (or was skipped for want of redis-server,
 * or redis-cli for the cluster), 1 when one failed (the cluster failing
 * to start too), 2 on a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "baseline_redis.h"
#include "cleanup.h"
#include "keys.h"
#include "redis/cluster.h"
#include "tier_cluster.h"
#include "tkshm.h"
#include "tkshm_redis.h"
#include "tsc.h"

#ifndef TKSHM_TIER_DEFAULT_OUT
#define TKSHM_TIER_DEFAULT_OUT "bench/results/redis_tier.jsonl"
#endif

#define RT_MAX_PROCS 16
/* Latency samples kept per worker and timed phase (a reservoir). */
#define RT_SAMPLES 65536u

enum rt_phase {
	PH_WARM,
	PH_HEALTHY,
	PH_DOWN,
	PH_STOP,
};
#define RT_COUNTED 3 /* warm-up, healthy, down */

static const char *const rt_phase_names[] = { "warmup", "healthy",
					      "redis_down" };

/* What one worker did in one phase. */
struct rt_counts {
	uint64_t decisions, allowed;
	uint64_t cached;   /* TKSHM_DECISION_CACHED: the negative cache */
	uint64_t fallback; /* TKSHM_DECISION_FALLBACK: the failure policy */
	uint64_t no_lease; /* TKSHM_DECISION_NO_LEASE: out of credit */
	uint64_t kept;	   /* latency samples in the reservoir */
	double cpu_seconds;
};

/* One worker's block (its own lines: workers never share one).  Written
 * by the worker just before it exits; read after waitpid. */
struct rt_proc {
	_Alignas(64) struct rt_counts ph[RT_COUNTED];
	int failed;
	char error[256];
};

struct rt_ctl {
	_Atomic int ready; /* workers (and the agent) set up */
	_Atomic int go;
	_Atomic int phase; /* enum rt_phase */
	/* A phase boundary: odd while the parent holds the workers (each
	 * stops at its next timed check and counts itself in `held`), so
	 * the table's counters and the workers' change phase at one
	 * instant. */
	_Atomic unsigned hold;
	_Atomic int held;
	_Atomic int stop_agent;
	int agent_failed;
	char agent_error[320]; /* "agent: " and the engine's sentence */
	struct rt_proc procs[RT_MAX_PROCS];
};

/* One case: a table, its mode and key set, a number of workers. */
struct rt_case {
	const char *mode; /* local, strict, lease */
	const char *algo; /* gcra, fixedWindow */
	const char *spec; /* the policy string */
	bool hot;	  /* one key instead of the key set */
	/* One check in `every` is timed (the counter reads and the phase
	 * flag are read at those checks only).  1 for checks that wait on
	 * Redis, where the timing costs nothing next to the round trip. */
	unsigned every;
	double warm_s, quick_warm_s;
};

/*
 * The cases.  The key-set policies have a limit no worker reaches (60,000
 * per key per second with a burst of 1e6, against thousands per key per
 * second), so checks
 * are admitted and, in lease mode, workers rarely find a key out of
 * credit; the hot key's 100 per second is exceeded at once, so strict
 * denies nearly every check from the negative cache.  The local rows are
 * the references: gcra and fixedWindow for the lease tables of each
 * (a fixedWindow state is wider than GCRA's one word), the hot key for
 * strict's cached denial.
 */
static const struct rt_case rt_cases[] = {
	{ "local", "gcra", "gcra:limit=60000,periodMs=1000,burst=1000000",
	  false, 16, 0.1, 0.05 },
	{ "local", "fixedWindow", "fixedWindow:limit=1000000,windowMs=1000",
	  false, 16, 0.1, 0.05 },
	{ "local", "gcra", "gcra:limit=100,periodMs=1000", true, 16, 0.1,
	  0.05 },
	{ "strict", "gcra",
	  "gcra:limit=60000,periodMs=1000,burst=1000000;mode=strict,"
	  "prefix=tier-s",
	  false, 1, 0.3, 0.15 },
	{ "strict", "gcra",
	  "gcra:limit=100,periodMs=1000;mode=strict,prefix=tier-h", true, 16,
	  0.3, 0.15 },
	{ "lease", "gcra",
	  "gcra:limit=60000,periodMs=1000,burst=1000000;mode=lease,"
	  "failure=safe-share,"
	  "prefix=tier-lg",
	  false, 16, 0.6, 0.25 },
	{ "lease", "fixedWindow",
	  "fixedWindow:limit=1000000,windowMs=1000;mode=lease,"
	  "failure=safe-share,prefix=tier-lw",
	  false, 16, 0.6, 0.25 },
};
#define RT_NCASES (sizeof rt_cases / sizeof rt_cases[0])

struct rt_run {
	bool quick;
	bool modes[3];	/* local, strict, lease: run its cases */
	double seconds; /* per timed phase */
	int procs[8], nprocs;
	size_t keys;
	double ns_per_tick;
	char base[64]; /* table files are base-N.tk */
	FILE *json;
	bool skip_cluster;
	/* The cluster the cases run on now, NULL: one redis-server each. */
	const struct tier_cluster *cluster;
};

/* What the parent reads at a phase boundary. */
struct rt_snap {
	double t; /* mono_seconds() */
	tkshm_stats st;
	double redis_cpu, agent_cpu; /* CPU seconds so far, < 0: unknown */
};

/* One timed phase, as reported. */
struct rt_result {
	enum rt_phase phase;
	double seconds;
	struct rt_counts sum; /* over the workers */
	uint64_t samples;
	double p50_ns, p99_ns, p999_ns, max_ns;
	double cpu_cores, redis_cores, agent_cores; /* < 0: not measured */
	uint64_t table_decisions; /* the table's allowed + denied */
	uint64_t redis_calls, round_trips, leases, leases_total;
	bool redis_up;
	/* On the cluster: how many of the case's keys each master serves. */
	uint64_t keys_per_master[TC_MASTERS];
};

/* ------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------- */

static double
cpu_seconds_self(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds (user + system) of another process from /proc, -1 when it
 * is gone.  Clock-tick resolution (10 ms): enough over a timed phase. */
static double
cpu_seconds_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	size_t n;
	FILE *f;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			 "%llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static _Noreturn void
rt_fail(struct rt_proc *me, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(me->error, sizeof me->error, fmt, ap);
	va_end(ap);
	me->failed = 1;
	_exit(1);
}

static int
rt_open(const char *path, tkshm_table **t, char *err, size_t err_len)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;

	o.flags = 0; /* attach: the parent made it */
	o.errbuf = err;
	o.errbuf_len = err_len;
	return tkshm_open(path, &o, t);
}

/* ------------------------------------------------------------------------
 * The processes
 * ---------------------------------------------------------------------- */

/* At a timed check: when the parent holds the workers for a boundary not
 * yet acknowledged, counts this worker as stopped and waits for the
 * release (a new `hold`). */
static void
rt_worker_hold(struct rt_ctl *ctl, unsigned *acked)
{
	/* acquire: the parent's new phase, stored before its release. */
	unsigned h = atomic_load_explicit(&ctl->hold, memory_order_acquire);

	if (!(h & 1) || h == *acked)
		return;
	*acked = h;
	/* release: this worker's checks (the table's counters) before the
	 * parent's snapshot, which acquires the count. */
	atomic_fetch_add_explicit(&ctl->held, 1, memory_order_release);
	while (atomic_load_explicit(&ctl->hold, memory_order_acquire) == h)
		sched_yield();
}

static _Noreturn void
rt_worker(const struct rt_case *c, const struct rt_run *run, const char *path,
	  int port, struct rt_ctl *ctl, uint64_t *samples, int idx,
	  pid_t parent)
{
	struct rt_proc *me = &ctl->procs[idx];
	struct rt_counts n[RT_COUNTED];
	uint64_t seed = UINT64_C(0x7F4A7C15) * (uint64_t)(idx + 1);
	uint64_t rng = seed | 1, seen[RT_COUNTED] = { 0 }, i = 0;
	tkshm_redis *r = NULL;
	tkshm_table *t;
	struct keywalk walk;
	int cur = PH_WARM, rc;
	unsigned acked = 0;
	double cpu0;
	char err[256] = "";

	cleanup_child(parent);
	memset(n, 0, sizeof n);
	if (keys_walk_init(&walk, c->hot ? 1 : run->keys, seed) != 0)
		rt_fail(me, "no key set of %zu keys", run->keys);
	rc = rt_open(path, &t, err, sizeof err);
	if (rc != TKSHM_OK)
		rt_fail(me, "open %s: %s %s", path, tkshm_error_name(rc), err);
	if ((port > 0 || run->cluster) && strcmp(c->mode, "strict") == 0) {
		tkshm_redis_options ro = TKSHM_REDIS_OPTIONS_INIT;

		/* Each worker its own handle: one connection per process
		 * (per node on the cluster), as an application's workers
		 * would have. */
		if (run->cluster)
			ro.cluster = run->cluster->seeds;
		else
			ro.port = port;
		rc = tkshm_redis_open(&ro, &r);
		if (rc == TKSHM_OK)
			rc = tkshm_redis_attach(t, r);
		if (rc != TKSHM_OK)
			rt_fail(me, "redis handle: %s", tkshm_error_name(rc));
	}
	/* relaxed: a count; results travel through waitpid. */
	atomic_fetch_add_explicit(&ctl->ready, 1, memory_order_relaxed);
	/* relaxed: flags only.  Yielding: the agent and the parent share
	 * the two cores with us. */
	while (!atomic_load_explicit(&ctl->go, memory_order_relaxed)) {
		if (atomic_load_explicit(&ctl->phase, memory_order_relaxed) ==
		    PH_STOP)
			_exit(0);
		sched_yield();
	}
	cpu0 = cpu_seconds_self();
	for (;; i++) {
		char key[KEYS_MAX_LEN];
		size_t len = keys_walk_next(&walk, key);
		bool timed = i % c->every == 0;
		uint64_t t0 = 0;
		tkshm_decision d;

		if (timed) {
			int ph;

			rt_worker_hold(ctl, &acked);
			/* relaxed: ordered after the hold's acquire. */
			ph = atomic_load_explicit(&ctl->phase,
						  memory_order_relaxed);

			if (ph != cur) {
				double now = cpu_seconds_self();

				n[cur].cpu_seconds = now - cpu0;
				cpu0 = now;
				if (ph == PH_STOP)
					break;
				cur = ph;
			}
			t0 = tsc_begin();
		}
		rc = tkshm_check(t, key, len, 1, &d);
		if (timed && cur != PH_WARM) {
			uint64_t t1 = tsc_end(), slot;
			uint64_t *res =
				samples + (size_t)(cur - 1) * RT_SAMPLES;

			/* Reservoir: every timed check of the phase has the
			 * same chance to be kept, however long it runs. */
			slot = seen[cur] < RT_SAMPLES ?
				       seen[cur] :
				       keys_splitmix64(&rng) % (seen[cur] + 1);
			seen[cur]++;
			if (slot < RT_SAMPLES) {
				res[slot] = t1 - t0;
				if (n[cur].kept < RT_SAMPLES)
					n[cur].kept++;
			}
		}
		if (rc != TKSHM_OK)
			rt_fail(me, "check of %.*s in phase %s: %s", (int)len,
				key, rt_phase_names[cur], tkshm_error_name(rc));
		n[cur].decisions++;
		n[cur].allowed += d.allowed;
		n[cur].cached += (d.flags & TKSHM_DECISION_CACHED) != 0;
		n[cur].fallback += (d.flags & TKSHM_DECISION_FALLBACK) != 0;
		n[cur].no_lease += (d.flags & TKSHM_DECISION_NO_LEASE) != 0;
	}
	memcpy(me->ph, n, sizeof n);
	tkshm_close(t);
	tkshm_redis_close(r);
	_exit(0);
}

/* The sync agent: tkshm-syncd's loop without the daemon around it.
 * Rounds start every poll period on an absolute clock, as the daemon's
 * (tools/tkshm-syncd/run.c), so a slow round does not stretch the next
 * period. */
static _Noreturn void
rt_agent(const char *path, int port, const struct tier_cluster *cl,
	 struct rt_ctl *ctl, pid_t parent)
{
	struct tk_agent_conf conf;
	struct tk_agent *a;
	struct timespec next;
	char err[256] = "";

	cleanup_child(parent);
	tk_agent_conf_init(&conf);
	if (cl)
		snprintf(conf.redis.cluster, sizeof conf.redis.cluster, "%s",
			 cl->seeds);
	else
		conf.redis.port = port;
	conf.poll_ms = 1;
	snprintf(conf.host_id, sizeof conf.host_id, "tkshm-bench-%d",
		 (int)parent);
	if (tk_agent_new(&conf, &a, err, sizeof err) != TKSHM_OK ||
	    tk_agent_add_table(a, path, err, sizeof err) != TKSHM_OK) {
		snprintf(ctl->agent_error, sizeof ctl->agent_error, "agent: %s",
			 err);
		ctl->agent_failed = 1;
		_exit(1);
	}
	/* relaxed: a count (see rt_worker). */
	atomic_fetch_add_explicit(&ctl->ready, 1, memory_order_relaxed);
	clock_gettime(CLOCK_MONOTONIC, &next);
	/* relaxed: a flag. */
	while (!atomic_load_explicit(&ctl->stop_agent, memory_order_relaxed)) {
		struct timespec now;

		tk_agent_round(a, tkshm_now_ms(), NULL);
		next.tv_nsec += (long)(conf.poll_ms * 1e6);
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now; /* late: no catching up in a burst */
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
	tk_agent_free(a);
	_exit(0);
}

/* ------------------------------------------------------------------------
 * One case
 * ---------------------------------------------------------------------- */

/* Kills and reaps a process still registered (error paths). */
static void
rt_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		cleanup_forget_pid(*pid);
		*pid = 0;
	}
}

/* Reaps `pid` within `timeout` s; a non-zero exit is an error. */
static int
rt_reap(pid_t *pid, double timeout, const char *who, const char *why, char *err,
	size_t err_len)
{
	double deadline = mono_seconds() + timeout;
	int st;

	while (waitpid(*pid, &st, WNOHANG) == 0) {
		if (mono_seconds() > deadline) {
			rt_kill(pid);
			snprintf(err, err_len,
				 "%s did not finish within %.0f s", who,
				 timeout);
			return -1;
		}
		sleep_seconds(0.001);
	}
	cleanup_forget_pid(*pid);
	*pid = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	snprintf(err, err_len, "%s: %s", who,
		 why && why[0] ? why : "ended abnormally");
	return -1;
}

/* A worker or the agent that has ended while the parent waits on them:
 * -1 with err naming it (and its pid forgotten), else 0. */
static int
rt_child_ended(const struct rt_ctl *ctl, pid_t *pids, int procs, pid_t *agent,
	       const char *during, char *err, size_t err_len)
{
	for (int i = 0; i < procs; i++)
		if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
			cleanup_forget_pid(pids[i]);
			pids[i] = 0;
			snprintf(err, err_len, "worker %d: %s", i,
				 ctl->procs[i].failed ? ctl->procs[i].error :
							during);
			return -1;
		}
	if (*agent > 0 && waitpid(*agent, NULL, WNOHANG) == *agent) {
		cleanup_forget_pid(*agent);
		*agent = 0;
		if (ctl->agent_failed)
			snprintf(err, err_len, "%s", ctl->agent_error);
		else
			snprintf(err, err_len, "agent %s", during);
		return -1;
	}
	return 0;
}

/* Stops every worker at its next timed check, for a snapshot that falls
 * between the same checks as the workers' phase change.  Returns 0, or
 * -1 with err when a child ended or the workers did not stop within
 * 30 s. */
static int
rt_hold_workers(struct rt_ctl *ctl, pid_t *pids, int procs, pid_t *agent,
		char *err, size_t err_len)
{
	double deadline = mono_seconds() + 30;

	/* relaxed: nobody reads `held` until the odd `hold` below. */
	atomic_store_explicit(&ctl->held, 0, memory_order_relaxed);
	/* release: orders the reset of `held` before it. */
	atomic_fetch_add_explicit(&ctl->hold, 1, memory_order_release);
	/* acquire: every worker's checks before its count. */
	while (atomic_load_explicit(&ctl->held, memory_order_acquire) < procs) {
		if (rt_child_ended(ctl, pids, procs, agent,
				   "ended at a phase boundary", err,
				   err_len) != 0)
			return -1;
		if (mono_seconds() > deadline) {
			snprintf(err, err_len,
				 "the workers did not reach a phase boundary "
				 "within 30 s");
			return -1;
		}
		sched_yield();
	}
	return 0;
}

/* Releases the held workers into phase `ph`. */
static void
rt_release_workers(struct rt_ctl *ctl, enum rt_phase ph)
{
	/* relaxed: published by the release below. */
	atomic_store_explicit(&ctl->phase, (int)ph, memory_order_relaxed);
	/* release: the phase before the workers go on. */
	atomic_fetch_add_explicit(&ctl->hold, 1, memory_order_release);
}

/* Redis's CPU seconds: redis-server's, or the sum over the cluster's
 * nodes (replicas included: they apply every write); -1 when one is
 * gone. */
static double
rt_redis_cpu(pid_t redis, const struct tier_cluster *cl)
{
	double sum = 0;

	if (!cl)
		return cpu_seconds_of(redis);
	for (int i = 0; i < TC_NODES; i++) {
		double x = cpu_seconds_of(cl->pid[i]);

		if (x < 0)
			return -1;
		sum += x;
	}
	return sum;
}

static void
rt_snap(struct rt_snap *s, tkshm_table *t, pid_t redis,
	const struct tier_cluster *cl, pid_t agent)
{
	s->t = mono_seconds();
	tkshm_stats_get(t, &s->st);
	s->redis_cpu = rt_redis_cpu(redis, cl);
	s->agent_cpu = cpu_seconds_of(agent);
}

/* How many of the case's keys (their Redis names, "prefix:user:N") each
 * master of the cluster serves. */
static void
rt_keys_per_master(const struct rt_run *run, const struct rt_case *c,
		   tkshm_table *t, uint64_t out[TC_MASTERS])
{
	struct keywalk w;
	size_t n = c->hot ? 1 : run->keys;

	memset(out, 0, TC_MASTERS * sizeof *out);
	if (keys_walk_init(&w, n, 0) != 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char key[KEYS_MAX_LEN],
			name[TKSHM_PREFIX_MAX + 2 + KEYS_MAX_LEN];
		size_t len = keys_walk_next(&w, key);
		int rlen = tkshm_redis_key(t, key, len, name, sizeof name);

		if (rlen > 0)
			out[run->cluster->slot_master[tk_cluster_slot(
				name, (size_t)rlen)]]++;
	}
}

/* Waits up to `secs` for the agent's first lease (it leases nothing until
 * its start's handover has settled: src/agent/agent.c). */
static void
rt_wait_leasing(tkshm_table *t, double secs)
{
	double deadline = mono_seconds() + secs;
	tkshm_stats st;

	do {
		sleep_seconds(0.01);
		if (tkshm_stats_get(t, &st) != TKSHM_OK)
			return;
	} while (st.global.leases == 0 && mono_seconds() < deadline);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank quantiles over every worker's samples of one phase. */
static void
rt_quantiles(const struct rt_ctl *ctl, const uint64_t *samples, int procs,
	     double ns_per_tick, struct rt_result *r)
{
	uint64_t total = 0, *all;
	size_t at = 0;
	int k = (int)r->phase - 1;

	for (int i = 0; i < procs; i++)
		total += ctl->procs[i].ph[r->phase].kept;
	r->samples = total;
	if (total == 0)
		return;
	all = malloc(total * sizeof *all);
	if (!all)
		return;
	for (int i = 0; i < procs; i++) {
		uint64_t kept = ctl->procs[i].ph[r->phase].kept;

		memcpy(all + at,
		       samples + ((size_t)i * 2 + (size_t)k) * RT_SAMPLES,
		       kept * sizeof *all);
		at += kept;
	}
	qsort(all, total, sizeof *all, cmp_u64);
#define RT_Q(q) ((double)all[(size_t)((q) * (double)(total - 1))] * ns_per_tick)
	r->p50_ns = RT_Q(0.5);
	r->p99_ns = RT_Q(0.99);
	r->p999_ns = RT_Q(0.999);
	r->max_ns = (double)all[total - 1] * ns_per_tick;
#undef RT_Q
	free(all);
}

/* The phase between snapshots a and b. */
static void
rt_result_of(const struct rt_ctl *ctl, const uint64_t *samples, int procs,
	     double ns_per_tick, enum rt_phase ph, const struct rt_snap *a,
	     const struct rt_snap *b, struct rt_result *r)
{
	double cpu = 0;

	memset(r, 0, sizeof *r);
	r->phase = ph;
	r->seconds = b->t - a->t;
	for (int i = 0; i < procs; i++) {
		const struct rt_counts *c = &ctl->procs[i].ph[ph];

		r->sum.decisions += c->decisions;
		r->sum.allowed += c->allowed;
		r->sum.cached += c->cached;
		r->sum.fallback += c->fallback;
		r->sum.no_lease += c->no_lease;
		cpu += c->cpu_seconds;
	}
	r->cpu_cores = r->seconds > 0 ? cpu / r->seconds : 0;
	/* A process killed or not running in the phase: not measured. */
	r->redis_cores = a->redis_cpu >= 0 && b->redis_cpu >= 0 ?
				 (b->redis_cpu - a->redis_cpu) / r->seconds :
				 -1;
	r->agent_cores = a->agent_cpu >= 0 && b->agent_cpu >= 0 ?
				 (b->agent_cpu - a->agent_cpu) / r->seconds :
				 -1;
	r->table_decisions =
		(b->st.allowed + b->st.denied) - (a->st.allowed + a->st.denied);
	r->redis_calls = b->st.global.redis_calls - a->st.global.redis_calls;
	r->round_trips =
		b->st.global.lease_round_trips - a->st.global.lease_round_trips;
	r->leases = b->st.global.leases - a->st.global.leases;
	r->leases_total = b->st.global.leases;
	r->redis_up = b->st.global.redis_up;
	rt_quantiles(ctl, samples, procs, ns_per_tick, r);
}

/* ------------------------------------------------------------------------
 * Output
 * ---------------------------------------------------------------------- */

static void
fmt_rate(char *buf, size_t len, double x)
{
	if (x >= 1e6)
		snprintf(buf, len, "%.3g M/s", x / 1e6);
	else if (x >= 1e3)
		snprintf(buf, len, "%.3g k/s", x / 1e3);
	else
		snprintf(buf, len, "%.3g /s", x);
}

static void
fmt_ns(char *buf, size_t len, double ns)
{
	if (ns >= 1e6)
		snprintf(buf, len, "%.3g ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.3g us", ns / 1e3);
	else
		snprintf(buf, len, "%.3g ns", ns);
}

/* Per 1,000 of the table's decisions; -1 when there were none. */
static double
per_1000(uint64_t n, uint64_t decisions)
{
	return decisions ? 1000.0 * (double)n / (double)decisions : -1;
}

static void
json_str(FILE *f, const char *name, const char *s)
{
	fprintf(f, ",\"%s\":\"", name);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch >= 0x20)
			fputc(ch, f);
	}
	fputc('"', f);
}

/* JSON has no NaN: a figure that is not finite is written null. */
static void
json_num(FILE *f, const char *name, double v, int decimals)
{
	if (isfinite(v))
		fprintf(f, ",\"%s\":%.*f", name, decimals, v);
	else
		fprintf(f, ",\"%s\":null", name);
}

static void
report_header(void)
{
	printf("%-6s %-7s %-11s %5s %5s %-10s %11s %7s %9s %9s %9s %9s %8s "
	       "%7s %5s %5s %5s\n",
	       "mode", "redis", "algo", "keys", "procs", "phase", "per worker",
	       "allowed", "p50", "p99", "p99.9", "calls/1k", "rt/1k", "fallbk",
	       "cpu", "redis", "agent");
}

static void
report_row(const struct rt_run *run, const struct rt_case *c, int procs,
	   const struct rt_result *r, const char *skipped)
{
	size_t keys = c->hot ? 1 : run->keys;
	bool lease = strcmp(c->mode, "lease") == 0;
	bool redis = strcmp(c->mode, "local") != 0;
	const char *topo = !redis ? "-" : run->cluster ? "cluster" : "single";
	FILE *f = run->json;

	fprintf(f, "{\"suite\":\"redis_tier\",\"record\":\"case\"");
	json_str(f, "mode", c->mode);
	json_str(f, "algo", c->algo);
	json_str(f, "policy", c->spec);
	fprintf(f, ",\"keys\":%zu,\"procs\":%d", keys, procs);
	/* Where Redis ran: one redis-server ("single", also the meaning of
	 * a Redis record without the field, written before the cluster
	 * cases) or the cluster. */
	if (redis)
		json_str(f, "topology", topo);
	if (redis && run->cluster)
		fprintf(f, ",\"cluster_masters\":%d,\"cluster_replicas\":%d",
			TC_MASTERS, TC_NODES - TC_MASTERS);
	if (skipped) {
		json_str(f, "skipped", skipped);
		fprintf(f, "}\n");
		printf("%-6s %-7s %-11s %5zu %5d skipped: %s\n", c->mode, topo,
		       c->algo, keys, procs, skipped);
		return;
	}
	{
		double per_sec = (double)r->sum.decisions / r->seconds;
		/* Per 1,000 of the table's decisions (its allowed + denied)
		 * for lease tables.  A strict table's counters also count
		 * the negative cache's insert of a key it stores a reply
		 * for (src/shm/set.c inserts by a check), up to twice per
		 * decision: its rates are per 1,000 of the workers' own
		 * count. */
		uint64_t base = lease ? r->table_decisions : r->sum.decisions;
		double calls = per_1000(r->redis_calls, base);
		double rt = per_1000(r->round_trips, base);
		double fb = r->sum.decisions ?
				    (double)r->sum.fallback /
					    (double)r->sum.decisions :
				    0;
		char rate[32], p50[32], p99[32], p999[32], cs[32], rs[32];

		json_str(f, "phase", rt_phase_names[r->phase]);
		json_num(f, "seconds", r->seconds, 3);
		fprintf(f, ",\"decisions\":%" PRIu64, r->sum.decisions);
		json_num(f, "decisions_per_sec", per_sec, 1);
		json_num(f, "per_worker_per_sec", per_sec / procs, 1);
		fprintf(f,
			",\"allowed\":%" PRIu64 ",\"cached\":%" PRIu64
			",\"fallback\":%" PRIu64 ",\"no_lease\":%" PRIu64
			",\"samples\":%" PRIu64,
			r->sum.allowed, r->sum.cached, r->sum.fallback,
			r->sum.no_lease, r->samples);
		json_num(f, "p50_ns", r->p50_ns, 1);
		json_num(f, "p99_ns", r->p99_ns, 1);
		json_num(f, "p999_ns", r->p999_ns, 1);
		json_num(f, "max_ns", r->max_ns, 1);
		json_num(f, "cpu_cores", r->cpu_cores, 2);
		fprintf(f, ",\"table_decisions\":%" PRIu64, r->table_decisions);
		if (redis) {
			fprintf(f, ",\"redis_calls\":%" PRIu64, r->redis_calls);
			json_num(f, "redis_calls_per_1000", calls, 4);
			if (r->redis_cores >= 0)
				json_num(f, "redis_cpu_cores", r->redis_cores,
					 2);
			fprintf(f, ",\"redis_up\":%s",
				r->redis_up ? "true" : "false");
		}
		if (redis && run->cluster) {
			fprintf(f, ",\"keys_per_master\":[");
			for (int k = 0; k < TC_MASTERS; k++)
				fprintf(f, "%s%" PRIu64, k ? "," : "",
					r->keys_per_master[k]);
			fprintf(f, "]");
		}
		if (lease) {
			fprintf(f,
				",\"lease_round_trips\":%" PRIu64
				",\"leases\":%" PRIu64
				",\"leases_total\":%" PRIu64,
				r->round_trips, r->leases, r->leases_total);
			json_num(f, "round_trips_per_1000", rt, 4);
			if (r->agent_cores >= 0)
				json_num(f, "agent_cpu_cores", r->agent_cores,
					 2);
		}
		fprintf(f, "}\n");

		fmt_rate(rate, sizeof rate, per_sec / procs);
		fmt_ns(p50, sizeof p50, r->p50_ns);
		fmt_ns(p99, sizeof p99, r->p99_ns);
		fmt_ns(p999, sizeof p999, r->p999_ns);
		snprintf(cs, sizeof cs, redis ? "%.4g" : "-", calls);
		snprintf(rs, sizeof rs, lease ? "%.4g" : "-", rt);
		printf("%-6s %-7s %-11s %5zu %5d %-10s %11s %6.2f%% %9s %9s "
		       "%9s %9s %8s %6.1f%% %5.2f ",
		       c->mode, topo, c->algo, keys, procs,
		       rt_phase_names[r->phase], rate,
		       r->sum.decisions ? 100.0 * (double)r->sum.allowed /
						  (double)r->sum.decisions :
					  0.0,
		       p50, p99, p999, cs, rs, 100 * fb, r->cpu_cores);
		if (r->redis_cores >= 0)
			printf("%5.2f ", r->redis_cores);
		else
			printf("%5s ", "-");
		if (r->agent_cores >= 0)
			printf("%5.2f\n", r->agent_cores);
		else
			printf("%5s\n", "-");
		fflush(stdout);
	}
}

/* Creates the case's table file. */
static int
rt_table(const struct rt_run *run, const struct rt_case *c, const char *path,
	 tkshm_table **t, char *err, size_t err_len)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p;
	char why[256] = "";
	int rc = tkshm_policy_parse(c->spec, &p, why, sizeof why);
	size_t keys = c->hot ? 1 : run->keys;
	uint64_t slots = 64;
	bool refuses;

	if (rc != TKSHM_OK) {
		snprintf(err, err_len, "policy %s: %s", c->spec, why);
		return -1;
	}
	/* Half full at most: every key finds a slot near its bucket.  A
	 * quarter for the tables that refuse a key whose window is full
	 * instead of evicting (lease tables, every kind but GCRA and the
	 * leaky bucket): at half full, about one 1000-key run in a hundred
	 * meets such a window (TKSHM_EFULL, seen in the ctest
	 * bench_redis_tier). */
	refuses = (p.kind != TKSHM_KIND_GCRA &&
		   p.kind != TKSHM_KIND_LEAKY_BUCKET) ||
		  p.global.mode == TKSHM_MODE_LEASE;
	while (slots < (refuses ? 4 : 2) * keys)
		slots *= 2;
	o.policy = &p;
	o.slots = slots;
	o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	o.errbuf = why;
	o.errbuf_len = sizeof why;
	unlink(path); /* left by an interrupted run that had our pid */
	rc = tkshm_open(path, &o, t);
	if (rc != TKSHM_OK) {
		snprintf(err, err_len, "create %s: %s %s", path,
			 tkshm_error_name(rc), why);
		return -1;
	}
	return 0;
}

/* Runs one case with `procs` workers and reports its phases.  Returns 0
 * (also when skipped) or -1 with err.  On the cluster (run->cluster) the
 * case uses it as it is (the caller flushed it) and has no redis_down
 * phase. */
static int
rt_case_run(const struct rt_run *run, const struct rt_case *c, int procs,
	    int index, char *err, size_t err_len)
{
	const struct tier_cluster *cl = run->cluster;
	bool redis = strcmp(c->mode, "local") != 0;
	bool lease = strcmp(c->mode, "lease") == 0;
	bool down = redis && !cl;
	size_t bytes = sizeof(struct rt_ctl) +
		       (size_t)procs * 2 * RT_SAMPLES * sizeof(uint64_t);
	pid_t pids[RT_MAX_PROCS] = { 0 }, agent = 0, parent = getpid();
	struct redis_server srv;
	struct rt_snap s0, s1, s2;
	struct rt_result res;
	uint64_t keys_per_master[TC_MASTERS] = { 0 };
	tkshm_table *t = NULL;
	struct rt_ctl *ctl;
	uint64_t *samples;
	char path[128], why[256] = "";
	double deadline;
	int rc = -1, want_ready = procs + (lease ? 1 : 0);

	memset(&srv, 0, sizeof srv);
	if (redis && !cl) {
		int started = redis_server_start(&srv, why, sizeof why);

		if (started == 1) {
			report_row(run, c, procs, NULL, why);
			return 0;
		}
		if (started != 0) {
			snprintf(err, err_len, "redis-server: %s", why);
			return -1;
		}
	}
	snprintf(path, sizeof path, "%s-%d.tk", run->base, index);
	ctl = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED) {
		snprintf(err, err_len, "mmap: %s", strerror(errno));
		redis_server_stop(&srv);
		return -1;
	}
	samples = (uint64_t *)(ctl + 1);
	if (rt_table(run, c, path, &t, err, err_len) != 0)
		goto out;
	if (cl) {
		rt_keys_per_master(run, c, t, keys_per_master);
		for (int k = 0; k < TC_MASTERS; k++)
			if (keys_per_master[k] == 0)
				printf("# warning: the master on port %d serves "
				       "none of the %zu keys\n",
				       cl->master_port[k], run->keys);
	}
	fflush(NULL); /* nothing buffered is duplicated into the children */
	if (lease) {
		agent = fork();
		if (agent < 0) {
			agent = 0;
			snprintf(err, err_len, "fork: %s", strerror(errno));
			goto out;
		}
		if (agent == 0)
			rt_agent(path, srv.port, cl, ctl, parent);
		cleanup_add_pid(agent);
	}
	for (int i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			snprintf(err, err_len, "fork: %s", strerror(errno));
			goto out;
		}
		if (pid == 0)
			rt_worker(c, run, path, srv.port, ctl,
				  samples + (size_t)i * 2 * RT_SAMPLES, i,
				  parent);
		pids[i] = pid;
		cleanup_add_pid(pid);
	}
	deadline = mono_seconds() + 30;
	/* relaxed: a count. */
	while (atomic_load_explicit(&ctl->ready, memory_order_relaxed) <
	       want_ready) {
		if (rt_child_ended(ctl, pids, procs, &agent,
				   "ended during set-up", err, err_len) != 0)
			goto out;
		if (mono_seconds() > deadline) {
			snprintf(err, err_len, "not ready within 30 s");
			goto out;
		}
		sleep_seconds(0.001);
	}
	/* Everybody has the file mapped: unlinking it now leaves nothing
	 * behind in /dev/shm whatever ends the run. */
	unlink(path);

	/* relaxed: flags; no data travels with them. */
	atomic_store_explicit(&ctl->go, 1, memory_order_relaxed);
	if (lease)
		rt_wait_leasing(t, 10);
	sleep_seconds(run->quick ? c->quick_warm_s : c->warm_s);
	if (rt_hold_workers(ctl, pids, procs, &agent, err, err_len) != 0)
		goto out;
	rt_snap(&s0, t, srv.pid, cl, agent);
	rt_release_workers(ctl, PH_HEALTHY);
	sleep_seconds(run->seconds);
	if (rt_hold_workers(ctl, pids, procs, &agent, err, err_len) != 0)
		goto out;
	rt_snap(&s1, t, srv.pid, cl, agent);
	if (down) {
		rt_release_workers(ctl, PH_DOWN);
		/* SIGKILL: no goodbye on the sockets, as a crash or a lost
		 * host would leave them. */
		rt_kill(&srv.pid);
		sleep_seconds(run->seconds);
		if (rt_hold_workers(ctl, pids, procs, &agent, err, err_len) !=
		    0)
			goto out;
		rt_snap(&s2, t, srv.pid, cl, agent);
	}
	rt_release_workers(ctl, PH_STOP);
	for (int i = 0; i < procs; i++) {
		char who[32];

		snprintf(who, sizeof who, "worker %d", i);
		if (rt_reap(&pids[i], 30, who, ctl->procs[i].error, err,
			    err_len) != 0)
			goto out;
	}
	if (agent > 0) {
		atomic_store_explicit(&ctl->stop_agent, 1,
				      memory_order_relaxed);
		if (rt_reap(&agent, 10, "agent", ctl->agent_error, err,
			    err_len) != 0)
			goto out;
	}
	rt_result_of(ctl, samples, procs, run->ns_per_tick, PH_HEALTHY, &s0,
		     &s1, &res);
	memcpy(res.keys_per_master, keys_per_master, sizeof keys_per_master);
	report_row(run, c, procs, &res, NULL);
	if (down) {
		rt_result_of(ctl, samples, procs, run->ns_per_tick, PH_DOWN,
			     &s1, &s2, &res);
		report_row(run, c, procs, &res, NULL);
	}
	rc = 0;
out:
	/* relaxed: flags; everybody left is killed next anyway. */
	atomic_store_explicit(&ctl->phase, PH_STOP, memory_order_relaxed);
	atomic_store_explicit(&ctl->stop_agent, 1, memory_order_relaxed);
	for (int i = 0; i < procs; i++)
		rt_kill(&pids[i]);
	rt_kill(&agent);
	if (t)
		tkshm_close(t);
	unlink(path);
	redis_server_stop(&srv);
	munmap(ctl, bytes);
	return rc;
}

/* ------------------------------------------------------------------------
 * The machine record and the command line
 * ---------------------------------------------------------------------- */

/* The first line of a file with its trailing newline removed, "" when
 * unreadable. */
static void
first_line(FILE *f, char *buf, size_t len)
{
	buf[0] = '\0';
	if (f && fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
}

/* Where the figures came from: they mean little without it. */
static void
report_machine(const struct rt_run *run)
{
	char model[256] = "", os[256] = "", redis[256] = "", line[512];
	char date[32];
	struct utsname u;
	double load = -1;
	time_t now = time(NULL);
	FILE *f;

	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
			snprintf(model, sizeof model, "%s",
				 strchr(line, ':') + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	if (f)
		fclose(f);
	f = fopen("/etc/os-release", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "PRETTY_NAME=", 12) == 0) {
			char *v = line + 12;

			v += *v == '"';
			v[strcspn(v, "\"\n")] = '\0';
			snprintf(os, sizeof os, "%s", v);
			break;
		}
	if (f)
		fclose(f);
	f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1;
		fclose(f);
	}
	f = popen("redis-server --version 2>/dev/null", "r");
	first_line(f, redis, sizeof redis);
	if (f)
		pclose(f);
	if (uname(&u) != 0)
		snprintf(u.release, sizeof u.release, "?");
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

	fprintf(run->json, "{\"suite\":\"redis_tier\",\"record\":\"machine\"");
	fprintf(run->json, ",\"cpus\":%ld", sysconf(_SC_NPROCESSORS_ONLN));
	json_str(run->json, "cpu_model", model);
	json_str(run->json, "os", os);
	json_str(run->json, "kernel", u.release);
	json_str(run->json, "redis_server", redis);
	json_str(run->json, "date", date);
	json_num(run->json, "load_avg_1m", load, 2);
	json_num(run->json, "seconds", run->seconds, 3);
	fprintf(run->json, ",\"keys\":%zu,\"quick\":%s}\n", run->keys,
		run->quick ? "true" : "false");
	printf("# tkshm_bench_redis_tier: %ld CPUs (%s), %s, %s\n",
	       sysconf(_SC_NPROCESSORS_ONLN), model, os,
	       redis[0] ? redis : "no redis-server");
	printf("# %.2f s per timed phase, %zu keys, counter %.3f GHz, load "
	       "average %.2f\n",
	       run->seconds, run->keys, 1 / run->ns_per_tick, load);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: tkshm_bench_redis_tier [--quick] [--seconds S] "
		"[--procs LIST] [--keys N] [--mode LIST] [--skip-cluster] "
		"[--out FILE]\n"
		"  --quick         a smoke run: 0.1 s phases, 2 workers\n"
		"  --seconds S     seconds per timed phase (default 1)\n"
		"  --procs LIST    worker counts (default 1,2)\n"
		"  --keys N        the key set (default 1000; the hot-key cases "
		"use one)\n"
		"  --mode LIST     local, strict, lease, separated by commas "
		"(default all)\n"
		"  --skip-cluster  no Redis Cluster cases (by default the "
		"strict and\n"
		"                  lease key sets run again on a cluster of 3 "
		"masters\n"
		"                  and 3 replicas the benchmark starts: about "
		"15 s more)\n"
		"  --out FILE      JSON lines (default %s)\n",
		TKSHM_TIER_DEFAULT_OUT);
}

static int
parse_procs(const char *s, struct rt_run *run)
{
	char *end;

	run->nprocs = 0;
	for (;;) {
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 1 || v > RT_MAX_PROCS ||
		    run->nprocs ==
			    (int)(sizeof run->procs / sizeof run->procs[0]))
			return -1;
		run->procs[run->nprocs++] = (int)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static const char *const rt_modes[] = { "local", "strict", "lease" };

static int
mode_index(const char *mode)
{
	for (int m = 0; m < 3; m++)
		if (strcmp(mode, rt_modes[m]) == 0)
			return m;
	return 0;
}

/* Marks the modes named in a comma list. */
static int
parse_modes(const char *s, struct rt_run *run)
{
	while (*s) {
		size_t n = strcspn(s, ",");
		int found = -1;

		for (int m = 0; m < 3; m++)
			if (strlen(rt_modes[m]) == n &&
			    strncmp(s, rt_modes[m], n) == 0)
				found = m;
		if (found < 0)
			return -1;
		run->modes[found] = true;
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* Where the table files go: tmpfs when there is one, as a deployment's
 * tables would be.  Files, no directory: each is unlinked once mapped
 * (rt_case_run), so an interrupted run leaves nothing to remove; the pid
 * keeps concurrent runs apart. */
static void
table_base(struct rt_run *run)
{
	struct stat st;
	const char *dir = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
					  access("/dev/shm", W_OK) == 0 ?
				  "/dev/shm" :
				  "/tmp";

	snprintf(run->base, sizeof run->base, "%s/tkshm-tier-%d", dir,
		 (int)getpid());
}

/* The cluster's cases: the key sets of strict and lease (the modes asked
 * for), every worker count, on one cluster started here and stopped by
 * pid whatever happens (a signal: cleanup.c kills its nodes).  Without
 * redis-server or redis-cli they are reported as skipped.  0, or -1 once
 * one failed (printed). */
static int
rt_cluster_cases(struct rt_run *run, int *index)
{
	struct tier_cluster cl;
	char err[512], why[320] = "";
	bool any = false;
	double t0 = mono_seconds();
	int started, rc = 0;

	for (size_t c = 0; c < RT_NCASES; c++)
		any |= strcmp(rt_cases[c].mode, "local") != 0 &&
		       !rt_cases[c].hot &&
		       run->modes[mode_index(rt_cases[c].mode)];
	if (!any)
		return 0;
	started = tier_cluster_start(&cl, why, sizeof why);
	if (started < 0) {
		fprintf(stderr, "tkshm_bench_redis_tier: Redis Cluster: %s\n",
			why);
		return -1;
	}
	run->cluster = &cl;
	if (started == 0)
		printf("# Redis Cluster: masters %s, 3 replicas, ready in %.1f "
		       "s\n",
		       cl.seeds, mono_seconds() - t0);
	for (size_t c = 0; c < RT_NCASES && rc == 0; c++) {
		const struct rt_case *k = &rt_cases[c];

		if (strcmp(k->mode, "local") == 0 || k->hot ||
		    !run->modes[mode_index(k->mode)])
			continue;
		for (int p = 0; p < run->nprocs && rc == 0; p++) {
			if (started == 1) {
				report_row(run, k, run->procs[p], NULL, why);
				continue;
			}
			if (tier_cluster_flush(&cl, err, sizeof err) != 0 ||
			    rt_case_run(run, k, run->procs[p], (*index)++, err,
					sizeof err) != 0) {
				fprintf(stderr,
					"tkshm_bench_redis_tier: cluster %s "
					"%s, %d workers: %s\n",
					k->mode, k->algo, run->procs[p], err);
				rc = -1;
			}
		}
	}
	run->cluster = NULL;
	tier_cluster_stop(&cl);
	if (started == 0)
		printf("# Redis Cluster cases in %.1f s (its start and stop "
		       "included)\n",
		       mono_seconds() - t0);
	return rc;
}

int
main(int argc, char **argv)
{
	struct rt_run run;
	const char *out = TKSHM_TIER_DEFAULT_OUT;
	bool procs_given = false, modes_given = false;
	double t0;
	char err[512];
	int rc = 0, index = 0;

	memset(&run, 0, sizeof run);
	run.keys = 1000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;

		if (strcmp(a, "--quick") == 0) {
			run.quick = true;
		} else if (strcmp(a, "--seconds") == 0 && i + 1 < argc) {
			run.seconds = strtod(argv[++i], &end);
			if (*end || !(run.seconds > 0) || run.seconds > 600) {
				fprintf(stderr, "tkshm_bench_redis_tier: bad "
						"--seconds\n");
				return 2;
			}
		} else if (strcmp(a, "--procs") == 0 && i + 1 < argc) {
			if (parse_procs(argv[++i], &run) != 0) {
				fprintf(stderr,
					"tkshm_bench_redis_tier: --procs "
					"wants numbers 1..%d separated by "
					"commas\n",
					RT_MAX_PROCS);
				return 2;
			}
			procs_given = true;
		} else if (strcmp(a, "--mode") == 0 && i + 1 < argc) {
			if (parse_modes(argv[++i], &run) != 0) {
				fprintf(stderr,
					"tkshm_bench_redis_tier: --mode wants "
					"local, strict or lease, separated by "
					"commas\n");
				return 2;
			}
			modes_given = true;
		} else if (strcmp(a, "--keys") == 0 && i + 1 < argc) {
			unsigned long long k = strtoull(argv[++i], &end, 10);

			if (*end || k < 2 || k > 1000000) {
				fprintf(stderr, "tkshm_bench_redis_tier: "
						"--keys wants 2..1000000\n");
				return 2;
			}
			run.keys = (size_t)k;
		} else if (strcmp(a, "--skip-cluster") == 0) {
			run.skip_cluster = true;
		} else if (strcmp(a, "--out") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr,
				"tkshm_bench_redis_tier: bad argument '%s'\n",
				a);
			usage(stderr);
			return 2;
		}
	}
	if (!(run.seconds > 0))
		run.seconds = run.quick ? 0.1 : 1.0;
	if (!modes_given)
		for (int m = 0; m < 3; m++)
			run.modes[m] = true;
	if (!procs_given) {
		/* The machine's 2 cores; quick: the 2-worker path only
		 * (forking several workers is what a smoke must cover). */
		run.nprocs = run.quick ? 1 : 2;
		run.procs[0] = run.quick ? 2 : 1;
		run.procs[1] = 2;
	}
	cleanup_install();
	table_base(&run);
	run.json = fopen(out, "w");
	if (!run.json) {
		fprintf(stderr, "tkshm_bench_redis_tier: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	run.ns_per_tick = tsc_calibrate(run.quick ? 30 : 300);
	report_machine(&run);
	report_header();
	t0 = mono_seconds();
	for (size_t c = 0; c < RT_NCASES && rc == 0; c++)
		for (int p = 0; p < run.nprocs && rc == 0; p++)
			if (run.modes[mode_index(rt_cases[c].mode)] &&
			    rt_case_run(&run, &rt_cases[c], run.procs[p],
					index++, err, sizeof err) != 0) {
				fprintf(stderr,
					"tkshm_bench_redis_tier: %s %s%s, %d "
					"workers: %s\n",
					rt_cases[c].mode, rt_cases[c].algo,
					rt_cases[c].hot ? " hot key" : "",
					run.procs[p], err);
				rc = 1;
			}
	if (rc == 0 && !run.skip_cluster && rt_cluster_cases(&run, &index) != 0)
		rc = 1;
	cleanup_all();
	if (fclose(run.json) != 0) {
		fprintf(stderr, "tkshm_bench_redis_tier: %s: %s\n", out,
			strerror(errno));
		rc = 1;
	}
	printf("# %s in %.1f s; JSON lines in %s\n",
	       rc == 0 ? "done" : "FAILED", mono_seconds() - t0, out);
	return rc;
}
