/*
 * policy.c - policy constructors, the policy-string parser and formatter.
 *
 * The syntax is ThrottleKit's kind and option names:
 *     kind ":" name "=" number { "," name "=" number }
 * e.g. "gcra:limit=10,periodMs=1000,burst=5".  The same parser serves the
 * API, tkshm-inspect, the server modules and the bindings.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algorithms/algorithm.h"
#include "tkshm.h"

#define TK_SAY(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

/* One option of a kind: its ThrottleKit name and where it goes. */
struct tk_opt {
	const char *name;
	size_t offset; /* into tkshm_policy */
	bool required;
};

struct tk_kind_desc {
	const char *name;
	tkshm_kind kind;
	const struct tk_opt *opts;
	size_t nopts;
};

static const struct tk_opt tk_gcra_opts[] = {
	{ "limit", offsetof(tkshm_policy, u.gcra.limit), true },
	{ "periodMs", offsetof(tkshm_policy, u.gcra.period_ms), true },
	{ "burst", offsetof(tkshm_policy, u.gcra.burst), false },
};

static const struct tk_kind_desc tk_kinds[] = {
	{ "gcra", TKSHM_KIND_GCRA, tk_gcra_opts,
	  sizeof tk_gcra_opts / sizeof tk_gcra_opts[0] },
};

static const struct tk_kind_desc *
tk_kind_by_name(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof tk_kinds / sizeof tk_kinds[0]; i++)
		if (strlen(tk_kinds[i].name) == len &&
		    memcmp(tk_kinds[i].name, name, len) == 0)
			return &tk_kinds[i];
	return NULL;
}

static const struct tk_kind_desc *
tk_kind_by_id(tkshm_kind kind)
{
	for (size_t i = 0; i < sizeof tk_kinds / sizeof tk_kinds[0]; i++)
		if (tk_kinds[i].kind == kind)
			return &tk_kinds[i];
	return NULL;
}

static double *
tk_opt_slot(tkshm_policy *p, const struct tk_opt *o)
{
	return (double *)((char *)p + o->offset);
}

/* Fills defaults that depend on other options (ThrottleKit's). */
static void
tk_policy_defaults(tkshm_policy *p, const bool *given)
{
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		if (!given[2]) /* tk_gcra_opts[2] is burst */
			p->u.gcra.burst = p->u.gcra.limit;
		break;
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

static const char *
tk_skip_space(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* Parses a decimal number that ends at `end`; rejects NaN, infinities and
 * hexadecimal forms, which ThrottleKit's JSON options cannot express. */
static bool
tk_parse_number(const char *s, const char *end, double *v)
{
	char buf[64];
	size_t n = (size_t)(end - s);
	char *stop;

	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", buf[i]))
			return false;
	/* ERANGE is not checked: glibc also sets it for subnormal results,
	 * which are valid doubles; an overflow is caught by isfinite and an
	 * underflow to 0 by the kind's validation. */
	*v = strtod(buf, &stop);
	return *stop == '\0' && isfinite(*v);
}

int
tkshm_policy_parse(const char *spec, tkshm_policy *out, char *err,
		   size_t err_len)
{
	const struct tk_kind_desc *k;
	tkshm_policy p;
	bool given[16] = { false }; /* by option index; kinds have <= 16 */
	const char *s, *colon;
	int rc;

	if (!spec || !out)
		return TKSHM_ENULL;
	s = tk_skip_space(spec);
	colon = strchr(s, ':');
	{
		const char *kend = colon ? colon : s + strlen(s);
		while (kend > s && isspace((unsigned char)kend[-1]))
			kend--;
		k = tk_kind_by_name(s, (size_t)(kend - s));
		if (!k) {
			TK_SAY("unknown policy kind \"%.*s\" (known: gcra)",
			       (int)(kend - s), s);
			return TKSHM_EPOLICY;
		}
	}
	memset(&p, 0, sizeof p);
	p.kind = k->kind;
	s = colon ? colon + 1 : s + strlen(s);
	while (*(s = tk_skip_space(s)) != '\0') {
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
		while (nend > s && isspace((unsigned char)nend[-1]))
			nend--;
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
		if (!tk_parse_number(tk_skip_space(eq + 1), end, &v)) {
			TK_SAY("option %s: \"%.*s\" is not a finite decimal "
			       "number",
			       k->opts[i].name, (int)(end - eq - 1), eq + 1);
			return TKSHM_EPOLICY;
		}
		*tk_opt_slot(&p, &k->opts[i]) = v;
		given[i] = true;
		if (!comma)
			break;
		s = comma + 1;
		if (*tk_skip_space(s) == '\0') {
			TK_SAY("trailing ',' in policy");
			return TKSHM_EPOLICY;
		}
	}
	for (size_t i = 0; i < k->nopts; i++)
		if (k->opts[i].required && !given[i]) {
			TK_SAY("%s needs option %s", k->name, k->opts[i].name);
			return TKSHM_EPOLICY;
		}
	tk_policy_defaults(&p, given);
	rc = tkshm_policy_validate(&p, err, err_len);
	if (rc == TKSHM_OK)
		*out = p;
	return rc;
}

/* The shortest of %.15g..%.17g that reads back as the same double. */
static void
tk_format_double(double v, char *buf, size_t len)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

int
tkshm_policy_format(const tkshm_policy *p, char *buf, size_t len)
{
	const struct tk_kind_desc *k;
	char out[TKSHM_POLICY_MAX];
	size_t used;

	if (!p || !buf)
		return TKSHM_ENULL;
	if (tkshm_policy_validate(p, NULL, 0) != TKSHM_OK ||
	    !(k = tk_kind_by_id(p->kind)))
		return TKSHM_EPOLICY;
	if (len == 0)
		return TKSHM_EINVAL;
	/* Assembled piecewise: names are short and numbers at most 24
	 * characters, so `out` always has room (checked anyway). */
	used = strlen(k->name);
	memcpy(out, k->name, used);
	out[used++] = ':';
	for (size_t i = 0; i < k->nopts; i++) {
		char num[40];
		size_t nlen, olen = strlen(k->opts[i].name);

		tk_format_double(*tk_opt_slot((tkshm_policy *)p, &k->opts[i]),
				 num, sizeof num);
		nlen = strlen(num);
		if (used + olen + nlen + 3 >= sizeof out)
			return TKSHM_EINVAL;
		if (i)
			out[used++] = ',';
		memcpy(out + used, k->opts[i].name, olen);
		used += olen;
		out[used++] = '=';
		memcpy(out + used, num, nlen);
		used += nlen;
	}
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

	if (!a || !b || a->kind != b->kind || !(k = tk_kind_by_id(a->kind)))
		return false;
	for (size_t i = 0; i < k->nopts; i++) {
		double x = *tk_opt_slot((tkshm_policy *)a, &k->opts[i]);
		double y = *tk_opt_slot((tkshm_policy *)b, &k->opts[i]);
		if (memcmp(&x, &y, sizeof x) != 0)
			return false;
	}
	return true;
}
