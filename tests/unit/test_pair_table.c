/*
 * test_pair_table.c - two-word states kept in pairs (protocol.h, P1-P9).
 *
 * The transitions themselves are the algorithms' (test_wide_table.c runs
 * them against the pure transitions on pair tables too); these tests play
 * the protocol's races one step at a time: a reclaim stopped between its
 * freeze and its slot CAS, a write that read under one occupancy and
 * lands after it ended, a seal's freeze, and scribbled pairs.
 */
#define _GNU_SOURCE /* timegm, gmtime_r (algo_testing.h) */
#include <float.h>
#include <math.h>
#include <string.h>

#include "algo_testing.h"
#include "base/words.h"
#include "shm/pair.h"
#include "shm/table.h"
#include "shm/wide.h"
#include "slot_testing.h"

#define FW "fixedWindow:limit=5,windowMs=1000"

static double
remaining_after_check(tkshm_table *t, const char *key, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, strlen(key), 1, now, &d), TKSHM_OK);
	assert_true(d.allowed);
	return (double)d.remaining;
}

/* Two-word kinds are pairs: one 16-byte pair per slot; the others are not. */
static void
pair_kinds(void **state)
{
	static const struct {
		const char *spec;
		bool pairs;
	} kinds[] = {
		{ "tokenBucket:capacity=10,refillPerSec=1", true },
		{ FW, true },
		{ "quota:limit=5,resetCadence=calendar-day", true },
		{ "tokenBudget:budget=100,windowMs=1000", true },
		{ "quota:limit=5,resetCadence=rolling,periodMs=1000,buckets=4",
		  false },
		{ "slidingWindow:limit=5,windowMs=1000,buckets=4", false },
		{ "fixedWindow:limit=9,windowMs=60000;mode=lease,"
		  "failure=fail-closed,prefix=pt",
		  false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		tkshm_table *t = tkt_anon(kinds[i].spec, 64);

		if (t->pairs != kinds[i].pairs)
			fail_msg("%s: pairs %d", kinds[i].spec, t->pairs);
		if (t->pairs)
			assert_int_equal(t->wide_stride,
					 sizeof(struct tk_pair));
		tkshm_close(t);
	}
}

/* P8: one state has other bytes under another occupancy; every finite
 * x1 >= 0 round-trips, -0 as +0; nothing else encodes. */
static void
encoding(void **state)
{
	const double x1s[] = { 0.0, -0.0, 4.9e-324, 1.0, 1e300, DBL_MAX };
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t x[2] = { 0, 0 }, back[2] = { 0, 0 }, tag = 0;
	struct tk_pair p = { 0, 0 }, q = { 0, 0 };

	(void)state;
	for (size_t i = 0; i < sizeof x1s / sizeof x1s[0]; i++) {
		x[0] = tk_f64_word(1700000000000.0);
		x[1] = tk_f64_word(x1s[i]);
		assert_true(tk_pair_encode(t, 77, x, &p));
		assert_true(tk_pair_encode(t, 78, x, &q));
		assert_true(p.a != q.a && p.b != q.b);
		assert_int_equal(tk_pair_decode(t, 77, p, back, &tag),
				 TK_PAIR_OPEN);
		assert_int_equal(back[0], x[0]);
		assert_true(tk_word_f64(back[1]) == x1s[i]);
		assert_false(signbit(tk_word_f64(back[1])));
	}
	x[1] = tk_f64_word(-1.0);
	assert_false(tk_pair_encode(t, 77, x, &p));
	x[1] = tk_f64_word(INFINITY);
	assert_false(tk_pair_encode(t, 77, x, &p));
	x[1] = tk_f64_word(NAN);
	assert_false(tk_pair_encode(t, 77, x, &p));
	/* A table's zero-filled pairs are ABSENT(0). */
	p = (struct tk_pair){ 0, 0 };
	assert_int_equal(tk_pair_decode(t, 77, p, back, &tag), TK_PAIR_ABSENT);
	assert_int_equal(tag, 0);
	tkshm_close(t);
}

/* P4 with the reclaimer stopped between its freeze and its slot CAS: the
 * key's next writer adopts, the reclaimer's slot CAS fails, and nothing
 * the writer admitted is lost. */
static void
stopped_reclaim_is_outrun(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, c2, idx, tag = 0x1234567;
	struct tk_pair p;

	(void)state;
	assert_true(remaining_after_check(t, "k", 100) == 4);
	idx = tkt_slot_of(t, "k", &fp, &c);
	/* Live in window [0, 1000): no reclaim. */
	p = tk_pair_load(t, idx);
	assert_false(tk_pair_reclaim(t, idx, fp, c, 500, tag));
	assert_true(memcmp(&p, tk_pair_at(t, idx), sizeof p) == 0);
	/* Idle at 1500: frozen ABSENT(tag); the reclaimer stops there. */
	assert_true(tk_pair_reclaim(t, idx, fp, c, 1500, tag));
	p = tk_pair_load(t, idx);
	assert_true(p.b == (TK_PAIR_ABSENT_BASE | tag));
	/* The key's writer finds ABSENT(tag != c): adopts, then writes. */
	assert_true(remaining_after_check(t, "k", 1500) == 4);
	assert_true(remaining_after_check(t, "k", 1500) == 3);
	assert_int_equal(tkt_slot_of(t, "k", &fp, &c2), idx);
	assert_true(c2 != c);
	/* The reclaimer resumes: its slot CAS fails. */
	assert_false(tk_cas128(tk_slot_at(t, idx), fp, c, UINT64_C(0x99),
			       tk_st_placeholder(tag)));
	assert_true(remaining_after_check(t, "k", 1500) == 2);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* P3, P8: a write that read under one occupancy cannot land after the
 * pair moved on, even onto the same state again. */
static void
stale_write_fails(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, c2, idx;
	struct tk_pair before, stale_next = { 0, 0 };

	(void)state;
	assert_true(remaining_after_check(t, "k", 100) == 4);
	idx = tkt_slot_of(t, "k", &fp, &c);
	before = tk_pair_load(t, idx);
	/* What a stalled writer would write: one more admission. */
	{
		uint64_t x[2] = { 0, 0 }, tag = 0;

		assert_int_equal(tk_pair_decode(t, c, before, x, &tag),
				 TK_PAIR_OPEN);
		x[1] = tk_f64_word(tk_word_f64(x[1]) + 1);
		assert_true(tk_pair_encode(t, c, x, &stale_next));
	}
	/* The occupancy ends (reclaimed idle) and the key comes back with
	 * the very same state under a new occupancy. */
	assert_true(tk_pair_reclaim(t, idx, fp, c, 1500, 0x4242));
	assert_true(remaining_after_check(t, "k", 100) == 4);
	assert_int_equal(tkt_slot_of(t, "k", &fp, &c2), idx);
	assert_true(c2 != c);
	assert_false(tk_pair_cas(t, idx, before, stale_next));
	assert_true(remaining_after_check(t, "k", 100) == 3);
	tkshm_close(t);
}

/* P6: reset writes ABSENT(c), and leaves a reclaim's ABSENT(x != c). */
static void
reset_keeps_pending_reclaim(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, idx, tag = 0x777;
	struct tk_pair p;

	(void)state;
	(void)remaining_after_check(t, "k", 100);
	(void)remaining_after_check(t, "k", 100);
	idx = tkt_slot_of(t, "k", &fp, &c);
	assert_rc(tkshm_reset(t, "k", 1), TKSHM_OK);
	p = tk_pair_load(t, idx);
	assert_true(p.b == (TK_PAIR_ABSENT_BASE | c));
	assert_true(remaining_after_check(t, "k", 100) == 4);
	assert_true(tk_pair_reclaim(t, idx, fp, c, 1500, tag));
	assert_rc(tkshm_reset(t, "k", 1), TKSHM_OK);
	p = tk_pair_load(t, idx);
	assert_true(p.b == (TK_PAIR_ABSENT_BASE | tag));
	/* ... so the stopped reclaimer still loses to the next writer. */
	assert_true(remaining_after_check(t, "k", 1500) == 4);
	assert_false(tk_cas128(tk_slot_at(t, idx), fp, c, UINT64_C(0x99),
			       tk_st_placeholder(tag)));
	tkshm_close(t);
}

/* P7: the seal's freeze makes every fetcher read one state, and a write
 * read before the freeze fails. */
static void
seal_freezes(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, idx, w1[TK_ALGO_MAX_WORDS], w2[TK_ALGO_MAX_WORDS];
	struct tk_pair open;

	(void)state;
	(void)remaining_after_check(t, "k", 100);
	idx = tkt_slot_of(t, "k", &fp, &c);
	open = tk_pair_load(t, idx);
	/* Not sealed yet: nothing to freeze. */
	assert_false(tk_pair_sealed_words(t, idx, w1));
	assert_true(tk_cas128(tk_slot_at(t, idx), fp, c, fp | TK_FP_SEAL, c));
	assert_true(tk_pair_sealed_words(t, idx, w1));
	assert_true(tk_pair_load(t, idx).b & TK_PAIR_SEALED_BIT);
	assert_true(tk_word_f64(w1[1]) == 1);
	assert_false(tk_pair_cas(t, idx, open, open));
	assert_true(tk_pair_sealed_words(t, idx, w2));
	assert_memory_equal(w1, w2, 2 * sizeof w1[0]);
	tkshm_close(t);
}

/* Scribbled pairs: a check reports corruption, verify names it, a reset
 * gives the key back; an OPEN pair under a placeholder fails the insert
 * instead of being read as another key's state (P2, P5). */
static void
scribbled_pairs(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, idx;
	tkshm_decision d;
	struct tk_pair *p;

	(void)state;
	(void)remaining_after_check(t, "k", 100);
	idx = tkt_slot_of(t, "k", &fp, &c);
	p = tk_pair_at(t, idx);
	/* Sealed under an unsealed slot. */
	tk_store_relaxed(&p->b, tk_load_relaxed(&p->b) | TK_PAIR_SEALED_BIT);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 100, &d), TKSHM_ECORRUPT);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_ECORRUPT);
	assert_rc(tkshm_reset(t, "k", 1), TKSHM_OK);
	assert_true(remaining_after_check(t, "k", 100) == 4);
	/* A NaN that is no ABSENT marker (its quiet bit clear). */
	tk_store_relaxed(&p->b, UINT64_C(0x7FF4000000000000));
	assert_rc(tkshm_check_at(t, "k", 1, 1, 100, &d), TKSHM_ECORRUPT);
	assert_rc(tkshm_reset(t, "k", 1), TKSHM_OK);
	assert_true(remaining_after_check(t, "k", 100) == 4);
	/* An OPEN pair left under an EMPTY slot. */
	{
		tkshm_table *u = tkt_anon(FW, 8);
		uint64_t x[2] = { tk_f64_word(0), tk_f64_word(1) };

		for (uint64_t i = 0; i < u->nbuckets * TK_SLOTS_PER_BUCKET; i++)
			assert_true(tk_pair_encode(u, 5, x, tk_pair_at(u, i)));
		assert_rc(tkshm_verify(u, NULL, NULL, NULL), TKSHM_ECORRUPT);
		assert_rc(tkshm_check_at(u, "n", 1, 1, 100, &d),
			  TKSHM_ECORRUPT);
		tkshm_close(u);
	}
	tkshm_close(t);
}

/* P5 with the inserter stopped before marking its pair: a rival inserter
 * of the key took its placeholder over (I6), made it REAL and wrote.  The
 * stale inserter then finds the slot no longer its own and leaves the
 * pair alone (it once read the OPEN pair as a broken P2: mp_lifecycle
 * caught it under load). */
static void
stale_inserter_leaves_pair(void **state)
{
	tkshm_table *t = tkt_anon(FW, 64);
	uint64_t fp, c, idx, stale = tk_st_placeholder(0x5151);
	struct tk_pair before;

	(void)state;
	assert_true(remaining_after_check(t, "k", 100) == 4);
	idx = tkt_slot_of(t, "k", &fp, &c);
	before = tk_pair_load(t, idx);
	assert_int_equal(tk_pair_fresh(t, idx, fp, stale), TK_WIDE_GONE);
	assert_memory_equal(&before, tk_pair_at(t, idx), sizeof before);
	assert_true(remaining_after_check(t, "k", 100) == 3);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pair_kinds),
		cmocka_unit_test(encoding),
		cmocka_unit_test(stopped_reclaim_is_outrun),
		cmocka_unit_test(stale_write_fails),
		cmocka_unit_test(reset_keeps_pending_reclaim),
		cmocka_unit_test(seal_freezes),
		cmocka_unit_test(stale_inserter_leaves_pair),
		cmocka_unit_test(scribbled_pairs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
