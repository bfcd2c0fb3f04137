/*
 * key_text.c - keys as operators read and type them.
 *
 * Keys are arbitrary bytes.  They are shown with the bytes 0x21..0x7e as
 * they are, a backslash as "\\" and every other byte (space included, so a
 * key is one shell word and one column) as "\xNN".  A KEY operand is read
 * back with the same two escapes, so a key copied from `list` names the
 * same bytes in `show`, `reset` and `set`.
 */
#include <stdio.h>
#include <string.h>

#include "inspect.h"

void
ti_key_escape(const unsigned char *key, size_t len, char *buf, size_t cap)
{
	size_t n = 0;

	if (cap == 0)
		return;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = key[i];
		char esc[5];
		size_t m;

		if (c == '\\')
			m = (size_t)snprintf(esc, sizeof esc, "\\\\");
		else if (c >= 0x21 && c <= 0x7e)
			m = (size_t)snprintf(esc, sizeof esc, "%c", c);
		else
			m = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
		if (n + m >= cap)
			break;
		memcpy(buf + n, esc, m);
		n += m;
	}
	buf[n] = '\0';
}

static int
ti_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
ti_key_unescape(const char *cmd, const char *text, unsigned char *out,
		size_t *len)
{
	size_t n = 0;

	for (const char *p = text; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\\') {
			if (p[1] == '\\') {
				p++;
			} else if (p[1] == 'x' && p[2] && p[3] &&
				   ti_hex_digit(p[2]) >= 0 &&
				   ti_hex_digit(p[3]) >= 0) {
				c = (unsigned char)(ti_hex_digit(p[2]) * 16 +
						    ti_hex_digit(p[3]));
				p += 3;
			} else {
				ti_usage_error(
					cmd,
					"bad escape in key '%s' (use \\\\ "
					"or \\xNN)",
					text);
				return false;
			}
		}
		if (n == TKSHM_KEY_MAX) {
			ti_usage_error(cmd, "key longer than %d bytes",
				       TKSHM_KEY_MAX);
			return false;
		}
		out[n++] = c;
	}
	if (n == 0) {
		ti_usage_error(cmd, "the key is empty");
		return false;
	}
	*len = n;
	return true;
}
