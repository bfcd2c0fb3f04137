/*
 * breaker.c - the shared circuit breaker (see breaker.h for the states).
 *
 * Everything is decided by read-modify-writes on single words, so it is
 * lock-free and holds between processes:
 *
 *   B1  The circuit opens with one CAS on open_until (0 -> deadline from
 *       closed, the passed deadline -> a new one from half-open): exactly
 *       one failure opens it each time, whatever the number of callers.
 *   B2  A probe is admitted by a CAS on probe_until from a value already
 *       passed to now + probe_ms: one winner per expiry, so while probes
 *       report within probe_ms at most one is in flight, and one that
 *       died with its process blocks the others until its deadline only.
 *   B3  The failure that opens the circuit then moves probe_until to the
 *       new open_until, by a CAS from the value it read before opening:
 *       the probe slot is free from the end of the open period (the
 *       failed probe's own claim is dropped), and a claim made meanwhile
 *       by a caller that still saw the previous half-open period stands.
 *       (A failure from a call allowed before the circuit opened, landing
 *       while a probe is in flight, is taken for the probe's and so drops
 *       that probe's claim: when probe_ms > open_ms, two probes may then
 *       overlap once.  It costs one Redis call, never a wrong state.)
 *
 * No other memory is published through these words (a caller learns only
 * "call" or "do not call"), so every access is relaxed: a stale read can
 * only make the CAS that follows it fail, or delay a caller by one check.
 *
 * Times are doubles (monotonic ms) stored as their bit patterns, through
 * base/words.h as every other word of src/.  Nothing but comparisons is
 * done with them, written so that NaN compares as a time passed: a
 * hostile value makes the circuit open (until a time it names) or
 * half-open, and the next probe's outcome writes sane values.
 *
 * success() is called after every good answer: it only reads while the
 * circuit is closed and no failure is counted, so the hot path never
 * writes to the shared line.
 */
#include "base/words.h"
#include "redis/breaker.h"
#include "shm/atomic.h"

/* B1 and B3: moves open_until from `seen` to now + open_ms; true when
 * this caller did it (and so counts the opening). */
static bool
open_circuit(struct tk_breaker *b, uint64_t seen, double now_ms, double open_ms)
{
	uint64_t until = tk_f64_word(now_ms + open_ms);
	/* relaxed: the CAS below compares against it (B3). */
	uint64_t probe = tk_load_relaxed(&b->probe_until);

	/* relaxed: one winner is the CAS's own property (B1). */
	if (!tk_cas64_relaxed(&b->open_until, &seen, until))
		return false;
	/* relaxed: as above; failing means a claim of the previous period
	 * landed meanwhile, and it stands (B3). */
	(void)tk_cas64_relaxed(&b->probe_until, &probe, until);
	/* relaxed: a statistic, ordered with nothing. */
	(void)tk_fetch_add_relaxed(&b->opens, 1);
	return true;
}

bool
tk_breaker_allow(struct tk_breaker *b, double now_ms, double probe_ms)
{
	/* relaxed: a stale value costs one check (see the top). */
	uint64_t open = tk_load_relaxed(&b->open_until);
	uint64_t probe;

	if (open == 0)
		return true;
	if (now_ms < tk_word_f64(open))
		return false;
	/* Half-open.  relaxed: the CAS below acts on the latest value; a
	 * stale read only makes it fail. */
	probe = tk_load_relaxed(&b->probe_until);
	if (now_ms < tk_word_f64(probe))
		return false;
	/* relaxed: one winner per value of probe_until is the CAS's own
	 * property (B2); the probe publishes nothing. */
	return tk_cas64_relaxed(&b->probe_until, &probe,
				tk_f64_word(now_ms + probe_ms));
}

void
tk_breaker_success(struct tk_breaker *b)
{
	/* relaxed (both loads and stores): Redis answered, so the circuit
	 * closes whatever else happened; no other data rides on these
	 * words, and reading first keeps the closed hot path write-free. */
	if (tk_load_relaxed(&b->failures) != 0)
		tk_store_relaxed(&b->failures, 0);
	if (tk_load_relaxed(&b->open_until) != 0)
		tk_store_relaxed(&b->open_until, 0);
}

bool
tk_breaker_failure(struct tk_breaker *b, double now_ms, unsigned threshold,
		   double open_ms)
{
	/* relaxed: the CAS in open_circuit re-checks this value. */
	uint64_t open = tk_load_relaxed(&b->open_until);
	uint64_t n;

	if (open != 0) {
		/* Open: a call allowed before the circuit opened failed
		 * late; Redis is already known down, nothing changes. */
		if (now_ms < tk_word_f64(open))
			return false;
		/* Half-open: the probe failed (or a late call did, which
		 * is the same news): open again for open_ms. */
		return open_circuit(b, open, now_ms, open_ms);
	}
	/* relaxed: a count of consecutive failures, ordered with nothing;
	 * the opening itself is decided by the CAS (B1). */
	n = tk_fetch_add_relaxed(&b->failures, 1) + 1;
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
	return tk_load_relaxed(&b->open_until) != 0;
}
