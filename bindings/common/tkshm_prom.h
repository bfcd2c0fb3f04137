/*
 * tkshm_prom.h - the metrics the web servers' status pages give in
 * Prometheus's text format (Apache's tkshm-status?prometheus, nginx's
 * tkshm_status_page ?prometheus): the names, types, help and labels of
 * `tkshm-inspect metrics`, so that one dashboard and one set of alerting
 * rules (contrib/) serve all three, and each series' value from a table's
 * tkshm_stats and tkshm_usage.  Each server writes the lines with its own
 * output functions: a metric's "# HELP" and "# TYPE" lines, then one
 * sample per table that has it (tkprom_has), labelled table="NAME" and,
 * when the metric has one, LABEL="VALUE" for each of its values.
 *
 * Header only (static inline) and on the library's public API alone: the
 * two modules build apart from each other.
 */
#ifndef TKSHM_PROM_H
#define TKSHM_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tkshm.h>

/* One table's numbers: its stats and a scan of its slots. */
typedef struct tkprom_sample {
	const char *name; /* the `table` label */
	tkshm_stats st;
	tkshm_usage u;
	bool ok; /* read; a table not read has no samples */
} tkprom_sample;

/* Which tables have a metric. */
enum tkprom_has {
	TKPROM_ALL,
	TKPROM_PERMITS, /* concurrency and adaptiveConcurrency */
	TKPROM_GLOBAL,	/* strict and lease */
	TKPROM_STRICT,
	TKPROM_LEASE
};

/* A metric: `label` and the values of its series (NULL: one series). */
typedef struct tkprom_metric {
	const char *name, *type, *help;
	enum tkprom_has has;
	const char *label;
	const char *values[5];
} tkprom_metric;

#define TKPROM_C(n, has, h)                                   \
	{                                                     \
		"tkshm_" n "_total", "counter", h, has, NULL, \
		{                                             \
			0                                     \
		}                                             \
	}
#define TKPROM_G(n, has, h)                        \
	{                                          \
		"tkshm_" n, "gauge", h, has, NULL, \
		{                                  \
			0                          \
		}                                  \
	}

/* In tkshm-inspect's order and words (tools/tkshm-inspect/cmd_metrics.c:
 * the servers' tests compare the two); tkprom_value knows each by its
 * index. */
static const tkprom_metric tkprom_metrics[] = {
	{ "tkshm_decisions_total",
	  "counter",
	  "Checks decided, by decision (allowed includes multi-dimension "
	  "commits given back later).",
	  TKPROM_ALL,
	  "decision",
	  { "allowed", "denied" } },
	TKPROM_C("inserts", TKPROM_ALL, "Keys inserted, re-inserts included."),
	TKPROM_C("reclaims", TKPROM_ALL,
		 "Idle slots taken over by another key."),
	TKPROM_C("evictions", TKPROM_ALL, "Live keys evicted to make room."),
	TKPROM_C("evictions_in_debt", TKPROM_ALL,
		 "Evicted keys that were in debt (their debt is remembered)."),
	TKPROM_C("debt_restores", TKPROM_ALL,
		 "Inserts that started from remembered debt."),
	TKPROM_C("cas_retries", TKPROM_ALL,
		 "Compare-and-swaps lost to another writer."),
	TKPROM_C("refusals", TKPROM_ALL,
		 "Checks refused because the key's probe window was full."),
	TKPROM_C("duplicates_killed", TKPROM_ALL,
		 "Concurrent placeholders of one key retired."),
	TKPROM_C("resets", TKPROM_ALL, "Keys reset."),
	TKPROM_C("multi_rollbacks", TKPROM_ALL,
		 "Multi-dimension commits given back after a lost race."),
	TKPROM_C("claims_stolen", TKPROM_ALL,
		 "Wide-state claims taken over from a stopped or dead writer."),
	TKPROM_C("releases", TKPROM_PERMITS,
		 "Permits given back by their holders."),
	TKPROM_C("reaped", TKPROM_PERMITS,
		 "Permits taken back from holders that died."),
	TKPROM_G("slots", TKPROM_ALL, "Capacity of the table in slots."),
	{ "tkshm_keys",
	  "gauge",
	  "Slots by state at the time of the scan.",
	  TKPROM_ALL,
	  "state",
	  { "live", "idle", "placeholder", "dead", "empty" } },
	TKPROM_G("occupancy_ratio", TKPROM_ALL,
		 "(live + idle + placeholders) / slots."),
	TKPROM_G("table_bytes", TKPROM_ALL, "Size of the table file."),
	TKPROM_G("bytes_per_key", TKPROM_ALL, "Table bytes per slot."),
	TKPROM_G("created_timestamp_seconds", TKPROM_ALL,
		 "When the table was created, in seconds since the epoch."),
	TKPROM_C("redis_calls", TKPROM_GLOBAL, "Commands sent to Redis."),
	TKPROM_C(
		"redis_errors", TKPROM_GLOBAL,
		"Commands to Redis that failed: refused, timed out, connection "
		"lost or an error reply."),
	TKPROM_C("redis_noscript_reloads", TKPROM_GLOBAL,
		 "Scripts loaded again after a NOSCRIPT reply."),
	TKPROM_C("redis_breaker_opens", TKPROM_GLOBAL,
		 "Times the circuit breaker opened."),
	{ "tkshm_fallback_decisions_total",
	  "counter",
	  "Checks decided by the failure policy while Redis could not be "
	  "reached, by decision.",
	  TKPROM_GLOBAL,
	  "decision",
	  { "allowed", "denied" } },
	TKPROM_C("cache_denials", TKPROM_STRICT,
		 "Strict: checks denied from the negative cache without asking "
		 "Redis."),
	TKPROM_C("no_lease_denials", TKPROM_LEASE,
		 "Lease: checks denied for want of leased budget."),
	TKPROM_C("leases", TKPROM_LEASE,
		 "Lease: grants written into the table."),
	TKPROM_C("lease_units", TKPROM_LEASE, "Lease: units granted."),
	TKPROM_C("lease_round_trips", TKPROM_LEASE,
		 "Lease: the agent's round trips to Redis."),
	TKPROM_C("lease_units_expired", TKPROM_LEASE,
		 "Lease: units unspent when their lease ended."),
	{ "tkshm_global_mode",
	  "gauge",
	  "The table's cross-host mode: 1 for the mode in force.",
	  TKPROM_GLOBAL,
	  "mode",
	  { "strict", "lease" } },
	{ "tkshm_failure_policy",
	  "gauge",
	  "What the table decides while Redis cannot be reached: 1 for the "
	  "policy in force.",
	  TKPROM_GLOBAL,
	  "policy",
	  { "safe-share", "fail-open", "fail-closed" } },
	TKPROM_G("redis_up", TKPROM_GLOBAL,
		 "1 while the last exchange with Redis worked."),
	TKPROM_G("global_hosts", TKPROM_GLOBAL,
		 "The last known number of hosts (0: not known yet)."),
	TKPROM_G("agent_pid", TKPROM_LEASE,
		 "Lease: the tkshm-syncd serving the table (0: none)."),
	TKPROM_G(
		"agent_heartbeat_timestamp_seconds", TKPROM_LEASE,
		"Lease: the agent's last heartbeat, in seconds since the epoch "
		"(0: never)."),
};
#define TKPROM_N (sizeof(tkprom_metrics) / sizeof(tkprom_metrics[0]))
/* tkprom_value's indices are those of this list. */
_Static_assert(TKPROM_N == 37, "tkprom_value knows 37 metrics");

static inline bool
tkprom_has(const tkprom_metric *m, const tkprom_sample *s)
{
	tkshm_global_mode mode = s->st.policy.global.mode;
	tkshm_kind k = s->st.policy.kind;

	switch (m->has) {
	case TKPROM_PERMITS:
		return k == TKSHM_KIND_CONCURRENCY ||
		       k == TKSHM_KIND_ADAPTIVE_CONCURRENCY;
	case TKPROM_GLOBAL:
		return mode != TKSHM_MODE_LOCAL;
	case TKPROM_STRICT:
		return mode == TKSHM_MODE_STRICT;
	case TKPROM_LEASE:
		return mode == TKSHM_MODE_LEASE;
	default:
		return true;
	}
}

static inline double
tkprom_keys(const tkprom_sample *s, size_t i)
{
	const uint64_t v[] = { s->u.live, s->u.idle, s->u.placeholders,
			       s->u.dead, s->u.empty };

	return (double)v[i];
}

/* Metric m's series i of table s, by m's index in tkprom_metrics. */
static inline double
tkprom_value(size_t m, size_t i, const tkprom_sample *s)
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
		return tkprom_keys(s, i);
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

/* The number of series of metric m (its label's values, or 1). */
static inline size_t
tkprom_nseries(const tkprom_metric *m)
{
	size_t n = 0;

	if (!m->label)
		return 1;
	while (n < sizeof(m->values) / sizeof(m->values[0]) && m->values[n])
		n++;
	return n;
}

#endif /* TKSHM_PROM_H */
