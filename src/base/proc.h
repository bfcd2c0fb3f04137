/*
 * proc.h - the process identity: naming a process so that a permit
 * outlives no confusion about who holds it, and so that a segment's writer
 * word names one process (shm/: life.c, entry.c, segment.c; shaper/:
 * permit.c).
 *
 * A holder word is pid << 42 | (start time & (2^42 - 1)), the start time
 * being field 22 of /proc/PID/stat (clock ticks since boot).  A pid is
 * below 2^22 (the kernel's PID_MAX_LIMIT), so the word is exact, and a pid
 * reused by a new process has another start time: a word names one process
 * of one boot (concurrency.h, C3).  The boot itself is the host tag, a hash
 * of /proc/sys/kernel/random/boot_id, kept in each key's state.
 */
#ifndef TKSHM_BASE_PROC_H
#define TKSHM_BASE_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define TK_HOLDER_START_BITS 42
#define TK_HOLDER_START_MASK ((UINT64_C(1) << TK_HOLDER_START_BITS) - 1)

static inline uint64_t
tk_holder_word(uint64_t pid, uint64_t start_ticks)
{
	return pid << TK_HOLDER_START_BITS |
	       (start_ticks & TK_HOLDER_START_MASK);
}

static inline pid_t
tk_holder_pid(uint64_t word)
{
	return (pid_t)(word >> TK_HOLDER_START_BITS);
}

/* This process's holder word (computed once per process, again after a
 * fork), or 0 when /proc/self/stat cannot be read. */
uint64_t tk_holder_self(void);

/* The host tag of this boot, never 0 (1 when boot_id cannot be read). */
uint64_t tk_holder_host(void);

/* What /proc says of the process a holder word names. */
enum tk_liveness {
	TK_ALIVE,   /* running, sleeping or stopped: keeps its permits */
	TK_DEAD,    /* gone, a zombie, or its pid now names another process */
	TK_UNKNOWN, /* /proc would not tell (treated as alive) */
};

enum tk_liveness tk_holder_liveness(uint64_t word);

/* Parses the text of a /proc/PID/stat file: the state letter (field 3) and
 * the start time (field 22).  False when the text is not one.  Exposed for
 * the tests (the command name may hold spaces and parentheses). */
bool tk_proc_stat_parse(const char *text, char *state, uint64_t *start);

#endif /* TKSHM_BASE_PROC_H */
