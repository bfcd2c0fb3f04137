/*
 * config.c - reading tkshm-syncd's configuration file (config.h).
 *
 * The file is read whole before the daemon forks, so every mistake in it
 * is reported on the terminal of whoever started it, with its line.
 * Values are checked here with their line; tk_agent_new() checks them
 * again (and names, without a line, anything it refuses that we let by).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A finite decimal number: digits, one '.', an exponent; no hex, "inf" or
 * "nan", which strtod would take. */
static bool
sd_decimal(const char *s, double *out)
{
	char *end;

	if (s[strspn(s, "0123456789.eE+-")] != '\0' ||
	    !strpbrk(s, "0123456789"))
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return *end == '\0' && errno == 0 && isfinite(*out);
}

/* A duration in milliseconds in [min, max]; min 0 stands for "more than
 * 0".  The ranges are tk_agent_new()'s and tk_conn_new()'s, checked here
 * to name the line. */
static bool
sd_ms(struct sd_parse *p, const char *key, const char *v, double min,
      double max, double *out)
{
	double d;

	if (!sd_decimal(v, &d))
		return sd_bad(p, "%s: '%s' is not a number of milliseconds",
			      key, v);
	if (min == 0 ? !(d > 0 && d <= max) : !(d >= min && d <= max)) {
		if (min == 0)
			return sd_bad(p,
				      "%s: %s is out of range (more than 0, "
				      "at most %.15g)",
				      key, v, max);
		return sd_bad(p, "%s: %s is out of range (%.15g to %.15g)", key,
			      v, min, max);
	}
	*out = d;
	return true;
}

/* A whole number in [min, max]. */
static bool
sd_uint(struct sd_parse *p, const char *key, const char *v, unsigned long min,
	unsigned long max, unsigned long *out)
{
	unsigned long n;
	char *end;

	if (v[strspn(v, "0123456789")] != '\0')
		return sd_bad(p, "%s: '%s' is not a whole number", key, v);
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno == ERANGE || n < min || n > max)
		return sd_bad(p, "%s: %s is out of range (%lu to %lu)", key, v,
			      min, max);
	*out = n;
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
		return sd_str(p, key, v, a->redis.host, sizeof a->redis.host);
	case SD_K_REDIS_PORT:
		if (!sd_uint(p, key, v, 1, 65535, &n))
			return false;
		a->redis.port = (int)n;
		return true;
	case SD_K_REDIS_UNIX:
		return sd_abs_path(p, key, v, a->redis.unix_path,
				   sizeof a->redis.unix_path);
	case SD_K_REDIS_USERNAME:
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
	case SD_K_CONNECT_TIMEOUT_MS:
		return sd_ms(p, key, v, 0, SD_MAX_MS,
			     &a->redis.connect_timeout_ms);
	case SD_K_COMMAND_TIMEOUT_MS:
		return sd_ms(p, key, v, 0, SD_MAX_MS,
			     &a->redis.command_timeout_ms);
	case SD_K_POLL_MS:
		return sd_ms(p, key, v, 0.1, 1000, &a->poll_ms);
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
		return sd_str(p, key, v, a->host_id, sizeof a->host_id);
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
	for (const char *s = value; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return sd_bad(p, "%s: a control character in the value",
				      key);
	if (value[0] == '\0')
		return sd_bad(p, "%s: no value", key);
	if (k != SD_K_TABLE && p->seen[k])
		return sd_bad(p, "%s is given twice (first at line %u)", key,
			      p->seen[k]);
	if (!p->seen[k])
		p->seen[k] = p->line;
	return sd_set(p, (enum sd_key)k, value);
}

/* Reads the password file named at line `line`: its first line, which
 * only the owner (and the group) may read. */
static bool
sd_read_password(struct sd_parse *p, unsigned line)
{
	struct tk_redis_conf *r = &p->c->agent.redis;
	char buf[sizeof r->password + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	fd = open(p->password_file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sd_bad_at(p, line, "cannot read %s: %s",
				 p->password_file, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sd_bad_at(p, line, "%s is not a regular file",
				 p->password_file);
	}
	/* Checked on the open file, so that what was checked is what is
	 * read. */
	if (st.st_mode & S_IRWXO) {
		close(fd);
		return sd_bad_at(p, line,
				 "%s is open to others (mode %04o): chmod "
				 "o-rwx it",
				 p->password_file,
				 (unsigned)(st.st_mode & 07777));
	}
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return sd_bad_at(p, line, "cannot read %s: %s",
				 p->password_file, strerror(errno));
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	if (len == 0 || memchr(buf, '\0', len) != NULL) {
		explicit_bzero(buf, sizeof buf);
		return sd_bad_at(p, line,
				 "%s: the first line should be the password",
				 p->password_file);
	}
	if (len >= sizeof r->password) {
		explicit_bzero(buf, sizeof buf);
		return sd_bad_at(p, line,
				 "%s: the password is too long (at "
				 "most %zu bytes)",
				 p->password_file, sizeof r->password - 1);
	}
	memcpy(r->password, buf, len + 1);
	explicit_bzero(buf, sizeof buf);
	return true;
}

/* What no single line can show. */
static bool
sd_check_whole(struct sd_parse *p)
{
	const unsigned *seen = p->seen;
	unsigned net = seen[SD_K_REDIS_HOST] ? seen[SD_K_REDIS_HOST] :
					       seen[SD_K_REDIS_PORT];

	if (seen[SD_K_REDIS_UNIX] && net)
		return sd_bad_at(p, seen[SD_K_REDIS_UNIX],
				 "redis_unix and redis_host/redis_port "
				 "(line %u) are exclusive",
				 net);
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
	if (seen[SD_K_REDIS_PASSWORD_FILE])
		return sd_read_password(p, seen[SD_K_REDIS_PASSWORD_FILE]);
	return true;
}

bool
sd_conf_load(struct sd_conf *c, const char *file)
{
	struct sd_parse p = { .c = c };
	struct stat st;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool ok = true;
	FILE *f;

	memset(c, 0, sizeof *c);
	c->file = file;
	c->log = SD_LOG_STDERR;
	tk_agent_conf_init(&c->agent);
	if (!(f = fopen(file, "re")))
		return sd_bad_at(&p, 0, "cannot read the configuration: %s",
				 strerror(errno));
	p.others_read = fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH);
	while (ok && (n = getline(&line, &cap, f)) >= 0) {
		p.line++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (strlen(line) != (size_t)n)
			ok = sd_bad(&p, "a NUL byte in the line");
		else
			ok = sd_line(&p, line);
	}
	if (ok && ferror(f))
		ok = sd_bad_at(&p, 0, "cannot read the configuration: %s",
			       strerror(errno));
	if (line)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
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

	if (r->unix_path[0])
		snprintf(buf, len, "unix:%s", r->unix_path);
	else
		snprintf(buf, len, "%s:%d", r->host, r->port);
}
