/*
 * status_prom.c - tkshm-status?prometheus: the declared tables' counters
 * in Prometheus's text exposition format (0.0.4), with the metric names,
 * types and labels of `tkshm-inspect metrics` and nginx's status page, so
 * that one dashboard and one set of alerting rules (contrib/) serve all
 * three.  Each table is labelled table="NAME", its TkshmTable name.
 *
 * The tables are read first (tkshm_stats_get, and a scan of the slots,
 * tkshm_usage_get, for the keys by state and the occupancy), then each
 * metric is written with its HELP and TYPE lines and one sample per table
 * that has it, as the format wants a metric's samples together.  A table
 * that could not be read has no samples; tkshm_status_errors, last,
 * counts them.
 */
#include <math.h>
#include <string.h>

#include "mod_tkshm.h"

#include "http_protocol.h"
#include "apr_strings.h"

/* One table's numbers. */
typedef struct tkap_prom_sample {
	const char *name;
	tkshm_stats st;
	tkshm_usage u;
	bool ok;
} tkap_prom_sample;

/* Which tables have a metric. */
enum tkap_prom_has {
	TKAP_ALL,
	TKAP_PERMITS, /* concurrency and adaptiveConcurrency */
	TKAP_GLOBAL,  /* strict and lease */
	TKAP_STRICT,
	TKAP_LEASE
};

/* A metric: `label` and the values of its series (NULL: one series). */
typedef struct tkap_prom_metric {
	const char *name, *type, *help;
	enum tkap_prom_has has;
	const char *label;
	const char *values[5];
} tkap_prom_metric;

#define TKAP_C(n, has, h)                                     \
	{                                                     \
		"tkshm_" n "_total", "counter", h, has, NULL, \
		{                                             \
			0                                     \
		}                                             \
	}
#define TKAP_G(n, has, h)                          \
	{                                          \
		"tkshm_" n, "gauge", h, has, NULL, \
		{                                  \
			0                          \
		}                                  \
	}

/* In tkshm-inspect's order and words (tools/tkshm-inspect/cmd_metrics.c);
 * tkap_prom_value knows each by its index. */
static const tkap_prom_metric tkap_prom_metrics[] = {
	{ "tkshm_decisions_total",
	  "counter",
	  "Checks decided, by decision (allowed includes multi-dimension "
	  "commits given back later).",
	  TKAP_ALL,
	  "decision",
	  { "allowed", "denied" } },
	TKAP_C("inserts", TKAP_ALL, "Keys inserted, re-inserts included."),
	TKAP_C("reclaims", TKAP_ALL, "Idle slots taken over by another key."),
	TKAP_C("evictions", TKAP_ALL, "Live keys evicted to make room."),
	TKAP_C("evictions_in_debt", TKAP_ALL,
	       "Evicted keys that were in debt (their debt is remembered)."),
	TKAP_C("debt_restores", TKAP_ALL,
	       "Inserts that started from remembered debt."),
	TKAP_C("cas_retries", TKAP_ALL,
	       "Compare-and-swaps lost to another writer."),
	TKAP_C("refusals", TKAP_ALL,
	       "Checks refused because the key's probe window was full."),
	TKAP_C("duplicates_killed", TKAP_ALL,
	       "Concurrent placeholders of one key retired."),
	TKAP_C("resets", TKAP_ALL, "Keys reset."),
	TKAP_C("multi_rollbacks", TKAP_ALL,
	       "Multi-dimension commits given back after a lost race."),
	TKAP_C("claims_stolen", TKAP_ALL,
	       "Wide-state claims taken over from a stopped or dead writer."),
	TKAP_C("releases", TKAP_PERMITS,
	       "Permits given back by their holders."),
	TKAP_C("reaped", TKAP_PERMITS,
	       "Permits taken back from holders that died."),
	TKAP_G("slots", TKAP_ALL, "Capacity of the table in slots."),
	{ "tkshm_keys",
	  "gauge",
	  "Slots by state at the time of the scan.",
	  TKAP_ALL,
	  "state",
	  { "live", "idle", "placeholder", "dead", "empty" } },
	TKAP_G("occupancy_ratio", TKAP_ALL,
	       "(live + idle + placeholders) / slots."),
	TKAP_G("table_bytes", TKAP_ALL, "Size of the table file."),
	TKAP_G("bytes_per_key", TKAP_ALL, "Table bytes per slot."),
	TKAP_G("created_timestamp_seconds", TKAP_ALL,
	       "When the table was created, in seconds since the epoch."),
	TKAP_C("redis_calls", TKAP_GLOBAL, "Commands sent to Redis."),
	TKAP_C("redis_errors", TKAP_GLOBAL,
	       "Commands to Redis that failed: refused, timed out, connection "
	       "lost or an error reply."),
	TKAP_C("redis_noscript_reloads", TKAP_GLOBAL,
	       "Scripts loaded again after a NOSCRIPT reply."),
	TKAP_C("redis_breaker_opens", TKAP_GLOBAL,
	       "Times the circuit breaker opened."),
	{ "tkshm_fallback_decisions_total",
	  "counter",
	  "Checks decided by the failure policy while Redis could not be "
	  "reached, by decision.",
	  TKAP_GLOBAL,
	  "decision",
	  { "allowed", "denied" } },
	TKAP_C("cache_denials", TKAP_STRICT,
	       "Strict: checks denied from the negative cache without asking "
	       "Redis."),
	TKAP_C("no_lease_denials", TKAP_LEASE,
	       "Lease: checks denied for want of leased budget."),
	TKAP_C("leases", TKAP_LEASE, "Lease: grants written into the table."),
	TKAP_C("lease_units", TKAP_LEASE, "Lease: units granted."),
	TKAP_C("lease_round_trips", TKAP_LEASE,
	       "Lease: the agent's round trips to Redis."),
	TKAP_C("lease_units_expired", TKAP_LEASE,
	       "Lease: units unspent when their lease ended."),
	{ "tkshm_global_mode",
	  "gauge",
	  "The table's cross-host mode: 1 for the mode in force.",
	  TKAP_GLOBAL,
	  "mode",
	  { "strict", "lease" } },
	{ "tkshm_failure_policy",
	  "gauge",
	  "What the table decides while Redis cannot be reached: 1 for the "
	  "policy in force.",
	  TKAP_GLOBAL,
	  "policy",
	  { "safe-share", "fail-open", "fail-closed" } },
	TKAP_G("redis_up", TKAP_GLOBAL,
	       "1 while the last exchange with Redis worked."),
	TKAP_G("global_hosts", TKAP_GLOBAL,
	       "The last known number of hosts (0: not known yet)."),
	TKAP_G("agent_pid", TKAP_LEASE,
	       "Lease: the tkshm-syncd serving the table (0: none)."),
	TKAP_G("agent_heartbeat_timestamp_seconds", TKAP_LEASE,
	       "Lease: the agent's last heartbeat, in seconds since the epoch "
	       "(0: never)."),
};
#define TKAP_PROM_N (sizeof(tkap_prom_metrics) / sizeof(tkap_prom_metrics[0]))
/* tkap_prom_value's indices are those of this list. */
_Static_assert(TKAP_PROM_N == 37, "tkap_prom_value knows 37 metrics");

static bool
tkap_prom_has(const tkap_prom_metric *m, const tkap_prom_sample *s)
{
	tkshm_global_mode mode = s->st.policy.global.mode;
	tkshm_kind k = s->st.policy.kind;

	switch (m->has) {
	case TKAP_PERMITS:
		return k == TKSHM_KIND_CONCURRENCY ||
		       k == TKSHM_KIND_ADAPTIVE_CONCURRENCY;
	case TKAP_GLOBAL:
		return mode != TKSHM_MODE_LOCAL;
	case TKAP_STRICT:
		return mode == TKSHM_MODE_STRICT;
	case TKAP_LEASE:
		return mode == TKSHM_MODE_LEASE;
	default:
		return true;
	}
}

static double
tkap_prom_keys(const tkap_prom_sample *s, size_t i)
{
	const uint64_t v[] = { s->u.live, s->u.idle, s->u.placeholders,
			       s->u.dead, s->u.empty };

	return (double)v[i];
}

/* Metric m's series i of table s, by m's index in tkap_prom_metrics. */
static double
tkap_prom_value(size_t m, size_t i, const tkap_prom_sample *s)
{
	const tkshm_stats *t = &s->st;
	const double counters[] = {
		(double)t->allowed,
		(double)t->inserts,
		(double)t->reclaims,
		(double)t->evictions,
		(double)t->evictions_in_debt,
		(double)t->debt_restores,
		(double)t->cas_retries,
		(double)t->refusals,
		(double)t->duplicates_killed,
		(double)t->resets,
		(double)t->multi_rollbacks,
		(double)t->claims_stolen,
		(double)t->releases,
		(double)t->reaped,
		(double)t->slots,
	};
	const double global[] = {
		(double)t->global.redis_calls,
		(double)t->global.redis_errors,
		(double)t->global.noscript_reloads,
		(double)t->global.breaker_opens,
		i ? (double)t->global.fallback_denied :
		    (double)t->global.fallback_allowed,
		(double)t->global.cache_denials,
		(double)t->global.no_lease,
		(double)t->global.leases,
		(double)t->global.lease_units,
		(double)t->global.lease_round_trips,
		(double)t->global.lease_units_expired,
	};
	uint64_t used = s->u.live + s->u.idle + s->u.placeholders;

	if (m == 0) /* decisions */
		return i ? (double)t->denied : (double)t->allowed;
	if (m < 15)
		return counters[m];
	switch (m) {
	case 15:
		return tkap_prom_keys(s, i);
	case 16:
		return t->slots ? (double)used / (double)t->slots : 0.0;
	case 17:
		return (double)t->file_bytes;
	case 18:
		return t->bytes_per_key;
	case 19:
		return t->created_ms / 1000.0;
	case 31: /* global_mode: strict, lease */
		return (i == 0 && t->policy.global.mode == TKSHM_MODE_STRICT) ||
				       (i == 1 && t->policy.global.mode ==
							  TKSHM_MODE_LEASE) ?
			       1.0 :
			       0.0;
	case 32: /* failure_policy, in the descriptor's order */
		return (i == 0 &&
			t->policy.global.failure == TKSHM_FAILURE_SAFE_SHARE) ||
				       (i == 1 && t->policy.global.failure ==
							  TKSHM_FAILURE_OPEN) ||
				       (i == 2 &&
					t->policy.global.failure ==
						TKSHM_FAILURE_CLOSED) ?
			       1.0 :
			       0.0;
	case 33:
		return t->global.redis_up ? 1.0 : 0.0;
	case 34:
		return (double)t->global.hosts;
	case 35:
		return (double)t->global.agent_pid;
	case 36:
		return t->global.agent_beat_ms / 1000.0;
	default:
		return m - 20 < sizeof(global) / sizeof(global[0]) ?
			       global[m - 20] :
			       0.0;
	}
}

/* Integers as integers, other values with round-trip precision. */
static void
tkap_prom_number(request_rec *r, double v)
{
	if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == floor(v))
		ap_rprintf(r, "%" APR_INT64_T_FMT, (apr_int64_t)v);
	else
		ap_rprintf(r, "%.17g", v);
}

static void
tkap_prom_metric_out(request_rec *r, size_t m, const tkap_prom_sample *s, int n)
{
	const tkap_prom_metric *mt = &tkap_prom_metrics[m];
	size_t nseries = 1;
	bool any = false;

	for (int k = 0; k < n && !any; k++)
		any = s[k].ok && tkap_prom_has(mt, &s[k]);
	if (!any)
		return;
	while (mt->label && nseries < 5 && mt->values[nseries])
		nseries++;
	ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", mt->name, mt->help,
		   mt->name, mt->type);
	for (int k = 0; k < n; k++) {
		if (!s[k].ok || !tkap_prom_has(mt, &s[k]))
			continue;
		for (size_t i = 0; i < nseries; i++) {
			/* Table names are [A-Za-z0-9_.-] (config.c): nothing
			 * to escape. */
			ap_rprintf(r, "%s{table=\"%s\"", mt->name, s[k].name);
			if (mt->label)
				ap_rprintf(r, ",%s=\"%s\"", mt->label,
					   mt->values[i]);
			ap_rputs("} ", r);
			tkap_prom_number(r, tkap_prom_value(m, i, &s[k]));
			ap_rputc('\n', r);
		}
	}
}

void
tkap_status_prometheus(request_rec *r, const apr_array_header_t *tables)
{
	tkap_prom_sample *s =
		apr_pcalloc(r->pool, sizeof(*s) * (size_t)(tables->nelts + 1));
	double now = tkshm_now_ms();
	int errors = 0;

	for (int k = 0; k < tables->nelts; k++) {
		const tkap_table *t = ((tkap_table **)tables->elts)[k];

		s[k].name = t->name;
		s[k].ok = t->handle &&
			  tkshm_stats_get(t->handle, &s[k].st) == TKSHM_OK &&
			  tkshm_usage_get(t->handle, now, &s[k].u) == TKSHM_OK;
		errors += !s[k].ok;
	}
	for (size_t m = 0; m < TKAP_PROM_N; m++)
		tkap_prom_metric_out(r, m, s, tables->nelts);
	ap_rprintf(r,
		   "# HELP tkshm_status_errors Tables named that could not "
		   "be read.\n"
		   "# TYPE tkshm_status_errors gauge\n"
		   "tkshm_status_errors %d\n",
		   errors);
}
