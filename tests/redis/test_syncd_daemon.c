/*
 * test_syncd_daemon.c - tkshm-syncd as a process: its configuration
 * checks (with the line of each mistake), the command line, a background
 * start (the starter returns only once the daemon has attached its
 * tables and written its pid file; a second start is refused), a clean
 * stop on SIGTERM (exit 0, pid file gone, the tables' agent pid cleared),
 * the foreground's log on standard error, Redis going down and up logged
 * once each, SIGHUP's reload of an unchanged file, starts refused for a
 * missing or non-lease table, and what
 * tkshm-inspect shows of a lease table.  What the agent leases is the
 * engine's tests' business; this is the daemon around it.
 *
 * The test process is a child subreaper (PR_SET_CHILD_SUBREAPER), so a
 * background daemon, orphaned by its starter, becomes its child: the test
 * can wait for it and see its exit status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_redis.h"
#include "redis_server.h"
#include "test_support.h"
#include "tkshm.h"

static struct tkt_redis srv;
static char lease_path[512], lease2_path[512], local_path[512];

/* Daemons started by a test, killed by the teardown if a failed test left
 * them running. */
static pid_t daemons[16];
static size_t ndaemons;

static void
remember_daemon(pid_t pid)
{
	/* Never 0 or less: kill() would take those for process groups,
	 * ours among them. */
	if (pid <= 0)
		fail_msg("no daemon pid (%ld)", (long)pid);
	if (ndaemons < sizeof daemons / sizeof daemons[0])
		daemons[ndaemons++] = pid;
}

static void
make_table(char *path, size_t len, const char *name, const char *spec)
{
	snprintf(path, len, "%s", tkt_path(name));
	tkshm_close(tkt_file(path, spec, 64));
}

static int
setup(void **state)
{
	(void)state;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		fail_msg("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	tkt_redis_start(&srv);
	make_table(lease_path, sizeof lease_path, "lease",
		   "fixedWindow:limit=100,windowMs=1000;mode=lease,prefix=t1");
	make_table(lease2_path, sizeof lease2_path, "lease2",
		   "gcra:limit=50,periodMs=1000;mode=lease,prefix=t2");
	make_table(local_path, sizeof local_path, "local",
		   "fixedWindow:limit=100,windowMs=1000");
	return 0;
}

/* Whether child `pid` runs tkshm-syncd. */
static bool
is_syncd(long pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (!fgets(comm, sizeof comm, f))
		comm[0] = '\0';
	fclose(f);
	return strcmp(comm, "tkshm-syncd\n") == 0;
}

/* After each test: the daemons it started and left running (a failed
 * test) are killed, so that the next test finds its tables unserved and
 * none outlives the test.  Those it knew, then any other child running
 * tkshm-syncd (a daemon whose pid a failed test never learned: orphans
 * are ours, as a subreaper).  Only children not reaped yet are killed:
 * their pids cannot have been reused. */
static int
kill_daemons(void **state)
{
	char path[64];
	long pid;
	FILE *f;

	(void)state;
	for (size_t i = 0; i < ndaemons; i++)
		if (waitpid(daemons[i], NULL, WNOHANG) == 0 &&
		    kill(daemons[i], SIGKILL) == 0)
			waitpid(daemons[i], NULL, 0);
	ndaemons = 0;
	snprintf(path, sizeof path, "/proc/self/task/%ld/children",
		 (long)getpid());
	if (!(f = fopen(path, "r")))
		return 0;
	while (fscanf(f, "%ld", &pid) == 1)
		if (is_syncd(pid) && waitpid((pid_t)pid, NULL, WNOHANG) == 0 &&
		    kill((pid_t)pid, SIGKILL) == 0)
			waitpid((pid_t)pid, NULL, 0);
	fclose(f);
	return 0;
}

static int
teardown(void **state)
{
	kill_daemons(state);
	tkt_redis_stop(&srv);
	return tkt_teardown(state);
}

/* Writes `name` in the test directory (mode `mode`) from a format; returns
 * its path (tkt_path's rotating buffer: copy it to keep it). */
static const char *write_file(const char *name, mode_t mode, const char *fmt,
			      ...) __attribute__((format(printf, 3, 4)));

static const char *
write_file(const char *name, mode_t mode, const char *fmt, ...)
{
	const char *path = tkt_path(name);
	va_list ap;
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	if (!f)
		fail_msg("fopen %s: %s", path, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	if (chmod(path, mode) != 0)
		fail_msg("chmod %s: %s", path, strerror(errno));
	return path;
}

/* A configuration serving the lease table through the test's server,
 * with short periods, plus `extra` lines. */
static const char *
good_conf(const char *name, const char *extra)
{
	return write_file(name, 0600,
			  "# the test's agent\n"
			  "redis_host = 127.0.0.1\n"
			  "redis_port = %d\n"
			  "poll_ms = 2\n"
			  "heartbeat_ms = 50\n"
			  "breaker_open_ms = 50\n"
			  "table = %s\n"
			  "%s",
			  srv.port, lease_path, extra);
}

/* tkshm-syncd with up to 8 arguments, run to its end. */
static int
syncd(struct tkt_proc *p, const char *a1, const char *a2, const char *a3,
      const char *a4, const char *a5)
{
	const char *argv[] = { TKSHM_SYNCD, a1, a2, a3, a4, a5, NULL };

	return tkt_run(p, argv, NULL);
}

/* The pid of the agent a lease table names (0: none). */
static int64_t
agent_pid_of(const char *path)
{
	return tkt_stats_of(path).global.agent_pid;
}

/* The pid in a pid file, 0 when there is none. */
static pid_t
pid_in(const char *path)
{
	char buf[32] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atol(buf);
}

static void
expect_exit0(pid_t pid, const char *what)
{
	int status = tkt_wait_bounded(pid, 10);

	if (status == -1)
		fail_msg("%s: still running 10 s after SIGTERM", what);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s: wait status %#x, expected exit 0", what, status);
}

/* Starts tkshm-syncd with standard output and error into `log` (not
 * waiting for it). */
static pid_t
spawn(const char *log, const char *const argv[])
{
	/* Made here, so that the log exists before the child runs. */
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0600);
	pid_t pid;

	if (fd < 0)
		fail_msg("open %s: %s", log, strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		if (in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fd);
	return pid;
}

static int
count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *s = hay; (s = strstr(s, needle)) != NULL; s++)
		n++;
	return n;
}

/* Waits up to `secs` until `log` holds `needle` `times` times; fails the
 * test, showing the log, when it does not. */
static void
wait_log(const char *log, const char *needle, int times, double secs)
{
	double deadline = tkt_seconds() + secs;

	for (;;) {
		char *text = tkt_read_file(log, NULL);
		int n = count_of(text, needle);

		if (n >= times) {
			free(text);
			return;
		}
		if (tkt_seconds() > deadline)
			fail_msg("\"%s\" not logged %d times in %.0f s:\n%s",
				 needle, times, secs, text);
		free(text);
		usleep(5000);
	}
}

/* --- the configuration --------------------------------------------------- */

static void
test_check_accepts_good_configs(void **state)
{
	struct tkt_proc p;
	char conf[512];
	const char *pw;

	(void)state;
	snprintf(conf, sizeof conf, "%s", good_conf("good.conf", ""));
	syncd(&p, "-c", conf, "--check", NULL, NULL);
	tkt_expect_status(&p, 0, "--check of a good configuration");
	tkt_expect_contains(p.out, "good.conf: ok (1 table)", "--check");
	tkt_proc_free(&p);

	/* Every key, comments, blank lines, blanks around '=', CRLF line
	 * ends, a name without '/' for a table in /dev/shm spelled as an
	 * absolute path, and a password file only its owner can read. */
	pw = write_file("pass", 0600, "s3cret#not-a-comment\n");
	snprintf(conf, sizeof conf, "%s",
		 write_file("full.conf", 0644,
			    "  # every key\r\n"
			    "\r\n"
			    "redis_host=localhost\r\n"
			    "redis_port =  %d\r\n"
			    "redis_username = agent\r\n"
			    "redis_password_file = %s\r\n"
			    "redis_db = 2\r\n"
			    "connect_timeout_ms = 250\r\n"
			    "command_timeout_ms = 100\r\n"
			    "poll_ms = 0.5\r\n"
			    "horizon_ms = 200\r\n"
			    "heartbeat_ms = 500\r\n"
			    "breaker_failures = 5\r\n"
			    "breaker_open_ms = 250\r\n"
			    "server_time = no\r\n"
			    "host_id = web-1\r\n"
			    "pidfile = /run/x.pid\r\n"
			    "log = syslog\r\n"
			    "table = %s\r\n"
			    "\ttable\t=\t%s\t\r\n",
			    srv.port, pw, lease_path, lease2_path));
	syncd(&p, "-c", conf, "--check", NULL, NULL);
	tkt_expect_status(&p, 0, "--check of a configuration with every key");
	tkt_expect_contains(p.out, "ok (2 tables)", "--check");
	tkt_proc_free(&p);
}

struct bad_case {
	const char *text; /* the file; %s: the lease table's path */
	const char *want; /* in the message, after "NAME:" */
};

static void
test_check_refuses_bad_configs(void **state)
{
	char pw_open[512], pw_empty[512];
	char pw_lines[2][700], missing[600], local[600];
	const struct bad_case cases[] = {
		{ "table = %s\npol_ms = 5\n",
		  "bad.conf:2: unknown key 'pol_ms'" },
		{ "table = %s\n# c\npoll_ms = 1x\n",
		  "bad.conf:3: poll_ms: '1x' is not a number" },
		{ "poll_ms = inf\ntable = %s\n", "bad.conf:1: poll_ms: 'inf'" },
		{ "table = %s\npoll_ms = 5000\n",
		  "bad.conf:2: poll_ms: 5000 is out of range (0.1 to 1000)" },
		{ "table = %s\nheartbeat_ms = 0\n",
		  "bad.conf:2: heartbeat_ms: 0 is out of range" },
		{ "table = %s\ncommand_timeout_ms = -1\n",
		  "bad.conf:2: command_timeout_ms: -1 is out of range" },
		{ "table = %s\nredis_port = 70000\n",
		  "bad.conf:2: redis_port: 70000 is out of range (1 to 65535)" },
		{ "table = %s\nredis_port = 0x10\n",
		  "bad.conf:2: redis_port: '0x10' is not a whole number" },
		{ "table = %s\nbreaker_failures = 0\n",
		  "bad.conf:2: breaker_failures: 0 is out of range" },
		{ "table = %s\nserver_time = maybe\n",
		  "bad.conf:2: server_time: 'maybe' is not yes or no" },
		{ "table = %s\nlog = file\n",
		  "bad.conf:2: log: 'file' is not stderr or syslog" },
		{ "table = %s\npoll_ms = 1\n\npoll_ms = 2\n",
		  "bad.conf:4: poll_ms is given twice (first at line 2)" },
		{ "table = %s\nthis line has no equals sign\n",
		  "bad.conf:2: expected 'key = value'" },
		{ "table = %s\nhost_id =\n", "bad.conf:2: host_id: no value" },
		{ "table = %s\npidfile = run/x.pid\n",
		  "bad.conf:2: pidfile: 'run/x.pid' is not an absolute path" },
		{ "table = %s\nredis_unix = /tmp/r.sock\nredis_port = 1\n",
		  "bad.conf:2: redis_unix and redis_host/redis_port (line 3) "
		  "are exclusive" },
		{ "table = %s\nredis_username = u\n",
		  "bad.conf:2: redis_username needs redis_password" },
		{ "table = %s\nredis_password = pw\n",
		  "bad.conf:2: redis_password in a file that others can read" },
		{ "table = %s\ntable = dir/t\n",
		  "bad.conf:2: table: 'dir/t' is relative" },
		{ "table = %s\n\ntable = %s\n",
		  "bad.conf:3: table " /* the path */ },
		{ "# no table\nredis_port = 1\n", "bad.conf: no table" },
		{ pw_lines[0], "bad.conf:2: " },
		{ pw_lines[1], "bad.conf:3: " },
		{ missing, "bad.conf:2: table " },
		{ local, "bad.conf:1: table " },
	};
	char conf[512], want[1024];

	(void)state;
	snprintf(pw_open, sizeof pw_open, "%s",
		 write_file("pass-open", 0644, "pw\n"));
	snprintf(pw_empty, sizeof pw_empty, "%s",
		 write_file("pass-empty", 0600, "\n"));
	snprintf(pw_lines[0], sizeof pw_lines[0],
		 "table = %%s\nredis_password_file = %s\n", pw_open);
	snprintf(pw_lines[1], sizeof pw_lines[1],
		 "table = %%s\n\nredis_password_file = %s\n", pw_empty);
	snprintf(missing, sizeof missing, "table = %%s\ntable = %s\n",
		 tkt_path("no-such-table"));
	snprintf(local, sizeof local, "table = %s\ntable = %%s\n", local_path);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tkt_proc p;

		/* Up to two %s, both the lease table (the format is the
		 * case's own text). */
		snprintf(conf, sizeof conf, "%s", tkt_path("bad.conf"));
		{
			FILE *f = fopen(conf, "w");

			if (!f)
				fail_msg("fopen %s", conf);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
			fprintf(f, cases[i].text, lease_path, lease_path);
#pragma GCC diagnostic pop
			fclose(f);
			/* 0644: the cases about others reading rely on it. */
			chmod(conf, 0644);
		}
		syncd(&p, "-c", conf, "--check", NULL, NULL);
		if (p.status != 1 || p.out[0] != '\0' ||
		    !strstr(p.err, cases[i].want))
			fail_msg("case %zu: exit %d, stdout \"%s\", stderr "
				 "\"%s\"; wanted exit 1 and \"%s\"",
				 i, p.status, p.out, p.err, cases[i].want);
		tkt_proc_free(&p);
	}

	/* What the cases above could only start: the whole messages. */
	{
		struct tkt_proc p;

		snprintf(conf, sizeof conf, "%s",
			 write_file("bad.conf", 0600,
				    "table = %s\n\ntable = %s\n", lease_path,
				    lease_path));
		syncd(&p, "-c", conf, "--check", NULL, NULL);
		snprintf(
			want, sizeof want,
			"bad.conf:3: table %s is named twice (first at line 1)",
			lease_path);
		tkt_expect_status(&p, 1, "a table named twice");
		tkt_expect_contains(p.err, want, "a table named twice");
		tkt_proc_free(&p);

		snprintf(conf, sizeof conf, "%s",
			 write_file("bad.conf", 0600,
				    "table = %s\nredis_password_file = %s\n",
				    lease_path, pw_open));
		syncd(&p, "-c", conf, "--check", NULL, NULL);
		tkt_expect_status(&p, 1, "a password file others can read");
		tkt_expect_contains(p.err, "is open to others (mode 0644)",
				    "a password file others can read");
		tkt_proc_free(&p);

		snprintf(conf, sizeof conf, "%s",
			 write_file("bad.conf", 0600, "table = %s\n",
				    local_path));
		syncd(&p, "-c", conf, "--check", NULL, NULL);
		snprintf(want, sizeof want,
			 "bad.conf:1: table %s is not a lease table (its mode "
			 "is local",
			 local_path);
		tkt_expect_status(&p, 1, "a local table");
		tkt_expect_contains(p.err, want, "a local table");
		tkt_proc_free(&p);

		snprintf(conf, sizeof conf, "%s",
			 write_file("bad.conf", 0600, "table = %s\n",
				    tkt_path("no-such-table")));
		syncd(&p, "-c", conf, "--check", NULL, NULL);
		tkt_expect_status(&p, 1, "a missing table");
		tkt_expect_contains(p.err, "does not exist", "a missing table");
		tkt_proc_free(&p);

		syncd(&p, "-c", tkt_path("no-such.conf"), "--check", NULL,
		      NULL);
		tkt_expect_status(&p, 1, "a missing configuration");
		tkt_expect_contains(p.err,
				    "no-such.conf: cannot read the "
				    "configuration: No such file",
				    "a missing configuration");
		tkt_proc_free(&p);
	}
}

static void
test_command_line(void **state)
{
	struct tkt_proc p;

	(void)state;
	syncd(&p, "--version", NULL, NULL, NULL, NULL);
	tkt_expect_status(&p, 0, "--version");
	tkt_expect_contains(p.out, "tkshm-syncd 0.1.0", "--version");
	tkt_proc_free(&p);
	syncd(&p, "-h", NULL, NULL, NULL, NULL);
	tkt_expect_status(&p, 0, "-h");
	tkt_expect_contains(p.out, "--foreground", "-h");
	tkt_proc_free(&p);
	syncd(&p, "--bogus", NULL, NULL, NULL, NULL);
	tkt_expect_status(&p, 2, "an unknown option");
	tkt_expect_contains(p.err, "unknown option '--bogus'", "--bogus");
	tkt_proc_free(&p);
	syncd(&p, "-f", "-p", "rel.pid", NULL, NULL);
	tkt_expect_status(&p, 2, "a relative pid file");
	tkt_expect_contains(p.err, "-p: 'rel.pid' is not an absolute path",
			    "-p rel.pid");
	tkt_proc_free(&p);
	syncd(&p, "--log", "file", NULL, NULL, NULL);
	tkt_expect_status(&p, 2, "--log file");
	tkt_proc_free(&p);
	syncd(&p, "-c", NULL, NULL, NULL, NULL);
	tkt_expect_status(&p, 2, "-c without a value");
	tkt_expect_contains(p.err, "-c needs a value", "-c");
	tkt_proc_free(&p);
	syncd(&p, "-f", "extra", NULL, NULL, NULL);
	tkt_expect_status(&p, 2, "an operand");
	tkt_proc_free(&p);
}

/* --- a background start and its stop ------------------------------------- */

/* inspect's stats --json of `path`: the "global" object's agentPid and
 * agentRunning. */
static void
inspect_agent(const char *path, int64_t *pid, bool *running)
{
	const char *argv[] = { TKSHM_INSPECT_BIN, "stats", path, "--json",
			       NULL };
	struct tkt_proc p;
	const cJSON *g;
	cJSON *j;

	tkt_run(&p, argv, NULL);
	tkt_expect_status(&p, 0, "tkshm-inspect stats --json");
	j = tkt_parse_json(p.out, "stats --json");
	g = tkt_json_item(j, "global");
	tkt_expect_contains(tkt_str_at(g, "mode"), "lease", "global.mode");
	*pid = (int64_t)tkt_num_at(g, "agentPid");
	*running = tkt_bool_at(g, "agentRunning");
	cJSON_Delete(j);
	tkt_proc_free(&p);
}

static void
test_background_start_and_sigterm(void **state)
{
	char conf[512], pidfile[512], want[128];
	struct tkt_proc p;
	int64_t ipid;
	bool running;
	pid_t pid;

	(void)state;
	snprintf(conf, sizeof conf, "%s", good_conf("bg.conf", ""));
	snprintf(pidfile, sizeof pidfile, "%s", tkt_path("bg.pid"));
	syncd(&p, "-c", conf, "-p", pidfile, NULL);
	tkt_expect_status(&p, 0, "a background start");
	/* Its standard streams went to /dev/null: the start printed
	 * nothing, and tkt_run saw both pipes end. */
	assert_string_equal(p.out, "");
	assert_string_equal(p.err, "");
	tkt_proc_free(&p);

	/* At once, with no waiting: the pid file is there, names a live
	 * process that is not the starter, and the table already names it
	 * (attached before the starter returned). */
	pid = pid_in(pidfile);
	if (pid <= 0)
		fail_msg("no pid file %s after the start returned", pidfile);
	remember_daemon(pid);
	if (kill(pid, 0) != 0)
		fail_msg("the pid file names %ld, which is not running",
			 (long)pid);
	assert_int_equal(agent_pid_of(lease_path), pid);
	/* D1: not a session leader, and not in the test's session. */
	assert_int_not_equal(getsid(pid), pid);
	assert_int_not_equal(getsid(pid), getsid(0));

	/* A second start with the same pid file is refused, and leaves the
	 * file alone. */
	syncd(&p, "-c", conf, "-p", pidfile, NULL);
	tkt_expect_status(&p, 1, "a second start");
	snprintf(want, sizeof want, "already running as pid %ld", (long)pid);
	tkt_expect_contains(p.err, want, "a second start");
	tkt_proc_free(&p);
	assert_int_equal(pid_in(pidfile), pid);
	assert_int_equal(agent_pid_of(lease_path), pid);

	/* tkshm-inspect sees the agent. */
	inspect_agent(lease_path, &ipid, &running);
	assert_int_equal(ipid, pid);
	assert_true(running);

	/* SIGTERM: exit 0, the pid file removed, the table's pid cleared. */
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the background daemon");
	if (access(pidfile, F_OK) == 0)
		fail_msg("the pid file is still there after SIGTERM");
	assert_int_equal(agent_pid_of(lease_path), 0);
	inspect_agent(lease_path, &ipid, &running);
	assert_int_equal(ipid, 0);
	assert_false(running);
}

/* A pid file naming a process that has ended is replaced. */
static void
test_stale_pidfile_is_replaced(void **state)
{
	char conf[512], pidfile[512];
	struct tkt_proc p;
	pid_t dead, pid;

	(void)state;
	dead = fork();
	if (dead < 0)
		fail_msg("fork: %s", strerror(errno));
	if (dead == 0)
		_exit(0);
	tkt_wait_ok(dead);
	snprintf(conf, sizeof conf, "%s", good_conf("stale.conf", ""));
	snprintf(pidfile, sizeof pidfile, "%s",
		 write_file("stale.pid", 0644, "%ld\n", (long)dead));
	syncd(&p, "-c", conf, "-p", pidfile, NULL);
	tkt_expect_status(&p, 0, "a start over a stale pid file");
	tkt_proc_free(&p);
	pid = pid_in(pidfile);
	remember_daemon(pid);
	assert_int_not_equal(pid, dead);
	assert_int_equal(agent_pid_of(lease_path), pid);
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the daemon over a stale pid file");
	assert_int_equal(access(pidfile, F_OK), -1);
}

/* --- the foreground ------------------------------------------------------ */

static void
test_foreground_logs_to_stderr(void **state)
{
	char conf[512], pidfile[512], log[512], want[128];
	const char *argv[] = { TKSHM_SYNCD, "-f",    "-c", conf,
			       "-p",	    pidfile, NULL };
	pid_t pid;

	(void)state;
	snprintf(conf, sizeof conf, "%s", good_conf("fg.conf", ""));
	snprintf(pidfile, sizeof pidfile, "%s", tkt_path("fg.pid"));
	snprintf(log, sizeof log, "%s", tkt_path("fg.log"));
	pid = spawn(log, argv);
	remember_daemon(pid);
	snprintf(want, sizeof want, "tkshm-syncd: started: pid %ld, 1 table",
		 (long)pid);
	wait_log(log, want, 1, 10);
	/* In the foreground it is the process started, with its pid file
	 * written once it runs. */
	assert_int_equal(pid_in(pidfile), pid);
	assert_int_equal(agent_pid_of(lease_path), pid);

	/* SIGHUP reloads the same file (with -p beside it, which a reload
	 * does not take for a change), and the daemon carries on. */
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_log(log, "tkshm-syncd: reloaded: 1 table (0 added)", 1, 10);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), 0);
	assert_int_equal(agent_pid_of(lease_path), pid);

	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the foreground daemon");
	wait_log(log, "tkshm-syncd: stopping on SIGTERM: ", 1, 0);
	wait_log(log, "tkshm-syncd: stopped\n", 1, 0);
	assert_int_equal(access(pidfile, F_OK), -1);
	assert_int_equal(agent_pid_of(lease_path), 0);
}

/* A background daemon runs in '/': a SIGHUP still reloads the file a
 * relative -c named at start (here: a table added). */
static void
test_background_reload_relative_config(void **state)
{
	char pidfile[512], log[512], cwd[PATH_MAX], table2[600];
	const char *argv[] = { TKSHM_SYNCD, "-c",    "bgrel.conf", "-p",
			       pidfile,	    "--log", "stderr",	   NULL };
	pid_t starter, pid;
	int status;

	(void)state;
	good_conf("bgrel.conf", "");
	snprintf(pidfile, sizeof pidfile, "%s", tkt_path("bgrel.pid"));
	snprintf(log, sizeof log, "%s", tkt_path("bgrel.log"));
	if (!getcwd(cwd, sizeof cwd) || chdir(tkt_tmpdir()) != 0)
		fail_msg("chdir %s: %s", tkt_tmpdir(), strerror(errno));
	starter = spawn(log, argv);
	status = tkt_wait_bounded(starter, 10);
	if (chdir(cwd) != 0)
		fail_msg("chdir %s: %s", cwd, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the start: wait status %#x", status);
	pid = pid_in(pidfile);
	remember_daemon(pid);
	snprintf(table2, sizeof table2, "table = %s\n", lease2_path);
	good_conf("bgrel.conf", table2);
	assert_int_equal(kill(pid, SIGHUP), 0);
	wait_log(log, "tkshm-syncd: reloaded: 2 tables (1 added)", 1, 10);
	assert_int_equal(agent_pid_of(lease2_path), pid);
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the background daemon after a reload");
	assert_int_equal(agent_pid_of(lease2_path), 0);
}

/* In the background with --log stderr, standard error stays open: the
 * daemon's messages reach the starter's standard error. */
static void
test_background_log_stderr(void **state)
{
	char conf[512], pidfile[512], log[512], want[128];
	const char *argv[] = { TKSHM_SYNCD, "-c",    conf,     "-p",
			       pidfile,	    "--log", "stderr", NULL };
	pid_t starter, pid;
	int status;

	(void)state;
	snprintf(conf, sizeof conf, "%s", good_conf("bgerr.conf", ""));
	snprintf(pidfile, sizeof pidfile, "%s", tkt_path("bgerr.pid"));
	snprintf(log, sizeof log, "%s", tkt_path("bgerr.log"));
	starter = spawn(log, argv);
	status = tkt_wait_bounded(starter, 10);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the start: wait status %#x", status);
	pid = pid_in(pidfile);
	remember_daemon(pid);
	assert_int_not_equal(pid, starter);
	snprintf(want, sizeof want, "tkshm-syncd: started: pid %ld", (long)pid);
	wait_log(log, want, 1, 0);
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the background daemon logging to stderr");
	wait_log(log, "tkshm-syncd: stopped\n", 1, 0);
}

/* Redis going down and coming back is logged once each, however many
 * rounds see it. */
static void
test_redis_down_and_up_logged_once(void **state)
{
	char conf[512], log[512];
	const char *argv[] = { TKSHM_SYNCD, "-f", "-c", conf, NULL };
	const char *down = "warning: Redis at 127.0.0.1:";
	const char *up = "answers again (down for ";
	char *text;
	pid_t pid;

	(void)state;
	snprintf(conf, sizeof conf, "%s", good_conf("updown.conf", ""));
	snprintf(log, sizeof log, "%s", tkt_path("updown.log"));
	pid = spawn(log, argv);
	remember_daemon(pid);
	wait_log(log, "started", 1, 10);
	tkt_redis_kill(&srv);
	wait_log(log, down, 1, 10);
	/* Many rounds, heartbeats and breaker probes while it is down. */
	usleep(500 * 1000);
	tkt_redis_restart(&srv);
	wait_log(log, up, 1, 10);
	usleep(200 * 1000);
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the daemon that saw Redis go down");
	text = tkt_read_file(log, NULL);
	if (count_of(text, down) != 1 || count_of(text, up) != 1)
		fail_msg("down and up not logged once each:\n%s", text);
	free(text);
}

/* A Redis that connects but answers every script -BUSY is down too, and
 * the log says why; the summary at the stop counts the errors. */
static void
test_error_replies_logged(void **state)
{
	static const char busy[] = "-BUSY Redis is busy running a script\r\n";
	char conf[512], log[512];
	const char *argv[] = { TKSHM_SYNCD, "-f", "-c", conf, NULL };
	struct tkt_fake f;
	char *text;
	pid_t pid;

	(void)state;
	tkt_fake_start(&f, busy, sizeof busy - 1, 0, 0);
	snprintf(conf, sizeof conf, "%s",
		 write_file("busy.conf", 0600,
			    "redis_host = 127.0.0.1\n"
			    "redis_port = %d\n"
			    "poll_ms = 2\n"
			    "heartbeat_ms = 50\n"
			    "breaker_open_ms = 50\n"
			    "table = %s\n",
			    f.port, lease_path));
	snprintf(log, sizeof log, "%s", tkt_path("busy.log"));
	pid = spawn(log, argv);
	remember_daemon(pid);
	wait_log(log, "does not answer (BUSY Redis is busy", 1, 10);
	usleep(200 * 1000);
	assert_int_equal(kill(pid, SIGTERM), 0);
	expect_exit0(pid, "the daemon whose Redis answered BUSY");
	tkt_fake_stop(&f);
	wait_log(log, "Redis errors", 1, 0);
	text = tkt_read_file(log, NULL);
	if (strstr(text, " 0 Redis errors"))
		fail_msg("errors not counted:\n%s", text);
	free(text);
}

/* --- starts refused ------------------------------------------------------ */

/* A start whose second table is not a lease table (or is missing) fails
 * with the table's line, in the foreground and in the background; the
 * first table, attached before, names no agent afterwards; no pid file
 * is left. */
static void
test_start_refuses_bad_tables(void **state)
{
	char missing[512];
	const char *bad[] = { local_path, missing };
	const char *why[] = { "is not a lease table", "does not exist" };

	(void)state;
	snprintf(missing, sizeof missing, "%s", tkt_path("no-such-table"));
	for (size_t i = 0; i < 2; i++) {
		char conf[512], pidfile[512], line[700], tail[700];
		struct tkt_proc p;

		snprintf(line, sizeof line, "table = %s\n", bad[i]);
		snprintf(conf, sizeof conf, "%s",
			 good_conf("refused.conf", line));
		snprintf(pidfile, sizeof pidfile, "%s",
			 tkt_path("refused.pid"));
		/* good_conf's table is on line 7, this one on line 8. */
		snprintf(tail, sizeof tail, "refused.conf:8: table %s", bad[i]);

		syncd(&p, "-f", "-c", conf, "-p", pidfile);
		tkt_expect_status(&p, 1, "a foreground start");
		tkt_expect_contains(p.err, tail, "a foreground start");
		tkt_expect_contains(p.err, why[i], "a foreground start");
		tkt_proc_free(&p);
		assert_int_equal(agent_pid_of(lease_path), 0);
		assert_int_equal(access(pidfile, F_OK), -1);

		/* In the background the daemon's message reaches the
		 * starter through the report pipe. */
		syncd(&p, "-c", conf, "-p", pidfile, NULL);
		tkt_expect_status(&p, 1, "a background start");
		tkt_expect_contains(p.err, tail, "a background start");
		tkt_expect_contains(p.err, why[i], "a background start");
		tkt_proc_free(&p);
		assert_int_equal(agent_pid_of(lease_path), 0);
		assert_int_equal(access(pidfile, F_OK), -1);
	}
}

/* A local table's stats and metrics have no cross-host part; a lease
 * table's metrics have it. */
static void
test_inspect_global_only_for_global_tables(void **state)
{
	const char *stats[] = { TKSHM_INSPECT_BIN, "stats", local_path,
				"--json", NULL };
	const char *text[] = { TKSHM_INSPECT_BIN, "stats", local_path, NULL };
	const char *metrics[] = { TKSHM_INSPECT_BIN, "metrics", local_path,
				  lease_path, NULL };
	struct tkt_proc p;
	char want[700];
	cJSON *j;

	(void)state;
	tkt_run(&p, stats, NULL);
	tkt_expect_status(&p, 0, "stats --json of a local table");
	j = tkt_parse_json(p.out, "stats --json");
	assert_null(cJSON_GetObjectItemCaseSensitive(j, "global"));
	cJSON_Delete(j);
	tkt_proc_free(&p);
	tkt_run(&p, text, NULL);
	tkt_expect_status(&p, 0, "stats of a local table");
	assert_null(strstr(p.out, "cross-host"));
	tkt_proc_free(&p);

	tkt_run(&p, metrics, NULL);
	tkt_expect_status(&p, 0, "metrics");
	snprintf(want, sizeof want,
		 "tkshm_global_mode{table=\"%s\",mode=\"lease\"} 1\n",
		 strrchr(lease_path, '/') + 1);
	tkt_expect_contains(p.out, want, "metrics of a lease table");
	snprintf(want, sizeof want, "tkshm_agent_pid{table=\"%s\"} 0\n",
		 strrchr(lease_path, '/') + 1);
	tkt_expect_contains(p.out, want, "metrics of a lease table");
	snprintf(want, sizeof want, "tkshm_redis_up{table=\"%s\"}",
		 strrchr(local_path, '/') + 1);
	assert_null(strstr(p.out, want));
	snprintf(want, sizeof want, "tkshm_global_mode{table=\"%s\"",
		 strrchr(local_path, '/') + 1);
	assert_null(strstr(p.out, want));
	tkt_proc_free(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_check_accepts_good_configs,
					  kill_daemons),
		cmocka_unit_test_teardown(test_check_refuses_bad_configs,
					  kill_daemons),
		cmocka_unit_test_teardown(test_command_line, kill_daemons),
		cmocka_unit_test_teardown(test_background_start_and_sigterm,
					  kill_daemons),
		cmocka_unit_test_teardown(test_stale_pidfile_is_replaced,
					  kill_daemons),
		cmocka_unit_test_teardown(test_foreground_logs_to_stderr,
					  kill_daemons),
		cmocka_unit_test_teardown(
			test_background_reload_relative_config, kill_daemons),
		cmocka_unit_test_teardown(test_background_log_stderr,
					  kill_daemons),
		cmocka_unit_test_teardown(test_redis_down_and_up_logged_once,
					  kill_daemons),
		cmocka_unit_test_teardown(test_error_replies_logged,
					  kill_daemons),
		cmocka_unit_test_teardown(test_start_refuses_bad_tables,
					  kill_daemons),
		cmocka_unit_test_teardown(
			test_inspect_global_only_for_global_tables,
			kill_daemons),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
