/*
 * fuzz_redis_reply.c - Redis replies, from bytes on the wire to tkshm
 * states.
 *
 * The bytes go through hiredis's RESP parser (redisReader), as a
 * connection's would; every reply it yields is handed to the decoders of
 * src/redis/state_codec.c for every algorithm with a Redis encoding: as a
 * check script's reply (tk_reply_check), as the shaper's
 * (tk_reply_reservation), and whole as a state listing
 * (tk_state_from_reply), then to tk_hosts_store.  A decoded state must be
 * one the algorithm accepts, and deciding from it (tk_algo_peek_w) must
 * work.  Any reply may be refused; none may crash or leak.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "fuzz_common.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "shm/table.h"

/* The policies decoded for: every kind with a Redis encoding, each quota
 * cadence, and a lease table's gcra. */
static const char *const tkf_policies[] = {
	"gcra:limit=3,periodMs=1000,burst=2",
	"tokenBucket:capacity=2,refillPerSec=1",
	"fixedWindow:limit=2,windowMs=1000",
	"slidingWindow:limit=3,windowMs=1000,buckets=4",
	"slidingWindowLog:limit=3,windowMs=1000",
	"quota:limit=3,resetCadence=calendar-month",
	"quota:limit=3,resetCadence=fixed,periodMs=1000,anchor=7",
	"quota:limit=3,resetCadence=rolling,periodMs=1000,buckets=4",
	"leakyBucket:ratePerSec=2,maxQueueMs=1000",
	"tokenBudget:budget=3,windowMs=1000",
	"gcra:limit=3,periodMs=1000;mode=lease",
};
#define TKF_NPOL (sizeof tkf_policies / sizeof tkf_policies[0])

/* hiredis 0.14 allocates an array's element pointers as soon as it reads
 * the count, so "*2147483647\r\n" asks for 16 GiB before any element
 * arrives (fixed upstream in 1.0.1 by maxelements).  Larger arrays than
 * this are refused here, as a reader error: no reply tkshm decodes is
 * near it. */
#define TKF_MAX_ELEMENTS 4096

static struct tk_algo tkf_algo[TKF_NPOL];
static tkshm_table *tkf_table; /* for tk_hosts_store */
static redisReplyObjectFunctions tkf_fn;
static void *(*tkf_create_array)(const redisReadTask *, int);

static void *
tkf_bounded_array(const redisReadTask *task, int elements)
{
	if (elements > TKF_MAX_ELEMENTS)
		return NULL; /* the reader reports an out-of-memory error */
	return tkf_create_array(task, elements);
}

static void
tkf_cleanup(void)
{
	tkshm_close(tkf_table);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	redisReader *r;
	tkshm_policy p;
	char why[160];

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < TKF_NPOL; i++)
		if (tkshm_policy_parse(tkf_policies[i], &p, why, sizeof why) !=
			    TKSHM_OK ||
		    tk_algo_init(&tkf_algo[i], &p, why, sizeof why) != TKSHM_OK)
			abort();
	if (tkshm_policy_gcra(&p, 3, 1000, 2) != TKSHM_OK)
		abort();
	o.policy = &p;
	o.slots = 8;
	if (tkshm_open(NULL, &o, &tkf_table) != TKSHM_OK)
		abort();
	/* hiredis's own functions, with the array count bounded. */
	r = redisReaderCreate();
	if (!r)
		abort();
	tkf_fn = *r->fn;
	redisReaderFree(r);
	tkf_create_array = tkf_fn.createArray;
	tkf_fn.createArray = tkf_bounded_array;
	atexit(tkf_cleanup);
	return 0;
}

/* Decodes a listing for one algorithm and decides from what it gives. */
static void
tkf_state(const struct tk_algo *a, const redisReply *const *e, size_t n,
	  int64_t now_ms)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	tkshm_decision d;
	bool present = true;
	int rc;

	rc = tk_state_from_reply(a, e, n, words, &present);
	TKF_REQUIRE(rc == TKSHM_OK || rc == TKSHM_EREDIS ||
		    rc == TKSHM_ENOTSUP);
	if (rc != TKSHM_OK)
		return;
	TKF_REQUIRE(!present || tk_algo_state_valid_w(a, words));
	tk_algo_peek_w(a, present, words, TKF_T0_MS, &d);
	TKF_REQUIRE(d.remaining >= 0);
	if (now_ms >= 0 && now_ms <= (INT64_C(1) << 53))
		tk_algo_peek_w(a, present, words, (double)now_ms, &d);
}

static void
tkf_reply(const redisReply *r)
{
	const redisReply *const *state;
	tkshm_reservation res;
	tkshm_decision d;
	size_t nstate;
	int64_t now;

	for (size_t i = 0; i < TKF_NPOL; i++) {
		const struct tk_algo *a = &tkf_algo[i];

		if (r->type == REDIS_REPLY_ARRAY)
			tkf_state(a, (const redisReply *const *)r->element,
				  r->elements, -1);
		else
			tkf_state(a, &r, 1, -1);
		if (tk_reply_check(r, &d, &now, &state, &nstate) == TKSHM_OK) {
			/* What the strict path passes on is in range. */
			if (tk_decision_valid(a, &d))
				TKF_REQUIRE(d.remaining >= 0 &&
					    d.retry_after_ms >= 0);
			tkf_state(a, state, nstate, now);
		}
		if (tk_reply_reservation(r, &res, &now, &state, &nstate) ==
		    TKSHM_OK) {
			TKF_REQUIRE(isfinite(res.wait_ms));
			if (tk_reservation_valid(&res))
				TKF_REQUIRE(res.wait_ms >= 0);
			tkf_state(a, state, nstate, now);
		}
	}
	tk_hosts_store(tkf_table, r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReader *rd = redisReaderCreateWithFunctions(&tkf_fn);
	void *reply;

	if (!rd)
		abort();
	/* Whole replies, however many, as the bytes arrive in one read. */
	if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
		while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply) {
			tkf_reply(reply);
			freeReplyObject(reply);
		}
	}
	redisReaderFree(rd);
	return 0;
}
