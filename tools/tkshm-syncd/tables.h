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

/* For a reload from `cur` to `next`: whether `next` drops a table `cur`
 * serves (each one logged, LOG_ERR); whether every table only `next`
 * names passes the --check test (the first that does not, logged). */
bool sd_tables_removed(const struct sd_conf *cur, const struct sd_conf *next);
bool sd_tables_check_new(const struct sd_conf *cur, const struct sd_conf *next);

/* Attaches the tables only `next` names, in its order; returns how many
 * were attached.  When one fails: *ok false after logging it, and next's
 * list cut to the tables now served (those attached before it stay). */
size_t sd_tables_attach_new(const struct sd_conf *cur, struct sd_conf *next,
			    struct tk_agent *a, bool *ok);

#endif /* TKSHM_SYNCD_TABLES_H */
