/*
 * breaker.h - a circuit breaker shared by every process of a host.
 *
 * It lives in a table's shared page (its bytes, struct tk_breaker: with
 * the page's in src/shm/layout_global.h), so one worker's discovery that
 * Redis is down spares every other worker the timeout.  All fields are
 * plain numbers (no pointers), read and written only through
 * shm/atomic.h, never by a plain access; a hostile value can only open or
 * close the circuit.
 *
 * States, over CLOCK_MONOTONIC milliseconds (system-wide on Linux):
 *   closed     open_until == 0: calls go to Redis; failures are counted.
 *   open       now < open_until: no call goes to Redis; the caller applies
 *              its failure policy at once.
 *   half-open  now >= open_until > 0: one caller wins the probe (a CAS on
 *              probe_until) and calls; the others stay out until the
 *              probe succeeds (closed) or fails (open again), or until
 *              probe_until passes (a probe that died with its process).
 * `threshold` consecutive failures open the circuit for `open_ms`.
 */
#ifndef TKSHM_REDIS_BREAKER_H
#define TKSHM_REDIS_BREAKER_H

#include <stdbool.h>

#include "shm/layout.h"

/* True when the caller may call Redis now: the circuit is closed, or it is
 * half-open and this caller won the probe (which then must report a
 * success or a failure).  `probe_ms` bounds how long a probe may take. */
bool tk_breaker_allow(struct tk_breaker *b, double now_ms, double probe_ms);

/* The call worked: the circuit closes and the failure count restarts. */
void tk_breaker_success(struct tk_breaker *b);

/* The call failed (no answer).  Returns true when this failure opened the
 * circuit (threshold reached, or a failed probe). */
bool tk_breaker_failure(struct tk_breaker *b, double now_ms, unsigned threshold,
			double open_ms);

/* True while the circuit is open or half-open (for stats). */
bool tk_breaker_is_open(const struct tk_breaker *b, double now_ms);

#endif /* TKSHM_REDIS_BREAKER_H */
