/*
 * conf_file.h - reading a file tkshm-syncd depends on: whole, bounded, and
 * only if it is a regular file that the right people control.
 *
 * The configuration names the Redis server whose answers the agent (often
 * root) writes into every lease table, so it must be a file that only root
 * or the user running the agent can change: sshd's StrictModes rule.  With
 * SD_FILE_TRUSTED the file must be owned by root or the effective user and
 * writable by neither its group nor others, and so must every directory
 * from its parent up to '/' (a directory writable by others is accepted
 * when it is sticky, as /tmp is: nobody else can rename or remove the
 * entries of its owner).  Symbolic links are followed, and what is checked
 * is the path they resolve to, which must still name the file opened.
 *
 * Whatever the rules, a path that is not a regular file is refused before
 * it is opened (opening a device may do something; opening a FIFO would
 * wait for a writer), the open cannot wait (O_NONBLOCK) and the opened
 * file is checked again, and at most SD_FILE_MAX bytes are read: a larger
 * file is refused, by its size and by the read itself (it may grow).
 */
#ifndef TKSHM_SYNCD_CONF_FILE_H
#define TKSHM_SYNCD_CONF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The most bytes read from one file (a configuration is a few hundred). */
#define SD_FILE_MAX 65536

/* The rules, combined with '|'. */
enum sd_file_rule {
	/* Owned by root or the effective user, writable by no group or
	 * others, in directories that are the same (or sticky). */
	SD_FILE_TRUSTED = 1,
	/* No permission bit for others (a secret; group read allowed). */
	SD_FILE_SECRET = 2,
};

struct sd_file {
	char *text;  /* the bytes read, and a NUL after them */
	size_t len;  /* without that NUL (the text may hold others) */
	mode_t mode; /* the opened file's st_mode */
};

/* Reads `path` into *f under `rules` (enum sd_file_rule).  On failure,
 * false with a sentence in `why` naming the file as `what` ("the
 * configuration") and *f empty. */
bool sd_file_read(const char *path, unsigned rules, const char *what,
		  struct sd_file *f, char *why, size_t why_len);

/* Wipes the text (it may hold a password) and frees it. */
void sd_file_free(struct sd_file *f);

#endif /* TKSHM_SYNCD_CONF_FILE_H */
