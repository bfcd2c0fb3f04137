/* cmd_reset.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_reset(FILE *f)
{
	fputs("Usage: " TI_PROG " reset\n", f);
}

int
ti_cmd_reset(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("reset: not written yet");
	return TI_EXIT_USAGE;
}
