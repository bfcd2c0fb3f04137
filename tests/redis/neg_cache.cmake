# Strict mode's negative cache after another host consumed (issue 18,
# item 7): a cached denial's fields against Redis's, the sliding log's
# ZSET after a denial.
tkshm_add_redis_test(redis_neg_cache SOURCES test_neg_cache.c LABELS process
  TIMEOUT 300)
