/*
 * test_security.c - the claims of SECURITY.md that no other test shows.
 *
 *   - Hash flooding: keys aimed at one probe window with a table's seed
 *     (which only a reader of the file knows) force evictions there, but
 *     not in another table, whose seed is its own; the evicted keys keep
 *     their debt (I8), so a flood evicts but never resets a key.
 *   - A writer that rewrites the header after others attached (with a
 *     checksum that matches: the checksum is not a secret) changes nothing
 *     for them (I10); a later attach that passes its policy refuses the
 *     rewritten table, one that adopts the stored policy takes it.
 *   - tkshm_open attaches to an existing file whoever owns it;
 *     TKSHM_O_EXCL refuses it.
 *   - Hostile state words in a key's slot or wide record: every call on
 *     that key returns a documented code with sane fields, and a reset
 *     gives the key back.
 *
 * The writer is this process writing through the mapping or the file, as
 * any process allowed to open the table for writing could.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "shm/layout.h"
#include "shm/pair.h"
#include "shm/protocol.h"
#include "shm/table.h"
#include "shm/wide.h"
#include "slot_testing.h"

#define NOW 1700000000000.0

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

static tkshm_stats
stats(tkshm_table *t)
{
	tkshm_stats s;

	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	return s;
}

static void
read_header(const char *path, struct tk_header *h)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof *h, 0), (ssize_t)sizeof *h);
	close(fd);
}

static void
write_header(const char *path, const struct tk_header *h)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, h, sizeof *h, 0), (ssize_t)sizeof *h);
	close(fd);
}

/* ------------------------------------------------------------------------
 * Hash flooding
 * ---------------------------------------------------------------------- */

#define FLOOD_SLOTS 1024u /* 256 buckets */
#define FLOOD_KEYS  40
#define FLOOD_SPEC  "gcra:limit=1,periodMs=60000,burst=1"

static void
test_seed_defeats_aimed_keys(void **state)
{
	tkshm_table *a =
		tkt_file(tkt_path("flood-a.tk"), FLOOD_SPEC, FLOOD_SLOTS);
	tkshm_table *b =
		tkt_file(tkt_path("flood-b.tk"), FLOOD_SPEC, FLOOD_SLOTS);
	tkshm_table *x = tkt_anon(FLOOD_SPEC, FLOOD_SLOTS);
	tkshm_table *y = tkt_anon(FLOOD_SPEC, FLOOD_SLOTS);
	static char keys[FLOOD_KEYS][32];
	struct tk_where first;
	size_t found = 0, admitted_a = 0;
	tkshm_decision d;
	tkshm_stats sa, sb;

	(void)state;
	/* Every table draws its own seed (getrandom at creation). */
	assert_true(a->seed != b->seed);
	assert_true(x->seed != y->seed);
	assert_true(a->seed != x->seed);

	/* Keys that all share one window of table a: found with a's seed,
	 * as only someone who can read a's file could. */
	for (uint64_t n = 0; found < FLOOD_KEYS; n++) {
		char k[32];
		struct tk_where w;

		snprintf(k, sizeof k, "client:%llu", (unsigned long long)n);
		tk_where_of(a, tk_key_fp(a, k, strlen(k)), &w);
		if (found == 0)
			first = w;
		if (w.b0 != first.b0 || w.b1 != first.b1)
			continue;
		snprintf(keys[found++], sizeof keys[0], "%s", k);
		assert_true(n < UINT64_C(100000000));
	}

	/* In a, the aimed keys fight over 8 slots: every insert after the
	 * eighth evicts a key in debt, and its debt goes to a debt cell
	 * (I8).  The aimed keys share the low bits of their fingerprints,
	 * hence few debt cells, so some of them start from another's
	 * remembered debt and are denied (conservative, never an extra
	 * admission).  In b the same keys land anywhere: all admitted, no
	 * eviction. */
	for (size_t i = 0; i < FLOOD_KEYS; i++) {
		assert_rc(
			tkshm_check_at(a, keys[i], strlen(keys[i]), 1, NOW, &d),
			TKSHM_OK);
		admitted_a += d.allowed;
		assert_rc(
			tkshm_check_at(b, keys[i], strlen(keys[i]), 1, NOW, &d),
			TKSHM_OK);
		assert_true(d.allowed);
	}
	sa = stats(a);
	sb = stats(b);
	print_message("aimed at a: %zu of %d admitted, %llu evictions (%llu "
		      "in debt); b: %llu evictions\n",
		      admitted_a, FLOOD_KEYS, (unsigned long long)sa.evictions,
		      (unsigned long long)sa.evictions_in_debt,
		      (unsigned long long)sb.evictions);
	assert_true(admitted_a > TK_WINDOW);
	assert_int_equal(sa.evictions, admitted_a - TK_WINDOW);
	assert_int_equal(sa.evictions_in_debt, sa.evictions);
	assert_int_equal(sb.evictions, 0);

	/* A flood evicts but does not reset: every aimed key, evicted or
	 * not, is still denied a second request within its period (the
	 * evicted ones start again from their remembered debt, I8). */
	for (size_t i = 0; i < FLOOD_KEYS; i++) {
		assert_rc(tkshm_check_at(a, keys[i], strlen(keys[i]), 1,
					 NOW + 1000, &d),
			  TKSHM_OK);
		if (d.allowed)
			fail_msg("%s admitted again after the flood", keys[i]);
	}
	assert_rc(tkshm_verify(a, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(a);
	tkshm_close(b);
	tkshm_close(x);
	tkshm_close(y);
}

/* ------------------------------------------------------------------------
 * A header rewritten after attach
 * ---------------------------------------------------------------------- */

#define STRICT_SPEC "gcra:limit=10,periodMs=1000,burst=5"
#define LOOSE_SPEC  "gcra:limit=50000,periodMs=1000,burst=100000"

static int
admitted_in_a_row(tkshm_table *t, const char *key)
{
	tkshm_decision d;
	int n = 0;

	for (int i = 0; i < 100; i++) {
		assert_rc(tkshm_check_at(t, key, strlen(key), 1, NOW, &d),
			  TKSHM_OK);
		n += d.allowed;
	}
	return n;
}

static void
test_header_rewrite_after_attach(void **state)
{
	const char *path = tkt_path("rewritten.tk");
	const char *loose_path = tkt_path("loose.tk");
	tkshm_policy strict = tkt_policy(STRICT_SPEC);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = tkt_file(path, STRICT_SPEC, 64), *later = NULL;
	struct tk_header h, loose;
	tkshm_stats s;
	uint64_t problems = 99;

	(void)state;
	/* The writer: the loose policy's wire form, with a checksum that
	 * matches, over the same geometry and seed. */
	tkshm_close(tkt_file(loose_path, LOOSE_SPEC, 64));
	read_header(path, &h);
	read_header(loose_path, &loose);
	h.policy = loose.policy;
	h.global = loose.global;
	h.checksum = XXH64(&h, offsetof(struct tk_header, checksum), 0);
	write_header(path, &h);

	/* The handle attached before keeps the policy it validated. */
	assert_int_equal(admitted_in_a_row(t, "k1"), 5);
	/* tkshm_verify compares geometry, seed and checksum with the
	 * handle's, not the policy: this rewrite is not reported. */
	assert_rc(tkshm_verify(t, NULL, NULL, &problems), TKSHM_OK);
	assert_int_equal(problems, 0);

	/* An attach that states its policy and keeps the table as it is
	 * refuses the rewritten table. */
	o.policy = &strict;
	o.flags = TKSHM_O_KEEP;
	assert_rc(tkshm_open(path, &o, &later), TKSHM_EMISMATCH);
	assert_null(later);

	/* One that adopts the stored policy (policy NULL, as tkshm-inspect,
	 * tkshm-syncd and tkshm_open without a policy do) takes the
	 * writer's. */
	o.policy = NULL;
	assert_rc(tkshm_open(path, &o, &later), TKSHM_OK);
	s = stats(later);
	assert_int_equal(s.policy.u.gcra.burst, 100000);
	assert_int_equal(admitted_in_a_row(later, "k2"), 100);
	tkshm_close(later);
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * A file that was there first
 * ---------------------------------------------------------------------- */

static void
test_existing_file_of_another_owner(void **state)
{
	const char *path = tkt_path("squatted.tk");
	tkshm_policy p = tkt_policy(STRICT_SPEC);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	struct stat st;

	(void)state;
	/* Somebody else's table, open to everybody, at the path a server
	 * is about to create. */
	o.policy = &p;
	o.slots = 64;
	o.mode = 0666;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	tkshm_close(t);
	t = NULL;
	if (geteuid() == 0)
		assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(stat(path, &st), 0);

	/* TKSHM_O_CREATE attaches to it: neither owner nor mode is
	 * checked, and the mode asked for is not applied. */
	o.mode = 0600;
	o.flags = TKSHM_O_CREATE;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	tkshm_close(t);
	t = NULL;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0666);
	if (geteuid() == 0)
		assert_int_equal(st.st_uid, 65534);

	/* TKSHM_O_CREATE | TKSHM_O_EXCL refuses it. */
	o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_EEXIST);
	assert_null(t);
}

/* ------------------------------------------------------------------------
 * Hostile state words
 * ---------------------------------------------------------------------- */

static uint64_t
bits_of(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof u);
	return u;
}

/* A decision whose fields a caller can use as they are. */
static void
expect_sane(const tkshm_decision *d, const char *what)
{
	if (d->remaining < 0 || d->retry_after_ms < 0 ||
	    (d->allowed && d->retry_after_ms != 0) ||
	    (!d->allowed && d->retry_after_ms < 1))
		fail_msg("%s: allowed %d remaining %lld retry_after %lld", what,
			 d->allowed, (long long)d->remaining,
			 (long long)d->retry_after_ms);
}

static bool
rc_in(int rc, const int *ok, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rc == ok[i])
			return true;
	return false;
}

/* Every call a worker or an operator makes on `key`, after the writer put
 * its state there: documented codes only, sane decisions, and a reset
 * that gives the key back.  Other keys are untouched. */
static void
exercise_key(tkshm_table *t, const char *key, bool invalid, const char *what)
{
	static const int ok[] = { TKSHM_OK, TKSHM_ECORRUPT, TKSHM_EBUSY };
	size_t len = strlen(key);
	tkshm_decision d;
	tkshm_forecast f;
	int rc;

	/* verify names a state outside the algorithm's (I4, W5); a valid
	 * but extreme one (a TAT in the year 10^290) is a block, not a
	 * corruption. */
	rc = tkshm_verify(t, NULL, NULL, NULL);
	if (rc != (invalid ? TKSHM_ECORRUPT : TKSHM_OK))
		fail_msg("%s: verify %s", what, tkshm_error_name(rc));
	memset(&d, 0, sizeof d);
	rc = tkshm_check_at(t, key, len, 1, NOW, &d);
	if (!rc_in(rc, ok, 3))
		fail_msg("%s: check %s", what, tkshm_error_name(rc));
	if (rc == TKSHM_OK)
		expect_sane(&d, what);
	print_message("  %s: check %s%s\n", what, tkshm_error_name(rc),
		      rc != TKSHM_OK ? "" :
		      d.allowed	     ? ", admitted" :
				       ", denied");
	rc = tkshm_peek_at(t, key, len, NOW, &d);
	if (!rc_in(rc, ok, 3))
		fail_msg("%s: peek %s", what, tkshm_error_name(rc));
	if (rc == TKSHM_OK)
		expect_sane(&d, what);
	rc = tkshm_forecast_at(t, key, len, 1, NOW, &f);
	if (!rc_in(rc, ok, 3))
		fail_msg("%s: forecast %s", what, tkshm_error_name(rc));
	/* Other keys decide as usual. */
	assert_rc(tkshm_check_at(t, "bystander", 9, 1, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);
	/* An operator's reset gives the key back. */
	assert_rc(tkshm_reset(t, key, len), TKSHM_OK);
	assert_rc(tkshm_check_at(t, key, len, 1, NOW + 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_reset(t, "bystander", 9), TKSHM_OK);
}

static void
test_hostile_gcra_states(void **state)
{
	const uint64_t hostile[] = {
		bits_of(INFINITY),
		bits_of(-1.0),
		bits_of(-INFINITY) & ~UINT64_C(0x0008000000000000),
		UINT64_C(0x7FF8000000000001), /* a positive NaN */
		UINT64_C(0x7FF0000000000001), /* a signalling NaN */
		bits_of(DBL_MAX),
		bits_of(1e300),
		bits_of(4.9e-324),
		bits_of(-0.0),
		UINT64_C(0x7FFFFFFFFFFFFFFF),
	};
	tkshm_table *t = tkt_file(tkt_path("hostile-gcra.tk"),
				  "gcra:limit=10,periodMs=1000,burst=5", 256);
	tkshm_decision d;

	(void)state;
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		char what[64];
		uint64_t idx;

		assert_rc(tkshm_check_at(t, "victim", 6, 1, NOW - 10, &d),
			  TKSHM_OK);
		idx = tkt_slot_of(t, "victim", NULL, NULL);
		tk_store_relaxed(&tk_slot_at(t, idx)->st, hostile[i]);
		snprintf(what, sizeof what, "gcra state %#llx",
			 (unsigned long long)hostile[i]);
		exercise_key(t, "victim",
			     !tk_algo_state_valid(&t->algo, hostile[i]), what);
		assert_rc(tkshm_reset(t, "victim", 6), TKSHM_OK);
	}
	tkshm_close(t);
}

/* A pair table's pair of `key` overwritten with `words` (P1): encoded as
 * its occupancy would when words[1] is a finite number >= 0, so that
 * readers decode it and must judge the values themselves; written as raw
 * bytes otherwise (a scribble that decodes to no state, or to a marker). */
static bool
publish_hostile_pair(tkshm_table *t, uint64_t idx, const uint64_t *words)
{
	struct tk_pair *p = tk_pair_at(t, idx);
	uint64_t fp, c, x[2];

	tk_slot_read(tk_slot_at(t, idx), &fp, &c);
	if (!tk_pair_encode(t, c, words, p)) {
		tk_store_relaxed(&p->a, words[0]);
		tk_store_relaxed(&p->b, words[1]);
	}
	return tk_pair_snapshot(t, idx, c, x) == TK_WIDE_INVALID;
}

/* The published record of `key` overwritten with `words`, keeping the
 * generations consistent (W5), so that readers take it as published and
 * must judge the values themselves.  True when readers find it invalid. */
static bool
publish_hostile(tkshm_table *t, const char *key, const uint64_t *words)
{
	uint64_t idx = tkt_slot_of(t, key, NULL, NULL), fp, ctl, gen, v;
	struct tk_unit *u;

	if (t->pairs)
		return publish_hostile_pair(t, idx, words);
	tk_slot_read(tk_slot_at(t, idx), &fp, &ctl);
	assert_false(tk_ctl_fresh(ctl));
	u = tk_wide_record(t, idx, tk_ctl_active(ctl));
	tk_unit_read(&u[0], &gen, &v);
	for (uint32_t i = 0; i < t->wide_units; i++) {
		tk_store_relaxed(&u[i].val, words[i]);
		tk_store_relaxed(&u[i].gen, gen);
	}
	return true;
}

static void
test_hostile_wide_states(void **state)
{
	static const char *const specs[] = {
		"tokenBucket:capacity=10,refillPerSec=5",
		"fixedWindow:limit=5,windowMs=1000",
		"slidingWindow:limit=10,windowMs=1000,buckets=4",
		"slidingWindowLog:limit=8,windowMs=1000",
		"quota:limit=5,resetCadence=calendar-day",
		"tokenBudget:budget=100,windowMs=1000",
	};
	const uint64_t fills[] = {
		bits_of(INFINITY),
		bits_of(-1.0),
		UINT64_C(0x7FF8000000000001),
		bits_of(1e300),
		UINT64_C(0xFFFFFFFFFFFFFFFF),
		UINT64_C(0x00000000FFFFFFFF),
	};
	uint64_t words[TK_ALGO_MAX_WORDS];

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		char name[32];
		tkshm_table *t;
		tkshm_decision d;

		snprintf(name, sizeof name, "hostile-wide-%zu.tk", s);
		t = tkt_file(tkt_path(name), specs[s], 64);
		for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
			char what[160];
			bool invalid;

			assert_rc(tkshm_check_at(t, "victim", 6, 1, NOW, &d),
				  TKSHM_OK);
			assert_true(d.allowed);
			/* Word 0 hostile, the others too, then every word
			 * hostile but the first left as it was. */
			for (uint32_t i = 0; i < t->wide_units; i++)
				words[i] = fills[(f + i) % 6];
			if (tk_algo_state_valid_w(&t->algo, words))
				continue;
			invalid = publish_hostile(t, "victim", words);
			snprintf(what, sizeof what, "%s, fill %zu", specs[s],
				 f);
			exercise_key(t, "victim", invalid, what);
			assert_rc(tkshm_reset(t, "victim", 6), TKSHM_OK);
		}
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * A file truncated under its workers
 * ---------------------------------------------------------------------- */

/* The library installs no signal handler: a writer that cuts the file
 * kills every worker that then touches a page past the cut with SIGBUS.
 * (tkshm-inspect catches it: tests/tool/test_inspect_hostile.c.) */
static void
test_truncation_kills_workers(void **state)
{
	const char *path = tkt_path("cut.tk");
	/* Attached before the fork: the worker inherits the mapping. */
	tkshm_table *w = tkt_file(path, "gcra:limit=10,periodMs=1000", 65536);
	int go[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(go), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c, key[32];
		tkshm_decision d;

		/* A worker as a server runs it: cmocka's handlers are the
		 * test runner's, not the worker's. */
		signal(SIGBUS, SIG_DFL);
		close(go[1]);
		if (read(go[0], &c, 1) != 0)
			_exit(3);
		for (int i = 0; i < 100000; i++) {
			snprintf(key, sizeof key, "k%d", i);
			(void)tkshm_check_at(w, key, strlen(key), 1, NOW, &d);
		}
		_exit(0); /* every page survived: not what is claimed */
	}
	close(go[0]);
	assert_int_equal(truncate(path, 3 * 4096), 0);
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGBUS)
		fail_msg("worker ended with status %#x, not SIGBUS", status);
	tkshm_close(w);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_defeats_aimed_keys),
		cmocka_unit_test(test_header_rewrite_after_attach),
		cmocka_unit_test(test_existing_file_of_another_owner),
		cmocka_unit_test(test_hostile_gcra_states),
		cmocka_unit_test(test_hostile_wide_states),
		cmocka_unit_test(test_truncation_kills_workers),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
