/*
 * policy_number.c - JSON's number grammar (policy_number.h), then strtod
 * in the C locale (c_numbers.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/policy_number.h"
#include "base/c_numbers.h"

/* Advances *i over one or more digits of s[0..n); false when there is
 * none. */
static bool
tk_digits(const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	while (*i < n && isdigit((unsigned char)s[*i]))
		(*i)++;
	return *i > start;
}

/* True when s[0..n) matches the grammar, char by char. */
static bool
tk_number_shape(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++; /* a leading 0 stands alone: "010" is not a number */
	else if (!(i < n && s[i] >= '1' && s[i] <= '9') || !tk_digits(s, n, &i))
		return false;
	if (i < n && s[i] == '.') {
		i++;
		if (!tk_digits(s, n, &i))
			return false;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (!tk_digits(s, n, &i))
			return false;
	}
	return i == n;
}

bool
tk_policy_number(const char *s, size_t n, double *v)
{
	char small[64], *buf, *end;
	bool ok;

	if (n == 0 || !tk_number_shape(s, n))
		return false;
	/* The grammar puts no bound on the digits: a long number is copied
	 * to the heap (a failed allocation refuses it). */
	buf = n < sizeof small ? small : malloc(n + 1);
	if (!buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	/* ERANGE is not checked: glibc also sets it for subnormal results,
	 * which are valid doubles; an overflow is caught by isfinite and an
	 * underflow to 0 by the kind's validation. */
	*v = tk_strtod_c(buf, &end);
	ok = *end == '\0' && isfinite(*v);
	if (buf != small)
		free(buf);
	return ok;
}
