# Strict checks under a comma-decimal locale (numbers sent to the scripts).
tkshm_add_redis_test(redis_locale_strict SOURCES test_locale_strict.c
  LABELS process TIMEOUT 120)
