/* Tkshm\Exception: every error of the library, thrown with the library's
 * negative code as getCode() and its sentence (or a more precise one the
 * library wrote into an error buffer) as getMessage(). */
#include "php_tkshm.h"

#include <ext/spl/spl_exceptions.h>
#include <zend_exceptions.h>

zend_class_entry *tkshm_php_exception_ce;

void
tkshm_php_exception_register(void)
{
	zend_class_entry ce;

	INIT_NS_CLASS_ENTRY(ce, "Tkshm", "Exception", NULL);
	tkshm_php_exception_ce =
		zend_register_internal_class_ex(&ce, spl_ce_RuntimeException);
}

void
tkshm_php_throw(int code, const char *detail)
{
	const char *msg = detail && detail[0] ? detail : tkshm_strerror(code);

	zend_throw_exception(tkshm_php_exception_ce, msg, (zend_long)code);
}
