/*
 * fuzz_table.c - arbitrary bytes as a table file.
 *
 * The bytes are written to a file and attached read-only and read-write
 * (never created); an attached table is verified, walked, counted and
 * asked about its keys, and the read-write handle also decides, resets and
 * overrides.  A hostile file may be refused with any error, but no call may
 * crash, hang, leak or read outside the mapping.
 *
 * Each input is tried twice: as it is, which exercises the header's
 * validation, and with its header checksum recomputed and the file cut or
 * padded to the size its header states, so that mutated slots, labels,
 * wide records and the stored policy get past validation into the code
 * that reads them (a checksum protects against accidents, not against a
 * writer, so readers must survive that too).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fuzz_common.h"
#include "shm/layout.h"
#include "tkshm.h"

/* The largest file the checksum fix-up writes: larger stated sizes are
 * tried only as they are (their geometry is refused by then anyway). */
#define TKF_FIXUP_MAX (1u << 20)

static char tkf_dir[] = "/dev/shm/tkshm-fuzz-table-XXXXXX";
static char tkf_path[sizeof tkf_dir + 8];
static unsigned char *tkf_buf; /* the fixed-up copy, TKF_FIXUP_MAX bytes */

static void
tkf_cleanup(void)
{
	unlink(tkf_path);
	rmdir(tkf_dir);
	free(tkf_buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!mkdtemp(tkf_dir))
		abort();
	snprintf(tkf_path, sizeof tkf_path, "%s/t", tkf_dir);
	tkf_buf = malloc(TKF_FIXUP_MAX);
	if (!tkf_buf)
		abort();
	atexit(tkf_cleanup);
	return 0;
}

/* Replaces the file's contents with exactly these bytes. */
static void
tkf_write(const uint8_t *data, size_t size)
{
	int fd = open(tkf_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t done = 0;

	if (fd < 0)
		abort();
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	close(fd);
}

/* Every read-only question, about the keys the seeds hold and about each
 * key whose whole text a label shows. */
static void
tkf_read(tkshm_table *t, double now)
{
	tkshm_decision d;
	tkshm_forecast f;
	tkshm_entry e;
	tkshm_stats s;
	tkshm_usage u;
	uint64_t cursor = 0, problems = 0;
	unsigned walked = 0;

	TKF_REQUIRE(tkshm_stats_get(t, &s) == TKSHM_OK);
	TKF_REQUIRE(tkshm_usage_get(t, now, &u) == TKSHM_OK);
	(void)tkshm_verify(t, NULL, NULL, &problems);
	for (size_t i = 0; i < TKF_NKEYS; i++) {
		const char *k = tkf_keys[i];
		(void)tkshm_peek_at(t, k, strlen(k), now, &d);
		(void)tkshm_forecast_at(t, k, strlen(k), 2, now, &f);
		(void)tkshm_entry_get_at(t, k, strlen(k), now, &e);
	}
	/* The walk ends: every call moves the cursor past a slot. */
	while (tkshm_entry_next_at(t, &cursor, now, &e) == TKSHM_OK) {
		TKF_REQUIRE(e.slot < s.slots && cursor > e.slot);
		TKF_REQUIRE(e.label_len <= TKSHM_LABEL_MAX);
		if (e.label_len > 0 && e.key_len == e.label_len) {
			/* A copy: the lookup refills e. */
			unsigned char key[TKSHM_LABEL_MAX];
			size_t n = e.label_len;
			tkshm_entry again;

			memcpy(key, e.label, n);
			(void)tkshm_peek_at(t, key, n, now, &d);
			(void)tkshm_entry_get_at(t, key, n, now, &again);
		}
		TKF_REQUIRE(++walked <= s.slots);
	}
}

/* The writers' calls on a read-write handle, for each kind. */
static void
tkf_write_calls(tkshm_table *t, tkshm_kind kind, double now)
{
	tkshm_decision d;
	tkshm_reservation r;
	tkshm_permit p;
	uint64_t reaped;

	for (size_t i = 0; i < TKF_NKEYS; i++) {
		const char *k = tkf_keys[i];
		size_t n = strlen(k);

		switch (kind) {
		case TKSHM_KIND_LEAKY_BUCKET:
			(void)tkshm_reserve_at(t, k, n, 1, now, &r);
			break;
		case TKSHM_KIND_CONCURRENCY:
		case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
			if (tkshm_acquire_at(t, k, n, now, &p, &d) ==
				    TKSHM_OK &&
			    d.allowed)
				(void)tkshm_release_at(t, &p, now + 5,
						       TKSHM_OUTCOME_SUCCESS);
			break;
		default:
			(void)tkshm_check_at(t, k, n, 1, now, &d);
			(void)tkshm_set_remaining_at(t, k, n, 1, now);
			(void)tkshm_block_at(t, k, n, now + 100, now);
			break;
		}
	}
	(void)tkshm_reset(t, tkf_keys[0], strlen(tkf_keys[0]));
	if (kind == TKSHM_KIND_CONCURRENCY ||
	    kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY)
		(void)tkshm_reap(t, &reaped);
}

/* Attaches the file as it is now, both ways, and uses what attaches. */
static void
tkf_attach_all(void)
{
	/* Soon after the seeds' writes, and a day later (every key idle). */
	static const double later[] = { 15, 86400000 };

	for (int rw = 0; rw < 2; rw++) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_table *t = NULL;
		tkshm_stats s;

		o.flags = rw ? 0 : TKSHM_O_RDONLY;
		if (tkshm_open(tkf_path, &o, &t) != TKSHM_OK)
			return;
		TKF_REQUIRE(tkshm_stats_get(t, &s) == TKSHM_OK);
		for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
			tkf_read(t, TKF_T0_MS + later[i]);
		if (rw) {
			tkf_write_calls(t, s.policy.kind, TKF_T0_MS + 20);
			tkf_read(t, TKF_T0_MS + 30);
		}
		tkshm_close(t);
	}
}

/* The input with a valid checksum at the size its header states; false
 * when that is the input itself or not worth a try. */
static bool
tkf_fixup(const uint8_t *data, size_t size, size_t *out_size)
{
	struct tk_header h;
	size_t want;

	if (size < sizeof h)
		return false;
	memcpy(&h, data, sizeof h);
	if (h.file_size < TK_PAGE || h.file_size > TKF_FIXUP_MAX)
		return false;
	want = (size_t)h.file_size;
	h.checksum = XXH64(&h, offsetof(struct tk_header, checksum), 0);
	if (want == size && memcmp(&h, data, sizeof h) == 0)
		return false;
	memset(tkf_buf, 0, want);
	memcpy(tkf_buf, data, size < want ? size : want);
	memcpy(tkf_buf, &h, sizeof h);
	*out_size = want;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t fixed;

	tkf_write(data, size);
	tkf_attach_all();
	if (tkf_fixup(data, size, &fixed)) {
		tkf_write(tkf_buf, fixed);
		tkf_attach_all();
	}
	return 0;
}
