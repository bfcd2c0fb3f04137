/*
 * test_cluster_slots.c - the parts of the Redis Cluster client that need
 * no server (src/redis/cluster.h K1, conn.h's address lists): key slots
 * with and without hash tags, the addresses a list names, the options
 * that do not go together, and keys of several slots refused before
 * anything is sent.
 */
#include <string.h>

#include "redis/cluster.h"
#include "redis/conn.h"
#include "test_support.h"
#include "tkshm_redis.h"

static unsigned
slot(const char *key)
{
	return tk_cluster_slot(key, strlen(key));
}

static void
test_slots(void **state)
{
	(void)state;
	/* The specification's check value: CRC16("123456789") = 0x31C3. */
	assert_int_equal(slot("123456789"), 0x31C3 & 16383);
	assert_int_equal(slot("123456789"), 12739);
	/* A tag: only the bytes between the first '{' and the next '}'. */
	assert_int_equal(slot("{user1000}.following"), slot("user1000"));
	assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));
	assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
	/* No tag: an empty one, or no '}' after the '{'. */
	assert_int_not_equal(slot("{}abc"), slot(""));
	assert_int_equal(slot("{}abc"),
			 tk_cluster_slot("{}abc", strlen("{}abc")));
	assert_int_equal(slot("a{b"), tk_cluster_slot("a{b", 3));
	/* Binary keys: the length, not a NUL, ends the key. */
	assert_int_not_equal(tk_cluster_slot("a\0b", 3), slot("a"));
	for (int i = 0; i < 1000; i++) {
		char k[32];

		snprintf(k, sizeof k, "key:%d", i);
		assert_in_range(slot(k), 0, 16383);
	}
}

static void
test_address_lists(void **state)
{
	struct tk_redis_addr a[TK_REDIS_ADDRS_COUNT];
	char why[160];

	(void)state;
	assert_int_equal(tk_redis_addrs_parse("127.0.0.1:7000, h2:7001,[::1]:7002",
					      a, why, sizeof why),
			 3);
	assert_string_equal(a[0].host, "127.0.0.1");
	assert_int_equal(a[0].port, 7000);
	assert_string_equal(a[1].host, "h2");
	assert_string_equal(a[2].host, "::1");
	assert_int_equal(a[2].port, 7002);
	static const char *bad[] = { "",	    "h",	  "h:",
				     ":7000",	    "h:0",	  "h:65536",
				     "h:70x",	    "[::1:7000",  "h:7000,h2",
				     "h:99999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		why[0] = '\0';
		if (tk_redis_addrs_parse(bad[i], a, why, sizeof why) !=
		    TKSHM_EINVAL)
			fail_msg("\"%s\" parsed", bad[i]);
		assert_true(why[0] != '\0');
	}
}

static void
test_options_that_do_not_go_together(void **state)
{
	tkshm_redis_options o = TKSHM_REDIS_OPTIONS_INIT;
	tkshm_redis *r = NULL;

	(void)state;
	o.cluster = "127.0.0.1:7000";
	o.sentinels = "127.0.0.1:26379";
	o.sentinel_master = "m";
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_EINVAL);
	o.cluster = NULL;
	o.sentinel_master = NULL;
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_EINVAL);
	o.sentinels = NULL;
	o.sentinel_master = "m";
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_EINVAL);
	o.sentinel_master = NULL;
	o.cluster = "127.0.0.1:7000,nohost";
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_EINVAL);
	assert_null(r);
	o.cluster = "127.0.0.1:7000,127.0.0.1:7001";
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_OK);
	tkshm_redis_close(r);
}

/* Keys of two slots: refused with the keys named, nothing sent (the
 * seeds here listen nowhere: a send would fail otherwise). */
static void
test_cross_slot_refused_before_sending(void **state)
{
	struct tk_redis_conf conf;
	struct tk_conn *c;
	struct tk_conn_stats st;
	const char *kv[2] = { "{a}:minute", "{b}:day" };
	struct tk_args keys = { 2, kv, NULL };
	struct tk_args args = { 0, NULL, NULL };
	redisReply *r = NULL;
	char err[256] = "";

	(void)state;
	tk_redis_conf_init(&conf);
	snprintf(conf.cluster, sizeof conf.cluster, "127.0.0.1:1");
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_MULTI, &keys, &args, &r, err,
			       sizeof err),
		  TKSHM_ECROSSSLOT);
	assert_null(r);
	assert_non_null(strstr(err, "{a}:minute"));
	assert_non_null(strstr(err, "{b}:day"));
	tk_conn_stats_get(c, &st);
	assert_int_equal(st.calls, 0);
	assert_int_equal(st.connects, 0);
	/* One tag: the same slot, so it is sent (and finds nobody). */
	kv[1] = "{a}:day";
	assert_rc(tk_conn_eval(c, TK_SCRIPT_MULTI, &keys, &args, &r, err,
			       sizeof err),
		  TKSHM_EUNAVAILABLE);
	tk_conn_free(c);
	assert_string_equal(tkshm_error_name(TKSHM_ECROSSSLOT),
			    "TKSHM_ECROSSSLOT");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_address_lists),
		cmocka_unit_test(test_options_that_do_not_go_together),
		cmocka_unit_test(test_cross_slot_refused_before_sending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
