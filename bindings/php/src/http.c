/* Tkshm\headers() and Tkshm\client_key(): the library's tkshm_http_headers()
 * and tkshm_http_client_key(), so a table shared by Apache, PHP-FPM and
 * Python workers keys clients and writes headers the same way in all
 * three. */
#include "php_tkshm.h"

#include <tkshm_http.h>

#include <limits.h>
#include <string.h>

/* "draft", "legacy" or "none"; -1 for anything else. */
static int
style_of(const zend_string *s)
{
	if (zend_string_equals_literal(s, "draft"))
		return TKSHM_HTTP_DRAFT;
	if (zend_string_equals_literal(s, "legacy"))
		return TKSHM_HTTP_LEGACY;
	if (zend_string_equals_literal(s, "none"))
		return TKSHM_HTTP_NONE;
	return -1;
}

PHP_FUNCTION(tkshm_headers)
{
	zval *dz;
	zend_string *name = NULL;
	zend_string *style_str = NULL;
	double now = 0;
	bool now_is_null = true;
	tkshm_http_header out[TKSHM_HTTP_HEADERS_MAX];
	tkshm_decision d;
	size_t buf_len;
	char *buf;
	int style = TKSHM_HTTP_DRAFT;
	int n;

	ZEND_PARSE_PARAMETERS_START(1, 4)
	Z_PARAM_OBJECT_OF_CLASS(dz, tkshm_php_decision_ce)
	Z_PARAM_OPTIONAL
	Z_PARAM_STR_OR_NULL(name)
	Z_PARAM_STR(style_str)
	Z_PARAM_DOUBLE_OR_NULL(now, now_is_null)
	ZEND_PARSE_PARAMETERS_END();

	if (style_str) {
		style = style_of(style_str);
		if (style < 0) {
			tkshm_php_throw(TKSHM_EINVAL,
					"style must be \"draft\", \"legacy\" "
					"or \"none\"");
			RETURN_THROWS();
		}
	}
	/* The library would stop at a NUL; say what is wrong instead. */
	if (name && memchr(ZSTR_VAL(name), '\0', ZSTR_LEN(name))) {
		tkshm_php_throw(TKSHM_EINVAL, "the policy name contains a NUL "
					      "byte");
		RETURN_THROWS();
	}
	if (!tkshm_php_decision_read(Z_OBJ_P(dz), &d))
		RETURN_THROWS();
	buf_len =
		TKSHM_HTTP_BUF_SIZE(name ? ZSTR_LEN(name) : strlen("default"));
	buf = emalloc(buf_len);
	n = tkshm_http_headers(
		&d, (tkshm_http_style)style, name ? ZSTR_VAL(name) : NULL, -1,
		now_is_null ? tkshm_now_ms() : now, out, buf, buf_len);
	if (n < 0) {
		efree(buf);
		tkshm_php_throw(n, n == TKSHM_EINVAL ?
					   "the policy name must be printable "
					   "ASCII (0x20..0x7e)" :
					   NULL);
		RETURN_THROWS();
	}
	array_init_size(return_value, (uint32_t)n);
	for (int i = 0; i < n; i++)
		add_assoc_string(return_value, out[i].name, out[i].value);
	efree(buf);
}

PHP_FUNCTION(tkshm_client_key)
{
	zend_string *addr;
	zend_long prefix = TKSHM_HTTP_V6_PREFIX_DEFAULT;
	char key[TKSHM_HTTP_CLIENT_KEY_MAX];
	int n;

	ZEND_PARSE_PARAMETERS_START(1, 2)
	Z_PARAM_PATH_STR(addr)
	Z_PARAM_OPTIONAL
	Z_PARAM_LONG(prefix)
	ZEND_PARSE_PARAMETERS_END();

	/* The library checks 1..128; a PHP int must first fit its
	 * parameter's type. */
	if (prefix < 0 || prefix > UINT_MAX)
		prefix = 0;
	n = tkshm_http_client_key(ZSTR_VAL(addr), (unsigned)prefix, key,
				  sizeof(key));
	if (n < 0) {
		tkshm_php_throw(n, n == TKSHM_EINVAL ?
					   "not an IPv4 or IPv6 address, or "
					   "v6Prefix is not 1..128" :
					   NULL);
		RETURN_THROWS();
	}
	RETURN_STRINGL(key, (size_t)n);
}
