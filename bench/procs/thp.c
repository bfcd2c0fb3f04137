/*
 * thp.c - reading and switching shmem_enabled, reading /proc/meminfo.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "thp.h"

#define THP_SHMEM "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

/* The word in brackets of "always within_size [advise] never deny force". */
static void
thp_read(char *word, size_t len)
{
	char buf[256];
	const char *open, *close;
	FILE *f = fopen(THP_SHMEM, "r");
	size_t n;

	word[0] = '\0';
	if (!f)
		return;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close || (size_t)(close - open - 1) >= len)
		return;
	memcpy(word, open + 1, (size_t)(close - open - 1));
	word[close - open - 1] = '\0';
}

static bool
thp_write(const char *word)
{
	int fd = open(THP_SHMEM, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	n = write(fd, word, strlen(word));
	close(fd);
	return n == (ssize_t)strlen(word);
}

void
thp_prepare(struct thp_state *s, bool may_write)
{
	memset(s, 0, sizeof *s);
	thp_read(s->original, sizeof s->original);
	memcpy(s->current, s->original, sizeof s->current);
	if (!may_write || (strcmp(s->original, "never") != 0 &&
			   strcmp(s->original, "deny") != 0))
		return;
	/* Registered before the write, so a signal between the two still
	 * restores (writing the original back is harmless). */
	cleanup_set_thp(THP_SHMEM, s->original);
	if (thp_write("advise")) {
		s->changed = true;
		thp_read(s->current, sizeof s->current);
	} else {
		cleanup_set_thp(NULL, NULL);
	}
}

void
thp_restore(struct thp_state *s)
{
	if (!s->changed)
		return;
	if (!thp_write(s->original))
		fprintf(stderr,
			"tkshm_bench_procs: could not restore %s to '%s'\n",
			THP_SHMEM, s->original);
	s->changed = false;
	cleanup_set_thp(NULL, NULL);
}

long
meminfo_kb(const char *field)
{
	char line[256];
	size_t flen = strlen(field);
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, field, flen) == 0 && line[flen] == ':') {
			if (sscanf(line + flen + 1, "%ld", &kb) != 1)
				kb = -1;
			break;
		}
	}
	fclose(f);
	return kb;
}
