/*
 * run.h - the daemon's signals and its loop of rounds.
 *
 * R1  Signal handlers only set a flag; every action happens in the loop,
 *     between rounds.
 * R2  SIGTERM and SIGINT stop the daemon after the round in progress.
 *     SIGHUP reloads the configuration between two rounds (reload.h),
 *     the first round done.  SIGPIPE is ignored, so that a Redis
 *     connection closed under a write is an error of that write.
 * R3  Rounds start every poll_ms on CLOCK_MONOTONIC, at absolute
 *     deadlines; a round that overruns its period moves the next deadline
 *     to now + poll_ms rather than running the missed rounds back to back.
 * R4  Redis going down (with why) and coming back are logged once each,
 *     when a round first sees it, and a new fault at most once every
 *     SD_SUMMARY_S seconds (a Redis failing for some keys only would
 *     otherwise fill the log); a summary of the agent's work, Redis
 *     errors included, is logged every SD_SUMMARY_S seconds and when
 *     the loop ends.
 */
#ifndef TKSHM_SYNCD_RUN_H
#define TKSHM_SYNCD_RUN_H

#include <stdbool.h>

#include "agent/agent.h"
#include "config.h"

/* Seconds between the periodic summaries (R4). */
#define SD_SUMMARY_S 60

/* Installs the handlers of R1, R2.  False after reporting a failure. */
bool sd_signals_install(void);

/* Runs rounds until asked to stop (R3, R4), telling the service manager
 * READY=1 after the first (service.h S1); a reload may change *c. */
void sd_run(struct tk_agent *a, struct sd_conf *c);

#endif /* TKSHM_SYNCD_RUN_H */
