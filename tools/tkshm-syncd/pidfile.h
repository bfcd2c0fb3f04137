/*
 * pidfile.h - the daemon's pid file.
 *
 * P1  The file holds the daemon's pid and a newline, and appears whole or
 *     not at all: it is written under a temporary name in the same
 *     directory and then linked (or renamed) into place.
 * P2  It is written only once the daemon runs: its tables attached, its
 *     standard streams detached.  A reader that finds the file may signal
 *     the pid in it.
 * P3  A pid file naming a live process other than this one refuses the
 *     start, checked before the tables are attached and again when the
 *     file is published (link() fails on an existing file, so of two
 *     starts at once one publishes and the other finds it).  A pid file
 *     naming no live process is stale and is replaced.  A path that is
 *     not a regular file (a FIFO, a device) refuses the start, and is
 *     neither opened nor replaced.
 * P4  On a clean exit the file is removed, but only if it still names
 *     this process.
 */
#ifndef TKSHM_SYNCD_PIDFILE_H
#define TKSHM_SYNCD_PIDFILE_H

#include <stdbool.h>

/* False (reported) when `path` names a live process other than this one;
 * true when it is absent, stale or unreadable as a pid. */
bool sd_pidfile_check(const char *path);

/* Publishes this process's pid in `path` (P1, P3).  False after
 * reporting why not. */
bool sd_pidfile_write(const char *path);

/* Removes `path` if it names this process (P4). */
void sd_pidfile_remove(const char *path);

#endif /* TKSHM_SYNCD_PIDFILE_H */
