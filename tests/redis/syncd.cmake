# tkshm-syncd as a process (tools/tkshm-syncd/): configuration checks, the
# command line, background and foreground starts, SIGTERM, the pid file,
# and what tkshm-inspect shows of the cross-host tier.  tests/ is read
# before tools/, so the targets are named through generator expressions
# (resolved once every directory is read).  The top level builds
# tkshm-syncd with the Redis tier, as these tests are; tkshm-inspect with
# the tools.
if(TKSHM_BUILD_TOOLS)
  tkshm_add_redis_test(redis_syncd_daemon SOURCES test_syncd_daemon.c
    LABELS process TIMEOUT 120)
  target_compile_definitions(redis_syncd_daemon PRIVATE
    TKSHM_SYNCD="$<TARGET_FILE:tkshm-syncd>"
    TKSHM_INSPECT_BIN="$<TARGET_FILE:tkshm-inspect>")
  add_dependencies(redis_syncd_daemon tkshm-syncd tkshm-inspect)

  # Under a service manager: READY=1, RELOADING=1 around a SIGHUP reload,
  # the journal's priority prefixes (a notification socket of the test's
  # own; needs a tkshm-syncd built with libsystemd).
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(TKSHM_TEST_LIBSYSTEMD QUIET libsystemd)
  endif()
  if(TKSHM_TEST_LIBSYSTEMD_FOUND)
    tkshm_add_redis_test(redis_syncd_service SOURCES test_syncd_service.c
      LABELS process TIMEOUT 120)
    target_compile_definitions(redis_syncd_service PRIVATE
      TKSHM_SYNCD="$<TARGET_FILE:tkshm-syncd>")
    add_dependencies(redis_syncd_service tkshm-syncd)
  endif()

  # Which files it takes as its configuration, and how strictly it reads
  # their values (--check only: no Redis server).
  tkshm_add_test(redis_syncd_config SOURCES test_syncd_config.c
    LABELS process)
  target_compile_definitions(redis_syncd_config PRIVATE
    TKSHM_SYNCD="$<TARGET_FILE:tkshm-syncd>")
  add_dependencies(redis_syncd_config tkshm-syncd)
endif()
