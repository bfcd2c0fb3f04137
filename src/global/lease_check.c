/*
 * lease_check.c - checks of a lease table, and the agent's grants.
 */
#include <math.h>
#include <string.h>

#include "base/clock.h"
#include "global/global_shm.h"
#include "global/lease_check.h"
#include "shm/atomic.h"
#include "shm/wide.h"

void
tk_lease_env_of(const struct tkshm_table *t, struct tk_lease_env *env)
{
	struct tk_global_shm *g = t->global;
	/* Acquire: pairs with the agent's release of its heartbeat, so a
	 * fresh beat comes with the redis_up and hosts of that round. */
	double beat = tk_word_f64(tk_load_acquire(&g->agent_beat));
	/* Relaxed (these, and hosts below): ordered after the beat's
	 * acquire. */
	uint64_t pid = tk_load_relaxed(&g->agent_pid);
	uint64_t up = tk_load_relaxed(&g->redis_up);
	double poll = tk_word_f64(tk_load_relaxed(&g->poll_ms));
	double up_at = tk_word_f64(tk_load_relaxed(&g->up_at));
	double age = tk_mono_coarse_ms() - beat;

	/* Values from the region are clamped: a hostile one can only make
	 * workers fall back or wait, never index or divide by zero. */
	env->redis_down = pid == 0 || up != 1 || !(age <= TK_AGENT_STALE_MS);
	env->failure = t->policy.global.failure;
	env->hosts = tk_global_hosts(g, t->policy.global.hosts);
	env->retry_ms = poll >= 1 && poll <= 1000 ? poll : 1;
	/* Not a number or negative reads as "never": every fallback then
	 * starts a new outage, whose share starts spent (only denies). */
	env->up_at = up_at >= 0 && up_at < INFINITY ? up_at : 0;
}

struct tk_spend_ctx {
	const struct tk_lease_env *env;
	double now, cost;
	tkshm_decision d;
	enum tk_lease_how how;
	double expired; /* units this check discarded */
};

static enum tk_step
tk_spend_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	      uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_spend_ctx *c = ctx;
	double before = present ? tk_word_f64(cur[TK_LEASE_EXPIRED]) : 0;

	(void)index;
	(void)ctl;
	(void)tk_lease_spend(&t->algo.lease, present, cur, c->now, c->cost,
			     c->env, next, &c->d, &c->how);
	c->expired = tk_word_f64(next[TK_LEASE_EXPIRED]) - before;
	/* Always written: the demand counters tell the agent to lease. */
	return TK_STEP_WRITE;
}

int
tk_lease_check(struct tkshm_table *t, const void *key, size_t len, double cost,
	       double now, tkshm_decision *out)
{
	struct tk_lease_env env;
	struct tk_spend_ctx c = { &env, now, cost, { 0 }, 0, 0 };
	struct tk_wide_op op = { tk_spend_step, &c, 0 };
	struct tk_keyref k;
	struct tk_global_shm *g = t->global;
	int rc;

	/* The agent names the key in Redis from the table's key record. */
	if (len > TKSHM_LEASE_KEY_MAX)
		return TKSHM_EKEYLONG;
	tk_lease_env_of(t, &env);
	k = tk_keyref_of(t, key, len);
	rc = tk_table_wide_op(t, &k, now, &op);
	if (rc != TKSHM_OK)
		return rc;
	*out = c.d;
	tk_count(t, c.d.allowed ? TK_C_ALLOWED : TK_C_DENIED, 1);
	switch (c.how) {
	case TK_LEASE_SPENT_CREDIT:
		break;
	case TK_LEASE_NO_CREDIT:
		tk_gcount(g, TK_G_NO_LEASE, 1);
		break;
	default: /* the failure policy decided */
		tk_gcount(g,
			  c.d.allowed ? TK_G_FALLBACK_ALLOWED :
					TK_G_FALLBACK_DENIED,
			  1);
		break;
	}
	if (c.expired > 0)
		tk_gcount(g, TK_G_LEASE_EXPIRED, (uint64_t)ceil(c.expired));
	return TKSHM_OK;
}

struct tk_grant_ctx {
	const struct tk_lease_grant *g;
	double now;
};

static enum tk_step
tk_grant_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	      uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_grant_ctx *c = ctx;

	(void)index;
	(void)ctl;
	tk_lease_apply(&t->algo.lease, present, cur, c->now, c->g, next);
	return TK_STEP_WRITE;
}

int
tk_lease_grant(struct tkshm_table *t, const void *key, size_t len, double now,
	       const struct tk_lease_grant *g)
{
	struct tk_grant_ctx c = { g, now };
	struct tk_wide_op op = { tk_grant_step, &c, 0 };
	struct tk_keyref k = tk_keyref_of(t, key, len);
	int rc = tk_table_wide_op(t, &k, now, &op);

	if (rc == TKSHM_OK) {
		tk_gcount(t->global, TK_G_LEASES, 1);
		tk_gcount(t->global, TK_G_LEASE_UNITS, (uint64_t)g->units);
	}
	return rc;
}
