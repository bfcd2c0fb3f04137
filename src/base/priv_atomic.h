/*
 * priv_atomic.h - the atomics of process-private words (tk_priv_*).
 *
 * The one file besides shm/atomic.h that uses __atomic builtins, and the
 * only atomics of the floor of src/ (base/, which touches no shared
 * memory: proc.c's cached process identity).  shm/atomic.h includes it,
 * so a file that touches the segment reaches both families through one
 * include.
 */
#ifndef TKSHM_BASE_PRIV_ATOMIC_H
#define TKSHM_BASE_PRIV_ATOMIC_H

#include <stdbool.h>

/* Process-private words: memory no other process maps (a handle's `cur`
 * pointer and mapping reference count, per-process ids and serials).
 * Macros, because these words have many types (pointers, int, int64_t,
 * uint64_t); the builtins check that the type is one they can access
 * atomically.  No crash point: these are not writes to the segment.  Each
 * names its memory order; the call site says why. */
#define tk_priv_load_relaxed(p)	    __atomic_load_n((p), __ATOMIC_RELAXED)
#define tk_priv_load_acquire(p)	    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define tk_priv_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
/* Fetch-and-add / -sub: the value before the operation. */
#define tk_priv_fetch_add_relaxed(p, v) \
	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define tk_priv_fetch_sub_acq_rel(p, v) \
	__atomic_fetch_sub((p), (v), __ATOMIC_ACQ_REL)
/* Strong CAS; *expected gets the current value on failure. */
#define tk_priv_cas_relaxed(p, expected, desired)                      \
	__atomic_compare_exchange_n((p), (expected), (desired), false, \
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED)
/* Release on success (publishes what was written before), acquire on
 * failure (the winner's value is read whole). */
#define tk_priv_cas_release_acquire(p, expected, desired)              \
	__atomic_compare_exchange_n((p), (expected), (desired), false, \
				    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)

#endif /* TKSHM_BASE_PRIV_ATOMIC_H */
