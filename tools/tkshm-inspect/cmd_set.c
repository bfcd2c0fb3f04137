/* cmd_set.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_set(FILE *f)
{
	fputs("Usage: " TI_PROG " set\n", f);
}

int
ti_cmd_set(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("set: not written yet");
	return TI_EXIT_USAGE;
}
