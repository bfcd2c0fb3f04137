/* cmd_top.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_top(FILE *f)
{
	fputs("Usage: " TI_PROG " top\n", f);
}

int
ti_cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("top: not written yet");
	return TI_EXIT_USAGE;
}
