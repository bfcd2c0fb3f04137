/*
 * addrs.h - lists of Redis addresses (addrs.c).
 */
#ifndef TKSHM_REDIS_ADDRS_H
#define TKSHM_REDIS_ADDRS_H

#include <stddef.h>

/* The longest list of addresses (cluster seeds, sentinels), NUL
 * included, and the most addresses one list holds. */
#define TK_REDIS_ADDRS_MAX   1024
#define TK_REDIS_ADDRS_COUNT 16

/* One "host:port" of a list. */
struct tk_redis_addr {
	char host[256];
	int port;
};

/* Parses "host:port[,host:port...]" (an IPv6 host in brackets:
 * "[::1]:7000") into at most TK_REDIS_ADDRS_COUNT addresses.  Returns
 * how many, or TKSHM_EINVAL with the reason in why. */
int tk_redis_addrs_parse(const char *list, struct tk_redis_addr *out, char *why,
			 size_t why_len);

#endif /* TKSHM_REDIS_ADDRS_H */
