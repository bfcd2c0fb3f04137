/* The tkshm PHP module: registers the classes, functions and constants,
 * and closes the process's tables and Redis handles when PHP shuts
 * down. */
#include "php_tkshm.h"
#include "tkshm_arginfo.h"

#include <ext/standard/info.h>

static void
register_constants(int module_number)
{
	static const struct {
		const char *name; /* without the TKSHM_ prefix */
		zend_long value;
	} constants[] = {
		{ "ENULL", TKSHM_ENULL },
		{ "EINVAL", TKSHM_EINVAL },
		{ "EKEYEMPTY", TKSHM_EKEYEMPTY },
		{ "EKEYLONG", TKSHM_EKEYLONG },
		{ "ECOST", TKSHM_ECOST },
		{ "ENOW", TKSHM_ENOW },
		{ "EPOLICY", TKSHM_EPOLICY },
		{ "EMISMATCH", TKSHM_EMISMATCH },
		{ "EBADMAGIC", TKSHM_EBADMAGIC },
		{ "EVERSION", TKSHM_EVERSION },
		{ "ESIZE", TKSHM_ESIZE },
		{ "ECORRUPT", TKSHM_ECORRUPT },
		{ "ESYMLINK", TKSHM_ESYMLINK },
		{ "ENOTFILE", TKSHM_ENOTFILE },
		{ "EPERM", TKSHM_EPERM },
		{ "ENOENT", TKSHM_ENOENT },
		{ "EEXIST", TKSHM_EEXIST },
		{ "ENOSPC", TKSHM_ENOSPC },
		{ "ENOMEM", TKSHM_ENOMEM },
		{ "ESYSTEM", TKSHM_ESYSTEM },
		{ "EFULL", TKSHM_EFULL },
		{ "EBUSY", TKSHM_EBUSY },
		{ "EREADONLY", TKSHM_EREADONLY },
		{ "ENOTSUP", TKSHM_ENOTSUP },
		{ "EINTR", TKSHM_EINTR },
		{ "ENOTHELD", TKSHM_ENOTHELD },
		{ "ENOREDIS", TKSHM_ENOREDIS },
		{ "EUNAVAILABLE", TKSHM_EUNAVAILABLE },
		{ "EREDIS", TKSHM_EREDIS },
		{ "ECROSSSLOT", TKSHM_ECROSSSLOT },
		{ "KEY_MAX", TKSHM_KEY_MAX },
		{ "DECISION_EVICTED_DEBTOR", TKSHM_DECISION_EVICTED_DEBTOR },
		{ "DECISION_DEBT_RESTORED", TKSHM_DECISION_DEBT_RESTORED },
		{ "DECISION_CACHED", TKSHM_DECISION_CACHED },
		{ "DECISION_FALLBACK", TKSHM_DECISION_FALLBACK },
		{ "DECISION_NO_LEASE", TKSHM_DECISION_NO_LEASE },
	};
	char name[64];

	for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
		size_t len = (size_t)snprintf(name, sizeof(name), "Tkshm\\%s",
					      constants[i].name);

		zend_register_long_constant(name, len, constants[i].value,
					    CONST_CS | CONST_PERSISTENT,
					    module_number);
	}
	REGISTER_NS_STRING_CONSTANT("Tkshm", "LIBRARY_VERSION",
				    (char *)tkshm_version(),
				    CONST_CS | CONST_PERSISTENT);
}

static PHP_MINIT_FUNCTION(tkshm)
{
	(void)type;
	tkshm_php_exception_register();
	tkshm_php_decision_register();
	tkshm_php_table_register();
	tkshm_php_redis_register();
	register_constants(module_number);
	return SUCCESS;
}

static PHP_MSHUTDOWN_FUNCTION(tkshm)
{
	(void)type;
	(void)module_number;
	/* The tables first: a Redis handle outlives those attached to it. */
	tkshm_php_registry_close_all();
	tkshm_php_redis_close_all();
	return SUCCESS;
}

static PHP_MINFO_FUNCTION(tkshm)
{
	(void)zend_module;
	php_info_print_table_start();
	php_info_print_table_row(2, "tkshm support", "enabled");
	php_info_print_table_row(2, "extension version", PHP_TKSHM_VERSION);
	php_info_print_table_row(2, "library version", tkshm_version());
	php_info_print_table_end();
}

/* Macro entries without separating commas (see tkshm_arginfo.h). */
/* clang-format off */
static const zend_module_dep tkshm_deps[] = {
	/* Tkshm\Exception extends RuntimeException */
	ZEND_MOD_REQUIRED("spl")
	ZEND_MOD_END
};
/* clang-format on */

zend_module_entry tkshm_module_entry = {
	STANDARD_MODULE_HEADER_EX,
	NULL,
	tkshm_deps,
	"tkshm",
	tkshm_php_functions,
	PHP_MINIT(tkshm),
	PHP_MSHUTDOWN(tkshm),
	NULL,
	NULL,
	PHP_MINFO(tkshm),
	PHP_TKSHM_VERSION,
	STANDARD_MODULE_PROPERTIES,
};

/* The one symbol PHP looks up when it loads tkshm.so. */
ZEND_DLEXPORT zend_module_entry *
get_module(void)
{
	return &tkshm_module_entry;
}
