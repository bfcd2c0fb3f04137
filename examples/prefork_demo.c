/*
 * prefork_demo.c - tkshm-demo: a prefork server in miniature.
 *
 * The parent creates three tables (an "api" table, a stricter "login"
 * table and a token-bucket "search" table), forks W workers, and the
 * workers serve simulated traffic from six clients, some of them abusive,
 * checking every request against the shared tables with the real clock, the way Apache prefork children or PHP-FPM
 * workers would.  Workers record what they admitted and denied in a
 * separate anonymous shared mapping (not in the tkshm tables); the parent
 * prints a live summary every second, then a final summary, and asserts
 * that the limiter held: no client was admitted more than the policy
 * allows over the run (burst + rate * duration).  The last line is
 * "demo: ok" only then.
 *
 *   tkshm-demo [--seconds N] [--workers W] [--dir DIR] [--keep]
 *              [--anonymous]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tkshm.h"

#define PROG "tkshm-demo"

/* The routes of the simulated server: each has its own table and policy,
 * keyed by client.  "search" is a token bucket, the others GCRA. */
enum {
	R_API,
	R_LOGIN,
	R_SEARCH,
	NROUTES
};

struct route {
	const char *name;
	const char *spec;
};

static const struct route routes[NROUTES] = {
	{ "api", "gcra:limit=20,periodMs=1000,burst=10" },
	{ "login", "gcra:limit=1,periodMs=1000,burst=3" },
	{ "search", "tokenBucket:capacity=20,refillPerSec=5" },
};

#define MAX_WORKERS 64
#define MAX_SECONDS 3600

/* --- the simulated clients ----------------------------------------------- */

/* A client sends each route's requests steadily at rps[route]; its api
 * requests instead come in bursts of burst_size every burst_every_s seconds
 * when burst_size is not 0. */
struct client {
	const char *role;
	double rps[NROUTES];
	unsigned burst_size;
	double burst_every_s;
};

/* clang-format off */
static const struct client clients[] = {
	/* role          api   login  search   burst every */
	{ "polite",   {  4,    0.5,   1    },  0,    0   },
	{ "steady",   {  15,   0,     4    },  0,    0   },
	{ "heavy",    {  30,   1,     8    },  0,    0   },
	{ "abusive",  {  100,  0,     0    },  0,    0   },
	{ "attacker", {  250,  25,    50   },  0,    0   }, /* floods all */
	{ "bursty",   {  0,    0,     0    },  40,   2.0 }, /* 40 every 2 s */
};
/* clang-format on */
#define NCLIENTS (sizeof clients / sizeof clients[0])

/* When the i-th request of a client on a route is due, in seconds from the
 * start. */
static double
due(const struct client *c, int route, uint64_t i)
{
	if (route == R_API && c->burst_size)
		return floor((double)i / c->burst_size) * c->burst_every_s;
	return c->rps[route] > 0 ? (double)i / c->rps[route] : INFINITY;
}

/* --- what the workers record (shared with the parent) ----------------- */

/* One worker's counts for one client.  Each row is written by one worker
 * only; the parent reads.  A cache line each, so workers share no line. */
struct tally {
	_Alignas(64) _Atomic uint64_t ok[NROUTES];
	_Atomic uint64_t denied[NROUTES];
	_Atomic uint64_t errors;
};

struct shared {
	_Atomic int stop;
	struct tally t[MAX_WORKERS][NCLIENTS];
};

struct sums {
	uint64_t ok[NROUTES], denied[NROUTES], errors;
};

static void
sum_client(const struct shared *sh, unsigned workers, size_t c, struct sums *s)
{
	memset(s, 0, sizeof *s);
	for (unsigned w = 0; w < workers; w++) {
		const struct tally *t = &sh->t[w][c];

		for (int r = 0; r < NROUTES; r++) {
			/* Relaxed: counts for display; the parent's final
			 * read comes after the workers were reaped. */
			s->ok[r] += atomic_load_explicit(&t->ok[r],
							 memory_order_relaxed);
			s->denied[r] += atomic_load_explicit(
				&t->denied[r], memory_order_relaxed);
		}
		s->errors +=
			atomic_load_explicit(&t->errors, memory_order_relaxed);
	}
}

/* --- time ---------------------------------------------------------------- */

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sleep_s(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL); /* a signal may cut it short: callers loop */
}

/* --- a worker ---------------------------------------------------------- */

static void
bump(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void
check_one(tkshm_table *t, const char *key, struct tally *tl, int route)
{
	tkshm_decision d;

	if (tkshm_check(t, key, strlen(key), 1, &d) != TKSHM_OK)
		bump(&tl->errors);
	else if (d.allowed)
		bump(&tl->ok[route]);
	else
		bump(&tl->denied[route]);
}

/* Worker w of `workers` serves every workers-th request of each client on
 * each route: together the workers send each client's traffic once. */
_Noreturn static void
worker(unsigned w, unsigned workers, struct shared *sh,
       tkshm_table *const *tables, double t0, pid_t parent)
{
	uint64_t next[NCLIENTS][NROUTES];
	char key[32];

	/* Die with the parent, whatever kills it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	signal(SIGINT, SIG_IGN); /* the parent stops us on Ctrl-C */

	for (size_t c = 0; c < NCLIENTS; c++)
		for (int r = 0; r < NROUTES; r++)
			next[c][r] = w;
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		double now = mono_s() - t0, wake = now + 0.005;

		for (size_t c = 0; c < NCLIENTS; c++) {
			const struct client *cl = &clients[c];

			snprintf(key, sizeof key, "client:%zu", c);
			for (int r = 0; r < NROUTES; r++) {
				while (due(cl, r, next[c][r]) <= now &&
				       !atomic_load_explicit(
					       &sh->stop,
					       memory_order_relaxed)) {
					check_one(tables[r], key, &sh->t[w][c],
						  r);
					next[c][r] += workers;
				}
				if (due(cl, r, next[c][r]) < wake)
					wake = due(cl, r, next[c][r]);
			}
		}
		sleep_s(wake - (mono_s() - t0));
	}
	_exit(0);
}

/* --- the parent ---------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct options {
	unsigned seconds, workers;
	const char *dir;
	bool keep, anonymous;
};

static void
usage(FILE *f)
{
	fputs("Usage: " PROG " [--seconds N] [--workers W] [--dir DIR] "
	      "[--keep] [--anonymous]\n"
	      "\n"
	      "A prefork server in miniature: W worker processes serve six\n"
	      "simulated clients (some abusive) on three routes, each with\n"
	      "its own shared tkshm table keyed client:N, using the real\n"
	      "clock:\n",
	      f);
	for (int r = 0; r < NROUTES; r++)
		fprintf(f, "  %-7s %s\n", routes[r].name, routes[r].spec);
	fputs("The parent prints what each client got every second, then a\n"
	      "final summary, and 'demo: ok' if no client was admitted more\n"
	      "than a policy allows over the run (burst + rate * duration).\n"
	      "\n"
	      "Options:\n"
	      "  --seconds N   how long to run (default 5)\n"
	      "  --workers W   worker processes (default 4, at most 64)\n"
	      "  --dir DIR     where the table files go (default " TKSHM_DEFAULT_DIR
	      ")\n"
	      "  --keep        keep the table files at exit (to inspect them)\n"
	      "  --anonymous   anonymous tables shared by fork() only, no files\n"
	      "  -h, --help    show this help\n"
	      "\n"
	      "Exit status: 0 the limiter held, 1 it did not or a check failed,\n"
	      "2 usage error, 3 cannot create the tables or the workers.\n",
	      f);
}

static int
parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi,
	   unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end || errno || v < lo || v > hi) {
		fprintf(stderr, PROG ": %s: '%s' is not an integer in %u..%u\n",
			opt, s, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int
parse_args(int argc, char **argv, struct options *o)
{
	o->seconds = 5;
	o->workers = 4;
	o->dir = TKSHM_DEFAULT_DIR;
	o->keep = o->anonymous = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--keep")) {
			o->keep = true;
		} else if (!strcmp(a, "--anonymous")) {
			o->anonymous = true;
		} else if (!strcmp(a, "--seconds") || !strcmp(a, "--workers") ||
			   !strcmp(a, "--dir")) {
			if (!v) {
				fprintf(stderr, PROG ": %s needs a value\n", a);
				return -1;
			}
			i++;
			if (!strcmp(a, "--dir"))
				o->dir = v;
			else if (!strcmp(a, "--seconds") &&
				 parse_uint(a, v, 1, MAX_SECONDS, &o->seconds))
				return -1;
			else if (!strcmp(a, "--workers") &&
				 parse_uint(a, v, 1, MAX_WORKERS, &o->workers))
				return -1;
		} else {
			fprintf(stderr, PROG ": unknown argument '%s'\n", a);
			return -1;
		}
	}
	if (o->keep && o->anonymous) {
		fprintf(stderr, PROG ": --keep and --anonymous exclude each "
				     "other\n");
		return -1;
	}
	return 0;
}

/* Creates a table (a new file, or anonymous when path is NULL). */
static tkshm_table *
make_table(const char *path, const char *spec, tkshm_policy *policy)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	char why[256] = "";
	int rc;

	rc = tkshm_policy_parse(spec, policy, why, sizeof why);
	if (rc != TKSHM_OK) {
		fprintf(stderr, PROG ": policy %s: %s\n", spec, why);
		return NULL;
	}
	o.policy = policy;
	o.slots = 1024;
	o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	o.errbuf = why;
	o.errbuf_len = sizeof why;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK) {
		fprintf(stderr, PROG ": cannot create %s: %s (%s)\n",
			path ? path : "an anonymous table", tkshm_strerror(rc),
			why);
		return NULL;
	}
	return t;
}

/* The most a policy admits at cost 1 over `ms` milliseconds: what it holds
 * when full plus what it refills meanwhile. */
static double
policy_max(const tkshm_policy *p, double ms)
{
	if (p->kind == TKSHM_KIND_TOKEN_BUCKET)
		return p->u.token_bucket.capacity +
		       ms * p->u.token_bucket.refill_per_sec / 1000.0;
	return p->u.gcra.burst + ms * p->u.gcra.limit / p->u.gcra.period_ms;
}

/* Stops the workers: the stop flag, then SIGTERM, then SIGKILL; reaps all.
 * Returns how many did not exit cleanly on the flag. */
static unsigned
stop_workers(struct shared *sh, pid_t *pids, unsigned n)
{
	unsigned unclean = 0, left = n;
	double deadline = mono_s() + 2.0;
	bool termed = false;

	atomic_store(&sh->stop, 1);
	while (left) {
		for (unsigned i = 0; i < n; i++) {
			int status;
			if (pids[i] <= 0 ||
			    waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				unclean++;
			pids[i] = 0;
			left--;
		}
		if (!left)
			break;
		if (mono_s() > deadline) {
			for (unsigned i = 0; i < n; i++)
				if (pids[i] > 0)
					kill(pids[i],
					     termed ? SIGKILL : SIGTERM);
			termed = true;
			deadline = mono_s() + 2.0;
		}
		sleep_s(0.002);
	}
	return unclean;
}

static void
print_tick(const struct shared *sh, unsigned workers, unsigned second,
	   struct sums *prev)
{
	printf("t=%us       admitted/denied in the last second\n", second);
	printf("  %-9s %-9s", "client", "role");
	for (int r = 0; r < NROUTES; r++)
		printf(" %13s", routes[r].name);
	printf("\n");
	for (size_t c = 0; c < NCLIENTS; c++) {
		struct sums s;

		sum_client(sh, workers, c, &s);
		printf("  client:%-2zu %-9s", c, clients[c].role);
		for (int r = 0; r < NROUTES; r++) {
			char cell[32];

			snprintf(cell, sizeof cell, "+%llu/-%llu",
				 (unsigned long long)(s.ok[r] - prev[c].ok[r]),
				 (unsigned long long)(s.denied[r] -
						      prev[c].denied[r]));
			printf(" %13s", cell);
		}
		printf("\n");
		prev[c] = s;
	}
	fflush(stdout);
}

/* Verifies a table and compares its counters with the workers' tallies. */
static bool
check_table(const char *name, tkshm_table *t, uint64_t ok, uint64_t denied,
	    bool exact)
{
	tkshm_stats st;
	uint64_t problems = 0;
	bool good = true;

	if (tkshm_verify(t, NULL, NULL, &problems) != TKSHM_OK) {
		printf("%s table: tkshm_verify found %llu problems\n", name,
		       (unsigned long long)problems);
		good = false;
	}
	tkshm_stats_get(t, &st);
	printf("%s table: allowed=%llu denied=%llu inserts=%llu "
	       "evictions=%llu\n",
	       name, (unsigned long long)st.allowed,
	       (unsigned long long)st.denied, (unsigned long long)st.inserts,
	       (unsigned long long)st.evictions);
	if (exact && (st.allowed != ok || st.denied != denied)) {
		printf("%s table: counters differ from the workers' tallies "
		       "(admitted=%llu denied=%llu)\n",
		       name, (unsigned long long)ok,
		       (unsigned long long)denied);
		good = false;
	}
	return good;
}

/* Creates the route tables: files in o->dir named after our pid, or
 * anonymous.  Returns false (after closing what was made) on failure. */
static bool
make_tables(const struct options *o, pid_t me, char paths[][4096],
	    tkshm_table **tables, tkshm_policy *policies)
{
	for (int r = 0; r < NROUTES; r++) {
		const char *path = NULL;

		if (!o->anonymous) {
			snprintf(paths[r], 4096, "%s/tkshm-demo.%ld.%s", o->dir,
				 (long)me, routes[r].name);
			path = paths[r];
		}
		tables[r] = make_table(path, routes[r].spec, &policies[r]);
		if (!tables[r]) {
			for (int k = 0; k < r; k++) {
				if (!o->anonymous)
					unlink(paths[k]);
				tkshm_close(tables[k]);
			}
			return false;
		}
	}
	return true;
}

static void
print_banner(const struct options *o, char paths[][4096])
{
	for (int r = 0; r < NROUTES; r++)
		printf("%s table: %s, %s\n", routes[r].name,
		       o->anonymous ? "anonymous" : paths[r], routes[r].spec);
	if (o->anonymous)
		printf("(anonymous tables are shared by fork() only; run "
		       "without --anonymous to inspect them)\n");
	else
		printf("watch it live from another terminal:\n"
		       "  tkshm-inspect top %s\n"
		       "  tkshm-inspect list %s --where remaining\\<1\n",
		       paths[R_API], paths[R_LOGIN]);
	printf("%u workers, %zu clients, %u seconds\n", o->workers, NCLIENTS,
	       o->seconds);
	fflush(stdout);
}

/* The final summary: one line per client, and whether every client stayed
 * within every policy. */
static bool
print_summary(const struct shared *sh, const struct options *o, double dur_ms,
	      const tkshm_policy *policies, struct sums *total)
{
	bool ok = true;

	memset(total, 0, sizeof *total);
	printf("final summary after %.2f s (%u workers):\n", dur_ms / 1000.0,
	       o->workers);
	for (size_t c = 0; c < NCLIENTS; c++) {
		struct sums s;

		sum_client(sh, o->workers, c, &s);
		printf("client:%zu", c);
		for (int r = 0; r < NROUTES; r++) {
			const char *n = r == R_API ? "" : routes[r].name;
			const char *sep = r == R_API ? "" : "_";

			printf(" %s%sadmitted=%llu %s%sdenied=%llu %s%smax=%.0f",
			       n, sep, (unsigned long long)s.ok[r], n, sep,
			       (unsigned long long)s.denied[r], n, sep,
			       floor(policy_max(&policies[r], dur_ms) + 1e-6));
		}
		printf(" role=%s\n", clients[c].role);
		for (int r = 0; r < NROUTES; r++) {
			double max =
				floor(policy_max(&policies[r], dur_ms) + 1e-6);

			total->ok[r] += s.ok[r];
			total->denied[r] += s.denied[r];
			if ((double)s.ok[r] > max) {
				printf("LIMITER BREACHED: client:%zu admitted "
				       "%llu %s requests, at most %.0f "
				       "allowed\n",
				       c, (unsigned long long)s.ok[r],
				       routes[r].name, max);
				ok = false;
			}
		}
		if (s.errors) {
			printf("client:%zu: %llu checks failed with an error\n",
			       c, (unsigned long long)s.errors);
			ok = false;
		}
	}
	return ok;
}

int
main(int argc, char **argv)
{
	struct options o;
	char paths[NROUTES][4096];
	tkshm_policy policies[NROUTES];
	tkshm_table *tables[NROUTES] = { NULL };
	struct shared *sh;
	pid_t pids[MAX_WORKERS] = { 0 }, me = getpid();
	struct sums prev[NCLIENTS], total;
	double t0, start_ms, dur_ms;
	unsigned unclean, started = 0;
	struct sigaction sa;
	bool ok = true;
	int rc = 0;

	if (parse_args(argc, argv, &o) != 0) {
		fputs("Try '" PROG " --help'.\n", stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (!make_tables(&o, me, paths, tables, policies))
		return 3;
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, PROG ": mmap: %s\n", strerror(errno));
		rc = 3;
		goto out;
	}
	print_banner(&o, paths);

	start_ms = tkshm_now_ms();
	t0 = mono_s();
	for (unsigned w = 0; w < o.workers; w++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
			rc = 3;
			break;
		}
		if (pid == 0)
			worker(w, o.workers, sh, tables, t0, me);
		pids[w] = pid;
		started++;
	}

	memset(prev, 0, sizeof prev);
	for (unsigned s = 1; rc == 0 && s <= o.seconds && !interrupted; s++) {
		while (!interrupted && mono_s() - t0 < s)
			sleep_s(t0 + s - mono_s());
		if (!interrupted)
			print_tick(sh, o.workers, s, prev);
	}
	unclean = stop_workers(sh, pids, started);
	dur_ms = tkshm_now_ms() - start_ms;
	if (rc != 0)
		goto out;
	if (interrupted)
		printf("interrupted\n");
	if (unclean) {
		printf("%u workers did not exit cleanly\n", unclean);
		ok = false;
	}
	ok &= print_summary(sh, &o, dur_ms, policies, &total);
	for (int r = 0; r < NROUTES; r++)
		ok &= check_table(routes[r].name, tables[r], total.ok[r],
				  total.denied[r], unclean == 0);

out:
	if (sh != MAP_FAILED && sh)
		munmap(sh, sizeof *sh);
	for (int r = 0; r < NROUTES; r++)
		tkshm_close(tables[r]);
	if (!o.anonymous && o.keep)
		printf("kept: %s %s %s\n", paths[R_API], paths[R_LOGIN],
		       paths[R_SEARCH]);
	else if (!o.anonymous)
		for (int r = 0; r < NROUTES; r++)
			unlink(paths[r]);
	if (rc != 0)
		return rc;
	printf(ok ? "demo: ok\n" : "demo: FAILED\n");
	return ok ? 0 : 1;
}
