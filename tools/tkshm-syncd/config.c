/*
 * config.c - reading tkshm-syncd's configuration file (config.h).
 *
 * The file is read whole before the daemon forks, so every mistake in it
 * is reported on the terminal of whoever started it, with its line.
 * Values are checked here with their line; tk_agent_new() checks them
 * again (and names, without a line, anything it refuses that we let by).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf_file.h"
#include "config.h"
#include "tkshm.h"

/* The keys, in the order the man page lists them. */
enum sd_key {
	SD_K_REDIS_HOST,
	SD_K_REDIS_PORT,
	SD_K_REDIS_UNIX,
	SD_K_REDIS_USERNAME,
	SD_K_REDIS_PASSWORD,
	SD_K_REDIS_PASSWORD_FILE,
	SD_K_REDIS_DB,
	SD_K_REDIS_CLUSTER,
	SD_K_REDIS_SENTINELS,
	SD_K_REDIS_SENTINEL_MASTER,
	SD_K_CONNECT_TIMEOUT_MS,
	SD_K_COMMAND_TIMEOUT_MS,
	SD_K_POLL_MS,
	SD_K_HORIZON_MS,
	SD_K_HEARTBEAT_MS,
	SD_K_BREAKER_FAILURES,
	SD_K_BREAKER_OPEN_MS,
	SD_K_SERVER_TIME,
	SD_K_HOST_ID,
	SD_K_PIDFILE,
	SD_K_LOG,
	SD_K_TABLE,
	SD_NKEYS
};

static const char *const sd_key_names[SD_NKEYS] = {
	[SD_K_REDIS_HOST] = "redis_host",
	[SD_K_REDIS_PORT] = "redis_port",
	[SD_K_REDIS_UNIX] = "redis_unix",
	[SD_K_REDIS_USERNAME] = "redis_username",
	[SD_K_REDIS_PASSWORD] = "redis_password",
	[SD_K_REDIS_PASSWORD_FILE] = "redis_password_file",
	[SD_K_REDIS_DB] = "redis_db",
	[SD_K_REDIS_CLUSTER] = "redis_cluster",
	[SD_K_REDIS_SENTINELS] = "redis_sentinels",
	[SD_K_REDIS_SENTINEL_MASTER] = "redis_sentinel_master",
	[SD_K_CONNECT_TIMEOUT_MS] = "connect_timeout_ms",
	[SD_K_COMMAND_TIMEOUT_MS] = "command_timeout_ms",
	[SD_K_POLL_MS] = "poll_ms",
	[SD_K_HORIZON_MS] = "horizon_ms",
	[SD_K_HEARTBEAT_MS] = "heartbeat_ms",
	[SD_K_BREAKER_FAILURES] = "breaker_failures",
	[SD_K_BREAKER_OPEN_MS] = "breaker_open_ms",
	[SD_K_SERVER_TIME] = "server_time",
	[SD_K_HOST_ID] = "host_id",
	[SD_K_PIDFILE] = "pidfile",
	[SD_K_LOG] = "log",
	[SD_K_TABLE] = "table",
};

/* One load in progress. */
struct sd_parse {
	struct sd_conf *c;
	unsigned line;		 /* the line being read */
	unsigned seen[SD_NKEYS]; /* where each key was first given */
	bool others_read;	 /* the file is readable by others */
	char password_file[PATH_MAX];
	size_t tables_cap;
};

/* "FILE:LINE: message" (line 0: "FILE: message"); returns false. */
static bool sd_bad_at(const struct sd_parse *p, unsigned line, const char *fmt,
		      ...) __attribute__((format(printf, 3, 4)));

static bool
sd_bad_at(const struct sd_parse *p, unsigned line, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line)
		sd_log(LOG_ERR, "%s:%u: %s", p->c->file, line, msg);
	else
		sd_log(LOG_ERR, "%s: %s", p->c->file, msg);
	return false;
}

#define sd_bad(p, ...) sd_bad_at((p), (p)->line, __VA_ARGS__)

/* A whole number in [min, max], written as decimal digits (a '-' before
 * them is read, to say that the number is out of range): no '+', no
 * fraction, exponent, hex or blank, and no wrap-around on overflow.
 * `what` says what the value should be, for the message. */
static bool
sd_whole(struct sd_parse *p, const char *key, const char *v, const char *what,
	 unsigned long min, unsigned long max, unsigned long *out)
{
	const char *digits = v[0] == '-' ? v + 1 : v;
	unsigned long n;

	if (digits[0] == '\0' || digits[strspn(digits, "0123456789")] != '\0')
		return sd_bad(p, "%s: '%s' is not %s", key, v, what);
	errno = 0;
	n = strtoul(digits, NULL, 10);
	if (errno == ERANGE || (digits != v && n != 0) || n < min || n > max)
		return sd_bad(p, "%s: %s is out of range (%lu to %lu)", key, v,
			      min, max);
	*out = n;
	return true;
}

#define sd_uint(p, key, v, min, max, out) \
	sd_whole((p), (key), (v), "a whole number", (min), (max), (out))

/* A duration in whole milliseconds in [min, max]: a fraction of a
 * millisecond is no timeout or period anyone means (1e-300 would be a
 * timeout of 1 us, the least a timeval holds). */
static bool
sd_ms(struct sd_parse *p, const char *key, const char *v, unsigned long min,
      unsigned long max, double *out)
{
	unsigned long n = 0;

	if (!sd_whole(p, key, v, "a whole number of milliseconds", min, max,
		      &n))
		return false;
	*out = (double)n;
	return true;
}

/* poll_ms: milliseconds with at most 3 decimals (whole microseconds), in
 * [0.1, 1000], the agent's range: digits, then optionally '.' and 1 to 3
 * digits. */
static bool
sd_poll_ms(struct sd_parse *p, const char *key, const char *v, double *out)
{
	size_t ni = strspn(v, "0123456789"), nf = 0;
	unsigned long long us = 0, frac = 0;

	if (v[ni] == '.')
		nf = strspn(v + ni + 1, "0123456789");
	if (ni == 0 || (v[ni] == '.' && (nf == 0 || nf > 3)) ||
	    v[ni + (v[ni] == '.' ? 1 + nf : 0)] != '\0')
		return sd_bad(p,
			      "%s: '%s' is not a number of milliseconds "
			      "(digits, and at most 3 after a '.')",
			      key, v);
	/* Saturated far above the range, so that no digit string wraps. */
	for (size_t i = 0; i < ni; i++)
		us = us > 1000000000ULL ? us : 10 * us + (unsigned)(v[i] - '0');
	for (size_t i = 0; i < 3; i++)
		frac = 10 * frac +
		       (i < nf ? (unsigned)(v[ni + 1 + i] - '0') : 0);
	us = 1000 * us + frac;
	if (us < 100 || us > 1000000)
		return sd_bad(p, "%s: %s is out of range (0.1 to 1000)", key,
			      v);
	*out = (double)us / 1000.0;
	return true;
}

/* A string that fits `cap` bytes with its NUL. */
static bool
sd_str(struct sd_parse *p, const char *key, const char *v, char *out,
       size_t cap)
{
	size_t n = strlen(v);

	if (n >= cap)
		return sd_bad(p, "%s: too long (%zu bytes; at most %zu)", key,
			      n, cap - 1);
	memcpy(out, v, n + 1);
	return true;
}

/* host_id's characters: a host name's, and '_'. */
#define SD_HOST_ID_CHARS             \
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ" \
	"abcdefghijklmnopqrstuvwxyz" \
	"0123456789._-"
#define SD_HOST_ID_SAID "A-Z a-z 0-9 . _ -"
/* redis_host's: a host name, an IPv4 address, or an IPv6 one, with its
 * zone after a '%'. */
#define SD_REDIS_HOST_CHARS SD_HOST_ID_CHARS ":%"

/* A string of the characters `chars` (`said`, for the message) that fits
 * `cap` bytes with its NUL. */
static bool
sd_word(struct sd_parse *p, const char *key, const char *v, const char *chars,
	const char *said, char *out, size_t cap)
{
	size_t ok = strspn(v, chars);

	if (v[ok] != '\0')
		return sd_bad(p,
			      "%s: '%s' has a character outside %s (byte "
			      "%zu)",
			      key, v, said, ok + 1);
	return sd_str(p, key, v, out, cap);
}

/* A list of "host:port" (redis_cluster, redis_sentinels), as the
 * library parses it. */
static bool
sd_addrs(struct sd_parse *p, const char *key, const char *v, char *out,
	 size_t cap)
{
	struct tk_redis_addr addr[TK_REDIS_ADDRS_COUNT];
	char why[160];

	if (tk_redis_addrs_parse(v, addr, why, sizeof why) < 0)
		return sd_bad(p, "%s: %s (host:port[,host:port...])", key, why);
	return sd_str(p, key, v, out, cap);
}

/* An absolute path: the daemon runs in '/', where a relative one would
 * name something else than it did for whoever wrote the file. */
static bool
sd_abs_path(struct sd_parse *p, const char *key, const char *v, char *out,
	    size_t cap)
{
	if (v[0] != '/')
		return sd_bad(p, "%s: '%s' is not an absolute path", key, v);
	return sd_str(p, key, v, out, cap);
}

/* The file a table name opens (tkshm_open's rule), for spotting a table
 * named twice in two spellings. */
static void
sd_table_file(const char *path, char *buf, size_t len)
{
	if (strchr(path, '/'))
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%s/%s", TKSHM_DEFAULT_DIR, path);
}

static bool
sd_add_table(struct sd_parse *p, const char *v)
{
	struct sd_conf *c = p->c;
	char want[PATH_MAX + 16], have[PATH_MAX + 16];

	if (v[0] != '/' && strchr(v, '/'))
		return sd_bad(p,
			      "table: '%s' is relative; give an absolute path, "
			      "or a name without '/' for a table in %s",
			      v, TKSHM_DEFAULT_DIR);
	if (strlen(v) >= sizeof c->tables[0].path)
		return sd_bad(p, "table: the path is too long");
	sd_table_file(v, want, sizeof want);
	for (size_t i = 0; i < c->ntables; i++) {
		sd_table_file(c->tables[i].path, have, sizeof have);
		if (strcmp(want, have) == 0)
			return sd_bad(p,
				      "table %s is named twice (first at "
				      "line %u)",
				      v, c->tables[i].line);
	}
	if (c->ntables == p->tables_cap) {
		size_t cap = p->tables_cap ? 2 * p->tables_cap : 8;
		struct sd_table *t = realloc(c->tables, cap * sizeof *t);

		if (!t)
			return sd_bad(p, "out of memory");
		c->tables = t;
		p->tables_cap = cap;
	}
	snprintf(c->tables[c->ntables].path, sizeof c->tables[0].path, "%s", v);
	c->tables[c->ntables].line = p->line;
	c->ntables++;
	return true;
}

/* Sets key k from its value v. */
static bool
sd_set(struct sd_parse *p, enum sd_key k, const char *v)
{
	struct tk_agent_conf *a = &p->c->agent;
	const char *key = sd_key_names[k];
	unsigned long n = 0; /* set by sd_uint when it returns true */

	switch (k) {
	case SD_K_REDIS_HOST:
		return sd_word(p, key, v, SD_REDIS_HOST_CHARS,
			       "A-Z a-z 0-9 . _ - : %", a->redis.host,
			       sizeof a->redis.host);
	case SD_K_REDIS_PORT:
		if (!sd_uint(p, key, v, 1, 65535, &n))
			return false;
		a->redis.port = (int)n;
		return true;
	case SD_K_REDIS_UNIX:
		return sd_abs_path(p, key, v, a->redis.unix_path,
				   sizeof a->redis.unix_path);
	case SD_K_REDIS_USERNAME:
		/* Redis refuses blanks in a user name (ACL SETUSER). */
		if (strpbrk(v, " \t"))
			return sd_bad(p, "%s: '%s' has a blank", key, v);
		return sd_str(p, key, v, a->redis.username,
			      sizeof a->redis.username);
	case SD_K_REDIS_PASSWORD:
		if (p->others_read)
			return sd_bad(p,
				      "redis_password in a file that others "
				      "can read: use redis_password_file, "
				      "or chmod o-rwx %s",
				      p->c->file);
		return sd_str(p, key, v, a->redis.password,
			      sizeof a->redis.password);
	case SD_K_REDIS_PASSWORD_FILE:
		return sd_abs_path(p, key, v, p->password_file,
				   sizeof p->password_file);
	case SD_K_REDIS_DB:
		if (!sd_uint(p, key, v, 0, 1000000, &n))
			return false;
		a->redis.db = (int)n;
		return true;
	case SD_K_REDIS_CLUSTER:
		return sd_addrs(p, key, v, a->redis.cluster,
				sizeof a->redis.cluster);
	case SD_K_REDIS_SENTINELS:
		return sd_addrs(p, key, v, a->redis.sentinels,
				sizeof a->redis.sentinels);
	case SD_K_REDIS_SENTINEL_MASTER:
		return sd_word(p, key, v, SD_HOST_ID_CHARS, SD_HOST_ID_SAID,
			       a->redis.sentinel_master,
			       sizeof a->redis.sentinel_master);
	case SD_K_CONNECT_TIMEOUT_MS:
		return sd_ms(p, key, v, 1, SD_MAX_MS,
			     &a->redis.connect_timeout_ms);
	case SD_K_COMMAND_TIMEOUT_MS:
		return sd_ms(p, key, v, 1, SD_MAX_MS,
			     &a->redis.command_timeout_ms);
	case SD_K_POLL_MS:
		return sd_poll_ms(p, key, v, &a->poll_ms);
	case SD_K_HORIZON_MS:
		return sd_ms(p, key, v, 1, 60000, &a->horizon_ms);
	case SD_K_HEARTBEAT_MS:
		return sd_ms(p, key, v, 10, 600000, &a->heartbeat_ms);
	case SD_K_BREAKER_FAILURES:
		if (!sd_uint(p, key, v, 1, 1000000, &n))
			return false;
		a->breaker_failures = (unsigned)n;
		return true;
	case SD_K_BREAKER_OPEN_MS:
		return sd_ms(p, key, v, 1, 600000, &a->breaker_open_ms);
	case SD_K_SERVER_TIME:
		if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0)
			a->server_time = true;
		else if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0)
			a->server_time = false;
		else
			return sd_bad(p, "server_time: '%s' is not yes or no",
				      v);
		return true;
	case SD_K_HOST_ID:
		return sd_word(p, key, v, SD_HOST_ID_CHARS, SD_HOST_ID_SAID,
			       a->host_id, sizeof a->host_id);
	case SD_K_PIDFILE:
		return sd_abs_path(p, key, v, p->c->pidfile,
				   sizeof p->c->pidfile);
	case SD_K_LOG:
		if (!sd_log_target_parse(v, &p->c->log))
			return sd_bad(p, "log: '%s' is not stderr or syslog",
				      v);
		p->c->log_set = true;
		return true;
	case SD_K_TABLE:
		return sd_add_table(p, v);
	case SD_NKEYS:
		break;
	}
	return sd_bad(p, "unknown key");
}

/* The key = value lines are read here (sd_trim, sd_line, sd_parse_text:
 * about 80 lines), not by inih (libinih-dev).  Measured with Debian 12's
 * libinih 55, whose parsing rules are fixed when the library is built
 * (INI_* macros; its inih.pc passes none, so the defaults of ini.h hold),
 * it would change what files users already have mean:
 * - a ';' after a blank starts a comment (INI_ALLOW_INLINE_COMMENTS):
 *   "redis_password = abc ;def" would give the password "abc", where the
 *   man page says a value runs to the end of its line;
 * - a line of at most 200 bytes (INI_MAX_LINE, no INI_ALLOW_REALLOC): a
 *   longer one (redis_cluster takes 1023 bytes, a path PATH_MAX) reaches
 *   the handler cut at 199 bytes, and its rest is reported as an error on
 *   the NEXT line number;
 * - an indented line after a key continues that key's value
 *   (INI_ALLOW_MULTILINE): "  table = /dev/shm/b" after "table = a" would
 *   be a table named "table = /dev/shm/b";
 * - "key: value", "[section]" and "; comment" lines are accepted, where
 *   they are refused today ("expected 'key = value'");
 * - the handler gets no line number (INI_HANDLER_LINENO 0), the parse goes
 *   on after an error (INI_STOP_ON_FIRST_ERROR 0) and ini_parse() returns
 *   only the first error's line, without its reason.
 * Refusing all that around inih would take a pre-scan of every line doing
 * what this reader does; so it stays.  The file's own checks (a regular,
 * trusted, bounded file: conf_file.c) are no parser's job either. */

/* Trims blanks (spaces and tabs) at both ends of s, in place. */
static char *
sd_trim(char *s)
{
	size_t n;

	s += strspn(s, " \t");
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* One line (without its newline). */
static bool
sd_line(struct sd_parse *p, char *line)
{
	char *eq, *key, *value;
	int k;

	/* Before anything is printed of it: a key is quoted in messages. */
	for (const char *s = line; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return sd_bad(
				p, "a control character (0x%02x) in the line",
				(unsigned)(unsigned char)*s);
	line = sd_trim(line);
	if (line[0] == '\0' || line[0] == '#')
		return true;
	if (!(eq = strchr(line, '=')))
		return sd_bad(p, "expected 'key = value'");
	*eq = '\0';
	key = sd_trim(line);
	value = sd_trim(eq + 1);
	for (k = 0; k < SD_NKEYS; k++)
		if (strcmp(key, sd_key_names[k]) == 0)
			break;
	if (k == SD_NKEYS)
		return sd_bad(p, "unknown key '%s'", key);
	if (value[0] == '\0')
		return sd_bad(p, "%s: no value", key);
	if (k != SD_K_TABLE && p->seen[k])
		return sd_bad(p, "%s is given twice (first at line %u)", key,
			      p->seen[k]);
	if (!p->seen[k])
		p->seen[k] = p->line;
	return sd_set(p, (enum sd_key)k, value);
}

/* Reads the password file named at line `line`: its first line, in a
 * regular file that others have no permission on (group read is allowed,
 * so that a group can own the secret). */
static bool
sd_read_password(struct sd_parse *p, unsigned line)
{
	struct tk_redis_conf *r = &p->c->agent.redis;
	char what[PATH_MAX + 32], why[PATH_MAX + 256];
	struct sd_file f;
	size_t len;

	snprintf(what, sizeof what, "the password file %s", p->password_file);
	if (!sd_file_read(p->password_file, SD_FILE_SECRET, what, &f, why,
			  sizeof why))
		return sd_bad_at(p, line, "%s", why);
	len = strcspn(f.text, "\r\n");
	if (len == 0 || memchr(f.text, '\0', len) != NULL) {
		sd_file_free(&f);
		return sd_bad_at(p, line,
				 "%s: the first line should be the password",
				 p->password_file);
	}
	if (len >= sizeof r->password) {
		sd_file_free(&f);
		return sd_bad_at(p, line,
				 "%s: the password is too long (at "
				 "most %zu bytes)",
				 p->password_file, sizeof r->password - 1);
	}
	memcpy(r->password, f.text, len);
	r->password[len] = '\0';
	sd_file_free(&f);
	return true;
}

/* What no single line can show. */
static bool
sd_check_whole(struct sd_parse *p)
{
	const unsigned *seen = p->seen;
	const char *host_id = p->c->agent.host_id;
	unsigned net = seen[SD_K_REDIS_HOST] ? seen[SD_K_REDIS_HOST] :
					       seen[SD_K_REDIS_PORT];

	unsigned many = seen[SD_K_REDIS_CLUSTER] ? seen[SD_K_REDIS_CLUSTER] :
						   seen[SD_K_REDIS_SENTINELS];

	if (seen[SD_K_REDIS_UNIX] && net)
		return sd_bad_at(p, seen[SD_K_REDIS_UNIX],
				 "redis_unix and redis_host/redis_port "
				 "(line %u) are exclusive",
				 net);
	if (many && (net || seen[SD_K_REDIS_UNIX]))
		return sd_bad_at(p, many,
				 "redis_cluster or redis_sentinels name the "
				 "servers: without redis_host, redis_port or "
				 "redis_unix (line %u)",
				 net ? net : seen[SD_K_REDIS_UNIX]);
	if (seen[SD_K_REDIS_CLUSTER] && seen[SD_K_REDIS_SENTINELS])
		return sd_bad_at(p, seen[SD_K_REDIS_SENTINELS],
				 "redis_sentinels and redis_cluster (line %u) "
				 "are exclusive",
				 seen[SD_K_REDIS_CLUSTER]);
	if (!seen[SD_K_REDIS_SENTINELS] != !seen[SD_K_REDIS_SENTINEL_MASTER])
		return sd_bad_at(p,
				 seen[SD_K_REDIS_SENTINELS] ?
					 seen[SD_K_REDIS_SENTINELS] :
					 seen[SD_K_REDIS_SENTINEL_MASTER],
				 "redis_sentinels and redis_sentinel_master "
				 "go together");
	if (seen[SD_K_REDIS_PASSWORD] && seen[SD_K_REDIS_PASSWORD_FILE])
		return sd_bad_at(p, seen[SD_K_REDIS_PASSWORD_FILE],
				 "redis_password_file and redis_password "
				 "(line %u) are exclusive",
				 seen[SD_K_REDIS_PASSWORD]);
	if (seen[SD_K_REDIS_USERNAME] && !seen[SD_K_REDIS_PASSWORD] &&
	    !seen[SD_K_REDIS_PASSWORD_FILE])
		return sd_bad_at(p, seen[SD_K_REDIS_USERNAME],
				 "redis_username needs redis_password or "
				 "redis_password_file");
	if (p->c->ntables == 0)
		return sd_bad_at(p, 0,
				 "no table: name each lease table to serve "
				 "with 'table = PATH'");
	/* The default, the host name, follows host_id's rule too. */
	if (!seen[SD_K_HOST_ID] &&
	    (host_id[0] == '\0' ||
	     host_id[strspn(host_id, SD_HOST_ID_CHARS)] != '\0'))
		return sd_bad_at(p, 0,
				 "the host name is not a valid host_id (1 "
				 "to %zu of " SD_HOST_ID_SAID "): set host_id",
				 sizeof p->c->agent.host_id - 1);
	if (seen[SD_K_REDIS_PASSWORD_FILE])
		return sd_read_password(p, seen[SD_K_REDIS_PASSWORD_FILE]);
	return true;
}

/* The text's lines, after a UTF-8 byte-order mark (which editors on
 * other systems put first); a UTF-16 one is refused, with its reason. */
static bool
sd_parse_text(struct sd_parse *p, char *text, size_t len)
{
	const unsigned char *u = (const unsigned char *)text;
	char *end = text + len, *nl;

	if (len >= 2 &&
	    ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff)))
		return sd_bad_at(p, 0,
				 "the configuration is UTF-16 (it starts "
				 "with the byte-order mark %02X %02X): save "
				 "it as UTF-8",
				 u[0], u[1]);
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		text += 3;
	for (; text < end; text = nl < end ? nl + 1 : end) {
		size_t n;

		p->line++;
		nl = memchr(text, '\n', (size_t)(end - text));
		if (!nl)
			nl = end; /* the last line, without its newline */
		*nl = '\0';
		n = (size_t)(nl - text);
		if (n > 0 && text[n - 1] == '\r')
			text[--n] = '\0';
		if (strlen(text) != n)
			return sd_bad(p, "a NUL byte in the line");
		if (!sd_line(p, text))
			return false;
	}
	return true;
}

bool
sd_conf_load(struct sd_conf *c, const char *file)
{
	struct sd_parse p = { .c = c };
	char why[PATH_MAX + 256];
	struct sd_file f;
	bool ok;

	memset(c, 0, sizeof *c);
	c->file = file;
	c->log = SD_LOG_STDERR;
	tk_agent_conf_init(&c->agent);
	if (!sd_file_read(file, SD_FILE_TRUSTED, "the configuration", &f, why,
			  sizeof why))
		return sd_bad_at(&p, 0, "%s", why);
	p.others_read = (f.mode & S_IROTH) != 0;
	ok = sd_parse_text(&p, f.text, f.len);
	sd_file_free(&f);
	memcpy(c->file_pidfile, c->pidfile, sizeof c->file_pidfile);
	return ok && sd_check_whole(&p);
}

void
sd_conf_free(struct sd_conf *c)
{
	explicit_bzero(c->agent.redis.password, sizeof c->agent.redis.password);
	free(c->tables);
	c->tables = NULL;
	c->ntables = 0;
}

void
sd_conf_redis_addr(const struct sd_conf *c, char *buf, size_t len)
{
	const struct tk_redis_conf *r = &c->agent.redis;

	if (r->cluster[0])
		snprintf(buf, len, "cluster %s", r->cluster);
	else if (r->sentinels[0])
		snprintf(buf, len, "primary \"%s\" of sentinels %s",
			 r->sentinel_master, r->sentinels);
	else if (r->unix_path[0])
		snprintf(buf, len, "unix:%s", r->unix_path);
	else
		snprintf(buf, len, "%s:%d", r->host, r->port);
}
