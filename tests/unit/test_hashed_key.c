/*
 * test_hashed_key.c - tkshm_key_hash / tkshm_check_hashed_at, and the
 * TKSHM_O_HUGEPAGES open flag.
 *
 * A hashed key must be the same key as its bytes: two tables fed the same
 * timeline, one by bytes and one by hashed keys, must decide identically
 * and end with identical entries (labels included); a key hashed for one
 * table must be refused by another, and bad arguments change nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"

static const char *const kSpecs[] = {
	"gcra:limit=5,periodMs=1000,burst=3",
	"tokenBucket:capacity=4,refillPerSec=2",
	"slidingWindow:limit=6,windowMs=1000",
};

/* Keys short and long (beyond the 19 bytes a label keeps). */
static const char *const kKeys[] = {
	"a",
	"user:1",
	"user:2",
	"a-key-that-is-longer-than-any-label-keeps:42",
};
#define NKEYS (sizeof kKeys / sizeof kKeys[0])

/* Two tables of one policy fed one timeline, one by bytes and one by
 * hashed keys, for a one-word kind and two wide ones. */
static void
test_same_decisions(void **state)
{
	(void)state;
	for (size_t s = 0; s < sizeof kSpecs / sizeof kSpecs[0]; s++) {
		tkshm_table *a = tkt_anon(kSpecs[s], 64);
		tkshm_table *b = tkt_anon(kSpecs[s], 64);
		tkshm_key hk[NKEYS];
		double now = 1.7e12;

		for (size_t k = 0; k < NKEYS; k++)
			assert_rc(tkshm_key_hash(b, kKeys[k], strlen(kKeys[k]),
						 &hk[k]),
				  TKSHM_OK);
		for (int i = 0; i < 400; i++) {
			size_t k = (size_t)(i * 7 + i / 3) % NKEYS;
			double cost = (i % 5 == 0) ? 2 : 1;
			tkshm_decision da, db;
			char what[96];

			now += (i % 3) * 97.5;
			assert_rc(tkshm_check_at(a, kKeys[k], strlen(kKeys[k]),
						 cost, now, &da),
				  TKSHM_OK);
			assert_rc(tkshm_check_hashed_at(b, &hk[k], cost, now,
							&db),
				  TKSHM_OK);
			snprintf(what, sizeof what, "%s step %d key %s",
				 kSpecs[s], i, kKeys[k]);
			tkt_assert_decision(what, &db, &da);
			assert_int_equal(db.flags, da.flags);
		}
		/* Both tables hold the same keys with the same labels. */
		for (size_t k = 0; k < NKEYS; k++) {
			tkshm_entry ea, eb;
			size_t len = strlen(kKeys[k]);

			assert_rc(
				tkshm_entry_get_at(a, kKeys[k], len, now, &ea),
				TKSHM_OK);
			assert_rc(
				tkshm_entry_get_at(b, kKeys[k], len, now, &eb),
				TKSHM_OK);
			assert_int_equal(eb.key_len, len);
			assert_int_equal(eb.label_len, ea.label_len);
			assert_memory_equal(eb.label, kKeys[k], eb.label_len);
			assert_int_equal(eb.peek.remaining, ea.peek.remaining);
		}
		tkshm_close(a);
		tkshm_close(b);
	}
}

/* A second handle on the same file shares the seed: its hashed keys work
 * on the first handle, and find the same entry. */
static void
test_handles_of_one_file(void **state)
{
	const char *path = tkt_path("hashed");
	tkshm_table *a = tkt_file(path, kSpecs[0], 64);
	tkshm_table *b = tkt_file(path, kSpecs[0], 64);
	tkshm_key k;
	tkshm_decision d;

	(void)state;
	assert_rc(tkshm_key_hash(b, "user:1", 6, &k), TKSHM_OK);
	assert_rc(tkshm_check_hashed_at(a, &k, 1, 1000, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 2);
	assert_rc(tkshm_check_at(b, "user:1", 6, 1, 1000, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 1);
	tkshm_close(a);
	tkshm_close(b);
	remove(path);
}

static void
test_bad_input(void **state)
{
	tkshm_table *a = tkt_anon(kSpecs[0], 64);
	tkshm_table *other = tkt_anon(kSpecs[0], 64);
	tkshm_key k, forged, before;
	tkshm_decision d;
	tkshm_stats s0, s1;
	char longkey[TKSHM_KEY_MAX + 1];

	(void)state;
	memset(longkey, 'x', sizeof longkey);
	memset(&k, 0xAB, sizeof k);
	before = k;
	assert_rc(tkshm_key_hash(NULL, "k", 1, &k), TKSHM_ENULL);
	assert_rc(tkshm_key_hash(a, NULL, 1, &k), TKSHM_ENULL);
	assert_rc(tkshm_key_hash(a, "k", 1, NULL), TKSHM_ENULL);
	assert_rc(tkshm_key_hash(a, "k", 0, &k), TKSHM_EKEYEMPTY);
	assert_rc(tkshm_key_hash(a, longkey, sizeof longkey, &k),
		  TKSHM_EKEYLONG);
	assert_memory_equal(&k, &before, sizeof k); /* unchanged */
	assert_rc(tkshm_key_hash(a, longkey, TKSHM_KEY_MAX, &k), TKSHM_OK);
	assert_rc(tkshm_key_hash(a, "k", 1, &k), TKSHM_OK);

	assert_rc(tkshm_stats_get(a, &s0), TKSHM_OK);
	assert_rc(tkshm_check_hashed_at(NULL, &k, 1, 1, &d), TKSHM_ENULL);
	assert_rc(tkshm_check_hashed_at(a, NULL, 1, 1, &d), TKSHM_ENULL);
	assert_rc(tkshm_check_hashed_at(a, &k, 1, 1, NULL), TKSHM_ENULL);
	assert_rc(tkshm_check_hashed_at(a, &k, 0, 1, &d), TKSHM_ECOST);
	assert_rc(tkshm_check_hashed_at(a, &k, NAN, 1, &d), TKSHM_ECOST);
	assert_rc(tkshm_check_hashed_at(a, &k, 1, -1, &d), TKSHM_ENOW);
	assert_rc(tkshm_check_hashed_at(a, &k, 1, INFINITY, &d), TKSHM_ENOW);
	/* Hashed for another table (another seed): refused. */
	assert_rc(tkshm_check_hashed_at(other, &k, 1, 1, &d), TKSHM_EINVAL);
	/* Fields that no tkshm_key_hash() produces: refused. */
	forged = k;
	forged.fp_ = 0;
	assert_rc(tkshm_check_hashed_at(a, &forged, 1, 1, &d), TKSHM_EINVAL);
	forged = k;
	forged.len_ = 0;
	assert_rc(tkshm_check_hashed_at(a, &forged, 1, 1, &d), TKSHM_EINVAL);
	forged.len_ = TKSHM_KEY_MAX + 1;
	assert_rc(tkshm_check_hashed_at(a, &forged, 1, 1, &d), TKSHM_EINVAL);
	/* Nothing above decided or wrote anything. */
	assert_rc(tkshm_stats_get(a, &s1), TKSHM_OK);
	assert_int_equal(s1.allowed + s1.denied, s0.allowed + s0.denied);
	assert_int_equal(s1.inserts, s0.inserts);
	assert_rc(tkshm_check_hashed(a, &k, 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkshm_close(a);
	tkshm_close(other);
}

static void
test_read_only(void **state)
{
	const char *path = tkt_path("hashed-ro");
	tkshm_table *rw = tkt_file(path, kSpecs[0], 64);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *ro = NULL;
	tkshm_key k;
	tkshm_decision d;

	(void)state;
	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(path, &o, &ro), TKSHM_OK);
	assert_rc(tkshm_key_hash(ro, "k", 1, &k), TKSHM_OK);
	assert_rc(tkshm_check_hashed_at(ro, &k, 1, 1, &d), TKSHM_EREADONLY);
	assert_rc(tkshm_check_hashed_at(rw, &k, 1, 1, &d), TKSHM_OK);
	tkshm_close(ro);
	tkshm_close(rw);
	remove(path);
}

/* TKSHM_O_HUGEPAGES is advice: opening with it works whatever the kernel
 * does with it, for anonymous and file tables; unknown bits are refused. */
static void
test_hugepages_flag(void **state)
{
	tkshm_policy p = tkt_policy(kSpecs[0]);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_decision d;
	char err[160] = "";
	const char *path = tkt_path("huge");

	(void)state;
	o.policy = &p;
	o.slots = 1u << 16;
	o.flags = TKSHM_O_CREATE | TKSHM_O_HUGEPAGES;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_OK);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 1, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkshm_close(t);
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	assert_rc(tkshm_check_at(t, "k", 1, 1, 1, &d), TKSHM_OK);
	tkshm_close(t);

	o.flags = TKSHM_O_CREATE | 0x100u;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	t = NULL;
	assert_rc(tkshm_open(NULL, &o, &t), TKSHM_EINVAL);
	assert_null(t);
	tkt_expect_contains(err, "unknown flag bits 0x100", "error text");
	remove(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_decisions),
		cmocka_unit_test(test_handles_of_one_file),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_read_only),
		cmocka_unit_test(test_hugepages_flag),
	};
	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
