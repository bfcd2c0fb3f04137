/*
 * tkshm_arginfo.h - the argument and return types of every function and
 * method, as tkshm.stub.php declares them (written by hand to match it;
 * tests/api_test.php compares the loaded extension with the stub's
 * signatures through Reflection), and the function tables that use them.
 * Included by module.c only: the arginfo arrays are static.
 */
#ifndef TKSHM_ARGINFO_H
#define TKSHM_ARGINFO_H

#include <php.h>

/* Tkshm\Table::__construct(string $path, string $policy, int $slots = 0,
 *                          int $mode = 0600, bool $keep = false,
 *                          ?Redis $redis = null) */
ZEND_BEGIN_ARG_INFO_EX(arginfo_tkshm_table___construct, 0, 0, 2)
ZEND_ARG_TYPE_INFO(0, path, IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, policy, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, slots, IS_LONG, 0, "0")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, mode, IS_LONG, 0, "0600")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, keep, _IS_BOOL, 0, "false")
ZEND_ARG_OBJ_INFO_WITH_DEFAULT_VALUE(0, redis, Tkshm\\Redis, 1, "null")
ZEND_END_ARG_INFO()

/* attach(?Redis $redis): void */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_attach, 0, 1,
					IS_VOID, 0)
ZEND_ARG_OBJ_INFO(0, redis, Tkshm\\Redis, 1)
ZEND_END_ARG_INFO()

/* Tkshm\Redis::__construct(array $options = []) */
ZEND_BEGIN_ARG_INFO_EX(arginfo_tkshm_redis___construct, 0, 0, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, options, IS_ARRAY, 0, "[]")
ZEND_END_ARG_INFO()

/* check(string $key, float|int $cost = 1, ?float $nowMs = null): Decision */
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_tkshm_table_check, 0, 1,
				       Tkshm\\Decision, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_ARG_TYPE_MASK(0, cost, MAY_BE_DOUBLE | MAY_BE_LONG, "1")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, nowMs, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

/* peek(string $key, ?float $nowMs = null): Decision */
ZEND_BEGIN_ARG_WITH_RETURN_OBJ_INFO_EX(arginfo_tkshm_table_peek, 0, 1,
				       Tkshm\\Decision, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, nowMs, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

/* reset(string $key): void */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_reset, 0, 1,
					IS_VOID, 0)
ZEND_ARG_TYPE_INFO(0, key, IS_STRING, 0)
ZEND_END_ARG_INFO()

/* stats(): array */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_stats, 0, 0,
					IS_ARRAY, 0)
ZEND_END_ARG_INFO()

/* policy(): string */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_policy, 0, 0,
					IS_STRING, 0)
ZEND_END_ARG_INFO()

/* change(): array */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_change, 0, 0,
					IS_ARRAY, 0)
ZEND_END_ARG_INFO()

/* apply(?string $policy, int $slots = 0): array */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_apply, 0, 1,
					IS_ARRAY, 0)
ZEND_ARG_TYPE_INFO(0, policy, IS_STRING, 1)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, slots, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

/* static plan(string $path, string $policy, int $slots = 0): array */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_plan, 0, 2,
					IS_ARRAY, 0)
ZEND_ARG_TYPE_INFO(0, path, IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, policy, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, slots, IS_LONG, 0, "0")
ZEND_END_ARG_INFO()

/* static openCount(): int */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_table_openCount, 0, 0,
					IS_LONG, 0)
ZEND_END_ARG_INFO()

/* Tkshm\headers(Decision $d, ?string $policyName = null,
 *               string $style = "draft", ?float $nowMs = null): array */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_headers, 0, 1, IS_ARRAY,
					0)
ZEND_ARG_OBJ_INFO(0, d, Tkshm\\Decision, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, policyName, IS_STRING, 1, "null")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, style, IS_STRING, 0, "\"draft\"")
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, nowMs, IS_DOUBLE, 1, "null")
ZEND_END_ARG_INFO()

/* Tkshm\client_key(string $addr, int $v6Prefix = 64): string */
ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_tkshm_client_key, 0, 1,
					IS_STRING, 0)
ZEND_ARG_TYPE_INFO(0, addr, IS_STRING, 0)
ZEND_ARG_TYPE_INFO_WITH_DEFAULT_VALUE(0, v6Prefix, IS_LONG, 0, "64")
ZEND_END_ARG_INFO()

/* Implemented in table.c, redis.c and http.c. */
ZEND_METHOD(Tkshm_Table, __construct);
ZEND_METHOD(Tkshm_Table, check);
ZEND_METHOD(Tkshm_Table, peek);
ZEND_METHOD(Tkshm_Table, reset);
ZEND_METHOD(Tkshm_Table, stats);
ZEND_METHOD(Tkshm_Table, policy);
ZEND_METHOD(Tkshm_Table, change);
ZEND_METHOD(Tkshm_Table, apply);
ZEND_METHOD(Tkshm_Table, plan);
ZEND_METHOD(Tkshm_Table, openCount);
ZEND_METHOD(Tkshm_Table, attach);
ZEND_METHOD(Tkshm_Redis, __construct);

/* The entries are macros without separating commas, which clang-format
 * would run together. */
/* clang-format off */
const zend_function_entry tkshm_php_table_methods[] = {
	ZEND_ME(Tkshm_Table, __construct, arginfo_tkshm_table___construct,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, check, arginfo_tkshm_table_check,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, peek, arginfo_tkshm_table_peek, ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, reset, arginfo_tkshm_table_reset,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, stats, arginfo_tkshm_table_stats,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, policy, arginfo_tkshm_table_policy,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, change, arginfo_tkshm_table_change,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, apply, arginfo_tkshm_table_apply,
		ZEND_ACC_PUBLIC)
	ZEND_ME(Tkshm_Table, plan, arginfo_tkshm_table_plan,
		ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
	ZEND_ME(Tkshm_Table, openCount, arginfo_tkshm_table_openCount,
		ZEND_ACC_PUBLIC | ZEND_ACC_STATIC)
	ZEND_ME(Tkshm_Table, attach, arginfo_tkshm_table_attach,
		ZEND_ACC_PUBLIC)
	ZEND_FE_END
};

const zend_function_entry tkshm_php_redis_methods[] = {
	ZEND_ME(Tkshm_Redis, __construct, arginfo_tkshm_redis___construct,
		ZEND_ACC_PUBLIC)
	ZEND_FE_END
};

const zend_function_entry tkshm_php_functions[] = {
	ZEND_NS_FENTRY("Tkshm", headers, zif_tkshm_headers,
		       arginfo_tkshm_headers, 0)
	ZEND_NS_FENTRY("Tkshm", client_key, zif_tkshm_client_key,
		       arginfo_tkshm_client_key, 0)
	ZEND_FE_END
};
/* clang-format on */

#endif /* TKSHM_ARGINFO_H */
