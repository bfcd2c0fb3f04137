/*
 * prefork_demo.c - tkshm-demo: a prefork server in miniature.
 *
 * The parent creates two tables (an "api" table and a stricter "login"
 * table), forks W workers, and the workers serve simulated traffic from six
 * clients, some of them abusive, checking every request against the shared
 * tables with the real clock, the way Apache prefork children or PHP-FPM
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

#define API_POLICY   "gcra:limit=20,periodMs=1000,burst=10"
#define LOGIN_POLICY "gcra:limit=1,periodMs=1000,burst=3"

#define MAX_WORKERS 64
#define MAX_SECONDS 3600

/* --- the simulated clients ----------------------------------------------- */

/* A client sends api requests steadily at `api_rps`, or, when burst_size is
 * not 0, in bursts of burst_size requests every burst_every_s seconds; and
 * login attempts steadily at `login_rps`. */
struct client {
	const char *role;
	double api_rps;
	unsigned burst_size;
	double burst_every_s;
	double login_rps;
};

/* clang-format off */
static const struct client clients[] = {
	/* role        api/s  burst every  login/s */
	{ "polite",    4,     0,    0,     0.5 },
	{ "steady",    15,    0,    0,     0   },
	{ "heavy",     30,    0,    0,     1   },
	{ "abusive",   100,   0,    0,     0   },
	{ "attacker",  250,   0,    0,     25  }, /* floods api and login */
	{ "bursty",    0,     40,   2.0,   0   }, /* 40 at once every 2 s */
};
/* clang-format on */
#define NCLIENTS (sizeof clients / sizeof clients[0])

/* When the i-th api request of a client is due, in seconds from the start. */
static double
api_due(const struct client *c, uint64_t i)
{
	if (c->burst_size)
		return floor((double)i / c->burst_size) * c->burst_every_s;
	return c->api_rps > 0 ? (double)i / c->api_rps : INFINITY;
}

static double
login_due(const struct client *c, uint64_t i)
{
	return c->login_rps > 0 ? (double)i / c->login_rps : INFINITY;
}

/* --- what the workers record (shared with the parent) ----------------- */

/* One worker's counts for one client.  Each row is written by one worker
 * only; the parent reads.  A cache line each, so workers share no line. */
struct tally {
	_Alignas(64) _Atomic uint64_t api_ok;
	_Atomic uint64_t api_denied;
	_Atomic uint64_t login_ok;
	_Atomic uint64_t login_denied;
	_Atomic uint64_t errors;
};

struct shared {
	_Atomic int stop;
	struct tally t[MAX_WORKERS][NCLIENTS];
};

struct sums {
	uint64_t api_ok, api_denied, login_ok, login_denied, errors;
};

static void
sum_client(const struct shared *sh, unsigned workers, size_t c, struct sums *s)
{
	memset(s, 0, sizeof *s);
	for (unsigned w = 0; w < workers; w++) {
		const struct tally *t = &sh->t[w][c];
		s->api_ok +=
			atomic_load_explicit(&t->api_ok, memory_order_relaxed);
		s->api_denied += atomic_load_explicit(&t->api_denied,
						      memory_order_relaxed);
		s->login_ok += atomic_load_explicit(&t->login_ok,
						    memory_order_relaxed);
		s->login_denied += atomic_load_explicit(&t->login_denied,
							memory_order_relaxed);
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
check_one(tkshm_table *t, const char *key, _Atomic uint64_t *ok,
	  _Atomic uint64_t *denied, _Atomic uint64_t *errors)
{
	tkshm_decision d;

	if (tkshm_check(t, key, strlen(key), 1, &d) != TKSHM_OK)
		bump(errors);
	else if (d.allowed)
		bump(ok);
	else
		bump(denied);
}

/* Worker w of `workers` serves every workers-th request of each client:
 * together the workers send each client's traffic exactly once. */
_Noreturn static void
worker(unsigned w, unsigned workers, struct shared *sh, tkshm_table *api,
       tkshm_table *login, double t0, pid_t parent)
{
	uint64_t next_api[NCLIENTS], next_login[NCLIENTS];
	char key[32];

	/* Die with the parent, whatever kills it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	signal(SIGINT, SIG_IGN); /* the parent stops us on Ctrl-C */

	for (size_t c = 0; c < NCLIENTS; c++)
		next_api[c] = next_login[c] = w;
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		double now = mono_s() - t0, wake = now + 0.005;

		for (size_t c = 0; c < NCLIENTS; c++) {
			const struct client *cl = &clients[c];
			struct tally *t = &sh->t[w][c];

			snprintf(key, sizeof key, "client:%zu", c);
			while (api_due(cl, next_api[c]) <= now &&
			       !atomic_load_explicit(&sh->stop,
						     memory_order_relaxed)) {
				check_one(api, key, &t->api_ok, &t->api_denied,
					  &t->errors);
				next_api[c] += workers;
			}
			while (login_due(cl, next_login[c]) <= now &&
			       !atomic_load_explicit(&sh->stop,
						     memory_order_relaxed)) {
				check_one(login, key, &t->login_ok,
					  &t->login_denied, &t->errors);
				next_login[c] += workers;
			}
			if (api_due(cl, next_api[c]) < wake)
				wake = api_due(cl, next_api[c]);
			if (login_due(cl, next_login[c]) < wake)
				wake = login_due(cl, next_login[c]);
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
	      "simulated clients (some abusive) against two shared tkshm\n"
	      "tables, using the real clock:\n"
	      "  api    keys client:N, " API_POLICY "\n"
	      "  login  keys client:N, " LOGIN_POLICY "\n"
	      "The parent prints a summary every second, then one line per\n"
	      "client, and 'demo: ok' if no client was admitted more than its\n"
	      "policy allows over the run (burst + rate * duration).\n"
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

/* The most a GCRA policy may admit at cost 1 over `ms` milliseconds. */
static double
gcra_max(const tkshm_policy *p, double ms)
{
	return p->u.gcra.burst + ms * p->u.gcra.limit / p->u.gcra.period_ms;
}

static double
gcra_rate_per_s(const tkshm_policy *p)
{
	return p->u.gcra.limit * 1000.0 / p->u.gcra.period_ms;
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
	   struct sums *prev, const tkshm_policy *api_p)
{
	printf("t=%us\n", second);
	for (size_t c = 0; c < NCLIENTS; c++) {
		struct sums s;

		sum_client(sh, workers, c, &s);
		printf("  client:%zu %-8s api +%-4llu admitted +%-4llu denied "
		       "%6.1f/s (policy %.0f/s)  login +%llu/-%llu\n",
		       c, clients[c].role,
		       (unsigned long long)(s.api_ok - prev[c].api_ok),
		       (unsigned long long)(s.api_denied - prev[c].api_denied),
		       (double)(s.api_ok - prev[c].api_ok),
		       gcra_rate_per_s(api_p),
		       (unsigned long long)(s.login_ok - prev[c].login_ok),
		       (unsigned long long)(s.login_denied -
					    prev[c].login_denied));
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

int
main(int argc, char **argv)
{
	struct options o;
	char api_path[4096], login_path[4096];
	tkshm_policy api_p, login_p;
	tkshm_table *api = NULL, *login = NULL;
	struct shared *sh;
	pid_t pids[MAX_WORKERS] = { 0 }, me = getpid();
	struct sums prev[NCLIENTS], tot[NCLIENTS];
	uint64_t api_ok = 0, api_denied = 0, login_ok = 0, login_denied = 0;
	double t0, start_ms, end_ms, dur_ms;
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

	if (o.anonymous) {
		api = make_table(NULL, API_POLICY, &api_p);
		login = api ? make_table(NULL, LOGIN_POLICY, &login_p) : NULL;
	} else {
		snprintf(api_path, sizeof api_path, "%s/tkshm-demo.%ld.api",
			 o.dir, (long)me);
		snprintf(login_path, sizeof login_path,
			 "%s/tkshm-demo.%ld.login", o.dir, (long)me);
		api = make_table(api_path, API_POLICY, &api_p);
		login = api ? make_table(login_path, LOGIN_POLICY, &login_p) :
			      NULL;
	}
	if (!api || !login) {
		if (api && !o.anonymous)
			unlink(api_path);
		tkshm_close(api);
		return 3;
	}
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, PROG ": mmap: %s\n", strerror(errno));
		rc = 3;
		goto out;
	}

	if (o.anonymous) {
		printf("api table: anonymous, %s\n", API_POLICY);
		printf("login table: anonymous, %s\n", LOGIN_POLICY);
		printf("(anonymous tables are shared by fork() only; run "
		       "without --anonymous to inspect them)\n");
	} else {
		printf("api table: %s, %s\n", api_path, API_POLICY);
		printf("login table: %s, %s\n", login_path, LOGIN_POLICY);
		printf("inspect it live: tkshm-inspect stats %s\n", api_path);
	}
	printf("%u workers, %zu clients, %u seconds\n", o.workers, NCLIENTS,
	       o.seconds);
	fflush(stdout);

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
			worker(w, o.workers, sh, api, login, t0, me);
		pids[w] = pid;
		started++;
	}

	memset(prev, 0, sizeof prev);
	for (unsigned s = 1; rc == 0 && s <= o.seconds && !interrupted; s++) {
		while (!interrupted && mono_s() - t0 < s)
			sleep_s(t0 + s - mono_s());
		if (!interrupted)
			print_tick(sh, o.workers, s, prev, &api_p);
	}
	unclean = stop_workers(sh, pids, started);
	end_ms = tkshm_now_ms();
	dur_ms = end_ms - start_ms;
	if (rc != 0)
		goto out;
	if (interrupted)
		printf("interrupted\n");
	if (unclean) {
		printf("%u workers did not exit cleanly\n", unclean);
		ok = false;
	}

	printf("final summary after %.2f s (%u workers):\n", dur_ms / 1000.0,
	       o.workers);
	for (size_t c = 0; c < NCLIENTS; c++) {
		double amax = floor(gcra_max(&api_p, dur_ms) + 1e-6);
		double lmax = floor(gcra_max(&login_p, dur_ms) + 1e-6);

		sum_client(sh, o.workers, c, &tot[c]);
		printf("client:%zu admitted=%llu denied=%llu max=%.0f "
		       "login_admitted=%llu login_denied=%llu login_max=%.0f "
		       "role=%s\n",
		       c, (unsigned long long)tot[c].api_ok,
		       (unsigned long long)tot[c].api_denied, amax,
		       (unsigned long long)tot[c].login_ok,
		       (unsigned long long)tot[c].login_denied, lmax,
		       clients[c].role);
		api_ok += tot[c].api_ok;
		api_denied += tot[c].api_denied;
		login_ok += tot[c].login_ok;
		login_denied += tot[c].login_denied;
		if ((double)tot[c].api_ok > amax) {
			printf("LIMITER BREACHED: client:%zu admitted %llu api "
			       "requests, at most %.0f allowed\n",
			       c, (unsigned long long)tot[c].api_ok, amax);
			ok = false;
		}
		if ((double)tot[c].login_ok > lmax) {
			printf("LIMITER BREACHED: client:%zu admitted %llu "
			       "logins, at most %.0f allowed\n",
			       c, (unsigned long long)tot[c].login_ok, lmax);
			ok = false;
		}
		if (tot[c].errors) {
			printf("client:%zu: %llu checks failed with an error\n",
			       c, (unsigned long long)tot[c].errors);
			ok = false;
		}
	}
	ok &= check_table("api", api, api_ok, api_denied, unclean == 0);
	ok &= check_table("login", login, login_ok, login_denied, unclean == 0);

out:
	if (sh != MAP_FAILED && sh)
		munmap(sh, sizeof *sh);
	tkshm_close(api);
	tkshm_close(login);
	if (!o.anonymous) {
		if (o.keep) {
			printf("kept: %s %s\n", api_path, login_path);
		} else {
			unlink(api_path);
			unlink(login_path);
		}
	}
	if (rc != 0)
		return rc;
	printf(ok ? "demo: ok\n" : "demo: FAILED\n");
	return ok ? 0 : 1;
}
