# Redis faults (issue 18, items 4 and 5): a scripted server's error
# replies, wrong types, fields out of range, trickled bytes and huge
# headers, a real server's -BUSY, and the lease agent under error replies.
tkshm_add_redis_test(redis_faults SOURCES test_redis_faults.c
  LABELS process TIMEOUT 120)
