/*
 * atomic.h - the only atomics the shared segment is touched with.
 *
 * Every shared word is accessed through these wrappers so that each access
 * names its memory order at the call site (with a one-line reason there),
 * and so that a crash-point build (crash_point.h) sees every write.
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

static inline void
tk_fetch_add_relaxed(uint64_t *p, uint64_t v)
{
	TK_CRASH_POINT();
	(void)__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
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

/* A pause in a retry loop: tells the core we are spinning. */
static inline void
tk_cpu_relax(void)
{
	__builtin_ia32_pause();
}

#endif /* TKSHM_SHM_ATOMIC_H */
