/*
 * replay_line.h - one line of `tkshm-inspect replay`'s input, parsed apart
 * from the command so that the fuzz target (tests/fuzz/) runs the very
 * code the command runs.
 *
 * A line is "NOW_MS KEY COST": three tokens separated by white space,
 * NOW_MS and COST decimal numbers (ti_parse_decimal), KEY any token.  A
 * blank line, or one whose first token starts with '#', is skipped.
 */
#ifndef TI_REPLAY_LINE_H
#define TI_REPLAY_LINE_H

#include <stddef.h>

/* What ti_replay_line_parse found. */
enum ti_line {
	TI_LINE_BAD = -1,    /* malformed: the message says why */
	TI_LINE_SKIP = 0,    /* blank or a comment */
	TI_LINE_REQUEST = 1, /* fields filled */
};

/* A request line's fields.  The texts point into the parsed line. */
struct ti_replay_fields {
	const char *now_text, *key, *cost_text;
	double now, cost;
};

/* Long enough for every message of ti_replay_line_parse. */
#define TI_LINE_MSG_MAX 128

/* Parses `text` (`len` bytes from getline, NUL-terminated; a NUL inside
 * makes the line bad), cutting it into tokens in place.  On TI_LINE_BAD,
 * `msg` (of `msg_len` bytes) receives the sentence the command prints
 * after "line N: ". */
enum ti_line ti_replay_line_parse(char *text, size_t len,
				  struct ti_replay_fields *out, char *msg,
				  size_t msg_len);

/* `s`, or its first bytes followed by "..." (in `buf`, of `len` bytes)
 * when it does not fit: a token shortened for a message. */
const char *ti_short_token(const char *s, char *buf, size_t len);

#endif /* TI_REPLAY_LINE_H */
