/*
 * test_crash_switch.c - kills a process at every step of a table's change
 * (protocol.h L1-L6): at each of its shared-memory writes, and between the
 * file operations of a replacement (after the new table is built, after
 * the old file is linked aside, after the new one is renamed in).
 *
 * Needs a library built with TKSHM_CRASH_POINTS (src/shm/crash_point.h).
 * For each change: a template table holds keys k0..k11, key ki having
 * spent i % 5 of its 5; the change runs once uncrashed, counting its
 * writes W; then for N = 1 .. W a child runs it on a fresh copy, armed to
 * die at write N.  The parent then opens the path as a server would
 * (adopting the table there: a replacement its replacer left draining is
 * finished by this open), and checks that
 *   - tkshm_verify finds no problem;
 *   - every key has exactly its 5 (or the new policy's limit, when the
 *     change was published) minus what it spent: no admission lost or
 *     made by the crash, none stuck;
 *   - the table takes new keys.
 * Before that, a reader of another user (tkshm-inspect run by an operator
 * who may read the files, not write them) opens the table read-only and
 * plans a change: a table left draining must not refuse it.  Then a
 * handle opened before the crash (a server's worker, which
 * runs no open's drain) grows the table again: a replacement of a table
 * its dead replacer left draining finishes that drain first, or the keys
 * still only in the oldest table would be lost.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shm/crash_point.h"
#include "test_support.h"

#define NKEYS 12
#define AGAIN_SLOTS 2048 /* the second growth, above every change's */

/* The time of every check: the clock's at the start, as an open that
 * finishes a drain converts the keys at the clock's now. */
static double T0;

struct change {
	const char *name;
	const char *from;   /* the template's policy */
	const char *to;	    /* the change's, or NULL */
	uint64_t slots;	    /* the template's */
	uint64_t to_slots;  /* the change's, or 0 */
	int limit_after;    /* a key's limit once the change is published */
};

static char dir[4096], path[4200], tpl[4200];

static void
must(int rc, const char *what)
{
	if (rc != TKSHM_OK)
		fail_msg("%s: %s", what, tkshm_error_name(rc));
}

static tkshm_table *
open_as(const char *p, const char *spec, uint32_t flags)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy pol;
	tkshm_table *t = NULL;

	if (spec) {
		pol = tkt_policy(spec);
		o.policy = &pol;
	}
	o.flags = flags;
	must(tkshm_open(p, &o, &t), p);
	return t;
}

static int
spend(tkshm_table *t, const char *key, int n)
{
	int got = 0;

	for (int i = 0; i < n; i++) {
		tkshm_decision d;

		must(tkshm_check_at(t, key, strlen(key), 1, T0, &d), "check");
		if (!d.allowed)
			break;
		got++;
	}
	return got;
}

/* Calls fn on the path of every file of the work directory. */
static void
each_file(int (*fn)(const char *))
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char f[4400];

	if (!d)
		fail_msg("opendir %s: %s", dir, strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
			(void)fn(f);
		}
	closedir(d);
}

/* Removes every file of the work directory: a crashed replacement may
 * leave its new table's or its side name there. */
static void
clean_dir(void)
{
	each_file(unlink);
}

static int
readable_by_all(const char *f)
{
	return chmod(f, 0644);
}

/* Every file of the work directory readable by all, none writable. */
static void
share_dir_read_only(void)
{
	each_file(readable_by_all);
	chmod(dir, 0755);
	chmod(tkt_tmpdir(), 0711); /* mkdtemp's 0700 */
}

/* A read-only open and a plan by the user `nobody`, in a child: what
 * they return, or 100 + a failed step. */
static int
read_as_nobody(const struct change *c)
{
	int status;
	pid_t pid;

	share_dir_read_only();
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_change ch;
		tkshm_policy p;
		tkshm_table *t;
		int rc;

		/* As root (as CI runs): another user, who may read the
		 * files and not write them.  Otherwise the owner, who still
		 * could: the step then shows less. */
		if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			_exit(100);
		o.flags = TKSHM_O_RDONLY;
		rc = tkshm_open(path, &o, &t);
		if (rc != TKSHM_OK)
			_exit(101);
		tkshm_close(t);
		if (c->to) {
			p = tkt_policy(c->to);
			o.policy = &p;
		}
		o.slots = AGAIN_SLOTS;
		rc = tkshm_plan(path, &o, &ch);
		_exit(rc == TKSHM_OK ? 0 : 102);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		fail_msg("waitpid: %s", strerror(errno));
	return WEXITSTATUS(status);
}

static void
make_template(const struct change *c)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy(c->from);
	tkshm_table *t;
	char key[16];

	unlink(tpl);
	o.policy = &p;
	o.slots = c->slots;
	must(tkshm_open(tpl, &o, &t), "template");
	for (int i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof key, "k%d", i);
		if (spend(t, key, i % 5) != i % 5)
			fail_msg("template: k%d", i);
	}
	tkshm_close(t);
}

static void
run_change(const struct change *c, tkshm_table *t)
{
	tkshm_policy p;

	if (c->to)
		p = tkt_policy(c->to);
	must(tkshm_apply_at(t, c->to ? &p : NULL, c->to_slots, T0, NULL),
	     "apply");
}

/* The change in a child armed at n (0: no crash); returns its writes when
 * it completed, 0 when it was killed as armed. */
static uint64_t
run_child(const struct change *c, uint64_t n)
{
	int fds[2], status;
	uint64_t writes = 0;
	pid_t pid;

	if (pipe(fds) != 0)
		fail_msg("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		tkshm_table *t;

		close(fds[0]);
		alarm(20);
		t = open_as(path, NULL, 0);
		tk_crash_arm(n);
		run_change(c, t);
		writes = tk_crash_writes();
		tk_crash_arm(0);
		if (write(fds[1], &writes, sizeof writes) != sizeof writes)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &writes, sizeof writes) != sizeof writes)
		writes = 0;
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		fail_msg("waitpid: %s", strerror(errno));
	if (n == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		fail_msg("%s: the uncrashed change failed (%#x)", c->name,
			 status);
	if (n > 0 && (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL))
		fail_msg("%s: N=%" PRIu64 ": not killed at its write (%#x)",
			 c->name, n, status);
	return writes;
}

static void
say_problem(void *ctx, const char *problem)
{
	print_message("  %s: verify: %s\n", (const char *)ctx, problem);
}

/* What a crash at write n left, seen by a server opening the path. */
static void
inspect(const struct change *c, uint64_t n)
{
	tkshm_table *t = open_as(path, NULL, 0);
	tkshm_stats st;
	uint64_t problems = 0;
	char key[16];
	int limit;

	must(tkshm_verify(t, say_problem, (void *)c->name, &problems),
	     "verify");
	if (problems)
		fail_msg("%s: crash at write %" PRIu64 ": %" PRIu64
			 " problem(s)", c->name, n, problems);
	must(tkshm_stats_get(t, &st), "stats");
	/* Published or not: the policy in force says which limit holds. */
	limit = 5;
	if (c->to) {
		tkshm_policy to = tkt_policy(c->to);

		if (tkshm_policy_equal(&st.policy, &to))
			limit = c->limit_after;
	}
	for (int i = 0; i < NKEYS; i++) {
		int want = limit - i % 5, got;

		snprintf(key, sizeof key, "k%d", i);
		got = spend(t, key, 100);
		if (got != (want > 0 ? want : 0))
			fail_msg("%s: crash at write %" PRIu64 ": k%d got %d, "
				 "not %d",
				 c->name, n, i, got, want);
	}
	if (spend(t, "a-new-key", 1) != 1)
		fail_msg("%s: crash at write %" PRIu64 ": no new key",
			 c->name, n);
	tkshm_close(t);
}

static void
enumerate(const struct change *c)
{
	uint64_t w;

	make_template(c);
	clean_dir();
	tkt_copy_file(tpl, path);
	w = run_child(c, 0);
	inspect(c, 0);
	if (w == 0)
		fail_msg("%s: the change wrote nothing", c->name);
	for (uint64_t n = 1; n <= w; n++) {
		tkshm_table *before;
		int rc;

		clean_dir();
		tkt_copy_file(tpl, path);
		before = open_as(path, NULL, 0);
		run_child(c, n);
		rc = read_as_nobody(c);
		if (rc != 0)
			fail_msg("%s: crash at write %" PRIu64 ": a reader that "
				 "may not write: step %d failed", c->name, n,
				 rc - 100);
		rc = tkshm_apply_at(before, NULL, AGAIN_SLOTS, T0, NULL);
		if (rc != TKSHM_OK)
			fail_msg("%s: crash at write %" PRIu64 ": the second "
				 "growth: %s", c->name, n,
				 tkshm_error_name(rc));
		tkshm_close(before);
		inspect(c, n);
	}
	print_message("  %-40s %" PRIu64 " crash points\n", c->name, w);
}

/* The work directory, its table's path, the template's, and T0. */
static void
work_dir(void)
{
	T0 = tkshm_now_ms();
	snprintf(dir, sizeof dir, "%s/switch", tkt_tmpdir());
	mkdir(dir, 0700);
	snprintf(path, sizeof path, "%s/table.tk", dir);
	snprintf(tpl, sizeof tpl, "%s/template.tk", tkt_tmpdir());
}

static void
test_switches(void **state)
{
	static const struct change changes[] = {
		{ "window limit in place",
		  "fixedWindow:limit=5,windowMs=86400000",
		  "fixedWindow:limit=7,windowMs=86400000", 64, 0, 7 },
		{ "gcra grown", "gcra:limit=5,periodMs=86400000", NULL, 64, 512,
		  5 },
		{ "token bucket grown",
		  "tokenBucket:capacity=5,refillPerSec=0.00001", NULL, 64, 512,
		  5 },
		{ "gcra to token bucket", "gcra:limit=5,periodMs=100000000",
		  "tokenBucket:capacity=5,refillPerSec=0.00005", 64, 0, 5 },
		{ "window replaced (buckets)",
		  "slidingWindow:limit=5,windowMs=86400000,buckets=4",
		  "slidingWindow:limit=5,windowMs=86400000,buckets=8", 64, 0,
		  5 },
	};

	(void)state;
	work_dir();
	for (size_t i = 0; i < sizeof changes / sizeof *changes; i++)
		enumerate(&changes[i]);
}

/* A permit held across a growth of a concurrency table whose replacer is
 * killed at write n: released through a handle opened before (which
 * follows the path, and may meet the key not yet carried), it frees its
 * cell; the key then takes its whole limit again. */
static void
permit_across(uint64_t n, uint64_t *writes)
{
	static const struct change grow = { "concurrency grown",
					    "concurrency:limit=2", NULL, 64,
					    512, 2 };
	tkshm_table *a, *b;
	tkshm_permit p, q[3];
	tkshm_decision d;
	int rc, granted = 0;

	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy pol = tkt_policy(grow.from);

	clean_dir();
	o.policy = &pol;
	o.slots = grow.slots;
	must(tkshm_open(path, &o, &a), "open");
	must(tkshm_acquire_at(a, "k", 1, T0, &p, &d), "acquire");
	assert_true(d.allowed);
	*writes = run_child(&grow, n);
	rc = tkshm_release_at(a, &p, T0, TKSHM_OUTCOME_IGNORE);
	if (rc != TKSHM_OK)
		fail_msg("%s: crash at write %" PRIu64 ": release: %s",
			 grow.name, n, tkshm_error_name(rc));
	b = open_as(path, NULL, 0);
	for (int i = 0; i < 3; i++) {
		must(tkshm_acquire_at(b, "k", 1, T0, &q[i], &d), "acquire");
		granted += d.allowed;
	}
	if (granted != 2)
		fail_msg("%s: crash at write %" PRIu64 ": %d permits after "
			 "the release, not 2",
			 grow.name, n, granted);
	tkshm_close(b);
	tkshm_close(a);
}

static void
test_permit_across_a_crashed_growth(void **state)
{
	uint64_t w = 0, ignored;

	(void)state;
	work_dir();
	permit_across(0, &w);
	if (w == 0)
		fail_msg("the growth wrote nothing");
	for (uint64_t n = 1; n <= w; n++)
		permit_across(n, &ignored);
	print_message("  %-40s %" PRIu64 " crash points\n",
		      "concurrency grown, a permit released", w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switches),
		cmocka_unit_test(test_permit_across_a_crashed_growth),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
