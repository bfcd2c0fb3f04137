/*
 * log.h - tkshm-syncd's messages: to standard error or to syslog.
 *
 * Everything the daemon says goes through sd_log(), so that one switch
 * decides where it lands: standard error in the foreground (where a
 * supervisor such as systemd or a terminal reads it) and syslog
 * (LOG_DAEMON, ident "tkshm-syncd") in the background, unless the
 * configuration or --log says otherwise.  Under systemd (JOURNAL_STREAM
 * naming standard error) each line on standard error starts with the
 * syslog priority in angle brackets ("<3>" for an error), which the
 * journal turns into the entry's priority, and without the program's
 * name, which the journal records itself.  The library itself never
 * prints.
 */
#ifndef TKSHM_SYNCD_LOG_H
#define TKSHM_SYNCD_LOG_H

#include <stdbool.h>
#include <syslog.h>

#define SD_PROG "tkshm-syncd"

enum sd_log_target {
	SD_LOG_STDERR,
	SD_LOG_SYSLOG,
};

/* "stderr" or "syslog" into *out; false for anything else. */
bool sd_log_target_parse(const char *s, enum sd_log_target *out);
const char *sd_log_target_name(enum sd_log_target t);

/* Sends later messages to `t` (stderr until this is called). */
void sd_log_open(enum sd_log_target t);
void sd_log_close(void);

/* One message at a syslog priority: LOG_ERR, LOG_WARNING, LOG_NOTICE or
 * LOG_INFO.  On standard error: "tkshm-syncd: " (then "error: " or
 * "warning: " for those two) and the message. */
void sd_log(int prio, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The text of the last LOG_ERR message ("" before any): what a background
 * start reports to the process that started it. */
const char *sd_log_last_error(void);

#endif /* TKSHM_SYNCD_LOG_H */
