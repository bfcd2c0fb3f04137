/*
 * service.h - what tkshm-syncd tells its service manager (systemd's
 * sd_notify protocol, through libsystemd).
 *
 * S1  READY=1 is sent once the tables are attached and the first round has
 *     run: Redis answered, or it did not and the tables apply their failure
 *     policy.  Either way the tables are served as configured from then on.
 * S2  A reload is bracketed by RELOADING=1 (with MONOTONIC_USEC, as
 *     Type=notify-reload wants) and READY=1, whether the new configuration
 *     was applied or refused; STATUS= says which.
 * S3  STOPPING=1 when a stop signal has been taken.
 * S4  Without NOTIFY_SOCKET in the environment (a terminal, a non-systemd
 *     init) each of these does nothing; without libsystemd at build time
 *     as well.
 */
#ifndef TKSHM_SYNCD_SERVICE_H
#define TKSHM_SYNCD_SERVICE_H

/* READY=1 with STATUS=<status>. */
void sd_svc_ready(const char *status);
/* RELOADING=1, MONOTONIC_USEC=<now>, STATUS=reloading. */
void sd_svc_reloading(void);
void sd_svc_stopping(void);
/* STATUS=<status> alone. */
void sd_svc_status(const char *status);

#endif /* TKSHM_SYNCD_SERVICE_H */
