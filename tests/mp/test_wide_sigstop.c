/*
 * test_wide_sigstop.c - a process stopped (SIGSTOP) while it holds a claim
 * on a hot wide key (src/shm/wide.c, protocol.h W2-W4) does not hold up the
 * others: they steal its claim and keep their throughput; when it resumes,
 * its late writes land nowhere anybody reads (W3, W8), its publish fails
 * (W4), it starts over, and nothing is lost or counted twice.
 *
 * Two scenarios, one hot key each, checked by NWORKERS worker processes at
 * one fixed `now` with a limit so large that every check is admitted, so
 * that every check claims, writes and publishes:
 *   slidingWindow limit 1e12, 64 buckets: 130-unit records, long claims;
 *   slidingWindow limit 1e12, 2 buckets: 6-unit records, short claims.
 *   tokenBucket capacity 1e12: a pair (P1-P9), no claims: part 3 below
 *   stops worker 0 wherever it is instead of inside a claim.
 * All counts stay integers far below 2^53, so the key's state is exact:
 * after the run, limit - peek.remaining must equal the number of
 * admissions the workers reported (one lost update, a stale record
 * published, or an admission applied twice would show).
 *
 * Each scenario:
 *   1. baseline: all run; the checks per 100 ms of workers 1 and 2
 *      (median of WINDOWS windows);
 *   2. STOP_CYCLES SIGSTOP/SIGCONT cycles of worker 0 at random moments;
 *      during each stop workers 1 and 2 must complete PROGRESS_CHECKS
 *      checks (deadline STALL_S): a stop inside a claim they could not
 *      steal would leave them stuck.  claims_stolen is sampled around each
 *      stop (a stop that caught worker 0 mid-claim makes it grow);
 *   3. a deterministic stop inside a claim: workers 1 and 2 park (outside
 *      any call), worker 0 runs alone and is stopped at random moments
 *      until the key's control word, read through the internal headers,
 *      shows a claim (D != 0): it is worker 0's, the only writer.  Workers
 *      1 and 2 are released: they must make progress, claims_stolen must
 *      grow and the control word must move on; with worker 0 still
 *      stopped their throughput must stay >= MIN_RATIO of the baseline
 *      (up to ATTEMPTS measurements, each with a new baseline, as
 *      wall-clock figures can be skewed by another program); tkshm_verify
 *      is clean while it is stopped;
 *   4. SIGCONT: worker 0 resumes inside its stolen claim and must make
 *      progress; everything stops; tkshm_verify is clean and the exact
 *      accounting above holds (and stats: allowed == admissions, denied
 *      == 0).
 * The one timing assertion is 3 (labelled serial).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mp_util.h"
#include "shm/table.h"
#include "shm/wide.h"

#define NWORKERS	3
#define NOW		1.7e12
#define LIMIT		1e12
#define WINDOWS		9
#define WINDOW_US	100000
#define STOP_CYCLES	150
#define PROGRESS_CHECKS 500
#define STALL_S		5.0
#define FORCE_TRIES	3000
#define MIN_RATIO	0.5
#define ATTEMPTS	3

static const char *const specs[] = {
	"slidingWindow:limit=1e12,windowMs=1000,buckets=64",
	"slidingWindow:limit=1e12,windowMs=1000,buckets=2",
	/* A pair: no claim to steal; a stop anywhere must block nobody. */
	"tokenBucket:capacity=1e12,refillPerSec=1",
};

static const char hot_key[] = "the-hot-key";

struct stop_shared {
	uint64_t seed;
	int stop;
	int park; /* workers 1.. park while set */
	int parked[NWORKERS];
	uint64_t checks[NWORKERS]; /* all admitted */
};

static struct stop_shared *sh;
static tkshm_table *table;
static const char *spec;

/* Fails with the failure a child recorded.  mp_fail_now raises the flag
 * before it writes the message, so wait for the message a moment. */
static void
fail_recorded(void)
{
	double t0 = tkt_seconds();

	while (__atomic_load_n(&mp_failure->msg[0], __ATOMIC_ACQUIRE) == 0 &&
	       tkt_seconds() - t0 < 2)
		mp_sleep_us(1000);
	fail_msg("%s", mp_failure->msg);
}

static int
worker(void *p)
{
	int w = (int)(intptr_t)p;

	/* Below the test process, so that its short sleeps end on time. */
	errno = 0;
	if (nice(5) == -1 && errno != 0)
		MP_REQUIRE(0, "nice: %s", strerror(errno));
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		tkshm_decision d;
		int rc;

		if (w > 0 && __atomic_load_n(&sh->park, __ATOMIC_ACQUIRE)) {
			/* Outside any call until released. */
			__atomic_store_n(&sh->parked[w], 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&sh->park, __ATOMIC_ACQUIRE) &&
			       !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE))
				mp_sleep_us(100);
			__atomic_store_n(&sh->parked[w], 0, __ATOMIC_RELEASE);
			continue;
		}
		rc = tkshm_check_at(table, hot_key, sizeof hot_key - 1, 1, NOW,
				    &d);
		MP_REQUIRE(rc == TKSHM_OK && d.allowed && d.remaining >= 0,
			   "%s: worker %d: %s allowed %d remaining %lld", spec,
			   w, tkshm_error_name(rc), d.allowed,
			   (long long)d.remaining);
		/* One writer per counter. */
		__atomic_fetch_add(&sh->checks[w], 1, __ATOMIC_RELEASE);
	}
	return 0;
}

static uint64_t
checks_of(int w)
{
	return __atomic_load_n(&sh->checks[w], __ATOMIC_ACQUIRE);
}

static uint64_t
others(void)
{
	uint64_t s = 0;

	for (int w = 1; w < NWORKERS; w++)
		s += checks_of(w);
	return s;
}

static uint64_t
stolen(void)
{
	tkshm_stats st;

	assert_int_equal(tkshm_stats_get(table, &st), TKSHM_OK);
	return st.claims_stolen;
}

/* The hot key's control word (0 when it is not in the table). */
static uint64_t
hot_control(void)
{
	struct tk_where w;
	uint64_t ctl = 0;

	tk_where_of(table, tk_key_fp(table, hot_key, sizeof hot_key - 1), &w);
	if (tk_find_real(table, &w, &ctl) < 0)
		return 0;
	return ctl;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median over WINDOWS windows of workers 1.. checks per 100 ms. */
static double
measure(void)
{
	double r[WINDOWS];

	for (int i = 0; i < WINDOWS; i++) {
		uint64_t o0 = others(), o1;
		double t0 = tkt_seconds(), t1;

		mp_sleep_us(WINDOW_US);
		o1 = others();
		t1 = tkt_seconds();
		r[i] = (double)(o1 - o0) * 0.1 / (t1 - t0);
	}
	qsort(r, WINDOWS, sizeof r[0], cmp_double);
	return r[WINDOWS / 2];
}

static void
wait_state(pid_t pid, int options)
{
	int status;
	pid_t r;

	do {
		r = waitpid(pid, &status, options);
	} while (r < 0 && errno == EINTR);
	if (r != pid)
		fail_msg("waitpid: %s", strerror(errno));
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		/* It ended: a failure in the worker (reaped here, so the
		 * teardown's waitpid just finds it gone). */
		mp_expect_ok(status, "worker 0");
		fail_msg("worker 0 exited");
	}
	if ((options & WUNTRACED) && !WIFSTOPPED(status))
		fail_msg("worker 0 did not stop (status %#x)", status);
	if ((options & WCONTINUED) && !WIFCONTINUED(status))
		fail_msg("worker 0 did not continue (status %#x)", status);
}

static void
stop0(pid_t pid)
{
	assert_int_equal(kill(pid, SIGSTOP), 0);
	wait_state(pid, WUNTRACED);
}

static void
cont0(pid_t pid)
{
	assert_int_equal(kill(pid, SIGCONT), 0);
	wait_state(pid, WCONTINUED);
}

/* Workers 1.. must complete `n` checks within STALL_S. */
static void
require_progress(uint64_t n, const char *when)
{
	uint64_t o0 = others();
	double t0 = tkt_seconds();

	while (others() < o0 + n) {
		if (mp_failed())
			fail_recorded();
		if (tkt_seconds() - t0 > STALL_S)
			fail_msg("%s: %s: workers 1 and 2 completed %llu "
				 "checks in %.0f s while worker 0 was stopped: "
				 "they wait for it (control word %#llx)",
				 spec, when,
				 (unsigned long long)(others() - o0), STALL_S,
				 (unsigned long long)hot_control());
		mp_sleep_us(50);
	}
}

static void
park_others(bool on)
{
	double t0 = tkt_seconds();

	__atomic_store_n(&sh->park, on ? 1 : 0, __ATOMIC_RELEASE);
	if (!on)
		return;
	for (int w = 1; w < NWORKERS; w++)
		while (!__atomic_load_n(&sh->parked[w], __ATOMIC_ACQUIRE)) {
			if (mp_failed())
				fail_recorded();
			if (tkt_seconds() - t0 > STALL_S)
				fail_msg("%s: worker %d does not park", spec,
					 w);
			mp_sleep_us(50);
		}
}

/* Stops worker 0 inside a claim of the hot key (found by reading the
 * control word while it writes alone), then lets workers 1 and 2 run:
 * they must steal the claim and move the control word on. */
static void
stop_inside_claim(pid_t *pid, uint64_t *rng, const char *s)
{
	uint64_t tries = 0, st0, ctl0;

	park_others(true);
	for (;;) {
		uint64_t ctl;

		if (++tries > FORCE_TRIES)
			fail_msg("%s: %d stops of the only writer, none inside "
				 "a claim",
				 s, FORCE_TRIES);
		mp_sleep_us(mp_rand_below(rng, 300));
		stop0(pid[0]);
		ctl = hot_control();
		if (ctl != 0 && tk_ctl_claim(ctl) != 0)
			break;
		cont0(pid[0]);
	}
	ctl0 = hot_control();
	st0 = stolen();
	park_others(false);
	require_progress(PROGRESS_CHECKS, "stop inside a claim");
	if (stolen() <= st0)
		fail_msg("%s: workers 1 and 2 got past worker 0's claim "
			 "(control %#llx) without stealing it",
			 s, (unsigned long long)ctl0);
	if (hot_control() == ctl0)
		fail_msg("%s: the control word did not move", s);
}

static void
scenario(const char *s, uint64_t *rng)
{
	pid_t pid[NWORKERS];
	double base, stopped = 0, t0 = tkt_seconds();
	uint64_t cycles_stealing = 0, c0, total = 0;
	tkshm_decision d;
	tkshm_stats st;

	spec = s;
	table = tkt_anon(s, 64);
	memset(sh, 0, sizeof *sh);
	sh->seed = mp_rand(rng);
	for (int w = 0; w < NWORKERS; w++)
		pid[w] = mp_spawn(worker, (void *)(intptr_t)w);

	/* 1. Baseline. */
	mp_sleep_us(200000);
	base = measure();

	/* 2. Random stops. */
	for (int i = 0; i < STOP_CYCLES; i++) {
		uint64_t before;

		mp_sleep_us(mp_rand_below(rng, 1000));
		before = stolen();
		stop0(pid[0]);
		require_progress(PROGRESS_CHECKS, "random stop");
		cycles_stealing += stolen() > before;
		mp_sleep_us(mp_rand_below(rng, 1000));
		cont0(pid[0]);
	}

	/* 3. A stop inside worker 0's claim, found by reading the control
	 * word while it writes alone.  A pair (P1-P9) has no claim: worker
	 * 0 is stopped wherever it is, between a read and its CAS or not. */
	if (table->pairs)
		stop0(pid[0]);
	else
		stop_inside_claim(pid, rng, s);
	c0 = checks_of(0);
	for (int attempt = 1;; attempt++) {
		stopped = measure();
		assert_int_equal(checks_of(0), c0);
		mp_verify(table, "while worker 0 is stopped");
		print_message("%s attempt %d: workers 1+2 made %.0f checks per "
			      "100 ms with worker 0 stopped inside its claim, "
			      "%.0f with all running (ratio %.2f, required "
			      ">= %.2f)\n",
			      s, attempt, stopped, base, stopped / base,
			      MIN_RATIO);
		assert_true(base > 0);
		if (stopped >= MIN_RATIO * base)
			break;
		if (attempt == ATTEMPTS)
			fail_msg("%s: with worker 0 stopped, workers 1+2 made "
				 "%.0f checks per 100 ms, %.1f%% of the %.0f "
				 "they made before (%d attempts)",
				 s, stopped, 100 * stopped / base, base,
				 ATTEMPTS);
		cont0(pid[0]);
		base = measure();
		/* Stopped again, anywhere: the ratio is what is measured. */
		stop0(pid[0]);
		c0 = checks_of(0);
	}

	/* 4. Worker 0 resumes (inside its stolen claim the first time). */
	cont0(pid[0]);
	{
		double end = tkt_seconds() + 10;

		while (checks_of(0) < c0 + 1000) {
			if (mp_failed())
				fail_recorded();
			if (tkt_seconds() > end)
				fail_msg("%s: worker 0 made no progress after "
					 "SIGCONT",
					 s);
			mp_sleep_us(1000);
		}
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	mp_wait_all(30);
	mp_verify(table, "after SIGCONT");

	for (int w = 0; w < NWORKERS; w++)
		total += sh->checks[w];
	assert_int_equal(
		tkshm_peek_at(table, hot_key, sizeof hot_key - 1, NOW, &d),
		TKSHM_OK);
	assert_int_equal(tkshm_stats_get(table, &st), TKSHM_OK);
	print_message("%s: %.2f s; %llu admissions; %llu of %d random stops "
		      "saw a claim stolen; claims_stolen %llu cas_retries "
		      "%llu; limit - remaining = %.0f\n",
		      s, tkt_seconds() - t0, (unsigned long long)total,
		      (unsigned long long)cycles_stealing, STOP_CYCLES,
		      (unsigned long long)st.claims_stolen,
		      (unsigned long long)st.cas_retries,
		      LIMIT - (double)d.remaining);
	if (LIMIT - (double)d.remaining != (double)total)
		fail_msg("%s: %llu admissions reported, but the key's state "
			 "holds %.0f",
			 s, (unsigned long long)total,
			 LIMIT - (double)d.remaining);
	assert_int_equal(st.allowed, total);
	assert_int_equal(st.denied, 0);
	/* A pair has no claims; a record's claims were stolen (part 3). */
	assert_true(table->pairs ? st.claims_stolen == 0 :
				   st.claims_stolen > 0);
	tkshm_close(table);
	table = NULL;
}

static void
wide_sigstop(void **state)
{
	uint64_t rng = mp_seed();

	(void)state;
	print_message("seed %#llx (set MP_SEED to replay)\n",
		      (unsigned long long)rng);
	sh = tkt_shared(sizeof *sh);
	for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
		scenario(specs[i], &rng);
	tkt_shared_free(sh, sizeof *sh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(wide_sigstop, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
