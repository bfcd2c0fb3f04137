/*
 * lease_check.h - checks of a lease table, and the agent's grants.
 *
 * A worker's check is one wide-state transition (lease.h's
 * tk_lease_spend) of the key's lease state, run by the table's store; the
 * environment it decides in (is Redis reachable? how many hosts?) is read
 * from the table's shared region first (global_shm.h).  The agent's grant
 * is the same kind of transition (tk_lease_apply).
 */
#ifndef TKSHM_GLOBAL_LEASE_CHECK_H
#define TKSHM_GLOBAL_LEASE_CHECK_H

#include "algorithms/lease.h"
#include "shm/table.h"

/* An agent whose heartbeat is older than this (monotonic ms) is gone:
 * workers apply the failure policy. */
#define TK_AGENT_STALE_MS 1000.0

/* The environment a check without credit is decided in. */
void tk_lease_env_of(const struct tkshm_table *t, struct tk_lease_env *env);

/* A check of a lease table (arguments validated by the caller). */
int tk_lease_check(struct tkshm_table *t, const void *key, size_t len,
		   double cost, double now, tkshm_decision *out);

/* Writes a grant into the key's state (inserting the key if absent).
 * TKSHM_OK, TKSHM_EFULL, TKSHM_EBUSY. */
int tk_lease_grant(struct tkshm_table *t, const void *key, size_t len,
		   double now, const struct tk_lease_grant *g);

#endif /* TKSHM_GLOBAL_LEASE_CHECK_H */
