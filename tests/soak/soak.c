/*
 * soak.c - the soak's supervisor (issue 9 item 6; see soak.h).
 *
 *   tkshm_soak [--seconds S] [--procs N] [--slots N] [--keys-per-slot K]
 *              [--jump-ms MIN,MAX] [--kill-ms MIN,MAX] [--progress S]
 *              [--seed X] [--dir D] [--anon-slack-kib K]
 *
 * Creates a GCRA table of --slots slots (default 1024) and a token-bucket
 * table of half as many in a private directory under --dir (/dev/shm),
 * forks --procs workers (16) that check random keys (soak_worker.c) and,
 * for --seconds (600):
 *   - every --kill-ms (a random 100..500 ms) SIGKILLs a random worker,
 *     reaps it and forks a replacement; the first two positions (one
 *     below 4 workers) are never killed, so their memory shows a leak of
 *     a long-lived worker;
 *   - every --jump-ms (a random 2000..6000 ms) moves the shared clock:
 *     half the jumps +1 h, half back by a random 0.5..5 s;
 *   - every second runs tkshm_verify on both tables (any problem fails),
 *     samples the memory and descriptors of every process and the files'
 *     sizes, the table's occupancy, and checks the hot keys' admissions of
 *     the finished epochs against GCRA (soak_bound.c, provisionally).
 * Then stops the workers, verifies again, checks every epoch and prints a
 * summary.  Exit status 0 when nothing was violated: no verify problem, no
 * admission above its bound, no worker error, constant file sizes, the
 * supervisor's descriptors constant, and the private memory (RssAnon) of
 * the supervisor and of the never-killed workers grown by at most
 * --anon-slack-kib (1024) between the first and the last minute (quarter,
 * for runs shorter than 4 minutes).  1 otherwise, 2 on a usage or setup
 * error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"
#include "soak_run.h"

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
uniform(struct soak_run *r, double lo, double hi)
{
	return lo + (hi - lo) * (double)(mp_rand(&r->rng) >> 11) / 0x1p53;
}

/* --- options ---------------------------------------------------------- */

static void
usage(void)
{
	fprintf(stderr,
		"usage: tkshm_soak [--seconds S] [--procs N] [--slots N] "
		"[--keys-per-slot K] [--jump-ms MIN,MAX] [--kill-ms MIN,MAX] "
		"[--progress S] [--seed X] [--dir D] [--anon-slack-kib K]\n");
	exit(2);
}

static void
pair(const char *s, double *lo, double *hi)
{
	if (sscanf(s, "%lf,%lf", lo, hi) != 2 || !(*lo > 0) || *hi < *lo)
		usage();
}

static void
parse(int argc, char **argv, struct soak_opts *o)
{
	*o = (struct soak_opts){ .seconds = 600,
				 .procs = 16,
				 .slots = 1024,
				 .keys_per_slot = 4,
				 .jump_min = 2000,
				 .jump_max = 6000,
				 .kill_min = 100,
				 .kill_max = 500,
				 .progress = 60,
				 .seed = mp_seed(),
				 .anon_slack = 1024,
				 .dir = "/dev/shm" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		i++;
		if (strcmp(a, "--seconds") == 0)
			o->seconds = atof(v);
		else if (strcmp(a, "--procs") == 0)
			o->procs = atoi(v);
		else if (strcmp(a, "--slots") == 0)
			o->slots = strtoull(v, NULL, 0);
		else if (strcmp(a, "--keys-per-slot") == 0)
			o->keys_per_slot = strtoull(v, NULL, 0);
		else if (strcmp(a, "--jump-ms") == 0)
			pair(v, &o->jump_min, &o->jump_max);
		else if (strcmp(a, "--kill-ms") == 0)
			pair(v, &o->kill_min, &o->kill_max);
		else if (strcmp(a, "--progress") == 0)
			o->progress = atof(v);
		else if (strcmp(a, "--seed") == 0)
			o->seed = strtoull(v, NULL, 0);
		else if (strcmp(a, "--dir") == 0)
			o->dir = v;
		else if (strcmp(a, "--anon-slack-kib") == 0)
			o->anon_slack = strtoull(v, NULL, 0);
		else
			usage();
	}
	if (!(o->seconds > 0) || o->procs < 2 || o->procs > SOAK_MAX_PROCS ||
	    o->slots < 8 || o->keys_per_slot < 1)
		usage();
}

/* --- tables ----------------------------------------------------------- */

static tkshm_table *
create(const char *path, const tkshm_policy *p, uint64_t slots,
       tkshm_on_full on_full)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc;

	o.policy = p;
	o.slots = slots;
	o.on_full = on_full;
	o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK) {
		fprintf(stderr, "tkshm_soak: create %s: %s (%s)\n", path,
			tkshm_error_name(rc), err);
		exit(2);
	}
	return t;
}

static void
setup(struct soak_run *r)
{
	tkshm_policy gcra, tb;
	struct stat st;

	r->sh = mmap(NULL, sizeof *r->sh, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->sh == MAP_FAILED) {
		perror("tkshm_soak: mmap");
		exit(2);
	}
	if (snprintf(r->dir, sizeof r->dir, "%s/tkshm-soak-XXXXXX", r->o.dir) >=
		    (int)sizeof r->dir ||
	    !mkdtemp(r->dir)) {
		fprintf(stderr, "tkshm_soak: mkdtemp %s: %s\n", r->dir,
			strerror(errno));
		exit(2);
	}
	snprintf(r->sh->path, sizeof r->sh->path, "%s/gcra.tkshm", r->dir);
	snprintf(r->sh->wide_path, sizeof r->sh->wide_path, "%s/wide.tkshm",
		 r->dir);
	if (tkshm_policy_gcra(&gcra, SOAK_LIMIT, SOAK_PERIOD_MS, SOAK_BURST) !=
		    TKSHM_OK ||
	    tkshm_policy_parse(SOAK_WIDE_POLICY, &tb, NULL, 0) != TKSHM_OK) {
		fprintf(stderr, "tkshm_soak: bad policy\n");
		exit(2);
	}
	r->t = create(r->sh->path, &gcra, r->o.slots, TKSHM_ON_FULL_EVICT);
	r->wide = create(r->sh->wide_path, &tb, r->o.slots / 2,
			 TKSHM_ON_FULL_REFUSE);
	if (stat(r->sh->path, &st) != 0)
		exit(2);
	r->size = st.st_size;
	if (stat(r->sh->wide_path, &st) != 0)
		exit(2);
	r->wide_size = st.st_size;
	r->sh->seed = r->o.seed;
	r->sh->cold_keys = r->o.slots * r->o.keys_per_slot;
	r->rng = r->o.seed ^ UINT64_C(0x5EEDC0FFEE);
	r->keep = r->o.procs >= 4 ? 2 : 1;
}

static void
teardown(struct soak_run *r)
{
	tkshm_close(r->wide);
	tkshm_close(r->t);
	unlink(r->sh->wide_path);
	unlink(r->sh->path);
	rmdir(r->dir);
}

/* --- workers ---------------------------------------------------------- */

static void
spawn(struct soak_run *r, int pos)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("tkshm_soak: fork");
		exit(2);
	}
	if (pid == 0)
		soak_worker(r->sh, pos);
	r->sh->cell[pos].pid = pid;
	r->sh->cell[pos].spawns++;
}

static int
position_of(struct soak_run *r, pid_t pid)
{
	for (int i = 0; i < r->o.procs; i++)
		if (r->sh->cell[i].pid == pid)
			return i;
	return -1;
}

/* A worker that ended without being killed met an error: report, replace. */
static void
unexpected_exit(struct soak_run *r, int pos, int status)
{
	r->unexpected_exits++;
	r->violations++;
	printf("VIOLATION: worker %d (pid %d) ended by itself: %s %d%s%s\n",
	       pos, (int)r->sh->cell[pos].pid,
	       WIFSIGNALED(status) ? "signal" : "status",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
	       r->sh->failed ? "; first error: " : "",
	       r->sh->failed ? r->sh->fail_msg : "");
	spawn(r, pos);
}

static void
reap_unexpected(struct soak_run *r)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		int pos = position_of(r, pid);

		if (pos >= 0)
			unexpected_exit(r, pos, status);
	}
}

static void
kill_one(struct soak_run *r)
{
	int pos = r->keep +
		  (int)mp_rand_below(&r->rng, (uint64_t)(r->o.procs - r->keep));
	pid_t pid = r->sh->cell[pos].pid;
	int status;

	if (kill(pid, SIGKILL) != 0) {
		perror("tkshm_soak: kill");
		exit(2);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("tkshm_soak: waitpid");
			exit(2);
		}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		unexpected_exit(r, pos, status);
		return;
	}
	r->kills++;
	spawn(r, pos);
}

/* --- the clock -------------------------------------------------------- */

static void
jump(struct soak_run *r)
{
	uint32_t e = r->sh->epoch;
	double off = r->sh->offset_ms[e];
	bool forward = mp_rand_below(&r->rng, 2) == 0;

	if (e + 1 >= SOAK_MAX_EPOCHS)
		return;
	/* Random, but never three the same way in a row: a short run (the
	 * smoke's four jumps) sees both. */
	if (r->run_len >= 2)
		forward = !r->run_forward;
	r->run_len =
		r->jumps > 0 && forward == r->run_forward ? r->run_len + 1 : 1;
	r->run_forward = forward;
	if (forward) {
		off += 3600000.0;
		r->forward++;
	} else {
		off -= uniform(r, 500, 5000);
		r->backward++;
	}
	r->sh->offset_ms[e + 1] = off;
	__atomic_store_n(&r->sh->epoch, e + 1, __ATOMIC_RELEASE);
	r->jumps++;
}

/* A provisional pass over the epochs before the current one's predecessor
 * (calls that straddle a jump may still record into the last two), so that
 * the progress lines show a violation early; the verdict is the final pass
 * over every epoch, once the workers have stopped. */
static void
check_finished_epochs(struct soak_run *r)
{
	uint32_t e = __atomic_load_n(&r->sh->epoch, __ATOMIC_ACQUIRE);

	if (e < 2 || e - 1 <= r->checked_epochs)
		return;
	r->bound_live +=
		soak_check_bounds(r->sh, r->checked_epochs, e - 1, NULL);
	r->checked_epochs = e - 1;
}

/* --- main ------------------------------------------------------------- */

static void
stop_workers(struct soak_run *r)
{
	double end = mono_s() + 10;

	__atomic_store_n(&r->sh->stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < r->o.procs; i++) {
		pid_t pid = r->sh->cell[i].pid;
		int status = 0;

		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (mono_s() > end) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				r->violations++;
				printf("VIOLATION: worker %d did not stop\n",
				       i);
				break;
			}
			mp_sleep_us(2000);
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
			r->violations++;
			printf("VIOLATION: worker %d exited with %d%s%s\n", i,
			       WEXITSTATUS(status),
			       r->sh->failed ? "; first error: " : "",
			       r->sh->failed ? r->sh->fail_msg : "");
		}
	}
}

int
main(int argc, char **argv)
{
	struct soak_run r = { 0 };
	struct soak_bound_stats b = { 0 };
	double next_kill, next_jump, next_second, next_progress, t = 0;
	uint64_t bound_violations;

	parse(argc, argv, &r.o);
	setup(&r);
	printf("soak: %.0f s, %d processes, %llu slots, seed %#llx, tables in "
	       "%s\n",
	       r.o.seconds, r.o.procs, (unsigned long long)r.o.slots,
	       (unsigned long long)r.o.seed, r.dir);
	for (int i = 0; i < r.o.procs; i++)
		spawn(&r, i);
	r.start = mono_s();
	next_kill = uniform(&r, r.o.kill_min, r.o.kill_max) / 1000;
	next_jump = uniform(&r, r.o.jump_min, r.o.jump_max) / 1000;
	next_second = 1;
	next_progress = r.o.progress > 0 ? r.o.progress : 1e300;

	while ((t = mono_s() - r.start) < r.o.seconds) {
		reap_unexpected(&r);
		if (t >= next_kill) {
			kill_one(&r);
			next_kill =
				t +
				uniform(&r, r.o.kill_min, r.o.kill_max) / 1000;
		}
		if (t >= next_jump) {
			jump(&r);
			next_jump =
				t +
				uniform(&r, r.o.jump_min, r.o.jump_max) / 1000;
		}
		if (t >= next_second) {
			soak_verify(&r);
			soak_sample_memory(&r, t);
			soak_sample_occupancy(&r);
			check_finished_epochs(&r);
			next_second += 1;
		}
		if (t >= next_progress) {
			soak_progress(&r, t);
			next_progress += r.o.progress;
		}
		mp_sleep_us(5000);
	}
	/* The last window's final sample, with every worker still alive. */
	soak_sample_memory(&r, r.o.seconds);
	stop_workers(&r);
	soak_verify(&r);

	bound_violations = soak_check_bounds(r.sh, 0, SOAK_MAX_EPOCHS, &b);
	r.violations += bound_violations;
	if (b.cells == 0) {
		r.violations++;
		printf("VIOLATION: no hot key was admitted at all\n");
	}
	soak_check_memory(&r);
	soak_summary(&r, t, &b, bound_violations);
	teardown(&r);
	return r.violations ? 1 : 0;
}
