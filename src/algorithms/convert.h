/*
 * convert.h - a key's state under one algorithm read as a state of
 * another, for a table replaced by one of another kind or shape
 * (src/shm/carry.c, docs/lifecycle.md).
 *
 * A conversion keeps what the key owes, in units, never less:
 *   gcra -> tokenBucket  at r = TAT - tau the key owed tau/T units: the
 *                        bucket is left that far below its capacity at r
 *                        and refills from there;
 *   tokenBucket -> gcra  at `last` the key owed capacity - tokens units:
 *                        TAT = last + owed * T (the new T);
 *   window counts        fixedWindow and slidingWindow (any buckets or
 *                        window): each count is put at the time its
 *                        window or sub-bucket began, in the target's
 *                        window or sub-bucket holding that time; counts
 *                        that meet in one target entry are added.
 * Every other pair does not convert: the key starts afresh.
 */
#ifndef TKSHM_ALGORITHMS_CONVERT_H
#define TKSHM_ALGORITHMS_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/algorithm.h"

/* True when a state of `from` reads the same under `to` (the same kind,
 * words and tick width): a change between them can be made in place. */
bool tk_algo_same_reading(const struct tk_algo *from, const struct tk_algo *to);

/* True when states of `from` convert into states of `to`. */
bool tk_algo_converts(const struct tk_algo *from, const struct tk_algo *to);

/* Converts state st of `from` into out (to->words words), as the key
 * stands at `now` (the caller's time, in the states' time base): what it
 * owes then is owed under `to`, paid at `to`'s pace.  False when the pair
 * does not convert or the result would not be a valid state. */
bool tk_algo_convert(const struct tk_algo *from, const uint64_t *st,
		     const struct tk_algo *to, double now, uint64_t *out);

#endif /* TKSHM_ALGORITHMS_CONVERT_H */
