/*
 * route.c - where a check of a non-local table goes (route.h).
 */
#include "global/lease_check.h"
#include "global/route.h"

int
tk_global_check(struct tkshm_table *t, const void *key, size_t len, double cost,
		double now, tkshm_decision *out)
{
	if (t->readonly)
		return TKSHM_EREADONLY;
	if (t->policy.global.mode == TKSHM_MODE_LEASE)
		return tk_lease_check(t, key, len, cost, now, out);
	if (!t->strict)
		return TKSHM_ENOREDIS;
	return t->strict->check(t, key, len, cost, now, out);
}

int
tk_global_peek(struct tkshm_table *t, const void *key, size_t len, double now,
	       tkshm_decision *out)
{
	/* A lease table's peek reads its credits (lease.h). */
	if (t->policy.global.mode == TKSHM_MODE_LEASE)
		return tk_table_peek(t, key, len, now, out);
	if (!t->strict)
		return TKSHM_ENOREDIS;
	return t->strict->peek(t, key, len, now, out);
}

int
tk_global_reserve(struct tkshm_table *t, const void *key, size_t len,
		  double cost, double now, tkshm_reservation *out)
{
	if (t->readonly)
		return TKSHM_EREADONLY;
	if (!t->strict)
		return TKSHM_ENOREDIS;
	return t->strict->reserve(t, key, len, cost, now, out);
}
