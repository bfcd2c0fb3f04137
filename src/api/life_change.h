/*
 * life_change.h - what a policy or size change does to a table, and the
 * sentences that say so (life_change.c).
 */
#ifndef TKSHM_API_LIFE_CHANGE_H
#define TKSHM_API_LIFE_CHANGE_H

#include <stdint.h>

#include "tkshm.h"

struct tkshm_table;

/* Classifies the change of instance t to `policy` (NULL: the table's) and
 * `slots` (0: the table's): none, in place or a replacement, and writes
 * the sentence.  TKSHM_EPOLICY for a policy that does not validate. */
int tk_change_plan(const struct tkshm_table *t, const tkshm_policy *policy,
		   uint64_t slots, tkshm_change *out);
/* The report of a table of policy p and `slots` (rounded) created. */
void tk_change_creating(const tkshm_policy *p, uint64_t slots, bool anonymous,
			tkshm_change *out);
/* The report of a table this open created. */
void tk_change_created(const struct tkshm_table *t, tkshm_change *out);
/* Checks a change's arguments; says what is wrong in o's errbuf. */
int tk_change_check_args(const tkshm_policy *policy, uint64_t slots,
			 const tkshm_options *o);
/* errbuf sentences for TKSHM_O_KEEP and read-only opens. */
void tk_change_say_mismatch(const tkshm_options *o, const struct tkshm_table *t,
			    const tkshm_policy *want, const tkshm_change *c);
void tk_change_say_invalid(const tkshm_options *o, int rc);
/* The permit epoch of t's replacement under `policy`: t's when the
 * replacement copies every concurrency state as it reads (the permits
 * held stay releasable), else 0 (a new epoch: the permits of t are no
 * longer held anywhere). */
uint64_t tk_permit_epoch_after(const struct tkshm_table *t,
			       const tkshm_policy *policy);

#endif /* TKSHM_API_LIFE_CHANGE_H */
