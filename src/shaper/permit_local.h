/*
 * permit_local.h - the permits this process holds, by acquisition.
 *
 * A cell names the process holding it, not the acquisition: if a copy of a
 * released tkshm_permit were released again after this process took the
 * same cell once more, the cell alone would not tell the two apart.  So
 * each acquisition gets a serial, and a release must find (table, key,
 * cell, serial) here first: one release per acquisition, whichever copy or
 * thread tries.  Process-local memory under a process-local mutex (held
 * for a few instructions, never across shared memory); a forked child
 * starts empty, since its parent's permits are not its own.
 */
#ifndef TKSHM_SHAPER_PERMIT_LOCAL_H
#define TKSHM_SHAPER_PERMIT_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

/* Records an acquisition; false when out of memory. */
bool tk_local_add(uint64_t seed, uint64_t fp, uint32_t cell, uint64_t serial);

/* Removes the acquisition; false when it is not recorded (released
 * already). */
bool tk_local_take(uint64_t seed, uint64_t fp, uint32_t cell, uint64_t serial);

#endif /* TKSHM_SHAPER_PERMIT_LOCAL_H */
