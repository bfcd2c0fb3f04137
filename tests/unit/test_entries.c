/*
 * test_entries.c - the operator's calls: walking a table's keys
 * (tkshm_entry_next_at, tkshm_entry_get_at) and overriding one
 * (tkshm_set_remaining_at, tkshm_block_at).
 *
 * Every expected value is derived from the policy by hand (GCRA 10 per
 * 1000 ms, burst 5: T = 100 ms, tau = 500 ms) or taken from the library's
 * own peek and forecast of the same key, which the walk must agree with.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"
#include "shm/table.h"

#define SPEC "gcra:limit=10,periodMs=1000,burst=5"
#define NOW  1000.0

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

static tkshm_decision
check(tkshm_table *t, const void *key, size_t len, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, len, cost, now, &d), TKSHM_OK);
	return d;
}

static tkshm_decision
peek(tkshm_table *t, const void *key, size_t len, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_peek_at(t, key, len, now, &d), TKSHM_OK);
	return d;
}

/* The entry whose label is `key` (a key of at most 19 bytes), from a walk
 * of the whole table at `now`; fails if there is not exactly one. */
static tkshm_entry
find_in_walk(tkshm_table *t, const void *key, size_t len, double now)
{
	tkshm_entry e, found;
	uint64_t cursor = 0, prev_slot = 0;
	int n = 0, rc;
	bool first = true;

	memset(&found, 0, sizeof found);
	while ((rc = tkshm_entry_next_at(t, &cursor, now, &e)) == TKSHM_OK) {
		/* The walk goes up the slots and leaves the cursor past the
		 * entry it returned. */
		assert_int_equal(cursor, e.slot + 1);
		if (!first)
			assert_true(e.slot > prev_slot);
		prev_slot = e.slot;
		first = false;
		if (e.key_len == len && e.label_len == len &&
		    memcmp(e.label, key, len) == 0) {
			found = e;
			n++;
		}
	}
	assert_rc(rc, TKSHM_ENOENT);
	assert_int_equal(n, 1);
	return found;
}

/* The entry agrees with the library's own peek and forecast of the key. */
static void
assert_entry_matches(tkshm_table *t, const tkshm_entry *e, const void *key,
		     size_t len, double now)
{
	tkshm_decision p = peek(t, key, len, now);
	tkshm_forecast f;

	assert_rc(tkshm_forecast_at(t, key, len, 1, now, &f), TKSHM_OK);
	assert_true(e->state_valid);
	assert_false(e->misplaced);
	assert_in_range(e->probe, 0, 7);
	assert_int_equal(e->peek.allowed, p.allowed);
	assert_int_equal(e->peek.limit, p.limit);
	assert_int_equal(e->peek.remaining, p.remaining);
	assert_int_equal(e->peek.reset_at, p.reset_at);
	assert_int_equal(e->peek.retry_after_ms, p.retry_after_ms);
	assert_int_equal(e->forecast.spendable_now, f.spendable_now);
	assert_int_equal(e->forecast.next_replenish_at, f.next_replenish_at);
	assert_int_equal(e->forecast.full_at, f.full_at);
}

/* ------------------------------------------------------------------------
 * Walking and looking up
 * ---------------------------------------------------------------------- */

static void
test_walk_known_keys(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	const char *longkey = "tenant-0123456789abcdef-0123456789abcdef";
	const unsigned char bin[] = { 0x00, 0x01, 0xff, ' ' };
	tkshm_entry e;
	uint64_t cursor = 0;
	int n = 0;

	(void)state;
	check(t, "a", 1, 2, NOW); /* TAT 1200 */
	check(t, "b", 1, 5, NOW); /* TAT 1500: drained */
	for (int i = 0; i < 3; i++)
		assert_false(check(t, "b", 1, 1, NOW).allowed);
	check(t, longkey, strlen(longkey), 1, NOW);
	check(t, bin, sizeof bin, 1, NOW);
	check(t, "old", 3, 1, 0); /* TAT 100: idle at NOW */

	while (tkshm_entry_next_at(t, &cursor, NOW, &e) == TKSHM_OK)
		n++;
	assert_int_equal(n, 5);

	e = find_in_walk(t, "a", 1, NOW);
	assert_entry_matches(t, &e, "a", 1, NOW);
	assert_int_equal(e.peek.remaining, 3);
	assert_int_equal(e.peek.reset_at, 1200);
	assert_true(e.debt_ms == 200.0);
	assert_int_equal(e.denials, 0);
	assert_false(e.idle);

	e = find_in_walk(t, "b", 1, NOW);
	assert_entry_matches(t, &e, "b", 1, NOW);
	assert_int_equal(e.peek.remaining, 0);
	assert_int_equal(e.peek.retry_after_ms, 100);
	assert_true(e.debt_ms == 500.0);
	assert_int_equal(e.denials, 3);

	e = find_in_walk(t, bin, sizeof bin, NOW);
	assert_entry_matches(t, &e, bin, sizeof bin, NOW);

	e = find_in_walk(t, "old", 3, NOW);
	assert_true(e.idle);
	assert_true(e.debt_ms == 0.0);
	assert_int_equal(e.peek.remaining, 5);

	/* A long key keeps its length and first 19 bytes. */
	assert_rc(tkshm_entry_get_at(t, longkey, strlen(longkey), NOW, &e),
		  TKSHM_OK);
	assert_int_equal(e.key_len, strlen(longkey));
	assert_int_equal(e.label_len, TKSHM_LABEL_MAX);
	assert_memory_equal(e.label, longkey, TKSHM_LABEL_MAX);
	assert_entry_matches(t, &e, longkey, strlen(longkey), NOW);
	tkshm_close(t);
}

static void
test_get_and_bad_input(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	tkshm_entry e, before;
	uint64_t cursor = 0;

	(void)state;
	check(t, "k", 1, 1, NOW);
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &before), TKSHM_OK);
	assert_rc(tkshm_entry_get_at(t, "absent", 6, NOW, &e), TKSHM_ENOENT);
	assert_rc(tkshm_entry_get_at(NULL, "k", 1, NOW, &e), TKSHM_ENULL);
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, NULL), TKSHM_ENULL);
	assert_rc(tkshm_entry_get_at(t, "k", 0, NOW, &e), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_entry_get_at(t, "k", 1, NAN, &e), TKSHM_ENOW);
	assert_rc(tkshm_entry_get_at(t, "k", 1, -1, &e), TKSHM_ENOW);
	assert_rc(tkshm_entry_next_at(t, NULL, NOW, &e), TKSHM_ENULL);
	assert_rc(tkshm_entry_next_at(t, &cursor, INFINITY, &e), TKSHM_ENOW);
	assert_int_equal(cursor, 0);
	/* Past the end: nothing, and no read beyond the slots. */
	cursor = UINT64_MAX;
	assert_rc(tkshm_entry_next_at(t, &cursor, NOW, &e), TKSHM_ENOENT);
	/* Nothing changed. */
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &e), TKSHM_OK);
	assert_int_equal(e.peek.remaining, before.peek.remaining);
	assert_int_equal(e.slot, before.slot);
	tkshm_close(t);
}

/* The denial tally belongs to the key: a reclaimed slot starts at 0. */
static void
test_denials_follow_the_key(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 8); /* every window: all 8 slots */
	tkshm_entry e;
	uint64_t cursor = 0;
	char key[8];

	(void)state;
	check(t, "x", 1, 5, NOW);
	for (int i = 0; i < 4; i++)
		assert_false(check(t, "x", 1, 1, NOW).allowed);
	assert_rc(tkshm_entry_get_at(t, "x", 1, NOW, &e), TKSHM_OK);
	assert_int_equal(e.denials, 4);
	/* A reset key starts again from 0 when it comes back. */
	assert_rc(tkshm_reset(t, "x", 1), TKSHM_OK);
	check(t, "x", 1, 5, NOW);
	assert_rc(tkshm_entry_get_at(t, "x", 1, NOW, &e), TKSHM_OK);
	assert_int_equal(e.denials, 0);
	assert_false(check(t, "x", 1, 1, NOW).allowed);

	/* Much later x is idle; 8 new keys take every slot, x's included. */
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof key, "n%d", i);
		check(t, key, strlen(key), 1, NOW + 10000);
	}
	assert_rc(tkshm_entry_get_at(t, "x", 1, NOW + 10000, &e), TKSHM_ENOENT);
	while (tkshm_entry_next_at(t, &cursor, NOW + 10000, &e) == TKSHM_OK)
		assert_int_equal(e.denials, 0);
	tkshm_close(t);
}

/* The label's words (layout.h, tk_label) as tk_label_read gives them back:
 * 19 bytes of prefix across the three words, the length byte saturating at
 * 255, the 32-bit check refusing a label of another fingerprint and never
 * 0 (a fingerprint whose low 32 bits are 0 still has a label). */
static void
test_label_words(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	static const size_t lens[] = { 1, 3, 4, 11, 18, 19, 20, 254, 300 };
	static const uint64_t fps[] = { UINT64_C(0x0123456789abcdef),
					UINT64_C(0x7fffffff00000000) };
	unsigned char key[300], out[TKSHM_LABEL_MAX];
	unsigned key_len;

	(void)state;
	for (size_t i = 0; i < sizeof key; i++)
		key[i] = (unsigned char)(0x21 + i % 90);
	for (size_t f = 0; f < 2; f++) {
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			size_t n = lens[i] < TKSHM_LABEL_MAX ? lens[i] :
							       TKSHM_LABEL_MAX;

			tk_label_write(t, 5, fps[f], key, lens[i]);
			memset(out, 0, sizeof out);
			assert_true(tk_label_read(t, 5, fps[f], out, &key_len));
			assert_int_equal(key_len,
					 lens[i] < 255 ? lens[i] : 255);
			assert_memory_equal(out, key, n);
			/* Another fingerprint's low 32 bits: no label. */
			assert_false(tk_label_read(
				t, 5, fps[f] ^ UINT64_C(0x80000000), out,
				&key_len));
			assert_false(tk_label_read(t, 5, 0, out, &key_len));
		}
	}
	/* A label being written (w[0] = 0, as a writer killed mid-write
	 * leaves it) is no label, even for that fingerprint. */
	t->labels[5].w[0] = 0;
	assert_false(tk_label_read(t, 5, fps[1], out, &key_len));
	tkshm_close(t);
}

/* A damaged state is reported, not decoded; a damaged label is bounded. */
static void
test_corrupt_state_is_flagged(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	tkshm_entry e;
	double nan_tat = NAN;
	uint64_t bits;

	(void)state;
	check(t, "k", 1, 1, NOW);
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &e), TKSHM_OK);
	memcpy(&bits, &nan_tat, sizeof bits);
	/* Plain stores: this test is the only thread. */
	tk_slot_at(t, e.slot)->st = bits;
	/* A label claiming 200 bytes still yields at most 19: every byte of
	 * it 0xc8 but the fingerprint check (the low 32 bits of w[0]). */
	memset(&t->labels[e.slot].w[1], 0xc8, 2 * sizeof(uint64_t));
	t->labels[e.slot].w[0] = (t->labels[e.slot].w[0] & UINT32_MAX) |
				 UINT64_C(0xc8c8c8c8) << 32;
	/* ECORRUPT, as a check of the key says, with the entry filled. */
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &e), TKSHM_ECORRUPT);
	assert_false(e.state_valid);
	assert_int_equal(e.key_len, 200);
	assert_int_equal(e.label_len, TKSHM_LABEL_MAX);
	assert_int_equal(e.peek.remaining, 0);
	assert_true(e.debt_ms == 0.0);
	/* A label written for another fingerprint is not shown. */
	t->labels[e.slot].w[0] ^= 1;
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &e), TKSHM_ECORRUPT);
	assert_int_equal(e.key_len, 0);
	assert_int_equal(e.label_len, 0);
	tkshm_close(t);
}

/* Wide states walk the same way (a token bucket and a sliding window). */
static void
test_walk_wide_tables(void **state)
{
	const char *specs[] = {
		"tokenBucket:capacity=10,refillPerSec=1",
		"slidingWindow:limit=10,windowMs=60000",
		"slidingWindowLog:limit=8,windowMs=60000",
	};

	(void)state;
	for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		tkshm_table *t = tkt_anon(specs[s], 64);
		tkshm_entry e;

		check(t, "p", 1, 3, NOW);
		check(t, "q", 1, 8, NOW);
		while (check(t, "q", 1, 1, NOW).allowed)
			;
		assert_false(check(t, "q", 1, 1, NOW).allowed);
		e = find_in_walk(t, "p", 1, NOW);
		assert_entry_matches(t, &e, "p", 1, NOW);
		assert_int_equal(e.denials, 0);
		assert_true(e.debt_ms > 0);
		e = find_in_walk(t, "q", 1, NOW);
		assert_entry_matches(t, &e, "q", 1, NOW);
		assert_int_equal(e.peek.remaining, 0);
		assert_int_equal(e.denials, 2);
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * Overrides
 * ---------------------------------------------------------------------- */

/* After set_remaining(r) at now, exactly floor(r) cost-1 checks pass. */
static void
assert_exactly_admits(tkshm_table *t, const char *key, int64_t r, double now)
{
	for (int64_t i = 0; i < r; i++)
		assert_true(check(t, key, strlen(key), 1, now).allowed);
	assert_false(check(t, key, strlen(key), 1, now).allowed);
}

static void
test_set_remaining_every_kind(void **state)
{
	static const struct {
		const char *spec;
		double limit;
	} cases[] = {
		{ SPEC, 5 },
		{ "tokenBucket:capacity=10,refillPerSec=1", 10 },
		{ "fixedWindow:limit=10,windowMs=60000", 10 },
		{ "slidingWindow:limit=10,windowMs=60000", 10 },
		{ "slidingWindowLog:limit=10,windowMs=60000", 10 },
		{ "quota:limit=10,resetCadence=calendar-day", 10 },
		{ "tokenBudget:budget=10,windowMs=60000", 10 },
	};

	(void)state;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		tkshm_table *t = tkt_anon(cases[c].spec, 64);
		tkshm_decision before, after;
		double lim = cases[c].limit;

		/* An absent key is inserted with the state asked for. */
		assert_rc(tkshm_set_remaining_at(t, "k", 1, 2, NOW), TKSHM_OK);
		assert_int_equal(peek(t, "k", 1, NOW).remaining, 2);
		assert_exactly_admits(t, "k", 2, NOW);
		/* A drained key is unblocked in part, then wholly. */
		assert_rc(tkshm_set_remaining_at(t, "k", 1, 3, NOW), TKSHM_OK);
		assert_exactly_admits(t, "k", 3, NOW);
		assert_rc(tkshm_set_remaining_at(t, "k", 1, lim, NOW),
			  TKSHM_OK);
		assert_int_equal(peek(t, "k", 1, NOW).remaining, (int64_t)lim);
		/* A full key is blocked. */
		assert_rc(tkshm_set_remaining_at(t, "k", 1, 0, NOW), TKSHM_OK);
		assert_false(peek(t, "k", 1, NOW).allowed);

		/* Out of range changes nothing. */
		before = peek(t, "k", 1, NOW);
		assert_rc(tkshm_set_remaining_at(t, "k", 1, -1, NOW),
			  TKSHM_EINVAL);
		assert_rc(tkshm_set_remaining_at(t, "k", 1, lim + 1, NOW),
			  TKSHM_EINVAL);
		assert_rc(tkshm_set_remaining_at(t, "k", 1, NAN, NOW),
			  TKSHM_EINVAL);
		assert_rc(tkshm_set_remaining_at(t, "k", 0, 1, NOW),
			  TKSHM_EKEYEMPTY);
		assert_rc(tkshm_set_remaining_at(t, "k", 1, 1, -5), TKSHM_ENOW);
		assert_rc(tkshm_set_remaining_at(NULL, "k", 1, 1, NOW),
			  TKSHM_ENULL);
		after = peek(t, "k", 1, NOW);
		assert_int_equal(after.remaining, before.remaining);
		assert_int_equal(after.reset_at, before.reset_at);
		tkshm_close(t);
	}
}

static void
test_set_fraction_refused_by_token_budget(void **state)
{
	tkshm_table *t = tkt_anon("tokenBudget:budget=10,windowMs=60000", 64);

	(void)state;
	assert_rc(tkshm_set_remaining_at(t, "k", 1, 2.5, NOW), TKSHM_EINVAL);
	assert_rc(tkshm_entry_get_at(t, "k", 1, NOW, &(tkshm_entry){ 0 }),
		  TKSHM_ENOENT);
	tkshm_close(t);
}

static void
test_block(void **state)
{
	tkshm_table *g = tkt_anon(SPEC, 64);
	tkshm_table *tb =
		tkt_anon("tokenBucket:capacity=10,refillPerSec=1", 64);
	tkshm_table *fw = tkt_anon("fixedWindow:limit=10,windowMs=60000", 64);
	const double until = NOW + 3600000.0;
	tkshm_decision d;

	(void)state;
	/* GCRA: denied up to `until`, with the retry-after pointing there;
	 * admitted at `until`. */
	assert_rc(tkshm_block_at(g, "ab", 2, until, NOW), TKSHM_OK);
	d = check(g, "ab", 2, 1, NOW);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after_ms, 3600000);
	assert_false(check(g, "ab", 2, 1, until - 1).allowed);
	assert_true(check(g, "ab", 2, 1, until).allowed);

	/* A token bucket: empty and not refilling before `until`. */
	check(tb, "ab", 2, 1, NOW); /* present first: replaced in place */
	assert_rc(tkshm_block_at(tb, "ab", 2, until, NOW), TKSHM_OK);
	d = check(tb, "ab", 2, 1, NOW);
	assert_false(d.allowed);
	/* Refill resumes at `until`; one token takes 1000 ms more. */
	assert_int_equal(d.retry_after_ms, 3600000 + 1000);
	assert_int_equal(d.reset_at, (int64_t)until + 10000);
	assert_false(check(tb, "ab", 2, 1, until - 1).allowed);
	assert_true(check(tb, "ab", 2, 1, until + 1000).allowed);

	/* Windowed kinds cannot be blocked past their window. */
	check(fw, "ab", 2, 4, NOW);
	assert_rc(tkshm_block_at(fw, "ab", 2, until, NOW), TKSHM_ENOTSUP);
	assert_int_equal(peek(fw, "ab", 2, NOW).remaining, 6);

	assert_rc(tkshm_block_at(g, "cd", 2, NOW, NOW), TKSHM_EINVAL);
	assert_rc(tkshm_block_at(g, "cd", 2, NAN, NOW), TKSHM_EINVAL);
	assert_rc(tkshm_entry_get_at(g, "cd", 2, NOW, &(tkshm_entry){ 0 }),
		  TKSHM_ENOENT);
	tkshm_close(g);
	tkshm_close(tb);
	tkshm_close(fw);
}

static void
test_overrides_refused_read_only(void **state)
{
	const char *path = tkt_path("entries-ro.tk");
	tkshm_table *rw = tkt_file(path, SPEC, 64), *ro = NULL;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_entry e;

	(void)state;
	check(rw, "k", 1, 2, NOW);
	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &ro), TKSHM_OK);
	assert_rc(tkshm_set_remaining_at(ro, "k", 1, 5, NOW), TKSHM_EREADONLY);
	assert_rc(tkshm_block_at(ro, "k", 1, NOW + 10, NOW), TKSHM_EREADONLY);
	/* Reads work on the read-only handle. */
	assert_rc(tkshm_entry_get_at(ro, "k", 1, NOW, &e), TKSHM_OK);
	assert_int_equal(e.peek.remaining, 3);
	tkshm_close(ro);
	tkshm_close(rw);
}

/* An evicted key whose remembered debt denies even an insert is set all
 * the same (its debt cell is cleared, as a reset does). */
static void
test_set_over_remembered_debt(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 8);
	tkshm_stats s;
	tkshm_decision d;
	char key[8];

	(void)state;
	check(t, "d", 1, 5, NOW); /* TAT 1500: the least indebted below */
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof key, "o%d", i);
		check(t, key, strlen(key), 5, NOW + 1);
	}
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_true(s.evictions_in_debt >= 1);
	assert_rc(tkshm_entry_get_at(t, "d", 1, NOW + 1, &(tkshm_entry){ 0 }),
		  TKSHM_ENOENT);
	d = peek(t, "d", 1, NOW + 1);
	assert_false(d.allowed);
	assert_true(d.flags & TKSHM_DECISION_DEBT_RESTORED);

	assert_rc(tkshm_set_remaining_at(t, "d", 1, 3, NOW + 1), TKSHM_OK);
	assert_int_equal(peek(t, "d", 1, NOW + 1).remaining, 3);
	assert_exactly_admits(t, "d", 3, NOW + 1);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_known_keys),
		cmocka_unit_test(test_get_and_bad_input),
		cmocka_unit_test(test_denials_follow_the_key),
		cmocka_unit_test(test_label_words),
		cmocka_unit_test(test_corrupt_state_is_flagged),
		cmocka_unit_test(test_walk_wide_tables),
		cmocka_unit_test(test_set_remaining_every_kind),
		cmocka_unit_test(test_set_fraction_refused_by_token_budget),
		cmocka_unit_test(test_block),
		cmocka_unit_test(test_overrides_refused_read_only),
		cmocka_unit_test(test_set_over_remembered_debt),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
