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
