/*
 * atomic.h - the only atomics the shared segment is touched with.
 *
 * Every shared word is accessed through these wrappers so that each access
 * names its memory order at the call site (with a one-line reason there),
 * and so that a crash-point build (crash_point.h) sees every write.  No
 * other file uses an __atomic builtin or C11 <stdatomic.h>: a shared field
 * is a plain integer
 * type (uint64_t, uint32_t, unsigned char) that is only ever touched
 * through this file, never by a plain load or store.
 *
 * The words a single process keeps to itself (handle pointers, reference
 * counts, per-process serials) have their own family, tk_priv_* (below):
 * the same builtins, no crash point (a kill there leaves the shared
 * segment exactly as a kill at the next shared write does).
 *
 * The 16-byte compare-and-swap must be address-free: it must work between
 * processes.  GCC does not inline __atomic_compare_exchange on 16 bytes and
 * calls libatomic, which may fall back to a process-local lock (useless across
 * processes).  __sync_bool_compare_and_swap on unsigned __int128 with -mcx16
 * inlines `lock cmpxchg16b`, which is a full barrier on x86-64.  The build
 * checks the library for libatomic calls (cmake/check-no-libatomic.cmake).
 *
 * ThreadSanitizer does not model __sync on 16 bytes, so sanitizer builds for
 * threads use the __atomic builtin (clang inlines it with -mcx16 and TSan
 * instruments it); those builds test the protocol with threads sharing one
 * mapping, never across processes.
 */
#ifndef TKSHM_SHM_ATOMIC_H
#define TKSHM_SHM_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "shm/crash_point.h"

#if !defined(__x86_64__) || !defined(__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16)
#error "tkshm needs x86-64 with cmpxchg16b (compile with -mcx16)"
#endif

#if defined(__SANITIZE_THREAD__)
#define TK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TK_TSAN 1
#endif
#endif

typedef unsigned __int128 tk_u128;

/* Loads and stores of one shared 64-bit word. */
static inline uint64_t
tk_load_relaxed(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline uint64_t
tk_load_acquire(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline uint64_t
tk_load_seq_cst(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static inline void
tk_store_relaxed(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline void
tk_store_release(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* A sequentially consistent store: reset's clear of a debt cell (I9), the
 * one write that lowers one, so that an inserter that sees the reset slot
 * also sees the cleared cell (the CAS and loads on debt cells are seq_cst
 * too, tk_cas64). */
static inline void
tk_store_seq_cst(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* Fetch-and-add; returns the word's value before the add. */
static inline uint64_t
tk_fetch_add_relaxed(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* Sequentially consistent fetch-and-add: reset's epoch bump, ordered
 * before the key's slot is cleared, so a give-back that sees a state
 * written after the reset also sees the new epoch (tk_table_reset). */
static inline uint64_t
tk_fetch_add_seq_cst(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

/* Narrow shared words, relaxed only: the per-slot denial tally (32 bits,
 * display only: nothing is ordered by it) and the bytes of a lease table's
 * key record (validated by the seq around them, seqlock-style, with the
 * fences below). */
static inline uint32_t
tk_load32_relaxed(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void
tk_store32_relaxed(uint32_t *p, uint32_t v)
{
	TK_CRASH_POINT();
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline unsigned char
tk_load8_relaxed(const unsigned char *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void
tk_store8_relaxed(unsigned char *p, unsigned char v)
{
	TK_CRASH_POINT();
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

/* Fences, for the seqlocks (labels, key records): they order the plain
 * relaxed accesses around them and write nothing themselves, so they are
 * no crash point. */
static inline void
tk_fence_acquire(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static inline void
tk_fence_release(void)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* 64-bit CAS, sequentially consistent on success and failure: used only off
 * the hot path (debt memory), where the full order keeps reasoning simple. */
static inline bool
tk_cas64(uint64_t *p, uint64_t *expected, uint64_t desired)
{
	TK_CRASH_POINT();
	return __atomic_compare_exchange_n(p, expected, desired, false,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* 64-bit CAS, relaxed on success and failure: for words that publish no
 * other memory, whose one-winner property is the CAS's own (the circuit
 * breaker, the strict tier's host-registration turn).  A failed CAS is a
 * crash point too, as above. */
static inline bool
tk_cas64_relaxed(uint64_t *p, uint64_t *expected, uint64_t desired)
{
	TK_CRASH_POINT();
	return __atomic_compare_exchange_n(p, expected, desired, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* 16-byte CAS of a slot's {fp, st} pair.  Sequentially consistent: it is a
 * full barrier, which the insert protocol's claim-then-rescan relies on
 * (protocol.h, I6).  `p` must be 16-byte aligned. */
static inline bool
tk_cas128(void *p, uint64_t old_lo, uint64_t old_hi, uint64_t new_lo,
	  uint64_t new_hi)
{
	tk_u128 expected = ((tk_u128)old_hi << 64) | old_lo;
	tk_u128 desired = ((tk_u128)new_hi << 64) | new_lo;

	TK_CRASH_POINT();
#ifdef TK_TSAN
	return __atomic_compare_exchange_n((tk_u128 *)p, &expected, desired,
					   false, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
#else
	return __sync_bool_compare_and_swap((tk_u128 *)p, expected, desired);
#endif
}

/* 16-byte atomic load of a pair (protocol.h, P1), for a writable or a
 * read-only mapping.  On a CPU with AVX an aligned 16-byte MOVDQA is one
 * atomic access (Intel SDM vol. 3A, 9.1.1; AMD APM vol. 2, 7.3.2): a plain
 * load, so a reader keeps the line shared (I7).  Without AVX, `lock
 * cmpxchg16b` comparing with 0 returns the pair whole (and writes back the
 * same bytes), which needs a writable mapping: a read-only one (an
 * inspector's) then reads the halves until two reads in a row agree.
 * Acquire on x86-64 (loads are not reordered with loads); the "memory"
 * clobber keeps the compiler from moving shared loads across it. */
static inline void
tk_load128(const void *p, bool writable, uint64_t *lo, uint64_t *hi)
{
#ifdef TK_TSAN
	tk_u128 v = __atomic_load_n((const tk_u128 *)p, __ATOMIC_SEQ_CST);

	(void)writable;
	*lo = (uint64_t)v;
	*hi = (uint64_t)(v >> 64);
#else
	if (__builtin_expect(__builtin_cpu_supports("avx"), 1)) {
		uint64_t l, h;

		__asm__ volatile("movdqa %2, %%xmm15\n\t"
				 "movq %%xmm15, %0\n\t"
				 "pextrq $1, %%xmm15, %1"
				 : "=r"(l), "=r"(h)
				 : "m"(*(const tk_u128 *)p)
				 : "xmm15", "memory");
		*lo = l;
		*hi = h;
	} else if (writable) {
		tk_u128 v = __sync_val_compare_and_swap((tk_u128 *)p, 0, 0);

		*lo = (uint64_t)v;
		*hi = (uint64_t)(v >> 64);
	} else {
		const uint64_t *w = p;
		uint64_t l = __atomic_load_n(&w[0], __ATOMIC_SEQ_CST);
		uint64_t h = __atomic_load_n(&w[1], __ATOMIC_SEQ_CST);

		for (;;) {
			uint64_t l2 = __atomic_load_n(&w[0], __ATOMIC_SEQ_CST);
			uint64_t h2 = __atomic_load_n(&w[1], __ATOMIC_SEQ_CST);

			if (l2 == l && h2 == h)
				break;
			l = l2;
			h = h2;
		}
		*lo = l;
		*hi = h;
	}
#endif
}

/* A pause in a retry loop: tells the core we are spinning. */
static inline void
tk_cpu_relax(void)
{
	__builtin_ia32_pause();
}

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

#endif /* TKSHM_SHM_ATOMIC_H */
