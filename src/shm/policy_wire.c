/*
 * policy_wire.c - a policy's stored form in a segment (shm/layout.h's
 * tk_policy_wire and tk_global_wire) and back; the header (segment.c) and
 * the in-place policy records (life.c) store it.
 */
#include <string.h>

#include "shm/layout.h"
#include "shm/policy_wire.h"

/* Every kind's parameters are doubles laid over the union's reserved
 * array (tkshm.h), stored in that order. */
_Static_assert(sizeof(((tkshm_policy *)0)->u) ==
		       TK_POLICY_PARAMS * sizeof(double),
	       "the policy union is the wire's parameter array");

void
tk_policy_wire_of(const tkshm_policy *p, struct tk_policy_wire *w,
		  struct tk_global_wire *gw)
{
	memset(w, 0, sizeof *w);
	w->kind = (uint32_t)p->kind;
	memcpy(w->p, p->u.reserved, sizeof w->p);
	memset(gw, 0, sizeof *gw);
	gw->mode = (uint32_t)p->global.mode;
	gw->failure = (uint32_t)p->global.failure;
	gw->hosts = p->global.hosts;
	gw->lease_ms = p->global.lease_ms;
	memcpy(gw->prefix, p->global.prefix, sizeof gw->prefix);
	gw->prefix[TKSHM_PREFIX_MAX] = '\0';
}

/* The stored policy.  Values are not trusted here: tk_algo_init validates
 * them (an unterminated prefix or an unknown mode is refused there). */
void
tk_policy_unwire(const struct tk_policy_wire *w,
		 const struct tk_global_wire *gw, tkshm_policy *p)
{
	memset(p, 0, sizeof *p);
	p->kind = (tkshm_kind)w->kind;
	memcpy(p->u.reserved, w->p, sizeof w->p);
	p->global.mode = (tkshm_global_mode)gw->mode;
	p->global.failure = (tkshm_failure_policy)gw->failure;
	p->global.hosts = gw->hosts;
	p->global.lease_ms = gw->lease_ms;
	memcpy(p->global.prefix, gw->prefix, sizeof p->global.prefix);
}
