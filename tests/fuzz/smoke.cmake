# A fuzz target's smoke test (ctest, label `fuzz`): runs every input of the
# corpora, then fuzzes for SECONDS.  New inputs go to WORK, emptied first,
# never to the committed corpus (libFuzzer writes to its first directory).
#
#   cmake -DFUZZER=bin -DWORK=dir -DCORPORA=dir;dir [-DDICT=file]
#         -DSECONDS=n -P smoke.cmake
foreach(var FUZZER WORK CORPORA SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "smoke.cmake: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(args -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
  -print_final_stats=1 "-artifact_prefix=${WORK}-")
if(DICT)
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND "${FUZZER}" ${args} "${WORK}" ${CORPORA}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "smoke.cmake: ${FUZZER} failed (${rc})")
endif()
