/*
 * conf_wire.h - the Redis conformance tests' bridge between a shared-memory
 * table and our Lua scripts (src/redis/lua/).
 *
 * A test drives one timeline through both paths: tkshm_check_at (or
 * tkshm_reserve_at) on an anonymous local table, and the table's check
 * script through tk_conn_eval with the same explicit now and cost, the
 * arguments built from the table's own policy in ThrottleKit's ARGV order.
 * The state each path holds afterwards is read back as state words: the
 * table's through its internal lookup, Redis's through the state codec
 * (the script's reply, read.lua, or the plain read command of the key's
 * encoding).  Every helper fails the running cmocka test on an error.
 */
#ifndef TKSHM_TEST_CONF_WIRE_H
#define TKSHM_TEST_CONF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "test_support.h"
#include "redis_server.h"
#include "redis/conn.h"
#include "redis/state_codec.h"
#include "shm/table.h"

/* A private redis-server and one connection to it. */
struct conf_redis {
	struct tkt_redis srv;
	struct tk_conn *conn;
	/* Timelines on an explicit clock: after each script, the keys'
	 * TTLs (set in simulated ms) are removed, so that real time passing
	 * between two steps cannot expire a state the simulated clock still
	 * holds.  The TTLs themselves are checked by test_redis_golden. */
	bool persist;
};

void conf_redis_up(struct conf_redis *r);
void conf_redis_down(struct conf_redis *r);

/* The arguments of one script call, as strings. */
#define CONF_ARGS_MAX 96
struct conf_args {
	int n;
	char buf[CONF_ARGS_MAX][TK_ARG_F64_LEN];
	const char *v[CONF_ARGS_MAX];
	size_t len[CONF_ARGS_MAX];
};

/* Empties a. */
void conf_args_init(struct conf_args *a);
/* Appends v as tk_arg_f64 writes it. */
void conf_args_f64(struct conf_args *a, double v);
/* Appends a string (copied; at most TK_ARG_F64_LEN - 1 bytes). */
void conf_args_str(struct conf_args *a, const char *s);

/* The check (or, for leakyBucket, reserve) script of policy `p` and its
 * ARGV for (now, cost), in ThrottleKit's order. */
enum tk_script_id conf_check_args(const tkshm_policy *p, double now,
				  double cost, struct conf_args *a);

/* EVALSHA of script `id` on `nkeys` keys; fails the test unless Redis
 * answered without an error.  The caller frees the reply. */
redisReply *conf_eval(struct conf_redis *r, enum tk_script_id id,
		      const char *const *keys, int nkeys,
		      const struct conf_args *a);

/* A state as state words: what the table or Redis holds for a key. */
struct conf_state {
	bool present;
	uint64_t w[TK_ALGO_MAX_WORDS];
};

/* Decodes a state listing for table t's algorithm; fails the test unless
 * the codec accepts it. */
void conf_decode(const tkshm_table *t, const redisReply *const *elems, size_t n,
		 struct conf_state *st);

/* One check of `key` through the table's check script: the decision, the
 * integer now the script reports and the state after, decoded. */
void conf_redis_check(struct conf_redis *r, const tkshm_table *t,
		      const char *key, double now, double cost,
		      tkshm_decision *d, int64_t *now_ms,
		      struct conf_state *st);

/* One reservation of `key` through leaky.lua. */
void conf_redis_reserve(struct conf_redis *r, const tkshm_table *t,
			const char *key, double now, double cost,
			tkshm_reservation *res, int64_t *now_ms,
			struct conf_state *st);

/* The key's state in the table (its REAL slot's, through the internal
 * lookup); absent when the table holds no state for it. */
void conf_shm_state(tkshm_table *t, const char *key, struct conf_state *st);

/* A sliding-log state as Redis keeps it after a decision at `now`: the
 * stamps that decision prunes removed (Redis's script trims them whatever
 * it decides, as ThrottleKit's does; the table writes nothing on a
 * denial, and they decide nothing there).  Other kinds: unchanged. */
void conf_log_pruned(const tkshm_table *t, double now, struct conf_state *st);

/* The key's state read with the plain command of its encoding (GET,
 * HMGET t l, HMGET s c, HGETALL, ZRANGE 0 -1 WITHSCORES), decoded. */
void conf_redis_raw_state(struct conf_redis *r, const tkshm_table *t,
			  const char *key, struct conf_state *st);

/* The key's state and the server's now through read.lua. */
void conf_redis_read_state(struct conf_redis *r, const tkshm_table *t,
			   const char *key, double now, int64_t *now_ms,
			   struct conf_state *st);

/* Fails unless both states are absent, or both present with the same
 * words (all of the table's algo.words). */
void conf_assert_state(const char *what, const tkshm_table *t,
		       const struct conf_state *got,
		       const struct conf_state *want);

/* mulberry32, the PRNG of ThrottleKit's conformance tests: a uniform
 * double in [0, 1) per call. */
struct conf_rng {
	uint32_t s;
};
double conf_rng_next(struct conf_rng *r);

#endif
