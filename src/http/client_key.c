/*
 * client_key.c - the rate-limit key of an HTTP client's address.
 *
 * One host usually owns a whole IPv6 /64 (SLAAC, privacy addresses), so a
 * limit per IPv6 address is no limit at all: the key is the network of the
 * address's first bits.  The text form is RFC 5952's (lowercase, leading
 * zeros dropped, the longest run of two or more zero groups as "::", the
 * first such run on a tie), written here rather than by inet_ntop because
 * glibc's inet_ntop prints some prefixes in mixed IPv4 notation.  That is
 * also what Python's ipaddress prints, so every binding's keys agree.
 */
#include <arpa/inet.h>
#include <string.h>

#include "digits.h"
#include "tkshm_http.h"

/* Longest textual address we accept, zone included ("fe80::1%eth0"). */
#define ADDR_TEXT_MAX 63

static void
mask_prefix(unsigned char a[16], unsigned bits)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned keep = bits > 8 * i ? bits - 8 * i : 0;
		if (keep >= 8)
			continue;
		a[i] &= (unsigned char)(0xff00u >> keep);
	}
}

/* The dotted quad of a; dst has room for 16 bytes. */
static void
format_v4(const unsigned char a[4], char *dst)
{
	char *p = dst;

	for (int i = 0; i < 4; i++) {
		p = tk_put_dec(p, a[i]);
		*p++ = i < 3 ? '.' : '\0';
	}
}

/* RFC 5952 text of a; dst has room for 40 bytes. */
static void
format_v6(const unsigned char a[16], char *dst)
{
	unsigned group[8];
	int best = -1, best_len = 0;

	for (int i = 0; i < 8; i++)
		group[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
	for (int i = 0; i < 8;) {
		int j = i;
		while (j < 8 && group[j] == 0)
			j++;
		if (j - i > best_len) {
			best = i;
			best_len = j - i;
		}
		i = j > i ? j : i + 1;
	}
	if (best_len < 2)
		best = -1;

	char *p = dst;
	for (int i = 0; i < 8; i++) {
		if (i == best) {
			*p++ = ':';
			if (i == 0)
				*p++ = ':';
			i += best_len - 1;
			continue;
		}
		p = tk_put_hex(p, group[i]);
		if (i < 7)
			*p++ = ':';
	}
	*p = '\0';
}

int
tkshm_http_client_key(const char *addr, unsigned v6_prefix_bits, char *out,
		      size_t out_len)
{
	char text[ADDR_TEXT_MAX + 1];
	char key[TKSHM_HTTP_CLIENT_KEY_MAX];
	unsigned char a[16];
	size_t len;

	if (addr == NULL || out == NULL)
		return TKSHM_ENULL;
	if (v6_prefix_bits < 1 || v6_prefix_bits > 128)
		return TKSHM_EINVAL;
	len = strnlen(addr, sizeof text);
	if (len == 0 || len == sizeof text)
		return TKSHM_EINVAL;
	memcpy(text, addr, len + 1);

	if (strchr(text, ':') == NULL) {
		if (inet_pton(AF_INET, text, a) != 1)
			return TKSHM_EINVAL;
		format_v4(a, key);
	} else {
		char *zone = strchr(text, '%');
		if (zone != NULL)
			*zone = '\0';
		if (inet_pton(AF_INET6, text, a) != 1)
			return TKSHM_EINVAL;
		static const unsigned char v4_mapped[12] = { 0, 0, 0,	 0,
							     0, 0, 0,	 0,
							     0, 0, 0xff, 0xff };
		if (memcmp(a, v4_mapped, sizeof v4_mapped) == 0) {
			format_v4(a + 12, key);
		} else {
			mask_prefix(a, v6_prefix_bits);
			format_v6(a, key);
			char *end = key + strlen(key);
			*end++ = '/';
			end = tk_put_dec(end, v6_prefix_bits);
			*end = '\0';
		}
	}

	len = strlen(key);
	if (len + 1 > out_len)
		return TKSHM_ENOMEM;
	memcpy(out, key, len + 1);
	return (int)len;
}
