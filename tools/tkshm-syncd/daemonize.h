/*
 * daemonize.h - a background start, reported back to whoever started it.
 *
 * D1  The daemon is a grandchild of the starting process: the child calls
 *     setsid() and forks again, so the daemon leads no session and can
 *     never acquire a controlling terminal.
 * D2  It runs in '/', with umask 022, an empty signal mask and no file
 *     descriptor of its starter but its standard streams (which it
 *     detaches later, sd_detach_stdio) and the report pipe.
 * D3  The starting process waits on the report pipe and exits 0 only when
 *     the daemon says it runs (its tables attached, its pid file written);
 *     1, printing the daemon's message, when it says it failed or ends
 *     without saying anything.  Init scripts and tests can rely on the
 *     daemon running once the start has returned 0.
 */
#ifndef TKSHM_SYNCD_DAEMONIZE_H
#define TKSHM_SYNCD_DAEMONIZE_H

#include <stdbool.h>

/* Returned by sd_daemonize() in the daemon. */
#define SD_IN_DAEMON (-1)

/* Forks the daemon (D1, D2).  In the daemon: SD_IN_DAEMON, with *report
 * the pipe to report on.  In the starting process: the exit status to end
 * with, once the daemon has reported (D3), or 1 when it could not fork. */
int sd_daemonize(int *report);

/* Standard input and output (and standard error unless `keep_stderr`)
 * onto /dev/null.  False after reporting a failure. */
bool sd_detach_stdio(bool keep_stderr);

/* The daemon's report (D3); each closes `fd`. */
void sd_report_ready(int fd);
void sd_report_failure(int fd, const char *msg);

#endif /* TKSHM_SYNCD_DAEMONIZE_H */
