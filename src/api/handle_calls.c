/*
 * handle_calls.c - the public calls that take a table handle: each runs
 * its body (api_calls.h) on the instance the handle is on (handle.h).
 */
#include "api/api_calls.h"
#include "api/check_fast.h"
#include "api/handle.h"

/* tkshm_check_at when its fast path does not apply (check_fast.h). */
static __attribute__((noinline)) int
tk_check_at_full(tkshm_table *h, const void *key, size_t key_len, double cost,
		 double now_ms, tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_check_at(t, key, key_len, cost, now_ms, out));
}

/* flatten: the key's hash is inlined too (XXH_INLINE_ALL leaves that to
 * the compiler, which does not when a file hashes in more than one place). */
__attribute__((flatten)) int
tkshm_check_at(tkshm_table *h, const void *key, size_t key_len, double cost,
	       double now_ms, tkshm_decision *out)
{
	/* As TK_HANDLE_CALL's first step, with the call's body inline. */
	if (__builtin_expect(h && tk_on_itself(h), 1)) {
		int rc = tk_check_at_fast(h, key, key_len, cost, now_ms, out);

		if (__builtin_expect(rc != TK_NOT_FAST && rc != TK_EMOVED, 1))
			return rc;
	}
	return tk_check_at_full(h, key, key_len, cost, now_ms, out);
}

/* tkshm_check when its fast path does not apply (check_fast.h). */
static __attribute__((noinline)) int
tk_check_full(tkshm_table *h, const void *key, size_t key_len, double cost,
	      tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_check(t, key, key_len, cost, out));
}

__attribute__((flatten)) int
tkshm_check(tkshm_table *h, const void *key, size_t key_len, double cost,
	    tkshm_decision *out)
{
	/* As tkshm_check_at. */
	if (__builtin_expect(h && tk_on_itself(h), 1)) {
		int rc = tk_check_fast(h, key, key_len, cost, out);

		if (__builtin_expect(rc != TK_NOT_FAST && rc != TK_EMOVED, 1))
			return rc;
	}
	return tk_check_full(h, key, key_len, cost, out);
}

int
tkshm_key_hash(const tkshm_table *h, const void *key, size_t key_len,
	       tkshm_key *out)
{
	TK_HANDLE_CALL((tkshm_table *)h, tk_api_key_hash(t, key, key_len, out));
}

int
tkshm_check_hashed_at(tkshm_table *h, const tkshm_key *key, double cost,
		      double now_ms, tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_check_hashed_at(t, key, cost, now_ms, out));
}

int
tkshm_check_hashed(tkshm_table *h, const tkshm_key *key, double cost,
		   tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_check_hashed(t, key, cost, out));
}

int
tkshm_check_many_at(tkshm_table *h, const tkshm_request *reqs, size_t n,
		    double now_ms, tkshm_decision *out, size_t *done)
{
	if (done)
		*done = 0;
	TK_HANDLE_CALL(h, tk_api_check_many_at(t, reqs, n, now_ms, out, done));
}

int
tkshm_check_many(tkshm_table *h, const tkshm_request *reqs, size_t n,
		 tkshm_decision *out, size_t *done)
{
	if (done)
		*done = 0;
	TK_HANDLE_CALL(h, tk_api_check_many(t, reqs, n, out, done));
}

int
tkshm_peek_at(tkshm_table *h, const void *key, size_t key_len, double now_ms,
	      tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_peek_at(t, key, key_len, now_ms, out));
}

int
tkshm_peek(tkshm_table *h, const void *key, size_t key_len, tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_peek(t, key, key_len, out));
}

int
tkshm_forecast_at(tkshm_table *h, const void *key, size_t key_len, double cost,
		  double now_ms, tkshm_forecast *out)
{
	TK_HANDLE_CALL(h,
		       tk_api_forecast_at(t, key, key_len, cost, now_ms, out));
}

int
tkshm_forecast_get(tkshm_table *h, const void *key, size_t key_len, double cost,
		   tkshm_forecast *out)
{
	TK_HANDLE_CALL(h, tk_api_forecast_get(t, key, key_len, cost, out));
}

int
tkshm_reset(tkshm_table *h, const void *key, size_t key_len)
{
	TK_HANDLE_CALL(h, tk_api_reset(t, key, key_len));
}

int
tkshm_reserve_at(tkshm_table *h, const void *key, size_t key_len, double cost,
		 double now_ms, tkshm_reservation *out)
{
	TK_HANDLE_CALL(h,
		       tk_api_reserve_at(t, key, key_len, cost, now_ms, out));
}

int
tkshm_reserve(tkshm_table *h, const void *key, size_t key_len, double cost,
	      tkshm_reservation *out)
{
	TK_HANDLE_CALL(h, tk_api_reserve(t, key, key_len, cost, out));
}

int
tkshm_schedule_at(tkshm_table *h, const void *key, size_t key_len, double cost,
		  double now_ms, tkshm_reservation *out)
{
	TK_HANDLE_CALL(h,
		       tk_api_schedule_at(t, key, key_len, cost, now_ms, out));
}

int
tkshm_schedule(tkshm_table *h, const void *key, size_t key_len, double cost,
	       tkshm_reservation *out)
{
	TK_HANDLE_CALL(h, tk_api_schedule(t, key, key_len, cost, out));
}

int
tkshm_acquire_at(tkshm_table *h, const void *key, size_t key_len, double now_ms,
		 tkshm_permit *permit, tkshm_decision *out)
{
	TK_HANDLE_CALL(h,
		       tk_api_acquire_at(t, key, key_len, now_ms, permit, out));
}

int
tkshm_acquire(tkshm_table *h, const void *key, size_t key_len,
	      tkshm_permit *permit, tkshm_decision *out)
{
	TK_HANDLE_CALL(h, tk_api_acquire(t, key, key_len, permit, out));
}

int
tkshm_release_at(tkshm_table *h, tkshm_permit *permit, double now_ms,
		 tkshm_outcome outcome)
{
	TK_HANDLE_CALL(h, tk_api_release_at(t, permit, now_ms, outcome));
}

int
tkshm_release(tkshm_table *h, tkshm_permit *permit, tkshm_outcome outcome)
{
	TK_HANDLE_CALL(h, tk_api_release(t, permit, outcome));
}

int
tkshm_reap(tkshm_table *h, uint64_t *reaped)
{
	TK_HANDLE_CALL(h, tk_api_reap(t, reaped));
}

int
tkshm_stats_get(tkshm_table *h, tkshm_stats *out)
{
	TK_HANDLE_CALL(h, tk_api_stats_get(t, out));
}

int
tkshm_usage_get(tkshm_table *h, double now_ms, tkshm_usage *out)
{
	TK_HANDLE_CALL(h, tk_api_usage_get(t, now_ms, out));
}

int
tkshm_entry_next_at(tkshm_table *h, uint64_t *cursor, double now_ms,
		    tkshm_entry *out)
{
	TK_HANDLE_CALL(h, tk_api_entry_next_at(t, cursor, now_ms, out));
}

int
tkshm_entry_get_at(tkshm_table *h, const void *key, size_t key_len,
		   double now_ms, tkshm_entry *out)
{
	TK_HANDLE_CALL(h, tk_api_entry_get_at(t, key, key_len, now_ms, out));
}

int
tkshm_set_remaining_at(tkshm_table *h, const void *key, size_t key_len,
		       double remaining, double now_ms)
{
	TK_HANDLE_CALL(
		h, tk_api_set_remaining_at(t, key, key_len, remaining, now_ms));
}

int
tkshm_block_at(tkshm_table *h, const void *key, size_t key_len, double until_ms,
	       double now_ms)
{
	TK_HANDLE_CALL(h, tk_api_block_at(t, key, key_len, until_ms, now_ms));
}

int
tkshm_verify(tkshm_table *h, tkshm_problem_fn fn, void *ctx, uint64_t *problems)
{
	TK_HANDLE_CALL(h, tk_api_verify(t, fn, ctx, problems));
}

#ifdef TKSHM_HAVE_REDIS
int
tkshm_redis_attach(tkshm_table *h, tkshm_redis *r)
{
	TK_HANDLE_CALL(h, tk_api_redis_attach(t, r));
}

int
tkshm_redis_key(const tkshm_table *h, const void *key, size_t key_len,
		char *buf, size_t len)
{
	TK_HANDLE_CALL((tkshm_table *)h,
		       tk_api_redis_key(t, key, key_len, buf, len));
}

#endif
