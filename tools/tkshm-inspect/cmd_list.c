/* cmd_list.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_list(FILE *f)
{
	fputs("Usage: " TI_PROG " list\n", f);
}

int
ti_cmd_list(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("list: not written yet");
	return TI_EXIT_USAGE;
}
