/*
 * fuzz_apache_directive.c - the Apache module's directive arguments
 * (bindings/apache/src/directive_parse.c), without httpd.
 *
 * The input is a piece of configuration: each line is split into words
 * the way httpd splits a directive's line (blanks between words, a word
 * in '...' or "..." may hold blanks and its quote escaped by a backslash,
 * an empty word ends the list); the first word names the directive
 * (case-insensitively, as httpd matches), the others are its arguments,
 * and the lines share one section, so TkshmLimit sees the limits the lines
 * before it set.  The user, group and key= lookups are fakes with a few
 * known names.
 *
 * Each parser runs with a buffer of tkap_directive_err_size bytes, one of a
 * byte, and none, and must give the same verdict and record each time.
 * Checked: an accepted value is in its range and agrees with the words; a
 * refusal leaves the record as it was and says why in a NUL-terminated
 * sentence that names the directive and fits the buffer the size promised;
 * no argument is written to; tkap_parse_uint agrees with a reference.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "directive_parse.h"
#include "fuzz_common.h"
#include "tkshm_http.h"

/* Longer inputs, more lines and more words add nothing new. */
#define TKF_INPUT_MAX 4096
#define TKF_LINES_MAX 32
/* httpd refuses a line of more arguments (MAX_ARGC in its config.c). */
#define TKF_ARGS_MAX 64

/* ---- the fake environment ------------------------------------------- */

typedef struct tkf_env_state {
	int key_calls;
} tkf_env_state;

typedef struct tkf_id {
	const char *name;
	int64_t id;
} tkf_id;

static const tkf_id tkf_users[] = { { "root", 0 },
				    { "www-data", 33 },
				    { "nobody", 65534 } };
static const tkf_id tkf_groups[] = { { "root", 0 },
				     { "adm", 4 },
				     { "www-data", 33 } };

static bool
tkf_lookup(const tkf_id *ids, size_t n, const char *name, int64_t *id)
{
	TKF_REQUIRE(name[0] != '\0'); /* the parser checks that first */
	for (size_t i = 0; i < n; i++)
		if (strcmp(ids[i].name, name) == 0) {
			*id = ids[i].id;
			return true;
		}
	return false;
}

static bool
tkf_user_id(void *ctx, const char *name, int64_t *uid)
{
	(void)ctx;
	return tkf_lookup(tkf_users, sizeof tkf_users / sizeof *tkf_users, name,
			  uid);
}

static bool
tkf_group_id(void *ctx, const char *name, int64_t *gid)
{
	(void)ctx;
	return tkf_lookup(tkf_groups, sizeof tkf_groups / sizeof *tkf_groups,
			  name, gid);
}

/* Like httpd's expressions: a %{ must be closed.  The reason quotes the
 * expression, so a long one fills the parser's buffer. */
static bool
tkf_key_ok(void *ctx, const char *expr, char *why, size_t why_len)
{
	tkf_env_state *st = ctx;
	const char *open = strstr(expr, "%{");

	st->key_calls++;
	if (!open || strchr(open, '}'))
		return true;
	TKF_REQUIRE(why_len > 0);
	snprintf(why, why_len, "unclosed %%{ in '%s'", expr);
	return false;
}

/* ---- checks ---------------------------------------------------------- */

/* A whole decimal number without sign or blanks, as the parser promises. */
static bool
tkf_ref_uint(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		unsigned d;

		if (*s < '0' || *s > '9')
			return false;
		d = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static void
tkf_check_uint(const char *s, uint64_t min, uint64_t max)
{
	uint64_t ref = 0, got = 7;
	bool ok = tkf_ref_uint(s, &ref) && ref >= min && ref <= max;

	TKF_REQUIRE(tkap_parse_uint(s, min, max, &got) == ok);
	TKF_REQUIRE(ok ? got == ref : got == 7);
}

/* Every argument: as a number in a few ranges, as an option. */
static void
tkf_check_words(int argc, char *const argv[])
{
	for (int i = 0; i < argc; i++) {
		const char *v = tkap_option(argv[i], "key");

		tkf_check_uint(argv[i], 0, UINT64_MAX);
		tkf_check_uint(argv[i], 8, TKSHM_MAX_SLOTS);
		tkf_check_uint(argv[i], 400, 599);
		TKF_REQUIRE(v == (strncmp(argv[i], "key=", 4) == 0 ?
					  argv[i] + 4 :
					  NULL));
	}
}

/* A refusal's sentence, in a buffer of `size` bytes (the promised size). */
static void
tkf_check_message(const char *err, size_t size)
{
	const char *nul = memchr(err, '\0', size);

	TKF_REQUIRE(nul != NULL);
	/* Whole: it did not need the last byte, so nothing was cut. */
	TKF_REQUIRE((size_t)(nul - err) + 1 < size);
	TKF_REQUIRE(strncmp(err, "Tkshm", 5) == 0);
}

/* The three buffers every parser is run with: the promised size (its own
 * allocation, so that ASan sees a byte written past it), one byte, none. */
typedef struct tkf_bufs {
	char *big;
	size_t big_len;
	char *tiny;
} tkf_bufs;

static void
tkf_bufs_init(tkf_bufs *b, size_t big_len)
{
	b->big_len = big_len;
	b->big = malloc(big_len);
	b->tiny = malloc(1);
	if (!b->big || !b->tiny)
		abort();
	memset(b->big, 'x', big_len);
	b->tiny[0] = 'x';
}

static void
tkf_bufs_free(tkf_bufs *b)
{
	free(b->big);
	free(b->tiny);
}

/* After a refusal with each buffer. */
static void
tkf_check_refusal(const tkf_bufs *b)
{
	tkf_check_message(b->big, b->big_len);
	TKF_REQUIRE(b->tiny[0] == '\0');
}

/* ---- TkshmTable ------------------------------------------------------- */

static bool
tkf_kind_checkable(tkshm_kind k)
{
	return k == TKSHM_KIND_GCRA || k == TKSHM_KIND_TOKEN_BUCKET ||
	       k == TKSHM_KIND_FIXED_WINDOW || k == TKSHM_KIND_SLIDING_WINDOW ||
	       k == TKSHM_KIND_SLIDING_LOG || k == TKSHM_KIND_QUOTA ||
	       k == TKSHM_KIND_TOKEN_BUDGET;
}

static bool
tkf_table_equal(const tkap_table_def *a, const tkap_table_def *b)
{
	return a->name == b->name && a->path == b->path &&
	       tkshm_policy_equal(&a->policy, &b->policy) &&
	       a->slots == b->slots && a->mode == b->mode && a->gid == b->gid &&
	       a->uid == b->uid && a->flags == b->flags &&
	       a->on_full == b->on_full;
}

/* The option an argument after POLICY is ("slots" of "slots=8"). */
static size_t
tkf_option_name_len(const char *a)
{
	const char *eq = strchr(a, '=');

	return eq ? (size_t)(eq - a) : strlen(a);
}

static void
tkf_check_table_def(int argc, char *const argv[], const tkap_table_def *d)
{
	tkshm_policy back;
	bool huge = false, slots = false;

	TKF_REQUIRE(argc >= 3);
	TKF_REQUIRE(d->name == argv[0] && tkap_name_ok(d->name));
	TKF_REQUIRE(strlen(d->name) <= TKAP_TABLE_NAME_MAX);
	if (strcmp(argv[1], "anonymous") == 0) {
		TKF_REQUIRE(d->path == NULL);
		TKF_REQUIRE(d->uid == -1 && d->gid == -1 && d->mode == 0600);
	} else {
		TKF_REQUIRE(d->path == argv[1]);
		TKF_REQUIRE(d->path[0] == '/' ||
			    (d->path[0] != '\0' && !strchr(d->path, '/')));
	}
	TKF_REQUIRE(tkshm_policy_validate(&d->policy, NULL, 0) == TKSHM_OK);
	TKF_REQUIRE(tkf_kind_checkable(d->policy.kind));
	TKF_REQUIRE(tkshm_policy_parse(argv[2], &back, NULL, 0) == TKSHM_OK);
	TKF_REQUIRE(tkshm_policy_equal(&back, &d->policy));
	TKF_REQUIRE(d->mode <= 0777);
	TKF_REQUIRE(d->on_full == TKSHM_ON_FULL_EVICT ||
		    d->on_full == TKSHM_ON_FULL_REFUSE);
	TKF_REQUIRE(d->uid == -1 || d->uid == 0 || d->uid == 33 ||
		    d->uid == 65534);
	TKF_REQUIRE(d->gid == -1 || d->gid == 0 || d->gid == 4 || d->gid == 33);
	for (int i = 3; i < argc; i++) {
		size_t n = tkf_option_name_len(argv[i]);

		huge |= strcmp(argv[i], "hugepages") == 0;
		slots |= strncmp(argv[i], "slots=", 6) == 0;
		/* each option at most once */
		for (int j = 3; j < i; j++)
			TKF_REQUIRE(n != tkf_option_name_len(argv[j]) ||
				    strncmp(argv[i], argv[j], n) != 0);
	}
	TKF_REQUIRE(d->flags == (huge ? TKSHM_O_HUGEPAGES : 0u));
	TKF_REQUIRE(slots ? d->slots >= 8 && d->slots <= TKSHM_MAX_SLOTS :
			    d->slots == 0);
}

static void
tkf_table(int argc, char *const argv[], tkf_env_state *st)
{
	tkap_directive_env env = { tkf_user_id, tkf_group_id, tkf_key_ok, st };
	tkap_table_def d[3], before;
	tkf_bufs b;
	bool ok[3];

	tkf_bufs_init(&b, tkap_directive_err_size(argc, argv));
	memset(d, 0x5a, sizeof d);
	memcpy(&before, &d[0], sizeof before);
	ok[0] = tkap_parse_table(argc, argv, &env, &d[0], b.big, b.big_len);
	ok[1] = tkap_parse_table(argc, argv, &env, &d[1], b.tiny, 1);
	ok[2] = tkap_parse_table(argc, argv, &env, &d[2], NULL, 0);
	TKF_REQUIRE(ok[0] == ok[1] && ok[0] == ok[2]);
	TKF_REQUIRE(st->key_calls == 0);
	if (ok[0]) {
		tkf_check_table_def(argc, argv, &d[0]);
		TKF_REQUIRE(tkf_table_equal(&d[0], &d[1]));
		TKF_REQUIRE(tkf_table_equal(&d[0], &d[2]));
	} else {
		tkf_check_refusal(&b);
		for (int i = 0; i < 3; i++)
			TKF_REQUIRE(memcmp(&d[i], &before, sizeof before) == 0);
	}
	tkf_bufs_free(&b);
}

/* ---- TkshmLimit -------------------------------------------------------- */

static void
tkf_check_limit_def(int argc, char *const argv[], int section,
		    const tkap_limit_def *d)
{
	if (d->off) {
		TKF_REQUIRE(argc == 1 && strcmp(argv[0], "off") == 0);
		TKF_REQUIRE(section <= 0);
		TKF_REQUIRE(d->table == NULL && d->key == NULL);
		return;
	}
	TKF_REQUIRE(section != 0 && section < TKSHM_MULTI_MAX);
	TKF_REQUIRE(d->table == argv[0] && tkap_name_ok(d->table));
	TKF_REQUIRE(d->cost >= 1 && d->cost <= (uint64_t)TKSHM_COST_MAX);
	if (d->key) {
		bool found = false;

		for (int i = 1; i < argc; i++)
			found |= d->key == argv[i] + 4 &&
				 strncmp(argv[i], "key=", 4) == 0;
		TKF_REQUIRE(found);
	}
}

/* Returns the section's limits after the line. */
static int
tkf_limit(int argc, char *const argv[], int section, tkf_env_state *st)
{
	tkap_directive_env env = { tkf_user_id, tkf_group_id, tkf_key_ok, st };
	tkap_limit_def d[3], before;
	tkf_bufs b;
	bool ok[3];

	tkf_bufs_init(&b, tkap_directive_err_size(argc, argv));
	memset(d, 0x5a, sizeof d);
	memcpy(&before, &d[0], sizeof before);
	ok[0] = tkap_parse_limit(argc, argv, section, &env, &d[0], b.big,
				 b.big_len);
	/* key= is compiled at most once a directive */
	TKF_REQUIRE(st->key_calls <= 1);
	ok[1] = tkap_parse_limit(argc, argv, section, &env, &d[1], b.tiny, 1);
	ok[2] = tkap_parse_limit(argc, argv, section, &env, &d[2], NULL, 0);
	TKF_REQUIRE(ok[0] == ok[1] && ok[0] == ok[2]);
	if (!ok[0]) {
		tkf_check_refusal(&b);
		for (int i = 0; i < 3; i++)
			TKF_REQUIRE(memcmp(&d[i], &before, sizeof before) == 0);
		tkf_bufs_free(&b);
		return section;
	}
	tkf_check_limit_def(argc, argv, section, &d[0]);
	for (int i = 1; i < 3; i++)
		TKF_REQUIRE(d[i].off == d[0].off && d[i].table == d[0].table &&
			    d[i].key == d[0].key && d[i].cost == d[0].cost);
	tkf_bufs_free(&b);
	return d[0].off ? 0 : (section < 0 ? 1 : section + 1);
}

/* ---- the one-word directives ------------------------------------------ */

typedef bool (*tkf_word_parser)(const char *, int *, char *, size_t);

/* The value of one word, checked against [lo, hi]. */
static void
tkf_word(tkf_word_parser parse, const char *arg, int lo, int hi)
{
	char *const argv[] = { (char *)arg };
	int v[3] = { -7, -7, -7 };
	tkf_bufs b;
	bool ok[3];

	tkf_bufs_init(&b, tkap_directive_err_size(1, argv));
	ok[0] = parse(arg, &v[0], b.big, b.big_len);
	ok[1] = parse(arg, &v[1], b.tiny, 1);
	ok[2] = parse(arg, &v[2], NULL, 0);
	TKF_REQUIRE(ok[0] == ok[1] && ok[0] == ok[2]);
	TKF_REQUIRE(v[0] == v[1] && v[0] == v[2]);
	if (ok[0]) {
		TKF_REQUIRE(v[0] >= lo && v[0] <= hi);
	} else {
		TKF_REQUIRE(v[0] == -7);
		tkf_check_refusal(&b);
	}
	tkf_bufs_free(&b);
}

/* ---- lines ----------------------------------------------------------- */

/* The next word of *p into out, NUL-terminated, as httpd's ap_getword_conf
 * reads it (never longer than what it reads); *p moves past it.  Returns
 * the end of the word written. */
static char *
tkf_next_word(const char **p, char *out)
{
	const char *s = *p;

	while (*s && isspace((unsigned char)*s))
		s++;
	if (*s == '"' || *s == '\'') {
		char q = *s++;

		while (*s && *s != q) {
			if (s[0] == '\\' && s[1] == q)
				s++;
			*out++ = *s++;
		}
		if (*s == q)
			s++;
	} else {
		while (*s && !isspace((unsigned char)*s))
			*out++ = *s++;
	}
	*out = '\0';
	while (*s && isspace((unsigned char)*s))
		s++;
	*p = s;
	return out;
}

/* The line's directive after its name, if it is one of the module's. */
static int
tkf_directive(int argc, char *const argv[], int section, tkf_env_state *st)
{
	const char *name = argv[0];

	st->key_calls = 0;
	tkf_check_words(argc - 1, argv + 1);
	if (strcasecmp(name, "TkshmTable") == 0)
		tkf_table(argc - 1, argv + 1, st);
	else if (strcasecmp(name, "TkshmLimit") == 0)
		section = tkf_limit(argc - 1, argv + 1, section, st);
	else if (argc != 2) /* the others take one word (httpd checks) */
		return section;
	else if (strcasecmp(name, "TkshmHeaders") == 0)
		tkf_word(tkap_parse_headers, argv[1], TKSHM_HTTP_DRAFT,
			 TKSHM_HTTP_NONE);
	else if (strcasecmp(name, "TkshmIPv6Prefix") == 0)
		tkf_word(tkap_parse_v6_prefix, argv[1], 1, 128);
	else if (strcasecmp(name, "TkshmDenyStatus") == 0)
		tkf_word(tkap_parse_deny_status, argv[1], 400, 599);
	else if (strcasecmp(name, "TkshmOnError") == 0)
		tkf_word(tkap_parse_on_error, argv[1], TKAP_ON_ERROR_ALLOW,
			 TKAP_ON_ERROR_DENY);
	else if (strcasecmp(name, "TkshmLogLevel") == 0)
		tkf_word(tkap_parse_log_level, argv[1], 0, 7);
	return section;
}

/* One line; returns the section's limits after it. */
static int
tkf_line(const char *line, int section, tkf_env_state *st)
{
	/* Each word takes at least one byte of the line and adds a NUL. */
	size_t size = 2 * strlen(line) + 2, used;
	char *words = malloc(size), *copy, *w = words;
	char *argv[TKF_ARGS_MAX + 1];
	const char *p = line;
	int argc = 0;

	if (!words)
		abort();
	for (;;) {
		char *end = tkf_next_word(&p, w);

		if (end == w)
			break;
		if (argc == TKF_ARGS_MAX + 1) { /* too many: httpd refuses */
			free(words);
			return section;
		}
		argv[argc++] = w;
		w = end + 1;
	}
	used = (size_t)(w - words);
	/* The parsers may not write to their arguments. */
	copy = malloc(used + 1);
	if (!copy)
		abort();
	memcpy(copy, words, used);
	if (argc > 0)
		section = tkf_directive(argc, argv, section, st);
	TKF_REQUIRE(memcmp(copy, words, used) == 0);
	free(copy);
	free(words);
	return section;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[TKF_INPUT_MAX + 1], *line, *next;
	int section = -1, lines = 0;
	tkf_env_state st = { 0 };

	if (size > TKF_INPUT_MAX)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	/* A NUL ends the text, as it ends a C string httpd reads. */
	for (line = text; line && lines < TKF_LINES_MAX; line = next, lines++) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		section = tkf_line(line, section, &st);
	}
	return 0;
}
