/*
 * slot_testing.h - where a key's state lies, for the unit tests that play
 * the slot, wide and pair protocols one step at a time.
 */
#ifndef TKSHM_TESTS_SLOT_TESTING_H
#define TKSHM_TESTS_SLOT_TESTING_H

#include <stdint.h>
#include <string.h>

#include "shm/table.h"
#include "test_support.h"

/* The index of the slot holding `key`'s REAL state (the key must be
 * present; the test fails otherwise), with its fingerprint in *fp and its
 * st in *st when not NULL.  Not inlined, and the key copied to a
 * full-size buffer: gcc 12 at -O2 would otherwise propagate a short
 * literal into XXH3's long-input path, which it never takes, and warn
 * (-Warray-bounds) about reads past it. */
static __attribute__((noinline, unused)) uint64_t
tkt_slot_of(const tkshm_table *t, const char *key, uint64_t *fp, uint64_t *st)
{
	char buf[TKSHM_KEY_MAX];
	size_t len = strlen(key);
	struct tk_where w;
	uint64_t s = 0;
	int pos;

	assert_true(len <= sizeof buf);
	memcpy(buf, key, len);
	tk_where_of(t, tk_key_fp(t, buf, len), &w);
	pos = tk_find_real(t, &w, &s);
	if (pos < 0)
		fail_msg("no REAL slot for %s", key);
	if (fp)
		*fp = w.fp;
	if (st)
		*st = s;
	return tk_window_index(&w, (unsigned)pos);
}

#endif /* TKSHM_TESTS_SLOT_TESTING_H */
