/*
 * test_inspect_hostile.c - every tkshm-inspect command that opens a table,
 * given files that are not good tables, must end with a clear message and
 * a documented exit status, never with a signal:
 *   - files that are refused when opened: empty, short, truncated, too long,
 *     bad magic, another layout version, a bad checksum, random bytes, a
 *     directory, a FIFO, a symbolic link, a missing file, a file without
 *     read (or write) permission;
 *   - a valid table overwritten with random bytes by another process while
 *     the commands read it;
 *   - a table truncated by another process after the tool mapped it (SIGBUS
 *     on the missing pages, which the tool turns into exit status 4).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "shm/layout.h"
#include "test_support.h"

#ifndef TKSHM_INSPECT_BIN
#error "TKSHM_INSPECT_BIN must name the tkshm-inspect binary"
#endif

#define BIN	  TKSHM_INSPECT_BIN
#define GCRA_SPEC "gcra:limit=10,periodMs=1000,burst=5"
#define SIGBUS_MSG                                                      \
	"tkshm-inspect: the table file changed size while it was read " \
	"(SIGBUS)"

/* The exit statuses of tkshm-inspect (inspect.h). */
enum {
	EX_OK = 0,
	EX_CHECK = 1,
	EX_USAGE = 2,
	EX_OPEN = 3,
	EX_IO = 4
};

/* --- helpers ------------------------------------------------------------- */

/* No sanitizer report (a crash that ASan turned into an exit status, or
 * undefined behaviour UBSan saw on hostile bytes), and a status 1 that is
 * the tool's own: verify's summary, or the tool's message. */
static void
expect_clean(const struct tkt_proc *p, const char *what)
{
	if (strstr(p->err, "Sanitizer") || strstr(p->err, "runtime error"))
		fail_msg("%s: sanitizer report (status %d):\n%.3000s", what,
			 p->status, p->err);
	if (p->status == EX_CHECK && !strstr(p->out, "problem") &&
	    !strstr(p->err, "tkshm-inspect: "))
		fail_msg("%s: status 1 without a message:\n%.2000s", what,
			 p->err);
}

/* A command line with the table path at argv[k] where the template says
 * "@", and the rest copied. */
#define MAX_ARGS 16
struct cmd {
	const char *name; /* for messages */
	const char *args[MAX_ARGS];
};

static void
build_argv(const struct cmd *c, const char *path, const char **argv,
	   const char *prefix[], size_t nprefix)
{
	size_t n = 0;

	for (size_t i = 0; i < nprefix; i++)
		argv[n++] = prefix[i];
	argv[n++] = BIN;
	for (size_t i = 0; c->args[i]; i++) {
		assert_true(n + 2 < MAX_ARGS + 4);
		argv[n++] = strcmp(c->args[i], "@") == 0 ? path : c->args[i];
	}
	argv[n] = NULL;
}

static int
run_cmd(struct tkt_proc *p, const struct cmd *c, const char *path)
{
	const char *argv[MAX_ARGS + 4];

	build_argv(c, path, argv, NULL, 0);
	return tkt_run(p, argv, NULL);
}

/* Whether the (other engineer's) command exists yet: its --help then
 * prints the exit-status table every command's help ends with. */
static bool
implemented(const char *cmd)
{
	static struct {
		char name[16];
		bool yes;
	} known[8];
	static size_t nknown;
	struct tkt_proc p;
	bool yes;

	for (size_t i = 0; i < nknown; i++)
		if (strcmp(known[i].name, cmd) == 0)
			return known[i].yes;
	tkt_run(&p, (const char *const[]){ BIN, cmd, "--help", NULL }, NULL);
	yes = p.status == 0 && strstr(p.out, "Exit status:");
	tkt_proc_free(&p);
	if (!yes)
		print_message("(%s is not written yet: not run)\n", cmd);
	if (nknown < 8) {
		snprintf(known[nknown].name, sizeof known[0].name, "%s", cmd);
		known[nknown++].yes = yes;
	}
	return yes;
}

/* Every command that opens a table; `list`, `show` and `top` only once they
 * exist.  Returns the number filled. */
static size_t
opening_commands(struct cmd *out)
{
	static const struct cmd all[] = {
		{ "stats", { "stats", "@", NULL } },
		{ "stats --json", { "stats", "--json", "@", NULL } },
		{ "verify", { "verify", "@", NULL } },
		{ "metrics", { "metrics", "@", NULL } },
		{ "metrics --json", { "metrics", "--json", "@", NULL } },
		{ "reset", { "reset", "@", "k", NULL } },
		{ "set", { "set", "@", "k", "--remaining", "1", NULL } },
		{ "set --block-for",
		  { "set", "@", "k", "--block-for", "1000", NULL } },
		{ "replay --table",
		  { "replay", "--policy", GCRA_SPEC, "--table", "@", NULL } },
		{ "list", { "list", "@", NULL } },
		{ "show", { "show", "@", "k", NULL } },
		{ "top", { "top", "@", NULL } },
	};
	size_t n = 0;

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		const char *name = all[i].args[0];

		if ((strcmp(name, "list") == 0 || strcmp(name, "show") == 0 ||
		     strcmp(name, "top") == 0) &&
		    !implemented(name))
			continue;
		out[n++] = all[i];
	}
	return n;
}

/* No sample lines: metrics prints only its # HELP and # TYPE lines (or an
 * empty JSON object) when no table could be read; others print nothing. */
static void
expect_no_output(const struct tkt_proc *p, const char *what)
{
	char *copy = strdup(p->out), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		if (l[0] != '#' && strcmp(l, "{}") != 0)
			fail_msg("%s printed \"%s\"", what, l);
	free(copy);
}

static void
make_table(const char *path, const char *spec, uint64_t slots)
{
	tkshm_close(tkt_file(path, spec, slots));
}

static struct tk_header
read_header(const char *path)
{
	struct tk_header h;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
	close(fd);
	return h;
}

static void
write_header(const char *path, const struct tk_header *h)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, h, sizeof *h, 0), (ssize_t)sizeof *h);
	close(fd);
}

static void
write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void
random_bytes(void *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = getrandom((char *)buf + off, len - off, 0);

		if (n < 0 && errno != EINTR)
			fail_msg("getrandom: %s", strerror(errno));
		if (n > 0)
			off += (size_t)n;
	}
}

/* --- files refused when opened ------------------------------------------- */

struct bad_file {
	const char *name;
	const char *why;  /* in the message: the library's sentence */
	const char *more; /* and this, if not NULL */
};

/* Makes the bad file `i` at `path`; returns false past the last one. */
static bool
make_bad_file(size_t i, const char *path, struct bad_file *b)
{
	static char junk[65536];
	const char *good = tkt_path("good.tkshm");
	struct tk_header h;
	char *data;
	size_t len;

	make_table(good, GCRA_SPEC, 256);
	data = tkt_read_file(good, &len);
	unlink(good);
	memset(b, 0, sizeof *b);
	switch (i) {
	case 0:
		*b = (struct bad_file){ "empty file",
					tkshm_strerror(TKSHM_EBADMAGIC),
					"0 bytes" };
		write_file(path, "", 0);
		break;
	case 1:
		*b = (struct bad_file){ "the first 100 bytes of a table",
					tkshm_strerror(TKSHM_ESIZE), NULL };
		write_file(path, data, 100);
		break;
	case 2:
		*b = (struct bad_file){ "a table cut to half its size",
					tkshm_strerror(TKSHM_ESIZE),
					"its header says" };
		write_file(path, data, len / 2);
		break;
	case 3:
		*b = (struct bad_file){ "a table with a page appended",
					tkshm_strerror(TKSHM_ESIZE),
					"its header says" };
		write_file(path, data, len);
		assert_int_equal(truncate(path, (off_t)(len + 4096)), 0);
		break;
	case 4:
		*b = (struct bad_file){ "wrong magic",
					tkshm_strerror(TKSHM_EBADMAGIC),
					"bad magic" };
		data[0] = 'X';
		write_file(path, data, len);
		break;
	case 5:
		/* The version is checked before the checksum. */
		*b = (struct bad_file){ "layout version + 1",
					tkshm_strerror(TKSHM_EVERSION),
					"layout version" };
		write_file(path, data, len);
		h = read_header(path);
		h.layout_version++;
		write_header(path, &h);
		break;
	case 6:
		/* The same with a checksum that matches it. */
		*b = (struct bad_file){ "layout version + 1, checksum fixed",
					tkshm_strerror(TKSHM_EVERSION),
					"layout version" };
		write_file(path, data, len);
		h = read_header(path);
		h.layout_version++;
		h.checksum = XXH64(&h, offsetof(struct tk_header, checksum), 0);
		write_header(path, &h);
		break;
	case 7:
		*b = (struct bad_file){ "a header with a bad checksum",
					tkshm_strerror(TKSHM_ECORRUPT),
					"checksum" };
		write_file(path, data, len);
		h = read_header(path);
		h.created_ms += 1;
		write_header(path, &h);
		break;
	case 8:
		*b = (struct bad_file){ "random bytes",
					tkshm_strerror(TKSHM_EBADMAGIC), NULL };
		random_bytes(junk, sizeof junk);
		write_file(path, junk, sizeof junk);
		break;
	case 9:
		*b = (struct bad_file){ "a directory",
					tkshm_strerror(TKSHM_ENOTFILE), NULL };
		assert_int_equal(mkdir(path, 0700), 0);
		break;
	case 10:
		*b = (struct bad_file){ "a FIFO",
					tkshm_strerror(TKSHM_ENOTFILE), NULL };
		assert_int_equal(mkfifo(path, 0600), 0);
		break;
	case 11:
		*b = (struct bad_file){ "a symbolic link to a table",
					tkshm_strerror(TKSHM_ESYMLINK), NULL };
		make_table(tkt_path("target.tkshm"), GCRA_SPEC, 8);
		assert_int_equal(symlink(tkt_path("target.tkshm"), path), 0);
		break;
	case 12:
		*b = (struct bad_file){ "no file", tkshm_strerror(TKSHM_ENOENT),
					"does not exist" };
		break;
	default:
		free(data);
		return false;
	}
	free(data);
	return true;
}

static void
remove_bad_file(const char *path)
{
	struct stat sb;

	if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		assert_int_equal(rmdir(path), 0);
	else if (lstat(path, &sb) == 0)
		assert_int_equal(unlink(path), 0);
}

static void
test_refused_files(void **state)
{
	struct cmd cmds[16];
	size_t ncmds = opening_commands(cmds), runs = 0;
	const char *path = tkt_path("bad.tkshm");
	struct bad_file b;

	(void)state;
	for (size_t i = 0; make_bad_file(i, path, &b); i++) {
		for (size_t k = 0; k < ncmds; k++) {
			struct tkt_proc p;
			char what[160];

			snprintf(what, sizeof what, "%s on %s", cmds[k].name,
				 b.name);
			run_cmd(&p, &cmds[k], path);
			tkt_expect_status(&p, EX_OPEN, what);
			tkt_expect_contains(
				p.err, "tkshm-inspect: cannot open ", what);
			tkt_expect_contains(p.err, path, what);
			tkt_expect_contains(p.err, b.why, what);
			if (b.more)
				tkt_expect_contains(p.err, b.more, what);
			expect_no_output(&p, what);
			expect_clean(&p, what);
			tkt_proc_free(&p);
			runs++;
		}
		remove_bad_file(path);
	}
	print_message("%zu refused opens, %zu commands\n", runs, ncmds);
	assert_true(runs >= 13 * 9);
}

/* --- permissions --------------------------------------------------------- */

/* Runs `c` on `path` without root's bypass of permissions: as uid/gid 65534
 * (through this program, re-executed with --as-nobody) when root, directly
 * otherwise. */
static int
run_unprivileged(struct tkt_proc *p, const struct cmd *c, const char *path)
{
	static char self[4096];
	const char *prefix[] = { self, "--as-nobody" };
	const char *argv[MAX_ARGS + 4];
	ssize_t n;

	if (geteuid() != 0) {
		build_argv(c, path, argv, NULL, 0);
		return tkt_run(p, argv, NULL);
	}
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	assert_true(n > 0);
	self[n] = '\0';
	build_argv(c, path, argv, prefix, 2);
	return tkt_run(p, argv, NULL);
}

static void
test_permissions(void **state)
{
	const char *noread = tkt_path("noread.tkshm");
	const char *readonly = tkt_path("readonly.tkshm");
	bool root = geteuid() == 0;
	struct cmd cmds[16];
	size_t ncmds = opening_commands(cmds);
	tkshm_decision d;
	tkshm_table *t;
	struct tkt_proc p;

	(void)state;
	/* The unprivileged child must reach the files. */
	assert_int_equal(chmod(tkt_tmpdir(), 0711), 0);
	make_table(noread, GCRA_SPEC, 8);
	make_table(readonly, GCRA_SPEC, 8);
	/* Root owns both: "other" gets nothing, or only reading. */
	assert_int_equal(chmod(noread, root ? 0600 : 0), 0);
	assert_int_equal(chmod(readonly, root ? 0644 : 0444), 0);

	for (size_t k = 0; k < ncmds; k++) {
		char what[160];

		snprintf(what, sizeof what, "%s without read permission",
			 cmds[k].name);
		run_unprivileged(&p, &cmds[k], noread);
		tkt_expect_status(&p, EX_OPEN, what);
		tkt_expect_contains(p.err, "permission denied", what);
		expect_clean(&p, what);
		tkt_proc_free(&p);
	}

	/* The control: reading works, so the refusals above were about the
	 * file's bits.  Writing does not. */
	run_unprivileged(&p, &(struct cmd){ "stats", { "stats", "@", NULL } },
			 readonly);
	tkt_expect_status(&p, EX_OK, "stats of a readable table");
	tkt_proc_free(&p);
	run_unprivileged(&p, &(struct cmd){ "reset", { "reset", "@", "k" } },
			 readonly);
	tkt_expect_status(&p, EX_OPEN, "reset without write permission");
	tkt_expect_contains(p.err, "permission denied", "reset");
	tkt_proc_free(&p);
	run_unprivileged(&p,
			 &(struct cmd){ "set",
					{ "set", "@", "k", "--remaining", "0",
					  "--now", "1000" } },
			 readonly);
	tkt_expect_status(&p, EX_OPEN, "set without write permission");
	tkt_expect_contains(p.err, "permission denied", "set");
	tkt_proc_free(&p);
	/* ... and nothing was set. */
	assert_int_equal(chmod(readonly, 0600), 0);
	t = tkt_file(readonly, GCRA_SPEC, 8);
	assert_rc(tkshm_peek_at(t, "k", 1, 1000, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 5);
	tkshm_close(t);
	assert_int_equal(chmod(tkt_tmpdir(), 0700), 0);
}

/* --- random bytes written while the tool reads ----------------------------- */

/* Overwrites random 8-byte words of the table's slot, label, denial, debt
 * and wide areas (everything after the counters) until killed. */
static void
scribble_forever(const char *path)
{
	struct tk_header h = read_header(path);
	int fd = open(path, O_RDWR);
	uint64_t words, rnd[256];
	uint64_t *base;

	if (fd < 0)
		_exit(10);
	base = mmap(NULL, h.file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    0);
	if (base == MAP_FAILED)
		_exit(11);
	words = (h.file_size - h.buckets_off) / 8;
	for (;;) {
		random_bytes(rnd, sizeof rnd);
		for (size_t i = 0; i + 1 < 256; i += 2) {
			uint64_t at = h.buckets_off / 8 + rnd[i] % words;
			__atomic_store_n(&base[at], rnd[i + 1],
					 __ATOMIC_RELAXED);
		}
		usleep(200);
	}
}

/* What a command may end with on a table that is being scribbled on: 0;
 * 1, a problem found or a key the table cannot change (corrupt, busy,
 * full); or 4 for a key that kept moving (show), said in the tool's words.
 * Never a signal, never the fault handler's SIGSEGV message (a bug), never
 * SIGBUS (the size does not change). */
static bool
scribbled_status_ok(const struct tkt_proc *p)
{
	return p->status == EX_OK || p->status == EX_CHECK;
}

struct scribble_case {
	const char *spec;
	uint64_t slots;
	bool can_block;
};

/* Runs the reading and writing commands on `path` while a child scribbles
 * on it, for `seconds`; every exit status must be one the command
 * documents for a bad table (never a signal, never exit 4). */
static void
run_scribbled(const struct scribble_case *sc, double seconds)
{
	const char *path = tkt_path("scribbled.tkshm");
	const struct cmd base[] = {
		{ "verify", { "verify", "@", NULL } },
		{ "stats", { "stats", "@", NULL } },
		{ "metrics", { "metrics", "@", NULL } },
		{ "reset", { "reset", "@", "key3", NULL } },
		{ "set", { "set", "@", "key5", "--remaining", "0", NULL } },
		{ "set --block-for",
		  { "set", "@", "key7", "--block-for", "1000", NULL } },
		{ "list", { "list", "@", NULL } },
		{ "show", { "show", "@", "key9", NULL } },
		{ "top",
		  { "top", "@", "--iterations", "2", "--interval", "10",
		    "--json", NULL } },
	};
	const size_t nbase = sizeof base / sizeof base[0];
	bool have[sizeof base / sizeof base[0]];
	size_t runs = 0, verify_problems = 0, verify_ok = 0, busy = 0;
	double end;
	tkshm_table *t;
	pid_t pid;

	for (size_t k = 0; k < nbase; k++)
		have[k] = k < 6 || implemented(base[k].args[0]);
	have[5] = sc->can_block;
	t = tkt_file(path, sc->spec, sc->slots);
	for (int i = 0; i < 64; i++) {
		char key[16];
		tkshm_decision d;

		snprintf(key, sizeof key, "key%d", i);
		assert_rc(tkshm_check(t, key, strlen(key), 1, &d), TKSHM_OK);
	}
	tkshm_close(t);

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		scribble_forever(path);
	end = tkt_seconds() + seconds;
	while (tkt_seconds() < end) {
		for (size_t k = 0; k < nbase; k++) {
			struct tkt_proc p;
			char what[200];

			if (!have[k])
				continue;
			snprintf(what, sizeof what, "%s on %s, scribbled",
				 base[k].name, sc->spec);
			run_cmd(&p, &base[k], path);
			expect_clean(&p, what);
			runs++;
			if (k == 0) {
				verify_ok += p.status == EX_OK;
				verify_problems += p.status == EX_CHECK;
			}
			if (p.status == EX_CHECK &&
			    strstr(p.err, "did not settle")) {
				busy++;
				print_message("  %s gave up: %.200s", what,
					      p.err);
			}
			if (!scribbled_status_ok(&p)) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				tkt_expect_status(&p, EX_OK, what);
			}
			tkt_proc_free(&p);
		}
	}
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	print_message("%s: %zu runs while scribbled; verify found problems "
		      "%zu times, none %zu times; %zu did not settle\n",
		      sc->spec, runs, verify_problems, verify_ok, busy);
	/* The scribbling was seen. */
	assert_true(verify_problems > 0);
	unlink(path);
}

static void
test_scribbled(void **state)
{
	static const struct scribble_case cases[] = {
		{ GCRA_SPEC, 4096, true },
		{ "tokenBucket:capacity=10,refillPerSec=5", 1024, true },
		{ "slidingWindowLog:limit=8,windowMs=1000", 256, false },
		{ "slidingWindow:limit=10,windowMs=1000", 256, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_scribbled(&cases[i], 1.5);
}

/* --- truncated while mapped ---------------------------------------------- */

#define BIG_SLOTS (UINT64_C(1) << 20)
/* The header page and the counters survive: the slots do not. */
#define CUT_SIZE (3 * 4096)

/* Whether `pid` maps `path` now. */
static bool
maps_file(pid_t pid, const char *path)
{
	char name[64], *maps;
	bool yes;
	FILE *f;
	size_t cap = 0;

	snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
	f = fopen(name, "r");
	if (!f)
		return false;
	maps = NULL;
	yes = false;
	while (!yes && getline(&maps, &cap, f) > 0)
		yes = strstr(maps, path) != NULL;
	free(maps);
	fclose(f);
	return yes;
}

/* Starts `c` on the big table, stops it as soon as it has the table mapped,
 * truncates the file, lets it go on.  Returns true when the run hit the
 * missing pages (exit 4 with the SIGBUS message), false when it had
 * finished reading before the truncation (exit 0).  The file is restored
 * to its size (zero pages: an empty, valid table) afterwards. */
static bool
truncate_under(const struct cmd *c, const char *path, off_t full)
{
	const char *argv[MAX_ARGS + 4];
	struct tkt_proc p;
	bool stopped = false, hit;
	double give_up = tkt_seconds() + 10;

	build_argv(c, path, argv, NULL, 0);
	tkt_proc_start(&p, argv, NULL);
	while (!stopped && tkt_seconds() < give_up) {
		if (maps_file(p.pid, path)) {
			kill(p.pid, SIGSTOP);
			stopped = true;
		}
	}
	if (stopped) {
		assert_int_equal(truncate(path, CUT_SIZE), 0);
		kill(p.pid, SIGCONT);
	}
	tkt_proc_finish(&p, 1);
	assert_int_equal(truncate(path, full), 0);
	if (p.status == EX_IO)
		tkt_expect_contains(p.err, SIGBUS_MSG, c->name);
	else
		tkt_expect_status(&p, EX_OK, c->name);
	expect_clean(&p, c->name);
	hit = p.status == EX_IO;
	tkt_proc_free(&p);
	return stopped && hit;
}

static void
test_truncated_while_mapped(void **state)
{
	const char *path = tkt_path("big.tkshm");
	const struct cmd cmds[] = {
		{ "stats", { "stats", "@", "--now", "1000", NULL } },
		{ "verify", { "verify", "@", NULL } },
		{ "metrics", { "metrics", "@", NULL } },
		{ "list", { "list", "@", NULL } },
		/* Reads the table again every 10 ms for a second. */
		{ "top",
		  { "top", "@", "--interval", "10", "--iterations", "100",
		    NULL } },
	};
	struct stat sb;

	(void)state;
	make_table(path, GCRA_SPEC, BIG_SLOTS);
	assert_int_equal(stat(path, &sb), 0);
	for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
		unsigned hits = 0, tries = 0;

		if (k >= 3 && !implemented(cmds[k].args[0]))
			continue;
		while (hits < 2 && tries < 20) {
			hits += truncate_under(&cmds[k], path, sb.st_size);
			tries++;
		}
		print_message("%s: %u of %u runs hit the truncation\n",
			      cmds[k].name, hits, tries);
		/* At least one run read pages that were gone. */
		assert_true(hits >= 1);
	}
}

/* A child that keeps cutting the file and growing it back while the tool
 * runs in a loop: every run ends with 0, 1 (verify), 3 (the size was wrong
 * when it opened) or 4 with the SIGBUS message, never by a signal. */
static void
test_truncation_race(void **state)
{
	const char *path = tkt_path("race.tkshm");
	const struct cmd cmds[] = {
		{ "stats", { "stats", "@", NULL } },
		{ "verify", { "verify", "@", NULL } },
		{ "metrics", { "metrics", "@", NULL } },
	};
	unsigned count[5] = { 0 };
	struct stat sb;
	double end;
	pid_t pid;

	(void)state;
	make_table(path, GCRA_SPEC, BIG_SLOTS / 4);
	assert_int_equal(stat(path, &sb), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Cut for 2 ms in every 12: some runs open a cut file, some
		 * read pages while they are gone, some miss it. */
		for (;;) {
			if (truncate(path, CUT_SIZE) != 0)
				_exit(1);
			usleep(2000);
			if (truncate(path, sb.st_size) != 0)
				_exit(1);
			usleep(10000);
		}
	}
	end = tkt_seconds() + 2.0;
	for (size_t i = 0; tkt_seconds() < end; i++) {
		const struct cmd *c = &cmds[i % 3];
		struct tkt_proc p;
		bool fine;

		run_cmd(&p, c, path);
		expect_clean(&p, c->name);
		fine = p.status == EX_OK ||
		       (p.status == EX_CHECK && i % 3 == 1) ||
		       (p.status == EX_OPEN &&
			strstr(p.err, tkshm_strerror(TKSHM_ESIZE))) ||
		       (p.status == EX_IO && strstr(p.err, SIGBUS_MSG));
		if (!fine) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			fail_msg("%s while the file changes size: status %d\n"
				 "stderr: %.2000s",
				 c->name, p.status, p.err);
		}
		count[p.status]++;
		tkt_proc_free(&p);
	}
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	print_message("while the size changed: %u ok, %u problems, %u refused "
		      "opens, %u SIGBUS\n",
		      count[0], count[1], count[3], count[4]);
	assert_true(count[0] + count[1] + count[3] + count[4] > 0);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_files),
		cmocka_unit_test(test_permissions),
		cmocka_unit_test(test_scribbled),
		cmocka_unit_test(test_truncated_while_mapped),
		cmocka_unit_test(test_truncation_race),
	};

	/* Re-executed by run_unprivileged(): become nobody, run the tool. */
	if (argc > 2 && strcmp(argv[1], "--as-nobody") == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
		    setuid(65534) != 0) {
			perror("dropping privileges");
			return 126;
		}
		execv(argv[2], argv + 2);
		perror(argv[2]);
		return 127;
	}
	return cmocka_run_group_tests_name("tool_inspect_hostile", tests, NULL,
					   tkt_teardown);
}
