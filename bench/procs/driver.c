/*
 * driver.c - forking, starting, stopping and reaping the workers of one
 * case, and turning their counts and samples into a result (driver.h).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "baseline_redis.h"
#include "cleanup.h"
#include "driver.h"
#include "keys.h"
#include "tsc.h"

/* The largest group a worker checks with one tkshm_check_many_at. */
#define DRV_MAX_BATCH 64u

/* Latency samples kept per worker (a reservoir over every 16th check). */
#define DRV_SAMPLES 65536u
/* One check in DRV_EVERY is timed; the count is published and the flags
 * are read at the same checks, so the other checks run bare. */
#define DRV_EVERY 16u

/* One worker's line (its own cache line: workers never share one). */
struct drv_proc {
	_Alignas(64) _Atomic uint64_t count; /* checks done so far */
	uint64_t allowed;		     /* written once, before exit */
	uint64_t kept;			     /* samples in its reservoir */
	double cpu_seconds;		     /* CPU time while timed */
	int failed;
	char error[256];
};

struct drv_ctl {
	_Atomic int ready;     /* workers set up */
	_Atomic int go;	       /* the start flag */
	_Atomic int stop;      /* the stop flag */
	_Atomic int stop_self; /* STOP_IN_CS: worker 0, stop yourself */
	struct drv_proc procs[DRV_MAX_PROCS];
};

/* Worker 0's control block for the in-lock hook (process-local). */
static struct drv_ctl *drv_victim_ctl;

static _Noreturn void
drv_fail(struct drv_proc *me, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(me->error, sizeof me->error, fmt, ap);
	va_end(ap);
	me->failed = 1;
	_exit(1);
}

/* Stops the calling process if the parent asked it to: called inside the
 * mutex's critical section (mtx_set_in_lock_hook) or between two tkshm
 * checks. */
static void
drv_stop_self(void)
{
	/* relaxed: a flag; the parent learns of the stop from waitpid. */
	if (atomic_load_explicit(&drv_victim_ctl->stop_self,
				 memory_order_relaxed)) {
		/* relaxed: only this process reads it again, later. */
		atomic_store_explicit(&drv_victim_ctl->stop_self, 0,
				      memory_order_relaxed);
		raise(SIGSTOP);
	}
}

static double
drv_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int
drv_check(const struct pcase *c, struct redis_client *rc, const char *key,
	  size_t len, tkshm_decision *d)
{
	switch (c->impl) {
	case IMPL_TKSHM:
		return tkshm_check(c->tk, key, len, 1, d);
	case IMPL_MUTEX:
		return mtx_check(c->mtx, key, len, 1, d);
	case IMPL_REDIS:
		return redis_client_check(rc, key, len, 1, tkshm_now_ms(), d);
	}
	return TKSHM_EINVAL;
}

static _Noreturn void
drv_worker(const struct pcase *c, struct drv_ctl *ctl, uint64_t *samples,
	   int idx, pid_t parent)
{
	struct drv_proc *me = &ctl->procs[idx];
	struct redis_client *rc = NULL;
	uint64_t seed = UINT64_C(0x7F4A7C15) * (uint64_t)(idx + 1);
	uint64_t rng = seed | 1, n = 0, allowed = 0, seen = 0, kept = 0;
	bool self_stop = false;
	struct keywalk walk;
	double cpu0;
	char err[256];

	cleanup_child(parent);
	/* Each worker its own order of the key set (seed != 0). */
	if (keys_walk_init(&walk, c->keys, seed) != 0)
		drv_fail(me, "no key set of %zu keys", c->keys);
	if (c->impl == IMPL_REDIS &&
	    redis_client_open(c->redis_port, c->policy, &rc, err, sizeof err) !=
		    TKSHM_OK)
		drv_fail(me, "redis: %s", err);
	if (c->stop == STOP_IN_CS && idx == 0) {
		drv_victim_ctl = ctl;
		if (c->impl == IMPL_MUTEX)
			mtx_set_in_lock_hook(drv_stop_self);
		else
			self_stop = true;
	}
	/* relaxed: a count only; the parent reads nothing else of ours
	 * before we exit (waitpid orders the rest). */
	atomic_fetch_add_explicit(&ctl->ready, 1, memory_order_relaxed);
	/* relaxed: flags only, no data travels with them.  Yielding, not
	 * spinning: 32 waiting workers on 2 cores must let the others set up
	 * and the parent run. */
	while (!atomic_load_explicit(&ctl->go, memory_order_relaxed)) {
		if (atomic_load_explicit(&ctl->stop, memory_order_relaxed))
			_exit(0);
		sched_yield();
	}

	cpu0 = drv_cpu_seconds();
	for (;;) {
		/* One check, or with c->batch a group of that many checked
		 * by one tkshm_check_many_at at one clock read. */
		char key[DRV_MAX_BATCH][KEYS_MAX_LEN];
		tkshm_request req[DRV_MAX_BATCH];
		tkshm_decision d[DRV_MAX_BATCH];
		unsigned g = c->batch ? c->batch : 1;
		bool timed = n % DRV_EVERY < g; /* crosses a multiple of 16 */
		uint64_t t0 = 0, t1 = 0;
		int rcode;

		for (unsigned j = 0; j < g; j++) {
			req[j].key = key[j];
			req[j].key_len = keys_walk_next(&walk, key[j]);
			req[j].cost = 1;
		}
		if (timed) {
			/* relaxed: a snapshot of a monotone count that the
			 * parent reads while we run (sigstop phases). */
			atomic_store_explicit(&me->count, n,
					      memory_order_relaxed);
			/* relaxed: a flag; nothing is published with it. */
			if (atomic_load_explicit(&ctl->stop,
						 memory_order_relaxed))
				break;
			if (self_stop)
				drv_stop_self();
			t0 = tsc_begin();
		}
		rcode = c->batch ?
				tkshm_check_many_at(c->tk, req, g,
						    tkshm_now_ms(), d, NULL) :
				drv_check(c, rc, key[0], req[0].key_len, d);
		if (timed) {
			uint64_t slot;

			t1 = tsc_end();
			/* Reservoir sampling: every timed check has the same
			 * chance to be kept, however long the run.  A batch
			 * counts as its mean check. */
			slot = seen < DRV_SAMPLES ?
				       seen :
				       keys_splitmix64(&rng) % (seen + 1);
			seen++;
			if (slot < DRV_SAMPLES) {
				samples[slot] = (t1 - t0) / g;
				if (kept < DRV_SAMPLES)
					kept++;
			}
		}
		if (rcode != TKSHM_OK)
			drv_fail(me, "check of %.*s: %s%s%s",
				 (int)req[0].key_len, key[0],
				 tkshm_error_name(rcode),
				 c->impl == IMPL_REDIS ? ": " : "",
				 c->impl == IMPL_REDIS ?
					 redis_client_error(rc) :
					 "");
		n += g;
		for (unsigned j = 0; j < g; j++)
			allowed += d[j].allowed;
	}
	me->cpu_seconds = drv_cpu_seconds() - cpu0;
	me->allowed = allowed;
	me->kept = kept;
	/* relaxed: the final count; waitpid orders it before the parent's
	 * read. */
	atomic_store_explicit(&me->count, n, memory_order_relaxed);
	redis_client_close(rc);
	_exit(0);
}

/* Sum of the counts of workers 1..N-1 (worker 0 is the one stopped). */
static uint64_t
drv_others(struct drv_ctl *ctl, int procs)
{
	uint64_t sum = 0;

	for (int i = 1; i < procs; i++)
		/* relaxed: a snapshot of independent counters. */
		sum += atomic_load_explicit(&ctl->procs[i].count,
					    memory_order_relaxed);
	return sum;
}

/* Kills and reaps every worker still alive (error paths). */
static void
drv_kill_all(const pid_t *pids, bool *reaped, int procs)
{
	for (int i = 0; i < procs; i++) {
		if (pids[i] <= 0 || reaped[i])
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		cleanup_forget_pid(pids[i]);
		reaped[i] = true;
	}
}

/* Reaps every worker within `timeout` seconds; a worker that failed, was
 * killed or is late makes the case fail. */
static int
drv_reap(struct drv_ctl *ctl, const pid_t *pids, bool *reaped, int procs,
	 double timeout, struct presult *r)
{
	double deadline = mono_seconds() + timeout;
	int left = 0, rc = 0;

	for (int i = 0; i < procs; i++)
		left += !reaped[i];
	while (left > 0) {
		for (int i = 0; i < procs; i++) {
			int st;

			if (reaped[i] || waitpid(pids[i], &st, WNOHANG) == 0)
				continue;
			reaped[i] = true;
			left--;
			cleanup_forget_pid(pids[i]);
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				continue;
			if (rc == 0) {
				if (ctl->procs[i].failed)
					snprintf(r->error, sizeof r->error,
						 "worker %d: %s", i,
						 ctl->procs[i].error);
				else
					snprintf(r->error, sizeof r->error,
						 "worker %d ended with status "
						 "0x%x",
						 i, st);
			}
			rc = -1;
		}
		if (left > 0 && mono_seconds() > deadline) {
			drv_kill_all(pids, reaped, procs);
			if (rc == 0)
				snprintf(r->error, sizeof r->error,
					 "workers did not finish within %.0f s",
					 timeout);
			return -1;
		}
		if (left > 0)
			sleep_seconds(0.001);
	}
	return rc;
}

/* Waits until worker 0 is stopped (it stops itself, or was sent SIGSTOP). */
static int
drv_wait_stopped(pid_t pid, struct presult *r)
{
	double deadline = mono_seconds() + 10;
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WUNTRACED | WNOHANG);

		if (w == pid && WIFSTOPPED(st))
			return 0;
		if (w == pid) {
			snprintf(r->error, sizeof r->error,
				 "worker 0 ended (status 0x%x) instead of "
				 "stopping",
				 st);
			return -1;
		}
		if (mono_seconds() > deadline) {
			snprintf(r->error, sizeof r->error,
				 "worker 0 did not stop within 10 s");
			return -1;
		}
		sleep_seconds(0.0002);
	}
}

static int
drv_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Quantiles over every worker's samples (nearest rank).  Workers weigh by
 * what they kept, not by how many checks they made; in one case they run
 * at similar rates. */
static void
drv_quantiles(struct drv_ctl *ctl, const uint64_t *samples, int procs,
	      double ns_per_tick, struct presult *r)
{
	uint64_t total = 0, *all;
	size_t at = 0;

	for (int i = 0; i < procs; i++)
		total += ctl->procs[i].kept;
	r->samples = total;
	if (total == 0)
		return;
	all = malloc(total * sizeof *all);
	if (!all)
		return;
	for (int i = 0; i < procs; i++) {
		memcpy(all + at, samples + (size_t)i * DRV_SAMPLES,
		       ctl->procs[i].kept * sizeof *all);
		at += ctl->procs[i].kept;
	}
	qsort(all, total, sizeof *all, drv_cmp_u64);
#define DRV_Q(q) \
	((double)all[(size_t)((q) * (double)(total - 1))] * ns_per_tick)
	r->p50_ns = DRV_Q(0.5);
	r->p99_ns = DRV_Q(0.99);
	r->p999_ns = DRV_Q(0.999);
	r->p9999_ns = DRV_Q(0.9999);
	r->max_ns = (double)all[total - 1] * ns_per_tick;
#undef DRV_Q
	free(all);
}

/* The timed part, in the parent: start, (stop and continue worker 0),
 * stop.  Returns 0 or -1 with r->error. */
static int
drv_timed(const struct pcase *c, struct drv_ctl *ctl, pid_t victim,
	  struct presult *r)
{
	double t0, ts, tc, te;
	uint64_t cs, cc, ce;

	t0 = mono_seconds();
	/* relaxed: a flag; the workers read no data written after fork. */
	atomic_store_explicit(&ctl->go, 1, memory_order_relaxed);
	sleep_seconds(c->seconds);
	if (c->stop != STOP_NONE) {
		if (c->stop == STOP_ANYWHERE)
			kill(victim, SIGSTOP);
		else
			/* relaxed: a flag; we learn of the stop by waitpid. */
			atomic_store_explicit(&ctl->stop_self, 1,
					      memory_order_relaxed);
		if (drv_wait_stopped(victim, r) != 0)
			return -1;
		ts = mono_seconds();
		cs = drv_others(ctl, c->procs);
		sleep_seconds(c->stop_seconds);
		tc = mono_seconds();
		cc = drv_others(ctl, c->procs);
		kill(victim, SIGCONT);
		sleep_seconds(c->seconds);
		te = mono_seconds();
		ce = drv_others(ctl, c->procs);
		r->per_sec_before = (double)cs / (ts - t0);
		r->per_sec_during = (double)(cc - cs) / (tc - ts);
		r->per_sec_after = (double)(ce - cc) / (te - tc);
		r->stopped_ms = (tc - ts) * 1e3;
	}
	r->seconds = mono_seconds() - t0;
	/* relaxed: a flag; results travel through waitpid. */
	atomic_store_explicit(&ctl->stop, 1, memory_order_relaxed);
	return 0;
}

int
driver_run(const struct pcase *c, struct presult *r)
{
	size_t bytes = sizeof(struct drv_ctl) +
		       (size_t)c->procs * DRV_SAMPLES * sizeof(uint64_t);
	pid_t pids[DRV_MAX_PROCS] = { 0 }, parent = getpid();
	bool reaped[DRV_MAX_PROCS] = { false };
	struct drv_ctl *ctl;
	uint64_t *samples;
	double deadline;
	int rc = -1, forked = 0;

	memset(r, 0, sizeof *r);
	if (c->procs < 1 || c->procs > DRV_MAX_PROCS || c->keys == 0) {
		snprintf(r->error, sizeof r->error,
			 "bad case: %d processes, %zu keys", c->procs, c->keys);
		return -1;
	}
	ctl = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED) {
		snprintf(r->error, sizeof r->error, "mmap: %s",
			 strerror(errno));
		return -1;
	}
	samples = (uint64_t *)(ctl + 1);
	fflush(NULL); /* no buffered output duplicated into the children */
	for (; forked < c->procs; forked++) {
		pid_t pid = fork();

		if (pid < 0) {
			snprintf(r->error, sizeof r->error, "fork: %s",
				 strerror(errno));
			goto out;
		}
		if (pid == 0)
			drv_worker(c, ctl,
				   samples + (size_t)forked * DRV_SAMPLES,
				   forked, parent);
		pids[forked] = pid;
		cleanup_add_pid(pid);
	}
	/* Set-up (10M keys to build and shuffle) may take a while; a worker
	 * that dies meanwhile fails the case at once. */
	deadline = mono_seconds() + 120;
	/* relaxed: a count; see drv_worker. */
	while (atomic_load_explicit(&ctl->ready, memory_order_relaxed) <
	       c->procs) {
		for (int i = 0; i < c->procs; i++) {
			int st;

			if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
				reaped[i] = true;
				cleanup_forget_pid(pids[i]);
				snprintf(r->error, sizeof r->error,
					 "worker %d: %s", i,
					 ctl->procs[i].failed ?
						 ctl->procs[i].error :
						 "ended during set-up");
				goto out;
			}
		}
		if (mono_seconds() > deadline) {
			snprintf(r->error, sizeof r->error,
				 "workers not ready within 120 s");
			goto out;
		}
		sleep_seconds(0.001);
	}
	if (drv_timed(c, ctl, pids[0], r) != 0)
		goto out;
	if (drv_reap(ctl, pids, reaped, c->procs, 60, r) != 0)
		goto out;
	for (int i = 0; i < c->procs; i++) {
		/* relaxed: the worker has been reaped; waitpid ordered it. */
		r->decisions += atomic_load_explicit(&ctl->procs[i].count,
						     memory_order_relaxed);
		r->allowed += ctl->procs[i].allowed;
		r->cpu_cores += ctl->procs[i].cpu_seconds;
	}
	r->cpu_cores = r->seconds > 0 ? r->cpu_cores / r->seconds : 0;
	r->per_sec = r->seconds > 0 ? (double)r->decisions / r->seconds : 0;
	drv_quantiles(ctl, samples, c->procs, c->ns_per_tick, r);
	rc = 0;
out:
	if (rc != 0) {
		/* relaxed: a flag; everybody is killed next anyway. */
		atomic_store_explicit(&ctl->stop, 1, memory_order_relaxed);
		drv_kill_all(pids, reaped, forked);
	}
	munmap(ctl, bytes);
	return rc;
}
