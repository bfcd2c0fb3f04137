/*
 * scripts.h - the Redis Lua scripts of the strict and lease modes.
 *
 * The scripts are ours, written from ThrottleKit's wire contract
 * (docs/semantics.md, "Wire contract"): the same key
 * names, state encodings, ARGV order and `now = 0` meaning "use the
 * server's TIME", so a tkshm host and a ThrottleKit service share one key.
 * Each lives in src/redis/lua/<name>.lua and is embedded at build time as
 * `tk_lua_<name>` (cmake/embed-lua.cmake): `local SCRIPT_NAME = '<name>'`,
 * src/redis/lua/prelude.lib (the helpers the scripts share), then the
 * file, so each source is self-contained, as EVALSHA needs.
 *
 * Every check script replies
 *   { allowed, limit, remaining, resetAt, retryAfterMs,   -- ThrottleKit's
 *     now,                                                -- the ms used
 *     state... }                                          -- bulk strings
 * where `state...` is the key's state after the decision, in its Redis
 * encoding (state_codec.h turns it into the table's state words, for the
 * negative cache).  The first five are ThrottleKit's reply, unchanged.
 */
#ifndef TKSHM_REDIS_SCRIPTS_H
#define TKSHM_REDIS_SCRIPTS_H

enum tk_script_id {
	TK_SCRIPT_GCRA,		  /* gcra.check */
	TK_SCRIPT_TOKEN_BUCKET,	  /* tokenBucket.check */
	TK_SCRIPT_FIXED_WINDOW,	  /* fixedWindow.check */
	TK_SCRIPT_SLIDING_WINDOW, /* slidingWindow.check */
	TK_SCRIPT_SLIDING_LOG,	  /* slidingWindowLog.check */
	TK_SCRIPT_QUOTA,	/* quota check (calendar and fixed cadences) */
	TK_SCRIPT_LEAKY,	/* leaky bucket reserve */
	TK_SCRIPT_MULTI,	/* multi-dimensional all/any */
	TK_SCRIPT_READ,		/* a key's state and the server's now */
	TK_SCRIPT_LEASE_GCRA,	/* lease mode: tokens from a GCRA key */
	TK_SCRIPT_LEASE_WINDOW, /* lease mode: units of a fixed window */
	TK_SCRIPT_HOSTS,	/* a host's heartbeat; the live host count */
	TK_SCRIPT_COUNT
};

/* The script's Lua source (NUL-terminated) and its file name. */
const char *tk_script_source(enum tk_script_id id);
const char *tk_script_name(enum tk_script_id id);

#endif /* TKSHM_REDIS_SCRIPTS_H */
