/*
 * main.c - tkshm-syncd, the host's lease agent as a daemon: the command
 * line, and the order of a start.
 *
 * A start goes: configuration (read whole, before anything forks, so that
 * its mistakes reach the terminal) -> in the background, the fork of the
 * daemon (daemonize.h) -> signals -> the pid file's check -> the agent and
 * its tables -> standard streams detached -> the pid file written ->
 * "started", reported to the starting process -> rounds until SIGTERM or
 * SIGINT (READY=1 to a service manager after the first round, SIGHUP's
 * reloads between rounds: run.h) -> the agent freed (its pid cleared from
 * the tables) -> the pid file removed -> "stopped".  The fork and the pid
 * file are for inits that do not supervise: under systemd the daemon runs
 * in the foreground and tells its readiness itself (service.h).
 */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "daemonize.h"
#include "log.h"
#include "pidfile.h"
#include "run.h"
#include "tables.h"
#include "tkshm.h"

#ifndef SD_VERSION
#define SD_VERSION "unknown"
#endif

/* Exit statuses (the man page's EXIT STATUS). */
enum {
	SD_EXIT_OK = 0,
	SD_EXIT_FAIL = 1,  /* a bad configuration, a start that failed */
	SD_EXIT_USAGE = 2, /* a bad command line */
};

struct sd_opts {
	const char *config;
	const char *pidfile; /* -p, NULL: the configuration's */
	bool foreground, check, log_set;
	enum sd_log_target log;
};

static void
sd_usage(FILE *f)
{
	fputs("Usage: " SD_PROG " [-c FILE] [-f] [-p PIDFILE] "
	      "[--log stderr|syslog]\n"
	      "       " SD_PROG " [-c FILE] --check\n"
	      "       " SD_PROG " -h | --version\n"
	      "\n"
	      "The host's lease agent for tkshm tables in lease mode: leases\n"
	      "budget from Redis ahead of need and writes it into the tables,\n"
	      "where workers spend it without waiting on Redis.\n"
	      "\n"
	      "Options:\n"
	      "  -c, --config FILE   the configuration file (default\n"
	      "                      " SD_DEFAULT_CONFIG ")\n"
	      "  -f, --foreground    stay in the foreground, logging to\n"
	      "                      standard error (default: run in the\n"
	      "                      background, logging to syslog)\n"
	      "  -p, --pidfile FILE  write the pid here (an absolute path;\n"
	      "                      default: the configuration's pidfile,\n"
	      "                      in the background " SD_DEFAULT_PIDFILE
	      ")\n"
	      "      --log TARGET    stderr or syslog, whatever the mode\n"
	      "      --check         check the configuration and its tables,\n"
	      "                      then exit (0: good, 1: not)\n"
	      "  -h, --help          show this help\n"
	      "      --version       show the version\n"
	      "\n"
	      "Signals: SIGTERM or SIGINT stops after the current round;\n"
	      "SIGHUP reads the configuration again, keeping the leases\n"
	      "(periods, breaker and new tables; the rest needs a restart).\n"
	      "\n"
	      "Under systemd run it with -f (Type=notify): it sends READY=1\n"
	      "after its first round and logs to the journal; the background\n"
	      "start and the pid file are for other inits.\n"
	      "\n"
	      "Exit status: 0 success, 1 bad configuration or failed start,\n"
	      "2 bad command line.  See tkshm-syncd(8).\n",
	      f);
}

static int sd_usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int
sd_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(SD_PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry '" SD_PROG " --help'.\n", stderr);
	return SD_EXIT_USAGE;
}

/* The option getopt_long() refused: a short one by its letter (it may be
 * one of several in one word), a long one as written (optopt is then 0,
 * or the option's value above any letter). */
static const char *
sd_opt_name(char **argv, char *buf)
{
	if (optopt > 0 && optopt < 128) {
		snprintf(buf, 3, "-%c", optopt);
		return buf;
	}
	return argv[optind - 1];
}

/* Reads the command line into *o; SD_EXIT_OK to carry on, anything else
 * is the exit status (-1: --help or --version done, exit 0). */
static int
sd_parse_args(int argc, char **argv, struct sd_opts *o)
{
	enum {
		OPT_LOG = 256,
		OPT_CHECK,
		OPT_VERSION
	};
	static const struct option longs[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "check", no_argument, NULL, OPT_CHECK },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	char opt[3];
	int ch;

	/* getopt's own messages would not say "Try --help". */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":c:fp:h", longs, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o->config = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'p':
			if (optarg[0] != '/')
				return sd_usage_error("-p: '%s' is not an "
						      "absolute path",
						      optarg);
			if (strlen(optarg) >= PATH_MAX)
				return sd_usage_error("-p: the path is too "
						      "long");
			o->pidfile = optarg;
			break;
		case OPT_LOG:
			if (!sd_log_target_parse(optarg, &o->log))
				return sd_usage_error("--log: '%s' is not "
						      "stderr or syslog",
						      optarg);
			o->log_set = true;
			break;
		case OPT_CHECK:
			o->check = true;
			break;
		case 'h':
			sd_usage(stdout);
			return -1;
		case OPT_VERSION:
			printf(SD_PROG " %s (libtkshm %s)\n", SD_VERSION,
			       tkshm_version());
			return -1;
		case ':':
			return sd_usage_error("%s needs a value",
					      sd_opt_name(argv, opt));
		default:
			return sd_usage_error("unknown option '%s'",
					      sd_opt_name(argv, opt));
		}
	}
	if (optind < argc)
		return sd_usage_error("unexpected argument '%s'", argv[optind]);
	return SD_EXIT_OK;
}

/* --check: the file, its values as the agent sees them, its tables. */
static int
sd_check(struct sd_conf *c)
{
	struct tk_agent *a;
	char err[256] = "";
	int rc;

	if ((rc = tk_agent_new(&c->agent, &a, err, sizeof err)) != TKSHM_OK) {
		sd_log(LOG_ERR, "%s: %s", c->file,
		       err[0] ? err : tkshm_strerror(rc));
		return SD_EXIT_FAIL;
	}
	tk_agent_free(a);
	if (!sd_tables_check(c))
		return SD_EXIT_FAIL;
	printf("%s: ok (%zu table%s)\n", c->file, c->ntables,
	       c->ntables == 1 ? "" : "s");
	return SD_EXIT_OK;
}

/* The start from the signals on, in the process that will run (report:
 * the pipe to the starting process, -1 in the foreground). */
static int
sd_serve(struct sd_conf *c, int report, enum sd_log_target target)
{
	const char *pidfile = c->pidfile[0] ? c->pidfile : NULL;
	struct tk_agent *a = NULL;
	char err[256] = "", addr[400];
	bool ok;
	int rc;

	ok = sd_signals_install() && (!pidfile || sd_pidfile_check(pidfile));
	if (ok &&
	    (rc = tk_agent_new(&c->agent, &a, err, sizeof err)) != TKSHM_OK) {
		sd_log(LOG_ERR, "%s: %s", c->file,
		       err[0] ? err : tkshm_strerror(rc));
		ok = false;
	}
	/* The agent holds its own copy from here on. */
	explicit_bzero(c->agent.redis.password, sizeof c->agent.redis.password);
	ok = ok && sd_tables_attach(c, a);
	/* In the background, standard error stays open only when it is
	 * where the log goes. */
	if (ok && report >= 0)
		ok = sd_detach_stdio(target == SD_LOG_STDERR);
	ok = ok && (!pidfile || sd_pidfile_write(pidfile));
	if (!ok) {
		if (a)
			tk_agent_free(a);
		if (report >= 0)
			sd_report_failure(report, sd_log_last_error());
		return SD_EXIT_FAIL;
	}
	sd_conf_redis_addr(c, addr, sizeof addr);
	sd_log(LOG_INFO,
	       "started: pid %ld, %zu table%s, Redis at %s, a round every "
	       "%g ms",
	       (long)getpid(), c->ntables, c->ntables == 1 ? "" : "s", addr,
	       c->agent.poll_ms);
	if (report >= 0)
		sd_report_ready(report);
	sd_run(a, c);
	tk_agent_free(a);
	if (pidfile)
		sd_pidfile_remove(pidfile);
	sd_log(LOG_INFO, "stopped");
	return SD_EXIT_OK;
}

int
main(int argc, char **argv)
{
	static char conf_abs[PATH_MAX];
	struct sd_opts o = { .config = SD_DEFAULT_CONFIG };
	enum sd_log_target target;
	struct sd_conf c;
	int report = -1, k;

	if ((k = sd_parse_args(argc, argv, &o)) != SD_EXIT_OK)
		return k < 0 ? SD_EXIT_OK : k;
	if (!sd_conf_load(&c, o.config)) {
		sd_conf_free(&c);
		return SD_EXIT_FAIL;
	}
	if (o.pidfile)
		snprintf(c.pidfile, sizeof c.pidfile, "%s", o.pidfile);
	if (o.check) {
		k = sd_check(&c);
		sd_conf_free(&c);
		return k;
	}
	if (!o.foreground && !c.pidfile[0])
		snprintf(c.pidfile, sizeof c.pidfile, "%s", SD_DEFAULT_PIDFILE);
	/* The daemon runs in '/': a SIGHUP reload must find a relative -c
	 * where the start found it. */
	if (!o.foreground && c.file[0] != '/' && realpath(c.file, conf_abs))
		c.file = conf_abs;
	if (!o.foreground && (k = sd_daemonize(&report)) != SD_IN_DAEMON) {
		sd_conf_free(&c);
		return k;
	}
	target = o.log_set    ? o.log :
		 c.log_set    ? c.log :
		 o.foreground ? SD_LOG_STDERR :
				SD_LOG_SYSLOG;
	sd_log_open(target);
	k = sd_serve(&c, report, target);
	sd_log_close();
	sd_conf_free(&c);
	return k;
}
