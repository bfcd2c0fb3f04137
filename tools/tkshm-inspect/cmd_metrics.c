/* cmd_metrics.c - being written (issue 4). */
#include "inspect.h"

void
ti_usage_metrics(FILE *f)
{
	fputs("Usage: " TI_PROG " metrics\n", f);
}

int
ti_cmd_metrics(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ti_err("metrics: not written yet");
	return TI_EXIT_USAGE;
}
