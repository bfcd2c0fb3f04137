/*
 * replay_line.c - the line parser of `tkshm-inspect replay`
 * (replay_line.h).  Everything here works on the caller's line; nothing is
 * printed, so the command and the fuzz target share it unchanged.
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"
#include "replay_line.h"

#define TI_WS " \t\r\n\v\f"

/* The short form of a token is at most this long, with its NUL. */
#define TI_SHORT_MAX 48

const char *
ti_short_token(const char *s, char *buf, size_t len)
{
	if (strlen(s) < len)
		return s;
	snprintf(buf, len, "%.*s...", (int)len - 4, s);
	return buf;
}

enum ti_line
ti_replay_line_parse(char *text, size_t len, struct ti_replay_fields *out,
		     char *msg, size_t msg_len)
{
	char *field[3], *save = NULL, *tok;
	char sbuf[TI_SHORT_MAX];
	unsigned nf = 0;

	if (strlen(text) != len) {
		snprintf(msg, msg_len, "contains a NUL byte");
		return TI_LINE_BAD;
	}
	for (tok = strtok_r(text, TI_WS, &save); tok;
	     tok = strtok_r(NULL, TI_WS, &save)) {
		if (nf == 0 && tok[0] == '#')
			return TI_LINE_SKIP;
		if (nf < 3)
			field[nf] = tok;
		nf++;
	}
	if (nf == 0)
		return TI_LINE_SKIP;
	if (nf != 3) {
		snprintf(msg, msg_len,
			 "expected 3 fields (NOW_MS KEY COST), found %u", nf);
		return TI_LINE_BAD;
	}
	if (!ti_parse_decimal(field[0], &out->now)) {
		snprintf(msg, msg_len, "NOW_MS '%s' is not a decimal number",
			 ti_short_token(field[0], sbuf, sizeof sbuf));
		return TI_LINE_BAD;
	}
	if (!ti_parse_decimal(field[2], &out->cost)) {
		snprintf(msg, msg_len, "COST '%s' is not a decimal number",
			 ti_short_token(field[2], sbuf, sizeof sbuf));
		return TI_LINE_BAD;
	}
	out->now_text = field[0];
	out->key = field[1];
	out->cost_text = field[2];
	return TI_LINE_REQUEST;
}
