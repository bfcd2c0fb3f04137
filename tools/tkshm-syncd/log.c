/*
 * log.c - where tkshm-syncd's messages go (log.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static enum sd_log_target sd_target = SD_LOG_STDERR;
static char sd_last_error[1024];
/* Standard error is the journal's stream: lines carry "<N>" prefixes. */
static bool sd_to_journal;

bool
sd_log_target_parse(const char *s, enum sd_log_target *out)
{
	if (strcmp(s, "stderr") == 0) {
		*out = SD_LOG_STDERR;
		return true;
	}
	if (strcmp(s, "syslog") == 0) {
		*out = SD_LOG_SYSLOG;
		return true;
	}
	return false;
}

const char *
sd_log_target_name(enum sd_log_target t)
{
	return t == SD_LOG_SYSLOG ? "syslog" : "stderr";
}

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connects to
 * the journal; standard error is that stream only when the two match (a
 * child with its standard error redirected inherits the variable). */
static bool
sd_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;

	if (!env || env[0] < '0' || env[0] > '9')
		return false;
	errno = 0;
	dev = strtoull(env, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
		return false;
	ino = strtoull(end + 1, &end, 10);
	if (errno || *end != '\0')
		return false;
	if (fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void
sd_log_open(enum sd_log_target t)
{
	if (t == SD_LOG_SYSLOG)
		openlog(SD_PROG, LOG_PID, LOG_DAEMON);
	sd_target = t;
	sd_to_journal = t == SD_LOG_STDERR && sd_stderr_is_journal();
}

void
sd_log_close(void)
{
	if (sd_target == SD_LOG_SYSLOG)
		closelog();
	sd_target = SD_LOG_STDERR;
	sd_to_journal = false;
}

void
sd_log(int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (prio == LOG_ERR)
		memcpy(sd_last_error, msg, sizeof msg);
	if (sd_target == SD_LOG_SYSLOG) {
		syslog(prio, "%s", msg);
		return;
	}
	/* One fprintf: a line is one write and does not interleave with
	 * another process's lines on a shared stderr.  The journal takes
	 * the priority from a "<N>" prefix and names the unit itself. */
	if (sd_to_journal) {
		fprintf(stderr, "<%d>%s\n", prio, msg);
		return;
	}
	fprintf(stderr, SD_PROG ": %s%s\n",
		prio == LOG_ERR	    ? "error: " :
		prio == LOG_WARNING ? "warning: " :
				      "",
		msg);
}

const char *
sd_log_last_error(void)
{
	return sd_last_error;
}
