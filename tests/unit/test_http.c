/*
 * test_http.c - the HTTP helpers every binding shares (tkshm_http.h): the
 * client-address key and the RateLimit/Retry-After headers.
 *
 * The expected keys are RFC 5952 text, the form Python's ipaddress prints
 * (bindings/python/tests compares the two on random addresses); the
 * expected headers follow the rounding the header documents: seconds up,
 * Retry-After at least 1.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "test_support.h"
#include "tkshm_http.h"

static void
expect_key(const char *addr, unsigned bits, const char *want)
{
	char out[TKSHM_HTTP_CLIENT_KEY_MAX];
	int n = tkshm_http_client_key(addr, bits, out, sizeof out);
	if (n < 0)
		fail_msg("client_key(%s, /%u) = %s", addr, bits,
			 tkshm_error_name(n));
	if (strcmp(out, want) != 0 || (size_t)n != strlen(want))
		fail_msg("client_key(%s, /%u) = \"%s\" (%d), wanted \"%s\"",
			 addr, bits, out, n, want);
}

static void
expect_key_error(const char *addr, unsigned bits, int want)
{
	char out[TKSHM_HTTP_CLIENT_KEY_MAX] = "untouched";
	assert_rc(tkshm_http_client_key(addr, bits, out, sizeof out), want);
	assert_string_equal(out, "untouched");
}

static void
test_client_key_v4(void **state)
{
	(void)state;
	expect_key("192.0.2.7", 64, "192.0.2.7");
	expect_key("10.0.0.1", 128, "10.0.0.1");
	/* A dual-stack listener sees v4 clients as mapped v6. */
	expect_key("::ffff:192.0.2.7", 64, "192.0.2.7");
	expect_key("::FFFF:c000:0207", 48, "192.0.2.7");
	/* Every octet's digit count, written without printf. */
	expect_key("0.0.0.0", 64, "0.0.0.0");
	expect_key("255.255.255.255", 64, "255.255.255.255");
	expect_key("1.20.100.9", 64, "1.20.100.9");
}

static void
test_client_key_v6_prefix(void **state)
{
	(void)state;
	expect_key("2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64");
	expect_key("2001:db8:1:2:ffff:4:5:6", 64, "2001:db8:1:2::/64");
	expect_key("2001:db8:1:2:3:4:5:6", 48, "2001:db8:1::/48");
	expect_key("2001:db8:abcd:12ff::1", 60, "2001:db8:abcd:12f0::/60");
	expect_key("2001:db8:abcd:12ff::1", 57, "2001:db8:abcd:1280::/57");
	expect_key("2001:db8::1", 128, "2001:db8::1/128");
	expect_key("::1", 64, "::/64");
	expect_key("::1", 128, "::1/128");
	expect_key("ff02::1%eth0", 64, "ff02::/64");
	expect_key("fe80::1%25", 10, "fe80::/10");
	expect_key("8000::", 1, "8000::/1");
	expect_key("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 128,
		   "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128");
}

static void
test_client_key_rfc5952(void **state)
{
	(void)state;
	/* Upper case and leading zeros go; the longest zero run is "::". */
	expect_key("2001:0DB8:0000:0000:0000:0000:0000:0001", 128,
		   "2001:db8::1/128");
	expect_key("2001:0:0:1:0:0:0:1", 128, "2001:0:0:1::1/128");
	/* A tie compresses the first run. */
	expect_key("2001:db8:0:0:1:0:0:1", 128, "2001:db8::1:0:0:1/128");
	/* A single zero group is never "::". */
	expect_key("2001:db8:0:1:1:1:1:1", 128, "2001:db8:0:1:1:1:1:1/128");
	/* A run at the end. */
	expect_key("1:2:3:4:5::", 128, "1:2:3:4:5::/128");
	/* IPv4-compatible addresses in plain hex, unlike inet_ntop. */
	expect_key("::1.2.3.4", 128, "::102:304/128");
}

static void
test_client_key_errors(void **state)
{
	char out[TKSHM_HTTP_CLIENT_KEY_MAX];
	char small[9] = "untouched";
	char longer[200];
	(void)state;
	expect_key_error("", 64, TKSHM_EINVAL);
	expect_key_error("unix:/run/x.sock", 64, TKSHM_EINVAL);
	expect_key_error("1.2.3", 64, TKSHM_EINVAL);
	expect_key_error("1.2.3.4.5", 64, TKSHM_EINVAL);
	expect_key_error("256.1.1.1", 64, TKSHM_EINVAL);
	expect_key_error(" 1.2.3.4", 64, TKSHM_EINVAL);
	expect_key_error("::g", 64, TKSHM_EINVAL);
	expect_key_error("1:2:3:4:5:6:7:8:9", 64, TKSHM_EINVAL);
	expect_key_error("2001:db8::1", 0, TKSHM_EINVAL);
	expect_key_error("2001:db8::1", 129, TKSHM_EINVAL);
	memset(longer, '1', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	expect_key_error(longer, 64, TKSHM_EINVAL);
	assert_rc(tkshm_http_client_key(NULL, 64, out, sizeof out),
		  TKSHM_ENULL);
	assert_rc(tkshm_http_client_key("1.2.3.4", 64, NULL, 10), TKSHM_ENULL);
	/* "2001:db8::/64" needs 14 bytes with its NUL. */
	assert_rc(tkshm_http_client_key("2001:db8::1", 64, small, sizeof small),
		  TKSHM_ENOMEM);
	assert_memory_equal(small, "untouched", sizeof small);
	assert_int_equal(tkshm_http_client_key("1.2.3.4", 64, out, 8), 7);
	assert_rc(tkshm_http_client_key("1.2.3.4", 64, out, 7), TKSHM_ENOMEM);
}

struct headers {
	int n;
	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX];
	char buf[512];
};

static void
build(struct headers *out, const tkshm_decision *d, tkshm_http_style style,
      const char *name, int64_t window_s, double now)
{
	out->n = tkshm_http_headers(d, style, name, window_s, now, out->h,
				    out->buf, sizeof out->buf);
	if (out->n < 0)
		fail_msg("tkshm_http_headers = %s", tkshm_error_name(out->n));
}

static void
expect_header(const struct headers *hs, int i, const char *name,
	      const char *value)
{
	if (i >= hs->n)
		fail_msg("header %d (%s) missing: only %d", i, name, hs->n);
	assert_string_equal(hs->h[i].name, name);
	assert_string_equal(hs->h[i].value, value);
}

static const tkshm_decision allowed = {
	.allowed = true,
	.limit = 10,
	.remaining = 7,
	.reset_at = 1700000003001,
	.retry_after_ms = 0,
};

static const tkshm_decision denied = {
	.allowed = false,
	.limit = 10,
	.remaining = 0,
	.reset_at = 1700000009000,
	.retry_after_ms = 1001,
};

static void
test_headers_draft(void **state)
{
	struct headers hs;
	(void)state;
	build(&hs, &allowed, TKSHM_HTTP_DRAFT, NULL, -1, 1700000000000.5);
	assert_int_equal(hs.n, 2);
	expect_header(&hs, 0, "RateLimit-Policy", "\"default\";q=10");
	/* 3000.5 ms to reset: 4 s, rounded up. */
	expect_header(&hs, 1, "RateLimit", "\"default\";r=7;t=4");

	build(&hs, &denied, TKSHM_HTTP_DRAFT, "api \"v2\" \\ x", 60,
	      1700000000000.0);
	assert_int_equal(hs.n, 3);
	expect_header(&hs, 0, "RateLimit-Policy",
		      "\"api \\\"v2\\\" \\\\ x\";q=10;w=60");
	expect_header(&hs, 1, "RateLimit", "\"api \\\"v2\\\" \\\\ x\";r=0;t=9");
	expect_header(&hs, 2, "Retry-After", "2");
}

static void
test_headers_legacy_and_none(void **state)
{
	struct headers hs;
	(void)state;
	build(&hs, &allowed, TKSHM_HTTP_LEGACY, "ignored", 5, 1700000003001.0);
	assert_int_equal(hs.n, 3);
	expect_header(&hs, 0, "RateLimit-Limit", "10");
	expect_header(&hs, 1, "RateLimit-Remaining", "7");
	expect_header(&hs, 2, "RateLimit-Reset", "0");

	build(&hs, &denied, TKSHM_HTTP_LEGACY, NULL, -1, 1700000010000.0);
	assert_int_equal(hs.n, 4);
	/* reset_at is in the past: 0, never negative. */
	expect_header(&hs, 2, "RateLimit-Reset", "0");
	expect_header(&hs, 3, "Retry-After", "2");

	build(&hs, &allowed, TKSHM_HTTP_NONE, NULL, -1, 0);
	assert_int_equal(hs.n, 0);
	build(&hs, &denied, TKSHM_HTTP_NONE, NULL, -1, 0);
	assert_int_equal(hs.n, 1);
	expect_header(&hs, 0, "Retry-After", "2");
}

static void
test_headers_retry_after_rounding(void **state)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{ 0, "1" },	    { 1, "1" },
		{ 999, "1" },	    { 1000, "1" },
		{ 1001, "2" },	    { 2000, "2" },
		{ 59999, "60" },    { -5, "1" },
		{ INT64_MIN, "1" }, { INT64_MAX, "9223372036854776" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_decision d = denied;
		struct headers hs;
		d.retry_after_ms = cases[i].ms;
		build(&hs, &d, TKSHM_HTTP_NONE, NULL, -1, 0);
		expect_header(&hs, 0, "Retry-After", cases[i].want);
	}
}

static void
test_headers_extremes_fit(void **state)
{
	/* The largest values with the most escapes must fit the documented
	 * buffer size exactly (ASan checks every byte written). */
	char name[101];
	tkshm_decision d = {
		.allowed = false,
		.limit = INT64_MIN,
		.remaining = INT64_MIN,
		.reset_at = INT64_MAX,
		.retry_after_ms = INT64_MAX,
	};
	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX];
	(void)state;
	memset(name, '"', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	size_t need = TKSHM_HTTP_BUF_SIZE(sizeof name - 1);
	char *buf = test_malloc(need);
	assert_int_equal(tkshm_http_headers(&d, TKSHM_HTTP_DRAFT, name,
					    INT64_MAX, 0, h, buf, need),
			 3);
	assert_int_equal(strlen(h[0].value), 2 * 100 + 2 + 23 + 22);
	assert_string_equal(h[2].value, "9223372036854776");
	/* The most negative whole numbers, digit for digit. */
	assert_non_null(strstr(h[0].value, ";q=-9223372036854775808;"
					   "w=9223372036854775807"));
	assert_non_null(strstr(h[1].value, ";r=-9223372036854775808;"
					   "t=9223372036854776"));
	assert_int_equal(tkshm_http_headers(&d, TKSHM_HTTP_LEGACY, name, -1, 0,
					    h, buf, need),
			 4);
	assert_string_equal(h[0].value, "-9223372036854775808");
	assert_string_equal(h[2].value, "9223372036854776");
	assert_string_equal(h[3].value, "9223372036854776");
	assert_rc(tkshm_http_headers(&d, TKSHM_HTTP_DRAFT, name, 1, 0, h, buf,
				     need - 1),
		  TKSHM_ENOMEM);
	test_free(buf);
}

static void
test_headers_bad_input(void **state)
{
	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX] = { { "x", "y" } };
	char buf[256] = "untouched";
	(void)state;
	assert_rc(tkshm_http_headers(NULL, TKSHM_HTTP_DRAFT, NULL, -1, 0, h,
				     buf, sizeof buf),
		  TKSHM_ENULL);
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT, NULL, -1, 0,
				     NULL, buf, sizeof buf),
		  TKSHM_ENULL);
	assert_rc(tkshm_http_headers(&allowed, (tkshm_http_style)3, NULL, -1, 0,
				     h, buf, sizeof buf),
		  TKSHM_EINVAL);
	/* A CR or LF in the name would split the response's headers. */
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT,
				     "a\r\nSet-Cookie: x", -1, 0, h, buf,
				     sizeof buf),
		  TKSHM_EINVAL);
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT, "caf\xc3\xa9",
				     -1, 0, h, buf, sizeof buf),
		  TKSHM_EINVAL);
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT, NULL, -1, NAN,
				     h, buf, sizeof buf),
		  TKSHM_ENOW);
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT, NULL, -1, -1,
				     h, buf, sizeof buf),
		  TKSHM_ENOW);
	assert_rc(tkshm_http_headers(&allowed, TKSHM_HTTP_DRAFT, NULL, -1, 0, h,
				     buf, TKSHM_HTTP_BUF_SIZE(7) - 1),
		  TKSHM_ENOMEM);
	assert_string_equal(buf, "untouched");
	assert_string_equal(h[0].name, "x");
	assert_string_equal(h[0].value, "y");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_key_v4),
		cmocka_unit_test(test_client_key_v6_prefix),
		cmocka_unit_test(test_client_key_rfc5952),
		cmocka_unit_test(test_client_key_errors),
		cmocka_unit_test(test_headers_draft),
		cmocka_unit_test(test_headers_legacy_and_none),
		cmocka_unit_test(test_headers_retry_after_rounding),
		cmocka_unit_test(test_headers_extremes_fit),
		cmocka_unit_test(test_headers_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
