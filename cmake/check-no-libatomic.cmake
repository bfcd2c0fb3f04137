# Fails when a built tkshm library does not inline its 16-byte
# compare-and-swap: a call to __atomic_*_16 / __sync_*_16 (which libatomic
# may implement with a lock, which is not shared across processes) or a
# dependency on libatomic.
#
#   cmake -DLIB=<path to libtkshm.so> [-DOBJDUMP=objdump] [-DREADELF=readelf]
#         -P check-no-libatomic.cmake
#
# On failure the library file is removed so that the next build relinks it
# and runs this check again.

if(NOT LIB)
	message(FATAL_ERROR "check-no-libatomic: pass -DLIB=<library>")
endif()
if(NOT EXISTS "${LIB}")
	message(FATAL_ERROR "check-no-libatomic: ${LIB} does not exist")
endif()

if(NOT OBJDUMP OR NOT EXISTS "${OBJDUMP}")
	find_program(OBJDUMP NAMES objdump llvm-objdump)
endif()
if(NOT READELF OR NOT EXISTS "${READELF}")
	find_program(READELF NAMES readelf llvm-readelf)
endif()
if(NOT OBJDUMP)
	message(STATUS
		"check-no-libatomic: objdump not found, skipping the check")
	return()
endif()

set(problems "")

# Every call site (through the PLT or not) and every dynamic symbol.
execute_process(COMMAND "${OBJDUMP}" -d -T "${LIB}"
	OUTPUT_VARIABLE dump
	ERROR_VARIABLE dump_err
	RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR
		"check-no-libatomic: ${OBJDUMP} failed (${rc}): ${dump_err}")
endif()
string(REGEX MATCHALL "__(atomic|sync)_[a-z_]+_16" calls "${dump}")
if(calls)
	list(REMOVE_DUPLICATES calls)
	list(JOIN calls ", " calls)
	string(APPEND problems "  references ${calls}\n")
endif()

# A libatomic dependency (DT_NEEDED).
if(READELF)
	execute_process(COMMAND "${READELF}" -d "${LIB}"
		OUTPUT_VARIABLE dyn
		RESULT_VARIABLE rc)
else()
	execute_process(COMMAND "${OBJDUMP}" -p "${LIB}"
		OUTPUT_VARIABLE dyn
		RESULT_VARIABLE rc)
endif()
if(dyn MATCHES "libatomic")
	string(APPEND problems "  depends on libatomic (DT_NEEDED)\n")
endif()

if(problems)
	file(REMOVE "${LIB}")
	message(FATAL_ERROR
		"check-no-libatomic: ${LIB} does not inline its 16-byte CAS:\n"
		"${problems}"
		"Use __sync_bool_compare_and_swap on unsigned __int128 (or "
		"inline lock cmpxchg16b) and build with -mcx16; gcc sends "
		"16-byte __atomic_* builtins to libatomic even with -mcx16.\n"
		"(The library was removed so the next build checks again.)")
endif()

message(STATUS "check-no-libatomic: ${LIB}: 16-byte CAS inlined, "
	"no libatomic")
