# Writes OUT, a C file defining one string per Lua script in LUA_FILES
# (`const char tk_lua_<basename>[]`).  Each is the script as Redis loads
# it, self-contained (a Redis script cannot import another):
#   local SCRIPT_NAME = '<basename>'
#   PRELUDE (src/redis/lua/prelude.lib: the helpers the scripts share)
#   the script's file, byte for byte
#   cmake -DOUT=... -DPRELUDE=prelude.lib -DLUA_FILES="a.lua;b.lua" \
#         -P embed-lua.cmake
file(READ "${PRELUDE}" prelude HEX)
if(NOT prelude MATCHES "0a$")
	message(FATAL_ERROR "${PRELUDE} must end with a newline")
endif()
set(body "/* Generated from src/redis/lua/ by cmake/embed-lua.cmake. */\n")
foreach(f IN LISTS LUA_FILES)
	get_filename_component(name "${f}" NAME_WE)
	string(HEX "local SCRIPT_NAME = '${name}'\n" head)
	file(READ "${f}" text HEX)
	string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes
		"${head}${prelude}${text}")
	string(APPEND body "const char tk_lua_${name}[] = {${bytes}0x00};\n")
endforeach()
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
