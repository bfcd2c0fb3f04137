/*
 * test_syncd_service.c - tkshm-syncd under a service manager, as systemd
 * runs it (Type=notify, in the foreground, its standard error the
 * journal's stream): READY=1 on the notification socket only once its
 * tables are served and the first round has reached Redis (or found it
 * down, the failure policy then in force); SIGHUP bracketed by RELOADING=1
 * and READY=1, a changed configuration applied while checks run on the
 * table without the agent ever letting go of it; a broken or refused
 * configuration logged and the old one kept; log lines with the journal's
 * "<N>" priority prefixes.
 *
 * There is no systemd here: the test binds the unix datagram socket that
 * NOTIFY_SOCKET names, and sets JOURNAL_STREAM to the device and inode of
 * the file it gives the daemon as standard error, as systemd would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_server.h"
#include "test_support.h"
#include "tkshm.h"

static struct tkt_redis srv;
static char lease_path[512], lease2_path[512], sock_path[512];
static int notify_fd = -1;
static pid_t daemon_pid, load_pid;

static void
make_table(char *path, size_t len, const char *name, const char *spec)
{
	snprintf(path, len, "%s", tkt_path(name));
	tkshm_close(tkt_file(path, spec, 64));
}

static int
setup(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	(void)state;
	tkt_redis_start(&srv);
	make_table(lease_path, sizeof lease_path, "lease",
		   "fixedWindow:limit=200,windowMs=1000;mode=lease,prefix=v1");
	make_table(lease2_path, sizeof lease2_path, "lease2",
		   "gcra:limit=50,periodMs=1000;mode=lease,prefix=v2");
	snprintf(sock_path, sizeof sock_path, "%s", tkt_path("notify"));
	if (strlen(sock_path) >= sizeof sa.sun_path)
		fail_msg("socket path too long: %s", sock_path);
	strcpy(sa.sun_path, sock_path);
	notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&sa, sizeof sa))
		fail_msg("notify socket %s: %s", sock_path, strerror(errno));
	return 0;
}

/* A daemon or a load process a failed test left running is killed by its
 * pid (only while not reaped: the pid cannot have been reused). */
static void
kill_child(pid_t *pid)
{
	if (*pid > 0 && waitpid(*pid, NULL, WNOHANG) == 0 &&
	    kill(*pid, SIGKILL) == 0)
		waitpid(*pid, NULL, 0);
	*pid = 0;
}

static int
kill_daemon(void **state)
{
	(void)state;
	kill_child(&load_pid);
	kill_child(&daemon_pid);
	return 0;
}

static int
teardown(void **state)
{
	kill_daemon(state);
	if (notify_fd >= 0)
		close(notify_fd);
	tkt_redis_stop(&srv);
	return tkt_teardown(state);
}

static const char *write_conf(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Writes configuration `name` (mode 0600) in the test directory; returns
 * its path (tkt_path's rotating buffer). */
static const char *
write_conf(const char *name, const char *fmt, ...)
{
	const char *path = tkt_path(name);
	char tmp[600];
	va_list ap;
	FILE *f;

	/* Replaced by a rename, as an editor or a package would: the daemon
	 * never reads half a file. */
	snprintf(tmp, sizeof tmp, "%s.new", path);
	f = fopen(tmp, "w");
	if (!f)
		fail_msg("fopen %s: %s", tmp, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	if (chmod(tmp, 0600) != 0 || rename(tmp, path) != 0)
		fail_msg("%s: %s", path, strerror(errno));
	return path;
}

/* Drains notifications left by an earlier test. */
static void
drain_notify(void)
{
	char buf[4096];

	while (recv(notify_fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
		;
}

/* The next notification into buf; fails when none comes within 10 s (a
 * bound on a hang, not a measure). */
static void
next_notify(char *buf, size_t len, const char *what)
{
	struct pollfd p = { .fd = notify_fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, 10000) != 1)
		fail_msg("%s: no notification in 10 s", what);
	n = recv(notify_fd, buf, len - 1, 0);
	if (n < 0)
		fail_msg("%s: recv: %s", what, strerror(errno));
	buf[n] = '\0';
}

/* Starts `tkshm-syncd -f -c conf` with standard error (and output) into
 * `log`, NOTIFY_SOCKET at the test's socket and JOURNAL_STREAM naming the
 * log, as a systemd unit of Type=notify would. */
static pid_t
start_service_stream(const char *conf, const char *log, bool journal)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0600);
	char stream[64];
	struct stat st;
	pid_t pid;

	if (fd < 0 || fstat(fd, &st) != 0)
		fail_msg("open %s: %s", log, strerror(errno));
	/* Not the journal: another file's inode, as a child whose standard
	 * error was redirected inherits. */
	snprintf(stream, sizeof stream, "%llu:%llu",
		 (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (journal ? 0 : 1));
	drain_notify();
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		const char *argv[] = { TKSHM_SYNCD, "-f", "-c", conf, NULL };
		int in = open("/dev/null", O_RDONLY);

		if (in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0 || setenv("NOTIFY_SOCKET", sock_path, 1) ||
		    setenv("JOURNAL_STREAM", stream, 1))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
	daemon_pid = pid;
	return pid;
}

static pid_t
start_service(const char *conf, const char *log)
{
	return start_service_stream(conf, log, true);
}

/* SIGTERM: STOPPING=1, then exit 0. */
static void
stop_service(pid_t pid, const char *log)
{
	char msg[512];
	int status;

	if (kill(pid, SIGTERM) != 0)
		fail_msg("kill: %s", strerror(errno));
	next_notify(msg, sizeof msg, "SIGTERM");
	tkt_expect_contains(msg, "STOPPING=1", "after SIGTERM");
	status = tkt_wait_bounded(pid, 10);
	daemon_pid = 0;
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char *text = tkt_read_file(log, NULL);

		fail_msg("stop: wait status %#x; log:\n%s", status, text);
	}
}

/* A port on 127.0.0.1 held bound (not listening) through *fd: a connect
 * to it is refused, and no other test takes it. */
static int
refusing_port(int *fd)
{
	for (int port = 41000 + getpid() % 9000; port < 55000; port++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr =
						 htonl(INADDR_LOOPBACK) };

		*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (*fd >= 0 && bind(*fd, (struct sockaddr *)&a, sizeof a) == 0)
			return port;
		close(*fd);
	}
	fail_msg("no free port");
	return 0;
}

/* --- readiness ----------------------------------------------------------- */

/* READY=1 is the daemon's first notification, and when it arrives the
 * table names the daemon as its agent and has heard from Redis. */
static void
test_ready_once_tables_are_served(void **state)
{
	char conf[512], log[512], msg[512], want[256];
	tkshm_stats st;
	pid_t pid;
	char *text;

	(void)state;
	snprintf(log, sizeof log, "%s", tkt_path("ready.log"));
	snprintf(conf, sizeof conf, "%s",
		 write_conf("ready.conf",
			    "redis_host = 127.0.0.1\nredis_port = %d\n"
			    "poll_ms = 2\ntable = %s\n",
			    srv.port, lease_path));
	pid = start_service(conf, log);
	next_notify(msg, sizeof msg, "start");
	tkt_expect_contains(msg, "READY=1", "the first notification");
	snprintf(want, sizeof want,
		 "STATUS=serving 1 table, Redis at 127.0.0.1:%d up", srv.port);
	tkt_expect_contains(msg, want, "READY=1's status");
	st = tkt_stats_of(lease_path);
	assert_int_equal(st.global.agent_pid, pid);
	assert_true(st.global.redis_up);
	assert_true(st.global.agent_beat_ms > 0);
	/* The journal's format: a priority, no program name. */
	text = tkt_read_file(log, NULL);
	tkt_expect_contains(text, "<6>started: pid", "the log");
	assert_null(strstr(text, "tkshm-syncd: "));
	free(text);
	stop_service(pid, log);
	text = tkt_read_file(log, NULL);
	tkt_expect_contains(text, "<6>stopped\n", "the log");
	free(text);
	assert_int_equal(tkt_stats_of(lease_path).global.agent_pid, 0);
}

/* Redis refusing: READY=1 all the same, once the first round has found it
 * down and the tables apply their failure policy; the warning is logged
 * at warning priority. */
static void
test_ready_with_redis_down(void **state)
{
	char conf[512], log[512], msg[512], want[256];
	int port, hold;
	pid_t pid;
	char *text;

	(void)state;
	port = refusing_port(&hold);
	snprintf(log, sizeof log, "%s", tkt_path("down.log"));
	snprintf(conf, sizeof conf, "%s",
		 write_conf("down.conf",
			    "redis_host = 127.0.0.1\nredis_port = %d\n"
			    "poll_ms = 2\nconnect_timeout_ms = 50\n"
			    "table = %s\n",
			    port, lease_path));
	pid = start_service(conf, log);
	next_notify(msg, sizeof msg, "start");
	tkt_expect_contains(msg, "READY=1", "the first notification");
	snprintf(want, sizeof want,
		 "Redis at 127.0.0.1:%d down (the tables apply their failure "
		 "policy)",
		 port);
	tkt_expect_contains(msg, want, "READY=1's status");
	assert_false(tkt_stats_of(lease_path).global.redis_up);
	assert_int_equal(tkt_stats_of(lease_path).global.agent_pid, pid);
	text = tkt_read_file(log, NULL);
	tkt_expect_contains(text, "<4>Redis at ", "the log");
	free(text);
	stop_service(pid, log);
	close(hold);
}

/* JOURNAL_STREAM naming another file (inherited by a daemon whose standard
 * error was redirected): plain lines, no priority prefixes. */
static void
test_plain_log_when_stderr_is_not_the_journal(void **state)
{
	char conf[512], log[512], msg[512];
	pid_t pid;
	char *text;

	(void)state;
	snprintf(log, sizeof log, "%s", tkt_path("plain.log"));
	snprintf(conf, sizeof conf, "%s",
		 write_conf("plain.conf",
			    "redis_host = 127.0.0.1\nredis_port = %d\n"
			    "poll_ms = 2\ntable = %s\n",
			    srv.port, lease_path));
	pid = start_service_stream(conf, log, false);
	next_notify(msg, sizeof msg, "start");
	tkt_expect_contains(msg, "READY=1", "the first notification");
	text = tkt_read_file(log, NULL);
	tkt_expect_contains(text, "tkshm-syncd: started: pid", "the log");
	assert_null(strstr(text, "<6>"));
	free(text);
	stop_service(pid, log);
}

/* --- reloads ------------------------------------------------------------- */

/* What the load process saw, in memory shared with the test. */
struct load {
	volatile int stop;
	volatile long checks, allowed, agent_gone, errors;
};

/* Checks 8 keys of the lease table as fast as it can, and looks at the
 * table's agent every 64 checks, until told to stop. */
static pid_t
start_load(struct load *ld, pid_t agent)
{
	pid_t pid;

	fflush(NULL);
	if ((pid = fork()) < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid > 0)
		return load_pid = pid;
	/* Ends with the test, however the test ends. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1)
		_exit(1);
	{
		tkshm_table *t;
		char key[8];

		if (tkshm_open(lease_path, NULL, &t) != TKSHM_OK)
			_exit(1);
		while (!ld->stop) {
			tkshm_decision d;
			tkshm_stats st;

			snprintf(key, sizeof key, "k%ld", ld->checks % 8);
			if (tkshm_check(t, key, strlen(key), 1, &d) != TKSHM_OK)
				ld->errors++;
			else if (d.allowed)
				ld->allowed++;
			if (++ld->checks % 64 == 0 &&
			    (tkshm_stats_get(t, &st) != TKSHM_OK ||
			     st.global.agent_pid != agent))
				ld->agent_gone++;
		}
		tkshm_close(t);
		_exit(0);
	}
}

/* SIGHUP, then RELOADING=1 and READY=1 in that order; returns READY's
 * message in buf. */
static void
reload(pid_t pid, char *buf, size_t len, const char *what)
{
	if (kill(pid, SIGHUP) != 0)
		fail_msg("kill: %s", strerror(errno));
	next_notify(buf, len, what);
	if (!strstr(buf, "RELOADING=1") || !strstr(buf, "MONOTONIC_USEC="))
		fail_msg("%s: '%s' first, expected RELOADING=1", what, buf);
	next_notify(buf, len, what);
	if (!strstr(buf, "READY=1"))
		fail_msg("%s: '%s' after RELOADING=1, expected READY=1", what,
			 buf);
}

static uint64_t
leases_of(const char *path)
{
	return tkt_stats_of(path).global.leases;
}

/* Waits (10 s at most) until the agent grants another lease: it still
 * serves the table. */
static void
expect_leasing(const char *what)
{
	uint64_t before = leases_of(lease_path);
	double deadline = tkt_seconds() + 10;

	while (leases_of(lease_path) == before)
		if (tkt_seconds() > deadline)
			fail_msg("%s: no lease granted in 10 s", what);
		else
			usleep(2000);
}

static const char *
conf_text(int poll_ms, bool second_table)
{
	return write_conf(
		"reload.conf",
		"redis_host = 127.0.0.1\nredis_port = %d\n"
		"poll_ms = %d\nhorizon_ms = 50\ntable = %s\n%s%s%s",
		srv.port, poll_ms, lease_path, second_table ? "table = " : "",
		second_table ? lease2_path : "", second_table ? "\n" : "");
}

static void
expect_log_count(const char *log, const char *needle, int want)
{
	char *text = tkt_read_file(log, NULL);
	int n = 0;

	for (const char *s = text; (s = strstr(s, needle)) != NULL; s++)
		n++;
	if (n != want)
		fail_msg("\"%s\" logged %d times, expected %d:\n%s", needle, n,
			 want, text);
	free(text);
}

/* Reloads that apply (a new poll_ms, a table added), one that cannot
 * parse and one that changes the Redis port, all while a process checks
 * the lease table: the agent never lets go of the table (its pid stays
 * in it, no check falls back to the failure policy), the workers never
 * admit more than the agent leased them, and it leases on afterwards. */
static void
test_reload_under_load(void **state)
{
	struct load *ld = tkt_shared(sizeof *ld);
	char conf[512], log[512], msg[512];
	tkshm_stats before, after;
	pid_t pid, load;

	(void)state;
	snprintf(log, sizeof log, "%s", tkt_path("reload.log"));
	snprintf(conf, sizeof conf, "%s", conf_text(2, false));
	pid = start_service(conf, log);
	next_notify(msg, sizeof msg, "start");
	tkt_expect_contains(msg, "READY=1", "start");
	before = tkt_stats_of(lease_path);
	load = start_load(ld, pid);
	expect_leasing("before the reloads");

	/* Applied: the period, then a second table. */
	conf_text(5, false);
	reload(pid, msg, sizeof msg, "poll_ms 2 -> 5");
	tkt_expect_contains(msg, "STATUS=serving 1 table", "READY=1");
	expect_log_count(log,
			 "<5>reloaded: 1 table (0 added), a round every "
			 "5 ms",
			 1);
	assert_int_equal(tkt_stats_of(lease2_path).global.agent_pid, 0);
	conf_text(3, true);
	reload(pid, msg, sizeof msg, "a table added");
	tkt_expect_contains(msg, "STATUS=serving 2 tables", "READY=1");
	expect_log_count(log,
			 "<5>reloaded: 2 tables (1 added), a round "
			 "every 3 ms",
			 1);
	assert_int_equal(tkt_stats_of(lease2_path).global.agent_pid, pid);
	expect_leasing("after the reloads");

	/* Broken: the old configuration stays. */
	write_conf("reload.conf", "table = %s\ntable = %s\npoll_ms = nope\n",
		   lease_path, lease2_path);
	reload(pid, msg, sizeof msg, "a broken file");
	tkt_expect_contains(msg, "the last reload failed", "READY=1");
	expect_log_count(log, "<3>", 2);
	expect_log_count(log, "reload.conf:3: poll_ms: 'nope' is not a number",
			 1);
	expect_log_count(log,
			 "<3>reload failed: keeping the running "
			 "configuration",
			 1);

	/* Refused: the connection, and a table dropped. */
	write_conf("reload.conf", "redis_port = %d\npoll_ms = 9\ntable = %s\n",
		   srv.port + 1, lease_path);
	reload(pid, msg, sizeof msg, "a refused change");
	tkt_expect_contains(msg,
			    "STATUS=serving 2 tables, Redis at "
			    "127.0.0.1:",
			    "READY=1");
	expect_log_count(log,
			 "changes redis_port, which only a restart "
			 "applies",
			 1);
	expect_log_count(log, "no longer names table", 1);
	expect_log_count(log, "<3>reload failed", 2);
	/* Not even poll_ms: nothing applies unless everything may. */
	expect_log_count(log, "a round every 9 ms", 0);
	expect_leasing("after the failed reloads");

	ld->stop = 1;
	assert_int_equal(tkt_wait_bounded(load, 10), 0);
	load_pid = 0;
	after = tkt_stats_of(lease_path);
	stop_service(pid, log);
	assert_true(ld->checks > 0);
	assert_int_equal(ld->errors, 0);
	assert_int_equal(ld->agent_gone, 0);
	/* No check decided by the failure policy: the agent's heartbeat
	 * and pid never lapsed across the reloads. */
	assert_int_equal(after.global.fallback_allowed,
			 before.global.fallback_allowed);
	assert_int_equal(after.global.fallback_denied,
			 before.global.fallback_denied);
	/* Every admission was paid for by a leased unit: none doubled. */
	assert_true(ld->allowed > 0);
	assert_true((uint64_t)ld->allowed <= after.global.lease_units);
	assert_true(after.allowed - before.allowed == (uint64_t)ld->allowed);
	tkt_shared_free(ld, sizeof *ld);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ready_once_tables_are_served,
					  kill_daemon),
		cmocka_unit_test_teardown(test_ready_with_redis_down,
					  kill_daemon),
		cmocka_unit_test_teardown(
			test_plain_log_when_stderr_is_not_the_journal,
			kill_daemon),
		cmocka_unit_test_teardown(test_reload_under_load, kill_daemon),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
