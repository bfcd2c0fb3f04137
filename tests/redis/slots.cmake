# The Redis Cluster client's parts that need no server (src/redis/
# cluster.c): slots, address lists, options, cross-slot keys.
tkshm_add_redis_test(test_cluster_slots
  SOURCES test_cluster_slots.c
  LABELS unit
  TIMEOUT 30)
