/*
 * tables.h - the lease tables the daemon serves: checked, then attached.
 *
 * Both report a table's problem with the configuration line that names it
 * ("FILE:LINE: table PATH: ..."), so that a missing table or one that is
 * not in lease mode is found in the file at once.
 */
#ifndef TKSHM_SYNCD_TABLES_H
#define TKSHM_SYNCD_TABLES_H

#include <stdbool.h>

#include "agent/agent.h"
#include "config.h"

/* Opens every table read-only: each must exist and be a lease table.
 * False after reporting the first that is not.  Writes nothing. */
bool sd_tables_check(const struct sd_conf *c);

/* Attaches every table to the agent (which publishes its pid in each).
 * False after reporting the first that fails; the tables attached before
 * it stay attached until tk_agent_free(). */
bool sd_tables_attach(const struct sd_conf *c, struct tk_agent *a);

#endif /* TKSHM_SYNCD_TABLES_H */
