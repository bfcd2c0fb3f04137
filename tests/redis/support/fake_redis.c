/*
 * fake_redis.c - a scripted Redis server for fault tests (fake_redis.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_redis.h"
#include "test_support.h"

/* A buffered reader of one connection. */
struct rd {
	int fd;
	char buf[4096];
	size_t pos, len;
};

static int
rd_byte(struct rd *r)
{
	if (r->pos == r->len) {
		ssize_t n = read(r->fd, r->buf, sizeof r->buf);

		if (n <= 0)
			return -1;
		r->pos = 0;
		r->len = (size_t)n;
	}
	return (unsigned char)r->buf[r->pos++];
}

/* A line up to \r\n, as a number after its type byte; -1 at EOF. */
static long long
rd_header(struct rd *r, char type)
{
	char line[64];
	size_t n = 0;
	int ch;

	while ((ch = rd_byte(r)) >= 0 && ch != '\n')
		if (n < sizeof line - 1)
			line[n++] = (char)ch;
	line[n] = '\0';
	if (ch < 0 || line[0] != type)
		return -1;
	return atoll(line + 1);
}

/* One command; its first argument (upper-cased, truncated) in name.
 * False at EOF. */
static bool
rd_command(struct rd *r, char *name, size_t cap)
{
	long long argc = rd_header(r, '*');

	name[0] = '\0';
	if (argc < 1)
		return false;
	for (long long i = 0; i < argc; i++) {
		long long len = rd_header(r, '$');

		if (len < 0)
			return false;
		for (long long j = 0; j < len + 2; j++) {
			int ch = rd_byte(r);

			if (ch < 0)
				return false;
			if (i == 0 && j < len && (size_t)j < cap - 1) {
				name[j] = (char)(ch >= 'a' && ch <= 'z' ?
							 ch - 32 :
							 ch);
				name[j + 1] = '\0';
			}
		}
	}
	return true;
}

static bool
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

struct script {
	const char *reply;
	size_t len, flood;
	int gap_ms;
};

static bool
answer_evalsha(int fd, const struct script *s)
{
	static char xs[65536];

	if (s->gap_ms <= 0) {
		if (!send_all(fd, s->reply, s->len))
			return false;
	} else {
		for (size_t i = 0; i < s->len; i++) {
			struct timespec gap = { 0, s->gap_ms * 1000000L };

			if (!send_all(fd, s->reply + i, 1))
				return false;
			nanosleep(&gap, NULL);
		}
	}
	memset(xs, 'x', sizeof xs);
	for (size_t left = s->flood; left > 0;) {
		size_t n = left < sizeof xs ? left : sizeof xs;

		if (!send_all(fd, xs, n))
			return false;
		left -= n;
	}
	return true;
}

static void
serve(int fd, const struct script *s)
{
	static const char sha[] =
		"$40\r\n"
		"0123456789abcdef0123456789abcdef01234567\r\n";
	struct rd r = { fd, { 0 }, 0, 0 };
	char name[16];

	while (rd_command(&r, name, sizeof name)) {
		bool ok;

		if (strcmp(name, "SCRIPT") == 0)
			ok = send_all(fd, sha, sizeof sha - 1);
		else if (strcmp(name, "EVALSHA") == 0)
			ok = answer_evalsha(fd, s);
		else
			ok = send_all(fd, "+OK\r\n", 5);
		if (!ok)
			break;
	}
}

static void
fake_main(int lfd, const struct script *s)
{
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		serve(fd, s);
		close(fd);
	}
}

void
tkt_fake_start(struct tkt_fake *f, const char *reply, size_t len, int gap_ms,
	       size_t flood)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof a;
	struct script s = { reply, len, flood, gap_ms };
	pid_t parent = getpid();
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(lfd >= 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	assert_int_equal(listen(lfd, 16), 0);
	f->port = ntohs(a.sin_port);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		fake_main(lfd, &s);
		_exit(0);
	}
	close(lfd);
}

void
tkt_fake_stop(struct tkt_fake *f)
{
	if (f->pid <= 0)
		return;
	kill(f->pid, SIGKILL);
	(void)waitpid(f->pid, NULL, 0);
	f->pid = 0;
}
