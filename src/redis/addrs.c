/*
 * addrs.c - lists of Redis addresses ("host:port,[v6]:port"): the seeds
 * of a cluster (cluster.c) and the sentinels (sentinel.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tkshm.h"
#include "redis/addrs.h"

/* One "host:port" (or "[v6]:port") of a list, len bytes at s. */
static bool
tk_addr_parse(const char *s, size_t len, struct tk_redis_addr *out)
{
	const char *colon = NULL, *host = s;
	size_t hlen;
	long port = 0;

	for (size_t i = 0; i < len; i++)
		if (s[i] == ':')
			colon = s + i;
	if (!colon || colon == s || (size_t)(colon - s) + 1 >= len)
		return false;
	hlen = (size_t)(colon - s);
	if (host[0] == '[') {
		if (hlen < 3 || host[hlen - 1] != ']')
			return false;
		host++;
		hlen -= 2;
	}
	if (hlen >= sizeof out->host)
		return false;
	for (const char *p = colon + 1; p < s + len; p++) {
		if (*p < '0' || *p > '9' || port > 65535)
			return false;
		port = port * 10 + (*p - '0');
	}
	if (port < 1 || port > 65535)
		return false;
	memcpy(out->host, host, hlen);
	out->host[hlen] = '\0';
	out->port = (int)port;
	return true;
}

int
tk_redis_addrs_parse(const char *list, struct tk_redis_addr *out, char *why,
		     size_t why_len)
{
	int n = 0;

	if (!list || !*list) {
		snprintf(why, why_len, "no address");
		return TKSHM_EINVAL;
	}
	while (*list) {
		size_t len = strcspn(list, ", ");

		if (len > 0) {
			if (n == TK_REDIS_ADDRS_COUNT) {
				snprintf(why, why_len, "more than %d addresses",
					 TK_REDIS_ADDRS_COUNT);
				return TKSHM_EINVAL;
			}
			if (!tk_addr_parse(list, len, &out[n])) {
				snprintf(why, why_len,
					 "\"%.*s\" is not host:port",
					 (int)(len > 80 ? 80 : len), list);
				return TKSHM_EINVAL;
			}
			n++;
		}
		list += len;
		list += strspn(list, ", ");
	}
	if (n == 0) {
		snprintf(why, why_len, "no address");
		return TKSHM_EINVAL;
	}
	return n;
}
