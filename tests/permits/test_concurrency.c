/*
 * test_concurrency.c - concurrency limits in one process: the pure
 * transitions of src/algorithms/concurrency.h (C1-C4, gradient2, AIMD), the
 * liveness reading of src/base/proc.c, and the public calls on a real
 * table (exactly-once release, a forked child cannot release its parent's
 * permit, refusals write nothing, bad input changes nothing).
 */
#define _GNU_SOURCE
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algorithms/algorithm.h"
#include "base/proc.h"
#include "test_support.h"

static struct tk_algo
algo_of(const char *spec)
{
	tkshm_policy p = tkt_policy(spec);
	struct tk_algo a;

	assert_rc(tk_algo_init(&a, &p, NULL, 0), TKSHM_OK);
	a.u.conc.host = 77;
	return a;
}

/* C1: exactly `limit` acquires are granted, whoever asks, and each lands
 * in its own cell; the next is refused with remaining 0. */
static void
test_acquire_up_to_limit(void **state)
{
	struct tk_algo a = algo_of("concurrency:limit=5");
	const struct tk_conc *c = &a.u.conc;
	uint64_t st[TK_CONC_MAX_WORDS] = { 0 }, next[TK_CONC_MAX_WORDS];
	bool present = false;
	tkshm_decision d;
	uint32_t cell = 0, used = 0;

	(void)state;
	assert_int_equal(a.words, TK_CONC_HEAD + 5);
	for (unsigned i = 0; i < 5; i++) {
		assert_true(tk_conc_acquire(c, present, st, 1000, 0x100 + i, 0,
					    next, &cell, &d));
		assert_true(d.allowed);
		assert_int_equal(d.limit, 5);
		assert_int_equal(d.remaining, 4 - i);
		assert_int_equal(next[TK_CONC_HEAD + cell], 0x100 + i);
		assert_false(used & (1u << cell));
		used |= 1u << cell;
		memcpy(st, next, sizeof next);
		present = true;
		assert_int_equal(tk_conc_held(c, st), i + 1);
	}
	assert_false(
		tk_conc_acquire(c, true, st, 1000, 0x999, 0, next, &cell, &d));
	assert_false(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(d.retry_after_ms, 0);
	assert_int_equal(d.reset_at, 1000);
	tk_conc_peek(c, true, st, 1000.5, &d);
	assert_false(d.allowed);
	assert_int_equal(d.reset_at, 1001);
	assert_false(tk_conc_is_idle(c, st, 1e12));
}

/* C2: only the holder's word in the named cell releases it, once. */
static void
test_release_exactly(void **state)
{
	struct tk_algo a = algo_of("concurrency:limit=3");
	const struct tk_conc *c = &a.u.conc;
	uint64_t st[TK_CONC_MAX_WORDS] = { 0 }, next[TK_CONC_MAX_WORDS];
	tkshm_decision d;
	uint32_t c1 = 0, c2 = 0;

	(void)state;
	assert_true(tk_conc_acquire(c, false, st, 5, 0xA, 0, next, &c1, &d));
	memcpy(st, next, sizeof next);
	assert_true(tk_conc_acquire(c, true, st, 5, 0xB, 0, next, &c2, &d));
	memcpy(st, next, sizeof next);
	assert_int_not_equal(c1, c2);
	/* The wrong holder, a wrong cell, a cell out of range: no. */
	assert_false(tk_conc_release(c, true, st, 6, 0xB, c1, false, 0, false,
				     next));
	assert_false(tk_conc_release(c, true, st, 6, 0xA, c2, false, 0, false,
				     next));
	assert_false(
		tk_conc_release(c, true, st, 6, 0xA, 3, false, 0, false, next));
	assert_false(
		tk_conc_release(c, true, st, 6, 0, 2, false, 0, false, next));
	assert_false(tk_conc_release(c, false, st, 6, 0xA, c1, false, 0, false,
				     next));
	assert_true(tk_conc_release(c, true, st, 6, 0xA, c1, false, 0, false,
				    next));
	memcpy(st, next, sizeof next);
	assert_int_equal(tk_conc_held(c, st), 1);
	assert_false(tk_conc_release(c, true, st, 7, 0xA, c1, false, 0, false,
				     next));
	assert_true(tk_conc_release(c, true, st, 7, 0xB, c2, false, 0, false,
				    next));
	memcpy(st, next, sizeof next);
	assert_true(tk_conc_is_idle(c, st, 7));
}

/* C3: a reap frees the cells of the dead holders only; cells written in
 * another boot hold nobody. */
static void
test_reap_and_other_boot(void **state)
{
	struct tk_algo a = algo_of("concurrency:limit=4");
	struct tk_conc c = a.u.conc;
	uint64_t st[TK_CONC_MAX_WORDS] = { 0 }, next[TK_CONC_MAX_WORDS];
	const uint64_t holders[4] = { 0x11, 0x22, 0x11, 0x33 };
	const uint64_t dead[2] = { 0x11, 0x44 };
	tkshm_decision d;
	uint32_t cell = 0;

	(void)state;
	tk_conc_fresh(&c, st);
	for (unsigned i = 0; i < 4; i++) {
		assert_true(tk_conc_acquire(&c, true, st, 1, holders[i], 0,
					    next, &cell, &d));
		memcpy(st, next, sizeof next);
	}
	assert_int_equal(tk_conc_reap(&c, true, st, dead, 2, next), 2);
	assert_int_equal(tk_conc_held(&c, next), 2);
	for (unsigned i = 0; i < 4; i++)
		assert_true(next[TK_CONC_HEAD + i] != 0x11);
	/* Nobody dead among the holders: nothing to write. */
	memcpy(st, next, sizeof next);
	assert_int_equal(tk_conc_reap(&c, true, st, dead, 2, next), 0);
	/* After a reboot (another host tag), the old cells are free. */
	c.host = 78;
	tk_conc_peek(&c, true, st, 1, &d);
	assert_int_equal(d.remaining, 4);
	assert_true(tk_conc_is_idle(&c, st, 1));
	assert_true(tk_conc_acquire(&c, true, st, 1, 0x55, 0, next, &cell, &d));
	assert_int_equal(next[TK_CONC_W_HOST], 78);
	assert_int_equal(tk_conc_held(&c, next), 1);
}

/* gradient2, computed by hand for a few samples. */
static void
test_gradient2_math(void **state)
{
	struct tk_algo a =
		algo_of("adaptiveConcurrency:initialLimit=10,maxLimit=50,"
			"rttWindowMs=1000,smoothing=0.5,tolerance=1.5");
	const struct tk_conc *c = &a.u.conc;
	uint64_t w[TK_CONC_MAX_WORDS];
	double limit = 10, g, nl;

	(void)state;
	assert_int_equal(c->cap, 50);
	tk_conc_fresh(c, w);
	/* First sample: rttNoLoad = rtt, gradient 1: limit + sqrt grows. */
	tk_conc_sample(c, w, 100, 20, 10, false);
	nl = limit * 1.0 + sqrt(limit);
	limit = limit * 0.5 + nl * 0.5;
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == limit);
	/* A slow sample: gradient 1.5 * 20 / 60 = 0.5. */
	tk_conc_sample(c, w, 200, 60, 12, false);
	g = 1.5 * 20 / 60;
	nl = limit * g + sqrt(limit);
	limit = limit * 0.5 + nl * 0.5;
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == limit);
	/* App-limited (inflight < limit / 2): the limit stays. */
	tk_conc_sample(c, w, 300, 60, 2, false);
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == limit);
	/* Gradient floor 0.5 for a very slow sample. */
	tk_conc_sample(c, w, 400, 2000, 20, false);
	nl = limit * 0.5 + sqrt(limit);
	limit = limit * 0.5 + nl * 0.5;
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == limit);
	/* A caller whose clock lags the window's start samples into the
	 * current window; it erases nothing. */
	tk_conc_sample(c, w, 50, 25, 20, false);
	assert_true(tk_word_f64(w[TK_CONC_W_CUR_MIN]) == 20);
	assert_true(tk_word_f64(w[TK_CONC_W_WIN_START]) == 100);
	limit = tk_word_f64(w[TK_CONC_W_LIMIT]);
	/* The window rolls: the old minimum stays one more window. */
	tk_conc_sample(c, w, 1500, 40, 20, false);
	assert_true(tk_word_f64(w[TK_CONC_W_PREV_MIN]) == 20);
	assert_true(tk_word_f64(w[TK_CONC_W_CUR_MIN]) == 40);
	/* ... and is forgotten after two. */
	tk_conc_sample(c, w, 4000, 50, 20, false);
	assert_true(tk_word_f64(w[TK_CONC_W_PREV_MIN]) == 0);
	assert_true(tk_word_f64(w[TK_CONC_W_CUR_MIN]) == 50);
	assert_true(tk_conc_state_valid(c, w));
}

/* The limit stays within [minLimit, maxLimit] whatever the samples. */
static void
test_gradient2_clamps(void **state)
{
	struct tk_algo a = algo_of("adaptiveConcurrency:initialLimit=8,"
				   "minLimit=4,maxLimit=16");
	const struct tk_conc *c = &a.u.conc;
	uint64_t w[TK_CONC_MAX_WORDS];
	uint64_t r = 12345;

	(void)state;
	tk_conc_fresh(c, w);
	for (int i = 0; i < 20000; i++) {
		double rtt, l;

		r = r * 6364136223846793005u + 1442695040888963407u;
		rtt = 1 + (double)(r >> 40) / 1000.0;
		tk_conc_sample(c, w, 10.0 * i, rtt, (uint32_t)(r >> 59), false);
		l = tk_word_f64(w[TK_CONC_W_LIMIT]);
		assert_true(l >= 4 && l <= 16);
		assert_true(tk_conc_state_valid(c, w));
	}
}

static void
test_aimd(void **state)
{
	struct tk_algo a = algo_of("adaptiveConcurrency:algorithm=aimd,"
				   "initialLimit=10,maxLimit=12,timeoutMs=100");
	const struct tk_conc *c = &a.u.conc;
	uint64_t w[TK_CONC_MAX_WORDS];

	(void)state;
	tk_conc_fresh(c, w);
	tk_conc_sample(c, w, 1, 50, 5, false); /* half in use: +1 */
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 11);
	tk_conc_sample(c, w, 2, 50, 2, false); /* app-limited: stays */
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 11);
	tk_conc_sample(c, w, 3, 50, 6, false);
	tk_conc_sample(c, w, 4, 50, 6, false); /* capped at maxLimit */
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 12);
	tk_conc_sample(c, w, 5, 150, 6, false); /* slow: backoff */
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 12 * 0.9);
	tk_conc_sample(c, w, 6, 10, 6, true); /* a drop: backoff */
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 12 * 0.9 * 0.9);
	for (int i = 0; i < 100; i++)
		tk_conc_sample(c, w, 7 + i, 10, 6, true);
	assert_true(tk_word_f64(w[TK_CONC_W_LIMIT]) == 1); /* minLimit */

	/* An immediate drop (latency 0, a 503 at once) still backs off; an
	 * immediate success is no sample. */
	{
		uint64_t st[TK_CONC_MAX_WORDS], next[TK_CONC_MAX_WORDS];
		tkshm_decision d;
		uint32_t cell = 0;

		tk_conc_fresh(c, st);
		assert_true(tk_conc_acquire(c, true, st, 50, 0x7, 0, next,
					    &cell, &d));
		memcpy(st, next, sizeof next);
		assert_true(tk_conc_release(c, true, st, 50, 0x7, cell, true, 0,
					    false, next));
		assert_true(tk_word_f64(next[TK_CONC_W_LIMIT]) == 10);
		assert_true(tk_conc_release(c, true, st, 50, 0x7, cell, true, 0,
					    true, next));
		assert_true(tk_word_f64(next[TK_CONC_W_LIMIT]) == 10 * 0.9);
	}
}

/* /proc/PID/stat parsing survives a command name with spaces and ')'. */
static void
test_proc_stat_parse(void **state)
{
	char st;
	uint64_t start;
	const char *odd = "123 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 "
			  "15 16 17 18 424242 20";

	(void)state;
	assert_true(tk_proc_stat_parse(odd, &st, &start));
	assert_int_equal(st, 'S');
	assert_int_equal(start, 424242);
	assert_false(tk_proc_stat_parse("123 (x) S 1 2", &st, &start));
	assert_false(tk_proc_stat_parse("no parens", &st, &start));
}

/* Liveness: ourselves alive; a child alive, then a zombie (dead), then
 * gone (dead); a live pid with another start time is a reused pid (dead). */
static void
test_liveness(void **state)
{
	uint64_t self = tk_holder_self();
	pid_t pid;
	int status;

	(void)state;
	assert_true(self != 0);
	assert_int_equal(tk_holder_pid(self), getpid());
	assert_int_equal(tk_holder_liveness(self), TK_ALIVE);
	assert_int_equal(tk_holder_liveness(self ^ 1), TK_DEAD);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	{
		uint64_t w = 0;
		/* The child's word, as the child would compute it. */
		char path[64], buf[1024], s;
		uint64_t start;
		size_t n;
		FILE *f;

		snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		assert_non_null(f);
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		assert_true(tk_proc_stat_parse(buf, &s, &start));
		w = tk_holder_word((uint64_t)pid, start);
		assert_int_equal(tk_holder_liveness(w), TK_ALIVE);
		kill(pid, SIGSTOP); /* stopped is alive */
		usleep(20000);
		assert_int_equal(tk_holder_liveness(w), TK_ALIVE);
		kill(pid, SIGKILL);
		/* Not reaped yet: a zombie, which never releases. */
		for (int i = 0; i < 200; i++) {
			if (tk_holder_liveness(w) == TK_DEAD)
				break;
			usleep(5000);
		}
		assert_int_equal(tk_holder_liveness(w), TK_DEAD);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(tk_holder_liveness(w), TK_DEAD);
	}
}

/* The public calls on a real table. */
static void
test_table_acquire_release(void **state)
{
	tkshm_table *t = tkt_anon("concurrency:limit=2", 64);
	tkshm_permit p1, p2, p3, copy;
	tkshm_decision d;
	tkshm_stats s;

	(void)state;
	assert_rc(tkshm_acquire_at(t, "api", 3, 10, &p1, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_rc(tkshm_acquire_at(t, "api", 3, 10, &p2, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	memset(&p3, 0x5A, sizeof p3);
	copy = p3;
	/* Refused: *permit untouched (nothing granted), nothing written. */
	assert_rc(tkshm_acquire_at(t, "api", 3, 11, &p3, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_memory_equal(&p3, &copy, sizeof p3);
	/* Another key has its own permits. */
	assert_rc(tkshm_acquire_at(t, "db", 2, 11, &p3, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_peek_at(t, "api", 3, 12, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 0);

	/* Exactly once: the release, then the same permit or a copy. */
	copy = p1;
	assert_rc(tkshm_release_at(t, &p1, 20, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	assert_rc(tkshm_release_at(t, &p1, 20, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENOTHELD);
	assert_rc(tkshm_release_at(t, &copy, 21, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENOTHELD);
	assert_rc(tkshm_peek_at(t, "api", 3, 22, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 1);
	/* Bad input changes nothing. */
	assert_rc(tkshm_release_at(t, &p2, NAN, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENOW);
	assert_rc(tkshm_release_at(t, &p2, 30, (tkshm_outcome)7), TKSHM_EINVAL);
	assert_rc(tkshm_release_at(NULL, &p2, 30, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENULL);
	assert_rc(tkshm_acquire_at(t, "", 0, 30, &p1, &d), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_acquire_at(t, "api", 3, -1, &p1, &d), TKSHM_ENOW);
	assert_rc(tkshm_acquire_at(t, "api", 3, 30, NULL, &d), TKSHM_ENULL);
	assert_rc(tkshm_peek_at(t, "api", 3, 31, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 1);
	/* The check family and the overrides are not for permits. */
	assert_rc(tkshm_check_at(t, "api", 3, 1, 31, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_reset(t, "api", 3), TKSHM_ENOTSUP);
	assert_rc(tkshm_set_remaining_at(t, "api", 3, 2, 31), TKSHM_ENOTSUP);
	assert_rc(tkshm_release(t, &p2, TKSHM_OUTCOME_IGNORE), TKSHM_OK);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_int_equal(s.allowed, 3);
	assert_int_equal(s.denied, 1);
	assert_int_equal(s.releases, 2);
	assert_int_equal(s.reaped, 0);
	tkshm_close(t);

	/* Permits are for concurrency tables only. */
	t = tkt_anon("gcra:limit=1,periodMs=1000", 64);
	assert_rc(tkshm_acquire_at(t, "api", 3, 1, &p1, &d), TKSHM_ENOTSUP);
	assert_rc(tkshm_reap(t, NULL), TKSHM_ENOTSUP);
	tkshm_close(t);
}

/* A stale copy of a released permit cannot free the cell this process
 * took again since (permit_local.h): one release per acquisition. */
static void
test_stale_copy_after_reacquire(void **state)
{
	tkshm_table *t = tkt_anon("concurrency:limit=1", 64);
	tkshm_permit p, q, copy;
	tkshm_decision d;

	(void)state;
	assert_rc(tkshm_acquire_at(t, "k", 1, 10, &p, &d), TKSHM_OK);
	assert_true(d.allowed);
	copy = p;
	assert_rc(tkshm_release_at(t, &p, 11, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	assert_rc(tkshm_acquire_at(t, "k", 1, 12, &q, &d), TKSHM_OK);
	assert_true(d.allowed); /* the same cell, the same holder word */
	assert_rc(tkshm_release_at(t, &copy, 13, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_ENOTHELD);
	assert_rc(tkshm_peek_at(t, "k", 1, 14, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 0); /* q still holds it */
	assert_rc(tkshm_release_at(t, &q, 15, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	assert_rc(tkshm_peek_at(t, "k", 1, 16, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 1);
	tkshm_close(t);
}

/* A permit names its process: a forked child cannot release its parent's
 * permit, and the parent still can. */
static void
test_child_cannot_release(void **state)
{
	tkshm_table *t = tkt_anon("concurrency:limit=1", 64);
	tkshm_permit p;
	tkshm_decision d;
	pid_t pid;
	int status;

	(void)state;
	assert_rc(tkshm_acquire_at(t, "k", 1, 10, &p, &d), TKSHM_OK);
	assert_true(d.allowed);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tkshm_permit mine;
		int rc = tkshm_release_at(t, &p, 11, TKSHM_OUTCOME_SUCCESS);

		if (rc != TKSHM_ENOTHELD)
			_exit(1);
		/* The parent's permit is alive: the child is refused. */
		rc = tkshm_acquire_at(t, "k", 1, 12, &mine, &d);
		_exit(rc == TKSHM_OK && !d.allowed ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_rc(tkshm_release_at(t, &p, 13, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	tkshm_close(t);
}

/* A permit of a process that died is taken back by the next refused
 * acquire (once per interval per handle), and by tkshm_reap. */
static void
test_dead_holder_reaped(void **state)
{
	tkshm_table *t = tkt_anon("concurrency:limit=2", 64);
	tkshm_permit p;
	tkshm_decision d;
	tkshm_stats s;
	uint64_t reaped = 99;
	pid_t pid;
	int status;

	(void)state;
	for (int i = 0; i < 2; i++) {
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			tkshm_permit mine;
			int rc = tkshm_acquire_at(t, "k", 1, 10, &mine, &d);

			_exit(rc == TKSHM_OK && d.allowed ? 0 : 1);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	/* Both permits belong to exited processes. */
	assert_rc(tkshm_peek_at(t, "k", 1, 11, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 0);
	assert_rc(tkshm_acquire_at(t, "k", 1, 12, &p, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_int_equal(s.reaped, 2);
	assert_rc(tkshm_reap(t, &reaped), TKSHM_OK);
	assert_int_equal(reaped, 0); /* our own permit is alive */
	assert_rc(tkshm_release_at(t, &p, 13, TKSHM_OUTCOME_SUCCESS), TKSHM_OK);
	tkshm_close(t);
}

/* An adaptive table: release samples move the shared limit. */
static void
test_adaptive_table(void **state)
{
	tkshm_table *t = tkt_anon("adaptiveConcurrency:initialLimit=4,"
				  "maxLimit=8,smoothing=1",
				  64);
	tkshm_permit p[4];
	tkshm_decision d;

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_rc(tkshm_acquire_at(t, "b", 1, 100, &p[i], &d),
			  TKSHM_OK);
		assert_true(d.allowed);
		assert_int_equal(d.limit, 4);
	}
	assert_rc(tkshm_acquire_at(t, "b", 1, 100, &p[0], &d), TKSHM_OK);
	assert_false(d.allowed);
	/* Latency 10 ms for the first sample (gradient 1): 4 + 2 = 6. */
	assert_rc(tkshm_release_at(t, &p[0], 110, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	assert_rc(tkshm_peek_at(t, "b", 1, 111, &d), TKSHM_OK);
	assert_int_equal(d.limit, 6);
	assert_int_equal(d.remaining, 3);
	/* A slow sample halves it (gradient 0.5): 6 * 0.5 + sqrt(6). */
	assert_rc(tkshm_release_at(t, &p[1], 200, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	assert_rc(tkshm_peek_at(t, "b", 1, 201, &d), TKSHM_OK);
	assert_int_equal(d.limit, (int64_t)floor(6 * 0.5 + sqrt(6)));
	/* IGNORE is no sample. */
	assert_rc(tkshm_release_at(t, &p[2], 5000, TKSHM_OUTCOME_IGNORE),
		  TKSHM_OK);
	assert_rc(tkshm_peek_at(t, "b", 1, 5001, &d), TKSHM_OK);
	assert_int_equal(d.limit, (int64_t)floor(6 * 0.5 + sqrt(6)));
	assert_rc(tkshm_release_at(t, &p[3], 5002, TKSHM_OUTCOME_SUCCESS),
		  TKSHM_OK);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_acquire_up_to_limit),
		cmocka_unit_test(test_release_exactly),
		cmocka_unit_test(test_reap_and_other_boot),
		cmocka_unit_test(test_gradient2_math),
		cmocka_unit_test(test_gradient2_clamps),
		cmocka_unit_test(test_aimd),
		cmocka_unit_test(test_proc_stat_parse),
		cmocka_unit_test(test_liveness),
		cmocka_unit_test(test_table_acquire_release),
		cmocka_unit_test(test_stale_copy_after_reacquire),
		cmocka_unit_test(test_child_cannot_release),
		cmocka_unit_test(test_dead_holder_reaped),
		cmocka_unit_test(test_adaptive_table),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
