/*
 * layout_global.h - the bytes of a table's cross-host page (layout.h:
 * global_off), with the rest of the segment's layout; included by
 * layout.h.  What the tier does with them is above: src/global/global_shm.h
 * (the page's accessors), src/redis/breaker.h (the breaker's states).
 *
 * One page per table, written by the host's sync agent, by workers
 * deciding in strict mode, and read by everyone:
 *
 *   agent_pid    the tkshm-syncd process serving the table (0: none)
 *   agent_beat   its last round's end (f64 bits, epoch ms)
 *   redis_up     1 while the agent's last exchange with Redis worked
 *   hosts        the live host count the agent last read from Redis
 *                (0: never read; safe-share then uses the policy's hosts)
 *   poll_ms      the agent's round period (f64 bits): a worker without
 *                credit is told to retry after it
 *   hosts_at     when `hosts` was last read (f64 bits, monotonic ms):
 *                strict workers take turns registering the host
 *   offset       strict: Redis's clock minus this host's, as last
 *                measured from a reply (f64 bits; an upper bound, so
 *                the negative cache never ages a state too little)
 *   offset_low   the same, measured as a lower bound (f64 bits; 0: none
 *                yet), so a cached denial's retry is never told early
 *   up_at        lease: the now (f64 bits, epoch ms, the workers'
 *                clock) of the agent's last round with Redis answering:
 *                a key that fell back before it is in a new outage
 *                (lease.h, L5)
 *   breaker      strict mode's circuit breaker, shared by the workers
 *                (struct tk_breaker below)
 *   c[]          the tier's counters (enum tk_gcounter)
 *
 * Every field is a plain number (no pointers), read and written only
 * through shm/atomic.h, never by a plain access; a hostile value can make
 * workers fall back or deny, never crash: readers clamp what they use
 * (tk_global_env in lease_check.c).
 */
#ifndef TKSHM_SHM_LAYOUT_GLOBAL_H
#define TKSHM_SHM_LAYOUT_GLOBAL_H

#include <stddef.h>
#include <stdint.h>

/* The circuit breaker shared by every process of a host (its states and
 * their transitions: src/redis/breaker.h).  Times are f64 bits of
 * CLOCK_MONOTONIC milliseconds. */
struct tk_breaker {
	uint64_t failures;    /* consecutive, since the last success */
	uint64_t open_until;  /* f64 bits of monotonic ms; 0: closed */
	uint64_t probe_until; /* f64 bits: the probe's deadline */
	uint64_t opens;	      /* times the circuit opened */
};

/* Shared layout: the offsets it had when the fields were declared C11
 * atomic 64-bit integers (same size and alignment on x86-64). */
_Static_assert(offsetof(struct tk_breaker, failures) == 0, "layout");
_Static_assert(offsetof(struct tk_breaker, open_until) == 8, "layout");
_Static_assert(offsetof(struct tk_breaker, probe_until) == 16, "layout");
_Static_assert(offsetof(struct tk_breaker, opens) == 24, "layout");
_Static_assert(sizeof(struct tk_breaker) == 32, "layout");
_Static_assert(_Alignof(struct tk_breaker) == 8, "layout");

enum tk_gcounter {
	TK_G_REDIS_CALLS,
	TK_G_REDIS_ERRORS,
	TK_G_NOSCRIPT_RELOADS,
	TK_G_CACHE_DENIALS,
	TK_G_FALLBACK_ALLOWED,
	TK_G_FALLBACK_DENIED,
	TK_G_NO_LEASE,
	TK_G_LEASES,
	TK_G_LEASE_UNITS,
	TK_G_LEASE_ROUND_TRIPS,
	TK_G_LEASE_EXPIRED,
	TK_G_COUNT
};

struct tk_global_shm {
	_Alignas(64) uint64_t agent_pid;
	uint64_t agent_beat;
	uint64_t redis_up;
	uint64_t hosts;
	uint64_t poll_ms;
	uint64_t hosts_at;
	uint64_t offset;
	uint64_t offset_low;
	uint64_t up_at;
	_Alignas(64) struct tk_breaker breaker;
	_Alignas(64) uint64_t c[TK_G_COUNT];
};

_Static_assert(sizeof(struct tk_global_shm) <= 4096,
	       "the region fits its page");
/* The region's layout is shared between builds and processes: these are
 * the offsets it had when its fields were declared C11 atomic 64-bit
 * integers (same size and alignment as uint64_t on x86-64). */
_Static_assert(offsetof(struct tk_global_shm, agent_pid) == 0, "layout");
_Static_assert(offsetof(struct tk_global_shm, agent_beat) == 8, "layout");
_Static_assert(offsetof(struct tk_global_shm, redis_up) == 16, "layout");
_Static_assert(offsetof(struct tk_global_shm, hosts) == 24, "layout");
_Static_assert(offsetof(struct tk_global_shm, poll_ms) == 32, "layout");
_Static_assert(offsetof(struct tk_global_shm, hosts_at) == 40, "layout");
_Static_assert(offsetof(struct tk_global_shm, offset) == 48, "layout");
_Static_assert(offsetof(struct tk_global_shm, offset_low) == 56, "layout");
_Static_assert(offsetof(struct tk_global_shm, up_at) == 64, "layout");
_Static_assert(offsetof(struct tk_global_shm, breaker) == 128, "layout");
_Static_assert(offsetof(struct tk_global_shm, c) == 192, "layout");
_Static_assert(TK_G_COUNT == 11, "layout: the counters");
_Static_assert(sizeof(struct tk_global_shm) == 320, "layout");
_Static_assert(_Alignof(struct tk_global_shm) == 64, "layout");

#endif /* TKSHM_SHM_LAYOUT_GLOBAL_H */
