/*
 * test_segment.c - creating, attaching and refusing table files.
 *
 * Every file lives in tkt_tmpdir().  Damaged tables are made by writing the
 * file with pwrite at offsets taken from the segment layout (src/shm/
 * layout.h), the way a stray writer or a foreign program would.  Where a
 * test wants one particular check to be the one that fails, it repairs the
 * header checksum (XXH64 of every byte before it) after the damage.
 *
 * Processes: the creation race forks 16 creators per round, the permission
 * test forks a child that drops root, and children never call cmocka (a
 * failing assertion would longjmp into the child's copy of the runner);
 * they report through shared memory and their exit status.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_support.h"
#include "shm/layout.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define SPEC "gcra:limit=10,periodMs=1000,burst=5"
#define NOW  1000.0

static mode_t saved_umask;

static int
group_setup(void **state)
{
	(void)state;
	saved_umask = umask(022);
	umask(saved_umask);
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	umask(saved_umask);
	tkt_cleanup();
	return 0;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

/* Opens `path` with `policy` (NULL: adopt) and `flags`; returns the code,
 * closing the handle on success.  err receives the error sentence. */
static int
try_open(const char *path, const tkshm_policy *policy, uint64_t slots,
	 uint32_t flags, char *err, size_t err_len)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	int rc;

	o.policy = policy;
	o.slots = slots;
	o.flags = flags;
	o.errbuf = err;
	o.errbuf_len = err_len;
	rc = tkshm_open(path, &o, &t);
	if (rc == TKSHM_OK) {
		assert_non_null(t);
		tkshm_close(t);
	} else {
		assert_null(t);
	}
	return rc;
}

/* A valid table file with one consumed key; returns its path. */
static const char *
make_table(const char *name)
{
	const char *path = tkt_path(name);
	tkshm_table *t = tkt_file(path, SPEC, 64);
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, "k", 1, 2, NOW, &d), TKSHM_OK);
	tkshm_close(t);
	return path;
}

static void
read_header(const char *path, struct tk_header *h)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, h, sizeof *h, 0), sizeof *h);
	close(fd);
}

/* Writes `h` back, with a correct checksum when `fix` is set. */
static void
write_header(const char *path, struct tk_header *h, bool fix)
{
	int fd = open(path, O_WRONLY);

	if (fix)
		h->checksum = XXH64(h, offsetof(struct tk_header, checksum), 0);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, h, sizeof *h, 0), sizeof *h);
	close(fd);
}

static void
write_bytes(const char *path, off_t off, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, off), (ssize_t)n);
	close(fd);
}

static off_t
file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* Opening a damaged table fails with `want` and an error sentence. */
static void
assert_refused(const char *path, int want, const char *why)
{
	tkshm_policy p = tkt_policy(SPEC);
	char err[256];
	int rc;

	/* With and without a policy, read-write and read-only: the damage is
	 * found before anything else is looked at. */
	for (int variant = 0; variant < 3; variant++) {
		memset(err, 0, sizeof err);
		rc = try_open(path, variant == 1 ? NULL : &p, 0,
			      variant == 2 ? TKSHM_O_RDONLY : TKSHM_O_CREATE,
			      err, sizeof err);
		if (rc != want)
			fail_msg("%s (variant %d): %s (\"%s\"), wanted %s", why,
				 variant, tkshm_error_name(rc), err,
				 tkshm_error_name(want));
		if (err[0] == '\0')
			fail_msg("%s: no error sentence", why);
	}
}

/* ------------------------------------------------------------------------
 * Create and attach
 * ---------------------------------------------------------------------- */

static void
test_create_then_attach(void **state)
{
	const char *path = tkt_path("shared.tk");
	tkshm_table *a = tkt_file(path, SPEC, 64), *b = NULL;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_decision d, pa, pb;
	tkshm_stats sa, sb;

	(void)state;
	assert_rc(tkshm_check_at(a, "k", 1, 3, NOW, &d), TKSHM_OK);
	o.flags = 0; /* attach only */
	assert_rc(tkshm_open(path, &o, &b), TKSHM_OK);
	/* The second handle sees the first one's consumption... */
	assert_rc(tkshm_peek_at(b, "k", 1, NOW, &pb), TKSHM_OK);
	assert_int_equal(pb.remaining, 2);
	/* ...and the first sees the second's. */
	assert_rc(tkshm_check_at(b, "k", 1, 2, NOW, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_rc(tkshm_peek_at(a, "k", 1, NOW, &pa), TKSHM_OK);
	assert_int_equal(pa.remaining, 0);
	assert_false(pa.allowed);
	assert_rc(tkshm_stats_get(a, &sa), TKSHM_OK);
	assert_rc(tkshm_stats_get(b, &sb), TKSHM_OK);
	assert_true(sa.created_ms == sb.created_ms);
	assert_int_equal(sa.allowed, 2);
	assert_int_equal(sb.allowed, 2);
	assert_int_equal(sa.slots, 64);
	assert_int_equal(sa.file_bytes, (uint64_t)file_size(path));
	assert_false(sa.anonymous);
	/* Closing one handle leaves the other working. */
	tkshm_close(a);
	assert_rc(tkshm_check_at(b, "k", 1, 1, NOW + 100, &d), TKSHM_OK);
	assert_true(d.allowed);
	tkshm_close(b);
	/* The state outlives every handle. */
	b = tkt_file(path, SPEC, 0);
	assert_rc(tkshm_peek_at(b, "k", 1, NOW + 100, &pb), TKSHM_OK);
	assert_int_equal(pb.remaining, 0);
	tkshm_close(b);
}

static void
test_slots_rounding(void **state)
{
	static const struct {
		uint64_t ask, get;
	} cases[] = {
		{ 1, 8 }, { 8, 8 }, { 9, 16 }, { 60, 64 }, { 1000, 1024 }
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_table *t = tkt_anon(SPEC, cases[i].ask);
		tkshm_stats s;

		assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
		assert_int_equal(s.slots, cases[i].get);
		assert_true(s.anonymous);
		tkshm_close(t);
	}
}

static mode_t
mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	return st.st_mode & 07777;
}

/* The default mode is 0600 whatever the umask; a caller's mode is applied
 * exactly, even where the umask would remove bits. */
static void
test_modes(void **state)
{
	static const struct {
		mode_t umask;
		uint32_t mode; /* 0: TKSHM_OPTIONS_INIT's */
		mode_t want;
	} cases[] = {
		{ 022, 0, 0600 },    { 0, 0, 0600 },	  { 077, 0, 0600 },
		{ 077, 0640, 0640 }, { 077, 0660, 0660 }, { 022, 0666, 0666 },
		{ 0, 0604, 0604 },
	};
	tkshm_policy p = tkt_policy(SPEC);

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_table *t = NULL;
		char name[32];
		const char *path;

		snprintf(name, sizeof name, "mode-%zu.tk", i);
		path = tkt_path(name);
		o.policy = &p;
		o.slots = 8;
		if (cases[i].mode)
			o.mode = cases[i].mode;
		umask(cases[i].umask);
		assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
		umask(saved_umask);
		tkshm_close(t);
		if (mode_of(path) != cases[i].want)
			fail_msg("umask %03o mode %03o: file has %03o, want "
				 "%03o",
				 (unsigned)cases[i].umask, cases[i].mode,
				 (unsigned)mode_of(path),
				 (unsigned)cases[i].want);
		/* Attaching never changes the mode. */
		assert_rc(try_open(path, &p, 0, TKSHM_O_CREATE, NULL, 0),
			  TKSHM_OK);
		assert_int_equal(mode_of(path), cases[i].want);
	}
}

static void
test_gid(void **state)
{
	const char *names[] = { "nogroup", "daemon", "nobody" };
	struct group *g = NULL;
	tkshm_policy p = tkt_policy(SPEC);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	struct stat st;
	gid_t want;

	(void)state;
	for (size_t i = 0; i < 3 && !g; i++)
		g = getgrnam(names[i]);
	want = g ? g->gr_gid : getgid();
	o.policy = &p;
	o.slots = 8;
	o.gid = (int64_t)want;
	o.mode = 0640;
	assert_rc(tkshm_open(tkt_path("gid.tk"), &o, &t), TKSHM_OK);
	tkshm_close(t);
	assert_int_equal(stat(tkt_path("gid.tk"), &st), 0);
	assert_int_equal(st.st_gid, want);
	assert_int_equal(st.st_mode & 07777, 0640);

	/* -1 keeps the creator's group. */
	o.gid = -1;
	assert_rc(tkshm_open(tkt_path("gid-default.tk"), &o, &t), TKSHM_OK);
	tkshm_close(t);
	assert_int_equal(stat(tkt_path("gid-default.tk"), &st), 0);
	assert_int_equal(st.st_gid, getegid());
}

/* Issue 18: mode 0xffffffff was masked to 07777 and created a setuid,
 * setgid, sticky file.  Any bit outside 0777 is TKSHM_EINVAL, naming the
 * mode, and creates nothing: not with a path, not anonymous, and an
 * attach is refused the same way.  So is a gid that no group can have. */
static void
test_mode_outside_0777_refused(void **state)
{
	static const uint32_t bad_modes[] = { 0xffffffffu, 07777, 04600,
					      02600,	   01600, 010600 };
	static const int64_t bad_gids[] = { -2, INT64_MIN, 4294967295LL,
					    INT64_MAX };
	tkshm_policy p = tkt_policy(SPEC);
	const char *path = tkt_path("bad-mode.tk");
	const char *existing = make_table("bad-mode-existing.tk");
	struct stat st;

	(void)state;
	for (size_t i = 0; i < sizeof bad_modes / sizeof bad_modes[0]; i++) {
		const char *where[] = { path, NULL, existing };

		for (size_t w = 0; w < 3; w++) {
			tkshm_options o = TKSHM_OPTIONS_INIT;
			tkshm_table *t = NULL;
			char err[256] = "";

			o.policy = &p;
			o.slots = where[w] == existing ? 0 : 8;
			o.mode = bad_modes[i];
			o.errbuf = err;
			o.errbuf_len = sizeof err;
			if (tkshm_open(where[w], &o, &t) != TKSHM_EINVAL)
				fail_msg("mode %#o (%s): not refused",
					 bad_modes[i],
					 where[w] ? where[w] : "anonymous");
			assert_null(t);
			if (!strstr(err, "has bits outside 0777"))
				fail_msg("mode %#o: errbuf \"%s\"",
					 bad_modes[i], err);
		}
		if (lstat(path, &st) == 0)
			fail_msg("mode %#o: %s was created (mode %04o)",
				 bad_modes[i], path,
				 (unsigned)(st.st_mode & 07777));
	}
	assert_int_equal(mode_of(existing), 0600);
	for (size_t i = 0; i < sizeof bad_gids / sizeof bad_gids[0]; i++) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_table *t = NULL;
		char err[256] = "";

		o.policy = &p;
		o.gid = bad_gids[i];
		o.errbuf = err;
		o.errbuf_len = sizeof err;
		assert_rc(tkshm_open(path, &o, &t), TKSHM_EINVAL);
		if (!strstr(err, "is not a group id"))
			fail_msg("gid %lld: errbuf \"%s\"",
				 (long long)bad_gids[i], err);
		assert_int_not_equal(lstat(path, &st), 0);
	}
}

static void
test_exclusive_and_missing(void **state)
{
	const char *path = make_table("excl.tk");
	const char *missing = tkt_path("missing.tk");
	tkshm_policy p = tkt_policy(SPEC);
	char err[256] = "";
	struct stat st;

	(void)state;
	assert_rc(try_open(path, &p, 0, TKSHM_O_CREATE | TKSHM_O_EXCL, err,
			   sizeof err),
		  TKSHM_EEXIST);
	assert_true(err[0] != '\0');
	/* EXCL on a new path creates it. */
	assert_rc(try_open(tkt_path("excl-new.tk"), &p, 8,
			   TKSHM_O_CREATE | TKSHM_O_EXCL, NULL, 0),
		  TKSHM_OK);
	assert_rc(try_open(tkt_path("excl-new.tk"), &p, 8,
			   TKSHM_O_CREATE | TKSHM_O_EXCL, NULL, 0),
		  TKSHM_EEXIST);

	/* Without CREATE a missing table is ENOENT, and nothing appears. */
	err[0] = '\0';
	assert_rc(try_open(missing, &p, 0, 0, err, sizeof err), TKSHM_ENOENT);
	assert_true(err[0] != '\0');
	assert_rc(try_open(missing, NULL, 0, TKSHM_O_RDONLY, NULL, 0),
		  TKSHM_ENOENT);
	assert_int_equal(stat(missing, &st), -1);
	assert_int_equal(errno, ENOENT);
	/* A missing directory is ENOENT too. */
	assert_rc(try_open(tkt_path("no-such-dir/t.tk"), &p, 8, TKSHM_O_CREATE,
			   NULL, 0),
		  TKSHM_ENOENT);
	/* Creating needs a policy. */
	assert_rc(try_open(missing, NULL, 8, TKSHM_O_CREATE, NULL, 0),
		  TKSHM_EPOLICY);
	assert_int_equal(stat(missing, &st), -1);
}

/* A path without '/' names a file in TKSHM_DEFAULT_DIR. */
static void
test_default_dir(void **state)
{
	char name[64], full[128];
	tkshm_policy p = tkt_policy(SPEC);
	struct stat st;

	(void)state;
	snprintf(name, sizeof name, "tkshm-unit-%ld-%u", (long)getpid(),
		 (unsigned)rand());
	snprintf(full, sizeof full, "%s/%s", TKSHM_DEFAULT_DIR, name);
	assert_rc(try_open(name, &p, 8, TKSHM_O_CREATE, NULL, 0), TKSHM_OK);
	assert_int_equal(stat(full, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_rc(try_open(full, &p, 8, 0, NULL, 0), TKSHM_OK);
	assert_int_equal(unlink(full), 0);
	/* An empty path is not a name. */
	assert_rc(try_open("", &p, 8, TKSHM_O_CREATE, NULL, 0), TKSHM_EINVAL);
}

/* ------------------------------------------------------------------------
 * Mismatches and adoption
 * ---------------------------------------------------------------------- */

static void
test_policy_mismatch(void **state)
{
	const char *path = make_table("mismatch.tk");
	static const char *others[] = {
		"gcra:limit=20,periodMs=1000,burst=5",
		"gcra:limit=10,periodMs=1001,burst=5",
		"gcra:limit=10,periodMs=1000,burst=6",
		"gcra:limit=10,periodMs=1000", /* burst 10 */
	};
	tkshm_policy stored = tkt_policy(SPEC);
	char have[128];

	(void)state;
	assert_true(tkshm_policy_format(&stored, have, sizeof have) > 0);
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		tkshm_policy p = tkt_policy(others[i]);
		char want[128], err[512] = "";

		assert_true(tkshm_policy_format(&p, want, sizeof want) > 0);
		assert_rc(try_open(path, &p, 0, TKSHM_O_CREATE | TKSHM_O_KEEP,
				   err, sizeof err),
			  TKSHM_EMISMATCH);
		if (!strstr(err, have) || !strstr(err, want))
			fail_msg("mismatch sentence \"%s\" does not name both "
				 "\"%s\" and \"%s\"",
				 err, have, want);
		assert_rc(try_open(path, &p, 0, TKSHM_O_RDONLY, NULL, 0),
			  TKSHM_EMISMATCH);
	}
	/* The table is untouched by the refusals. */
	assert_rc(try_open(path, &stored, 64, 0, NULL, 0), TKSHM_OK);
}

static void
test_slots_mismatch(void **state)
{
	const char *path = make_table("slots.tk"); /* 64 slots */
	tkshm_policy p = tkt_policy(SPEC);
	char err[256] = "";

	(void)state;
	assert_rc(try_open(path, &p, 128, TKSHM_O_CREATE | TKSHM_O_KEEP, err,
			   sizeof err),
		  TKSHM_EMISMATCH);
	assert_true(err[0] != '\0');
	assert_rc(try_open(path, &p, 8, TKSHM_O_KEEP, NULL, 0),
		  TKSHM_EMISMATCH);
	assert_rc(try_open(path, NULL, 4096, TKSHM_O_RDONLY, NULL, 0),
		  TKSHM_EMISMATCH);
	/* 0, the exact value, or a request that rounds to it attach. */
	assert_rc(try_open(path, &p, 0, 0, NULL, 0), TKSHM_OK);
	assert_rc(try_open(path, &p, 64, 0, NULL, 0), TKSHM_OK);
	assert_rc(try_open(path, &p, 60, 0, NULL, 0), TKSHM_OK);
}

/* Attaching with no policy adopts the stored one, and the stored on_full. */
static void
test_attach_adopts(void **state)
{
	const char *path = tkt_path("adopt.tk");
	tkshm_policy p = tkt_policy("gcra:limit=3,periodMs=1000,burst=2");
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL, *a = NULL;
	tkshm_decision d;
	tkshm_stats s;

	(void)state;
	o.policy = &p;
	o.slots = 16;
	o.on_full = TKSHM_ON_FULL_REFUSE;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	tkshm_close(t);

	o = (tkshm_options)TKSHM_OPTIONS_INIT; /* no policy, EVICT */
	assert_rc(tkshm_open(path, &o, &a), TKSHM_OK);
	assert_rc(tkshm_stats_get(a, &s), TKSHM_OK);
	assert_true(tkshm_policy_equal(&s.policy, &p));
	assert_int_equal(s.policy.kind, TKSHM_KIND_GCRA);
	assert_true(s.policy.u.gcra.limit == 3);
	assert_true(s.policy.u.gcra.period_ms == 1000);
	assert_true(s.policy.u.gcra.burst == 2);
	assert_int_equal(s.on_full, TKSHM_ON_FULL_REFUSE);
	assert_int_equal(s.slots, 16);
	/* And decides by it: burst 2. */
	assert_rc(tkshm_check_at(a, "x", 1, 1, NOW, &d), TKSHM_OK);
	assert_int_equal(d.limit, 2);
	assert_int_equal(d.remaining, 1);
	tkshm_close(a);
	/* tkshm_open(path, NULL, ...) attaches the same way. */
	assert_rc(tkshm_open(path, NULL, &a), TKSHM_OK);
	tkshm_close(a);
}

/* ------------------------------------------------------------------------
 * Things that are not tables
 * ---------------------------------------------------------------------- */

static void
test_symlink(void **state)
{
	const char *target = make_table("target.tk");
	const char *link = tkt_path("link.tk");
	const char *dangling = tkt_path("dangling.tk");
	const char *nowhere = tkt_path("nowhere.tk");
	tkshm_policy p = tkt_policy(SPEC);
	char err[256] = "";
	struct stat st;

	(void)state;
	assert_int_equal(symlink(target, link), 0);
	assert_rc(try_open(link, &p, 0, TKSHM_O_CREATE, err, sizeof err),
		  TKSHM_ESYMLINK);
	assert_true(err[0] != '\0');
	assert_rc(try_open(link, NULL, 0, TKSHM_O_RDONLY, NULL, 0),
		  TKSHM_ESYMLINK);
	assert_rc(try_open(link, &p, 0, 0, NULL, 0), TKSHM_ESYMLINK);
	/* The link was neither followed nor replaced. */
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	/* A dangling link is not created through. */
	assert_int_equal(symlink(nowhere, dangling), 0);
	assert_rc(try_open(dangling, &p, 8, TKSHM_O_CREATE, NULL, 0),
		  TKSHM_ESYMLINK);
	assert_int_equal(lstat(nowhere, &st), -1);
	assert_int_equal(lstat(dangling, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
}

/* A directory is not a table file, opened for writing or for reading. */
static void
test_directory(void **state)
{
	const char *dir = tkt_path("adir");
	tkshm_policy p = tkt_policy(SPEC);
	char err[256] = "";

	(void)state;
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_rc(try_open(dir, NULL, 0, TKSHM_O_RDONLY, err, sizeof err),
		  TKSHM_ENOTFILE);
	assert_true(err[0] != '\0');
	err[0] = '\0';
	assert_rc(try_open(dir, &p, 0, TKSHM_O_CREATE, err, sizeof err),
		  TKSHM_ENOTFILE);
	assert_true(err[0] != '\0');
	assert_rc(try_open(dir, &p, 0, 0, NULL, 0), TKSHM_ENOTFILE);
}

/* Character devices and FIFOs are not table files either. */
static void
test_special_files(void **state)
{
	const char *fifo = tkt_path("fifo");
	tkshm_policy p = tkt_policy(SPEC);
	int *rc = tkt_shared(sizeof(int));
	int pid, status;

	(void)state;
	assert_rc(try_open("/dev/null", &p, 0, TKSHM_O_CREATE, NULL, 0),
		  TKSHM_ENOTFILE);
	assert_rc(try_open("/dev/null", NULL, 0, TKSHM_O_RDONLY, NULL, 0),
		  TKSHM_ENOTFILE);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_rc(try_open(fifo, &p, 0, TKSHM_O_CREATE, NULL, 0),
		  TKSHM_ENOTFILE);
	/* Opening a FIFO for reading blocks until a writer comes, unless the
	 * library asks not to block: run it in a child with a deadline. */
	*rc = 1;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_table *t;

		alarm(1);
		o.flags = TKSHM_O_RDONLY;
		*rc = tkshm_open(fifo, &o, &t);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("tkshm_open(fifo, O_RDONLY) blocked (child killed by "
			 "signal %d after 1 s)",
			 WTERMSIG(status));
	assert_rc(*rc, TKSHM_ENOTFILE);
	tkt_shared_free(rc, sizeof(int));
}

/* ------------------------------------------------------------------------
 * Damaged tables
 * ---------------------------------------------------------------------- */

static void
test_truncated(void **state)
{
	const char *path = make_table("trunc.tk");
	off_t full = file_size(path);
	const off_t sizes[] = { full / 2, 100, 4096, full - 1, full + 4096 };
	char *saved = malloc((size_t)full);
	tkshm_decision d;
	tkshm_table *t;
	int fd;

	(void)state;
	assert_true(full > 8192);
	assert_non_null(saved);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, saved, (size_t)full, 0), full);
	close(fd);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char why[64];

		assert_int_equal(truncate(path, sizes[i]), 0);
		snprintf(why, sizeof why, "file of %lld bytes (table %lld)",
			 (long long)sizes[i], (long long)full);
		assert_refused(path, TKSHM_ESIZE, why);
		/* Refusing never "repairs" the file. */
		assert_int_equal(file_size(path), sizes[i]);
	}
	/* With its bytes restored it is the same table again: the refusals
	 * wrote nothing. */
	assert_int_equal(truncate(path, full), 0);
	write_bytes(path, 0, saved, (size_t)full);
	free(saved);
	t = tkt_file(path, SPEC, 0);
	assert_rc(tkshm_peek_at(t, "k", 1, NOW, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 3);
	tkshm_close(t);
}

static void
test_not_a_table(void **state)
{
	const char *empty = tkt_path("empty.tk");
	const char *text = tkt_path("text.tk");
	const char *zeros = tkt_path("zeros.tk");
	tkshm_policy p = tkt_policy(SPEC);
	static char junk[65536];
	int fd, rc;

	(void)state;
	/* A zero-byte file holds no magic: it is not a table (and is never
	 * what a creator leaves, since tables are published whole). */
	fd = open(empty, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	rc = try_open(empty, &p, 0, TKSHM_O_CREATE, NULL, 0);
	if (rc != TKSHM_EBADMAGIC && rc != TKSHM_ESIZE)
		fail_msg("zero-byte file: %s", tkshm_error_name(rc));
	rc = try_open(empty, NULL, 0, TKSHM_O_RDONLY, NULL, 0);
	if (rc != TKSHM_EBADMAGIC && rc != TKSHM_ESIZE)
		fail_msg("zero-byte file, read-only: %s", tkshm_error_name(rc));
	/* With CREATE, the existing file was attached (and refused), never
	 * replaced. */
	assert_int_equal(file_size(empty), 0);

	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (char)('a' + i % 26);
	fd = open(text, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, junk, sizeof junk), sizeof junk);
	close(fd);
	assert_refused(text, TKSHM_EBADMAGIC, "a text file");

	fd = open(zeros, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 24576), 0);
	close(fd);
	assert_refused(zeros, TKSHM_EBADMAGIC, "a file of zeros");
}

static void
test_bad_magic(void **state)
{
	const char *path = make_table("magic.tk");
	const char *path7 = make_table("magic7.tk");
	char c;

	(void)state;
	c = 'X';
	write_bytes(path, 0, &c, 1);
	assert_refused(path, TKSHM_EBADMAGIC, "first byte overwritten");
	/* The magic ends in CR LF so that text-mode mangling is caught. */
	c = '\r';
	write_bytes(path7, TK_MAGIC_LEN - 1, &c, 1);
	assert_refused(path7, TKSHM_EBADMAGIC, "LF replaced by CR");
}

static void
test_newer_version(void **state)
{
	const char *path = make_table("version.tk");
	struct tk_header h;
	char err[256] = "", num[16];

	(void)state;
	read_header(path, &h);
	assert_int_equal(h.layout_version, tkshm_layout_version());
	h.layout_version = tkshm_layout_version() + 1;
	/* A valid checksum, so the version check is what refuses it. */
	write_header(path, &h, true);
	assert_refused(path, TKSHM_EVERSION, "layout version + 1");
	assert_rc(try_open(path, NULL, 0, 0, err, sizeof err), TKSHM_EVERSION);
	snprintf(num, sizeof num, "%u", tkshm_layout_version() + 1);
	if (!strstr(err, num))
		fail_msg("version sentence \"%s\" does not name version %s",
			 err, num);

	/* A segment written on a machine of the other byte order. */
	path = make_table("byteorder.tk");
	read_header(path, &h);
	h.byte_order = __builtin_bswap32(h.byte_order);
	write_header(path, &h, true);
	assert_refused(path, TKSHM_EVERSION, "byte order swapped");

	/* A build whose structs differ in size. */
	path = make_table("abi.tk");
	read_header(path, &h);
	h.abi ^= 0x40;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_EVERSION, "struct sizes differ");
}

static void
test_corrupt_header(void **state)
{
	struct tk_header h;
	const char *path;
	uint64_t x;

	(void)state;
	/* A header byte changed, checksum left alone. */
	path = make_table("cksum-seed.tk");
	read_header(path, &h);
	h.seed ^= 1;
	write_header(path, &h, false);
	assert_refused(path, TKSHM_ECORRUPT, "seed changed");

	/* The checksum itself damaged. */
	path = make_table("cksum.tk");
	read_header(path, &h);
	x = h.checksum ^ (UINT64_C(1) << 40);
	write_bytes(path, offsetof(struct tk_header, checksum), &x, sizeof x);
	assert_refused(path, TKSHM_ECORRUPT, "checksum changed");

	/* Consistent checksums over inconsistent contents. */
	path = make_table("geom.tk");
	read_header(path, &h);
	h.nbuckets = 3;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "nbuckets not a power of two");

	/* (Doubling nbuckets can still fit the page-aligned regions; four
	 * times as many cannot.) */
	path = make_table("geom4.tk");
	read_header(path, &h);
	h.nbuckets *= 4;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "nbuckets quadrupled");

	path = make_table("shards.tk");
	read_header(path, &h);
	h.nshards = 32;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "nshards changed");

	path = make_table("offset.tk");
	read_header(path, &h);
	h.buckets_off += 64;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "buckets_off moved");

	path = make_table("policy.tk");
	read_header(path, &h);
	h.policy.p[0] = -10; /* limit */
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "stored policy invalid");

	path = make_table("kind.tk");
	read_header(path, &h);
	h.policy.kind = 77;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "stored kind unknown");

	/* Debt cells other than the policy's (one per slot for GCRA, which
	 * evicts), in a geometry that still fits the file. */
	path = make_table("ndebt.tk");
	read_header(path, &h);
	h.ndebt /= 2;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "ndebt halved");

	path = make_table("onfull.tk");
	read_header(path, &h);
	h.on_full = 9;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ECORRUPT, "on_full unknown");

	/* A header that claims another size than the file's. */
	path = make_table("size.tk");
	read_header(path, &h);
	h.file_size += TK_PAGE;
	write_header(path, &h, true);
	assert_refused(path, TKSHM_ESIZE, "file_size field changed");
}

/* ------------------------------------------------------------------------
 * Permissions (root drops to nobody in a child)
 * ---------------------------------------------------------------------- */

struct perm_result {
	int dropped;
	int rw_0600, ro_0600, ro_0644, rw_0644, create, peek_0644;
};

static void
test_permission_denied(void **state)
{
	const char *secret, *open_ro;
	tkshm_policy p = tkt_policy(SPEC);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	struct perm_result *r;
	tkshm_table *t = NULL;
	int pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* cannot become another user: not testable */
	secret = make_table("secret.tk"); /* 0600, owned by root */
	o.policy = &p;
	o.slots = 8;
	o.mode = 0644;
	open_ro = tkt_path("public.tk");
	assert_rc(tkshm_open(open_ro, &o, &t), TKSHM_OK);
	tkshm_close(t);
	/* Let the other user reach the files, but not write the directory:
	 * the refusals below then come from the files' own modes. */
	assert_int_equal(chmod(tkt_tmpdir(), 0711), 0);

	r = tkt_shared(sizeof *r);
	memset(r, 0, sizeof *r);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tkshm_options c = TKSHM_OPTIONS_INIT;
		tkshm_table *h = NULL;
		tkshm_decision d;

		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
		    setuid(65534) != 0 || geteuid() != 65534)
			_exit(0);
		r->dropped = 1;
		c.flags = 0;
		r->rw_0600 = tkshm_open(secret, &c, &h);
		c.flags = TKSHM_O_RDONLY;
		r->ro_0600 = tkshm_open(secret, &c, &h);
		r->ro_0644 = tkshm_open(open_ro, &c, &h);
		if (r->ro_0644 == TKSHM_OK) {
			r->peek_0644 = tkshm_peek_at(h, "k", 1, NOW, &d);
			tkshm_close(h);
		}
		c.flags = 0;
		r->rw_0644 = tkshm_open(open_ro, &c, &h);
		c.flags = TKSHM_O_CREATE;
		c.policy = &p;
		r->create = tkshm_open(tkt_path("by-nobody.tk"), &c, &h);
		_exit(0);
	}
	tkt_wait_ok(pid);
	assert_int_equal(chmod(tkt_tmpdir(), 0700), 0);
	if (!r->dropped)
		fail_msg("running as root, but setuid(65534) failed");
	assert_rc(r->rw_0600, TKSHM_EPERM);
	assert_rc(r->ro_0600, TKSHM_EPERM);
	assert_rc(r->ro_0644, TKSHM_OK);
	assert_rc(r->peek_0644, TKSHM_OK);
	assert_rc(r->rw_0644, TKSHM_EPERM);
	assert_rc(r->create, TKSHM_EPERM);
	assert_int_equal(access(tkt_path("by-nobody.tk"), F_OK), -1);
	tkt_shared_free(r, sizeof *r);
}

/* ------------------------------------------------------------------------
 * The creation race
 * ---------------------------------------------------------------------- */

#define RACERS 16
#define ROUNDS 20

struct race {
	int ready, go;
	struct {
		int rc, check_rc, allowed;
		double created_ms;
		uint64_t slots;
	} r[RACERS];
};

static void
racer(struct race *sh, int i, const char *path)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_decision d;
	tkshm_stats s;
	char key[16];

	if (tkshm_policy_parse(SPEC, &p, NULL, 0) != TKSHM_OK)
		_exit(2);
	o.policy = &p;
	o.slots = 1024;
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
	/* Yielding, not burning: there may be fewer CPUs than racers. */
	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	sh->r[i].rc = tkshm_open(path, &o, &t);
	if (sh->r[i].rc != TKSHM_OK)
		_exit(0);
	snprintf(key, sizeof key, "racer-%d", i);
	sh->r[i].check_rc = tkshm_check_at(t, key, strlen(key), 1, NOW, &d);
	sh->r[i].allowed = d.allowed;
	tkshm_stats_get(t, &s);
	sh->r[i].created_ms = s.created_ms;
	sh->r[i].slots = s.slots;
	tkshm_close(t);
	_exit(0);
}

/* Sixteen processes open one new path at the same moment, twenty times:
 * exactly one segment is published each time, everybody uses it, and no
 * temporary file is left behind. */
static void
test_creation_race(void **state)
{
	struct race *sh = tkt_shared(sizeof *sh);

	(void)state;
	for (int round = 0; round < ROUNDS; round++) {
		char dname[32], path[600];
		const char *dir;
		int pids[RACERS];
		unsigned entries = 0;
		struct dirent *e;
		DIR *dp;
		tkshm_table *t;
		tkshm_stats s;
		tkshm_usage u;
		uint64_t problems = 1;

		memset(sh, 0, sizeof *sh);
		snprintf(dname, sizeof dname, "race-%d", round);
		dir = tkt_path(dname);
		assert_int_equal(mkdir(dir, 0700), 0);
		snprintf(path, sizeof path, "%s/table", dir);
		for (int i = 0; i < RACERS; i++) {
			pids[i] = fork();
			assert_true(pids[i] >= 0);
			if (pids[i] == 0)
				racer(sh, i, path);
		}
		/* Release them together once all are spinning. */
		while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < RACERS)
			sched_yield();
		__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
		for (int i = 0; i < RACERS; i++)
			tkt_wait_ok(pids[i]);

		for (int i = 0; i < RACERS; i++) {
			if (sh->r[i].rc != TKSHM_OK)
				fail_msg("round %d racer %d: open %s", round, i,
					 tkshm_error_name(sh->r[i].rc));
			assert_rc(sh->r[i].check_rc, TKSHM_OK);
			assert_true(sh->r[i].allowed);
			assert_int_equal(sh->r[i].slots, 1024);
			/* One segment: one creation time. */
			if (sh->r[i].created_ms != sh->r[0].created_ms)
				fail_msg("round %d: racers %d and 0 saw "
					 "segments created at %.17g and %.17g",
					 round, i, sh->r[i].created_ms,
					 sh->r[0].created_ms);
		}
		dp = opendir(dir);
		assert_non_null(dp);
		while ((e = readdir(dp)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			if (strcmp(e->d_name, "table") != 0)
				fail_msg("round %d: stray file %s", round,
					 e->d_name);
			entries++;
		}
		closedir(dp);
		assert_int_equal(entries, 1);

		t = tkt_file(path, SPEC, 0);
		assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
		assert_true(s.created_ms == sh->r[0].created_ms);
		assert_int_equal(s.inserts, RACERS);
		assert_int_equal(s.allowed, RACERS);
		assert_rc(tkshm_usage_get(t, NOW, &u), TKSHM_OK);
		assert_int_equal(u.live, RACERS);
		assert_rc(tkshm_verify(t, NULL, NULL, &problems), TKSHM_OK);
		assert_int_equal(problems, 0);
		tkshm_close(t);
	}
	tkt_shared_free(sh, sizeof *sh);
}

/* ------------------------------------------------------------------------
 * Anonymous tables across fork
 * ---------------------------------------------------------------------- */

static void
test_anonymous_across_fork(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	int *allowed = tkt_shared(sizeof(int) * 4);
	tkshm_decision d;
	tkshm_stats s;
	int pids[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			char key[16];
			int a = 0;

			/* The parent's handle, inherited. */
			if (tkshm_check_at(t, "shared", 6, 1, NOW, &d) !=
			    TKSHM_OK)
				_exit(1);
			a += d.allowed;
			snprintf(key, sizeof key, "own-%d", i);
			if (tkshm_check_at(t, key, strlen(key), 2, NOW, &d) !=
			    TKSHM_OK)
				_exit(1);
			a += d.allowed;
			allowed[i] = a;
			/* Closing the inherited handle unmaps this process's
			 * view only (and lets valgrind see no leak). */
			tkshm_close(t);
			_exit(0);
		}
	}
	for (int i = 0; i < 4; i++) {
		tkt_wait_ok(pids[i]);
		assert_int_equal(allowed[i], 2);
	}
	/* The parent sees the children's consumption: 4 of 5 used. */
	assert_rc(tkshm_peek_at(t, "shared", 6, NOW, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 1);
	assert_rc(tkshm_peek_at(t, "own-3", 5, NOW, &d), TKSHM_OK);
	assert_int_equal(d.remaining, 3);
	assert_rc(tkshm_check_at(t, "shared", 6, 2, NOW, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_true(s.anonymous);
	assert_int_equal(s.allowed, 8);
	assert_int_equal(s.denied, 1);
	assert_int_equal(s.inserts, 5);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
	tkt_shared_free(allowed, sizeof(int) * 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_then_attach),
		cmocka_unit_test(test_slots_rounding),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_gid),
		cmocka_unit_test(test_mode_outside_0777_refused),
		cmocka_unit_test(test_exclusive_and_missing),
		cmocka_unit_test(test_default_dir),
		cmocka_unit_test(test_policy_mismatch),
		cmocka_unit_test(test_slots_mismatch),
		cmocka_unit_test(test_attach_adopts),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_directory),
		cmocka_unit_test(test_special_files),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_not_a_table),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_newer_version),
		cmocka_unit_test(test_corrupt_header),
		cmocka_unit_test(test_permission_denied),
		cmocka_unit_test(test_creation_race),
		cmocka_unit_test(test_anonymous_across_fork),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
