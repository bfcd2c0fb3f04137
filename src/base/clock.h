/*
 * clock.h - the clocks decisions are made with (clock.c).
 *
 * tkshm_now_ms() (tkshm.h, public): the epoch milliseconds a check uses
 * when the caller gives none (CLOCK_REALTIME, ThrottleKit's clock).
 * tk_mono_ms(): the monotonic milliseconds that time spins and deadlines
 * inside one call; tk_mono_coarse_ms(): the same clock at tick resolution.
 *
 * The floor of src/ (docs/architecture.md): every layer reads its clocks
 * here, none from a layer above its own.
 */
#ifndef TKSHM_BASE_CLOCK_H
#define TKSHM_BASE_CLOCK_H

#include "tkshm.h"

/* Monotonic milliseconds, for how long a call has been running. */
double tk_mono_ms(void);
/* The same clock at tick resolution (a few ns to read), never ahead of
 * tk_mono_ms(): for a start time that may only be early. */
double tk_mono_coarse_ms(void);

#endif /* TKSHM_BASE_CLOCK_H */
