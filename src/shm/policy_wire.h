/*
 * policy_wire.h - a policy's stored form and back (policy_wire.c).
 */
#ifndef TKSHM_SHM_POLICY_WIRE_H
#define TKSHM_SHM_POLICY_WIRE_H

#include "shm/layout.h"
#include "tkshm.h"

/* The stored form of policy p: its kind and parameters into *w, its
 * cross-host options into *gw (every unused byte zero). */
void tk_policy_wire_of(const tkshm_policy *p, struct tk_policy_wire *w,
		       struct tk_global_wire *gw);

/* A stored policy back into *p.  Its values are not trusted here:
 * tk_algo_init validates them. */
void tk_policy_unwire(const struct tk_policy_wire *w,
		      const struct tk_global_wire *gw, tkshm_policy *p);

#endif /* TKSHM_SHM_POLICY_WIRE_H */
