/*
 * crash_point.h - a debug build's way to die at a chosen write to shared
 * memory, so that tests can enumerate every point a process can be killed
 * at (tests/crash/).
 *
 * Built with -DTKSHM_CRASH_POINTS=ON, every write the table is touched with
 * (each store, fetch-add and compare-and-swap in atomic.h, failed CASes
 * included) first calls tk_crash_point(), which counts the calling thread's
 * writes and raises SIGKILL just before the armed one: the process dies
 * exactly as kill -9 would leave it there, with the earlier writes done and
 * that one not.  Arming past the last write lets the call complete, so
 * N = 1 .. writes + 1 covers every state a crash can leave.  Other builds
 * compile the hook to nothing.
 */
#ifndef TKSHM_SHM_CRASH_POINT_H
#define TKSHM_SHM_CRASH_POINT_H

#include <stdint.h>

#ifdef TKSHM_CRASH_POINTS

/* Counts one write of this thread; raises SIGKILL if it is the armed one. */
void tk_crash_point(void);

/* Restarts this thread's count; the n-th write from now on is killed
 * (n = 0: never). */
void tk_crash_arm(uint64_t n);

/* Writes this thread counted since the last tk_crash_arm(). */
uint64_t tk_crash_writes(void);

#define TK_CRASH_POINT() tk_crash_point()
#else
#define TK_CRASH_POINT() ((void)0)
#endif

#endif /* TKSHM_SHM_CRASH_POINT_H */
