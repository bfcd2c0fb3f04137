/*
 * slot.c - the slot primitives table.c and wide.c share (slot.h):
 * placeholder tags, counter shards and the backoff after a lost race.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include "shm/atomic.h"
#include "shm/layout.h"
#include "shm/slot.h"

/* ------------------------------------------------------------------------
 * Placeholder tags: unique per insert attempt (I6 relies on it).
 * A tag is a 22-bit random process id and a 29-bit per-process counter.
 * ---------------------------------------------------------------------- */

static uint64_t tk_proc_id;	/* 0 = not drawn yet in this process */
static uint64_t tk_tag_counter; /* per process */

static void tk_after_fork_child(void);

__attribute__((constructor)) static void
tk_slot_init_once(void)
{
	/* A child must draw a new process id, or its tags would repeat its
	 * parent's.  pthread_atfork cannot fail here except for ENOMEM; the
	 * fallback is the pid mixed in below. */
	(void)pthread_atfork(NULL, NULL, tk_after_fork_child);
}

static uint64_t
tk_draw_proc_id(void)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint64_t)getpid() * UINT64_C(0x9E3779B97F4A7C15);
	r ^= (uint64_t)getpid() << 7;
	r &= (UINT64_C(1) << 22) - 1;
	return r ? r : 1;
}

uint64_t
tk_new_tag(void)
{
	/* Relaxed: the id only needs to be some value drawn in this process;
	 * a race between threads drawing it twice is harmless. */
	uint64_t id = tk_priv_load_relaxed(&tk_proc_id);
	uint64_t n;

	if (id == 0) {
		id = tk_draw_proc_id();
		tk_priv_store_relaxed(&tk_proc_id, id);
	}
	/* Relaxed: uniqueness comes from the atomicity of the add alone. */
	n = tk_priv_fetch_add_relaxed(&tk_tag_counter, 1);
	return id << 29 | (n & ((UINT64_C(1) << 29) - 1));
}

/* Counter shards: one per thread, drawn lazily (I11). */
_Thread_local uint32_t tk_tls_shard;

static void
tk_after_fork_child(void)
{
	/* Relaxed: the child is single-threaded here. */
	tk_priv_store_relaxed(&tk_proc_id, 0);
	tk_tls_shard = 0;
}

uint32_t
tk_shard_draw(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint32_t)getpid() * 2654435761u;
	/* The last shard holds the reset epoch (layout.h). */
	tk_tls_shard = r % (TK_SHARDS - 1) + 1;
	return tk_tls_shard;
}

/* ------------------------------------------------------------------------
 * Backoff
 * ---------------------------------------------------------------------- */

void
tk_backoff(unsigned retries)
{
	if (retries > 64) {
		sched_yield();
		return;
	}
	for (unsigned i = 0; i < (1u << (retries < 8 ? retries : 8)); i++)
		tk_cpu_relax();
}
