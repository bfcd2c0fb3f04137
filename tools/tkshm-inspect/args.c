/*
 * args.c - parsers for option values (the command line itself is read by
 * getopt_long(3), in cmdline.c).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

bool
ti_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		goto bad;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		goto bad;
	*out = (uint64_t)v;
	return true;
bad:
	ti_usage_error(cmd, "--%s: '%s' is not a non-negative integer", opt, s);
	return false;
}

bool
ti_parse_mode(const char *cmd, const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '7')
		goto bad;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (*end != '\0' || errno == ERANGE)
		goto bad;
	if (v > 0777) {
		/* As tkshm_open refuses them, rather than mask them away. */
		ti_usage_error(cmd,
			       "--mode: %s has bits outside 0777: a table file "
			       "takes permission bits only (no setuid, setgid "
			       "or sticky)",
			       s);
		return false;
	}
	if (v == 0) {
		/* tkshm_options.mode 0 means "the default, 0600". */
		ti_usage_error(cmd,
			       "--mode: 0 would give no access to anybody");
		return false;
	}
	*out = (uint32_t)v;
	return true;
bad:
	ti_usage_error(cmd, "--mode: '%s' is not an octal mode (1 to 777)", s);
	return false;
}

bool
ti_parse_on_full(const char *cmd, const char *s, tkshm_on_full *out)
{
	if (strcmp(s, "evict") == 0) {
		*out = TKSHM_ON_FULL_EVICT;
		return true;
	}
	if (strcmp(s, "refuse") == 0) {
		*out = TKSHM_ON_FULL_REFUSE;
		return true;
	}
	ti_usage_error(cmd, "--on-full: '%s' is neither 'evict' nor 'refuse'",
		       s);
	return false;
}

bool
ti_parse_policy(const char *cmd, const char *s, tkshm_policy *out)
{
	char why[256] = "";
	int rc = tkshm_policy_parse(s, out, why, sizeof why);

	if (rc != TKSHM_OK) {
		ti_usage_error(cmd, "--policy '%s': %s", s,
			       why[0] ? why : tkshm_strerror(rc));
		return false;
	}
	return true;
}

bool
ti_parse_decimal(const char *s, double *out)
{
	char *end;
	double v;

	if (s[0] == '\0')
		return false;
	for (const char *p = s; *p; p++)
		if (!strchr("0123456789+-.eE", *p))
			return false;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
		return false;
	*out = v;
	return true;
}
