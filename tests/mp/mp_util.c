/*
 * mp_util.c - see mp_util.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mp_util.h"

/* Children die by themselves after this long whatever happens (the longest
 * test runs well under a minute even with sanitizers). */
#define MP_CHILD_ALARM_S 240

#define MP_MAX_CHILDREN 256

/* Pause iterations before a barrier waiter starts yielding (tens of us). */
#define MP_BARRIER_SPINS 2048

struct mp_fail *mp_failure;

static void
mp_default_fail_exit(void)
{
	_exit(1);
}

void (*mp_fail_exit)(void) = mp_default_fail_exit;

static pid_t mp_children[MP_MAX_CHILDREN];
static int mp_nchildren;

void
mp_fail_now(const char *file, int line, const char *fmt, ...)
{
	if (mp_failure && __atomic_exchange_n(&mp_failure->failed, 1,
					      __ATOMIC_ACQ_REL) == 0) {
		va_list ap;
		int n = snprintf(mp_failure->msg, sizeof mp_failure->msg,
				 "%s:%d: (pid %d) ", file, line, (int)getpid());

		if (n < 0 || (size_t)n >= sizeof mp_failure->msg)
			n = 0;
		va_start(ap, fmt);
		vsnprintf(mp_failure->msg + n,
			  sizeof mp_failure->msg - (size_t)n, fmt, ap);
		va_end(ap);
	}
	mp_fail_exit();
	_exit(1); /* mp_fail_exit does not return; keep noreturn honest */
}

bool
mp_failed(void)
{
	return mp_failure &&
	       __atomic_load_n(&mp_failure->failed, __ATOMIC_ACQUIRE) != 0;
}

int
mp_setup(void **state)
{
	(void)state;
	if (!mp_failure)
		mp_failure = tkt_shared(sizeof *mp_failure);
	return 0;
}

int
mp_teardown(void **state)
{
	(void)state;
	mp_kill_all();
	if (mp_failure)
		memset(mp_failure, 0, sizeof *mp_failure);
	return 0;
}

static void
mp_register(pid_t pid)
{
	if (mp_nchildren == MP_MAX_CHILDREN) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("more than %d children", MP_MAX_CHILDREN);
	}
	mp_children[mp_nchildren++] = pid;
}

static void
mp_unregister(pid_t pid)
{
	for (int i = 0; i < mp_nchildren; i++)
		if (mp_children[i] == pid) {
			mp_children[i] = mp_children[--mp_nchildren];
			return;
		}
}

pid_t
mp_spawn(int (*fn)(void *), void *arg)
{
	pid_t parent = getpid();
	pid_t pid;

	/* Nothing buffered may be written twice. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		int rc;

		/* Never outlive the test process, never run forever. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(2);
		alarm(MP_CHILD_ALARM_S);
		rc = fn(arg);
		_exit(rc);
	}
	mp_register(pid);
	return pid;
}

int
mp_reap(pid_t pid)
{
	int status;
	pid_t r;

	do {
		r = waitpid(pid, &status, 0);
	} while (r < 0 && errno == EINTR);
	if (r != pid)
		fail_msg("waitpid(%d): %s", (int)pid, strerror(errno));
	mp_unregister(pid);
	return status;
}

bool
mp_try_reap(pid_t pid, int *status)
{
	pid_t r;

	do {
		r = waitpid(pid, status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		fail_msg("waitpid(%d): %s", (int)pid, strerror(errno));
	if (r == 0)
		return false;
	mp_unregister(pid);
	return true;
}

void
mp_expect_ok(int status, const char *what)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status))
		fail_msg("%s died of signal %d%s%s", what, WTERMSIG(status),
			 mp_failed() ? "; first failure: " : "",
			 mp_failed() ? mp_failure->msg : "");
	fail_msg("%s exited with status %d%s%s", what,
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		 mp_failed() ? "; first failure: " : "",
		 mp_failed() ? mp_failure->msg : "");
}

void
mp_wait_all(double deadline_s)
{
	double end = tkt_seconds() + deadline_s;

	while (mp_nchildren > 0) {
		int status;
		pid_t r = waitpid(-1, &status, WNOHANG);

		if (r < 0 && errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
		if (r > 0) {
			mp_unregister(r);
			/* A failing child: the teardown kills the rest. */
			mp_expect_ok(status, "a child");
			continue;
		}
		if (tkt_seconds() > end) {
			int n = mp_nchildren;
			mp_kill_all();
			fail_msg("%d children still running after %.0f s "
				 "(killed)%s%s",
				 n, deadline_s,
				 mp_failed() ? "; first failure: " : "",
				 mp_failed() ? mp_failure->msg : "");
		}
		mp_sleep_us(2000);
	}
	if (mp_failed())
		fail_msg("%s", mp_failure->msg);
}

void
mp_kill_all(void)
{
	for (int i = 0; i < mp_nchildren; i++) {
		kill(mp_children[i], SIGKILL);
		kill(mp_children[i], SIGCONT);
	}
	while (mp_nchildren > 0) {
		pid_t pid = mp_children[mp_nchildren - 1];
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		mp_nchildren--;
	}
}

int
mp_live_children(void)
{
	return mp_nchildren;
}

/* --- barrier ---------------------------------------------------------- */

bool
mp_barrier_wait(struct mp_barrier *b)
{
	uint32_t g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
	double start = 0;
	unsigned long spins = 0;

	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == b->n) {
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->gen, g + 1, __ATOMIC_RELEASE);
		return !mp_failed();
	}
	while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g) {
		spins++;
		/* Pause-spin first, so that the waiters that are on a CPU when
		 * the last one arrives leave within nanoseconds of each other
		 * (that is what makes them collide); then yield the CPU to the
		 * participants that still have to arrive. */
		if (spins < MP_BARRIER_SPINS) {
			__builtin_ia32_pause();
			continue;
		}
		sched_yield();
		if (spins % 256 == 0) {
			if (mp_failed())
				return false;
			if (start == 0)
				start = tkt_seconds();
			else if (tkt_seconds() - start > MP_BARRIER_TIMEOUT_S) {
				/* Records the failure (and exits a child). */
				mp_fail_now(__FILE__, __LINE__,
					    "barrier timed out (%u of %u "
					    "arrived)",
					    __atomic_load_n(&b->count,
							    __ATOMIC_RELAXED),
					    b->n);
			}
		}
	}
	return !mp_failed();
}

/* --- randomness ------------------------------------------------------- */

uint64_t
mp_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

uint64_t
mp_rand_below(uint64_t *s, uint64_t n)
{
	return n ? mp_rand(s) % n : 0;
}

uint64_t
mp_seed(void)
{
	const char *e = getenv("MP_SEED");
	struct timespec ts;

	if (e && *e)
		return strtoull(e, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
	       (uint64_t)getpid() << 16;
}

void
mp_shuffle(uint32_t *a, size_t n, uint64_t *s)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)mp_rand_below(s, i);
		uint32_t x = a[i - 1];
		a[i - 1] = a[j];
		a[j] = x;
	}
}

/* --- tables and time -------------------------------------------------- */

tkshm_table *
mp_table(double limit, double period_ms, double burst, uint64_t slots,
	 tkshm_on_full on_full)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc = tkshm_policy_gcra(&p, limit, period_ms, burst);

	if (rc != TKSHM_OK)
		fail_msg("tkshm_policy_gcra(%g, %g, %g): %s", limit, period_ms,
			 burst, tkshm_strerror(rc));
	o.policy = &p;
	o.slots = slots;
	o.on_full = on_full;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(NULL, &o, &t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_open(anonymous): %s (%s)", tkshm_strerror(rc),
			 err);
	return t;
}

static void
mp_print_problem(void *ctx, const char *problem)
{
	const char *when = ctx;

	print_error("verify (%s): %s\n", when, problem);
}

void
mp_verify(tkshm_table *t, const char *when)
{
	uint64_t problems = 0;
	int rc = tkshm_verify(t, mp_print_problem, (void *)when, &problems);

	if (rc != TKSHM_OK || problems != 0)
		fail_msg("tkshm_verify (%s): %s, %llu problems", when,
			 tkshm_strerror(rc), (unsigned long long)problems);
}

static uint64_t
mp_double_bits(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	return b;
}

double
mp_bits_double(uint64_t bits)
{
	double v;
	memcpy(&v, &bits, sizeof v);
	return v;
}

void
mp_atomic_min_pos(uint64_t *cell, double v)
{
	uint64_t nb = mp_double_bits(v);
	uint64_t cur = __atomic_load_n(cell, __ATOMIC_RELAXED);

	while ((cur == 0 || nb < cur) &&
	       !__atomic_compare_exchange_n(cell, &cur, nb, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void
mp_atomic_max_pos(uint64_t *cell, double v)
{
	uint64_t nb = mp_double_bits(v);
	uint64_t cur = __atomic_load_n(cell, __ATOMIC_RELAXED);

	while (nb > cur &&
	       !__atomic_compare_exchange_n(cell, &cur, nb, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void
mp_sleep_us(uint64_t us)
{
	struct timespec ts = { (time_t)(us / 1000000),
			       (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}
