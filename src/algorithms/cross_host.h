/*
 * cross_host.h - the cross-host part of a policy (tkshm_global) checked
 * against its kind: the modes' and failure policies' ranges, hosts,
 * leaseMs and prefix, and which kinds strict and lease mode take.
 *
 * A pure check of the public types, so that every path a policy enters
 * by validates it the same way, from below the store: tk_algo_init (a
 * policy given to open or apply, a policy string parsed by
 * api/policy*.c, and a stored policy read back from an untrusted
 * header, shm/segment.c and shm/life.c).  Reading and writing the part in
 * policy strings is api/policy_global.c's.
 */
#ifndef TKSHM_ALGORITHMS_CROSS_HOST_H
#define TKSHM_ALGORITHMS_CROSS_HOST_H

#include <stddef.h>

#include "tkshm.h"

/* The most hosts safe-share divides by, and the longest lease. */
#define TK_CROSS_HOST_MAX_HOSTS	   1000000.0
#define TK_CROSS_HOST_MAX_LEASE_MS 86400000.0

/* Checks the cross-host part against the kind.  TKSHM_OK or TKSHM_EPOLICY
 * with a sentence in err. */
int tk_cross_host_validate(const tkshm_policy *p, char *err, size_t err_len);

#endif /* TKSHM_ALGORITHMS_CROSS_HOST_H */
