/*
 * errors.c - the one table of error codes, names and sentences.
 */
#include "tkshm.h"

#define TK_ERRORS(X)                                                        \
	X(TKSHM_OK, "success")                                              \
	X(TKSHM_ENULL, "a required pointer argument is NULL")               \
	X(TKSHM_EINVAL, "an argument is out of range")                      \
	X(TKSHM_EKEYEMPTY, "the key is empty")                              \
	X(TKSHM_EKEYLONG, "the key is longer than TKSHM_KEY_MAX bytes")     \
	X(TKSHM_ECOST,                                                      \
	  "the cost must be finite, <= 2^53-1 and large enough to change "  \
	  "the state (> 0; whole tokens for a token budget)")               \
	X(TKSHM_ENOW,                                                       \
	  "the time must be in ms, from 0 to 2^42 (year 2109): a clock in " \
	  "microseconds or nanoseconds passed as milliseconds?")            \
	X(TKSHM_EPOLICY, "the policy is invalid")                           \
	X(TKSHM_EMISMATCH, "the table exists with another policy or size")  \
	X(TKSHM_EBADMAGIC, "the file is not a tkshm table")                 \
	X(TKSHM_EVERSION,                                                   \
	  "the table was written by an incompatible layout version")        \
	X(TKSHM_ESIZE, "the file size does not match the table header")     \
	X(TKSHM_ECORRUPT, "the table is corrupt")                           \
	X(TKSHM_ESYMLINK, "the path is a symbolic link")                    \
	X(TKSHM_ENOTFILE, "the path is not a regular file")                 \
	X(TKSHM_EPERM, "permission denied")                                 \
	X(TKSHM_ENOENT, "no such table, key or entry")                      \
	X(TKSHM_EEXIST, "the table already exists")                         \
	X(TKSHM_ENOSPC, "no space left to allocate the table")              \
	X(TKSHM_ENOMEM, "out of memory")                                    \
	X(TKSHM_ESYSTEM, "a system call failed (see errno)")                \
	X(TKSHM_EFULL,                                                      \
	  "the key's probe window is full and the table refuses to evict")  \
	X(TKSHM_EBUSY, "contention did not settle within the retry bound")  \
	X(TKSHM_EREADONLY, "the table was opened read-only")                \
	X(TKSHM_ENOTSUP, "the table's algorithm cannot do this")            \
	X(TKSHM_EINTR,                                                      \
	  "a signal interrupted the wait; the reservation stands")          \
	X(TKSHM_ENOTHELD,                                                   \
	  "the permit is not held (released already, taken back from a "    \
	  "dead holder, or another process's)")                             \
	X(TKSHM_ENOREDIS,                                                   \
	  "a strict table needs a Redis connection (tkshm_redis_attach)")   \
	X(TKSHM_EUNAVAILABLE,                                               \
	  "Redis did not answer (refused, timed out, connection lost, or "  \
	  "the circuit breaker is open)")                                   \
	X(TKSHM_EREDIS, "Redis answered with an error")                     \
	X(TKSHM_ECROSSSLOT,                                                 \
	  "the keys hash to different Redis Cluster slots: give them one "  \
	  "hash tag, like {user42}")

const char *
tkshm_strerror(int err)
{
	switch (err) {
#define TK_CASE(code, text) \
	case code:          \
		return text;
		TK_ERRORS(TK_CASE)
#undef TK_CASE
	}
	return "unknown tkshm error";
}

const char *
tkshm_error_name(int err)
{
	switch (err) {
#define TK_CASE(code, text) \
	case code:          \
		return #code;
		TK_ERRORS(TK_CASE)
#undef TK_CASE
	}
	return "TKSHM_EUNKNOWN";
}
