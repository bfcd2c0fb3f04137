/*
 * table_api.c - the public table calls: argument checks, then the store.
 *
 * Every argument is checked here, before anything is changed; the shared
 * table code (src/shm/) assumes valid arguments.  This is the limiter of
 * ThrottleKit's model: it binds the table's algorithm (fixed in its header)
 * to the shared store and to a clock, which callers can replace by passing
 * `now_ms` themselves.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "global/lease_check.h"
#include "global/route.h"
#include "shm/atomic.h"
#include "shm/table.h"
#include "shm/validate.h"
#include "tkshm.h"

/* tkshm_key keeps as many leading bytes as a label does. */
_Static_assert(sizeof(((tkshm_key *)0)->prefix_) == TK_LABEL_PREFIX &&
		       TK_LABEL_PREFIX == TKSHM_LABEL_MAX,
	       "tkshm_key.prefix_ must hold a whole label");

/* The checks every keyed call with a time makes first, in the order its
 * contract lists the errors: the handle and the output, the key, the cost
 * (cost NULL: the call takes none), the time. */
static inline int
tk_check_keyed_call(const tkshm_table *t, const void *out, const void *key,
		    size_t key_len, const double *cost, double now_ms)
{
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK)
		return rc;
	if (cost && (rc = tk_check_cost(t, *cost)) != TKSHM_OK)
		return rc;
	return tk_check_now(now_ms);
}

int
tk_api_check_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		double now_ms, tkshm_decision *out)
{
	int rc = tk_check_keyed_call(t, out, key, key_len, &cost, now_ms);

	if (rc != TKSHM_OK || (rc = tk_check_limiter(t)) != TKSHM_OK)
		return rc;
	if (tk_is_global(t))
		return tk_global_check(t, key, key_len, cost, now_ms, out);
	if (t->readonly)
		return TKSHM_EREADONLY;
	return tk_table_check(t, key, key_len, cost, now_ms, out, NULL);
}

int
tk_api_check(tkshm_table *t, const void *key, size_t key_len, double cost,
	     tkshm_decision *out)
{
	struct tk_keyref k;
	double now;
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK)
		return rc;
	k = tk_keyref_of(t, key, key_len);
	/* The key's lines first: the clock read (tens of ns, behind the
	 * vDSO's serialising rdtscp, which does not wait for a prefetch's
	 * data) then hides the miss of a table larger than the cache. */
	tk_prefetch_key(t, k.fp);
	now = tkshm_now_ms();
	if ((rc = tk_check_cost(t, cost)) != TKSHM_OK ||
	    (rc = tk_check_now(now)) != TKSHM_OK)
		return rc;
	if ((rc = tk_check_limiter(t)) != TKSHM_OK)
		return rc;
	if (tk_is_global(t))
		return tk_global_check(t, key, key_len, cost, now, out);
	if (t->readonly)
		return TKSHM_EREADONLY;
	return tk_table_check_ref(t, &k, cost, now, out, NULL);
}

int
tk_api_key_hash(const tkshm_table *t, const void *key, size_t key_len,
		tkshm_key *out)
{
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK)
		return rc;
	out->fp_ = tk_key_fp(t, key, key_len);
	out->seed_ = t->seed;
	out->len_ = (uint32_t)key_len;
	memset(out->prefix_, 0, sizeof out->prefix_);
	memcpy(out->prefix_, key,
	       key_len < sizeof out->prefix_ ? key_len : sizeof out->prefix_);
	return TKSHM_OK;
}

int
tk_api_check_hashed_at(tkshm_table *t, const tkshm_key *key, double cost,
		       double now_ms, tkshm_decision *out)
{
	struct tk_keyref k;
	int rc;

	if (!t || !key || !out)
		return TKSHM_ENULL;
	/* A fingerprint is only meaningful under the seed it was made with;
	 * a zero fingerprint or a length out of range is not one we made. */
	if (key->seed_ != t->seed || key->fp_ == 0 || key->len_ == 0 ||
	    key->len_ > TKSHM_KEY_MAX)
		return TKSHM_EINVAL;
	if ((rc = tk_check_cost(t, cost)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	if ((rc = tk_check_limiter(t)) != TKSHM_OK)
		return rc;
	/* Redis and the lease agent need the key's bytes, which a hashed
	 * key does not keep. */
	if (tk_is_global(t))
		return TKSHM_ENOTSUP;
	if (t->readonly)
		return TKSHM_EREADONLY;
	k.fp = key->fp_;
	k.label = key->prefix_;
	k.len = key->len_;
	return tk_table_check_ref(t, &k, cost, now_ms, out, NULL);
}

int
tk_api_check_hashed(tkshm_table *t, const tkshm_key *key, double cost,
		    tkshm_decision *out)
{
	/* Only a key of this table: another's is refused below, and its
	 * window here means nothing. */
	if (t && key && key->seed_ == t->seed)
		tk_prefetch_key(t, key->fp_);
	return tk_api_check_hashed_at(t, key, cost, tkshm_now_ms(), out);
}

/* Requests of a batch hashed and prefetched ahead of their checks. */
#define TK_BATCH 16

int
tk_api_check_many_at(tkshm_table *t, const tkshm_request *reqs, size_t n,
		     double now_ms, tkshm_decision *out, size_t *done)
{
	int rc;

	if (done)
		*done = 0;
	if (!t || (n && (!reqs || !out)))
		return TKSHM_ENULL;
	if ((rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = tk_check_key(reqs[i].key, reqs[i].key_len)) !=
			    TKSHM_OK ||
		    (rc = tk_check_cost(t, reqs[i].cost)) != TKSHM_OK)
			return rc;
	if ((rc = tk_check_limiter(t)) != TKSHM_OK)
		return rc;
	if (tk_is_global(t)) {
		for (size_t i = 0; i < n; i++) {
			rc = tk_global_check(t, reqs[i].key, reqs[i].key_len,
					     reqs[i].cost, now_ms, &out[i]);
			if (rc != TKSHM_OK)
				return rc;
			if (done)
				*done = i + 1;
		}
		return TKSHM_OK;
	}
	if (t->readonly)
		return TKSHM_EREADONLY;
	for (size_t base = 0; base < n; base += TK_BATCH) {
		struct tk_keyref k[TK_BATCH];
		size_t m = n - base < TK_BATCH ? n - base : TK_BATCH;

		/* Hash a group of keys and start fetching both buckets of
		 * each before the first check: the checks' cache misses then
		 * overlap instead of following one another (a locked CAS
		 * keeps the CPU from running ahead into the next check). */
		/* cppcheck-suppress knownConditionTrueFalse ; m >= 1 */
		for (size_t j = 0; j < m; j++) {
			const tkshm_request *r = &reqs[base + j];

			k[j] = tk_keyref_of(t, r->key, r->key_len);
			tk_prefetch_key(t, k[j].fp);
		}
		/* cppcheck-suppress knownConditionTrueFalse ; m >= 1 */
		for (size_t j = 0; j < m; j++) {
			size_t i = base + j;

			rc = tk_table_check_ref(t, &k[j], reqs[i].cost, now_ms,
						&out[i], NULL);
			if (rc != TKSHM_OK)
				return rc;
			if (done)
				*done = i + 1;
		}
	}
	return TKSHM_OK;
}

int
tk_api_check_many(tkshm_table *t, const tkshm_request *reqs, size_t n,
		  tkshm_decision *out, size_t *done)
{
	return tk_api_check_many_at(t, reqs, n, tkshm_now_ms(), out, done);
}

int
tk_api_peek_at(tkshm_table *t, const void *key, size_t key_len, double now_ms,
	       tkshm_decision *out)
{
	int rc = tk_check_keyed_call(t, out, key, key_len, NULL, now_ms);

	if (rc != TKSHM_OK)
		return rc;
	if (tk_is_global(t))
		return tk_global_peek(t, key, key_len, now_ms, out);
	return tk_table_peek(t, key, key_len, now_ms, out);
}

int
tk_api_forecast_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		   double now_ms, tkshm_forecast *out)
{
	int rc = tk_check_keyed_call(t, out, key, key_len, &cost, now_ms);

	if (rc != TKSHM_OK)
		return rc;
	/* The table holds a lease or a cached denial, not the limit's state
	 * (that is in Redis). */
	if (tk_is_global(t))
		return TKSHM_ENOTSUP;
	return tk_table_forecast(t, key, key_len, cost, now_ms, out);
}

int
tk_api_forecast_get(tkshm_table *t, const void *key, size_t key_len,
		    double cost, tkshm_forecast *out)
{
	return tk_api_forecast_at(t, key, key_len, cost, tkshm_now_ms(), out);
}

int
tk_api_peek(tkshm_table *t, const void *key, size_t key_len,
	    tkshm_decision *out)
{
	return tk_api_peek_at(t, key, key_len, tkshm_now_ms(), out);
}

int
tk_api_reset(tkshm_table *t, const void *key, size_t key_len)
{
	int rc;

	if (!t)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK)
		return rc;
	/* Forgetting a key's permits would let more than the limit run. */
	if (tk_algo_is_concurrency(&t->algo))
		return TKSHM_ENOTSUP;
	if (t->readonly)
		return TKSHM_EREADONLY;
	return tk_table_reset(t, key, key_len);
}

/* The cross-host tier's counters and state (global_shm.h). */
static void
tk_global_stats(const tkshm_table *t, tkshm_stats *out)
{
	struct tk_global_shm *g = t->global;
	uint64_t c[TK_G_COUNT];
	double now = tk_mono_coarse_ms();

	if (!tk_is_global(t))
		return;
	for (int i = 0; i < TK_G_COUNT; i++)
		/* Relaxed: a statistics snapshot. */
		c[i] = tk_load_relaxed(&g->c[i]);
	out->global.redis_calls = c[TK_G_REDIS_CALLS];
	out->global.redis_errors = c[TK_G_REDIS_ERRORS];
	out->global.noscript_reloads = c[TK_G_NOSCRIPT_RELOADS];
	/* Relaxed (every load below): a statistics snapshot. */
	out->global.breaker_opens = tk_load_relaxed(&g->breaker.opens);
	out->global.cache_denials = c[TK_G_CACHE_DENIALS];
	out->global.fallback_allowed = c[TK_G_FALLBACK_ALLOWED];
	out->global.fallback_denied = c[TK_G_FALLBACK_DENIED];
	out->global.no_lease = c[TK_G_NO_LEASE];
	out->global.leases = c[TK_G_LEASES];
	out->global.lease_units = c[TK_G_LEASE_UNITS];
	out->global.lease_round_trips = c[TK_G_LEASE_ROUND_TRIPS];
	out->global.lease_units_expired = c[TK_G_LEASE_EXPIRED];
	out->global.hosts = tk_load_relaxed(&g->hosts);
	out->global.agent_pid = (int64_t)tk_load_relaxed(&g->agent_pid);
	if (t->policy.global.mode == TKSHM_MODE_LEASE) {
		struct tk_lease_env env;

		tk_lease_env_of(t, &env);
		out->global.redis_up = !env.redis_down;
	} else {
		/* Strict: up while the shared breaker is closed. */
		out->global.redis_up =
			tk_load_relaxed(&g->breaker.open_until) == 0;
	}
	/* The heartbeat is monotonic; shown as the epoch ms it was. */
	if (out->global.agent_pid) {
		double beat = tk_word_f64(tk_load_relaxed(&g->agent_beat));
		out->global.agent_beat_ms = tkshm_now_ms() - (now - beat);
	}
}

int
tk_api_stats_get(tkshm_table *t, tkshm_stats *out)
{
	uint64_t c[TK_SHARD_COUNTERS];

	if (!t || !out)
		return TKSHM_ENULL;
	memset(out, 0, sizeof *out);
	tk_counters_sum(t, c);
	out->allowed = c[TK_C_ALLOWED];
	out->denied = c[TK_C_DENIED];
	out->inserts = c[TK_C_INSERTS];
	out->reclaims = c[TK_C_RECLAIMS];
	out->evictions = c[TK_C_EVICTIONS];
	out->evictions_in_debt = c[TK_C_EVICTIONS_IN_DEBT];
	out->debt_restores = c[TK_C_DEBT_RESTORES];
	out->cas_retries = c[TK_C_CAS_RETRIES];
	out->refusals = c[TK_C_REFUSALS];
	out->duplicates_killed = c[TK_C_DUPLICATES_KILLED];
	out->resets = c[TK_C_RESETS];
	out->multi_rollbacks = c[TK_C_MULTI_ROLLBACKS];
	out->claims_stolen = c[TK_C_CLAIMS_STOLEN];
	out->releases = c[TK_C_RELEASES];
	out->reaped = c[TK_C_REAPED];
	tk_global_stats(t, out);
	out->slots = t->nbuckets * TK_SLOTS_PER_BUCKET;
	out->buckets = t->nbuckets;
	out->debt_cells = t->ndebt;
	out->file_bytes = t->map_size;
	out->bytes_per_key = (double)t->map_size / (double)out->slots;
	out->created_ms = t->created_ms;
	out->layout_version = TK_LAYOUT_VERSION;
	out->on_full = t->on_full;
	out->policy = t->policy;
	out->anonymous = t->anonymous;
	return TKSHM_OK;
}
