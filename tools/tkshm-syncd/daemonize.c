/*
 * daemonize.c - a background start (daemonize.h, D1-D3).
 *
 * The report is one byte, 'R' (running) or 'E' (failed) followed by the
 * message, and then the end of the pipe.  The starting process reads to
 * the end, so a daemon that dies before reporting is seen too: the pipe
 * ends with nothing in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemonize.h"
#include "log.h"

/* The longest message a report carries. */
#define SD_REPORT_MAX 1024

static void
sd_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		/* The starter is gone: nobody is left to tell. */
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

void
sd_report_ready(int fd)
{
	sd_write_all(fd, "R", 1);
	close(fd);
}

void
sd_report_failure(int fd, const char *msg)
{
	size_t n = strlen(msg);

	sd_write_all(fd, "E", 1);
	sd_write_all(fd, msg, n < SD_REPORT_MAX ? n : SD_REPORT_MAX);
	close(fd);
}

/* The starting process: the daemon's report, as an exit status (D3). */
static int
sd_wait_report(int fd, pid_t child)
{
	char buf[SD_REPORT_MAX + 2];
	size_t n = 0;

	while (n < sizeof buf - 1) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	/* The intermediate child exited as soon as it had forked. */
	while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
		;
	if (n > 0 && buf[0] == 'R')
		return 0;
	if (n > 0 && buf[0] == 'E')
		sd_log(LOG_ERR, "%s", buf + 1);
	else
		sd_log(LOG_ERR, "the daemon ended before it started (see the "
				"system log)");
	return 1;
}

/* Closes every descriptor from 3 up but `keep` (D2, keep >= 3): whatever
 * the starter left open (a terminal, a pipe a test reads to its end) must
 * not stay open for the daemon's lifetime. */
static void
sd_close_others(int keep)
{
	struct rlimit rl;
	int max = 65536;

	if ((keep == 3 || close_range(3, (unsigned)keep - 1, 0) == 0) &&
	    close_range((unsigned)keep + 1, ~0u, 0) == 0)
		return;
	/* close_range() is Linux 5.9; before it, one by one. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)max)
		max = (int)rl.rlim_cur;
	for (int fd = 3; fd < max; fd++)
		if (fd != keep)
			close(fd);
}

/* The report pipe's end above the standard streams, which a starter may
 * have closed and sd_detach_stdio() fills. */
static int
sd_above_stdio(int fd)
{
	int moved;

	if (fd > STDERR_FILENO)
		return fd;
	moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (moved >= 0)
		close(fd);
	return moved;
}

int
sd_daemonize(int *report)
{
	sigset_t none;
	pid_t pid;
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0) {
		sd_log(LOG_ERR, "pipe: %s", strerror(errno));
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		sd_log(LOG_ERR, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return 1;
	}
	if (pid > 0) {
		close(p[1]);
		return sd_wait_report(p[0], pid);
	}
	close(p[0]);
	if ((p[1] = sd_above_stdio(p[1])) < 0)
		_exit(1);
	/* D1: a new session, then a child of it that leads nothing. */
	setsid();
	pid = fork();
	if (pid < 0) {
		char msg[128];

		snprintf(msg, sizeof msg, "fork: %s", strerror(errno));
		sd_report_failure(p[1], msg);
		_exit(1);
	}
	if (pid > 0)
		_exit(0);
	/* D2.  '/' so that the daemon holds no mount point busy; the pid
	 * file's mode is set explicitly, 022 keeps anything else from being
	 * writable by others. */
	if (chdir("/") != 0) {
		char msg[128];

		snprintf(msg, sizeof msg, "chdir /: %s", strerror(errno));
		sd_report_failure(p[1], msg);
		_exit(1);
	}
	umask(022);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sd_close_others(p[1]);
	*report = p[1];
	return SD_IN_DAEMON;
}

bool
sd_detach_stdio(bool keep_stderr)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		sd_log(LOG_ERR, "cannot open /dev/null: %s", strerror(errno));
		return false;
	}
	/* dup2 clears FD_CLOEXEC on the copies, which is what standard
	 * streams want. */
	if (dup2(fd, STDIN_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0 ||
	    (!keep_stderr && dup2(fd, STDERR_FILENO) < 0)) {
		sd_log(LOG_ERR, "cannot redirect to /dev/null: %s",
		       strerror(errno));
		close(fd);
		return false;
	}
	if (fd > STDERR_FILENO)
		close(fd);
	return true;
}
