/*
 * strict_args.h - the ARGV of each strict script, in ThrottleKit's order
 * (docs/semantics.md, "Scripts, ARGV and state encodings"): numbers as
 * canonical decimal strings (%.17g,
 * integers without exponent), so Lua's tonumber reads back the exact
 * double.
 */
#ifndef TKSHM_REDIS_STRICT_ARGS_H
#define TKSHM_REDIS_STRICT_ARGS_H

#include "redis/conn.h"
#include "shm/table.h"

#define TK_ARGS_MAX 8

struct tk_argv {
	char buf[TK_ARGS_MAX][40];
	const char *v[TK_ARGS_MAX];
	size_t len[TK_ARGS_MAX];
	struct tk_args args;
};

/* The check script of the table's kind and its ARGV for (now, cost); a
 * `now` of 0 asks for the server's TIME. */
enum tk_script_id tk_strict_args(const struct tkshm_table *t, double now,
				 double cost, struct tk_argv *a);

/* read.lua's ARGV (now, type) for the table's kind. */
void tk_strict_read_args(const struct tkshm_table *t, double now,
			 struct tk_argv *a);

#endif /* TKSHM_REDIS_STRICT_ARGS_H */
