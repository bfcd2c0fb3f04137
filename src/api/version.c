/*
 * version.c - the library's version and the segment layout version it
 * writes and accepts (the clocks are base/clock.c's).
 */
#include <stdint.h>

#include "shm/layout.h"
#include "tkshm.h"

/* "MAJOR.MINOR.PATCH" from tkshm.h's macros, so the two cannot differ. */
#define TK_STR(x)  #x
#define TK_XSTR(x) TK_STR(x)

const char *
tkshm_version(void)
{
	return TK_XSTR(TKSHM_VERSION_MAJOR) "." TK_XSTR(
		TKSHM_VERSION_MINOR) "." TK_XSTR(TKSHM_VERSION_PATCH);
}

uint32_t
tkshm_layout_version(void)
{
	return TK_LAYOUT_VERSION;
}
