/*
 * service.c - the service manager's notifications (service.h).
 */
#include <inttypes.h>
#include <stdint.h>
#include <time.h>

#include "service.h"

#ifdef SD_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>

/* sd_notify's result is not looked at: a manager that does not listen
 * changes nothing in what the daemon does. */
void
sd_svc_ready(const char *status)
{
	(void)sd_notifyf(0, "READY=1\nSTATUS=%s", status);
}

void
sd_svc_reloading(void)
{
	struct timespec now;
	uint64_t usec;

	clock_gettime(CLOCK_MONOTONIC, &now);
	usec = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	(void)sd_notifyf(0,
			 "RELOADING=1\nMONOTONIC_USEC=%" PRIu64
			 "\nSTATUS=reloading the configuration",
			 usec);
}

void
sd_svc_stopping(void)
{
	(void)sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

void
sd_svc_status(const char *status)
{
	(void)sd_notifyf(0, "STATUS=%s", status);
}

#else /* S4 */

void
sd_svc_ready(const char *status)
{
	(void)status;
}

void
sd_svc_reloading(void)
{
}

void
sd_svc_stopping(void)
{
}

void
sd_svc_status(const char *status)
{
	(void)status;
}

#endif
