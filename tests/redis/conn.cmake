# The connection (src/redis/conn.c), each test against its own
# redis-server, and the circuit breaker (src/redis/breaker.c), which needs
# no server: its races between threads (TSan runs those) and between
# processes are two builds of one file.
tkshm_add_redis_test(test_redis_conn
  SOURCES test_redis_conn.c
  LABELS process
  TIMEOUT 120)

tkshm_add_redis_test(test_breaker
  SOURCES test_breaker.c
  LABELS concurrency
  TIMEOUT 60)

tkshm_add_redis_test(test_breaker_procs
  SOURCES test_breaker.c
  LABELS process
  TIMEOUT 60)
target_compile_definitions(test_breaker_procs PRIVATE BREAKER_PROCS=1)
