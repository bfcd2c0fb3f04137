/* A Tkshm::Redis's connection, shared by the Ruby object and every table
 * attached to it: reference-counted, so that whichever the GC frees last
 * closes it, and locked for one exchange at a time (a tkshm_redis is one
 * thread's at a time). */
#ifndef TKSHM_RB_REDIS_CONN_H
#define TKSHM_RB_REDIS_CONN_H

#include "tkshm_rb.h"

typedef struct rb_redis_conn rb_redis_conn;

/* The connection of a Tkshm::Redis (TypeError for another object). */
rb_redis_conn *tkshm_rb_redis_conn(VALUE redis);
void tkshm_rb_redis_conn_retain(rb_redis_conn *c);
void tkshm_rb_redis_conn_release(rb_redis_conn *c);
tkshm_redis *tkshm_rb_redis_conn_handle(rb_redis_conn *c);
/* Callable without the GVL; NULL is ignored. */
void tkshm_rb_redis_conn_lock(rb_redis_conn *c);
void tkshm_rb_redis_conn_unlock(rb_redis_conn *c);

/* A table as multi.c uses it: its handle, its connection (or NULL) and
 * the count of its calls running without the GVL. */
typedef struct {
	tkshm_table *table;
	rb_redis_conn *redis;
	int *inflight;
} tkshm_rb_table_ref;

tkshm_rb_table_ref tkshm_rb_table_ref_of(VALUE table);

#endif
