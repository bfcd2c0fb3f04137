/*
 * slot.h - the slot primitives below the slot protocol (table.c) and the
 * wide records (wide.c): placeholder tags, the counters' shard of a thread
 * and the backoff after a lost race (slot.c).
 */
#ifndef TKSHM_SHM_SLOT_H
#define TKSHM_SHM_SLOT_H

#include <stdint.h>

/* A new placeholder tag, unique per insert attempt (I6 relies on it): a
 * 22-bit random process id and a 29-bit per-process counter. */
uint64_t tk_new_tag(void);

/* Waits a little longer after each lost race. */
void tk_backoff(unsigned retries);

/* Counter shards: one per thread, drawn lazily (I11).  Initial-exec TLS:
 * one %fs-relative load, no call (the library's 4 bytes fit the static
 * TLS surplus a dlopen()ed module gets).  A forked child draws again. */
extern _Thread_local uint32_t tk_tls_shard /* shard + 1; 0 = not drawn */
	__attribute__((tls_model("initial-exec")));
/* Draws the calling thread's shard: stores and returns it (shard + 1). */
uint32_t tk_shard_draw(void);

#endif /* TKSHM_SHM_SLOT_H */
