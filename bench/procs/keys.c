/*
 * keys.c - starting a walk of a key set (keys.h).
 */
#include "keys.h"

/* Multiplying by a number coprime with 10^d permutes 0..10^d-1, so ids
 * j * KEYS_SPREAD mod 10^d, j < n, are n distinct ids spread over the
 * whole range.  6700417 is prime, odd and not a multiple of 5. */
#define KEYS_SPREAD UINT64_C(6700417)

uint64_t
keys_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static uint64_t
keys_gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int
keys_walk_init(struct keywalk *w, uint64_t n, uint64_t seed)
{
	if (n == 0 || n > 100000000)
		return -1;
	w->n = n;
	w->digits = n <= 1000000 ? 6 : 8;
	w->range = w->digits == 6 ? 1000000 : 100000000;
	w->j = 0;
	w->a = 1;
	if (seed != 0 && n > 2) {
		w->j = keys_splitmix64(&seed) % n;
		/* A stride far from 1 and n - 1 (neighbours in the set stay
		 * apart), coprime with n (the walk covers every key). */
		do
			w->a = n / 4 + keys_splitmix64(&seed) % (n / 2);
		while (keys_gcd(w->a, n) != 1);
	}
	w->id = w->j * KEYS_SPREAD % w->range;
	w->id_step = w->a * KEYS_SPREAD % w->range;
	w->id_wrap = n * KEYS_SPREAD % w->range;
	return 0;
}
