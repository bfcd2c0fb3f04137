/*
 * policy_rate.c - rate strings ("10/second", "100 per minute",
 * "5/min,burst=10"), read into GCRA policies; the grammar is in
 * policy_rate.h.  tkshm_policy_format() writes such a policy in the
 * canonical "gcra:..." form.
 */
#include "api/policy_rate.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "algorithms/algorithm.h"
#include "api/policy_global.h"
#include "api/policy_number.h"

#define TK_SAY(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

/* Every spelling of a unit, and its length in ms. */
static const struct {
	const char *name;
	double ms;
} tk_rate_units[] = {
	{ "ms", 1 },
	{ "millisecond", 1 },
	{ "milliseconds", 1 },
	{ "s", 1000 },
	{ "sec", 1000 },
	{ "secs", 1000 },
	{ "second", 1000 },
	{ "seconds", 1000 },
	{ "m", 60000 },
	{ "min", 60000 },
	{ "mins", 60000 },
	{ "minute", 60000 },
	{ "minutes", 60000 },
	{ "h", 3600000 },
	{ "hr", 3600000 },
	{ "hrs", 3600000 },
	{ "hour", 3600000 },
	{ "hours", 3600000 },
	{ "d", TK_MS_PER_DAY },
	{ "day", TK_MS_PER_DAY },
	{ "days", TK_MS_PER_DAY },
	/* As the `limits` library counts them, so that a limit written for
	 * it means the same here. */
	{ "month", 30 * TK_MS_PER_DAY },
	{ "months", 30 * TK_MS_PER_DAY },
	{ "year", 360 * TK_MS_PER_DAY },
	{ "years", 360 * TK_MS_PER_DAY },
};

/* A cursor over [p, end). */
struct tk_rate_scan {
	const char *p, *end;
};

static bool
tk_rate_is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static void
tk_rate_skip_ws(struct tk_rate_scan *sc)
{
	while (sc->p < sc->end && tk_rate_is_ws(*sc->p))
		sc->p++;
}

/* The number at the cursor (the longest run of characters a JSON number
 * may hold, then judged whole by the number grammar). */
static bool
tk_rate_number(struct tk_rate_scan *sc, double *v)
{
	const char *s = sc->p;

	while (sc->p < sc->end && (isdigit((unsigned char)*sc->p) ||
				   strchr(".eE+-", *sc->p) != NULL))
		sc->p++;
	return sc->p > s && tk_policy_number(s, (size_t)(sc->p - s), v);
}

/* The word of letters at the cursor: [*w, *w + return value). */
static size_t
tk_rate_word(struct tk_rate_scan *sc, const char **w)
{
	*w = sc->p;
	while (sc->p < sc->end && isalpha((unsigned char)*sc->p))
		sc->p++;
	return (size_t)(sc->p - *w);
}

static bool
tk_rate_unit_ms(const char *w, size_t n, double *ms)
{
	for (size_t i = 0; i < sizeof tk_rate_units / sizeof tk_rate_units[0];
	     i++)
		if (strlen(tk_rate_units[i].name) == n &&
		    strncasecmp(tk_rate_units[i].name, w, n) == 0) {
			*ms = tk_rate_units[i].ms;
			return true;
		}
	return false;
}

/* "/" or "per" between the count and the period. */
static bool
tk_rate_separator(struct tk_rate_scan *sc)
{
	if (sc->p < sc->end && *sc->p == '/') {
		sc->p++;
		return true;
	}
	if (sc->end - sc->p >= 3 && strncasecmp(sc->p, "per", 3) == 0) {
		sc->p += 3;
		return true;
	}
	return false;
}

/* ", burst = N" at the cursor, if any (*given says). */
static bool
tk_rate_burst(struct tk_rate_scan *sc, double *burst, bool *given, char *err,
	      size_t err_len)
{
	const char *w;
	size_t n;

	*given = false;
	if (sc->p == sc->end || *sc->p != ',')
		return true;
	sc->p++;
	tk_rate_skip_ws(sc);
	n = tk_rate_word(sc, &w);
	tk_rate_skip_ws(sc);
	if (n != 5 || strncmp(w, "burst", 5) != 0 || sc->p == sc->end ||
	    *sc->p != '=') {
		TK_SAY("rate: after ',' only \"burst=N\" may follow (one rate "
		       "per policy: give several limits as several rates)");
		return false;
	}
	sc->p++;
	tk_rate_skip_ws(sc);
	if (!tk_rate_number(sc, burst)) {
		TK_SAY("rate: burst needs a number");
		return false;
	}
	tk_rate_skip_ws(sc);
	*given = true;
	return true;
}

/* The rate part [spec, end) into limit, period and burst (the limit
 * unless given: gcra's default). */
static bool
tk_rate_read(const char *spec, const char *end, double *limit,
	     double *period_ms, double *burst, char *err, size_t err_len)
{
	struct tk_rate_scan sc = { spec, end };
	double multiple = 1, unit_ms;
	bool burst_given;
	const char *w;
	size_t n;

	tk_rate_skip_ws(&sc);
	if (!tk_rate_number(&sc, limit)) {
		TK_SAY("rate: \"%.40s\" does not start with a count", spec);
		return false;
	}
	tk_rate_skip_ws(&sc);
	if (!tk_rate_separator(&sc)) {
		TK_SAY("rate: the count is followed by '/' or 'per' "
		       "(\"10/second\", \"100 per minute\")");
		return false;
	}
	tk_rate_skip_ws(&sc);
	if (sc.p < sc.end && isdigit((unsigned char)*sc.p)) {
		if (!tk_rate_number(&sc, &multiple)) {
			TK_SAY("rate: the period's multiple is not a number");
			return false;
		}
		tk_rate_skip_ws(&sc);
	}
	n = tk_rate_word(&sc, &w);
	if (n == 0) {
		TK_SAY("rate: the period's unit is missing (\"10/second\")");
		return false;
	}
	if (!tk_rate_unit_ms(w, n, &unit_ms)) {
		TK_SAY("rate: unknown unit \"%.*s\" (ms, second, minute, "
		       "hour, day, month, year; s, sec, m, min, h, hr, d)",
		       (int)(n > 20 ? 20 : n), w);
		return false;
	}
	tk_rate_skip_ws(&sc);
	if (!tk_rate_burst(&sc, burst, &burst_given, err, err_len))
		return false;
	if (sc.p != sc.end) {
		TK_SAY("rate: unexpected \"%.*s\" after the rate",
		       (int)(sc.end - sc.p > 20 ? 20 : sc.end - sc.p), sc.p);
		return false;
	}
	*period_ms = multiple * unit_ms;
	if (!burst_given)
		*burst = *limit;
	return true;
}

bool
tk_policy_is_rate(const char *spec)
{
	while (tk_rate_is_ws(*spec))
		spec++;
	return isdigit((unsigned char)*spec);
}

int
tk_policy_parse_rate(const char *spec, tkshm_policy *out, char *err,
		     size_t err_len)
{
	const char *semi = strchr(spec, ';');
	const char *end = semi ? semi : spec + strlen(spec);
	double limit, period_ms, burst;
	tkshm_policy p;
	struct tk_algo algo;
	int rc;

	if (!tk_rate_read(spec, end, &limit, &period_ms, &burst, err, err_len))
		return TKSHM_EPOLICY;
	memset(&p, 0, sizeof p);
	p.kind = TKSHM_KIND_GCRA;
	p.u.gcra.limit = limit;
	p.u.gcra.period_ms = period_ms;
	p.u.gcra.burst = burst;
	tk_global_defaults(&p.global);
	if (semi) {
		for (const char *c = semi + 1; *c; c++)
			if (isspace((unsigned char)*c)) {
				TK_SAY("the cross-host options after ';' have "
				       "no whitespace");
				return TKSHM_EPOLICY;
			}
		rc = tk_global_parse(semi + 1, strlen(semi + 1), &p.global, err,
				     err_len);
		if (rc != TKSHM_OK)
			return rc;
	}
	/* tkshm_policy_validate's check, called below it (policy.c calls
	 * this file: no circle). */
	rc = tk_algo_init(&algo, &p, err, err_len);
	if (rc == TKSHM_OK)
		*out = p;
	return rc;
}
