/*
 * scripts.c - the embedded Lua sources (src/redis/lua/, turned into
 * `tk_lua_<name>` strings by cmake/embed-lua.cmake) by script id.
 *
 * Each script documents its KEYS, ARGV and reply layout at its top; the
 * check scripts share the layout described in scripts.h.
 */
#include <stddef.h>

#include "redis/scripts.h"

extern const char tk_lua_gcra[];
extern const char tk_lua_token_bucket[];
extern const char tk_lua_fixed_window[];
extern const char tk_lua_sliding_window[];
extern const char tk_lua_sliding_log[];
extern const char tk_lua_quota[];
extern const char tk_lua_leaky[];
extern const char tk_lua_multi[];
extern const char tk_lua_read[];
extern const char tk_lua_lease_gcra[];
extern const char tk_lua_lease_window[];
extern const char tk_lua_hosts[];

static const struct {
	const char *source;
	const char *name;
} tk_scripts[TK_SCRIPT_COUNT] = {
	[TK_SCRIPT_GCRA] = { tk_lua_gcra, "gcra.lua" },
	[TK_SCRIPT_TOKEN_BUCKET] = { tk_lua_token_bucket, "token_bucket.lua" },
	[TK_SCRIPT_FIXED_WINDOW] = { tk_lua_fixed_window, "fixed_window.lua" },
	[TK_SCRIPT_SLIDING_WINDOW] = { tk_lua_sliding_window,
				       "sliding_window.lua" },
	[TK_SCRIPT_SLIDING_LOG] = { tk_lua_sliding_log, "sliding_log.lua" },
	[TK_SCRIPT_QUOTA] = { tk_lua_quota, "quota.lua" },
	[TK_SCRIPT_LEAKY] = { tk_lua_leaky, "leaky.lua" },
	[TK_SCRIPT_MULTI] = { tk_lua_multi, "multi.lua" },
	[TK_SCRIPT_READ] = { tk_lua_read, "read.lua" },
	[TK_SCRIPT_LEASE_GCRA] = { tk_lua_lease_gcra, "lease_gcra.lua" },
	[TK_SCRIPT_LEASE_WINDOW] = { tk_lua_lease_window, "lease_window.lua" },
	[TK_SCRIPT_HOSTS] = { tk_lua_hosts, "hosts.lua" },
};

/* An id outside the enum gets NULL rather than a read past the table. */
const char *
tk_script_source(enum tk_script_id id)
{
	if ((unsigned)id >= TK_SCRIPT_COUNT)
		return NULL;
	return tk_scripts[id].source;
}

const char *
tk_script_name(enum tk_script_id id)
{
	if ((unsigned)id >= TK_SCRIPT_COUNT)
		return NULL;
	return tk_scripts[id].name;
}
