/*
 * fuzz_replay_line.c - the line parser of `tkshm-inspect replay`
 * (tools/tkshm-inspect/replay_line.c), on arbitrary lines.
 *
 * The input is cut into lines as getline would (each keeps its '\n'; a NUL
 * inside a line is the parser's to refuse).  A request must come back with
 * three non-empty tokens free of white space, finite numbers and no token
 * starting with '#' in first place; a refusal must come with a message.
 * The request then goes through a real table (anonymous, gcra) as the
 * command would send it, which must decide or refuse with an input error.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "replay_line.h"
#include "tkshm.h"

static tkshm_table *tkf_table;

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
	tkshm_policy p;

	(void)argc;
	(void)argv;
	if (tkshm_policy_gcra(&p, 5, 1000, 3) != TKSHM_OK)
		abort();
	o.policy = &p;
	o.slots = 64;
	if (tkshm_open(NULL, &o, &tkf_table) != TKSHM_OK)
		abort();
	atexit(tkf_cleanup);
	return 0;
}

static bool
tkf_token_ok(const char *s)
{
	return s[0] != '\0' && strpbrk(s, " \t\r\n\v\f") == NULL;
}

/* One line of `len` bytes (NUL-terminated copy in `line`). */
static void
tkf_line(char *line, size_t len)
{
	struct ti_replay_fields f;
	char msg[TI_LINE_MSG_MAX];
	tkshm_decision d;
	int rc;

	msg[0] = '\0';
	switch (ti_replay_line_parse(line, len, &f, msg, sizeof msg)) {
	case TI_LINE_SKIP:
		return;
	case TI_LINE_BAD:
		TKF_REQUIRE(msg[0] != '\0' && strlen(msg) < sizeof msg);
		return;
	case TI_LINE_REQUEST:
		break;
	}
	TKF_REQUIRE(tkf_token_ok(f.now_text) && tkf_token_ok(f.key) &&
		    tkf_token_ok(f.cost_text));
	TKF_REQUIRE(f.now_text[0] != '#');
	TKF_REQUIRE(isfinite(f.now) && isfinite(f.cost));
	rc = tkshm_check_at(tkf_table, f.key, strlen(f.key), f.cost, f.now, &d);
	TKF_REQUIRE(rc == TKSHM_OK || rc == TKSHM_ENOW || rc == TKSHM_ECOST ||
		    rc == TKSHM_EKEYLONG);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t start = 0;

	while (start < size) {
		const uint8_t *nl = memchr(data + start, '\n', size - start);
		size_t len =
			nl ? (size_t)(nl - data) + 1 - start : size - start;
		char *line = malloc(len + 1);

		if (!line)
			abort();
		memcpy(line, data + start, len);
		line[len] = '\0';
		tkf_line(line, len);
		free(line);
		start += len;
	}
	return 0;
}
