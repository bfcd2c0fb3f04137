/*
 * fuzz_policy.c - the policy-string parser and the canonical format.
 *
 * Every input is read two ways.  As a string: tkshm_policy_parse must
 * refuse it or give a policy that formats, and whose format parses back
 * to an equal policy (tkshm_policy_format's contract).  As the bytes of a
 * hand-built tkshm_policy: tkshm_policy_validate must judge it without
 * reading past it, and a policy it accepts must round-trip the same way.
 * Formatting into buffers too small must fail with TKSHM_EINVAL and write
 * within them.  An accepted string must also be in the grammar of
 * docs/policies.md, judged here independently of the parser: no
 * whitespace, and every value that is not a word (or the free-form prefix)
 * a JSON number by POSIX regex; a rate string ("100 per minute") by a
 * POSIX regex of its own grammar.
 */
#include <ctype.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tkshm.h"

/* The longest policy string tried: longer ones are refused the same way. */
#define TKF_SPEC_MAX 4096

/* format(p) parses back to p, and shorter buffers are refused. */
static void
tkf_round_trip(const tkshm_policy *p)
{
	char buf[TKSHM_POLICY_MAX], err[128];
	tkshm_policy back;
	int n;

	n = tkshm_policy_format(p, buf, sizeof buf);
	TKF_REQUIRE(n > 0 && (size_t)n < sizeof buf &&
		    strlen(buf) == (size_t)n);
	TKF_REQUIRE(tkshm_policy_parse(buf, &back, err, sizeof err) ==
		    TKSHM_OK);
	TKF_REQUIRE(tkshm_policy_equal(p, &back));
	TKF_REQUIRE(tkshm_policy_equal(&back, p));
	/* Too small by one, and a few bytes: refused, NUL-terminated. */
	{
		size_t lens[] = { (size_t)n, 1, 7 };
		for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
			char *small = malloc(lens[i]);
			if (!small)
				abort();
			TKF_REQUIRE(tkshm_policy_format(p, small, lens[i]) ==
				    TKSHM_EINVAL);
			TKF_REQUIRE(memchr(small, '\0', lens[i]) != NULL);
			free(small);
		}
	}
}

/* True when value [v, e) of option [n, v - 1) is in the grammar. */
static int
tkf_value_in_grammar(const char *n, const char *v, const char *e)
{
	static regex_t number;
	static int compiled;
	char buf[TKF_SPEC_MAX + 1];

	if (!compiled) {
		if (regcomp(&number,
			    "^-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?$",
			    REG_EXTENDED | REG_NOSUB) != 0)
			abort();
		compiled = 1;
	}
	if (v - n == 7 && memcmp(n, "prefix=", 7) == 0)
		return 1; /* free-form (a Redis key prefix) */
	memcpy(buf, v, (size_t)(e - v));
	buf[e - v] = '\0';
	if (buf[0] == '-' || isdigit((unsigned char)buf[0]))
		return regexec(&number, buf, 0, NULL, 0) == 0;
	for (const char *c = buf; *c; c++)
		if (!islower((unsigned char)*c) &&
		    !isdigit((unsigned char)*c) && *c != '-')
			return 0;
	return buf[0] != '\0';
}

/* The options after separator *s and before `stop`, split at ','. */
static void
tkf_options_in_grammar(const char *s, const char *stop)
{
	while (s < stop) {
		const char *n = s + 1, *end = n + strcspn(n, ","), *eq;

		if (end > stop)
			end = stop;
		eq = memchr(n, '=', (size_t)(end - n));
		TKF_REQUIRE(eq != NULL);
		TKF_REQUIRE(tkf_value_in_grammar(n, eq + 1, end));
		s = end;
	}
}

/* An accepted spec is in the grammar: no whitespace, and each option's
 * value a number or a word.  The kind's options end at the first ';'; the
 * cross-host part after it splits at ',' only (a prefix may hold ';'). */
/* A rate string's part before the first ';' (docs/policies.md, "Rate
 * strings"): the one place where spaces and tabs may appear. */
static int
tkf_rate_in_grammar(const char *rate, size_t len)
{
#define TKF_NUM "(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?"
#define TKF_WS	"[ \t]*"
	static regex_t rate_re;
	static int compiled;
	char buf[TKF_SPEC_MAX + 1];

	if (!compiled) {
		if (regcomp(&rate_re,
			    "^" TKF_WS TKF_NUM TKF_WS "(/|per)" TKF_WS
			    "(" TKF_NUM TKF_WS ")?"
			    "(ms|milliseconds?|s|secs?|seconds?|m|mins?|"
			    "minutes?|h|hrs?|hours?|d|days?|months?|years?)" TKF_WS
			    "(," TKF_WS "burst" TKF_WS "=" TKF_WS TKF_NUM TKF_WS
			    ")?$",
			    REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
			abort();
		compiled = 1;
	}
#undef TKF_NUM
#undef TKF_WS
	memcpy(buf, rate, len);
	buf[len] = '\0';
	return regexec(&rate_re, buf, 0, NULL, 0) == 0;
}

static void
tkf_in_grammar(const char *spec)
{
	const char *end = spec + strlen(spec);
	const char *semi = strchr(spec, ';');
	const char *kend = semi ? semi : end;
	const char *colon = memchr(spec, ':', (size_t)(kend - spec));
	const char *first = spec + strspn(spec, " \t");

	if (isdigit((unsigned char)*first)) {
		TKF_REQUIRE(tkf_rate_in_grammar(spec, (size_t)(kend - spec)));
		colon = NULL; /* a rate has no kind's options */
	} else {
		for (const char *c = spec; c < kend; c++)
			TKF_REQUIRE(!isspace((unsigned char)*c));
	}
	for (const char *c = kend; *c; c++)
		TKF_REQUIRE(!isspace((unsigned char)*c));
	if (colon)
		tkf_options_in_grammar(colon, kend);
	if (semi)
		tkf_options_in_grammar(semi, end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char spec[TKF_SPEC_MAX + 1], err[256];
	tkshm_policy p, before;
	int rc;

	if (size > TKF_SPEC_MAX)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	memset(&p, 0x5a, sizeof p);
	before = p;
	rc = tkshm_policy_parse(spec, &p, err, sizeof err);
	if (rc == TKSHM_OK) {
		tkf_in_grammar(spec);
		tkf_round_trip(&p);
	} else {
		TKF_REQUIRE(rc == TKSHM_EPOLICY);
		TKF_REQUIRE(memchr(err, '\0', sizeof err) != NULL);
		/* "*out unchanged on error" */
		TKF_REQUIRE(memcmp(&p, &before, sizeof p) == 0);
	}
	/* Short error buffers are never overrun (ASan watches). */
	{
		char *tiny = malloc(3);
		if (!tiny)
			abort();
		(void)tkshm_policy_parse(spec, &p, tiny, 3);
		free(tiny);
	}

	/* The same bytes as a policy built by hand. */
	memset(&p, 0, sizeof p);
	memcpy(&p, data, size < sizeof p ? size : sizeof p);
	rc = tkshm_policy_validate(&p, err, sizeof err);
	if (rc == TKSHM_OK)
		tkf_round_trip(&p);
	else
		TKF_REQUIRE(rc == TKSHM_EPOLICY);
	return 0;
}
