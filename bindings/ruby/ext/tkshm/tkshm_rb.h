/* The tkshm gem's C extension: what its files share.
 *
 *   module.c  Init_tkshm, Tkshm::Error and its codes, Tkshm::Decision,
 *             Tkshm.headers and Tkshm.client_key
 *   table.c   Tkshm::Table
 *   redis.c   Tkshm::Redis (strict tables' connection) */
#ifndef TKSHM_RB_H
#define TKSHM_RB_H

#include <ruby.h>

#include <tkshm.h>
#include <tkshm_http.h>
#ifdef TKSHM_RB_HAVE_REDIS
#include <tkshm_redis.h>
#else
typedef struct tkshm_redis tkshm_redis;
#endif

extern VALUE tkshm_rb_mTkshm;
extern VALUE tkshm_rb_cDecision;

/* Raises the Tkshm::Error subclass of `code` (a negative tkshm_error),
 * with `detail` (or the library's sentence) as its message. */
NORETURN(void tkshm_rb_raise(int code, const char *detail));
/* A frozen Tkshm::Decision of `d`. */
VALUE tkshm_rb_decision_new(const tkshm_decision *d);
/* A Tkshm::Decision's fields back into *out (TypeError for another object). */
void tkshm_rb_decision_get(VALUE decision, tkshm_decision *out);

void tkshm_rb_init_table(VALUE mTkshm);
void tkshm_rb_init_redis(VALUE mTkshm);
void tkshm_rb_init_multi(VALUE mTkshm);

#endif
