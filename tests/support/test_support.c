/*
 * test_support.c - see test_support.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

static char tkt_dir[256];

void
tkt_assert_decision(const char *what, const tkshm_decision *got,
		    const tkshm_decision *want)
{
	if (got->allowed != want->allowed || got->limit != want->limit ||
	    got->remaining != want->remaining ||
	    got->reset_at != want->reset_at ||
	    got->retry_after_ms != want->retry_after_ms)
		fail_msg("%s: got {allowed %d, limit %lld, remaining %lld, "
			 "reset_at %lld, retry_after_ms %lld}, want {%d, %lld, "
			 "%lld, %lld, %lld}",
			 what, got->allowed, (long long)got->limit,
			 (long long)got->remaining, (long long)got->reset_at,
			 (long long)got->retry_after_ms, want->allowed,
			 (long long)want->limit, (long long)want->remaining,
			 (long long)want->reset_at,
			 (long long)want->retry_after_ms);
}

const char *
tkt_tmpdir(void)
{
	if (tkt_dir[0] == '\0') {
		/* mkdtemp wants a template ending in six 'X' characters. */
		size_t n = (size_t)snprintf(tkt_dir, sizeof tkt_dir,
					    "/tmp/tkshm-test-");
		memset(tkt_dir + n, 'X', 6);
		tkt_dir[n + 6] = '\0';
		if (!mkdtemp(tkt_dir))
			fail_msg("mkdtemp: %s", strerror(errno));
	}
	return tkt_dir;
}

const char *
tkt_path(const char *name)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tkt_tmpdir(), name);
	return b;
}

static int
tkt_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void
tkt_cleanup(void)
{
	if (tkt_dir[0] != '\0')
		nftw(tkt_dir, tkt_rm, 16, FTW_DEPTH | FTW_PHYS);
	tkt_dir[0] = '\0';
}

int
tkt_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

tkshm_policy
tkt_policy(const char *spec)
{
	tkshm_policy p;
	char err[256] = "";
	int rc = tkshm_policy_parse(spec, &p, err, sizeof err);

	if (rc != TKSHM_OK)
		fail_msg("policy \"%s\": %s (%s)", spec, tkshm_strerror(rc),
			 err);
	return p;
}

tkshm_table *
tkt_anon(const char *spec, uint64_t slots)
{
	return tkt_file(NULL, spec, slots);
}

tkshm_table *
tkt_file(const char *path, const char *spec, uint64_t slots)
{
	tkshm_policy p = tkt_policy(spec);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc;

	o.policy = &p;
	o.slots = slots;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_open(%s): %s (%s)", path ? path : "anonymous",
			 tkshm_strerror(rc), err);
	return t;
}

tkshm_stats
tkt_stats_of(const char *path)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_stats st;
	int rc;

	o.flags = TKSHM_O_RDONLY;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_open(%s, read-only): %s", path,
			 tkshm_strerror(rc));
	rc = tkshm_stats_get(t, &st);
	tkshm_close(t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_stats_get(%s): %s", path, tkshm_strerror(rc));
	return st;
}

char *
tkt_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		fail_msg("read %s", path);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

cJSON *
tkt_json_file(const char *path)
{
	char *buf = tkt_read_file(path, NULL);
	cJSON *j;

	j = cJSON_Parse(buf);
	free(buf);
	if (!j)
		fail_msg("%s is not valid JSON", path);
	return j;
}

cJSON *
tkt_golden(void)
{
	return tkt_json_file(TKSHM_TEST_DATA
			     "/throttlekit-golden-vectors.json");
}

void
tkt_spec_of(const char *kind, const cJSON *opts, char *buf, size_t len)
{
	const cJSON *o;
	int n = snprintf(buf, len, "%s:", kind);

	cJSON_ArrayForEach(o, opts)
	{
		assert_true(n > 0 && (size_t)n < len);
		n += snprintf(buf + n, len - (size_t)n, "%s%s=%.17g",
			      o == opts->child ? "" : ",", o->string,
			      o->valuedouble);
	}
	assert_true(n > 0 && (size_t)n < len);
}

void *
tkt_shared(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail_msg("mmap: %s", strerror(errno));
	return p;
}

void
tkt_shared_free(void *p, size_t bytes)
{
	munmap(p, bytes);
}

void
tkt_wait_ok(int pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		fail_msg("waitpid(%d): %s", pid, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child %d ended with status %#x", pid, status);
}

int
tkt_wait_bounded(pid_t pid, double secs)
{
	double deadline = tkt_seconds() + secs;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			fail_msg("waitpid %ld: %s", (long)pid, strerror(errno));
		if (tkt_seconds() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(2000);
	}
}

uint64_t
tkt_splitmix(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

double
tkt_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- child processes with pipes ------------------------------------------ */

static void
tkt_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (*len + n + 1 > c)
			c *= 2;
		*buf = realloc(*buf, c);
		if (!*buf)
			fail_msg("out of memory");
		*cap = c;
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void
tkt_proc_start(struct tkt_proc *p, const char *const argv[], const char *input)
{
	int in[2], out[2], err[2];
	pid_t pid;

	memset(p, 0, sizeof *p);
	p->fd_in = p->fd_out = p->fd_err = -1;
	p->status = -1;
	p->input = input ? input : "";
	p->input_len = strlen(p->input);
	tkt_append(&p->out, &p->out_len, &p->out_cap, "", 0);
	tkt_append(&p->err, &p->err_len, &p->err_cap, "", 0);
	signal(SIGPIPE, SIG_IGN);
	/* O_CLOEXEC: a child started later must not hold these ends open. */
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
	    pipe2(err, O_CLOEXEC) != 0)
		fail_msg("pipe2: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
		    dup2(err[1], 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	p->pid = pid;
	p->fd_in = in[1];
	p->fd_out = out[0];
	p->fd_err = err[0];
	fcntl(p->fd_in, F_SETFL, fcntl(p->fd_in, F_GETFL) | O_NONBLOCK);
	if (p->input_len == 0) {
		close(p->fd_in);
		p->fd_in = -1;
	}
}

static void
tkt_proc_reap(struct tkt_proc *p)
{
	int status;

	if (waitpid(p->pid, &status, 0) != p->pid)
		fail_msg("waitpid(%d): %s", p->pid, strerror(errno));
	p->status = WIFEXITED(status) ? WEXITSTATUS(status) :
					128 + WTERMSIG(status);
}

void
tkt_proc_finish(struct tkt_proc *ps, size_t n)
{
	double deadline = tkt_seconds() + 60.0;
	struct pollfd *fds = calloc(3 * n, sizeof *fds);
	char buf[65536];

	if (!fds)
		fail_msg("out of memory");
	for (;;) {
		size_t nfds = 0;

		for (size_t i = 0; i < n; i++) {
			struct tkt_proc *p = &ps[i];
			if (p->fd_in >= 0)
				fds[nfds++] =
					(struct pollfd){ p->fd_in, POLLOUT, 0 };
			if (p->fd_out >= 0)
				fds[nfds++] =
					(struct pollfd){ p->fd_out, POLLIN, 0 };
			if (p->fd_err >= 0)
				fds[nfds++] =
					(struct pollfd){ p->fd_err, POLLIN, 0 };
		}
		if (nfds == 0)
			break;
		if (tkt_seconds() > deadline) {
			for (size_t i = 0; i < n; i++)
				kill(ps[i].pid, SIGKILL);
			fail_msg("child processes still running after 60 s");
		}
		if (poll(fds, nfds, 1000) < 0 && errno != EINTR)
			fail_msg("poll: %s", strerror(errno));
		for (size_t k = 0; k < nfds; k++) {
			struct tkt_proc *p = NULL;
			ssize_t r;

			if (!fds[k].revents)
				continue;
			for (size_t i = 0; i < n && !p; i++)
				if (fds[k].fd == ps[i].fd_in ||
				    fds[k].fd == ps[i].fd_out ||
				    fds[k].fd == ps[i].fd_err)
					p = &ps[i];
			if (!p)
				continue;
			if (fds[k].fd == p->fd_in) {
				r = write(p->fd_in, p->input + p->input_off,
					  p->input_len - p->input_off);
				if (r > 0)
					p->input_off += (size_t)r;
				if ((r < 0 && errno != EAGAIN &&
				     errno != EINTR) ||
				    p->input_off == p->input_len) {
					close(p->fd_in);
					p->fd_in = -1;
				}
				continue;
			}
			r = read(fds[k].fd, buf, sizeof buf);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				if (fds[k].fd == p->fd_out)
					p->fd_out = -1;
				else
					p->fd_err = -1;
				close(fds[k].fd);
				continue;
			}
			if (fds[k].fd == p->fd_out)
				tkt_append(&p->out, &p->out_len, &p->out_cap,
					   buf, (size_t)r);
			else
				tkt_append(&p->err, &p->err_len, &p->err_cap,
					   buf, (size_t)r);
		}
	}
	free(fds);
	for (size_t i = 0; i < n; i++)
		tkt_proc_reap(&ps[i]);
}

void
tkt_proc_free(struct tkt_proc *p)
{
	free(p->out);
	free(p->err);
	p->out = p->err = NULL;
}

int
tkt_run(struct tkt_proc *p, const char *const argv[], const char *input)
{
	tkt_proc_start(p, argv, input);
	tkt_proc_finish(p, 1);
	return p->status;
}

/* --- checking what a program printed ------------------------------------- */

void
tkt_expect_status(const struct tkt_proc *p, int want, const char *what)
{
	if (p->status != want)
		/* stderr first: cmocka truncates a long message, and the
		 * reason a program gives for its status is on stderr. */
		fail_msg("%s: exit status %d, expected %d\nstderr:\n%s\n"
			 "stdout:\n%s",
			 what, p->status, want, p->err, p->out);
}

void
tkt_expect_contains(const char *hay, const char *needle, const char *what)
{
	if (!strstr(hay, needle))
		fail_msg("%s: \"%s\" not found in:\n%s", what, needle, hay);
}

cJSON *
tkt_parse_json(const char *text, const char *what)
{
	cJSON *j = cJSON_Parse(text);

	if (!j)
		fail_msg("%s: not JSON: %s", what, text);
	return j;
}

const cJSON *
tkt_json_item(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v)
		fail_msg("field \"%s\" missing", key);
	return v;
}

double
tkt_num_at(const cJSON *obj, const char *key)
{
	const cJSON *v = tkt_json_item(obj, key);

	if (!cJSON_IsNumber(v))
		fail_msg("field \"%s\" is not a number", key);
	return v->valuedouble;
}

const char *
tkt_str_at(const cJSON *obj, const char *key)
{
	const cJSON *v = tkt_json_item(obj, key);

	if (!cJSON_IsString(v))
		fail_msg("field \"%s\" is not a string", key);
	return v->valuestring;
}

bool
tkt_bool_at(const cJSON *obj, const char *key)
{
	const cJSON *v = tkt_json_item(obj, key);

	if (!cJSON_IsBool(v))
		fail_msg("field \"%s\" is not a boolean", key);
	return cJSON_IsTrue(v);
}

void
tkt_expect_num(const cJSON *obj, const char *key, double want, const char *what)
{
	double got = tkt_num_at(obj, key);

	if (got != want)
		fail_msg("%s: %s is %.17g, expected %.17g", what, key, got,
			 want);
}

pid_t
tkt_permit_holder(tkshm_table *t, const char *key, int n, double now_ms)
{
	int fds[2];
	pid_t pid;
	char ok;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tkshm_permit p;
		tkshm_decision d;
		char c = 'y';

		close(fds[0]);
		/* Never outlive the test, even one that fails before it
		 * kills us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(120);
		for (int i = 0; i < n; i++)
			if (tkshm_acquire_at(t, key, strlen(key),
					     now_ms < 0 ? tkshm_now_ms() :
							  now_ms,
					     &p, &d) != TKSHM_OK ||
			    !d.allowed)
				c = 'n';
		if (write(fds[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (read(fds[0], &ok, 1) != 1 || ok != 'y')
		fail_msg("child %d could not acquire %d permits", (int)pid, n);
	close(fds[0]);
	return pid;
}

bool
tkt_comma_locale(void)
{
	static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8",
					     "fr_FR.UTF-8", "fr_FR.utf8",
					     "nl_NL.UTF-8", "ru_RU.UTF-8" };
	char dir[512];
	pid_t pid;

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (setlocale(LC_ALL, names[i]) &&
		    strcmp(localeconv()->decimal_point, ",") == 0)
			return true;
	snprintf(dir, sizeof dir, "%s/de_DE.UTF-8", tkt_tmpdir());
	pid = fork();
	if (pid == 0) {
		execlp("localedef", "localedef", "-i", "de_DE", "-f", "UTF-8",
		       dir, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || tkt_wait_bounded(pid, 60) != 0)
		return false;
	setenv("LOCPATH", tkt_tmpdir(), 1);
	return setlocale(LC_ALL, "de_DE.UTF-8") &&
	       strcmp(localeconv()->decimal_point, ",") == 0;
}

void
tkt_copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ssize_t n;

	if (in < 0 || out < 0)
		fail_msg("copy %s -> %s: %s", from, to, strerror(errno));
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			fail_msg("copy %s -> %s: short write", from, to);
	if (n < 0)
		fail_msg("copy %s: %s", from, strerror(errno));
	close(in);
	close(out);
}
