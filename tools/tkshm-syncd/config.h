/*
 * config.h - tkshm-syncd's configuration file.
 *
 * The file is read only if it is a regular file that nobody but root
 * and the user running the agent can change, of at most SD_FILE_MAX bytes
 * (conf_file.h); a UTF-8 byte-order mark at its start is skipped.
 *
 * It is lines of "key = value"; a line whose first non-blank
 * character is '#' is a comment, and blank lines are ignored.  A '#'
 * elsewhere is part of the value (a password or a path may hold one).
 * Whitespace around the key and the value is dropped.  Every key but
 * `table` may be given once; `table` is repeated, once per lease table.
 *
 * Every problem is reported as "FILE:LINE: what is wrong" (sd_log, LOG_ERR)
 * and the load fails: an unknown key, a value that is not a number or is
 * out of range (durations are whole milliseconds, poll_ms aside), a name
 * with a character outside its set, a control character, a relative path
 * (the daemon runs in /), a password file that others may read, no table
 * at all.  Whether each table exists and is
 * a lease table is checked by tables.c, which reports the table's line.
 */
#ifndef TKSHM_SYNCD_CONFIG_H
#define TKSHM_SYNCD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/agent.h"
#include "log.h"

/* Where tkshm-syncd looks without -c (CMake sets it from SYSCONFDIR). */
#ifndef SD_DEFAULT_CONFIG
#define SD_DEFAULT_CONFIG "/etc/tkshm-syncd.conf"
#endif
/* The pid file of a background start when none is configured. */
#define SD_DEFAULT_PIDFILE "/run/tkshm-syncd.pid"

/* The longest Redis timeout accepted (ms): one day. */
#define SD_MAX_MS 86400000UL

struct sd_table {
	char path[PATH_MAX];
	unsigned line; /* where the file names it */
};

struct sd_conf {
	const char *file; /* the configuration file, for messages */
	struct tk_agent_conf agent;
	char pidfile[PATH_MAX]; /* "" : none configured */
	/* The file's own `pidfile` ("" : none), whatever -p or a background
	 * start make of `pidfile`: what a reload compares. */
	char file_pidfile[PATH_MAX];
	bool log_set; /* `log` was given */
	enum sd_log_target log;
	struct sd_table *tables;
	size_t ntables;
};

/* Reads `file` into *c (defaults for what it does not say, the password
 * file read).  false after reporting the first problem; free with
 * sd_conf_free() either way. */
bool sd_conf_load(struct sd_conf *c, const char *file);

/* Frees the table list and wipes the password. */
void sd_conf_free(struct sd_conf *c);

/* "127.0.0.1:6379" or "unix:/run/redis.sock", for messages. */
void sd_conf_redis_addr(const struct sd_conf *c, char *buf, size_t len);

#endif /* TKSHM_SYNCD_CONFIG_H */
