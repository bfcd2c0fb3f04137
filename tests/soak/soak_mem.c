/*
 * soak_mem.c - a process's memory and descriptors from /proc, the
 * figures that show a leak: VmRSS (everything resident, the shared table
 * pages included), RssAnon (private memory: what malloc leaks grow) and
 * the number of open descriptors (what a leaked handle or file grows).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "soak.h"

static uint64_t
count_fds(pid_t pid)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	uint64_t n = 0;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	/* Our own listing holds one descriptor while it runs. */
	return pid == getpid() && n > 0 ? n - 1 : n;
}

bool
soak_mem_of(pid_t pid, struct soak_mem *out)
{
	char path[64], line[256];
	FILE *f;
	unsigned long long v;

	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
			out->rss_kib = v;
		else if (sscanf(line, "RssAnon: %llu kB", &v) == 1)
			out->anon_kib = v;
	}
	fclose(f);
	out->fds = count_fds(pid);
	return out->rss_kib > 0;
}
