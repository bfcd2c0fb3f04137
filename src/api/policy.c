/*
 * policy.c - policy constructors, the policy-string parser and formatter.
 *
 * The syntax is ThrottleKit's kind and option names:
 *     kind ":" name "=" value { "," name "=" value }
 * e.g. "gcra:limit=10,periodMs=1000,burst=5" or
 * "quota:limit=1000000,resetCadence=calendar-month,offsetMinutes=330".  The
 * same parser serves the API, tkshm-inspect, the server modules and the
 * bindings.
 *
 * Everything is driven by one table (tk_kinds): per kind, its ThrottleKit
 * name and its options, each with its ThrottleKit name, its field in
 * tkshm_policy, where its value comes from when not given (required, a
 * default, or the kind's first option) and, for a quota, the cadences that
 * read it.  Values are validated by tk_algo_init (src/algorithms/), never
 * here, so the parser, tkshm_policy_validate and tkshm_open agree.
 *
 * P1  parse(format(p)) is tkshm_policy_equal to p for every valid p: the
 *     formatter writes every option the algorithm reads, numbers with
 *     round-trip precision and words for word-valued options.
 * P2  Options a quota's cadence does not read (ThrottleKit ignores them) are
 *     parsed and kept, but neither formatted nor compared, so two policies
 *     that decide alike are equal.
 * P3  One strict grammar (docs/policies.md), with no whitespace anywhere:
 *       policy  = kind [ ":" option *( "," option ) ] [ ";" global ]
 *       option  = name "=" ( number / word )
 *     names and words exactly as listed (case-sensitive), numbers in
 *     JSON's notation (policy_number.h); the cross-host part is
 *     policy_global.c's, in the same shape.  The one exception is a rate
 *     string ("100 per minute", policy_rate.h), which starts with a digit
 *     where a kind's name never does, and reads as a GCRA policy.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithm.h"
#include "api/policy_global.h"
#include "api/policy_number.h"
#include "api/policy_rate.h"
#include "base/c_numbers.h"
#include "base/words.h"
#include "tkshm.h"

#define TK_SAY(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

/* Every kind has at most this many options (`given` below is indexed by
 * option). */
#define TK_MAX_OPTS 16

/* Where an option's value comes from when the string does not give it. */
enum tk_need {
	TK_NEED_REQUIRED, /* nowhere: the option is required */
	TK_NEED_DEFAULT,  /* ThrottleKit's default, `def` */
	TK_NEED_AS_FIRST, /* the kind's first option (gcra: burst = limit) */
	TK_NEED_IF_READ,  /* required when the selector reads it (a quota's
			     periodMs), otherwise 0 and ignored */
	TK_NEED_WITHIN,	  /* `def` clamped between the two options before
			     it (an adaptive initialLimit: 20 within
			     minLimit..maxLimit) */
};

/* A word an option takes instead of a number, and the value it stands
 * for (quota's resetCadence). */
struct tk_word {
	const char *word;
	double value;
};

/* One option of a kind: its ThrottleKit name and where it goes. */
struct tk_opt {
	const char *name;
	size_t offset; /* into tkshm_policy */
	enum tk_need need;
	double def;		     /* TK_NEED_DEFAULT only */
	const struct tk_word *words; /* NULL: a decimal number */
	/* The selector values (bit 1 << value) under which the algorithm
	 * reads this option; 0: it is always read.  Unread options are
	 * parsed (and validated as ThrottleKit validates them) but neither
	 * formatted nor compared. */
	unsigned read_by;
};

struct tk_kind_desc {
	const char *name;
	tkshm_kind kind;
	const struct tk_opt *opts;
	size_t nopts;
	/* The option whose value decides which others are read (a quota's
	 * resetCadence), or -1. */
	int selector;
};

#define TK_OPT(kind, field) offsetof(tkshm_policy, u.kind.field)
#define TK_NOPTS(a)	    (sizeof(a) / sizeof(a)[0])
#define TK_CAD(c)	    (1u << (c))

/* Each member of the union fits the size anchor, so the struct's size (and
 * the ABI) does not change as kinds are added. */
#define TK_FITS(m)                                                      \
	_Static_assert(sizeof(((tkshm_policy *)0)->u.m) <=              \
			       sizeof(((tkshm_policy *)0)->u.reserved), \
		       #m " fits tkshm_policy.u.reserved")
TK_FITS(gcra);
TK_FITS(token_bucket);
TK_FITS(fixed_window);
TK_FITS(sliding_window);
TK_FITS(sliding_log);
TK_FITS(quota);
TK_FITS(token_budget);
TK_FITS(leaky_bucket);
TK_FITS(concurrency);
TK_FITS(adaptive);

static const struct tk_opt tk_gcra_opts[] = {
	{ "limit", TK_OPT(gcra, limit), TK_NEED_REQUIRED, 0, NULL, 0 },
	{ "periodMs", TK_OPT(gcra, period_ms), TK_NEED_REQUIRED, 0, NULL, 0 },
	{ "burst", TK_OPT(gcra, burst), TK_NEED_AS_FIRST, 0, NULL, 0 },
};

static const struct tk_opt tk_token_bucket_opts[] = {
	{ "capacity", TK_OPT(token_bucket, capacity), TK_NEED_REQUIRED, 0, NULL,
	  0 },
	{ "refillPerSec", TK_OPT(token_bucket, refill_per_sec),
	  TK_NEED_REQUIRED, 0, NULL, 0 },
};

static const struct tk_opt tk_fixed_window_opts[] = {
	{ "limit", TK_OPT(fixed_window, limit), TK_NEED_REQUIRED, 0, NULL, 0 },
	{ "windowMs", TK_OPT(fixed_window, window_ms), TK_NEED_REQUIRED, 0,
	  NULL, 0 },
};

static const struct tk_opt tk_sliding_window_opts[] = {
	{ "limit", TK_OPT(sliding_window, limit), TK_NEED_REQUIRED, 0, NULL,
	  0 },
	{ "windowMs", TK_OPT(sliding_window, window_ms), TK_NEED_REQUIRED, 0,
	  NULL, 0 },
	{ "buckets", TK_OPT(sliding_window, buckets), TK_NEED_DEFAULT,
	  TK_SLIDING_WINDOW_DEFAULT_BUCKETS, NULL, 0 },
};

static const struct tk_opt tk_sliding_log_opts[] = {
	{ "limit", TK_OPT(sliding_log, limit), TK_NEED_REQUIRED, 0, NULL, 0 },
	{ "windowMs", TK_OPT(sliding_log, window_ms), TK_NEED_REQUIRED, 0, NULL,
	  0 },
};

static const struct tk_word tk_cadence_words[] = {
	{ "calendar-month", TKSHM_QUOTA_CALENDAR_MONTH },
	{ "calendar-week", TKSHM_QUOTA_CALENDAR_WEEK },
	{ "calendar-day", TKSHM_QUOTA_CALENDAR_DAY },
	{ "fixed", TKSHM_QUOTA_FIXED },
	{ "rolling", TKSHM_QUOTA_ROLLING },
	{ NULL, 0 },
};

#define TK_CALENDAR                           \
	(TK_CAD(TKSHM_QUOTA_CALENDAR_MONTH) | \
	 TK_CAD(TKSHM_QUOTA_CALENDAR_WEEK) | TK_CAD(TKSHM_QUOTA_CALENDAR_DAY))

/* What each cadence reads: quota.h, calendar.h (tk_calendar_period). */
static const struct tk_opt tk_quota_opts[] = {
	{ "limit", TK_OPT(quota, limit), TK_NEED_REQUIRED, 0, NULL, 0 },
	{ "resetCadence", TK_OPT(quota, reset_cadence), TK_NEED_REQUIRED, 0,
	  tk_cadence_words, 0 },
	{ "offsetMinutes", TK_OPT(quota, offset_minutes), TK_NEED_DEFAULT,
	  TK_CALENDAR_OFFSET_MINUTES_DEFAULT, NULL, TK_CALENDAR },
	{ "weekStartsOn", TK_OPT(quota, week_starts_on), TK_NEED_DEFAULT,
	  TK_CALENDAR_WEEK_STARTS_ON_DEFAULT, NULL,
	  TK_CAD(TKSHM_QUOTA_CALENDAR_WEEK) },
	{ "periodMs", TK_OPT(quota, period_ms), TK_NEED_IF_READ, 0, NULL,
	  TK_CAD(TKSHM_QUOTA_FIXED) | TK_CAD(TKSHM_QUOTA_ROLLING) },
	{ "anchor", TK_OPT(quota, anchor), TK_NEED_DEFAULT,
	  TK_CALENDAR_ANCHOR_DEFAULT, NULL, TK_CAD(TKSHM_QUOTA_FIXED) },
	{ "buckets", TK_OPT(quota, buckets), TK_NEED_DEFAULT,
	  TK_QUOTA_BUCKETS_DEFAULT, NULL, TK_CAD(TKSHM_QUOTA_ROLLING) },
};

static const struct tk_opt tk_token_budget_opts[] = {
	{ "budget", TK_OPT(token_budget, budget), TK_NEED_REQUIRED, 0, NULL,
	  0 },
	{ "windowMs", TK_OPT(token_budget, window_ms), TK_NEED_REQUIRED, 0,
	  NULL, 0 },
};

static const struct tk_opt tk_leaky_bucket_opts[] = {
	{ "ratePerSec", TK_OPT(leaky_bucket, rate_per_sec), TK_NEED_REQUIRED, 0,
	  NULL, 0 },
	{ "maxQueueMs", TK_OPT(leaky_bucket, max_queue_ms), TK_NEED_REQUIRED, 0,
	  NULL, 0 },
};

static const struct tk_opt tk_concurrency_opts[] = {
	{ "limit", TK_OPT(concurrency, limit), TK_NEED_REQUIRED, 0, NULL, 0 },
};

static const struct tk_word tk_adaptive_words[] = {
	{ "gradient2", TKSHM_ADAPTIVE_GRADIENT2 },
	{ "aimd", TKSHM_ADAPTIVE_AIMD },
	{ NULL, 0 },
};

#define TK_GRADIENT2 (1u << TKSHM_ADAPTIVE_GRADIENT2)
#define TK_AIMD	     (1u << TKSHM_ADAPTIVE_AIMD)

/* What each algorithm reads: src/algorithms/concurrency.h. */
static const struct tk_opt tk_adaptive_opts[] = {
	{ "algorithm", TK_OPT(adaptive, algorithm), TK_NEED_DEFAULT,
	  TKSHM_ADAPTIVE_GRADIENT2, tk_adaptive_words, 0 },
	{ "minLimit", TK_OPT(adaptive, min_limit), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_MIN_LIMIT_DEFAULT, NULL, 0 },
	{ "maxLimit", TK_OPT(adaptive, max_limit), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_MAX_LIMIT_DEFAULT, NULL, 0 },
	{ "initialLimit", TK_OPT(adaptive, initial_limit), TK_NEED_WITHIN,
	  TK_ADAPTIVE_INITIAL_LIMIT_DEFAULT, NULL, 0 },
	{ "smoothing", TK_OPT(adaptive, smoothing), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_SMOOTHING_DEFAULT, NULL, TK_GRADIENT2 },
	{ "tolerance", TK_OPT(adaptive, tolerance), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_TOLERANCE_DEFAULT, NULL, TK_GRADIENT2 },
	{ "rttWindowMs", TK_OPT(adaptive, rtt_window_ms), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_RTT_WINDOW_MS_DEFAULT, NULL, TK_GRADIENT2 },
	{ "backoffRatio", TK_OPT(adaptive, backoff_ratio), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_BACKOFF_RATIO_DEFAULT, NULL, TK_AIMD },
	{ "timeoutMs", TK_OPT(adaptive, timeout_ms), TK_NEED_DEFAULT,
	  TK_ADAPTIVE_TIMEOUT_MS_DEFAULT, NULL, TK_AIMD },
};

static const struct tk_kind_desc tk_kinds[] = {
	{ "gcra", TKSHM_KIND_GCRA, tk_gcra_opts, TK_NOPTS(tk_gcra_opts), -1 },
	{ "tokenBucket", TKSHM_KIND_TOKEN_BUCKET, tk_token_bucket_opts,
	  TK_NOPTS(tk_token_bucket_opts), -1 },
	{ "fixedWindow", TKSHM_KIND_FIXED_WINDOW, tk_fixed_window_opts,
	  TK_NOPTS(tk_fixed_window_opts), -1 },
	{ "slidingWindow", TKSHM_KIND_SLIDING_WINDOW, tk_sliding_window_opts,
	  TK_NOPTS(tk_sliding_window_opts), -1 },
	{ "slidingWindowLog", TKSHM_KIND_SLIDING_LOG, tk_sliding_log_opts,
	  TK_NOPTS(tk_sliding_log_opts), -1 },
	{ "quota", TKSHM_KIND_QUOTA, tk_quota_opts, TK_NOPTS(tk_quota_opts),
	  1 },
	{ "tokenBudget", TKSHM_KIND_TOKEN_BUDGET, tk_token_budget_opts,
	  TK_NOPTS(tk_token_budget_opts), -1 },
	{ "leakyBucket", TKSHM_KIND_LEAKY_BUCKET, tk_leaky_bucket_opts,
	  TK_NOPTS(tk_leaky_bucket_opts), -1 },
	{ "concurrency", TKSHM_KIND_CONCURRENCY, tk_concurrency_opts,
	  TK_NOPTS(tk_concurrency_opts), -1 },
	{ "adaptiveConcurrency", TKSHM_KIND_ADAPTIVE_CONCURRENCY,
	  tk_adaptive_opts, TK_NOPTS(tk_adaptive_opts), 0 },
};

_Static_assert(TK_NOPTS(tk_gcra_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_token_bucket_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_fixed_window_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_sliding_window_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_sliding_log_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_quota_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_token_budget_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_leaky_bucket_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_concurrency_opts) <= TK_MAX_OPTS &&
		       TK_NOPTS(tk_adaptive_opts) <= TK_MAX_OPTS,
	       "every kind's options fit `given`");

static const struct tk_kind_desc *
tk_kind_by_name(const char *name, size_t len)
{
	for (size_t i = 0; i < TK_NOPTS(tk_kinds); i++)
		if (strlen(tk_kinds[i].name) == len &&
		    memcmp(tk_kinds[i].name, name, len) == 0)
			return &tk_kinds[i];
	return NULL;
}

static const struct tk_kind_desc *
tk_kind_by_id(tkshm_kind kind)
{
	for (size_t i = 0; i < TK_NOPTS(tk_kinds); i++)
		if (tk_kinds[i].kind == kind)
			return &tk_kinds[i];
	return NULL;
}

static double *
tk_opt_slot(tkshm_policy *p, const struct tk_opt *o)
{
	/* cppcheck-suppress invalidPointerCast ; offsetof a double member */
	return (double *)((char *)p + o->offset);
}

static double
tk_opt_get(const tkshm_policy *p, const struct tk_opt *o)
{
	double v;

	memcpy(&v, (const char *)p + o->offset, sizeof v);
	return v;
}

/* True when the algorithm of `p` reads option i of its kind.  An unknown
 * selector value (an invalid policy) reads everything. */
static bool
tk_opt_read(const struct tk_kind_desc *k, const tkshm_policy *p, size_t i)
{
	double sel;

	if (k->opts[i].read_by == 0 || k->selector < 0)
		return true;
	sel = tk_opt_get(p, &k->opts[k->selector]);
	if (!(sel >= 0 && sel < 32) || sel != floor(sel))
		return true;
	return (k->opts[i].read_by & (1u << (unsigned)sel)) != 0;
}

/* The word that stands for `v` in option o, or NULL. */
static const char *
tk_word_of(const struct tk_opt *o, double v)
{
	for (const struct tk_word *w = o->words; w && w->word; w++)
		if (w->value == v)
			return w->word;
	return NULL;
}

/* "a, b, c or d": the words of o, for error sentences. */
static void
tk_word_list(const struct tk_opt *o, char *buf, size_t len)
{
	size_t n = 0, used = 0;

	while (o->words[n].word)
		n++;
	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s",
				 i == 0 ? "" : (i + 1 < n ? ", " : " or "),
				 o->words[i].word);
		if (w < 0)
			return;
		used += (size_t)w;
	}
}

int
tkshm_policy_validate(const tkshm_policy *p, char *err, size_t err_len)
{
	struct tk_algo a;

	if (!p)
		return TKSHM_ENULL;
	return tk_algo_init(&a, p, err, err_len);
}

int
tkshm_policy_gcra(tkshm_policy *out, double limit, double period_ms,
		  double burst)
{
	tkshm_policy p;
	int rc;

	if (!out)
		return TKSHM_ENULL;
	memset(&p, 0, sizeof p);
	p.kind = TKSHM_KIND_GCRA;
	p.u.gcra.limit = limit;
	p.u.gcra.period_ms = period_ms;
	p.u.gcra.burst = burst == 0 ? limit : burst;
	rc = tkshm_policy_validate(&p, NULL, 0);
	if (rc == TKSHM_OK)
		*out = p;
	return rc;
}

/* Reads option o's value from [s, end): a number, or one of o's words. */
static bool
tk_parse_value(const struct tk_kind_desc *k, const struct tk_opt *o,
	       const char *s, const char *end, double *v, char *err,
	       size_t err_len)
{
	if (o->words) {
		size_t n = (size_t)(end - s);
		char list[160];

		for (const struct tk_word *w = o->words; w->word; w++)
			if (strlen(w->word) == n &&
			    memcmp(w->word, s, n) == 0) {
				*v = w->value;
				return true;
			}
		tk_word_list(o, list, sizeof list);
		TK_SAY("%s: %s must be %s (got \"%.*s\")", k->name, o->name,
		       list, (int)n, s);
		return false;
	}
	if (!tk_policy_number(s, (size_t)(end - s), v)) {
		TK_SAY("%s: option %s: \"%.*s\" is not a number (JSON's "
		       "notation: 10, 0.5, 1e3)",
		       k->name, o->name, (int)(end - s), s);
		return false;
	}
	return true;
}

/* The kind's defaults for the options not given, then the options that
 * are required only when the selector reads them.  Returns false (with a
 * sentence) when one of those is missing. */
static bool
tk_policy_complete(const struct tk_kind_desc *k, tkshm_policy *p,
		   const bool *given, char *err, size_t err_len)
{
	for (size_t i = 0; i < k->nopts; i++) {
		const struct tk_opt *o = &k->opts[i];

		if (given[i])
			continue;
		switch (o->need) {
		case TK_NEED_REQUIRED: /* checked by the caller */
			break;
		case TK_NEED_DEFAULT:
			*tk_opt_slot(p, o) = o->def;
			break;
		case TK_NEED_AS_FIRST:
			*tk_opt_slot(p, o) = tk_opt_get(p, &k->opts[0]);
			break;
		case TK_NEED_WITHIN: {
			double lo = tk_opt_get(p, &k->opts[i - 2]);
			double hi = tk_opt_get(p, &k->opts[i - 1]);
			double v = o->def;

			/* An invalid lo or hi is refused by validation. */
			if (v < lo)
				v = lo;
			if (v > hi)
				v = hi;
			*tk_opt_slot(p, o) = v;
			break;
		}
		case TK_NEED_IF_READ:
			if (tk_opt_read(k, p, i)) {
				const struct tk_opt *sel =
					&k->opts[k->selector];
				const char *w =
					tk_word_of(sel, tk_opt_get(p, sel));

				TK_SAY("%s with %s=%s needs option %s", k->name,
				       sel->name, w ? w : "?", o->name);
				return false;
			}
			*tk_opt_slot(p, o) = 0;
			break;
		}
	}
	return true;
}

/* The grammar has no whitespace (P3): false, with a sentence naming where,
 * for a string that holds any. */
static bool
tk_policy_no_space(const char *spec, char *err, size_t err_len)
{
	for (const char *c = spec; *c; c++)
		if (isspace((unsigned char)*c)) {
			TK_SAY("policy strings have no whitespace (found at "
			       "offset %zu of \"%.40s\")",
			       (size_t)(c - spec), spec);
			return false;
		}
	return true;
}

int
tkshm_policy_parse(const char *spec, tkshm_policy *out, char *err,
		   size_t err_len)
{
	const struct tk_kind_desc *k;
	tkshm_policy p;
	bool given[TK_MAX_OPTS] = { false }; /* by option index */
	const char *s, *colon;
	int rc;

	if (!spec || !out)
		return TKSHM_ENULL;
	/* "10/second": a rate string, the one form that may hold spaces. */
	if (tk_policy_is_rate(spec))
		return tk_policy_parse_rate(spec, out, err, err_len);
	if (!tk_policy_no_space(spec, err, err_len))
		return TKSHM_EPOLICY;
	/* The cross-host part, after a ';', is parsed on its own; the kind's
	 * options end there. */
	{
		const char *semi = strchr(spec, ';');
		size_t klen = semi ? (size_t)(semi - spec) : strlen(spec);

		if (semi) {
			char head[TKSHM_POLICY_MAX * 2];

			if (klen >= sizeof head) {
				TK_SAY("policy string is too long");
				return TKSHM_EPOLICY;
			}
			memcpy(head, spec, klen);
			head[klen] = '\0';
			rc = tkshm_policy_parse(head, &p, err, err_len);
			if (rc != TKSHM_OK)
				return rc;
			tk_global_defaults(&p.global);
			rc = tk_global_parse(semi + 1, strlen(semi + 1),
					     &p.global, err, err_len);
			if (rc != TKSHM_OK)
				return rc;
			rc = tkshm_policy_validate(&p, err, err_len);
			if (rc == TKSHM_OK)
				*out = p;
			return rc;
		}
	}
	s = spec;
	colon = strchr(s, ':');
	{
		const char *kend = colon ? colon : s + strlen(s);
		k = tk_kind_by_name(s, (size_t)(kend - s));
		if (!k) {
			char known[256];
			size_t used = 0;

			known[0] = '\0';
			for (size_t i = 0; i < TK_NOPTS(tk_kinds); i++) {
				int w = snprintf(known + used,
						 sizeof known - used, "%s%s",
						 i ? ", " : "",
						 tk_kinds[i].name);
				if (w < 0 || (size_t)w >= sizeof known - used)
					break;
				used += (size_t)w;
			}
			TK_SAY("unknown policy kind \"%.*s\" (known: %s)",
			       (int)(kend - s), s, known);
			return TKSHM_EPOLICY;
		}
	}
	memset(&p, 0, sizeof p);
	p.kind = k->kind;
	tk_global_defaults(&p.global);
	if (colon && colon[1] == '\0') {
		TK_SAY("%s: ':' is followed by no option", k->name);
		return TKSHM_EPOLICY;
	}
	s = colon ? colon + 1 : s + strlen(s);
	while (*s != '\0') {
		const char *comma = strchr(s, ',');
		const char *end = comma ? comma : s + strlen(s);
		const char *eq = memchr(s, '=', (size_t)(end - s));
		const char *nend;
		size_t i;
		double v;

		if (!eq) {
			TK_SAY("option \"%.*s\" has no '=value'",
			       (int)(end - s), s);
			return TKSHM_EPOLICY;
		}
		nend = eq;
		for (i = 0; i < k->nopts; i++)
			if (strlen(k->opts[i].name) == (size_t)(nend - s) &&
			    memcmp(k->opts[i].name, s, (size_t)(nend - s)) == 0)
				break;
		if (i == k->nopts) {
			TK_SAY("%s has no option \"%.*s\"", k->name,
			       (int)(nend - s), s);
			return TKSHM_EPOLICY;
		}
		if (given[i]) {
			TK_SAY("option %s is given twice", k->opts[i].name);
			return TKSHM_EPOLICY;
		}
		if (!tk_parse_value(k, &k->opts[i], eq + 1, end, &v, err,
				    err_len))
			return TKSHM_EPOLICY;
		*tk_opt_slot(&p, &k->opts[i]) = v;
		given[i] = true;
		if (!comma)
			break;
		s = comma + 1;
		if (*s == '\0') {
			TK_SAY("trailing ',' in policy");
			return TKSHM_EPOLICY;
		}
	}
	for (size_t i = 0; i < k->nopts; i++)
		if (k->opts[i].need == TK_NEED_REQUIRED && !given[i]) {
			TK_SAY("%s needs option %s", k->name, k->opts[i].name);
			return TKSHM_EPOLICY;
		}
	if (!tk_policy_complete(k, &p, given, err, err_len))
		return TKSHM_EPOLICY;
	rc = tkshm_policy_validate(&p, err, err_len);
	if (rc == TKSHM_OK)
		*out = p;
	return rc;
}

/* The shortest of %.15g..%.17g that reads back as the same double (in
 * the C locale: a policy string's decimal point is always '.'). */
static void
tk_format_double(double v, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		tk_snprintf_c(buf, len, "%.*g", prec, v);
		if (tk_strtod_c(buf, NULL) == v)
			return;
	}
}

int
tkshm_policy_format(const tkshm_policy *p, char *buf, size_t len)
{
	const struct tk_kind_desc *k;
	char out[TKSHM_POLICY_MAX];
	size_t used;
	bool first = true;

	if (!p || !buf)
		return TKSHM_ENULL;
	if (tkshm_policy_validate(p, NULL, 0) != TKSHM_OK ||
	    !(k = tk_kind_by_id(p->kind)))
		return TKSHM_EPOLICY;
	if (len == 0)
		return TKSHM_EINVAL;
	/* Assembled piecewise: names and words are short and numbers at
	 * most 24 characters, so `out` always has room (checked anyway). */
	used = strlen(k->name);
	memcpy(out, k->name, used);
	out[used++] = ':';
	for (size_t i = 0; i < k->nopts; i++) {
		const struct tk_opt *o = &k->opts[i];
		char num[40];
		const char *val = num;
		size_t nlen, olen = strlen(o->name);

		if (!tk_opt_read(k, p, i))
			continue; /* the algorithm ignores it */
		if (o->words) {
			/* Validated above: the value has a word. */
			val = tk_word_of(o, tk_opt_get(p, o));
			if (!val)
				return TKSHM_EPOLICY;
		} else {
			tk_format_double(tk_opt_get(p, o), num, sizeof num);
		}
		nlen = strlen(val);
		if (used + olen + nlen + 3 >= sizeof out)
			return TKSHM_EINVAL;
		if (!first)
			out[used++] = ',';
		first = false;
		memcpy(out + used, o->name, olen);
		used += olen;
		out[used++] = '=';
		memcpy(out + used, val, nlen);
		used += nlen;
	}
	if (!tk_global_format(&p->global, out, &used, sizeof out))
		return TKSHM_EINVAL;
	out[used] = '\0';
	if (used >= len) {
		memcpy(buf, out, len - 1);
		buf[len - 1] = '\0';
		return TKSHM_EINVAL;
	}
	memcpy(buf, out, used + 1);
	return (int)used;
}

bool
tkshm_policy_equal(const tkshm_policy *a, const tkshm_policy *b)
{
	const struct tk_kind_desc *k;

	if (!a || !b || a->kind != b->kind || !(k = tk_kind_by_id(a->kind)) ||
	    !tk_global_equal(&a->global, &b->global))
		return false;
	/* The selector comes before the options it governs, so once it is
	 * equal both policies read the same options. */
	for (size_t i = 0; i < k->nopts; i++) {
		double x, y;

		if (!tk_opt_read(k, a, i) && !tk_opt_read(k, b, i))
			continue;
		x = tk_opt_get(a, &k->opts[i]);
		y = tk_opt_get(b, &k->opts[i]);
		if (tk_f64_word(x) != tk_f64_word(y)) /* bit for bit */
			return false;
	}
	return true;
}
