/*
 * headers.c - the RateLimit and Retry-After response headers of a
 * decision, in the IETF draft's structured-field form or the older
 * separate fields.
 *
 * Seconds are rounded up: a client told "retry in 0 s" retries at once and
 * is denied again, so Retry-After is at least 1 and a reset is never
 * reported earlier than it happens.
 */
#include <math.h>
#include <string.h>

#include "digits.h"
#include "tkshm_http.h"

/* Seconds until reset_at, rounded up, never negative.  now_ms >= 0 and
 * reset_at <= INT64_MAX keep the quotient below 2^54: exact in a double
 * and in range for int64_t. */
static int64_t
seconds_until(int64_t reset_at, double now_ms)
{
	double s = ceil(((double)reset_at - now_ms) / 1000.0);
	return s > 0 ? (int64_t)s : 0;
}

static int64_t
retry_after_s(int64_t retry_after_ms)
{
	if (retry_after_ms <= 1000)
		return 1;
	return retry_after_ms / 1000 + (retry_after_ms % 1000 != 0);
}

static bool
name_is_printable(const char *name, size_t *len)
{
	size_t n = 0;
	for (; name[n] != '\0'; n++) {
		unsigned char c = (unsigned char)name[n];
		if (c < 0x20 || c > 0x7e)
			return false;
	}
	*len = n;
	return true;
}

/* `"name"` as an sf-string: '"' and '\' escaped. */
static char *
put_sf_string(char *p, const char *name)
{
	*p++ = '"';
	for (; *name != '\0'; name++) {
		if (*name == '"' || *name == '\\')
			*p++ = '\\';
		*p++ = *name;
	}
	*p++ = '"';
	return p;
}

/* `prefix` then v in decimal; no NUL. */
static char *
put_param(char *p, const char *prefix, int64_t v)
{
	while (*prefix != '\0')
		*p++ = *prefix++;
	return tk_put_dec(p, v);
}

int
tkshm_http_headers(const tkshm_decision *d, tkshm_http_style style,
		   const char *policy_name, int64_t window_s, double now_ms,
		   tkshm_http_header out[TKSHM_HTTP_HEADERS_MAX], char *buf,
		   size_t buf_len)
{
	size_t name_len = 0;

	if (d == NULL || out == NULL || buf == NULL)
		return TKSHM_ENULL;
	if (style != TKSHM_HTTP_DRAFT && style != TKSHM_HTTP_LEGACY &&
	    style != TKSHM_HTTP_NONE)
		return TKSHM_EINVAL;
	if (!(now_ms >= 0 && now_ms <= TKSHM_NOW_MAX))
		return TKSHM_ENOW;
	if (policy_name == NULL)
		policy_name = "default";
	if (!name_is_printable(policy_name, &name_len))
		return TKSHM_EINVAL;
	if (buf_len < TKSHM_HTTP_BUF_SIZE(name_len))
		return TKSHM_ENOMEM;

	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX];
	int64_t reset_s = seconds_until(d->reset_at, now_ms);
	int n = 0;
	char *p = buf;

	switch (style) {
	case TKSHM_HTTP_DRAFT:
		h[n++] = (tkshm_http_header){ "RateLimit-Policy", p };
		p = put_sf_string(p, policy_name);
		p = put_param(p, ";q=", d->limit);
		if (window_s >= 0)
			p = put_param(p, ";w=", window_s);
		*p++ = '\0';
		h[n++] = (tkshm_http_header){ "RateLimit", p };
		p = put_sf_string(p, policy_name);
		p = put_param(p, ";r=", d->remaining);
		p = put_param(p, ";t=", reset_s);
		*p++ = '\0';
		break;
	case TKSHM_HTTP_LEGACY:
		h[n++] = (tkshm_http_header){ "RateLimit-Limit", p };
		p = put_param(p, "", d->limit);
		*p++ = '\0';
		h[n++] = (tkshm_http_header){ "RateLimit-Remaining", p };
		p = put_param(p, "", d->remaining);
		*p++ = '\0';
		h[n++] = (tkshm_http_header){ "RateLimit-Reset", p };
		p = put_param(p, "", reset_s);
		*p++ = '\0';
		break;
	case TKSHM_HTTP_NONE:
		break;
	}
	if (!d->allowed) {
		h[n++] = (tkshm_http_header){ "Retry-After", p };
		p = put_param(p, "", retry_after_s(d->retry_after_ms));
		*p = '\0';
	}
	memcpy(out, h, (size_t)n * sizeof h[0]);
	return n;
}
