# The Redis Cluster and Sentinel test support (support/redis_cluster.c)
# against real servers: a 6-node cluster, a slot migration, a master's
# failover; a primary with its replica and 3 sentinels, failed over.
# Skipped (77) without redis-cli, which makes the cluster.
tkshm_add_redis_test(test_cluster_support SOURCES test_cluster_support.c
  LABELS process TIMEOUT 120)
set_tests_properties(test_cluster_support PROPERTIES SKIP_RETURN_CODE 77)

# Strict and lease tables on that cluster (src/redis/cluster.c): exact
# on every master, a slot moved under load, a master killed.
tkshm_add_redis_test(test_redis_cluster SOURCES test_redis_cluster.c
  hosts_sim.c LABELS "process;serial" TIMEOUT 180)
set_tests_properties(test_redis_cluster PROPERTIES SKIP_RETURN_CODE 77)

# A strict table on a Sentinel-managed primary, failed over and killed.
tkshm_add_redis_test(test_redis_sentinel SOURCES test_redis_sentinel.c
  LABELS "process;serial" TIMEOUT 180)
set_tests_properties(test_redis_sentinel PROPERTIES SKIP_RETURN_CODE 77)
