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
#include "soak.h"

struct opts {
	double seconds;
	int procs;
	uint64_t slots, keys_per_slot;
	double jump_min, jump_max, kill_min, kill_max, progress;
	uint64_t seed, anon_slack;
	const char *dir;
};

/* The maxima of one memory window (the first or the last minute). */
struct mem_window {
	struct soak_mem sup, kept, replaced; /* supervisor, never-killed
						and killed workers (max) */
	uint64_t samples;
};

struct run {
	struct opts o;
	struct soak_shared *sh;
	tkshm_table *t, *wide;
	char dir[200]; /* 200 + "/wide.tkshm" fits the paths' 256 */
	int keep;      /* positions never killed */
	double start;
	uint64_t kills, jumps, forward, backward, verifies, problems;
	bool run_forward; /* the direction of the last jumps ... */
	int run_len;	  /* ... and how many in a row */
	uint64_t violations, unexpected_exits;
	uint64_t bound_live, checked_epochs;
	struct mem_window first, last;
	off_t size, wide_size;
	uint64_t size_changes;
	double occ_min, occ_max, occ_sum;
	uint64_t occ_samples;
	uint64_t rng;
};

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
uniform(struct run *r, double lo, double hi)
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
parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .seconds = 600,
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
setup(struct run *r)
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
teardown(struct run *r)
{
	tkshm_close(r->wide);
	tkshm_close(r->t);
	unlink(r->sh->wide_path);
	unlink(r->sh->path);
	rmdir(r->dir);
}

/* --- workers ---------------------------------------------------------- */

static void
spawn(struct run *r, int pos)
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
position_of(struct run *r, pid_t pid)
{
	for (int i = 0; i < r->o.procs; i++)
		if (r->sh->cell[i].pid == pid)
			return i;
	return -1;
}

/* A worker that ended without being killed met an error: report, replace. */
static void
unexpected_exit(struct run *r, int pos, int status)
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
reap_unexpected(struct run *r)
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
kill_one(struct run *r)
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
jump(struct run *r)
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

/* --- once a second ---------------------------------------------------- */

static void
print_problem(void *ctx, const char *problem)
{
	printf("VIOLATION: verify %s: %s\n", (const char *)ctx, problem);
}

static void
verify(struct run *r)
{
	tkshm_table *ts[2] = { r->t, r->wide };
	const char *names[2] = { "gcra", "tokenBucket" };

	for (int i = 0; i < 2; i++) {
		uint64_t problems = 0;
		int rc = tkshm_verify(ts[i], print_problem, (void *)names[i],
				      &problems);

		r->verifies++;
		if (rc != TKSHM_OK || problems != 0) {
			r->problems += problems ? problems : 1;
			r->violations++;
			printf("VIOLATION: verify %s: %s, %llu problems\n",
			       names[i], tkshm_error_name(rc),
			       (unsigned long long)problems);
		}
	}
}

static void
mem_max(struct soak_mem *into, const struct soak_mem *m)
{
	if (m->rss_kib > into->rss_kib)
		into->rss_kib = m->rss_kib;
	if (m->anon_kib > into->anon_kib)
		into->anon_kib = m->anon_kib;
	if (m->fds > into->fds)
		into->fds = m->fds;
}

static void
sample_memory(struct run *r, double t)
{
	double win = r->o.seconds / 4 < 60 ? r->o.seconds / 4 : 60;
	struct mem_window *w[2] = { NULL, NULL };
	struct soak_mem m;
	struct stat st;

	/* From the first second on (the workers have attached and warmed
	 * up), and at least once however late a loaded machine runs us. */
	if (t >= 1 && (t < 1 + win || r->first.samples == 0))
		w[0] = &r->first;
	if (t >= r->o.seconds - win)
		w[1] = &r->last;
	for (int i = 0; i < 2; i++) {
		if (!w[i])
			continue;
		w[i]->samples++;
		if (soak_mem_of(getpid(), &m))
			mem_max(&w[i]->sup, &m);
		for (int p = 0; p < r->o.procs; p++)
			if (soak_mem_of(r->sh->cell[p].pid, &m))
				mem_max(p < r->keep ? &w[i]->kept :
						      &w[i]->replaced,
					&m);
	}
	if (stat(r->sh->path, &st) != 0 || st.st_size != r->size ||
	    stat(r->sh->wide_path, &st) != 0 || st.st_size != r->wide_size) {
		r->size_changes++;
		r->violations++;
		printf("VIOLATION: a table file changed size or vanished\n");
	}
}

static void
sample_occupancy(struct run *r)
{
	uint32_t e = __atomic_load_n(&r->sh->epoch, __ATOMIC_ACQUIRE);
	tkshm_usage u;
	double occ;

	if (tkshm_usage_get(r->t, tkshm_now_ms() + r->sh->offset_ms[e], &u) !=
	    TKSHM_OK)
		return;
	occ = (double)(u.live + u.placeholders) / (double)r->o.slots;
	if (r->occ_samples == 0 || occ < r->occ_min)
		r->occ_min = occ;
	if (occ > r->occ_max)
		r->occ_max = occ;
	r->occ_sum += occ;
	r->occ_samples++;
}

/* A provisional pass over the epochs before the current one's predecessor
 * (calls that straddle a jump may still record into the last two), so that
 * the progress lines show a violation early; the verdict is the final pass
 * over every epoch, once the workers have stopped. */
static void
check_finished_epochs(struct run *r)
{
	uint32_t e = __atomic_load_n(&r->sh->epoch, __ATOMIC_ACQUIRE);

	if (e < 2 || e - 1 <= r->checked_epochs)
		return;
	r->bound_live +=
		soak_check_bounds(r->sh, r->checked_epochs, e - 1, NULL);
	r->checked_epochs = e - 1;
}

/* --- figures ---------------------------------------------------------- */

struct totals {
	uint64_t checks, admitted, denied, busy, straddles, spawns;
	uint64_t wide_checks, wide_admitted, wide_full, wide_busy;
	double max_lat;
};

static struct totals
sum_cells(const struct run *r)
{
	struct totals s = { 0 };

	for (int i = 0; i < r->o.procs; i++) {
		const struct soak_cell *c = &r->sh->cell[i];
		double lat = mp_bits_double(
			__atomic_load_n(&c->max_lat_bits, __ATOMIC_RELAXED));

		s.checks += __atomic_load_n(&c->checks, __ATOMIC_RELAXED);
		s.admitted += __atomic_load_n(&c->admitted, __ATOMIC_RELAXED);
		s.denied += __atomic_load_n(&c->denied, __ATOMIC_RELAXED);
		s.busy += __atomic_load_n(&c->busy, __ATOMIC_RELAXED);
		s.straddles += __atomic_load_n(&c->straddles, __ATOMIC_RELAXED);
		s.wide_checks += c->wide_checks;
		s.wide_admitted += c->wide_admitted;
		s.wide_full += c->wide_full;
		s.wide_busy += c->wide_busy;
		s.spawns += c->spawns;
		if (lat > s.max_lat)
			s.max_lat = lat;
	}
	return s;
}

static void
progress(struct run *r, double t)
{
	struct totals s = sum_cells(r);
	struct soak_mem m;

	soak_mem_of(getpid(), &m);
	printf("soak: t=%.0f s decisions %llu (%.0f/s) kills %llu jumps %llu "
	       "verify %llu problems %llu violations %llu (+ %llu provisional "
	       "bound) supervisor rss "
	       "%llu KiB anon %llu KiB\n",
	       t, (unsigned long long)s.checks, (double)s.checks / t,
	       (unsigned long long)r->kills, (unsigned long long)r->jumps,
	       (unsigned long long)r->verifies, (unsigned long long)r->problems,
	       (unsigned long long)r->violations,
	       (unsigned long long)r->bound_live, (unsigned long long)m.rss_kib,
	       (unsigned long long)m.anon_kib);
	fflush(stdout);
}

static void
print_mem(const char *who, const struct soak_mem *a, const struct soak_mem *b)
{
	printf("  %-26s rss %6llu -> %6llu KiB, anon %6llu -> %6llu KiB, "
	       "fds %llu -> %llu\n",
	       who, (unsigned long long)a->rss_kib,
	       (unsigned long long)b->rss_kib, (unsigned long long)a->anon_kib,
	       (unsigned long long)b->anon_kib, (unsigned long long)a->fds,
	       (unsigned long long)b->fds);
}

/* AddressSanitizer keeps freed blocks in a quarantine (256 MiB) instead of
 * reusing them, so under it private memory grows with every fopen of
 * /proc by design: memory is then reported, not judged. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#ifndef SOAK_ASAN
#define SOAK_ASAN 0
#endif

/* Memory is flat: private memory of the long-lived processes grew by at
 * most the slack, the supervisor holds no more descriptors. */
static void
check_memory(struct run *r)
{
	const struct soak_mem *sa = &r->first.sup, *sb = &r->last.sup;
	const struct soak_mem *ka = &r->first.kept, *kb = &r->last.kept;

	if (SOAK_ASAN) {
		printf("soak: AddressSanitizer build: memory reported, not "
		       "judged (its quarantine grows by design)\n");
		return;
	}
	if (r->first.samples == 0 || r->last.samples == 0) {
		r->violations++;
		printf("VIOLATION: no memory sample in a window\n");
		return;
	}
	if (sb->anon_kib > sa->anon_kib + r->o.anon_slack ||
	    kb->anon_kib > ka->anon_kib + r->o.anon_slack ||
	    sb->fds > sa->fds) {
		r->violations++;
		printf("VIOLATION: memory or descriptors grew (slack %llu "
		       "KiB)\n",
		       (unsigned long long)r->o.anon_slack);
	}
}

static void
summary(struct run *r, double dur, const struct soak_bound_stats *b,
	uint64_t bound_violations)
{
	struct totals s = sum_cells(r);
	tkshm_stats st, wst;
	double win = r->o.seconds / 4 < 60 ? r->o.seconds / 4 : 60;

	tkshm_stats_get(r->t, &st);
	tkshm_stats_get(r->wide, &wst);
	printf("\n===== tkshm soak summary =====\n");
	printf("duration %.1f s, %d worker processes (%d never killed), "
	       "seed %#llx\n",
	       dur, r->o.procs, r->keep, (unsigned long long)r->o.seed);
	printf("tables: gcra limit=%g periodMs=%g burst=%g, %llu slots, "
	       "%llu cold keys + %d hot, evict (%lld bytes); %s, %llu slots, "
	       "refuse (%lld bytes)\n",
	       SOAK_LIMIT, SOAK_PERIOD_MS, SOAK_BURST,
	       (unsigned long long)r->o.slots,
	       (unsigned long long)r->sh->cold_keys, SOAK_HOT_KEYS,
	       (long long)r->size, SOAK_WIDE_POLICY,
	       (unsigned long long)r->o.slots / 2, (long long)r->wide_size);
	printf("decisions: %llu (%.0f/s): admitted %llu, denied %llu, "
	       "busy %llu\n",
	       (unsigned long long)s.checks, (double)s.checks / dur,
	       (unsigned long long)s.admitted, (unsigned long long)s.denied,
	       (unsigned long long)s.busy);
	printf("wide decisions: %llu: admitted %llu, full (refused) %llu, "
	       "busy %llu, claims stolen %llu\n",
	       (unsigned long long)s.wide_checks,
	       (unsigned long long)s.wide_admitted,
	       (unsigned long long)s.wide_full, (unsigned long long)s.wide_busy,
	       (unsigned long long)wst.claims_stolen);
	printf("table: occupancy (live/slots) min %.2f mean %.2f max %.2f; "
	       "inserts %llu, reclaims %llu, evictions %llu (in debt %llu), "
	       "debt restores %llu, duplicates killed %llu\n",
	       r->occ_min, r->occ_samples ? r->occ_sum / r->occ_samples : 0,
	       r->occ_max, (unsigned long long)st.inserts,
	       (unsigned long long)st.reclaims,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.evictions_in_debt,
	       (unsigned long long)st.debt_restores,
	       (unsigned long long)st.duplicates_killed);
	printf("kills: %llu SIGKILLs, %llu processes forked in all\n",
	       (unsigned long long)r->kills, (unsigned long long)s.spawns);
	printf("clock: %llu jumps (%llu forward +1 h, %llu backward 0.5-5 s), "
	       "%llu calls straddled a jump, longest call %.3f ms\n",
	       (unsigned long long)r->jumps, (unsigned long long)r->forward,
	       (unsigned long long)r->backward, (unsigned long long)s.straddles,
	       s.max_lat);
	printf("verify: %llu runs, %llu problems\n",
	       (unsigned long long)r->verifies,
	       (unsigned long long)r->problems);
	printf("bound: %llu hot admissions in %llu (key, epoch) pairs; %llu "
	       "pairs exactly at the exact GCRA bound, max fill %.3f; %llu "
	       "restarts (+ %llu across a jump), %llu admissions above exact "
	       "within their allowance; violations %llu\n",
	       (unsigned long long)b->admissions, (unsigned long long)b->cells,
	       (unsigned long long)b->at_exact, b->max_fill,
	       (unsigned long long)b->restarts, (unsigned long long)b->foreign,
	       (unsigned long long)b->over_exact,
	       (unsigned long long)bound_violations);
	printf("memory, max over the first -> last %.0f s (%llu -> %llu "
	       "samples):\n",
	       win, (unsigned long long)r->first.samples,
	       (unsigned long long)r->last.samples);
	print_mem("supervisor", &r->first.sup, &r->last.sup);
	print_mem("never-killed workers", &r->first.kept, &r->last.kept);
	print_mem("replaced workers", &r->first.replaced, &r->last.replaced);
	printf("table files: %lld and %lld bytes, %llu size changes\n",
	       (long long)r->size, (long long)r->wide_size,
	       (unsigned long long)r->size_changes);
	printf("result: %s (%llu violations)\n",
	       r->violations ? "FAIL" : "PASS",
	       (unsigned long long)r->violations);
}

/* --- main ------------------------------------------------------------- */

static void
stop_workers(struct run *r)
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
	struct run r = { 0 };
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
			verify(&r);
			sample_memory(&r, t);
			sample_occupancy(&r);
			check_finished_epochs(&r);
			next_second += 1;
		}
		if (t >= next_progress) {
			progress(&r, t);
			next_progress += r.o.progress;
		}
		mp_sleep_us(5000);
	}
	/* The last window's final sample, with every worker still alive. */
	sample_memory(&r, r.o.seconds);
	stop_workers(&r);
	verify(&r);

	bound_violations = soak_check_bounds(r.sh, 0, SOAK_MAX_EPOCHS, &b);
	r.violations += bound_violations;
	if (b.cells == 0) {
		r.violations++;
		printf("VIOLATION: no hot key was admitted at all\n");
	}
	check_memory(&r);
	summary(&r, t, &b, bound_violations);
	teardown(&r);
	return r.violations ? 1 : 0;
}
