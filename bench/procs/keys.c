/*
 * keys.c - key sets: distinct ids, formatted without printf (ten million
 * snprintf calls would cost a second per process).
 */
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* Multiplying by a number coprime with 10^d permutes 0..10^d-1, so the
 * first n multiples give n distinct ids spread over the whole range, with
 * no table of a million ids to shuffle.  6700417 is prime, odd and not a
 * multiple of 5. */
#define KEYS_SPREAD UINT64_C(6700417)

uint64_t
keys_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static void
key_write(struct pkey *k, uint64_t id, int digits)
{
	memcpy(k->s, "user:", 5);
	for (int i = digits - 1; i >= 0; i--) {
		k->s[5 + i] = (char)('0' + id % 10);
		id /= 10;
	}
	k->len = (uint8_t)(5 + digits);
}

struct pkey *
keys_make(size_t n, uint64_t seed)
{
	int digits = n <= 1000000 ? 6 : 8;
	uint64_t range = digits == 6 ? 1000000 : 100000000;
	struct pkey *keys;

	if (n == 0 || n > range)
		return NULL;
	keys = calloc(n, sizeof *keys);
	if (!keys)
		return NULL;
	if (n == 1) {
		key_write(&keys[0], 123456, 6);
		return keys;
	}
	for (size_t i = 0; i < n; i++)
		key_write(&keys[i], (uint64_t)i * KEYS_SPREAD % range, digits);
	if (seed != 0) {
		for (size_t i = n - 1; i > 0; i--) {
			size_t j = (size_t)(keys_splitmix64(&seed) % (i + 1));
			struct pkey t = keys[i];

			keys[i] = keys[j];
			keys[j] = t;
		}
	}
	return keys;
}
