/*
 * pidfile.c - the daemon's pid file (pidfile.h, P1-P4).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_file.h"
#include "log.h"
#include "pidfile.h"

/* The pid in `path` into *pid (0 when the file is absent or does not hold
 * a pid).  False after reporting a file that exists but cannot be read, or
 * is no regular file: a FIFO's open would wait forever, a device's may do
 * something, and the write's rename() would replace either. */
static bool
sd_pidfile_read(const char *path, pid_t *pid)
{
	char what[PATH_MAX + 16], why[PATH_MAX + 256], *end;
	struct sd_file f;
	struct stat st;
	long v;

	*pid = 0;
	if (stat(path, &st) != 0 && errno == ENOENT)
		return true;
	snprintf(what, sizeof what, "the pid file %s", path);
	if (!sd_file_read(path, 0, what, &f, why, sizeof why)) {
		sd_log(LOG_ERR, "%s", why);
		return false;
	}
	errno = 0;
	v = strtol(f.text, &end, 10);
	if (end != f.text && (*end == '\n' || *end == '\0') && errno == 0 &&
	    v > 0 && v <= INT_MAX)
		*pid = (pid_t)v;
	sd_file_free(&f);
	return true;
}

/* Whether pid is a live process other than this one (P3).  EPERM: it
 * lives, under another user. */
static bool
sd_other_alive(pid_t pid)
{
	return pid > 0 && pid != getpid() &&
	       (kill(pid, 0) == 0 || errno == EPERM);
}

bool
sd_pidfile_check(const char *path)
{
	pid_t pid;

	if (!sd_pidfile_read(path, &pid))
		return false;
	if (sd_other_alive(pid)) {
		sd_log(LOG_ERR, "already running as pid %ld (pid file %s)",
		       (long)pid, path);
		return false;
	}
	return true;
}

/* Moves tmp onto path when link() found `path` already there: refused if
 * it names a live process (a start that won the race), else the stale
 * file is replaced in one rename. */
static bool
sd_pidfile_replace(const char *tmp, const char *path)
{
	if (!sd_pidfile_check(path))
		return false;
	if (rename(tmp, path) != 0) {
		sd_log(LOG_ERR, "cannot write the pid file %s: %s", path,
		       strerror(errno));
		return false;
	}
	return true;
}

bool
sd_pidfile_write(const char *path)
{
	char tmp[PATH_MAX + 8], text[32];
	int fd, len;
	bool ok;

	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		sd_log(LOG_ERR, "the pid file's name is too long: %s", path);
		return false;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		sd_log(LOG_ERR, "cannot write the pid file %s: %s", path,
		       strerror(errno));
		return false;
	}
	len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
	/* mkostemp made it 0600; a pid file is for anyone to read.  No
	 * fsync: after a crash of the machine the pid in it is stale
	 * anyway. */
	ok = fchmod(fd, 0644) == 0 && write(fd, text, (size_t)len) == len;
	if (close(fd) != 0)
		ok = false;
	if (!ok) {
		sd_log(LOG_ERR, "cannot write the pid file %s: %s", path,
		       strerror(errno));
		unlink(tmp);
		return false;
	}
	if (link(tmp, path) == 0) {
		unlink(tmp);
		return true;
	}
	/* EEXIST: someone's file is there (P3).  EPERM and ENOTSUP: a file
	 * system without hard links, where only the check made before the
	 * tables were attached guards the start. */
	if (errno == EEXIST || errno == EPERM || errno == ENOTSUP) {
		if (sd_pidfile_replace(tmp, path))
			return true;
	} else {
		sd_log(LOG_ERR, "cannot write the pid file %s: %s", path,
		       strerror(errno));
	}
	unlink(tmp);
	return false;
}

void
sd_pidfile_remove(const char *path)
{
	pid_t pid;

	/* Absent or not a pid: nothing of ours to remove. */
	if (!sd_pidfile_read(path, &pid) || pid == 0)
		return;
	if (pid != getpid()) {
		sd_log(LOG_WARNING,
		       "the pid file %s no longer names this process; left "
		       "in place",
		       path);
		return;
	}
	if (unlink(path) != 0)
		sd_log(LOG_WARNING, "cannot remove the pid file %s: %s", path,
		       strerror(errno));
}
