/*
 * baseline_mutex.h - the design every incumbent uses (nginx's limit_req
 * zone, APCu, OpenResty's shared dicts): one lock around a shared table.
 *
 * The table has tkshm's slot count and hashing (XXH3 keyed with a random
 * seed), slots of {fingerprint, TAT} read and written with plain loads and
 * stores under ONE process-shared robust pthread mutex that lives in the
 * shared mapping, and runs tkshm's own GCRA transition (tk_gcra_check) on
 * the same clock (tkshm_now_ms).  So the only difference the benchmark
 * measures is the lock against the compare-and-swap.
 *
 * Placement: open addressing, a key probes MTX_WINDOW consecutive slots
 * from its hash; a missing key is inserted at the first empty slot, else
 * the first idle one (TAT at or before now), else the one with the oldest
 * TAT (the least debt; its debt is lost, as in the incumbents' LRU).
 *
 * Crash: a process killed while holding the lock leaves it to the next
 * locker as EOWNERDEAD, which marks it consistent and carries on; the slot
 * the dead process was writing may be half written (the incumbents accept
 * the same).  A process stopped while holding the lock stops everybody.
 */
#ifndef TKSHM_BENCH_PROCS_BASELINE_MUTEX_H
#define TKSHM_BENCH_PROCS_BASELINE_MUTEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tkshm.h"

/* Slots a key may occupy, from its hash (tkshm's window is 8 too). */
#define MTX_WINDOW 8

struct mtx_table;

/* Creates a table of `slots` (rounded up to a power of two, at least
 * MTX_WINDOW) in an anonymous shared mapping, inherited by children forked
 * later.  `policy` must be a valid GCRA policy.  Returns TKSHM_OK or a
 * tkshm error code with a sentence in err. */
int mtx_create(uint64_t slots, const tkshm_policy *policy,
	       struct mtx_table **out, char *err, size_t err_len);

/* Unmaps the table (every process that inherited it unmaps its own). */
void mtx_destroy(struct mtx_table *t);

/* One check at `now_ms`, with tkshm_check_at()'s decision fields.
 * Returns TKSHM_OK, an input error (TKSHM_EKEYEMPTY, TKSHM_EKEYLONG,
 * TKSHM_ECOST, TKSHM_ENOW) or TKSHM_ESYSTEM if the lock failed. */
int mtx_check_at(struct mtx_table *t, const void *key, size_t key_len,
		 double cost, double now_ms, tkshm_decision *out);

/* mtx_check_at() with now_ms = tkshm_now_ms(), read before locking. */
int mtx_check(struct mtx_table *t, const void *key, size_t key_len, double cost,
	      tkshm_decision *out);

/* Process-local: a function called while this process holds the lock,
 * after the decision and before unlocking (NULL: none).  The sigstop
 * scenario uses it to stop a process inside the critical section. */
void mtx_set_in_lock_hook(void (*fn)(void));

/* Live keys evicted so far (counted under the lock). */
uint64_t mtx_evictions(const struct mtx_table *t);

#endif /* TKSHM_BENCH_PROCS_BASELINE_MUTEX_H */
