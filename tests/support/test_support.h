/*
 * test_support.h - small helpers shared by the test programs.
 * Every helper fails the running cmocka test (fail_msg) instead of returning
 * an error, so test bodies stay straight-line.
 */
#ifndef TKSHM_TEST_SUPPORT_H
#define TKSHM_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tkshm.h"

/* A fresh private directory for table files; removed by tkt_cleanup(). */
const char *tkt_tmpdir(void);
/* tkt_tmpdir() + "/" + name, in a static rotating buffer. */
const char *tkt_path(const char *name);
/* Removes the directory made by tkt_tmpdir() and everything in it. */
void tkt_cleanup(void);

/* Parses `spec` or fails the test. */
tkshm_policy tkt_policy(const char *spec);
/* An anonymous table (shared with children forked later). */
tkshm_table *tkt_anon(const char *spec, uint64_t slots);
/* Creates or attaches a table file. */
tkshm_table *tkt_file(const char *path, const char *spec, uint64_t slots);

/* Reads and parses a JSON file; fails the test on error.  Free with
 * cJSON_Delete. */
cJSON *tkt_json_file(const char *path);
/* The golden vectors (tests/data). */
cJSON *tkt_golden(void);

/* Memory shared with children forked after the call (MAP_SHARED|ANON). */
void *tkt_shared(size_t bytes);
void tkt_shared_free(void *p, size_t bytes);

/* Waits for pid; fails the test unless it exited with status 0. */
void tkt_wait_ok(int pid);

/* Monotonic seconds, for bounding loops (never for asserting speed). */
double tkt_seconds(void);

#endif
