/*
 * state_codec.h - between the Redis encodings of ThrottleKit's states and
 * tkshm's state words, and the numbers of a script's ARGV.
 *
 * The scripts (src/redis/lua/) list a key's state after each decision in
 * its Redis encoding, exactly as the plain read commands answer it, so one
 * decoder serves a script's reply, read.lua's and a raw read:
 *
 *   kind                          Redis key   listed as (absent: nothing,
 *                                             or every element nil)
 *   gcra, leakyBucket             STRING      GET:            value
 *   tokenBucket                   HASH        HMGET t l:      t, l
 *   fixedWindow, quota (calendar  HASH        HMGET s c:      s, c
 *     and fixed cadences)
 *   slidingWindow, quota rolling  HASH        HGETALL:        field, value...
 *   slidingWindowLog              ZSET        ZRANGE 0 -1 WITHSCORES:
 *                                                             member, score...
 *
 * Numbers are read as the scripts' Lua reads them (tonumber: strtod, then
 * nothing but white space), and the state is what the scripts decide from:
 * a hash missing a field, or a value that is not a number, is an absent
 * key; a sliding-window entry that does not parse or does not belong to
 * its field is an empty entry.  The words are then exactly those tkshm's
 * shared-memory algorithm holds for that state (src/algorithms/), so
 * tk_algo_peek_w() on them decides as the scripts would.  A reply that is
 * not such a listing (an element of another type, a duplicate field, more
 * stamps than the log keeps) or whose state tkshm would not hold
 * (tk_algo_state_valid_w fails: a non-finite number, a count beyond the
 * limit...) is refused with TKSHM_EREDIS.  Every index and length is
 * checked: no reply can make the decoder read or write out of bounds.
 */
#ifndef TKSHM_REDIS_STATE_CODEC_H
#define TKSHM_REDIS_STATE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "algorithms/algorithm.h"
#include "tkshm.h"

/* Decodes the `n` elements of a state listing into a->words state words.
 * TKSHM_OK with *present false (words zeroed) for an absent key, or true
 * with words[] the state; TKSHM_EREDIS for a malformed listing (words and
 * *present then unspecified); TKSHM_ENOTSUP for a kind that has no Redis
 * encoding (tokenBudget, the concurrency kinds); TKSHM_ENULL for a NULL
 * a, words or present, or a NULL elems with n > 0. */
int tk_state_from_reply(const struct tk_algo *a, const redisReply *const *elems,
			size_t n, uint64_t *words, bool *present);

/* read.lua's `type` for a kind (1 STRING, 2 HASH t l, 3 HASH s c, 4 ring
 * HASH, 5 ZSET), or 0 for a kind that has no Redis encoding. */
int tk_state_read_type(const struct tk_algo *a);

/* A buffer that holds any tk_arg_f64() string. */
#define TK_ARG_F64_LEN 32

/* Writes v as a script argument: an integral |v| < 1e21 as a plain integer
 * ("1700000000000"), any other finite v as "%.17g", which Lua's tonumber
 * (strtod) reads back as the same double.  Returns the length written
 * (without the NUL); 0, with buf holding "", when v is not finite or the
 * string does not fit in len bytes (TK_ARG_F64_LEN always fits). */
size_t tk_arg_f64(char *buf, size_t len, double v);

/* A check script's reply (scripts.h): the decision in *d (flags 0), the
 * integer now the script decided at in *now_ms, and its state listing as
 * (*state, *nstate).  TKSHM_EREDIS unless r is an array of at least six
 * integers with allowed 0 or 1; TKSHM_ENULL for NULL arguments. */
int tk_reply_check(const redisReply *r, tkshm_decision *d, int64_t *now_ms,
		   const redisReply *const **state, size_t *nstate);

/* leaky.lua's reply: the reservation in *out (wait_ms parsed from its
 * string), now and the state listing as tk_reply_check gives them.
 * TKSHM_EREDIS unless r has that layout. */
int tk_reply_reservation(const redisReply *r, tkshm_reservation *out,
			 int64_t *now_ms, const redisReply *const **state,
			 size_t *nstate);

/* True when a decision decoded from a reply is one algorithm `a` can
 * make (a hostile or broken server's is not passed on): limit is the
 * algorithm's (tk_field of its capacity), 0 <= remaining <= limit,
 * reset_at >= 0, retry_after_ms >= 0, and 0 when allowed. */
bool tk_decision_valid(const struct tk_algo *a, const tkshm_decision *d);

/* tk_decision_valid(), then a denial's retry_after_ms made at least 1 as
 * the shared-memory path makes it (algorithms/decision.h): the scripts
 * keep ThrottleKit's ceil, which rounds to 0 within an ulp of a window's
 * end.  False (d unchanged) for an invalid decision. */
bool tk_decision_accept(const struct tk_algo *a, tkshm_decision *d);

/* The same for a reservation: delay_ms, retry_after_ms and wait_ms >= 0,
 * and an accepted one has no retry_after_ms. */
bool tk_reservation_valid(const tkshm_reservation *r);

#endif /* TKSHM_REDIS_STATE_CODEC_H */
