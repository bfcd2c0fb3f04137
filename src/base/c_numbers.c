/*
 * c_numbers.c - numbers read and written in the C locale (c_numbers.h).
 */
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/c_numbers.h"

static pthread_once_t tk_c_locale_once = PTHREAD_ONCE_INIT;
static locale_t tk_c_locale_obj; /* (locale_t)0: none could be made */

static void
tk_c_locale_init(void)
{
	/* "C" is built into the C library: only a failed allocation can
	 * make this fail, and then the process's locale is used (what every
	 * call did before). */
	tk_c_locale_obj = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* The C locale, or (locale_t)0. */
static locale_t
tk_c_locale(void)
{
	(void)pthread_once(&tk_c_locale_once, tk_c_locale_init);
	return tk_c_locale_obj;
}

double
tk_strtod_c(const char *s, char **end)
{
	locale_t c = tk_c_locale();

	return c ? strtod_l(s, end, c) : strtod(s, end);
}

int
tk_snprintf_c(char *buf, size_t len, const char *fmt, ...)
{
	locale_t c = tk_c_locale();
	/* uselocale changes this thread's locale only, and is undone before
	 * returning. */
	locale_t old = c ? uselocale(c) : (locale_t)0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (old)
		(void)uselocale(old);
	return n;
}
