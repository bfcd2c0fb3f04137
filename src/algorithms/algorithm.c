/*
 * algorithm.c - from a public policy to an algorithm's derived constants.
 */
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithm.h"

int
tk_algo_init(struct tk_algo *a, const tkshm_policy *p, char *err,
	     size_t err_len)
{
	struct tk_algo tmp;

	memset(&tmp, 0, sizeof tmp);
	switch (p->kind) {
	case TKSHM_KIND_GCRA: {
		int rc = tk_gcra_init(&tmp.u.gcra, p->u.gcra.limit,
				      p->u.gcra.period_ms, p->u.gcra.burst, err,
				      err_len);
		if (rc != TKSHM_OK)
			return rc;
		tmp.kind = TKSHM_KIND_GCRA;
		*a = tmp;
		return TKSHM_OK;
	}
	}
	if (err && err_len)
		snprintf(err, err_len, "unknown policy kind %d", (int)p->kind);
	return TKSHM_EPOLICY;
}
