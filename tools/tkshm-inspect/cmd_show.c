/* cmd_show.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_show(FILE *f)
{
	fputs("Usage: " TI_PROG " show\n", f);
}

int
ti_cmd_show(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("show: not written yet");
	return TI_EXIT_USAGE;
}
