/*
 * lease.c - spending leased budget (lease.h): the pure transitions.
 */
#include <math.h>
#include <string.h>

#include "algorithms/lease.h"
#include "algorithms/rounding.h"
#include "base/words.h"

static double
tk_lw(const uint64_t *st, int i)
{
	return tk_word_f64(st[i]);
}

static void
tk_lw_set(uint64_t *st, int i, double v)
{
	st[i] = tk_f64_word(v);
}

/* The absent state: no credit, no demand, no safe-share state. */
static void
tk_lease_absent(uint64_t *st)
{
	for (int i = 0; i < TK_LEASE_WORDS; i++)
		st[i] = tk_f64_word(0.0);
	st[TK_LEASE_FB] = 0;
	st[TK_LEASE_FB + 1] = 0;
}

/* L2: a lot at or past its expiry is discarded (counted). */
static void
tk_lease_expire(uint64_t *st, double now)
{
	static const int lots[2][2] = { { TK_LEASE_PREV, TK_LEASE_PREV_EXP },
					{ TK_LEASE_CUR, TK_LEASE_CUR_EXP } };

	for (int i = 0; i < 2; i++) {
		double c = tk_lw(st, lots[i][0]);

		if (c > 0 && tk_lw(st, lots[i][1]) <= now) {
			tk_lw_set(st, TK_LEASE_EXPIRED,
				  tk_lw(st, TK_LEASE_EXPIRED) + c);
			tk_lw_set(st, lots[i][0], 0.0);
		}
	}
}

double
tk_lease_credits(const uint64_t *st, double now)
{
	double c = 0;

	if (tk_lw(st, TK_LEASE_PREV_EXP) > now)
		c += tk_lw(st, TK_LEASE_PREV);
	if (tk_lw(st, TK_LEASE_CUR_EXP) > now)
		c += tk_lw(st, TK_LEASE_CUR);
	return c;
}

/* The expiry a decision reports: the latest lease still running, spent
 * or not (ThrottleKit's resetAt: the grant's expiresAt). */
static double
tk_lease_expiry(const uint64_t *st, double now)
{
	double e = now;

	if (tk_lw(st, TK_LEASE_PREV_EXP) > e)
		e = tk_lw(st, TK_LEASE_PREV_EXP);
	if (tk_lw(st, TK_LEASE_CUR_EXP) > e)
		e = tk_lw(st, TK_LEASE_CUR_EXP);
	return e;
}

static void
tk_lease_decision(const struct tk_lease *l, const uint64_t *st, double now,
		  bool allowed, double retry_ms, tkshm_decision *d)
{
	double rem = tk_lease_credits(st, now);

	memset(d, 0, sizeof *d);
	d->allowed = allowed;
	d->limit = (int64_t)l->capacity;
	d->remaining = rem > 0 ? (int64_t)tk_floor(rem) : 0;
	d->reset_at = (int64_t)tk_ceil(allowed ? tk_lease_expiry(st, now) :
						 now + retry_ms);
	d->retry_after_ms =
		allowed ? 0 : tk_denial_retry((int64_t)tk_ceil(retry_ms));
}

/* L5: the first safe-share check of an outage starts the share spent.
 * A fixed window's share is full until its window ends (a later window
 * the state already holds, after a clock regression, is filled instead);
 * a GCRA's owes its whole burst from now (never less than it owed). */
static void
tk_lease_share_fill(const struct tk_lease *l, uint64_t *st, double now,
		    double up_at)
{
	uint64_t *fb = &st[TK_LEASE_FB];
	double fell = tk_lw(st, TK_LEASE_FELL);

	if (fell > up_at)
		return; /* this outage's share: already filled */
	tk_lw_set(st, TK_LEASE_FELL, now > up_at ? now : up_at);
	if (l->base == TKSHM_KIND_GCRA) {
		double owed = now + l->gcra.tau;

		if (fb[0] == 0 || tk_gcra_tat(fb[0]) < owed)
			fb[0] = tk_gcra_state(owed);
	} else {
		double start, reset;

		(void)tk_fixed_window_count(&l->fixed_window, fb[1] != 0, fb,
					    now, &start, &reset);
		fb[0] = tk_f64_word(start);
		fb[1] = tk_f64_word(l->fixed_window.limit);
	}
}

/* The failure policy's safe share: the base algorithm on the fb words,
 * each unit charged `hosts` times (a limit of limit / hosts). */
static bool
tk_lease_safe_share(const struct tk_lease *l, uint64_t *st, double now,
		    double cost, const struct tk_lease_env *env,
		    tkshm_decision *d)
{
	uint64_t *fb = &st[TK_LEASE_FB];
	double hosts = env->hosts;
	double charge = cost * hosts;
	uint64_t next[TK_FIXED_WINDOW_WORDS] = { 0, 0 };
	bool ok;

	tk_lease_share_fill(l, st, now, env->up_at);
	if (l->base == TKSHM_KIND_GCRA) {
		ok = tk_gcra_check(&l->gcra, fb[0] != 0, fb[0], now, charge,
				   &next[0], d);
		if (ok)
			fb[0] = next[0];
	} else {
		ok = tk_fixed_window_check(&l->fixed_window, fb[1] != 0, fb,
					   now, charge, next, d);
		if (ok) {
			fb[0] = next[0];
			fb[1] = next[1];
		}
	}
	/* The decision speaks of the share: its limit is the base's, its
	 * remaining the share's whole charges left. */
	d->remaining = (int64_t)tk_floor((double)d->remaining / hosts);
	return ok;
}

bool
tk_lease_spend(const struct tk_lease *l, bool present, const uint64_t *st,
	       double now, double cost, const struct tk_lease_env *env,
	       uint64_t *out, tkshm_decision *d, enum tk_lease_how *how)
{
	double prev, cur;

	if (present)
		memcpy(out, st, TK_LEASE_WORDS * sizeof *out);
	else
		tk_lease_absent(out);
	tk_lease_expire(out, now);
	tk_lw_set(out, TK_LEASE_ASKED, tk_lw(out, TK_LEASE_ASKED) + cost);
	if (now > tk_lw(out, TK_LEASE_LAST))
		tk_lw_set(out, TK_LEASE_LAST, now);

	prev = tk_lw(out, TK_LEASE_PREV);
	cur = tk_lw(out, TK_LEASE_CUR);
	if (prev + cur >= cost) {
		/* The older lot first: it expires first. */
		double from_prev = prev >= cost ? cost : prev;

		tk_lw_set(out, TK_LEASE_PREV, prev - from_prev);
		tk_lw_set(out, TK_LEASE_CUR, cur - (cost - from_prev));
		tk_lw_set(out, TK_LEASE_SPENT,
			  tk_lw(out, TK_LEASE_SPENT) + cost);
		*how = TK_LEASE_SPENT_CREDIT;
		tk_lease_decision(l, out, now, true, 0, d);
		return true;
	}
	if (!env->redis_down) {
		*how = TK_LEASE_NO_CREDIT;
		tk_lease_decision(l, out, now, false, env->retry_ms, d);
		d->flags |= TKSHM_DECISION_NO_LEASE;
		return false;
	}
	switch (env->failure) {
	case TKSHM_FAILURE_OPEN:
		*how = TK_LEASE_FAIL_OPEN;
		tk_lease_decision(l, out, now, true, 0, d);
		break;
	case TKSHM_FAILURE_CLOSED:
		*how = TK_LEASE_FAIL_CLOSED;
		tk_lease_decision(l, out, now, false, env->retry_ms, d);
		break;
	default:
		*how = TK_LEASE_SAFE_SHARE;
		(void)tk_lease_safe_share(l, out, now, cost, env, d);
		break;
	}
	d->flags |= TKSHM_DECISION_FALLBACK;
	return d->allowed;
}

void
tk_lease_peek(const struct tk_lease *l, bool present, const uint64_t *st,
	      double now, tkshm_decision *d)
{
	uint64_t s[TK_LEASE_WORDS];

	if (present)
		memcpy(s, st, sizeof s);
	else
		tk_lease_absent(s);
	tk_lease_decision(l, s, now, tk_lease_credits(s, now) >= 1, 0, d);
}

void
tk_lease_apply(const struct tk_lease *l, bool present, const uint64_t *st,
	       double now, const struct tk_lease_grant *g, uint64_t *out)
{
	double prev, cur;

	(void)l;
	if (present)
		memcpy(out, st, TK_LEASE_WORDS * sizeof *out);
	else
		tk_lease_absent(out);
	tk_lease_expire(out, now);
	prev = tk_lw(out, TK_LEASE_PREV);
	cur = tk_lw(out, TK_LEASE_CUR);
	if (prev > 0) {
		/* Both lots live: cur joins prev under prev's earlier
		 * expiry (L3: no unit outlives its grant). */
		tk_lw_set(out, TK_LEASE_PREV, prev + cur);
	} else {
		tk_lw_set(out, TK_LEASE_PREV, cur);
		tk_lw_set(out, TK_LEASE_PREV_EXP, tk_lw(out, TK_LEASE_CUR_EXP));
	}
	tk_lw_set(out, TK_LEASE_CUR, g->units);
	tk_lw_set(out, TK_LEASE_CUR_EXP, g->expiry);
	if (now > tk_lw(out, TK_LEASE_LAST))
		tk_lw_set(out, TK_LEASE_LAST, now);
}

double
tk_lease_resume_at(const struct tk_lease *l, double lease_ms, double settled,
		   double outage)
{
	if (l->base == TKSHM_KIND_GCRA) {
		double refill = outage < l->gcra.tau ? outage : l->gcra.tau;
		double extra = refill - lease_ms;

		return settled + (extra > 0 ? extra : 0);
	}
	return tk_ceil(settled / l->fixed_window.window_ms) *
	       l->fixed_window.window_ms;
}

static bool
tk_lease_fb_idle(const struct tk_lease *l, const uint64_t *st, double now)
{
	const uint64_t *fb = &st[TK_LEASE_FB];

	if (l->base == TKSHM_KIND_GCRA)
		return fb[0] == 0 || tk_gcra_is_idle(fb[0], now);
	return fb[1] == 0 || tk_fixed_window_is_idle(&l->fixed_window, fb, now);
}

bool
tk_lease_is_idle(const struct tk_lease *l, const uint64_t *st, double now)
{
	return tk_lease_credits(st, now) <= 0 && tk_lease_fb_idle(l, st, now) &&
	       now - tk_lw(st, TK_LEASE_LAST) >= TK_LEASE_IDLE_MS;
}

double
tk_lease_debt(const struct tk_lease *l, const uint64_t *st, double now)
{
	const uint64_t *fb = &st[TK_LEASE_FB];

	if (l->base == TKSHM_KIND_GCRA)
		return fb[0] == 0 ? 0.0 : tk_gcra_debt(fb[0], now);
	return fb[1] == 0 ? 0.0 :
			    tk_fixed_window_debt(&l->fixed_window, fb, now);
}

bool
tk_lease_state_valid(const struct tk_lease *l, const uint64_t *st)
{
	const uint64_t *fb = &st[TK_LEASE_FB];

	for (int i = 0; i < TK_LEASE_FB; i++) {
		double v = tk_lw(st, i);

		if (!isfinite(v) || v < 0) /* L1 */
			return false;
	}
	if (l->base == TKSHM_KIND_GCRA)
		return fb[1] == 0 && (fb[0] == 0 || tk_gcra_state_valid(fb[0]));
	return fb[1] == 0 ? fb[0] == 0 :
			    tk_fixed_window_state_valid(&l->fixed_window, fb);
}
