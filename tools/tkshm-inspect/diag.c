/*
 * diag.c - diagnostics on stderr and the final flush of stdout.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "inspect.h"

static void
ti_verr(const char *fmt, va_list ap)
{
	fputs(TI_PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
ti_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ti_verr(fmt, ap);
	va_end(ap);
}

int
ti_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ti_verr(fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "Try '" TI_PROG " %s --help'.\n", cmd);
	else
		fputs("Try '" TI_PROG " --help'.\n", stderr);
	return TI_EXIT_USAGE;
}

int
ti_finish_stdout(int rc)
{
	int e;

	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		e = errno;
		ti_err("cannot write to standard output: %s",
		       e ? strerror(e) : "write error");
		return TI_EXIT_IO;
	}
	return rc;
}
