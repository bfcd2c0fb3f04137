/*
 * words.h - algorithm states as arrays of 64-bit words.
 *
 * Every algorithm's state is a fixed number of 64-bit words (GCRA: 1, token
 * bucket: 2, sliding window: buckets + 2, ...), so the store can move
 * states without knowing their meaning.  Doubles are kept as their exact
 * IEEE-754 bit patterns (round-trip exact, like ThrottleKit's "%.17g"),
 * integers as two's complement.
 *
 * A REAL state never has its top 13 bits all set (src/shm/protocol.h, I4):
 * doubles here are finite and integers are below 2^51 in magnitude.
 */
#ifndef TKSHM_BASE_WORDS_H
#define TKSHM_BASE_WORDS_H

#include <stdint.h>
#include <string.h>

static inline double
tk_word_f64(uint64_t w)
{
	double d;
	memcpy(&d, &w, sizeof d);
	return d;
}

static inline uint64_t
tk_f64_word(double d)
{
	uint64_t w;
	memcpy(&w, &d, sizeof w);
	return w;
}

static inline int64_t
tk_word_i64(uint64_t w)
{
	return (int64_t)w;
}

static inline uint64_t
tk_i64_word(int64_t v)
{
	return (uint64_t)v;
}

#endif /* TKSHM_BASE_WORDS_H */
