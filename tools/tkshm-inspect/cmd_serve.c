/*
 * cmd_serve.c - `tkshm-inspect serve PATH... [--listen ADDR:PORT]
 * [--allow-remote]`: the metrics of `metrics PATH...` over HTTP, read
 * again at each scrape, for Prometheus to scrape directly.
 *
 * HTTP is libmicrohttpd's (one thread answering requests one at a time:
 * a scrape maps the tables read-only and lets go of them again, a few
 * milliseconds).  GET or HEAD of /metrics gets the exposition (text/plain;
 * version=0.0.4) with tkshm_status_errors last; / a line saying where the
 * metrics are; any other path 404, any other method 405.
 *
 * The metrics name tables and their traffic: by default it listens on
 * 127.0.0.1 only, and an address that is not a loopback one is refused
 * unless --allow-remote says the operator means it.  It runs until
 * SIGINT or SIGTERM (exit 0).  A table file truncated under a scrape ends
 * the process with status 4, as every command does (main.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "inspect.h"

#define TI_SERVE_DEFAULT "127.0.0.1:9848"

void
ti_usage_serve(FILE *f)
{
	fputs("Usage: " TI_PROG " serve PATH... [--listen ADDR:PORT] "
	      "[--allow-remote]\n"
	      "\n"
	      "Serves the metrics of the tables PATH... (as `metrics` prints\n"
	      "them, read again at every request) over HTTP at /metrics, for\n"
	      "Prometheus to scrape; a last gauge tkshm_status_errors counts\n"
	      "the tables that could not be read.  Runs until SIGINT or\n"
	      "SIGTERM.\n"
	      "\n"
	      "Options:\n"
	      "  --listen ADDR:PORT  where to listen: an IPv4 address, or an\n"
	      "                      IPv6 one in brackets ([::1]:9848)\n"
	      "                      (default " TI_SERVE_DEFAULT ")\n"
	      "  --allow-remote      accept an address that is not a loopback\n"
	      "                      one (the metrics name your tables: put\n"
	      "                      a firewall or a proxy in front)\n"
	      "  -h, --help          show this help\n"
	      "\n",
	      f);
	ti_print_exit_codes(f);
}

struct ti_serve {
	const char **paths;
	size_t np;
	const char *listen;
	bool allow_remote;
	struct sockaddr_storage addr;
};

static int
ti_serve_opt(void *ctx, const char *cmd, const char *name, const char *value)
{
	struct ti_serve *sv = ctx;

	(void)cmd;
	if (strcmp(name, "listen") == 0)
		sv->listen = value;
	else
		sv->allow_remote = true;
	return TI_GO_ON;
}

/* ADDR:PORT (or [ADDR6]:PORT) into sv->addr, numeric only: a name could
 * resolve to an address nobody meant. */
static int
ti_serve_addr(struct ti_serve *sv)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
					      AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	char host[128];
	const char *colon = strrchr(sv->listen, ':'), *h = sv->listen;
	size_t hl;
	struct addrinfo *res;
	int rc;

	if (!colon || colon[1] == '\0')
		return ti_usage_error(
			"serve", "--listen: '%s' is not ADDR:PORT", sv->listen);
	hl = (size_t)(colon - h);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof host)
		return ti_usage_error("serve", "--listen: '%s' has no address",
				      sv->listen);
	memcpy(host, h, hl);
	host[hl] = '\0';
	if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0)
		return ti_usage_error(
			"serve",
			"--listen: '%s' is not a numeric address and port (%s)",
			sv->listen, gai_strerror(rc));
	memcpy(&sv->addr, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return TI_GO_ON;
}

/* 127.0.0.0/8, ::1, and 127.0.0.0/8 mapped into IPv6. */
static bool
ti_is_loopback(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *v4 = (const struct sockaddr_in *)a;

		return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	}
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *v6 =
			&((const struct sockaddr_in6 *)a)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(v6) ||
		       (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
	}
	return false;
}

static enum MHD_Result
ti_reply(struct MHD_Connection *conn, unsigned status, char *body, size_t len,
	 enum MHD_ResponseMemoryMode mode, const char *type)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result rc;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
					"GET, HEAD");
	rc = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static enum MHD_Result
ti_serve_request(void *cls, struct MHD_Connection *conn, const char *url,
		 const char *method, const char *version, const char *upload,
		 size_t *upload_len, void **state)
{
	static const char text[] = "text/plain; charset=utf-8";
	static char here[] = "tkshm-inspect: the metrics are at /metrics\n";
	static char missing[] = "not found: the metrics are at /metrics\n";
	static char only_get[] = "only GET and HEAD\n";
	const struct ti_serve *sv = cls;
	char *body = NULL;
	size_t len = 0;
	FILE *f;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)state;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return ti_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, only_get,
				sizeof only_get - 1, MHD_RESPMEM_PERSISTENT,
				text);
	if (strcmp(url, "/") == 0)
		return ti_reply(conn, MHD_HTTP_OK, here, sizeof here - 1,
				MHD_RESPMEM_PERSISTENT, text);
	if (strcmp(url, "/metrics") != 0)
		return ti_reply(conn, MHD_HTTP_NOT_FOUND, missing,
				sizeof missing - 1, MHD_RESPMEM_PERSISTENT,
				text);
	if (!(f = open_memstream(&body, &len)))
		return MHD_NO;
	/* Tables that cannot be read are in tkshm_status_errors (and on
	 * standard error): the others are still worth a scrape. */
	(void)ti_metrics_write(f, sv->paths, sv->np, tkshm_now_ms(), true);
	if (fclose(f) != 0) {
		free(body);
		return MHD_NO;
	}
	return ti_reply(conn, MHD_HTTP_OK, body, len, MHD_RESPMEM_MUST_FREE,
			"text/plain; version=0.0.4; charset=utf-8");
}

/* Listens and answers until SIGINT or SIGTERM. */
static int
ti_serve_run(struct ti_serve *sv)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	sigset_t stop;
	int sig;

	/* Blocked before the server's thread starts, which inherits the
	 * mask: the signals are taken by sigwait() below only. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	if (sv->addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d = MHD_start_daemon(flags, 0, NULL, NULL, ti_serve_request, sv,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sv->addr,
			     MHD_OPTION_CONNECTION_TIMEOUT, 10u,
			     MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_END);
	if (!d) {
		ti_err("cannot listen on %s: %s", sv->listen,
		       errno ? strerror(errno) : "libmicrohttpd refused");
		return TI_EXIT_IO;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	fprintf(stderr,
		TI_PROG ": serving the metrics of %zu table%s at "
			"http://%s/metrics (port %u)\n",
		sv->np, sv->np == 1 ? "" : "s", sv->listen,
		info ? (unsigned)info->port : 0u);
	fflush(stderr);
	while (sigwait(&stop, &sig) != 0)
		;
	MHD_stop_daemon(d);
	return TI_EXIT_OK;
}

int
ti_cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = { TI_OPT_HELP,
					      TI_OPT_VALUE("listen"),
					      TI_OPT_FLAG("allow-remote"),
					      TI_OPT_END };
	static const char *const names[] = { "PATH", NULL };
	struct ti_serve sv = { .listen = TI_SERVE_DEFAULT };
	struct ti_cmdline c =
		TI_CMDLINE("serve", ti_usage_serve, opts, ti_serve_opt, &sv);
	struct ti_operands ops = { .names = names, .min = 1 };
	int k;

	ops.max = argc > 1 ? (size_t)argc - 1 : 1;
	if (!(ops.v = calloc(ops.max, sizeof *ops.v))) {
		ti_err("out of memory");
		return TI_EXIT_IO;
	}
	k = ti_cmdline_operands(&c, &ops, argc, argv);
	if (k == TI_GO_ON)
		k = ti_serve_addr(&sv);
	if (k == TI_GO_ON && !sv.allow_remote && !ti_is_loopback(&sv.addr))
		k = ti_usage_error("serve",
				   "--listen: %s is not a loopback address "
				   "(the metrics name your tables): add "
				   "--allow-remote to listen there",
				   sv.listen);
	if (k == TI_GO_ON) {
		sv.paths = ops.v;
		sv.np = ops.n;
		k = ti_serve_run(&sv);
	}
	free(ops.v);
	return k;
}
