/*
 * shaper_api.c - the public calls of the shaper (tkshm_reserve,
 * tkshm_schedule) and tkshm_acquire, on table instances (api_calls.h):
 * the arguments' checks, then a local table's reservation in the table
 * (src/shaper/reserve.c) or a non-local table's by its route
 * (src/global/route.h).  The sleep and the permits are src/shaper/'s.
 */
#include <time.h>

#include "api/api_calls.h"
#include "global/route.h"
#include "shaper/reserve.h"
#include "shm/table.h"
#include "shm/validate.h"
#include "tkshm.h"

int
tk_api_reserve_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		  double now_ms, tkshm_reservation *out)
{
	struct tk_keyref k;
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK ||
	    (rc = tk_check_cost(t, cost)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK ||
	    (rc = tk_reserve_check_table(t)) != TKSHM_OK)
		return rc;
	if (tk_is_global(t))
		return tk_global_reserve(t, key, key_len, cost, now_ms, out);
	k = tk_keyref_of(t, key, key_len);
	return tk_reserve_ref(t, &k, cost, now_ms, out);
}

int
tk_api_reserve(tkshm_table *t, const void *key, size_t key_len, double cost,
	       tkshm_reservation *out)
{
	return tk_api_reserve_at(t, key, key_len, cost, tkshm_now_ms(), out);
}

int
tk_api_schedule_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		   double now_ms, tkshm_reservation *out)
{
	struct timespec start;
	int rc;

	/* The wait is measured from here: the departure is wait_ms after
	 * now_ms, and now_ms was read (by the caller, or by tkshm_schedule)
	 * no later than this, so this deadline is never before it. */
	if (clock_gettime(CLOCK_MONOTONIC, &start) != 0)
		return TKSHM_ESYSTEM;
	rc = tk_api_reserve_at(t, key, key_len, cost, now_ms, out);
	if (rc != TKSHM_OK || !out->accepted || !(out->wait_ms > 0))
		return rc;
	return tk_schedule_wait(start, out);
}

int
tk_api_schedule(tkshm_table *t, const void *key, size_t key_len, double cost,
		tkshm_reservation *out)
{
	return tk_api_schedule_at(t, key, key_len, cost, tkshm_now_ms(), out);
}

int
tk_api_acquire(tkshm_table *t, const void *key, size_t key_len,
	       tkshm_permit *permit, tkshm_decision *out)
{
	return tk_api_acquire_at(t, key, key_len, tkshm_now_ms(), permit, out);
}
