/*
 * proc.c - who holds a permit, and whether that process still runs.
 *
 * Liveness is read from /proc/PID/stat, never from kill(pid, 0) alone: a
 * pid says nothing once it may have been reused, and a zombie still
 * answers kill().  The start time in the holder word settles reuse
 * (proc.h).  Nothing here writes shared memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/proc.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Reads a small file whole into buf (NUL-terminated); false on failure. */
static bool
tk_read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t used = 0;

	if (fd < 0)
		return false;
	while (used + 1 < len) {
		ssize_t n = read(fd, buf + used, len - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	buf[used] = '\0';
	return used > 0;
}

bool
tk_proc_stat_parse(const char *text, char *state, uint64_t *start)
{
	/* "pid (comm) S f4 ... f22": comm may hold anything but ends at the
	 * last ')'. */
	const char *p = strrchr(text, ')');
	unsigned field = 2;

	if (!p || p[1] != ' ' || p[2] == '\0')
		return false;
	p += 2;
	*state = *p;
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return false;
		p++;
	}
	{
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(p, &end, 10);
		if (end == p || errno != 0 ||
		    (*end != ' ' && *end != '\n' && *end != '\0'))
			return false;
		*start = v;
	}
	return true;
}

/* This process's word, for the pid it was computed in: a child forked
 * after it sees another pid and computes its own.  Per thread: each
 * thread computes the same value once, with no word shared between
 * threads (so no atomics on the floor of src/). */
static _Thread_local uint64_t tk_self_word;

uint64_t
tk_holder_self(void)
{
	pid_t pid = getpid();
	uint64_t w = tk_self_word;
	char buf[1024], state;
	uint64_t start;

	if (w != 0 && tk_holder_pid(w) == pid)
		return w;
	if (!tk_read_small("/proc/self/stat", buf, sizeof buf) ||
	    !tk_proc_stat_parse(buf, &state, &start))
		return 0;
	w = tk_holder_word((uint64_t)pid, start);
	tk_self_word = w;
	return w;
}

uint64_t
tk_holder_host(void)
{
	/* Per thread, as tk_self_word: every thread computes the same. */
	static _Thread_local uint64_t host;
	uint64_t h = host;
	char buf[128];

	if (h != 0)
		return h;
	if (tk_read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf))
		h = XXH3_64bits(buf, strlen(buf));
	if (h == 0)
		h = 1;
	host = h;
	return h;
}

enum tk_liveness
tk_holder_liveness(uint64_t word)
{
	pid_t pid = tk_holder_pid(word);
	char path[64], buf[1024], state;
	uint64_t start;

	if (pid <= 0)
		return TK_DEAD;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!tk_read_small(path, buf, sizeof buf))
		return errno == ENOENT || errno == ESRCH ? TK_DEAD : TK_UNKNOWN;
	if (!tk_proc_stat_parse(buf, &state, &start))
		return TK_UNKNOWN;
	if ((start & TK_HOLDER_START_MASK) != (word & TK_HOLDER_START_MASK))
		return TK_DEAD; /* the pid names a newer process */
	/* Z: a zombie, X: dead; its permits will never be released. */
	return state == 'Z' || state == 'X' ? TK_DEAD : TK_ALIVE;
}
