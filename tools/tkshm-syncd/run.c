/*
 * run.c - the daemon's signals and its loop of rounds (run.h, R1-R4).
 *
 * The stop signals and SIGHUP are blocked while a round runs and let in
 * while the loop sleeps: a round's exchange with Redis is never cut short
 * by a signal (hiredis fails a connect whose poll() is interrupted, which
 * would count against the circuit breaker), and a stop asked for during a
 * round takes effect when it ends.  A signal that arrives between the last
 * look at the flags and the sleep waits at most one poll period.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "reload.h"
#include "run.h"
#include "service.h"
#include "tkshm.h"

static volatile sig_atomic_t sd_stop, sd_hup;
static sigset_t sd_blocked; /* blocked during a round */

static void
sd_on_stop(int sig)
{
	sd_stop = sig;
}

static void
sd_on_hup(int sig)
{
	(void)sig;
	sd_hup = 1;
}

bool
sd_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	/* SA_RESTART for the system calls between rounds; the sleep returns
	 * EINTR all the same (clock_nanosleep is never restarted). */
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = sd_on_stop;
	if (sigaction(SIGTERM, &sa, NULL) != 0 ||
	    sigaction(SIGINT, &sa, NULL) != 0)
		goto fail;
	sa.sa_handler = sd_on_hup;
	if (sigaction(SIGHUP, &sa, NULL) != 0)
		goto fail;
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) != 0)
		goto fail;
	sigemptyset(&sd_blocked);
	sigaddset(&sd_blocked, SIGTERM);
	sigaddset(&sd_blocked, SIGINT);
	sigaddset(&sd_blocked, SIGHUP);
	/* A starter may have left them blocked (foreground mode inherits
	 * its mask). */
	if (sigprocmask(SIG_UNBLOCK, &sd_blocked, NULL) != 0)
		goto fail;
	return true;
fail:
	sd_log(LOG_ERR, "cannot set up signals: %s", strerror(errno));
	return false;
}

static double
sd_secs(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec / 1e9;
}

static void
sd_ts_add_ms(struct timespec *t, double ms)
{
	long long ns = t->tv_nsec + llround(ms * 1e6);

	t->tv_sec += (time_t)(ns / 1000000000);
	t->tv_nsec = (long)(ns % 1000000000);
}

static bool
sd_ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* What the agent did since `from` (its totals then). */
static void
sd_summary(struct tk_agent *a, const struct tk_agent_round *from,
	   uint64_t rounds, const char *what)
{
	struct tk_agent_round t;

	tk_agent_totals(a, &t);
	sd_log(LOG_INFO,
	       "%s: %" PRIu64 " rounds, %" PRIu64 " leases granted (%" PRIu64
	       " units) of %" PRIu64 " asked, %" PRIu64
	       " round trips to Redis, %" PRIu64 " Redis errors",
	       what, rounds, t.leases_granted - from->leases_granted,
	       t.units_granted - from->units_granted,
	       t.leases_asked - from->leases_asked,
	       t.round_trips - from->round_trips,
	       t.redis_errors - from->redis_errors);
}

/* S1: after the first round, Redis answered or the failure policy is in
 * force; the start's report to a background starter came before. */
static void
sd_first_round(const struct sd_conf *c, bool redis_up)
{
	char status[512];

	sd_status_line(c, redis_up, status, sizeof status);
	sd_svc_ready(status);
}

void
sd_run(struct tk_agent *a, struct sd_conf *c)
{
	struct tk_agent_round r, start, last;
	struct timespec next, now;
	uint64_t rounds = 0, rounds_last = 0;
	double summary_at, down_since = 0, told_at = 0;
	bool up = true;	   /* until a round says otherwise */
	bool told = false; /* the last "does not answer" is not answered */
	char addr[400], what[64];

	sd_conf_redis_addr(c, addr, sizeof addr);
	tk_agent_totals(a, &start);
	last = start;
	clock_gettime(CLOCK_MONOTONIC, &next);
	summary_at = sd_secs(&next) + SD_SUMMARY_S;
	while (!sd_stop) {
		/* Between rounds: a reload never cuts one short. */
		if (sd_hup && rounds > 0) {
			sd_hup = 0;
			sd_reload(c, a, up);
		}
		sigprocmask(SIG_BLOCK, &sd_blocked, NULL);
		tk_agent_round(a, tkshm_now_ms(), &r);
		sigprocmask(SIG_UNBLOCK, &sd_blocked, NULL);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &now);
		/* R4; a Redis that keeps failing and recovering (a fault
		 * of some keys only) is told once per summary period. */
		if (up && !r.redis_up &&
		    (!told_at || sd_secs(&now) - told_at >= SD_SUMMARY_S)) {
			char why[256];

			tk_agent_last_error(a, why, sizeof why);
			sd_log(LOG_WARNING,
			       "Redis at %s does not answer (%s): the tables "
			       "apply their failure policy until it does",
			       addr, why[0] ? why : "no reply");
			down_since = told_at = sd_secs(&now);
			told = true;
		} else if (!up && r.redis_up && told) {
			sd_log(LOG_NOTICE,
			       "Redis at %s answers again (down for %.1f s)",
			       addr, sd_secs(&now) - down_since);
			told = false;
		}
		up = r.redis_up;
		/* After R4's warning: the log says why before READY=1. */
		if (rounds == 1)
			sd_first_round(c, up);
		if (sd_secs(&now) >= summary_at) {
			snprintf(what, sizeof what, "in the last %d s",
				 SD_SUMMARY_S);
			sd_summary(a, &last, rounds - rounds_last, what);
			tk_agent_totals(a, &last);
			rounds_last = rounds;
			summary_at = sd_secs(&now) + SD_SUMMARY_S;
		}
		/* R3 */
		sd_ts_add_ms(&next, c->agent.poll_ms);
		if (sd_ts_before(&next, &now)) {
			next = now;
			sd_ts_add_ms(&next, c->agent.poll_ms);
		}
		while (!sd_stop &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next,
				       NULL) == EINTR)
			;
	}
	sd_svc_stopping();
	snprintf(what, sizeof what, "stopping on %s",
		 sd_stop == SIGINT ? "SIGINT" : "SIGTERM");
	sd_summary(a, &start, rounds, what);
}
