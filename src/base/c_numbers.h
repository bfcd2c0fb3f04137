/*
 * c_numbers.h - numbers read and written in the C locale.
 *
 * strtod and printf's %g follow the process's LC_NUMERIC, which belongs to
 * the program the library runs in: a PHP script, a Python application or
 * a server module may set a locale whose decimal point is a comma.  Policy
 * strings, the arguments of the Redis scripts and their replies are always
 * written with a '.', so every conversion of them goes through these,
 * which use the C locale whatever the process's.
 */
#ifndef TKSHM_BASE_C_NUMBERS_H
#define TKSHM_BASE_C_NUMBERS_H

#include <stddef.h>

/* strtod(s, end) in the C locale. */
double tk_strtod_c(const char *s, char **end);

/* snprintf(buf, len, fmt, ...) in the C locale. */
int tk_snprintf_c(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* TKSHM_BASE_C_NUMBERS_H */
