/*
 * conf_file.c - reading a file tkshm-syncd depends on (conf_file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf_file.h"

/* Writes the reason into why; returns false. */
static bool sd_why(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool
sd_why(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return false;
}

/* What a file that is not regular is, for the message. */
static const char *
sd_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "of an unknown type";
}

/* Who, besides the owner, may write where the mode says. */
static const char *
sd_writers(mode_t m)
{
	if ((m & S_IWGRP) && (m & S_IWOTH))
		return "its group and others";
	return (m & S_IWGRP) ? "its group" : "others";
}

/* SD_FILE_TRUSTED for one file or directory (`name` says which): owned by
 * root or the effective user, and writable by nobody else (a sticky
 * directory excepted, when `dir`). */
static bool
sd_check_trusted(const struct stat *st, const char *name, bool dir, char *why,
		 size_t len)
{
	uid_t me = geteuid();
	mode_t w = st->st_mode & (S_IWGRP | S_IWOTH);

	if (st->st_uid != 0 && st->st_uid != me) {
		if (me == 0)
			return sd_why(why, len,
				      "%s is owned by uid %lu, not by root",
				      name, (unsigned long)st->st_uid);
		return sd_why(why, len,
			      "%s is owned by uid %lu, neither root nor uid "
			      "%lu, who runs tkshm-syncd",
			      name, (unsigned long)st->st_uid,
			      (unsigned long)me);
	}
	if (w && !(dir && (st->st_mode & S_ISVTX)))
		return sd_why(why, len,
			      "%s is writable by %s (mode %04o): chmod go-w "
			      "it",
			      name, sd_writers(w),
			      (unsigned)(st->st_mode & 07777));
	return true;
}

/* SD_FILE_TRUSTED for the directories above the file opened (`opened`):
 * those of the path `path` resolves to, which must still name it. */
static bool
sd_check_dirs(const char *path, const struct stat *opened, const char *what,
	      char *why, size_t len)
{
	char *real = realpath(path, NULL), *slash, name[PATH_MAX + 64];
	struct stat st;
	bool ok = true;

	if (!real)
		return sd_why(why, len, "cannot resolve the path of %s: %s",
			      what, strerror(errno));
	if (stat(real, &st) != 0 || st.st_dev != opened->st_dev ||
	    st.st_ino != opened->st_ino)
		ok = sd_why(why, len, "%s was replaced while it was read",
			    what);
	/* From the parent up: cut the last component each time, keeping
	 * the '/' of the root. */
	while (ok && (slash = strrchr(real, '/')) != NULL) {
		bool root = slash == real;

		slash[root ? 1 : 0] = '\0';
		snprintf(name, sizeof name, "the directory %s", real);
		if (stat(real, &st) != 0)
			ok = sd_why(why, len, "cannot check %s: %s", name,
				    strerror(errno));
		else
			ok = sd_check_trusted(&st, name, true, why, len);
		if (root)
			break;
	}
	free(real);
	return ok;
}

/* The rules, on the open file. */
static bool
sd_check_open(int fd, const char *path, unsigned rules, const char *what,
	      struct sd_file *f, char *why, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return sd_why(why, len, "cannot read %s: %s", what,
			      strerror(errno));
	/* Again: the path may have been changed since it was looked at. */
	if (!S_ISREG(st.st_mode))
		return sd_why(why, len, "%s is %s, not a regular file", what,
			      sd_kind(st.st_mode));
	if (st.st_size > SD_FILE_MAX)
		return sd_why(why, len,
			      "%s is too large (%lld bytes; at most %d)", what,
			      (long long)st.st_size, SD_FILE_MAX);
	if ((rules & SD_FILE_TRUSTED) &&
	    (!sd_check_trusted(&st, what, false, why, len) ||
	     !sd_check_dirs(path, &st, what, why, len)))
		return false;
	if ((rules & SD_FILE_SECRET) && (st.st_mode & S_IRWXO))
		return sd_why(why, len,
			      "%s is open to others (mode %04o): chmod o-rwx "
			      "it",
			      what, (unsigned)(st.st_mode & 07777));
	f->mode = st.st_mode;
	return true;
}

/* Reads to the end, or refuses once more than SD_FILE_MAX bytes came. */
static bool
sd_read_all(int fd, const char *what, struct sd_file *f, char *why, size_t len)
{
	char *buf = malloc(SD_FILE_MAX + 2);
	size_t n = 0;
	int e;

	if (!buf)
		return sd_why(why, len, "cannot read %s: out of memory", what);
	while (n <= SD_FILE_MAX) {
		ssize_t r = read(fd, buf + n, SD_FILE_MAX + 1 - n);

		if (r == 0)
			break;
		if (r > 0) {
			n += (size_t)r;
			continue;
		}
		if (errno == EINTR)
			continue;
		e = errno;
		explicit_bzero(buf, n);
		free(buf);
		return sd_why(why, len, "cannot read %s: %s", what,
			      strerror(e));
	}
	if (n > SD_FILE_MAX) {
		explicit_bzero(buf, n);
		free(buf);
		return sd_why(why, len,
			      "%s grew past %d bytes while it was read", what,
			      SD_FILE_MAX);
	}
	buf[n] = '\0';
	f->text = buf;
	f->len = n;
	return true;
}

bool
sd_file_read(const char *path, unsigned rules, const char *what,
	     struct sd_file *f, char *why, size_t why_len)
{
	struct stat st;
	bool ok;
	int fd;

	memset(f, 0, sizeof *f);
	/* Before any open: opening a device may act on it, and a FIFO's
	 * open waits for a writer. */
	if (stat(path, &st) != 0)
		return sd_why(why, why_len, "cannot read %s: %s", what,
			      strerror(errno));
	if (!S_ISREG(st.st_mode))
		return sd_why(why, why_len, "%s is %s, not a regular file",
			      what, sd_kind(st.st_mode));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return sd_why(why, why_len, "cannot read %s: %s", what,
			      strerror(errno));
	ok = sd_check_open(fd, path, rules, what, f, why, why_len) &&
	     sd_read_all(fd, what, f, why, why_len);
	close(fd);
	return ok;
}

void
sd_file_free(struct sd_file *f)
{
	if (f->text) {
		explicit_bzero(f->text, f->len);
		free(f->text);
	}
	f->text = NULL;
	f->len = 0;
}
