/*
 * cmd_stats.c - `tkshm-inspect stats PATH [--json]`: counters, geometry,
 * policy and an occupancy scan of a table, through a read-only mapping,
 * with the cross-host tier of a strict or lease table; and the figures
 * derived from them that metrics shares.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "inspect.h"

void
ti_usage_stats(FILE *f)
{
	fputs("Usage: " TI_PROG " stats PATH [--json] [--now MS]\n"
	      "\n"
	      "Maps the table PATH read-only and prints its policy, on-full\n"
	      "behaviour, creation time, geometry (slots, buckets, debt cells,\n"
	      "file bytes, bytes per key), its counters (allowed, denied,\n"
	      "inserts, reclaims, evictions, evictions in debt, CAS retries,\n"
	      "refusals, ...; for a concurrency table also permit releases\n"
	      "and permits reaped from dead holders), the share of decisions\n"
	      "that were denials (a granted acquire is allowed, a refused one\n"
	      "denied), and\n"
	      "an occupancy scan: live, idle, empty, placeholder and dead\n"
	      "slots, occupancy (live + idle + placeholders) / slots, the idle\n"
	      "fraction idle / (live + idle), and the histogram of keys by\n"
	      "position in their probe window (0: the first slot probed).\n"
	      "A strict or lease table (policy mode strict or lease) also\n"
	      "shows its cross-host tier: whether Redis answered, the last\n"
	      "known number of hosts, for a lease table the tkshm-syncd\n"
	      "serving it and its last heartbeat, and the tier's counters\n"
	      "(Redis calls and errors, NOSCRIPT reloads, breaker opens,\n"
	      "decisions of the failure policy; strict: negative-cache\n"
	      "denials; lease: denials for want of a lease, leases, units,\n"
	      "round trips, units expired).\n"
	      "Counters are a snapshot while other processes work.\n"
	      "\n"
	      "Options:\n"
	      "  --json            print one JSON object instead of text\n"
	      "  --now MS          classify keys as live or idle at this time\n"
	      "                    (epoch ms; default: the system clock)\n"
	      "  -h, --help        show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

/* "2024-05-01T12:00:00.123Z" */
static void
ti_iso_time(double ms, char *buf, size_t len)
{
	double secs = floor(ms / 1000.0);
	time_t tt = (time_t)secs;
	struct tm tm;
	int milli = (int)floor(ms - secs * 1000.0);
	size_t n;

	if (!isfinite(ms) || ms < 0 || !gmtime_r(&tt, &tm) ||
	    (n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf + n, len - n, ".%03dZ", milli > 999 ? 999 : milli);
}

void
ti_figures_of(const tkshm_stats *s, const tkshm_usage *u, struct ti_figures *f)
{
	uint64_t keys = u->live + u->idle;
	uint64_t decisions = s->allowed + s->denied;

	/* Placeholders hold a slot as a key does: they count as occupied. */
	f->occupancy =
		s->slots ? (double)(keys + u->placeholders) / (double)s->slots :
			   0.0;
	f->idle_fraction = keys ? (double)u->idle / (double)keys : 0.0;
	/* Of decisions, not of keys: comparable across tables of any size
	 * and any number of keys. */
	f->denied_percent =
		decisions ? 100.0 * (double)s->denied / (double)decisions : 0.0;
}

struct ti_counter {
	const char *text, *json;
	uint64_t v;
};

/* The counters in display order: the library's, and for a table whose
 * keys hold permits the two that only permits move (left out elsewhere,
 * where they are always 0). */
#define TI_COUNTERS_MAX 16
static size_t
ti_counters(const tkshm_stats *s, struct ti_counter *c)
{
	const struct ti_counter all[] = {
		{ "allowed", "allowed", s->allowed },
		{ "denied", "denied", s->denied },
		{ "inserts", "inserts", s->inserts },
		{ "reclaims", "reclaims", s->reclaims },
		{ "evictions", "evictions", s->evictions },
		{ "evictions in debt", "evictionsInDebt",
		  s->evictions_in_debt },
		{ "debt restores", "debtRestores", s->debt_restores },
		{ "CAS retries", "casRetries", s->cas_retries },
		{ "refusals", "refusals", s->refusals },
		{ "duplicates killed", "duplicatesKilled",
		  s->duplicates_killed },
		{ "resets", "resets", s->resets },
		{ "multi rollbacks", "multiRollbacks", s->multi_rollbacks },
		{ "claims stolen", "claimsStolen", s->claims_stolen },
		{ "permit releases", "releases", s->releases },
		{ "permits reaped", "reaped", s->reaped },
	};
	size_t n = sizeof all / sizeof all[0];

	_Static_assert(sizeof all / sizeof all[0] <= TI_COUNTERS_MAX,
		       "ti_counters fits its callers' arrays");
	if (!ti_kind_has_permits(s->policy.kind))
		n -= 2;
	memcpy(c, all, n * sizeof all[0]);
	return n;
}

/* The cross-host tier's names (the policy string's words). */
static const char *
ti_mode_name(tkshm_global_mode m)
{
	switch (m) {
	case TKSHM_MODE_LOCAL:
		return "local";
	case TKSHM_MODE_STRICT:
		return "strict";
	case TKSHM_MODE_LEASE:
		return "lease";
	}
	return "unknown";
}

static const char *
ti_failure_name(tkshm_failure_policy f)
{
	switch (f) {
	case TKSHM_FAILURE_SAFE_SHARE:
		return "safe-share";
	case TKSHM_FAILURE_OPEN:
		return "fail-open";
	case TKSHM_FAILURE_CLOSED:
		return "fail-closed";
	}
	return "unknown";
}

/* The tier's counters in display order: those of every strict or lease
 * table, then strict's negative cache or lease's five. */
#define TI_GCOUNTERS_MAX 12
static size_t
ti_global_counters(const tkshm_stats *s, struct ti_counter *c)
{
	const struct ti_counter common[] = {
		{ "redis calls", "redisCalls", s->global.redis_calls },
		{ "redis errors", "redisErrors", s->global.redis_errors },
		{ "noscript reloads", "noscriptReloads",
		  s->global.noscript_reloads },
		{ "breaker opens", "breakerOpens", s->global.breaker_opens },
		{ "fallback allowed", "fallbackAllowed",
		  s->global.fallback_allowed },
		{ "fallback denied", "fallbackDenied",
		  s->global.fallback_denied },
	};
	const struct ti_counter strict[] = {
		{ "cache denials", "cacheDenials", s->global.cache_denials },
	};
	const struct ti_counter lease[] = {
		{ "no-lease denials", "noLease", s->global.no_lease },
		{ "leases", "leases", s->global.leases },
		{ "lease units", "leaseUnits", s->global.lease_units },
		{ "lease round trips", "leaseRoundTrips",
		  s->global.lease_round_trips },
		{ "lease units expired", "leaseUnitsExpired",
		  s->global.lease_units_expired },
	};
	size_t n = sizeof common / sizeof common[0];

	_Static_assert(sizeof common / sizeof common[0] +
				       sizeof lease / sizeof lease[0] <=
			       TI_GCOUNTERS_MAX,
		       "ti_global_counters fits its callers' arrays");
	memcpy(c, common, sizeof common);
	if (s->policy.global.mode == TKSHM_MODE_STRICT) {
		memcpy(c + n, strict, sizeof strict);
		n += sizeof strict / sizeof strict[0];
	} else if (s->policy.global.mode == TKSHM_MODE_LEASE) {
		memcpy(c + n, lease, sizeof lease);
		n += sizeof lease / sizeof lease[0];
	}
	return n;
}

/* Whether the agent whose pid a table names is alive.  The pid is read
 * from shared memory, so anything but a plausible pid is "no": kill()
 * with 0 or a negative pid would ask about whole process groups. */
static bool
ti_agent_running(int64_t pid)
{
	return pid > 0 && pid <= INT32_MAX &&
	       (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* The cross-host part of the text output (strict and lease tables). */
static void
ti_global_text(const tkshm_stats *s, double now)
{
	const tkshm_global *g = &s->policy.global;
	struct ti_counter c[TI_GCOUNTERS_MAX];
	size_t nc = ti_global_counters(s, c);
	char beat[64], rel[48];

	printf("cross-host    %s, failure %s\n", ti_mode_name(g->mode),
	       ti_failure_name(g->failure));
	printf("  %-20s %s\n", "redis",
	       s->global.redis_up ? "up (the last exchange worked)" : "down");
	if (s->global.hosts)
		printf("  %-20s %" PRIu64 "\n", "hosts", s->global.hosts);
	else
		printf("  %-20s unknown (the policy's %g until Redis tells)\n",
		       "hosts", g->hosts);
	if (g->mode == TKSHM_MODE_LEASE) {
		if (s->global.agent_pid == 0) {
			printf("  %-20s none\n", "agent");
		} else {
			printf("  %-20s pid %" PRId64 " (%s)\n", "agent",
			       s->global.agent_pid,
			       ti_agent_running(s->global.agent_pid) ?
				       "running" :
				       "not running");
		}
		if (s->global.agent_beat_ms > 0) {
			ti_iso_time(s->global.agent_beat_ms, beat, sizeof beat);
			ti_rel_time(s->global.agent_beat_ms, now, rel,
				    sizeof rel);
			printf("  %-20s %s (%s)\n", "agent heartbeat", beat,
			       rel);
		} else {
			printf("  %-20s never\n", "agent heartbeat");
		}
	}
	for (size_t i = 0; i < nc; i++)
		printf("  %-20s %" PRIu64 "\n", c[i].text, c[i].v);
}

/* The "global" member of the JSON output (strict and lease tables). */
static void
ti_global_json(struct ti_json *j, const tkshm_stats *s)
{
	const tkshm_global *g = &s->policy.global;
	struct ti_counter c[TI_GCOUNTERS_MAX];
	size_t nc = ti_global_counters(s, c);

	ti_json_begin_obj(j, "global");
	ti_json_string(j, "mode", ti_mode_name(g->mode));
	ti_json_string(j, "failure", ti_failure_name(g->failure));
	ti_json_num(j, "policyHosts", g->hosts);
	ti_json_num(j, "leaseMs", g->lease_ms);
	ti_json_string(j, "prefix", g->prefix);
	ti_json_bool(j, "redisUp", s->global.redis_up);
	ti_json_u64(j, "hosts", s->global.hosts);
	if (g->mode == TKSHM_MODE_LEASE) {
		ti_json_i64(j, "agentPid", s->global.agent_pid);
		ti_json_bool(j, "agentRunning",
			     ti_agent_running(s->global.agent_pid));
		if (s->global.agent_beat_ms > 0)
			ti_json_num(j, "agentBeatMs", s->global.agent_beat_ms);
		else
			ti_json_null(j, "agentBeatMs");
	}
	ti_json_begin_obj(j, "counters");
	for (size_t i = 0; i < nc; i++)
		ti_json_u64(j, c[i].json, c[i].v);
	ti_json_end_obj(j);
	ti_json_end_obj(j);
}

static void
ti_stats_text(const char *path, const tkshm_stats *s, const char *policy,
	      const tkshm_usage *u, double now)
{
	struct ti_counter c[TI_COUNTERS_MAX];
	size_t nc = ti_counters(s, c);
	char created[64], at[64];
	struct ti_figures fg;
	uint64_t keys = u->live + u->idle;

	ti_figures_of(s, u, &fg);
	ti_iso_time(s->created_ms, created, sizeof created);
	ti_iso_time(now, at, sizeof at);
	printf("table         %s\n", path);
	printf("policy        %s\n", policy);
	printf("on-full       %s\n", ti_on_full_name(s->on_full));
	printf("created       %s (%.3f ms since the epoch)\n", created,
	       s->created_ms);
	printf("layout        %" PRIu32 "%s\n", s->layout_version,
	       s->anonymous ? " (anonymous)" : "");
	printf("slots         %" PRIu64 " (%" PRIu64 " buckets of 4)\n",
	       s->slots, s->buckets);
	printf("debt cells    %" PRIu64 "\n", s->debt_cells);
	printf("file bytes    %" PRIu64 " (%.2f bytes per key)\n",
	       s->file_bytes, s->bytes_per_key);
	printf("counters\n");
	for (size_t i = 0; i < nc; i++)
		printf("  %-20s %" PRIu64 "\n", c[i].text, c[i].v);
	printf("  %-20s %.2f%% (denied / (allowed + denied))\n", "denied share",
	       fg.denied_percent);
	if (s->policy.global.mode != TKSHM_MODE_LOCAL)
		ti_global_text(s, now);
	printf("occupancy at  %s\n", at);
	printf("  %-20s %" PRIu64 "\n", "live", u->live);
	printf("  %-20s %" PRIu64 "\n", "idle", u->idle);
	printf("  %-20s %" PRIu64 "\n", "empty", u->empty);
	printf("  %-20s %" PRIu64 "\n", "placeholders", u->placeholders);
	printf("  %-20s %" PRIu64 "\n", "dead", u->dead);
	printf("  %-20s %.2f%% of slots (live + idle + placeholders)\n",
	       "occupancy", 100.0 * fg.occupancy);
	printf("  %-20s %.2f%% of keys (idle / (live + idle))\n",
	       "idle fraction", 100.0 * fg.idle_fraction);
	printf("probe length  keys by position in their window\n");
	for (unsigned i = 0; i < TKSHM_WINDOW_SLOTS; i++)
		printf("  %-20u %" PRIu64 " (%.2f%%)\n", i, u->probe_hist[i],
		       keys ? 100.0 * (double)u->probe_hist[i] / (double)keys :
			      0.0);
}

static void
ti_stats_json(const char *path, const tkshm_stats *s, const char *policy,
	      const tkshm_usage *u, double now)
{
	struct ti_counter c[TI_COUNTERS_MAX];
	size_t nc = ti_counters(s, c);
	struct ti_json j;
	struct ti_figures fg;
	char created[64];

	ti_figures_of(s, u, &fg);
	ti_iso_time(s->created_ms, created, sizeof created);
	ti_json_init(&j, stdout, true);
	ti_json_begin_obj(&j, NULL);
	ti_json_string(&j, "path", path);
	ti_json_string(&j, "policy", policy);
	ti_json_string(&j, "onFull", ti_on_full_name(s->on_full));
	ti_json_num(&j, "createdMs", s->created_ms);
	ti_json_string(&j, "created", created);
	ti_json_u64(&j, "layoutVersion", s->layout_version);
	ti_json_bool(&j, "anonymous", s->anonymous);
	ti_json_u64(&j, "slots", s->slots);
	ti_json_u64(&j, "buckets", s->buckets);
	ti_json_u64(&j, "debtCells", s->debt_cells);
	ti_json_u64(&j, "fileBytes", s->file_bytes);
	ti_json_num(&j, "bytesPerKey", s->bytes_per_key);
	ti_json_begin_obj(&j, "counters");
	for (size_t i = 0; i < nc; i++)
		ti_json_u64(&j, c[i].json, c[i].v);
	ti_json_end_obj(&j);
	/* Derived figures are outside "counters", which holds only the
	 * library's counters. */
	ti_json_num(&j, "deniedPercent", fg.denied_percent);
	if (s->policy.global.mode != TKSHM_MODE_LOCAL)
		ti_global_json(&j, s);
	ti_json_begin_obj(&j, "usage");
	ti_json_num(&j, "atMs", now);
	ti_json_u64(&j, "live", u->live);
	ti_json_u64(&j, "idle", u->idle);
	ti_json_u64(&j, "empty", u->empty);
	ti_json_u64(&j, "placeholders", u->placeholders);
	ti_json_u64(&j, "dead", u->dead);
	ti_json_num(&j, "occupancyRatio", fg.occupancy);
	ti_json_num(&j, "idleFraction", fg.idle_fraction);
	ti_json_begin_arr(&j, "probeHist");
	for (unsigned i = 0; i < TKSHM_WINDOW_SLOTS; i++)
		ti_json_u64(&j, NULL, u->probe_hist[i]);
	ti_json_end_arr(&j);
	ti_json_end_obj(&j);
	ti_json_end_obj(&j);
}

/* stats' options. */
struct ti_stats_opts {
	bool json, have_now;
	double now;
};

static int
ti_stats_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_stats_opts *s = ctx;

	if (strcmp(name, "json") == 0) {
		s->json = true;
		return TI_GO_ON;
	}
	s->have_now = true;
	return ti_now_opt(cmd, value, &s->now);
}

int
ti_cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP, TI_OPT_FLAG("json"),
					      TI_OPT_VALUE("now"), TI_OPT_END };
	struct ti_stats_opts so = { 0 };
	struct ti_cmdline c =
		TI_CMDLINE("stats", ti_usage_stats, opts, ti_stats_opt, &so);
	tkshm_table *t;
	tkshm_stats st;
	tkshm_usage u;
	char full[4200], policy[TKSHM_POLICY_MAX];
	int k, rc;

	if ((k = ti_cmdline_parse(&c, argc, argv)) != TI_GO_ON)
		return k;
	if ((k = ti_open_rdonly(&c.path, full, sizeof full, &t)) != TI_EXIT_OK)
		return k;
	if (!so.have_now)
		so.now = tkshm_now_ms();
	tkshm_stats_get(t, &st);
	rc = tkshm_usage_get(t, so.now, &u);
	tkshm_close(t);
	if (rc != TKSHM_OK) {
		ti_err("cannot scan %s: %s", c.path, tkshm_strerror(rc));
		return TI_EXIT_IO;
	}
	if (tkshm_policy_format(&st.policy, policy, sizeof policy) < 0)
		snprintf(policy, sizeof policy, "(unprintable policy)");
	if (so.json)
		ti_stats_json(c.path, &st, policy, &u, so.now);
	else
		ti_stats_text(c.path, &st, policy, &u, so.now);
	return ti_finish_stdout(TI_EXIT_OK);
}
