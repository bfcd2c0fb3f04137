/*
 * test_lifecycle_mp.c - a table's policy and size change while 8 worker
 * processes hammer it, each on a handle of its own (as the workers of a
 * server are): docs/lifecycle.md, protocol.h L1-L6.
 *
 * Times are fixed (`_at`, now = N0, windows of 1e12 ms), so nothing
 * refills during a test and every count is exact:
 *   raise_in_place   fixedWindow 1000 -> 2500 once the 1000 are spent:
 *                    exactly 1000 before the switch, 2500 in all;
 *   lower_in_place   2000 -> 600 while the key is being spent: at most the
 *                    new limit or what stood at the switch, plus the
 *                    checks in flight at the switch, which were decided
 *                    under the old one (at most one per worker: reported);
 *   grow_one_key     1024 -> 8192 slots at about 1000 of 3000: exactly 3000
 *                    (the seal protocol loses no admission and makes none);
 *   grow_many_keys   300 keys of 5, random order, grown twice under load:
 *                    every key exactly 5;
 *   kind_change      fixedWindow 1000 -> slidingWindow 500 (not carried):
 *                    what the old table admitted plus at most 500.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"

#define NPROC 8
#define N0    1e6
#define NKEYS 300

struct shared {
	struct mp_barrier bar;
	uint64_t admitted;	    /* every admission, all workers */
	uint64_t per_key[NKEYS];    /* grow_many_keys */
	uint64_t denied;	    /* denials seen, all workers */
	uint32_t stop;		    /* set by the parent */
	uint32_t nkeys;		    /* 1: the key "hot"; else NKEYS */
	char path[256];
};

static struct shared *sh;

static uint64_t
ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* A worker: its own handle, checks until the parent says stop. */
static int
worker(void *arg)
{
	uint64_t seed = mp_seed() ^ (uint64_t)(uintptr_t)arg;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t;
	char key[32];

	o.flags = 0; /* attach: the parent made the table */
	MP_REQUIRE(tkshm_open(sh->path, &o, &t) == TKSHM_OK, "worker open");
	if (!mp_barrier_wait(&sh->bar))
		return 1;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		uint64_t k = sh->nkeys > 1 ? mp_rand_below(&seed, sh->nkeys) : 0;
		tkshm_decision d;
		int rc;

		snprintf(key, sizeof key, sh->nkeys > 1 ? "key-%llu" : "hot",
			 (unsigned long long)k);
		rc = tkshm_check_at(t, key, strlen(key), 1, N0, &d);
		MP_REQUIRE(rc == TKSHM_OK, "check: %s", tkshm_error_name(rc));
		if (d.allowed) {
			__atomic_add_fetch(&sh->admitted, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&sh->per_key[k], 1,
					   __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&sh->denied, 1, __ATOMIC_RELAXED);
			sched_yield();
		}
	}
	tkshm_close(t);
	return 0;
}

static tkshm_table *
start(const char *name, const char *spec, uint64_t slots, uint32_t nkeys)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_policy p = tkt_policy(spec);
	tkshm_table *t;

	memset(sh, 0, sizeof *sh);
	snprintf(sh->path, sizeof sh->path, "%s", tkt_path(name));
	unlink(sh->path);
	sh->nkeys = nkeys;
	sh->bar.n = NPROC + 1;
	o.policy = &p;
	o.slots = slots;
	assert_rc(tkshm_open(sh->path, &o, &t), TKSHM_OK);
	for (long i = 0; i < NPROC; i++)
		mp_spawn(worker, (void *)i);
	assert_true(mp_barrier_wait(&sh->bar));
	return t;
}

/* Waits until the keys are spent: the admissions count stood still while
 * the workers were denied 40 times per key (each check picks one of the
 * keys at random, so a key with units left is picked long before), and
 * for 20 ms at least. */
static uint64_t
wait_spent(void)
{
	uint64_t need = 40 * (uint64_t)sh->nkeys + 100;

	for (int i = 0; i < 2000; i++) {
		uint64_t a = ld(&sh->admitted), d = ld(&sh->denied);

		mp_sleep_us(20000);
		for (int w = 0; w < 10000 && !mp_failed() &&
				ld(&sh->admitted) == a && ld(&sh->denied) < d + need;
		     w++)
			mp_sleep_us(1000);
		if (ld(&sh->admitted) == a)
			return a;
	}
	fail_msg("the admissions never settled");
	return 0;
}

static void
wait_admitted(uint64_t n)
{
	for (int i = 0; i < 200000 && ld(&sh->admitted) < n; i++)
		mp_sleep_us(50);
}

static void
finish(tkshm_table *t)
{
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	mp_wait_all(60);
	mp_verify(t, "after the switch");
	tkshm_close(t);
	unlink(sh->path);
}

static void
apply(tkshm_table *t, const char *spec, uint64_t slots,
      tkshm_change_kind want)
{
	tkshm_policy p;
	tkshm_change c;

	if (spec)
		p = tkt_policy(spec);
	assert_rc(tkshm_apply(t, spec ? &p : NULL, slots, &c), TKSHM_OK);
	assert_int_equal(c.kind, want);
	print_message("    %s\n", c.text);
}

static void
test_raise_in_place(void **state)
{
	tkshm_table *t =
		start("raise.tk", "fixedWindow:limit=1000,windowMs=1e12", 64, 1);

	(void)state;
	assert_int_equal(wait_spent(), 1000);
	apply(t, "fixedWindow:limit=2500,windowMs=1e12", 0,
	      TKSHM_CHANGE_IN_PLACE);
	assert_int_equal(wait_spent(), 2500);
	finish(t);
}

static void
test_lower_in_place(void **state)
{
	tkshm_table *t =
		start("lower.tk", "fixedWindow:limit=2000,windowMs=1e12", 64, 1);
	uint64_t before, after, total, bound;

	(void)state;
	wait_admitted(300);
	before = ld(&sh->admitted);
	apply(t, "fixedWindow:limit=600,windowMs=1e12", 0,
	      TKSHM_CHANGE_IN_PLACE);
	/* The switch fell between `before` and `after`: what was admitted
	 * until then stands (the old limit was 2000); from then on the key
	 * has the new limit, past the checks in flight at the switch, which
	 * were decided under the old policy (at most one per worker). */
	after = ld(&sh->admitted);
	total = wait_spent();
	bound = after > 600 ? after : 600;
	print_message("    %llu to %llu admitted around the switch, %llu in "
		      "all (limit 600; in flight under the old policy: "
		      "%llu)\n",
		      (unsigned long long)before, (unsigned long long)after,
		      (unsigned long long)total,
		      (unsigned long long)(total > bound ? total - bound : 0));
	assert_true(total <= bound + NPROC);
	assert_true(total >= 600);
	finish(t);
}

static void
test_grow_one_key(void **state)
{
	tkshm_table *t = start("grow1.tk",
			       "fixedWindow:limit=3000,windowMs=1e12", 1024, 1);

	(void)state;
	wait_admitted(1000);
	apply(t, NULL, 8192, TKSHM_CHANGE_REPLACE);
	assert_int_equal(wait_spent(), 3000);
	finish(t);
}

static void
test_grow_many_keys(void **state)
{
	tkshm_table *t =
		start("growN.tk", "gcra:limit=5,periodMs=1e12", 512, NKEYS);

	(void)state;
	wait_admitted(NKEYS * 5 / 3);
	apply(t, NULL, 2048, TKSHM_CHANGE_REPLACE);
	wait_admitted(NKEYS * 5 * 2 / 3);
	apply(t, NULL, 8192, TKSHM_CHANGE_REPLACE);
	assert_int_equal(wait_spent(), NKEYS * 5);
	for (int k = 0; k < NKEYS; k++)
		if (sh->per_key[k] != 5)
			fail_msg("key-%d admitted %llu times, not 5", k,
				 (unsigned long long)sh->per_key[k]);
	finish(t);
}

static void
test_kind_change(void **state)
{
	tkshm_table *t =
		start("kind.tk", "fixedWindow:limit=1000,windowMs=1e12", 64, 1);
	uint64_t total;

	(void)state;
	wait_admitted(400);
	apply(t, "slidingWindow:limit=500,windowMs=1e12", 0,
	      TKSHM_CHANGE_REPLACE);
	total = wait_spent();
	print_message("    %llu admitted in all (old table at most 1000, "
		      "the new one 500)\n",
		      (unsigned long long)total);
	assert_true(total >= 500 && total <= 1000 + 500);
	finish(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_raise_in_place, mp_teardown),
		cmocka_unit_test_teardown(test_lower_in_place, mp_teardown),
		cmocka_unit_test_teardown(test_grow_one_key, mp_teardown),
		cmocka_unit_test_teardown(test_grow_many_keys, mp_teardown),
		cmocka_unit_test_teardown(test_kind_change, mp_teardown),
	};

	sh = tkt_shared(sizeof *sh);
	return cmocka_run_group_tests(tests, mp_setup, tkt_teardown);
}
