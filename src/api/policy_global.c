/*
 * policy_global.c - the cross-host part of a policy (policy_global.h).
 */
#include <stdio.h>
#include <string.h>

#include "api/policy_global.h"
#include "api/policy_number.h"
#include "base/c_numbers.h"
#include "base/words.h"

#define TK_SAY(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

static const char *const tk_modes[] = { "local", "strict", "lease" };
static const char *const tk_failures[] = { "safe-share", "fail-open",
					   "fail-closed" };

const char *
tk_global_mode_name(tkshm_global_mode m)
{
	return (unsigned)m < 3 ? tk_modes[m] : "?";
}

const char *
tk_global_failure_name(tkshm_failure_policy f)
{
	return (unsigned)f < 3 ? tk_failures[f] : "?";
}

void
tk_global_defaults(tkshm_global *g)
{
	memset(g, 0, sizeof *g);
	g->mode = TKSHM_MODE_LOCAL;
	g->failure = TKSHM_FAILURE_SAFE_SHARE;
	g->hosts = 1;
	g->lease_ms = 1000;
}

/* The index of the word `s` (n bytes) in `words`, or -1. */
static int
tk_word_index(const char *const *words, int nwords, const char *s, size_t n)
{
	for (int i = 0; i < nwords; i++)
		if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0)
			return i;
	return -1;
}

int
tk_global_parse(const char *s, size_t len, tkshm_global *g, char *err,
		size_t err_len)
{
	static const char *const names[] = { "mode", "failure", "hosts",
					     "leaseMs", "prefix" };
	const char *end = s + len;
	bool given[5] = { false };

	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		const char *oe = comma ? comma : end;
		const char *eq = memchr(s, '=', (size_t)(oe - s));
		const char *ns = s, *ne, *vs, *ve;
		int which, w;
		double v = 0;

		if (!eq) {
			TK_SAY("option \"%.*s\" has no '=value'", (int)(oe - s),
			       s);
			return TKSHM_EPOLICY;
		}
		ne = eq;
		vs = eq + 1;
		ve = oe;
		which = tk_word_index(names, 5, ns, (size_t)(ne - ns));
		if (which < 0) {
			TK_SAY("no cross-host option \"%.*s\" (mode, failure, "
			       "hosts, leaseMs, prefix)",
			       (int)(ne - ns), ns);
			return TKSHM_EPOLICY;
		}
		if (given[which]) {
			TK_SAY("option %s is given twice", names[which]);
			return TKSHM_EPOLICY;
		}
		given[which] = true;
		switch (which) {
		case 0:
			w = tk_word_index(tk_modes, 3, vs, (size_t)(ve - vs));
			if (w < 0) {
				TK_SAY("mode must be local, strict or lease "
				       "(got \"%.*s\")",
				       (int)(ve - vs), vs);
				return TKSHM_EPOLICY;
			}
			g->mode = (tkshm_global_mode)w;
			break;
		case 1:
			w = tk_word_index(tk_failures, 3, vs,
					  (size_t)(ve - vs));
			if (w < 0) {
				TK_SAY("failure must be safe-share, fail-open "
				       "or fail-closed (got \"%.*s\")",
				       (int)(ve - vs), vs);
				return TKSHM_EPOLICY;
			}
			g->failure = (tkshm_failure_policy)w;
			break;
		case 2:
		case 3:
			if (!tk_policy_number(vs, (size_t)(ve - vs), &v)) {
				TK_SAY("option %s: \"%.*s\" is not a number "
				       "(JSON's notation)",
				       names[which], (int)(ve - vs), vs);
				return TKSHM_EPOLICY;
			}
			if (which == 2)
				g->hosts = v;
			else
				g->lease_ms = v;
			break;
		default:
			if ((size_t)(ve - vs) > TKSHM_PREFIX_MAX) {
				TK_SAY("prefix is longer than %d bytes",
				       TKSHM_PREFIX_MAX);
				return TKSHM_EPOLICY;
			}
			memset(g->prefix, 0, sizeof g->prefix);
			memcpy(g->prefix, vs, (size_t)(ve - vs));
			break;
		}
		if (!comma)
			return TKSHM_OK;
		s = comma + 1;
	}
}

bool
tk_global_format(const tkshm_global *g, char *out, size_t *used, size_t cap)
{
	char part[256];
	int n;

	if (g->mode == TKSHM_MODE_LOCAL)
		return true;
	/* hosts and leaseMs are integers or short decimals; %.17g keeps
	 * any double exact. */
	n = tk_snprintf_c(part, sizeof part,
			  ";mode=%s,failure=%s,hosts=%.17g,leaseMs=%.17g%s%s",
			  tk_global_mode_name(g->mode),
			  tk_global_failure_name(g->failure), g->hosts,
			  g->lease_ms, g->prefix[0] ? ",prefix=" : "",
			  g->prefix);
	if (n < 0 || (size_t)n >= sizeof part || *used + (size_t)n >= cap)
		return false;
	memcpy(out + *used, part, (size_t)n);
	*used += (size_t)n;
	return true;
}

bool
tk_global_equal(const tkshm_global *a, const tkshm_global *b)
{
	if (a->mode != b->mode)
		return false;
	if (a->mode == TKSHM_MODE_LOCAL)
		return true;
	return a->failure == b->failure &&
	       tk_f64_word(a->hosts) == tk_f64_word(b->hosts) &&
	       tk_f64_word(a->lease_ms) == tk_f64_word(b->lease_ms) &&
	       strncmp(a->prefix, b->prefix, sizeof a->prefix) == 0;
}
