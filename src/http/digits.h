/*
 * digits.h - whole numbers written as text, for the HTTP helpers that run
 * on every request of a web server: printf's format parsing and locale
 * machinery cost more than the limiter's own check.  Each writes no
 * terminating NUL and returns the end of what it wrote.
 */
#ifndef TKSHM_HTTP_DIGITS_H
#define TKSHM_HTTP_DIGITS_H

#include <stdint.h>

/* v in decimal, with a '-' when negative (INT64_MIN included). */
static inline char *
tk_put_dec(char *p, int64_t v)
{
	char tmp[20];
	int n = 0;
	/* Negated as unsigned: -INT64_MIN does not fit an int64_t. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	if (v < 0)
		*p++ = '-';
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	while (n > 0)
		*p++ = tmp[--n];
	return p;
}

/* v in lowercase hexadecimal without leading zeros ("0" for 0). */
static inline char *
tk_put_hex(char *p, unsigned v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[8];
	int n = 0;

	do {
		tmp[n++] = hex[v & 0xf];
		v >>= 4;
	} while (v != 0);
	while (n > 0)
		*p++ = tmp[--n];
	return p;
}

#endif /* TKSHM_HTTP_DIGITS_H */
