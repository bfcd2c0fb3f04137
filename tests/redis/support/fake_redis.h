/*
 * fake_redis.h - a scripted Redis server for fault tests.
 *
 * tkt_fake_start() forks a child that listens on 127.0.0.1 (a port the
 * kernel picks) and serves one connection at a time, reading RESP
 * commands: SCRIPT LOAD gets a 40-character sha1, EVALSHA gets the
 * scripted bytes (an error reply, a wrong type, a huge header...), any
 * other command (AUTH, SELECT, PING) +OK.  With gap_ms > 0 the scripted
 * bytes go one at a time, gap_ms apart (a server that trickles); with
 * flood > 0, `flood` bytes of 'x' follow them as fast as the client
 * takes them.  A client that hangs up ends the connection; the next one
 * is served.  The child gets SIGKILL when the thread that started it
 * exits (PR_SET_PDEATHSIG); tkt_fake_stop() kills and reaps it by pid.
 * The helpers fail the running cmocka test rather than return errors.
 */
#ifndef TKSHM_TEST_FAKE_REDIS_H
#define TKSHM_TEST_FAKE_REDIS_H

#include <stddef.h>
#include <sys/types.h>

struct tkt_fake {
	pid_t pid; /* the server; 0 when not running */
	int port;  /* its TCP port on 127.0.0.1 */
};

/* Starts a server answering every EVALSHA with the `len` bytes of
 * `reply` (trickled gap_ms apart when gap_ms > 0), then `flood` bytes
 * of 'x'. */
void tkt_fake_start(struct tkt_fake *f, const char *reply, size_t len,
		    int gap_ms, size_t flood);

/* SIGKILL and reap; nothing when not started. */
void tkt_fake_stop(struct tkt_fake *f);

#endif
