# Our Lua scripts against the shared-memory algorithms (seeded timelines,
# multi all/any, the server's TIME) and against ThrottleKit's golden
# vectors; the lease and heartbeat scripts against their formulas.
tkshm_add_redis_test(test_redis_conformance
  SOURCES test_redis_conformance.c conf_wire.c
  LABELS process TIMEOUT 300)
tkshm_add_redis_test(test_redis_golden
  SOURCES test_redis_golden.c conf_wire.c
  LABELS process TIMEOUT 300)
