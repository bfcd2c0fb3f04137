/*
 * cross_host.c - the cross-host part of a policy checked against its kind
 * (cross_host.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/cross_host.h"
#include "algorithms/param_check.h"

static bool
tk_prefix_char(int c)
{
	return isalnum(c) || strchr("_-.:{}", c) != NULL;
}

int
tk_cross_host_validate(const tkshm_policy *p, char *err, size_t err_len)
{
	const tkshm_global *g = &p->global;
	size_t n;

	if ((unsigned)g->mode > TKSHM_MODE_LEASE) {
		TK_ERR("mode %d is not local (0), strict (1) or lease (2)",
		       (int)g->mode);
		return TKSHM_EPOLICY;
	}
	if (g->mode == TKSHM_MODE_LOCAL)
		return TKSHM_OK; /* the rest is not read */
	if ((unsigned)g->failure > TKSHM_FAILURE_CLOSED) {
		TK_ERR("failure %d is not safe-share (0), fail-open (1) or "
		       "fail-closed (2)",
		       (int)g->failure);
		return TKSHM_EPOLICY;
	}
	if (!(g->hosts >= 1 && g->hosts <= TK_CROSS_HOST_MAX_HOSTS) ||
	    g->hosts != floor(g->hosts)) {
		TK_ERR("hosts must be an integer 1..%.0f (got %g)",
		       TK_CROSS_HOST_MAX_HOSTS, g->hosts);
		return TKSHM_EPOLICY;
	}
	n = strnlen(g->prefix, sizeof g->prefix);
	if (n == sizeof g->prefix) {
		TK_ERR("prefix is longer than %d bytes", TKSHM_PREFIX_MAX);
		return TKSHM_EPOLICY;
	}
	for (size_t i = 0; i < n; i++)
		if (!tk_prefix_char((unsigned char)g->prefix[i])) {
			TK_ERR("prefix: character %zu is not a letter, digit "
			       "or one of _ - . : { }",
			       i + 1);
			return TKSHM_EPOLICY;
		}
	/* Checked in strict mode too, which does not read it: every non-local
	 * policy formats it, and what is formatted must parse back. */
	if (!(g->lease_ms > 0 && g->lease_ms <= TK_CROSS_HOST_MAX_LEASE_MS)) {
		TK_ERR("leaseMs must be > 0 and at most %.0f (got %g)",
		       TK_CROSS_HOST_MAX_LEASE_MS, g->lease_ms);
		return TKSHM_EPOLICY;
	}
	if (g->mode == TKSHM_MODE_STRICT) {
		switch (p->kind) {
		case TKSHM_KIND_GCRA:
		case TKSHM_KIND_TOKEN_BUCKET:
		case TKSHM_KIND_FIXED_WINDOW:
		case TKSHM_KIND_SLIDING_WINDOW:
		case TKSHM_KIND_SLIDING_LOG:
		case TKSHM_KIND_QUOTA:
		case TKSHM_KIND_LEAKY_BUCKET:
			return TKSHM_OK;
		default:
			TK_ERR("mode=strict: ThrottleKit runs no Redis script "
			       "for this kind (strict takes gcra, "
			       "tokenBucket, fixedWindow, slidingWindow, "
			       "slidingWindowLog, quota, leakyBucket)");
			return TKSHM_EPOLICY;
		}
	}
	if (p->kind != TKSHM_KIND_GCRA && p->kind != TKSHM_KIND_FIXED_WINDOW) {
		TK_ERR("mode=lease takes gcra (token leases) or fixedWindow "
		       "(window-coupled leases)");
		return TKSHM_EPOLICY;
	}
	return TKSHM_OK;
}
