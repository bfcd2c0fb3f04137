/*
 * breaker.c - the shared circuit breaker (see breaker.h for the states).
 *
 * Three rules keep it lock-free and correct between processes:
 *
 *   B1  The circuit opens with one CAS on open_until (0 -> deadline from
 *       closed, old deadline -> new one from half-open), so exactly one
 *       failure opens it each time, whatever the number of processes.
 *   B2  probe_until only grows.  A probe is admitted by a CAS from a value
 *       already passed to now + probe_ms; whoever opens the circuit first
 *       raises probe_until to the new open_until.  So at most one probe is
 *       in flight at any time (a second one is admitted only once the
 *       first one's deadline has passed), and a probe that died with its
 *       process blocks the others only until its deadline.  (A failure
 *       that loses the opening CAS may have raised probe_until to its own,
 *       slightly later, now + open_ms: the first probe waits that much
 *       longer, never less.)
 *   B3  probe_until is raised before open_until is published (release),
 *       and allow() reads open_until with acquire: whoever sees a new
 *       open period also sees its probe slot armed for that period's end,
 *       so no caller probes while the circuit is freshly open.
 *
 * Times are doubles (monotonic ms) stored as their bit patterns.  Nothing
 * but comparisons is done with them, so a hostile value (NaN, infinity)
 * makes the circuit open or half-open, nothing worse.
 *
 * success() is called after every good answer: it only reads while the
 * circuit is closed and no failure is counted, so the hot path never
 * writes to the shared line.
 */
#include <string.h>

#include "redis/breaker.h"

static double
f64_of(uint64_t bits)
{
	double d;

	memcpy(&d, &bits, sizeof d);
	return d;
}

static uint64_t
bits_of(double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof bits);
	return bits;
}

/* B2: probe_until = max(probe_until, until). */
static void
raise_probe_until(struct tk_breaker *b, double until)
{
	/* relaxed: the release CAS on open_until that follows publishes it
	 * (B3); a stale value only makes the CAS below retry. */
	uint64_t cur =
		atomic_load_explicit(&b->probe_until, memory_order_relaxed);

	while (!(f64_of(cur) >= until)) {
		/* relaxed: a read-modify-write acts on the latest value
		 * whatever its order, which is all B2 needs. */
		if (atomic_compare_exchange_weak_explicit(
			    &b->probe_until, &cur, bits_of(until),
			    memory_order_relaxed, memory_order_relaxed))
			return;
	}
}

/* B1 and B3: moves open_until from `seen` to now + open_ms; true when
 * this caller did it (and so counts the opening). */
static bool
open_circuit(struct tk_breaker *b, uint64_t seen, double now_ms, double open_ms)
{
	double until = now_ms + open_ms;

	raise_probe_until(b, until);
	/* release: publishes the raised probe_until with the new period
	 * (B3); relaxed on failure: the loser publishes nothing. */
	if (!atomic_compare_exchange_strong_explicit(
		    &b->open_until, &seen, bits_of(until), memory_order_release,
		    memory_order_relaxed))
		return false;
	/* relaxed: a statistic, ordered with nothing. */
	atomic_fetch_add_explicit(&b->opens, 1, memory_order_relaxed);
	return true;
}

bool
tk_breaker_allow(struct tk_breaker *b, double now_ms, double probe_ms)
{
	/* acquire: pairs with open_circuit's release, so a caller that sees
	 * a new open period also sees its armed probe slot (B3). */
	uint64_t open =
		atomic_load_explicit(&b->open_until, memory_order_acquire);
	uint64_t probe;

	if (open == 0)
		return true;
	if (!(now_ms >= f64_of(open)))
		return false;
	/* Half-open.  relaxed: the CAS below acts on the latest value; a
	 * stale read only makes it fail. */
	probe = atomic_load_explicit(&b->probe_until, memory_order_relaxed);
	if (now_ms < f64_of(probe))
		return false;
	/* relaxed: one winner per value of probe_until is a property of
	 * the read-modify-write itself (B2); the probe publishes nothing. */
	return atomic_compare_exchange_strong_explicit(
		&b->probe_until, &probe, bits_of(now_ms + probe_ms),
		memory_order_relaxed, memory_order_relaxed);
}

void
tk_breaker_success(struct tk_breaker *b)
{
	/* relaxed (both loads and stores): Redis answered, so the circuit
	 * closes whatever else happened; no other data rides on these
	 * words, and reading first keeps the closed hot path write-free. */
	if (atomic_load_explicit(&b->failures, memory_order_relaxed) != 0)
		atomic_store_explicit(&b->failures, 0, memory_order_relaxed);
	if (atomic_load_explicit(&b->open_until, memory_order_relaxed) != 0)
		atomic_store_explicit(&b->open_until, 0, memory_order_relaxed);
}

bool
tk_breaker_failure(struct tk_breaker *b, double now_ms, unsigned threshold,
		   double open_ms)
{
	/* relaxed: the CAS in open_circuit re-checks this value. */
	uint64_t open =
		atomic_load_explicit(&b->open_until, memory_order_relaxed);
	uint64_t n;

	if (open != 0) {
		/* Open: a call allowed before the circuit opened failed
		 * late; Redis is already known down, nothing changes. */
		if (!(now_ms >= f64_of(open)))
			return false;
		/* Half-open: the probe failed (or a late call did, which
		 * is the same news): open again for open_ms. */
		return open_circuit(b, open, now_ms, open_ms);
	}
	/* relaxed: a count of consecutive failures, ordered with nothing;
	 * the opening itself is decided by the CAS (B1). */
	n = atomic_fetch_add_explicit(&b->failures, 1, memory_order_relaxed) +
	    1;
	if (n < (threshold > 0 ? threshold : 1))
		return false;
	return open_circuit(b, 0, now_ms, open_ms);
}

bool
tk_breaker_is_open(const struct tk_breaker *b, double now_ms)
{
	/* relaxed: a snapshot for stats.  Open and half-open both count, so
	 * the answer does not depend on which side of open_until now_ms
	 * is. */
	(void)now_ms;
	return atomic_load_explicit(&b->open_until, memory_order_relaxed) != 0;
}
