# Simulated hosts (tables, agents, workers) against one redis-server: the
# cross-host bounds of each mode, and lease mode under faults.  Serial:
# they measure admissions over time windows.
foreach(t IN ITEMS test_three_hosts test_lease_faults)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
    tkshm_add_redis_test(${t} SOURCES ${t}.c hosts_sim.c
      LABELS "process;serial" TIMEOUT 240)
    set_tests_properties(${t} PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()
# Leases and the safe share handing over mid-window (Redis stopped,
# killed, restarted; tkshm-syncd stopped, started, stalled): per window
# at most the limit.  It runs the real tkshm-syncd.
if(TKSHM_BUILD_TOOLS)
  tkshm_add_redis_test(test_lease_handover SOURCES test_lease_handover.c
    hosts_sim.c LABELS "process;serial" TIMEOUT 240)
  set_tests_properties(test_lease_handover PROPERTIES RUN_SERIAL TRUE)
  target_compile_definitions(test_lease_handover PRIVATE
    TKSHM_SYNCD="$<TARGET_FILE:tkshm-syncd>")
  add_dependencies(test_lease_handover tkshm-syncd)
endif()
