/*
 * test_crash_points.c - kills a process at every write it makes to shared
 * memory, in every kind of transition, and checks what each crash leaves.
 *
 * Needs a library built with TKSHM_CRASH_POINTS (src/shm/crash_point.h):
 * every store, fetch-add and compare-and-swap the table is written with
 * counts, and the armed one raises SIGKILL before it happens.  For each
 * scenario:
 *   1. a template table is prepared (file-backed, so it can be copied);
 *   2. the operation is run once without a crash, counting its writes W;
 *   3. for N = 1 .. W, a child opens a fresh copy of the template, arms N
 *      and runs the operation, and must die of SIGKILL; the parent then
 *      opens the copy, and
 *        - tkshm_verify() finds no problem;
 *        - a follow-up workload (fixed checks at fixed times, acquires
 *          after a reap, ...) admits between what it admits on the
 *          template with the operation completed (R1) and without it
 *          (R0): a crash may lose its own admission, never create budget,
 *          and no key is left stuck (the workload ends with checks far in
 *          the future that must be admitted);
 *        - the table keeps working for other keys.
 * A crash during the follow-up of a crash (a second claim over a
 * placeholder the first left, the duplicate-resolution path) is enumerated
 * too: every N1 of the first operation times every N2 of the second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/words.h"
#include "global/global_shm.h"
#include "global/lease_check.h"
#include "shm/crash_point.h"
#include "shm/table.h"
#include "test_support.h"

#define T0    1700000000000.0
#define FAR   (T0 + 400.0 * 86400000.0) /* past every window and period */
#define DAYS2 (2 * 86400000.0)

/* --- scenarios ------------------------------------------------------- */

struct scenario {
	const char *name;
	const char *policy;
	uint64_t slots;
	/* Builds the template state (parent, no crash). */
	void (*prepare)(tkshm_table *t);
	/* The operation crashed at each of its writes (child). */
	void (*op)(tkshm_table *t);
	/* The follow-up: returns how many units it was granted. */
	long (*follow)(tkshm_table *t);
};

static void
must(int rc, const char *what)
{
	if (rc != TKSHM_OK)
		fail_msg("%s: %s", what, tkshm_error_name(rc));
}

static bool
check_key(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_decision d;
	must(tkshm_check_at(t, key, strlen(key), cost, now, &d), key);
	return d.allowed;
}

/* A check that may find the key's window full of live keys: a wide
 * table refuses a new key then (TKSHM_EFULL) instead of evicting, which
 * counts as a denial here. */
static bool
try_key(tkshm_table *t, const char *key, double now)
{
	tkshm_decision d;
	int rc = tkshm_check_at(t, key, strlen(key), 1, now, &d);
	if (rc == TKSHM_EFULL)
		return false;
	must(rc, key);
	return d.allowed;
}

/* n checks of key at now; admitted count. */
static long
count_checks(tkshm_table *t, const char *key, int n, double now)
{
	long a = 0;
	for (int i = 0; i < n; i++)
		a += check_key(t, key, 1, now);
	return a;
}

/* The follow-up of the rate-limit scenarios: the key's remaining budget at
 * the operation's time, every filler key at once, and then the key and
 * the fillers far in the future (a stuck key would be denied there). */
static const char *const fillers[] = { "f0", "f1", "f2", "f3",
				       "f4", "f5", "f6", "f7" };
#define NFILL (sizeof fillers / sizeof fillers[0])

static double op_now; /* the operation's time, set per scenario */

static long
follow_rate(tkshm_table *t)
{
	long a = count_checks(t, "k", 40, op_now);
	for (size_t i = 0; i < NFILL; i++)
		a += try_key(t, fillers[i], op_now) +
		     try_key(t, fillers[i], op_now);
	/* Each far check two days after the last, so that every earlier key
	 * is idle again (the longest period here is a calendar day) and the
	 * 8-slot window always has room. */
	if (!check_key(t, "k", 1, FAR))
		fail_msg("key k is stuck: denied far in the future");
	for (size_t i = 0; i < NFILL; i++)
		if (!check_key(t, fillers[i], 1, FAR + (double)(i + 1) * DAYS2))
			fail_msg("key %s is stuck", fillers[i]);
	if (!check_key(t, "other", 1, FAR + (NFILL + 1) * DAYS2))
		fail_msg("a new key cannot be inserted");
	return a;
}

static void
prepare_none(tkshm_table *t)
{
	(void)t;
}

static void
prepare_k(tkshm_table *t)
{
	check_key(t, "k", 1, T0);
}

/* Fills the table with keys that are idle at the operation's time: its
 * insert reclaims one (a wide table takes only 7: the eighth finds the
 * window full of live keys). */
static void
prepare_idle_fillers(tkshm_table *t)
{
	for (size_t i = 0; i < NFILL; i++)
		try_key(t, fillers[i], T0);
}

/* Fills the table with keys deep in debt: the operation's insert evicts
 * one (the least indebted) and remembers its debt. */
static void
prepare_debtors(tkshm_table *t)
{
	for (size_t i = 0; i < NFILL; i++)
		while (check_key(t, fillers[i], 1, T0))
			;
}

static void
op_check_k(tkshm_table *t)
{
	tkshm_decision d;
	(void)tkshm_check_at(t, "k", 1, 1, op_now, &d);
}

/* Key k with its whole budget spent at T0: the reset below gives it back. */
static void
prepare_k_spent(tkshm_table *t)
{
	while (check_key(t, "k", 1, T0))
		;
}

/* tkshm_reset: the epoch bump, the slot's CAS to DEAD, the debt cell's
 * clear (I9) and the counter, each a crash point. */
static void
op_reset_k(tkshm_table *t)
{
	must(tkshm_reset(t, "k", 1), "reset");
}

/* --- permits --------------------------------------------------------- */

static long
follow_permits(tkshm_table *t)
{
	tkshm_permit p[8];
	tkshm_decision d;
	uint64_t reaped;
	long a = 0;

	must(tkshm_reap(t, &reaped), "reap");
	for (int i = 0; i < 8; i++) {
		must(tkshm_acquire_at(t, "k", 1, T0, &p[a], &d), "acquire");
		if (d.allowed)
			a++;
	}
	for (long i = 0; i < a; i++)
		must(tkshm_release_at(t, &p[i], T0 + 1, TKSHM_OUTCOME_IGNORE),
		     "release");
	return a;
}

static void
op_acquire(tkshm_table *t)
{
	tkshm_permit p;
	tkshm_decision d;
	(void)tkshm_acquire_at(t, "k", 1, T0, &p, &d);
}

static void
op_acquire_release(tkshm_table *t)
{
	tkshm_permit p;
	tkshm_decision d;
	if (tkshm_acquire_at(t, "k", 1, T0, &p, &d) == TKSHM_OK && d.allowed)
		(void)tkshm_release_at(t, &p, T0 + 5, TKSHM_OUTCOME_SUCCESS);
}

/* A holder that died: a child acquires and exits without releasing. */
static void
prepare_dead_holder(tkshm_table *t)
{
	pid_t pid = fork();
	if (pid == 0) {
		op_acquire(t);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
}

static void
op_reap(tkshm_table *t)
{
	(void)tkshm_reap(t, NULL);
}

/* --- leases ---------------------------------------------------------- */

/* An agent that looks alive, with Redis up, so checks spend credit (the
 * heartbeat is refreshed before every use: it goes stale after 1 s).
 * These stand in for the agent, another process: written with the raw
 * builtins, not shm/atomic.h, so that they are no crash point of the
 * operation under test. */
static void
agent_alive(tkshm_table *t)
{
	__atomic_store_n(&t->global->agent_pid, (uint64_t)getppid(),
			 __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->global->redis_up, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&t->global->agent_beat, tk_f64_word(tk_mono_ms()),
			 __ATOMIC_SEQ_CST);
}

static void
grant(tkshm_table *t, double units)
{
	struct tk_lease_grant g = { units, FAR };
	must(tk_lease_grant(t, "k", 1, T0, &g), "grant");
}

static long
follow_lease(tkshm_table *t)
{
	agent_alive(t);
	long a = count_checks(t, "k", 8, T0);
	/* A lease key is never stuck either: a new grant is spendable. */
	grant(t, 1);
	if (!check_key(t, "k", 1, T0))
		fail_msg("lease key k is stuck after a grant");
	return a;
}

static void
prepare_granted(tkshm_table *t)
{
	agent_alive(t);
	grant(t, 3);
}

static void
op_grant(tkshm_table *t)
{
	struct tk_lease_grant g = { 3, FAR };
	(void)tk_lease_grant(t, "k", 1, T0, &g);
}

static void
op_lease_spend(tkshm_table *t)
{
	agent_alive(t);
	op_check_k(t);
}

/* --- the machinery --------------------------------------------------- */

/* tkt_path() returns a rotating static buffer: keep our own copies. */
static char tpl_path[512], work_path[512], base_path[512], chained_path[512];

static void
set_paths(void)
{
	snprintf(tpl_path, sizeof tpl_path, "%s", tkt_path("template.tkshm"));
	snprintf(work_path, sizeof work_path, "%s", tkt_path("work.tkshm"));
	snprintf(base_path, sizeof base_path, "%s", tkt_path("base.tkshm"));
	snprintf(chained_path, sizeof chained_path, "%s",
		 tkt_path("chained.tkshm"));
}

static tkshm_table *
open_path(const struct scenario *s, const char *path, bool create)
{
	tkshm_policy p;
	char err[200];
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;

	if (tkshm_policy_parse(s->policy, &p, err, sizeof err) != TKSHM_OK)
		fail_msg("%s: policy: %s", s->name, err);
	o.policy = &p;
	o.slots = s->slots;
	o.flags = create ? TKSHM_O_CREATE : 0;
	must(tkshm_open(path, &o, &t), path);
	return t;
}

/* Runs op on a copy of `tpl` in a child armed at n (0: no crash).
 * Returns the child's writes when it completed (n == 0), or 0 when it was
 * killed as armed; anything else fails the test. */
static uint64_t
run_child(const struct scenario *s, void (*op)(tkshm_table *), const char *work,
	  uint64_t n)
{
	int fds[2];
	uint64_t writes = 0;
	int status;

	if (pipe(fds) != 0)
		fail_msg("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		alarm(20);
		tkshm_table *t = open_path(s, work, false);
		tk_crash_arm(n);
		op(t);
		writes = tk_crash_writes();
		tk_crash_arm(0);
		if (write(fds[1], &writes, sizeof writes) != sizeof writes)
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	ssize_t got = read(fds[0], &writes, sizeof writes);
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		fail_msg("waitpid: %s", strerror(errno));
	if (n == 0) {
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
		    got != sizeof writes)
			fail_msg("%s: the uncrashed run failed (status %#x)",
				 s->name, status);
		return writes;
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("%s: N=%" PRIu64 ": the child was not killed at its "
			 "write (status %#x, it made %" PRIu64 " writes)",
			 s->name, n, status, got == sizeof writes ? writes : 0);
	return 0;
}

static void
count_problem(void *ctx, const char *problem)
{
	const char *name = ctx;
	print_message("  %s: verify: %s\n", name, problem);
}

/* Verifies `path` and runs the follow-up; returns its admissions. */
static long
inspect(const struct scenario *s, const char *path, uint64_t n)
{
	tkshm_table *t = open_path(s, path, false);
	uint64_t problems = 0;

	must(tkshm_verify(t, count_problem, (void *)s->name, &problems),
	     "verify");
	if (problems != 0)
		fail_msg("%s: crash at write %" PRIu64 ": verify found %" PRIu64
			 " problem(s)",
			 s->name, n, problems);
	long a = s->follow(t);
	must(tkshm_close(t), "close");
	return a;
}

static unsigned long crashes_checked;

/* Enumerates every crash point of s->op on the template `tpl`. */
static void
enumerate(const struct scenario *s, const char *tpl)
{
	const char *work = work_path;
	long r0, r1, lo, hi;
	uint64_t w;

	tkt_copy_file(tpl, work);
	r0 = inspect(s, work, 0);
	tkt_copy_file(tpl, work);
	w = run_child(s, s->op, work, 0);
	r1 = inspect(s, work, 0);

	lo = r0 < r1 ? r0 : r1;
	hi = r0 < r1 ? r1 : r0;
	if (w == 0)
		fail_msg("%s: the operation wrote nothing", s->name);
	for (uint64_t n = 1; n <= w; n++) {
		tkt_copy_file(tpl, work);
		run_child(s, s->op, work, n);
		long a = inspect(s, work, n);
		if (a < lo || a > hi)
			fail_msg("%s: crash at write %" PRIu64 " of %" PRIu64
				 ": the follow-up got %ld, outside "
				 "[%ld (completed/not), %ld]",
				 s->name, n, w, a, lo, hi);
		crashes_checked++;
	}
}

static const char *
make_template(const struct scenario *s)
{
	const char *tpl = tpl_path;
	unlink(tpl);
	tkshm_table *t = open_path(s, tpl, true);
	s->prepare(t);
	must(tkshm_close(t), "close");
	return tpl;
}

static void
run_scenario(const struct scenario *s, double now)
{
	unsigned long before = crashes_checked;
	op_now = now;
	enumerate(s, make_template(s));
	print_message("  %-34s %lu crash points\n", s->name,
		      crashes_checked - before);
}

/* Every crash point of a first operation, then every crash point of the
 * same operation run again over what the first left (a placeholder, a
 * half-claimed wide state: the duplicate and stolen-claim paths). */
static void
run_chained(const struct scenario *s, double now)
{
	const char *base = base_path;
	const char *tpl = chained_path;
	unsigned long before = crashes_checked;
	uint64_t w;

	op_now = now;
	tkt_copy_file(make_template(s), base);
	tkt_copy_file(base, tpl);
	w = run_child(s, s->op, tpl, 0);
	for (uint64_t n1 = 1; n1 <= w; n1++) {
		tkt_copy_file(base, tpl);
		run_child(s, s->op, tpl, n1);
		enumerate(s, tpl);
	}
	print_message("  %-34s %lu crash points (chained)\n", s->name,
		      crashes_checked - before);
}

/* --- the tests ------------------------------------------------------- */

#define GCRA "gcra:limit=5,periodMs=1000"

static const struct scenario gcra_claim = {
	"gcra claim", GCRA, 8, prepare_none, op_check_k, follow_rate
};
static const struct scenario gcra_update = {
	"gcra update", GCRA, 8, prepare_k, op_check_k, follow_rate
};
static const struct scenario gcra_reclaim = {
	"gcra reclaim", GCRA, 8, prepare_idle_fillers, op_check_k, follow_rate
};
static const struct scenario gcra_evict = {
	"gcra evict", GCRA, 8, prepare_debtors, op_check_k, follow_rate
};

static void
test_gcra(void **state)
{
	(void)state;
	run_scenario(&gcra_claim, T0);
	run_scenario(&gcra_update, T0 + 1);
	run_scenario(&gcra_reclaim, T0 + DAYS2);
	run_scenario(&gcra_evict, T0);
	run_chained(&gcra_claim, T0);
}

static const char *const wide_policies[] = {
	"tokenBucket:capacity=5,refillPerSec=5",
	"fixedWindow:limit=5,windowMs=1000",
	"slidingWindow:limit=5,windowMs=1000,buckets=4",
	"slidingWindowLog:limit=5,windowMs=1000",
	"quota:limit=5,resetCadence=calendar-day",
	"tokenBudget:budget=5,windowMs=1000",
};

static void
test_wide_states(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof wide_policies / sizeof *wide_policies;
	     i++) {
		struct scenario claim = {
			wide_policies[i], wide_policies[i], 8,
			prepare_none,	  op_check_k,	    follow_rate
		};
		struct scenario update = claim;
		struct scenario reclaim = claim;
		update.prepare = prepare_k;
		reclaim.prepare = prepare_idle_fillers;
		run_scenario(&claim, T0);
		run_scenario(&update, T0 + 1);
		run_scenario(&reclaim, T0 + DAYS2);
		if (i == 0)
			run_chained(&claim, T0);
	}
}

/* A reset crashed at each of its writes: the follow-up gets between what
 * the spent key gets (no reset) and what a fresh key gets (reset done). */
static void
test_reset(void **state)
{
	static const struct scenario gcra_reset = {
		"gcra reset", GCRA, 8, prepare_k_spent, op_reset_k, follow_rate
	};
	static const struct scenario wide_reset = {
		"tokenBucket reset",
		"tokenBucket:capacity=5,refillPerSec=5",
		8,
		prepare_k_spent,
		op_reset_k,
		follow_rate
	};
	(void)state;
	run_scenario(&gcra_reset, T0);
	run_scenario(&wide_reset, T0);
}

static void
test_permits(void **state)
{
	static const struct scenario acquire = {
		"permit acquire", "concurrency:limit=3", 8, prepare_none,
		op_acquire,	  follow_permits
	};
	static const struct scenario release = { "permit acquire+release",
						 "concurrency:limit=3",
						 8,
						 prepare_none,
						 op_acquire_release,
						 follow_permits };
	static const struct scenario reap = {
		"permit reap", "concurrency:limit=3", 8, prepare_dead_holder,
		op_reap,       follow_permits
	};
	(void)state;
	run_scenario(&acquire, T0);
	run_scenario(&release, T0);
	run_scenario(&reap, T0);
}

static void
test_leases(void **state)
{
	static const struct scenario grant_sc = {
		"lease grant",
		"fixedWindow:limit=9,windowMs=60000;mode=lease,"
		"failure=fail-closed,prefix=cp",
		8,
		prepare_none,
		op_grant,
		follow_lease
	};
	static const struct scenario spend = {
		"lease spend",
		"fixedWindow:limit=9,windowMs=60000;mode=lease,"
		"failure=fail-closed,prefix=cp",
		8,
		prepare_granted,
		op_lease_spend,
		follow_lease
	};
	(void)state;
	run_scenario(&grant_sc, T0);
	run_scenario(&spend, T0);
}

static int
setup(void **state)
{
	(void)state;
	set_paths();
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	print_message("crash points checked: %lu\n", crashes_checked);
	tkt_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gcra),
		cmocka_unit_test(test_wide_states),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_permits),
		cmocka_unit_test(test_leases),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
