# Writes OUT, a C file defining one string per Lua script in LUA_FILES
# (`const char tk_lua_<basename>[]`), so the scripts ship inside the
# library byte for byte as they are in src/redis/lua/.
#   cmake -DOUT=... -DLUA_FILES="a.lua;b.lua" -P embed-lua.cmake
set(body "/* Generated from src/redis/lua/ by cmake/embed-lua.cmake. */\n")
foreach(f IN LISTS LUA_FILES)
	get_filename_component(name "${f}" NAME_WE)
	file(READ "${f}" text HEX)
	string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${text}")
	string(APPEND body "const char tk_lua_${name}[] = {${bytes}0x00};\n")
endforeach()
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
