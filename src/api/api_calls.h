/*
 * api_calls.h - the public calls' bodies, which run on a table instance.
 *
 * Each public call that takes a tkshm_table is a wrapper (handle_calls.c)
 * that finds the instance the handle is on, following a change of the
 * table first (src/api/handle.h), and calls its body here.  A body that
 * finds the table replaced under it returns TK_EMOVED and runs again on
 * the replacement.
 */
#ifndef TKSHM_API_API_CALLS_H
#define TKSHM_API_API_CALLS_H

#include "tkshm.h"
#include "tkshm_redis.h"

struct tkshm_table;

int tk_api_check_at(struct tkshm_table *t, const void *key, size_t key_len, double cost, double now_ms, tkshm_decision *out);
int tk_api_check(struct tkshm_table *t, const void *key, size_t key_len, double cost, tkshm_decision *out);
int tk_api_key_hash(const struct tkshm_table *t, const void *key, size_t key_len, tkshm_key *out);
int tk_api_check_hashed_at(struct tkshm_table *t, const tkshm_key *key, double cost, double now_ms, tkshm_decision *out);
int tk_api_check_hashed(struct tkshm_table *t, const tkshm_key *key, double cost, tkshm_decision *out);
int tk_api_check_many_at(struct tkshm_table *t, const tkshm_request *reqs, size_t n, double now_ms, tkshm_decision *out, size_t *done);
int tk_api_check_many(struct tkshm_table *t, const tkshm_request *reqs, size_t n, tkshm_decision *out, size_t *done);
int tk_api_peek_at(struct tkshm_table *t, const void *key, size_t key_len, double now_ms, tkshm_decision *out);
int tk_api_peek(struct tkshm_table *t, const void *key, size_t key_len, tkshm_decision *out);
int tk_api_forecast_at(struct tkshm_table *t, const void *key, size_t key_len, double cost, double now_ms, tkshm_forecast *out);
int tk_api_forecast_get(struct tkshm_table *t, const void *key, size_t key_len, double cost, tkshm_forecast *out);
int tk_api_reset(struct tkshm_table *t, const void *key, size_t key_len);
int tk_api_reserve_at(struct tkshm_table *t, const void *key, size_t key_len, double cost, double now_ms, tkshm_reservation *out);
int tk_api_reserve(struct tkshm_table *t, const void *key, size_t key_len, double cost, tkshm_reservation *out);
int tk_api_schedule_at(struct tkshm_table *t, const void *key, size_t key_len, double cost, double now_ms, tkshm_reservation *out);
int tk_api_schedule(struct tkshm_table *t, const void *key, size_t key_len, double cost, tkshm_reservation *out);
int tk_api_acquire_at(struct tkshm_table *t, const void *key, size_t key_len, double now_ms, tkshm_permit *permit, tkshm_decision *out);
int tk_api_acquire(struct tkshm_table *t, const void *key, size_t key_len, tkshm_permit *permit, tkshm_decision *out);
int tk_api_release_at(struct tkshm_table *t, tkshm_permit *permit, double now_ms, tkshm_outcome outcome);
int tk_api_release(struct tkshm_table *t, tkshm_permit *permit, tkshm_outcome outcome);
int tk_api_reap(struct tkshm_table *t, uint64_t *reaped);
int tk_api_stats_get(struct tkshm_table *t, tkshm_stats *out);
int tk_api_usage_get(struct tkshm_table *t, double now_ms, tkshm_usage *out);
int tk_api_entry_next_at(struct tkshm_table *t, uint64_t *cursor, double now_ms, tkshm_entry *out);
int tk_api_entry_get_at(struct tkshm_table *t, const void *key, size_t key_len, double now_ms, tkshm_entry *out);
int tk_api_set_remaining_at(struct tkshm_table *t, const void *key, size_t key_len, double remaining, double now_ms);
int tk_api_block_at(struct tkshm_table *t, const void *key, size_t key_len, double until_ms, double now_ms);
int tk_api_verify(struct tkshm_table *t, tkshm_problem_fn fn, void *ctx, uint64_t *problems);
#ifdef TKSHM_HAVE_REDIS
int tk_api_redis_attach(struct tkshm_table *t, tkshm_redis *r);
int tk_api_redis_key(const struct tkshm_table *t, const void *key, size_t key_len, char *buf, size_t len);
#endif

#endif /* TKSHM_API_API_CALLS_H */
