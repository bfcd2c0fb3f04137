# Strict mode through the public API (tkshm_redis.h).
tkshm_add_redis_test(redis_strict SOURCES test_strict.c LABELS process
  TIMEOUT 180)
