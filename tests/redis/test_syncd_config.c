/*
 * test_syncd_config.c - which files tkshm-syncd takes as its configuration
 * (and its password file), and how strictly it reads their values: the
 * attacks of issue 18, item 6, through `tkshm-syncd -c FILE --check`.
 *
 * The configuration names the Redis server whose leases a root agent
 * writes into the tables.  It must be a regular file (a device or a FIFO
 * is refused before it is opened: /dev/zero once grew the agent to
 * 2.8 GB, a FIFO blocked it forever), at most 64 KiB, owned by root or
 * the user running the agent, writable by nobody else, in directories
 * nobody else can write (sticky ones excepted).  Durations are whole
 * milliseconds (poll_ms: at most 3 decimals), names have a character set,
 * and a UTF-8 byte-order mark is skipped.  --check contacts no Redis, so
 * no server is started here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "tkshm.h"

/* The largest configuration read (tkshm-syncd.8). */
#define CONF_MAX 65536

/* A sanitizer reserves terabytes of address space for its shadow, which
 * an RLIMIT_AS would refuse: the bound is left out under one (the fixed
 * code never reads /dev/zero anyway). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

static char lease_path[512];

static int
setup(void **state)
{
	(void)state;
	snprintf(lease_path, sizeof lease_path, "%s", tkt_path("lease"));
	tkshm_close(tkt_file(lease_path,
			     "fixedWindow:limit=100,windowMs=1000;mode=lease,"
			     "prefix=t1",
			     64));
	return 0;
}

/* Writes `len` bytes to `path` (replacing it), then gives it `mode`. */
static void
put_file(const char *path, mode_t mode, const char *text, size_t len)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		fail_msg("write %s: %s", path, strerror(errno));
	close(fd);
	if (chmod(path, mode) != 0)
		fail_msg("chmod %s: %s", path, strerror(errno));
}

/* A good configuration for the lease table at `path` (mode `mode`), with
 * `before` ahead of its lines and `extra` after them. */
static void
put_conf(const char *path, mode_t mode, const char *before, const char *extra)
{
	char text[2048];
	int n = snprintf(text, sizeof text,
			 "%sredis_port = 6379\ntable = %s\n%s", before,
			 lease_path, extra);

	put_file(path, mode, text, (size_t)n);
}

/* tkshm-syncd -c CONF --check, to its end. */
static void
check(struct tkt_proc *p, const char *conf)
{
	const char *argv[] = { TKSHM_SYNCD, "-c", conf, "--check", NULL };

	tkt_run(p, argv, NULL);
}

/* Fails unless `--check` of conf exits 1 with `want` in its message and
 * nothing on standard output. */
static void
expect_refused(const char *conf, const char *want, const char *what)
{
	struct tkt_proc p;

	check(&p, conf);
	if (p.status != 1 || p.out[0] != '\0' || !strstr(p.err, want))
		fail_msg("%s: exit %d, stdout \"%s\", stderr \"%s\"; wanted "
			 "exit 1 and \"%s\"",
			 what, p.status, p.out, p.err, want);
	tkt_proc_free(&p);
}

/* Fails unless `--check` of conf passes. */
static void
expect_good(const char *conf, const char *what)
{
	struct tkt_proc p;

	check(&p, conf);
	tkt_expect_status(&p, 0, what);
	tkt_expect_contains(p.out, ": ok (1 table)", what);
	tkt_proc_free(&p);
}

/* tkshm-syncd with `argv` in a child bounded in memory (512 MiB of
 * address space, unless sanitized) and time (20 s, then SIGKILL), for what
 * a reader without bounds would read forever or wait on forever.  Fails
 * unless it exits 1 with `want` in its standard error. */
static void
expect_failure_bounded(const char *const argv[], const char *want,
		       const char *what)
{
	const char *log = tkt_path("bounded.log");
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char *text;
	pid_t pid;
	int status;

	if (fd < 0)
		fail_msg("open %s: %s", log, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
#ifndef SANITIZED
		struct rlimit as = { 512UL << 20, 512UL << 20 };

		if (setrlimit(RLIMIT_AS, &as) != 0)
			_exit(126);
#endif
		if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
	status = tkt_wait_bounded(pid, 20);
	text = tkt_read_file(log, NULL);
	if (status == -1)
		fail_msg("%s: still running after 20 s (killed); it printed "
			 "\"%s\"",
			 what, text);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 ||
	    !strstr(text, want))
		fail_msg("%s: wait status %#x, output \"%s\"; wanted exit 1 "
			 "and \"%s\"",
			 what, status, text, want);
	free(text);
}

/* expect_failure_bounded() of --check of conf. */
static void
expect_refused_bounded(const char *conf, const char *want, const char *what)
{
	const char *argv[] = { TKSHM_SYNCD, "-c", conf, "--check", NULL };

	expect_failure_bounded(argv, want, what);
}

/* --- which files are read ------------------------------------------------ */

/* -c /dev/zero read without end; -c FIFO waited for a writer forever. */
static void
test_device_and_fifo_refused_before_open(void **state)
{
	const char *fifo = tkt_path("conf.fifo");
	char conf[512];

	(void)state;
	expect_refused_bounded("/dev/zero",
			       "/dev/zero: the configuration is a character "
			       "device, not a regular file",
			       "-c /dev/zero");
	unlink(fifo);
	if (mkfifo(fifo, 0600) != 0)
		fail_msg("mkfifo %s: %s", fifo, strerror(errno));
	expect_refused_bounded(fifo,
			       "the configuration is a FIFO, not a "
			       "regular file",
			       "-c FIFO");
	expect_refused(tkt_tmpdir(),
		       "the configuration is a directory, not a regular file",
		       "-c DIR");

	/* The same for the password file it names. */
	snprintf(conf, sizeof conf, "%s", tkt_path("pw-fifo.conf"));
	{
		char extra[600];

		snprintf(extra, sizeof extra, "redis_password_file = %s\n",
			 fifo);
		put_conf(conf, 0600, "", extra);
	}
	expect_refused_bounded(conf, "is a FIFO, not a regular file",
			       "redis_password_file = FIFO");
}

/* The pid file's sibling: a FIFO there blocked the start forever (and a
 * device would have been renamed over).  Refused, before any Redis. */
static void
test_pidfile_not_regular_refused(void **state)
{
	const char *fifo = tkt_path("pid.fifo");
	char conf[512], fifo_copy[512], want[700];

	(void)state;
	snprintf(conf, sizeof conf, "%s", tkt_path("pid.conf"));
	snprintf(fifo_copy, sizeof fifo_copy, "%s", fifo);
	put_conf(conf, 0600, "", "");
	unlink(fifo_copy);
	if (mkfifo(fifo_copy, 0600) != 0)
		fail_msg("mkfifo %s: %s", fifo_copy, strerror(errno));
	snprintf(want, sizeof want,
		 "the pid file %s is a FIFO, not a regular file", fifo_copy);
	expect_failure_bounded((const char *const[]){ TKSHM_SYNCD, "-c", conf,
						      "-f", "-p", fifo_copy,
						      NULL },
			       want, "-f -p FIFO");
}

/* A configuration others (or the group) can write names the Redis that a
 * root agent obeys: refused as sshd's StrictModes would. */
static void
test_writable_config_refused(void **state)
{
	char conf[512];

	(void)state;
	snprintf(conf, sizeof conf, "%s", tkt_path("w.conf"));
	put_conf(conf, 0666, "", "");
	expect_refused(conf,
		       "w.conf: the configuration is writable by its group "
		       "and others (mode 0666): chmod go-w it",
		       "a world-writable configuration");
	put_conf(conf, 0602, "", "");
	expect_refused(conf, "is writable by others (mode 0602)",
		       "an others-writable configuration");
	put_conf(conf, 0620, "", "");
	expect_refused(conf, "is writable by its group (mode 0620)",
		       "a group-writable configuration");
	put_conf(conf, 0644, "", "");
	expect_good(conf, "a 0644 configuration");

	/* Owned by someone else: only root can make such a file. */
	if (geteuid() == 0) {
		if (chown(conf, 65534, 65534) != 0)
			fail_msg("chown: %s", strerror(errno));
		expect_refused(conf,
			       "the configuration is owned by uid 65534, not "
			       "by root",
			       "a configuration of another user");
	} else {
		print_message("not root: the owner case is not run\n");
	}
}

/* A directory above the file that others can write lets them replace the
 * file; a sticky one (/tmp) does not. */
static void
test_writable_directory_refused(void **state)
{
	char dir[512], conf[600], link[600], want[700];

	(void)state;
	snprintf(dir, sizeof dir, "%s", tkt_path("open-dir"));
	if (mkdir(dir, 0700) != 0 || chmod(dir, 0777) != 0)
		fail_msg("mkdir %s: %s", dir, strerror(errno));
	snprintf(conf, sizeof conf, "%s/x.conf", dir);
	put_conf(conf, 0600, "", "");
	snprintf(want, sizeof want,
		 "the directory %s is writable by its group and others (mode "
		 "0777)",
		 dir);
	expect_refused(conf, want, "a configuration in a directory of 0777");

	/* Through a symbolic link from a safe directory: what is checked is
	 * where the link leads. */
	snprintf(link, sizeof link, "%s", tkt_path("link.conf"));
	unlink(link);
	if (symlink(conf, link) != 0)
		fail_msg("symlink: %s", strerror(errno));
	expect_refused(link, want, "a link to that configuration");

	if (chmod(dir, 01777) != 0)
		fail_msg("chmod: %s", strerror(errno));
	expect_good(conf, "a configuration in a sticky directory");
	expect_good(link, "a link to a configuration in a sticky directory");
	if (chmod(dir, 0770) != 0)
		fail_msg("chmod: %s", strerror(errno));
	expect_refused(conf, "is writable by its group (mode 0770)",
		       "a configuration in a directory of 0770");
}

/* At most 64 KiB: the file is read whole before the agent forks. */
static void
test_size_capped(void **state)
{
	const char *conf = tkt_path("big.conf");
	char head[1024], *text = malloc(CONF_MAX + 2);
	int n;

	(void)state;
	if (!text)
		fail_msg("out of memory");
	n = snprintf(head, sizeof head, "table = %s\n", lease_path);
	memcpy(text, head, (size_t)n);
	/* One comment line fills the rest, up to exactly CONF_MAX bytes. */
	text[n] = '#';
	memset(text + n + 1, 'x', CONF_MAX - (size_t)n - 2);
	text[CONF_MAX - 1] = '\n';
	put_file(conf, 0600, text, CONF_MAX);
	expect_good(conf, "a configuration of exactly 64 KiB");

	text[CONF_MAX - 1] = 'x';
	text[CONF_MAX] = '\n';
	put_file(conf, 0600, text, CONF_MAX + 1);
	expect_refused(conf,
		       "big.conf: the configuration is too large (65537 "
		       "bytes; at most 65536)",
		       "a configuration of 64 KiB + 1");
	free(text);
}

/* --- how its values are read --------------------------------------------- */

struct bad_value {
	const char *line; /* after a good configuration */
	const char *want; /* in the message */
};

/* Durations that are not whole milliseconds in range, names outside their
 * character set, bytes that would reach a terminal or syslog raw. */
static void
test_loose_values_refused(void **state)
{
	char long_id[200];
	const struct bad_value cases[] = {
		{ "command_timeout_ms = 1e-300\n",
		  "c.conf:3: command_timeout_ms: '1e-300' is not a whole "
		  "number of milliseconds" },
		{ "connect_timeout_ms = 0.5\n",
		  "connect_timeout_ms: '0.5' is not a whole number" },
		{ "command_timeout_ms = 0\n",
		  "command_timeout_ms: 0 is out of range (1 to 86400000)" },
		{ "command_timeout_ms = 86400001\n",
		  "command_timeout_ms: 86400001 is out of range" },
		{ "command_timeout_ms = -5\n",
		  "command_timeout_ms: -5 is out of range" },
		{ "horizon_ms = 1e3\n", "horizon_ms: '1e3' is not a whole" },
		{ "heartbeat_ms = 99999999999999999999999\n",
		  "heartbeat_ms: 99999999999999999999999 is out of range" },
		{ "breaker_open_ms = +5\n", "breaker_open_ms: '+5' is not" },
		{ "redis_db = 18446744073709551617\n",
		  "redis_db: 18446744073709551617 is out of range" },
		{ "poll_ms = 1e-300\n", "poll_ms: '1e-300' is not a number" },
		{ "poll_ms = 0.0005\n", "poll_ms: '0.0005' is not a number" },
		{ "poll_ms = .5\n", "poll_ms: '.5' is not a number" },
		{ "poll_ms = 0.09\n",
		  "poll_ms: 0.09 is out of range (0.1 to 1000)" },
		{ "poll_ms = 99999999999999999999999\n",
		  "poll_ms: 99999999999999999999999 is out of range" },
		{ "host_id = web 1\n",
		  "c.conf:3: host_id: 'web 1' has a character outside A-Z "
		  "a-z 0-9 . _ - (byte 4)" },
		{ "host_id = web:1\n", "host_id: 'web:1' has a character" },
		{ "host_id = h\xc3\xa9te\n", "host_id: 'h" },
		{ long_id, "host_id: too long (128 bytes; at most 127)" },
		{ "redis_host = 10.0.0.5 6379\n",
		  "redis_host: '10.0.0.5 6379' has a character outside" },
		{ "redis_username = a b\n",
		  "redis_username: 'a b' has a blank" },
		{ "host_id = a\x1b[2Jb\n",
		  "c.conf:3: a control character (0x1b) in the line" },
		{ "ho\x1bst_id = a\n", "c.conf:3: a control character (0x1b)" },
	};
	const char *conf = tkt_path("c.conf");

	(void)state;
	snprintf(long_id, sizeof long_id, "host_id = %0128d\n", 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char what[64];

		snprintf(what, sizeof what, "case %zu", i);
		put_conf(conf, 0600, "", cases[i].line);
		expect_refused(conf, cases[i].want, what);
	}
}

/* What the rules above still take: whole and fractional values at their
 * bounds, every character of a name's set. */
static void
test_strict_values_accepted(void **state)
{
	const char *conf = tkt_path("ok.conf");

	(void)state;
	put_conf(conf, 0600, "",
		 "connect_timeout_ms = 1\n"
		 "command_timeout_ms = 86400000\n"
		 "poll_ms = 0.125\n"
		 "horizon_ms = 0060000\n"
		 "heartbeat_ms = 10\n"
		 "breaker_open_ms = 600000\n"
		 "host_id = Web-1.example_ORG.9\n"
		 "redis_host = fe80::1%eth0\n");
	expect_good(conf, "values at their bounds");
	put_conf(conf, 0600, "", "poll_ms = 1000\nredis_host = h-1.example\n");
	expect_good(conf, "poll_ms at its top");
}

/* A UTF-8 byte-order mark, as some editors write one, is skipped; UTF-16
 * is refused with its reason. */
static void
test_byte_order_mark(void **state)
{
	const char *conf = tkt_path("bom.conf");
	const char utf16[] = "\xff\xfet\0a\0b\0";

	(void)state;
	put_conf(conf, 0600, "\xef\xbb\xbf", "");
	expect_good(conf, "a UTF-8 byte-order mark");
	put_conf(conf, 0600, "\xef\xbb\xbf# a comment first\n", "");
	expect_good(conf, "a byte-order mark before a comment");
	/* Only at the start: anywhere else it is part of a key. */
	put_conf(conf, 0600, "\n\xef\xbb\xbfpoll_ms = 2\n", "");
	expect_refused(conf, "bom.conf:2: unknown key",
		       "a byte-order mark on line 2");
	put_file(conf, 0600, utf16, sizeof utf16 - 1);
	expect_refused(conf,
		       "the configuration is UTF-16 (it starts with the "
		       "byte-order mark FF FE): save it as UTF-8",
		       "UTF-16");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_and_fifo_refused_before_open),
		cmocka_unit_test(test_pidfile_not_regular_refused),
		cmocka_unit_test(test_writable_config_refused),
		cmocka_unit_test(test_writable_directory_refused),
		cmocka_unit_test(test_size_capped),
		cmocka_unit_test(test_loose_values_refused),
		cmocka_unit_test(test_strict_values_accepted),
		cmocka_unit_test(test_byte_order_mark),
	};

	return cmocka_run_group_tests(tests, setup, tkt_teardown);
}
