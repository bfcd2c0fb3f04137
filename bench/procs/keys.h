/*
 * keys.h - the key sets of the scenarios, as fixed-size records.
 *
 * A key set of n keys holds n distinct ids written "user:NNNNNN" (six
 * digits, up to a million keys) or "user:NNNNNNNN" (eight digits, above).
 * Each worker process builds its own copy in its own pseudo-random order
 * and walks it cyclically: reading the next key is a sequential stream (a
 * request's key is already in cache), while the table lines it lands on
 * are random, as in bench/bench_check.cc.
 */
#ifndef TKSHM_BENCH_PROCS_KEYS_H
#define TKSHM_BENCH_PROCS_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* One key: its bytes and length, 16 bytes so four share a cache line. */
struct pkey {
	char s[15];
	uint8_t len;
};

/* The n keys of a set, in the order given by `seed` (0: the set's own
 * order, the same in every process; any other seed: a Fisher-Yates
 * shuffle driven by it).  n == 1 gives the hot key "user:123456".
 * Returns a malloc'd array, or NULL when out of memory. */
struct pkey *keys_make(size_t n, uint64_t seed);

/* splitmix64: a fixed generator, the same on every libc. */
uint64_t keys_splitmix64(uint64_t *state);

#endif /* TKSHM_BENCH_PROCS_KEYS_H */
