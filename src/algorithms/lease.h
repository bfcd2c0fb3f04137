/*
 * lease.h - spending leased budget: the state of a key in a lease table.
 *
 * In lease mode (tkshm_global_mode) the authority for a limit is Redis:
 * the host's sync agent leases units of the limit there (a GCRA's tokens
 * or a fixed window's units) and writes them into the key's state here;
 * workers spend them with one table transition and never wait on Redis.
 * This file is the pure part: (state, now, cost, environment) ->
 * (state', decision), plus the agent's grant.  It follows ThrottleKit's
 * LeaseSpender (docs/semantics.md, "Lease spending"): spend while
 * credits cover the cost, never synthesize an admission from nothing.
 *
 * Credits come in two lots, each with its own expiry (epoch ms in the
 * workers' clock, computed by the agent from the time it SENT the lease
 * request, so a lot never outlives its grant on Redis's clock):
 *   cur   the newest grant;
 *   prev  the grant before it, spent first (it expires first).
 * A grant moves cur to prev; if prev still holds live credits, they are
 * merged into prev under prev's (earlier) expiry and cur's credits join
 * them too, so no unit ever lives past the expiry of its own grant (L3).
 *
 * Invariants (checked by tk_lease_state_valid and the tests):
 *   L1  credits are finite and >= 0; expiries finite and >= 0.
 *   L2  a lot whose expiry is <= now is spent as 0 (expired credits are
 *       discarded, counted in `expired`).
 *   L3  every unit admitted was granted by Redis and is spent before the
 *       expiry the agent computed for its own grant.  GCRA leases expire
 *       leaseMs after the request was sent: admissions in any window W
 *       are <= burst + rate * (W + leaseMs) (over all hosts).  Fixed
 *       window leases expire at the window's end: admissions per window
 *       are <= limit, for any number of hosts.
 *   L4  a denial for want of credit writes only the demand counters; the
 *       failure policy's safe share keeps its own state (`fb`), the
 *       base algorithm's words charged cost * hosts.
 *   L5  the safe share starts spent.  Leases of the window (or, for a
 *       GCRA, of the last leaseMs) may all have been spent by the time
 *       Redis is found gone, so a share that started full would admit on
 *       top of them.  The first safe-share check of an outage (`fell`
 *       not after the agent's last word from Redis, env.up_at) fills
 *       the share: a fixed window's is full until its window ends (the
 *       share admits from the next window on, when no lease can be
 *       live), a GCRA's owes its whole burst (it admits at limit / hosts
 *       per period from then on, no burst).  The other half of the
 *       handover, leasing again only once no host can still be spending
 *       its share, is the agent's (tk_lease_resume_at).
 *
 * Words (TK_LEASE_WORDS), all doubles but fb (the base algorithm's own):
 *   0 cur credits   1 cur expiry   2 prev credits   3 prev expiry
 *   4 asked: units checked, total  5 spent: units admitted from credits
 *   6 expired: units discarded     7 last: now of the last check
 *   8 fell: now of the first safe-share check of the current outage
 *   9.. fb: the base algorithm's state for the safe share (GCRA: 1 word,
 *   fixed window: 2), 0 = absent.
 */
#ifndef TKSHM_ALGORITHMS_LEASE_H
#define TKSHM_ALGORITHMS_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/fixed_window.h"
#include "algorithms/gcra.h"
#include "tkshm.h"

enum {
	TK_LEASE_CUR,
	TK_LEASE_CUR_EXP,
	TK_LEASE_PREV,
	TK_LEASE_PREV_EXP,
	TK_LEASE_ASKED,
	TK_LEASE_SPENT,
	TK_LEASE_EXPIRED,
	TK_LEASE_LAST,
	TK_LEASE_FELL,
	TK_LEASE_FB, /* TK_FIXED_WINDOW_WORDS words */
	TK_LEASE_WORDS = TK_LEASE_FB + TK_FIXED_WINDOW_WORDS
};

/* A key untouched this long, with nothing live, may be reclaimed (the
 * agent's rate estimate for it is lost; nothing else is). */
#define TK_LEASE_IDLE_MS 10000.0

/* The base limit a lease table's keys are leased from. */
struct tk_lease {
	tkshm_kind base; /* TKSHM_KIND_GCRA or TKSHM_KIND_FIXED_WINDOW */
	struct tk_gcra gcra;
	struct tk_fixed_window fixed_window;
	double capacity; /* Decision.limit: the burst or the window limit */
};

/* How a check without credit is decided: what the shared region says
 * about Redis and the agent (src/shm/layout_global.h), read by the caller
 * before the transition. */
struct tk_lease_env {
	bool redis_down; /* agent gone, or its last exchange failed */
	tkshm_failure_policy failure;
	double hosts;	 /* the safe share's N, >= 1 */
	double retry_ms; /* when a key without credit may try again */
	/* The agent's last round with Redis answering (epoch ms, the
	 * workers' clock; 0: never): a key that fell back before it is in
	 * a new outage (L5). */
	double up_at;
};

/* How a check was decided (for the caller's counters and flags). */
enum tk_lease_how {
	TK_LEASE_SPENT_CREDIT, /* allowed from credits */
	TK_LEASE_NO_CREDIT,    /* denied: the agent has not leased (yet) */
	TK_LEASE_FAIL_OPEN,
	TK_LEASE_FAIL_CLOSED,
	TK_LEASE_SAFE_SHARE, /* decided by the safe share */
};

/* A grant, as the agent writes it. */
struct tk_lease_grant {
	double units;  /* > 0 */
	double expiry; /* epoch ms, workers' clock */
};

/* Spends `cost` at `now`.  Always writes *out (the demand counters move
 * even on a denial, so the agent sees the demand).  Returns d->allowed. */
bool tk_lease_spend(const struct tk_lease *l, bool present, const uint64_t *st,
		    double now, double cost, const struct tk_lease_env *env,
		    uint64_t *out, tkshm_decision *d, enum tk_lease_how *how);

/* What a cost-1 check would decide from credits alone (no write). */
void tk_lease_peek(const struct tk_lease *l, bool present, const uint64_t *st,
		   double now, tkshm_decision *d);

/* Adds a grant at `now` (the agent's transition): the lots move as
 * described above.  `present` false starts from the absent state. */
void tk_lease_apply(const struct tk_lease *l, bool present, const uint64_t *st,
		    double now, const struct tk_lease_grant *g, uint64_t *out);

/* After the agent found Redis again (or came back itself) and expects
 * every host to have done so by `settled` (epoch ms), the first time it
 * may lease again: until then a host may still be spending its safe
 * share, which Redis never counted.  A fixed window: the first window
 * boundary at or after `settled` (no window holds both a share and
 * leases).  A GCRA: `settled` + max(0, min(tau, outage) - leaseMs), the
 * shares having refilled for at most `outage` ms since they started
 * spent (L5): a window holding a share's burst and the leases after it
 * still admits at most burst + rate * (W + leaseMs). */
double tk_lease_resume_at(const struct tk_lease *l, double lease_ms,
			  double settled, double outage);

/* Live credits at `now` (both lots). */
double tk_lease_credits(const uint64_t *st, double now);

bool tk_lease_is_idle(const struct tk_lease *l, const uint64_t *st, double now);
/* What eviction ranks by: the safe share's debt (credits are not debt). */
double tk_lease_debt(const struct tk_lease *l, const uint64_t *st, double now);
bool tk_lease_state_valid(const struct tk_lease *l, const uint64_t *st);

#endif /* TKSHM_ALGORITHMS_LEASE_H */
