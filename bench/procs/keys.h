/*
 * keys.h - the key sets of the scenarios, walked without storing them.
 *
 * A key set of n keys holds n distinct ids written "user:NNNNNN" (six
 * digits, up to a million keys) or "user:NNNNNNNN" (eight digits, above);
 * n == 1 is the hot key "user:123456".  A worker walks the set in its own
 * order: a stride walk j -> j + a (mod n) from a random start, with a
 * random stride a coprime with n, so every key comes once per lap.  The
 * key's text is made on the fly (a few ns, in registers): a worker reads
 * no key memory at all, so 32 workers do not push the table out of the
 * cache with 32 copies of the key set, and only the table's lines are
 * random accesses, as a server's would be.
 */
#ifndef TKSHM_BENCH_PROCS_KEYS_H
#define TKSHM_BENCH_PROCS_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* The longest key text: "user:" and eight digits. */
#define KEYS_MAX_LEN 13

struct keywalk {
	uint64_t n;	  /* keys in the set */
	uint64_t range;	  /* 10^digits */
	uint64_t j;	  /* position in the set, 0..n-1 */
	uint64_t a;	  /* stride, coprime with n */
	uint64_t id;	  /* the key's id: j * KEYS_SPREAD mod range */
	uint64_t id_step; /* a * KEYS_SPREAD mod range */
	uint64_t id_wrap; /* n * KEYS_SPREAD mod range */
	int digits;
};

/* Starts a walk of the set of n keys (1..10^8): seed 0 walks it in the
 * set's own order (stride 1 from 0), any other seed in an order drawn from
 * it.  Returns 0, or -1 when n is out of range. */
int keys_walk_init(struct keywalk *w, uint64_t n, uint64_t seed);

/* Writes the current key into buf (KEYS_MAX_LEN bytes, no NUL), returns
 * its length and moves to the next key. */
static inline size_t
keys_walk_next(struct keywalk *w, char *buf)
{
	static const char pairs[] = "00010203040506070809"
				    "10111213141516171819"
				    "20212223242526272829"
				    "30313233343536373839"
				    "40414243444546474849"
				    "50515253545556575859"
				    "60616263646566676869"
				    "70717273747576777879"
				    "80818283848586878889"
				    "90919293949596979899";
	uint64_t id = w->n == 1 ? 123456 : w->id;
	int digits = w->digits;

	buf[0] = 'u';
	buf[1] = 's';
	buf[2] = 'e';
	buf[3] = 'r';
	buf[4] = ':';
	for (int i = 5 + digits - 2; i >= 5; i -= 2) {
		unsigned two = (unsigned)(id % 100);

		buf[i] = pairs[2 * two];
		buf[i + 1] = pairs[2 * two + 1];
		id /= 100;
	}
	/* Next: j + a, wrapping at n; the id follows by the same steps
	 * (each below range, so one conditional correction each). */
	w->j += w->a;
	w->id += w->id_step;
	if (w->id >= w->range)
		w->id -= w->range;
	if (w->j >= w->n) {
		w->j -= w->n;
		w->id += w->range - w->id_wrap;
		if (w->id >= w->range)
			w->id -= w->range;
	}
	return (size_t)(5 + digits);
}

/* splitmix64: a fixed generator, the same on every libc. */
uint64_t keys_splitmix64(uint64_t *state);

#endif /* TKSHM_BENCH_PROCS_KEYS_H */
