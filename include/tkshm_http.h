/*
 * tkshm_http.h - what every HTTP integration of tkshm needs around a
 * decision: the client-address key and the RateLimit response headers.
 *
 * The Apache module, the PHP extension and the Python extension call these
 * two functions, so one table shared by all three keys a client the same
 * way and answers with the same headers.
 *
 * Both calls only compute: they touch no table and no shared memory, are
 * safe from any thread at any time, and follow tkshm.h's conventions
 * (negative tkshm_error codes, nothing printed, nothing aborted, output
 * untouched on error).
 */
#ifndef TKSHM_HTTP_H
#define TKSHM_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "tkshm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Client keys
 * ------------------------------------------------------------------------- */

/** Room for any key tkshm_http_client_key() writes, with its NUL
 *  ("ffff:...:ffff/128" is 43 characters). */
#define TKSHM_HTTP_CLIENT_KEY_MAX 64

/** The default IPv6 aggregation: one host usually owns a whole /64, so a
 *  per-address limit on IPv6 is a limit per /64. */
#define TKSHM_HTTP_V6_PREFIX_DEFAULT 64

/** Writes the rate-limit key of the client at `addr`.
 *  - IPv4 ("192.0.2.7"): the address in dotted-quad form.
 *  - IPv4-mapped IPv6 ("::ffff:192.0.2.7"): the IPv4 address, so a
 *    dual-stack listener keys a client as a v4 listener does.
 *  - Other IPv6 ("2001:db8::1", an optional "%zone" is ignored): the
 *    network of its first `v6_prefix_bits` bits, in RFC 5952 form with the
 *    length: "2001:db8::/64".
 *  @param v6_prefix_bits 1..128 (TKSHM_HTTP_V6_PREFIX_DEFAULT).
 *  @param out   receives the NUL-terminated key; TKSHM_HTTP_CLIENT_KEY_MAX
 *               bytes always suffice.
 *  @return the key's length (> 0); TKSHM_ENULL; TKSHM_EINVAL when `addr`
 *  is not an IPv4 or IPv6 address or v6_prefix_bits is out of range;
 *  TKSHM_ENOMEM when out_len is too small.  `out` is untouched on error. */
TKSHM_API int tkshm_http_client_key(const char *addr, unsigned v6_prefix_bits,
				    char *out, size_t out_len);

/* ---------------------------------------------------------------------------
 * Response headers
 * ------------------------------------------------------------------------- */

/** Which RateLimit headers to send.  Every binding names them with the
 *  same three words, "draft", "legacy" and "none": Python's headers= and
 *  tkshm.headers(style=), PHP's Tkshm\headers($style), Apache's
 *  TkshmHeaders, nginx's tkshm_headers (docs/http-headers.md). */
typedef enum tkshm_http_style {
	/** The IETF draft's structured fields (draft-ietf-httpapi-ratelimit-
	 *  headers):  RateLimit-Policy: "<name>";q=<limit>[;w=<window s>]
	 *             RateLimit: "<name>";r=<remaining>;t=<s to reset> */
	TKSHM_HTTP_DRAFT = 0,
	/** The older separate fields: RateLimit-Limit, RateLimit-Remaining,
	 *  RateLimit-Reset (seconds from now). */
	TKSHM_HTTP_LEGACY = 1,
	/** No RateLimit headers; a denial still gets Retry-After. */
	TKSHM_HTTP_NONE = 2
} tkshm_http_style;

/** One response header; both strings point into the caller's buffer or
 *  are static. */
typedef struct tkshm_http_header {
	const char *name;
	const char *value;
} tkshm_http_header;

/** The most headers tkshm_http_headers() writes. */
#define TKSHM_HTTP_HEADERS_MAX 4

/** The room tkshm_http_headers() asks of `buf` for a policy name of n
 *  bytes (enough for any decision: each of the draft's two values is at
 *  most 2n + 50 bytes, the rest at most 21 each). */
#define TKSHM_HTTP_BUF_SIZE(name_len) (2 * (2 * (name_len) + 2) + 160)

/** Builds the response headers for decision `d`, made at `now_ms` (the
 *  clock the check used), into out[0..n-1]:
 *  - the style's RateLimit headers, with reset seconds
 *    max(0, ceil((reset_at - now_ms) / 1000));
 *  - when d was denied, Retry-After: max(1, ceil(retry_after_ms / 1000)).
 *  @param policy_name  the draft's policy item name; NULL means "default".
 *         Printable ASCII only (0x20..0x7e, so no header injection); '"'
 *         and '\\' are escaped.  Unused by the other styles.
 *  @param window_s     the draft's w= parameter; < 0 leaves it out.
 *  @param buf          holds the values; at least
 *                      TKSHM_HTTP_BUF_SIZE(strlen(name)) bytes.
 *  @return the number of headers written (0..TKSHM_HTTP_HEADERS_MAX);
 *  TKSHM_ENULL; TKSHM_EINVAL for an unknown style or a policy name with a
 *  byte outside 0x20..0x7e; TKSHM_ENOW for a now_ms that is not finite or
 *  is negative; TKSHM_ENOMEM when buf_len is below that size.  out and buf
 *  are untouched on error. */
TKSHM_API int tkshm_http_headers(const tkshm_decision *d,
				 tkshm_http_style style,
				 const char *policy_name, int64_t window_s,
				 double now_ms,
				 tkshm_http_header out[TKSHM_HTTP_HEADERS_MAX],
				 char *buf, size_t buf_len);

#ifdef __cplusplus
}
#endif

#endif /* TKSHM_HTTP_H */
