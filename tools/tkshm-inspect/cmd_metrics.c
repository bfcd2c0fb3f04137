/*
 * cmd_metrics.c - `tkshm-inspect metrics PATH... [--now MS] [--json]`: the
 * counters and gauges of one or more tables in the Prometheus text
 * exposition format (version 0.0.4), or as one JSON object keyed by path.
 *
 * Every table is read first (through a read-only mapping, closed again at
 * once), then each metric is printed with its HELP and TYPE lines once and
 * one sample per table, as the format wants a metric's samples together.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inspect.h"

void
ti_usage_metrics(FILE *f)
{
	fputs("Usage: " TI_PROG " metrics PATH... [--now MS] [--json | "
	      "--textfile DIR]\n"
	      "\n"
	      "Maps each table PATH read-only and prints its counters and\n"
	      "occupancy in the Prometheus text exposition format (0.0.4):\n"
	      "for each metric a '# HELP' and a '# TYPE' line, then one sample\n"
	      "per table, labelled {table=\"NAME\"}: the file's name without\n"
	      "its directory (/dev/shm/api is \"api\"; the whole path for a\n"
	      "second table of a name already seen).  Counters end in _total:\n"
	      "  tkshm_decisions_total{decision=\"allowed\"|\"denied\"},\n"
	      "  tkshm_inserts_total, tkshm_reclaims_total,\n"
	      "  tkshm_evictions_total, tkshm_evictions_in_debt_total,\n"
	      "  tkshm_debt_restores_total, tkshm_cas_retries_total,\n"
	      "  tkshm_refusals_total, tkshm_duplicates_killed_total,\n"
	      "  tkshm_resets_total, tkshm_multi_rollbacks_total,\n"
	      "  tkshm_claims_stolen_total; for concurrency and\n"
	      "  adaptiveConcurrency tables also tkshm_releases_total\n"
	      "  (permits given back by their holders) and tkshm_reaped_total\n"
	      "  (permits taken back from dead holders); their acquires count\n"
	      "  in tkshm_decisions_total.  A metric no table has is left out.\n"
	      "Gauges: tkshm_slots, tkshm_keys{state=\"live\"|\"idle\"|\n"
	      "\"placeholder\"|\"dead\"|\"empty\"}, tkshm_occupancy_ratio\n"
	      "((live + idle + placeholders) / slots), tkshm_table_bytes,\n"
	      "tkshm_bytes_per_key, tkshm_created_timestamp_seconds.\n"
	      "Strict and lease tables add their cross-host tier:\n"
	      "  tkshm_redis_calls_total, tkshm_redis_errors_total,\n"
	      "  tkshm_redis_noscript_reloads_total,\n"
	      "  tkshm_redis_breaker_opens_total,\n"
	      "  tkshm_fallback_decisions_total{decision=...},\n"
	      "  tkshm_global_mode{mode=\"strict\"|\"lease\"} and\n"
	      "  tkshm_failure_policy{policy=\"safe-share\"|\"fail-open\"|\n"
	      "  \"fail-closed\"} (1 for the one in force), tkshm_redis_up,\n"
	      "  tkshm_global_hosts; strict tables\n"
	      "  tkshm_cache_denials_total; lease tables\n"
	      "  tkshm_no_lease_denials_total, tkshm_leases_total,\n"
	      "  tkshm_lease_units_total, tkshm_lease_round_trips_total,\n"
	      "  tkshm_lease_units_expired_total, tkshm_agent_pid and\n"
	      "  tkshm_agent_heartbeat_timestamp_seconds.\n"
	      "\n"
	      "A table that cannot be opened is reported on standard error;\n"
	      "the others are still printed, and the exit status is then 3.\n"
	      "A table named twice is printed once.\n"
	      "\n"
	      "Options:\n"
	      "  --json            one JSON object keyed by table path, with\n"
	      "                    the same numbers in camelCase\n"
	      "  --textfile DIR    write DIR/" TI_TEXTFILE_NAME
	      " for node_exporter's\n"
	      "                    textfile collector instead (replaced\n"
	      "                    whole by a rename; with\n"
	      "                    tkshm_status_errors, the tables that\n"
	      "                    could not be read)\n"
	      "  --now MS          classify keys as live or idle at this time\n"
	      "                    (epoch ms; default: the system clock)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

/* One table's numbers. */
struct ti_sample {
	const char *path; /* the file's name, into full */
	char full[4200];
	const char *name; /* the `table` label: into path */
	tkshm_stats st;
	tkshm_usage u;
	struct ti_figures fg;
};

/* Where a metric's value is in a sample.  `label` and `value` add a second
 * label (tkshm_keys{state="live"}). */
struct ti_series {
	const char *label, *value;
	double (*get)(const struct ti_sample *s, size_t i);
	size_t i;
};

struct ti_metric {
	const char *name, *type, *help, *json;
	struct ti_series series[5];
	size_t nseries;
	/* The tables that have it; NULL: every table. */
	bool (*has)(const struct ti_sample *s);
};

/* Counters: tkshm_stats' fields in ti_counter_at's order. */
static double
ti_counter_at(const struct ti_sample *s, size_t i)
{
	const tkshm_stats *t = &s->st;
	const uint64_t v[] = {
		t->allowed,	      t->denied,      t->inserts,
		t->reclaims,	      t->evictions,   t->evictions_in_debt,
		t->debt_restores,     t->cas_retries, t->refusals,
		t->duplicates_killed, t->resets,      t->multi_rollbacks,
		t->claims_stolen,     t->releases,    t->reaped,
	};
	return i < sizeof v / sizeof v[0] ? (double)v[i] : 0.0;
}

static bool
ti_permits(const struct ti_sample *s)
{
	return ti_kind_has_permits(s->st.policy.kind);
}

static double
ti_keys_at(const struct ti_sample *s, size_t i)
{
	const uint64_t v[] = { s->u.live, s->u.idle, s->u.placeholders,
			       s->u.dead, s->u.empty };
	return i < sizeof v / sizeof v[0] ? (double)v[i] : 0.0;
}

static double
ti_gauge_at(const struct ti_sample *s, size_t i)
{
	switch (i) {
	case 0:
		return (double)s->st.slots;
	case 1:
		return s->fg.occupancy;
	case 2:
		return (double)s->st.file_bytes;
	case 3:
		return s->st.bytes_per_key;
	default:
		return s->st.created_ms / 1000.0;
	}
}

/* Strict and lease tables (the cross-host tier), and each of the two. */
static bool
ti_global(const struct ti_sample *s)
{
	return s->st.policy.global.mode != TKSHM_MODE_LOCAL;
}

static bool
ti_strict(const struct ti_sample *s)
{
	return s->st.policy.global.mode == TKSHM_MODE_STRICT;
}

static bool
ti_lease(const struct ti_sample *s)
{
	return s->st.policy.global.mode == TKSHM_MODE_LEASE;
}

/* The tier's counters and gauges, in ti_global_at's order. */
static double
ti_global_at(const struct ti_sample *s, size_t i)
{
	const tkshm_stats *t = &s->st;
	const double v[] = {
		(double)t->global.redis_calls,
		(double)t->global.redis_errors,
		(double)t->global.noscript_reloads,
		(double)t->global.breaker_opens,
		(double)t->global.fallback_allowed,
		(double)t->global.fallback_denied,
		(double)t->global.cache_denials,
		(double)t->global.no_lease,
		(double)t->global.leases,
		(double)t->global.lease_units,
		(double)t->global.lease_round_trips,
		(double)t->global.lease_units_expired,
		t->global.redis_up ? 1.0 : 0.0,
		(double)t->global.hosts,
		(double)t->global.agent_pid,
		t->global.agent_beat_ms / 1000.0,
	};
	return i < sizeof v / sizeof v[0] ? v[i] : 0.0;
}

/* An enumeration as one series per value, 1 for the table's (the
 * exposition format's way of stating a mode). */
static double
ti_mode_is(const struct ti_sample *s, size_t i)
{
	return (size_t)s->st.policy.global.mode == i ? 1.0 : 0.0;
}

static double
ti_failure_is(const struct ti_sample *s, size_t i)
{
	return (size_t)s->st.policy.global.failure == i ? 1.0 : 0.0;
}

#define TI_COUNTER(n, j, i, h)                                        \
	{                                                             \
		"tkshm_" n "_total", "counter", h, j,                 \
			{ { NULL, NULL, ti_counter_at, i } }, 1, NULL \
	}
/* A counter only tables whose keys hold permits have (always 0 in the
 * others, which keep the metrics they always had). */
#define TI_PERMIT_COUNTER(n, j, i, h)                                       \
	{                                                                   \
		"tkshm_" n "_total", "counter", h, j,                       \
			{ { NULL, NULL, ti_counter_at, i } }, 1, ti_permits \
	}
#define TI_GAUGE(n, j, i, h)                                                   \
	{                                                                      \
		"tkshm_" n, "gauge", h, j, { { NULL, NULL, ti_gauge_at, i } }, \
			1, NULL                                                \
	}

/* The cross-host tier's: `has` picks strict and lease tables, or one of
 * the two. */
#define TI_GLOBAL_COUNTER(n, j, i, has, h)                          \
	{                                                           \
		"tkshm_" n "_total", "counter", h, j,               \
			{ { NULL, NULL, ti_global_at, i } }, 1, has \
	}
#define TI_GLOBAL_GAUGE(n, j, i, has, h)                            \
	{                                                           \
		"tkshm_" n, "gauge", h, j,                          \
			{ { NULL, NULL, ti_global_at, i } }, 1, has \
	}

static const struct ti_metric ti_metrics[] = {
	{ "tkshm_decisions_total",
	  "counter",
	  "Checks decided, by decision (allowed includes multi-dimension "
	  "commits given back later).",
	  "decisions",
	  { { "decision", "allowed", ti_counter_at, 0 },
	    { "decision", "denied", ti_counter_at, 1 } },
	  2,
	  NULL },
	TI_COUNTER("inserts", "inserts", 2,
		   "Keys inserted, re-inserts included."),
	TI_COUNTER("reclaims", "reclaims", 3,
		   "Idle slots taken over by another key."),
	TI_COUNTER("evictions", "evictions", 4,
		   "Live keys evicted to make room."),
	TI_COUNTER("evictions_in_debt", "evictionsInDebt", 5,
		   "Evicted keys that were in debt (their debt is "
		   "remembered)."),
	TI_COUNTER("debt_restores", "debtRestores", 6,
		   "Inserts that started from remembered debt."),
	TI_COUNTER("cas_retries", "casRetries", 7,
		   "Compare-and-swaps lost to another writer."),
	TI_COUNTER("refusals", "refusals", 8,
		   "Checks refused because the key's probe window was full."),
	TI_COUNTER("duplicates_killed", "duplicatesKilled", 9,
		   "Concurrent placeholders of one key retired."),
	TI_COUNTER("resets", "resets", 10, "Keys reset."),
	TI_COUNTER("multi_rollbacks", "multiRollbacks", 11,
		   "Multi-dimension commits given back after a lost race."),
	TI_COUNTER("claims_stolen", "claimsStolen", 12,
		   "Wide-state claims taken over from a stopped or dead "
		   "writer."),
	TI_PERMIT_COUNTER("releases", "releases", 13,
			  "Permits given back by their holders."),
	TI_PERMIT_COUNTER("reaped", "reaped", 14,
			  "Permits taken back from holders that died."),
	TI_GAUGE("slots", "slots", 0, "Capacity of the table in slots."),
	{ "tkshm_keys",
	  "gauge",
	  "Slots by state at the time of the scan.",
	  "keys",
	  { { "state", "live", ti_keys_at, 0 },
	    { "state", "idle", ti_keys_at, 1 },
	    { "state", "placeholder", ti_keys_at, 2 },
	    { "state", "dead", ti_keys_at, 3 },
	    { "state", "empty", ti_keys_at, 4 } },
	  5,
	  NULL },
	TI_GAUGE("occupancy_ratio", "occupancyRatio", 1,
		 "(live + idle + placeholders) / slots."),
	TI_GAUGE("table_bytes", "tableBytes", 2, "Size of the table file."),
	TI_GAUGE("bytes_per_key", "bytesPerKey", 3, "Table bytes per slot."),
	TI_GAUGE("created_timestamp_seconds", "createdTimestampSeconds", 4,
		 "When the table was created, in seconds since the epoch."),
	TI_GLOBAL_COUNTER("redis_calls", "redisCalls", 0, ti_global,
			  "Commands sent to Redis."),
	TI_GLOBAL_COUNTER("redis_errors", "redisErrors", 1, ti_global,
			  "Commands to Redis that failed: refused, timed out, "
			  "connection lost or an error reply."),
	TI_GLOBAL_COUNTER("redis_noscript_reloads", "redisNoscriptReloads", 2,
			  ti_global,
			  "Scripts loaded again after a NOSCRIPT reply."),
	TI_GLOBAL_COUNTER("redis_breaker_opens", "redisBreakerOpens", 3,
			  ti_global, "Times the circuit breaker opened."),
	{ "tkshm_fallback_decisions_total",
	  "counter",
	  "Checks decided by the failure policy while Redis could not be "
	  "reached, by decision.",
	  "fallbackDecisions",
	  { { "decision", "allowed", ti_global_at, 4 },
	    { "decision", "denied", ti_global_at, 5 } },
	  2,
	  ti_global },
	TI_GLOBAL_COUNTER("cache_denials", "cacheDenials", 6, ti_strict,
			  "Strict: checks denied from the negative cache "
			  "without asking Redis."),
	TI_GLOBAL_COUNTER("no_lease_denials", "noLeaseDenials", 7, ti_lease,
			  "Lease: checks denied for want of leased budget."),
	TI_GLOBAL_COUNTER("leases", "leases", 8, ti_lease,
			  "Lease: grants written into the table."),
	TI_GLOBAL_COUNTER("lease_units", "leaseUnits", 9, ti_lease,
			  "Lease: units granted."),
	TI_GLOBAL_COUNTER("lease_round_trips", "leaseRoundTrips", 10, ti_lease,
			  "Lease: the agent's round trips to Redis."),
	TI_GLOBAL_COUNTER("lease_units_expired", "leaseUnitsExpired", 11,
			  ti_lease,
			  "Lease: units unspent when their lease ended."),
	{ "tkshm_global_mode",
	  "gauge",
	  "The table's cross-host mode: 1 for the mode in force.",
	  "globalMode",
	  { { "mode", "strict", ti_mode_is, TKSHM_MODE_STRICT },
	    { "mode", "lease", ti_mode_is, TKSHM_MODE_LEASE } },
	  2,
	  ti_global },
	{ "tkshm_failure_policy",
	  "gauge",
	  "What the table decides while Redis cannot be reached: 1 for the "
	  "policy in force.",
	  "failurePolicy",
	  { { "policy", "safe-share", ti_failure_is, TKSHM_FAILURE_SAFE_SHARE },
	    { "policy", "fail-open", ti_failure_is, TKSHM_FAILURE_OPEN },
	    { "policy", "fail-closed", ti_failure_is, TKSHM_FAILURE_CLOSED } },
	  3,
	  ti_global },
	TI_GLOBAL_GAUGE("redis_up", "redisUp", 12, ti_global,
			"1 while the last exchange with Redis worked."),
	TI_GLOBAL_GAUGE("global_hosts", "globalHosts", 13, ti_global,
			"The last known number of hosts (0: not known yet)."),
	TI_GLOBAL_GAUGE("agent_pid", "agentPid", 14, ti_lease,
			"Lease: the tkshm-syncd serving the table (0: none)."),
	TI_GLOBAL_GAUGE("agent_heartbeat_timestamp_seconds",
			"agentHeartbeatTimestampSeconds", 15, ti_lease,
			"Lease: the agent's last heartbeat, in seconds since "
			"the epoch (0: never)."),
};
#define TI_NMETRICS (sizeof ti_metrics / sizeof ti_metrics[0])

/* A label value as the exposition format escapes it. */
static void
ti_prom_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Integers as integers, other values with round-trip precision (the format
 * reads Go's ParseFloat syntax, which %.17g satisfies). */
static void
ti_prom_value(FILE *f, double v)
{
	if (v > -9007199254740992.0 && v < 9007199254740992.0 &&
	    v == (double)(int64_t)v)
		fprintf(f, "%" PRId64, (int64_t)v);
	else
		fprintf(f, "%.17g", v);
}

/* Whether table s has metric mt. */
static bool
ti_metric_of(const struct ti_metric *mt, const struct ti_sample *s)
{
	return !mt->has || mt->has(s);
}

static void
ti_metrics_text(FILE *f, const struct ti_sample *s, size_t n)
{
	for (size_t m = 0; m < TI_NMETRICS; m++) {
		const struct ti_metric *mt = &ti_metrics[m];
		bool any = !mt->has;

		for (size_t k = 0; k < n && !any; k++)
			any = ti_metric_of(mt, &s[k]);
		/* A metric without a sample would only be noise (but the
		 * metrics of every table are described even when no table
		 * could be read, as they always were). */
		if (!any)
			continue;
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", mt->name, mt->help,
			mt->name, mt->type);
		for (size_t k = 0; k < n; k++) {
			if (!ti_metric_of(mt, &s[k]))
				continue;
			for (size_t i = 0; i < mt->nseries; i++) {
				const struct ti_series *se = &mt->series[i];

				fprintf(f, "%s{table=", mt->name);
				ti_prom_label(f, s[k].name);
				if (se->label)
					fprintf(f, ",%s=\"%s\"", se->label,
						se->value);
				fputs("} ", f);
				ti_prom_value(f, se->get(&s[k], se->i));
				fputc('\n', f);
			}
		}
	}
}

static void
ti_metrics_json(const struct ti_sample *s, size_t n)
{
	struct ti_json j;

	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	for (size_t k = 0; k < n; k++) {
		ti_json_begin_obj(&j, s[k].path);
		for (size_t m = 0; m < TI_NMETRICS; m++) {
			const struct ti_metric *mt = &ti_metrics[m];

			if (!ti_metric_of(mt, &s[k]))
				continue;
			if (mt->nseries == 1) {
				ti_json_num(&j, mt->json,
					    mt->series[0].get(&s[k],
							      mt->series[0].i));
				continue;
			}
			ti_json_begin_obj(&j, mt->json);
			for (size_t i = 0; i < mt->nseries; i++)
				ti_json_num(&j, mt->series[i].value,
					    mt->series[i].get(&s[k],
							      mt->series[i].i));
			ti_json_end_obj(&j);
		}
		ti_json_end_obj(&j);
	}
	ti_json_end_obj(&j);
}

/* Reads one table into *s; returns TI_EXIT_OK or the exit code of a table
 * that could not be read (reported). */
static int
ti_sample_read(struct ti_sample *s, const char *path, double now)
{
	tkshm_table *t;
	int k, rc;

	s->path = path;
	if ((k = ti_open_rdonly(&s->path, s->full, sizeof s->full, &t)) !=
	    TI_EXIT_OK)
		return k;
	tkshm_stats_get(t, &s->st);
	rc = tkshm_usage_get(t, now, &s->u);
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_err("cannot scan %s: %s", s->path, tkshm_strerror(rc));
		return TI_EXIT_IO;
	}
	ti_figures_of(&s->st, &s->u, &s->fg);
	return TI_EXIT_OK;
}

/* True when an earlier sample names the same file: two samples with the
 * same labels would make the exposition invalid. */
static bool
ti_seen(const struct ti_sample *s, size_t n, const char *path)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(s[k].path, path) == 0)
			return true;
	return false;
}

/* The `table` label of sample n: the file's name without its directory
 * (what nginx's and Apache's status pages call the table, /dev/shm/api
 * being "api"), or its whole path when an earlier sample already has
 * that name (two directories with a table of one name). */
static void
ti_sample_name(struct ti_sample *s, size_t n)
{
	const char *slash = strrchr(s[n].path, '/');

	s[n].name = slash && slash[1] ? slash + 1 : s[n].path;
	for (size_t k = 0; k < n; k++)
		if (strcmp(s[k].name, s[n].name) == 0) {
			s[n].name = s[n].path;
			return;
		}
}

/* Reads every table; returns the worst exit code (3 beats 4: "cannot open"
 * is what a scraper's operator needs to hear first).  *nfail counts the
 * tables that could not be read. */
static int
ti_metrics_read(const char **paths, size_t np, double now, struct ti_sample *s,
		size_t *n, size_t *nfail)
{
	int worst = TI_EXIT_OK;

	*n = 0;
	for (size_t i = 0; i < np; i++) {
		int k = ti_sample_read(&s[*n], paths[i], now);

		if (k != TI_EXIT_OK) {
			++*nfail;
			if (worst != TI_EXIT_OPEN)
				worst = k;
			continue;
		}
		if (!ti_seen(s, *n, s[*n].path)) {
			ti_sample_name(s, *n);
			(*n)++;
		}
	}
	return worst;
}

int
ti_metrics_write(FILE *f, const char **paths, size_t np, double now,
		 bool errors)
{
	struct ti_sample *s = calloc(np ? np : 1, sizeof *s);
	size_t n, nfail = 0;
	int k;

	if (!s) {
		ti_err("out of memory");
		return TI_EXIT_IO;
	}
	k = ti_metrics_read(paths, np, now, s, &n, &nfail);
	ti_metrics_text(f, s, n);
	if (errors)
		fprintf(f,
			"# HELP tkshm_status_errors Tables named that could "
			"not be read.\n"
			"# TYPE tkshm_status_errors gauge\n"
			"tkshm_status_errors %zu\n",
			nfail);
	free(s);
	return k;
}

struct ti_metrics_opts {
	bool json, have_now;
	double now;
	const char *textfile; /* --textfile DIR, NULL: standard output */
};

static int
ti_metrics_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_metrics_opts *mo = ctx;

	if (strcmp(name, "json") == 0) {
		mo->json = true;
		return TI_GO_ON;
	}
	if (strcmp(name, "textfile") == 0) {
		mo->textfile = value;
		return TI_GO_ON;
	}
	mo->have_now = true;
	return ti_now_opt(cmd, value, &mo->now);
}

/* --textfile DIR: DIR/tkshm.prom replaced whole by a rename, so that
 * node_exporter's textfile collector never reads half a file; written
 * even when a table could not be read (tkshm_status_errors says so). */
static int
ti_metrics_textfile(const char *dir, const char **paths, size_t np, double now)
{
	char tmp[4200], dst[4200];
	int fd, k;
	FILE *f;

	if (snprintf(dst, sizeof dst, "%s/" TI_TEXTFILE_NAME, dir) >=
		    (int)sizeof dst ||
	    snprintf(tmp, sizeof tmp, "%s/." TI_TEXTFILE_NAME ".XXXXXX", dir) >=
		    (int)sizeof tmp)
		return ti_usage_error("metrics", "--textfile: the path is too "
						 "long");
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		ti_err("cannot write in %s: %s", dir, strerror(errno));
		return TI_EXIT_IO;
	}
	/* mkostemp makes it 0600; the collector may run as another user. */
	if (fchmod(fd, 0644) != 0 || !(f = fdopen(fd, "w"))) {
		ti_err("cannot write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return TI_EXIT_IO;
	}
	k = ti_metrics_write(f, paths, np, now, true);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || ferror(f)) {
		ti_err("cannot write %s: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		return TI_EXIT_IO;
	}
	if (fclose(f) != 0 || rename(tmp, dst) != 0) {
		ti_err("cannot replace %s: %s", dst, strerror(errno));
		unlink(tmp);
		return TI_EXIT_IO;
	}
	return k;
}

int
ti_cmd_metrics(int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP, TI_OPT_FLAG("json"),
					      TI_OPT_VALUE("now"),
					      TI_OPT_VALUE("textfile"),
					      TI_OPT_END };
	static const char *const names[] = { "PATH", NULL };
	struct ti_metrics_opts mo = { 0 };
	struct ti_cmdline c = TI_CMDLINE("metrics", ti_usage_metrics, opts,
					 ti_metrics_opt, &mo);
	struct ti_operands ops = { .names = names, .min = 1 };
	struct ti_sample *s;
	size_t n, nfail = 0;
	int k;

	ops.max = argc > 1 ? (size_t)argc - 1 : 1;
	ops.v = calloc(ops.max, sizeof *ops.v);
	s = calloc(ops.max, sizeof *s);
	if (!ops.v || !s) {
		free(ops.v);
		free(s);
		ti_err("out of memory");
		return TI_EXIT_IO;
	}
	k = ti_cmdline_operands(&c, &ops, argc, argv);
	if (k == TI_GO_ON && mo.json && mo.textfile)
		k = ti_usage_error("metrics", "--json and --textfile are "
					      "exclusive");
	if (k == TI_GO_ON) {
		if (!mo.have_now)
			mo.now = tkshm_now_ms();
		if (mo.textfile) {
			k = ti_metrics_textfile(mo.textfile, ops.v, ops.n,
						mo.now);
		} else {
			k = ti_metrics_read(ops.v, ops.n, mo.now, s, &n,
					    &nfail);
			if (mo.json)
				ti_metrics_json(s, n);
			else
				ti_metrics_text(stdout, s, n);
			k = ti_finish_stdout(k);
		}
	}
	free(ops.v);
	free(s);
	return k;
}
