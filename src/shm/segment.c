/*
 * segment.c - creating, publishing, attaching and validating a segment.
 *
 * Creation never exposes a half-built segment: the file is created without a
 * name (O_TMPFILE in the target directory, or a private O_EXCL temporary name
 * where O_TMPFILE is unsupported), fully allocated with posix_fallocate (so a
 * full disk fails here, not later with SIGBUS), initialised, and only then
 * linked to its path.  link() never replaces, so exactly one creator wins;
 * the others get EEXIST and attach to the winner's segment.  A creator killed
 * before linking leaves an unnamed inode the kernel frees (or, with the
 * fallback, a stray temporary name; the real path is never affected).
 *
 * Attaching reads the header with pread into private memory, validates every
 * field against the file and against the geometry recomputed from its counts
 * (I10), then maps the file and copies the validated values into the handle.
 * The library never re-reads the shared header after that.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "shm/layout.h"
#include "shm/life.h"
#include "shm/policy_wire.h"
#include "shm/table.h"

#define TK_OPEN_ATTEMPTS 16

/* Writes a sentence into the caller's error buffer, if any. */
static void
tk_say(const tkshm_options *o, const char *fmt, ...)
{
	va_list ap;

	if (!o || !o->errbuf || o->errbuf_len == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(o->errbuf, o->errbuf_len, fmt, ap);
	va_end(ap);
}

/* Maps a failed system call's errno to a tkshm error. */
static int
tk_errno_code(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
	case EROFS:
		return TKSHM_EPERM;
	case ELOOP:
		return TKSHM_ESYMLINK;
	case ENOENT:
	case ENOTDIR:
		return TKSHM_ENOENT;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return TKSHM_ENOSPC;
	case ENOMEM:
		return TKSHM_ENOMEM;
	case EEXIST:
		return TKSHM_EEXIST;
	case EISDIR:
	case ENXIO: /* a FIFO without a writer, a socket */
		return TKSHM_ENOTFILE;
	default:
		return TKSHM_ESYSTEM;
	}
}

static uint64_t
tk_align_page(uint64_t x)
{
	return (x + TK_PAGE - 1) & ~(uint64_t)(TK_PAGE - 1);
}

static bool
tk_is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int
tk_geometry_compute(struct tk_geometry *g)
{
	if (!tk_is_pow2(g->nbuckets) || g->nbuckets < 2 ||
	    g->nbuckets > TK_MAX_SLOTS / TK_SLOTS_PER_BUCKET)
		return -1;
	if (!tk_is_pow2(g->ndebt) || g->ndebt > TK_MAX_SLOTS)
		return -1;
	if (g->nshards != TK_SHARDS)
		return -1;
	if (g->wide_units > TK_WIDE_MAX_UNITS)
		return -1;
	if (g->pairs > 1 || (g->pairs && g->wide_units != 2))
		return -1;
	/* Bounded counts: no product below can overflow 64 bits. */
	g->shards_off = TK_PAGE;
	g->buckets_off = tk_align_page(g->shards_off +
				       g->nshards * sizeof(struct tk_shard));
	g->labels_off = tk_align_page(g->buckets_off +
				      g->nbuckets * sizeof(struct tk_bucket));
	g->denials_off = tk_align_page(g->labels_off +
				       g->nbuckets * TK_SLOTS_PER_BUCKET *
					       sizeof(struct tk_label));
	g->debt_off = tk_align_page(g->denials_off +
				    g->nbuckets * TK_SLOTS_PER_BUCKET *
					    sizeof(uint32_t));
	if (g->key_records > 1)
		return -1;
	g->wide_off = 0;
	g->file_size = tk_align_page(g->debt_off + g->ndebt * sizeof(uint64_t));
	if (g->wide_units) {
		g->wide_off = g->file_size;
		g->file_size = tk_align_page(
			g->wide_off +
			g->nbuckets * TK_SLOTS_PER_BUCKET *
				tk_wide_area_stride(g->wide_units, g->pairs));
	}
	g->global_off = g->file_size;
	g->file_size = g->global_off + TK_PAGE;
	g->keys_off = 0;
	if (g->key_records) {
		g->keys_off = g->file_size;
		g->file_size = tk_align_page(g->keys_off +
					     g->nbuckets * TK_SLOTS_PER_BUCKET *
						     sizeof(struct tk_keyrec));
	}
	return 0;
}

/* Debt cells (I8) for a table of `nbuckets` buckets and kind `algo`: one
 * per slot (8 bytes) where keys can be evicted, few enough keys sharing a
 * cell that a new key rarely starts from another key's remembered debt;
 * the minimum, one cell, where they never are (wide kinds and lease
 * tables, W9), which therefore no debt reader ever looks at. */
static uint64_t
tk_debt_cells_for(uint64_t nbuckets, const struct tk_algo *algo)
{
	return tk_algo_is_wide(algo) ? 1 : nbuckets * TK_SLOTS_PER_BUCKET;
}

/* The geometry for a requested number of slots. */
static int
tk_geometry_for_slots(uint64_t slots, const struct tk_algo *algo,
		      struct tk_geometry *g)
{
	uint64_t nb = 2;

	if (slots < TK_MIN_SLOTS)
		slots = TK_MIN_SLOTS;
	if (slots > TK_MAX_SLOTS)
		return -1;
	while (nb * TK_SLOTS_PER_BUCKET < slots)
		nb <<= 1;
	memset(g, 0, sizeof *g);
	g->nbuckets = nb;
	g->ndebt = tk_debt_cells_for(nb, algo);
	g->nshards = TK_SHARDS;
	g->wide_units = tk_algo_is_wide(algo) ? algo->words : 0;
	g->pairs = tk_algo_is_pair(algo) ? 1 : 0;
	g->key_records = algo->leased ? 1 : 0;
	return tk_geometry_compute(g);
}

static uint64_t
tk_header_checksum(const struct tk_header *h)
{
	return XXH64(h, offsetof(struct tk_header, checksum), 0);
}

/* Fills the handle from a validated header and a mapping of its segment. */
static void
tk_handle_fill(struct tkshm_table *t, const struct tk_header *h,
	       const struct tk_algo *algo, uint8_t *base, bool readonly)
{
	t->base = base;
	t->map_size = h->file_size;
	t->readonly = readonly;
	t->anonymous = (h->flags & TK_HDR_ANONYMOUS) != 0;
	t->shards = (struct tk_shard *)(base + h->shards_off);
	t->buckets = (struct tk_bucket *)(base + h->buckets_off);
	t->labels = (struct tk_label *)(base + h->labels_off);
	t->denials = (uint32_t *)(base + h->denials_off);
	t->debt = (uint64_t *)(base + h->debt_off);
	t->wide = h->wide_units ? base + h->wide_off : NULL;
	t->wide_units = h->wide_units;
	t->pairs = (h->flags & TK_HDR_PAIRS) != 0;
	t->wide_stride = tk_wide_area_stride(h->wide_units, t->pairs);
	t->global = (struct tk_global_shm *)(base + h->global_off);
	t->keyrecs = h->key_records ? (struct tk_keyrec *)(base + h->keys_off) :
				      NULL;
	t->nshards = h->nshards;
	t->nbuckets = h->nbuckets;
	t->bucket_mask = h->nbuckets - 1;
	t->ndebt = h->ndebt;
	t->debt_mask = h->ndebt - 1;
	t->seed = h->seed;
	t->table_id = h->table_id;
	t->pred_id = h->pred_id;
	t->permit_epoch = h->permit_epoch;
	t->change_ms = h->change_ms;
	memcpy(t->pred_name, h->pred_name, sizeof t->pred_name);
	t->pred_name[TK_PRED_NAME_MAX - 1] = '\0';
	t->life = (struct tk_life *)(base + TK_LIFE_OFF);
	t->life_word = 0;
	t->created_ms = h->created_ms;
	t->on_full = (tkshm_on_full)h->on_full;
	tk_policy_unwire(&h->policy, &h->global, &t->policy);
	t->algo = *algo;
	/* Permits name a process of this boot (concurrency.h, C3). */
	if (tk_algo_is_concurrency(&t->algo))
		t->algo.u.conc.host = tk_holder_host();
}

/* Builds a fresh header for a geometry and policy.  `lin` (may be NULL)
 * makes it a replacement: the predecessor's seed and name (L2). */
static int
tk_header_build(struct tk_header *h, const struct tk_geometry *g,
		const tkshm_policy *p, tkshm_on_full on_full, bool anonymous,
		const struct tk_lineage *lin)
{
	memset(h, 0, sizeof *h);
	memcpy(h->magic, TK_MAGIC, TK_MAGIC_LEN);
	h->layout_version = TK_LAYOUT_VERSION;
	h->byte_order = TK_BYTE_ORDER_MARK;
	h->header_size = (uint32_t)sizeof(struct tk_header);
	h->abi = tk_layout_abi();
	h->file_size = g->file_size;
	if (getrandom(&h->seed, sizeof h->seed, 0) != (ssize_t)sizeof h->seed ||
	    getrandom(&h->table_id, sizeof h->table_id, 0) !=
		    (ssize_t)sizeof h->table_id)
		return TKSHM_ESYSTEM;
	if (lin) {
		h->seed = lin->seed;
		h->pred_id = lin->pred_id;
		h->permit_epoch = lin->permit_epoch;
		h->change_ms = lin->change_ms;
		memcpy(h->pred_name, lin->pred_name, sizeof h->pred_name);
		h->pred_name[TK_PRED_NAME_MAX - 1] = '\0';
	}
	if (h->permit_epoch == 0)
		h->permit_epoch = h->table_id;
	h->created_ms = tkshm_now_ms();
	h->creator_pid = (uint32_t)getpid();
	h->flags = (anonymous ? TK_HDR_ANONYMOUS : 0) |
		   (g->pairs ? TK_HDR_PAIRS : 0);
	h->on_full = (uint32_t)on_full;
	h->nshards = (uint32_t)g->nshards;
	h->nbuckets = g->nbuckets;
	h->ndebt = g->ndebt;
	h->shards_off = g->shards_off;
	h->buckets_off = g->buckets_off;
	h->labels_off = g->labels_off;
	h->denials_off = g->denials_off;
	h->debt_off = g->debt_off;
	h->wide_off = g->wide_off;
	h->wide_units = (uint32_t)g->wide_units;
	h->key_records = (uint32_t)g->key_records;
	h->global_off = g->global_off;
	h->keys_off = g->keys_off;
	tk_policy_wire_of(p, &h->policy, &h->global);
	h->checksum = tk_header_checksum(h);
	return TKSHM_OK;
}

/* Validates a header read from a file of `file_size` bytes.  On success
 * fills *algo from the stored policy. */
static int
tk_header_validate(const struct tk_header *h, uint64_t file_size,
		   const tkshm_options *o, struct tk_algo *algo)
{
	struct tk_geometry g;
	tkshm_policy p;
	char why[160];

	if (memcmp(h->magic, TK_MAGIC, TK_MAGIC_LEN) != 0) {
		tk_say(o, "not a tkshm table: bad magic");
		return TKSHM_EBADMAGIC;
	}
	if (h->byte_order != TK_BYTE_ORDER_MARK) {
		tk_say(o, "table was written with another byte order");
		return TKSHM_EVERSION;
	}
	if (h->layout_version != TK_LAYOUT_VERSION) {
		tk_say(o, "table layout version %u, this library reads %u",
		       h->layout_version, TK_LAYOUT_VERSION);
		return TKSHM_EVERSION;
	}
	if (h->header_size != sizeof(struct tk_header) ||
	    h->abi != tk_layout_abi()) {
		tk_say(o,
		       "table header size/ABI %u/%#x, this library uses "
		       "%zu/%#x",
		       h->header_size, h->abi, sizeof(struct tk_header),
		       tk_layout_abi());
		return TKSHM_EVERSION;
	}
	if (h->file_size != file_size) {
		tk_say(o, "file is %llu bytes, its header says %llu",
		       (unsigned long long)file_size,
		       (unsigned long long)h->file_size);
		return TKSHM_ESIZE;
	}
	if (tk_header_checksum(h) != h->checksum) {
		tk_say(o, "header checksum mismatch");
		return TKSHM_ECORRUPT;
	}
	memset(&g, 0, sizeof g);
	g.nbuckets = h->nbuckets;
	g.ndebt = h->ndebt;
	g.nshards = h->nshards;
	g.wide_units = h->wide_units;
	g.pairs = (h->flags & TK_HDR_PAIRS) != 0;
	g.key_records = h->key_records;
	if (tk_geometry_compute(&g) != 0 || g.shards_off != h->shards_off ||
	    g.buckets_off != h->buckets_off || g.labels_off != h->labels_off ||
	    g.denials_off != h->denials_off || g.debt_off != h->debt_off ||
	    g.wide_off != h->wide_off || g.global_off != h->global_off ||
	    g.keys_off != h->keys_off || g.file_size != h->file_size) {
		tk_say(o, "header geometry is inconsistent");
		return TKSHM_ECORRUPT;
	}
	if (h->on_full > TKSHM_ON_FULL_REFUSE) {
		tk_say(o, "header on-full policy %u is unknown", h->on_full);
		return TKSHM_ECORRUPT;
	}
	tk_policy_unwire(&h->policy, &h->global, &p);
	if (tk_algo_init(algo, &p, why, sizeof why) != TKSHM_OK) {
		tk_say(o, "stored policy is invalid: %s", why);
		return TKSHM_ECORRUPT;
	}
	/* I10: the wide area must hold exactly the policy's state. */
	if (h->wide_units != (tk_algo_is_wide(algo) ? algo->words : 0)) {
		tk_say(o, "header wide units %u do not fit the policy",
		       h->wide_units);
		return TKSHM_ECORRUPT;
	}
	if (g.pairs != (tk_algo_is_pair(algo) ? 1u : 0u)) {
		tk_say(o, "header pair flag does not fit the policy");
		return TKSHM_ECORRUPT;
	}
	if (h->ndebt != tk_debt_cells_for(h->nbuckets, algo)) {
		tk_say(o, "header debt cells %llu do not fit the policy",
		       (unsigned long long)h->ndebt);
		return TKSHM_ECORRUPT;
	}
	if (h->key_records != (algo->leased ? 1u : 0u)) {
		tk_say(o, "header key records %u do not fit the policy",
		       h->key_records);
		return TKSHM_ECORRUPT;
	}
	return TKSHM_OK;
}

/* TKSHM_O_HUGEPAGES: advice, so a kernel that cannot follow it (THP off
 * for shared memory, no THP at all) costs nothing but 4 KiB pages. */
static void
tk_advise_huge(const tkshm_options *o, void *base, size_t size)
{
	if (o->flags & TKSHM_O_HUGEPAGES)
		(void)madvise(base, size, MADV_HUGEPAGE);
}

/* Attaches an open file descriptor.  Closes nothing. */
static int
tk_attach_fd(int fd, const tkshm_options *o, const struct tk_geometry *want,
	     struct tkshm_table *t)
{
	struct tk_header h;
	struct tk_algo algo;
	struct stat st;
	bool ro = (o->flags & TKSHM_O_RDONLY) != 0;
	void *base;
	ssize_t n;
	int rc;

	if (fstat(fd, &st) != 0)
		return tk_errno_code(errno);
	if (!S_ISREG(st.st_mode)) {
		tk_say(o, "not a regular file");
		return TKSHM_ENOTFILE;
	}
	if ((uint64_t)st.st_size < TK_PAGE) {
		tk_say(o, "file is %lld bytes, smaller than a table header",
		       (long long)st.st_size);
		return (uint64_t)st.st_size >= TK_MAGIC_LEN ? TKSHM_ESIZE :
							      TKSHM_EBADMAGIC;
	}
	n = pread(fd, &h, sizeof h, 0);
	if (n != (ssize_t)sizeof h)
		return n < 0 ? tk_errno_code(errno) : TKSHM_ESIZE;
	rc = tk_header_validate(&h, (uint64_t)st.st_size, o, &algo);
	if (rc != TKSHM_OK)
		return rc;
	/* Whether the table's policy and size are the ones asked for is the
	 * lifecycle's question (src/api/life_api.c), asked after attach. */
	(void)want;
	base = mmap(NULL, h.file_size, ro ? PROT_READ : PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return tk_errno_code(errno);
	tk_advise_huge(o, base, h.file_size);
	tk_handle_fill(t, &h, &algo, base, ro);
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	rc = tk_life_adopt(t);
	if (rc != TKSHM_OK) {
		tk_say(o, "the table's live policy record is invalid");
		munmap(base, h.file_size);
		t->base = NULL;
	}
	return rc;
}

/* Maps a fresh, fully allocated segment on fd (or anonymous memory when
 * fd < 0) and initialises it.  The regions are zero: EMPTY slots (I4),
 * zero counters, no labels, no remembered debt. */
static int
tk_build(int fd, const struct tk_geometry *g, const tkshm_policy *p,
	 const struct tk_algo *algo, const tkshm_options *o,
	 const struct tk_lineage *lin, struct tkshm_table *t)
{
	struct tk_header h;
	void *base;
	int rc;

	rc = tk_header_build(&h, g, p, o->on_full, fd < 0, lin);
	if (rc != TKSHM_OK)
		return rc;
	if (fd < 0)
		base = mmap(NULL, g->file_size, PROT_READ | PROT_WRITE,
			    /* cppcheck-suppress invalidFunctionArg ; fd -1
			     * is what MAP_ANONYMOUS takes */
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	else
		base = mmap(NULL, g->file_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return tk_errno_code(errno);
	/* Before the first write: an anonymous table's pages are faulted in
	 * as huge pages from the start. */
	tk_advise_huge(o, base, g->file_size);
	memcpy(base, &h, sizeof h);
	if (lin)
		/* Published draining: the predecessor's keys are carried on
		 * demand until the drain ends (L5, L6).  Not yet shared: a
		 * plain store. */
		((struct tk_life *)((uint8_t *)base + TK_LIFE_OFF))->word =
			TK_LIFE_DRAINING;
	tk_handle_fill(t, &h, algo, base, false);
	t->life_word = lin ? TK_LIFE_DRAINING : 0;
	t->created_now = true;
	{
		struct stat st;

		/* The file's identity, which a replacement checks the path
		 * still names (an inode keeps it across link and rename). */
		if (fd >= 0 && fstat(fd, &st) == 0) {
			t->dev = st.st_dev;
			t->ino = st.st_ino;
		}
	}
	return TKSHM_OK;
}

/* Creates the table file under no name and links it to `path`.  Returns
 * TKSHM_EEXIST when another process linked first (the caller attaches). */
static int
tk_create_and_link(const char *path, const tkshm_options *o,
		   const struct tk_geometry *g, const struct tk_algo *algo,
		   struct tkshm_table *t)
{
	char dir[4096], tmp[4200], proc[64];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	mode_t mode = o->mode ? (mode_t)o->mode : 0600; /* within 0777 */
	bool named_tmp = false;
	int fd, rc, e;

	if (dlen >= sizeof dir)
		return TKSHM_EINVAL;
	if (dlen == 0) {
		dir[0] = '/';
		dir[1] = '\0';
	} else {
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	if (fd < 0 &&
	    (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		uint32_t r = 0;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = (uint32_t)getpid();
		snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%08x", path,
			 (long)getpid(), r);
		fd = open(tmp,
			  O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
			  mode);
		named_tmp = true;
	}
	if (fd < 0) {
		e = errno;
		tk_say(o, "cannot create a table in %s: %s", dir, strerror(e));
		return tk_errno_code(e);
	}
	/* The umask may have removed bits the caller asked for. */
	if (fchmod(fd, mode) != 0 ||
	    (o->gid >= 0 && fchown(fd, (uid_t)-1, (gid_t)o->gid) != 0)) {
		e = errno;
		tk_say(o, "cannot set mode %o / group %lld: %s", (unsigned)mode,
		       (long long)o->gid, strerror(e));
		rc = tk_errno_code(e);
		goto fail;
	}
	/* Allocate every block now: a full disk fails here, never later
	 * with SIGBUS in a worker. */
	e = posix_fallocate(fd, 0, (off_t)g->file_size);
	if (e != 0) {
		tk_say(o, "cannot allocate %llu bytes: %s",
		       (unsigned long long)g->file_size, strerror(e));
		rc = tk_errno_code(e);
		goto fail;
	}
	rc = tk_build(fd, g, o->policy, algo, o, NULL, t);
	if (rc != TKSHM_OK)
		goto fail;
	/* Publish: link never replaces an existing name. */
	if (named_tmp) {
		rc = link(tmp, path) == 0 ? TKSHM_OK : tk_errno_code(errno);
		e = errno;
		unlink(tmp);
	} else {
		snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
		rc = linkat(AT_FDCWD, proc, AT_FDCWD, path,
			    AT_SYMLINK_FOLLOW) == 0 ?
			     TKSHM_OK :
			     tk_errno_code(errno);
		e = errno;
		if (rc == TKSHM_ENOENT &&
		    linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
			rc = TKSHM_OK;
	}
	if (rc != TKSHM_OK) {
		munmap(t->base, t->map_size);
		t->base = NULL;
		close(fd);
		if (rc != TKSHM_EEXIST)
			tk_say(o, "cannot publish %s: %s", path, strerror(e));
		return rc;
	}
	close(fd);
	return TKSHM_OK;
fail:
	if (named_tmp)
		unlink(tmp);
	close(fd);
	return rc;
}

int
tk_segment_build(const char *tmp, const tkshm_options *o, uint64_t slots,
		 const struct tk_lineage *lin, struct tkshm_table *t)
{
	struct tk_geometry g;
	struct tk_algo algo;
	char why[160];
	int fd, rc, e;

	rc = tk_algo_init(&algo, o->policy, why, sizeof why);
	if (rc != TKSHM_OK)
		return rc;
	if (tk_geometry_for_slots(slots, &algo, &g) != 0)
		return TKSHM_EINVAL;
	if (!tmp)
		return tk_build(-1, &g, o->policy, &algo, o, lin, t);
	fd = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
		  o->mode ? (mode_t)o->mode : 0600);
	if (fd < 0)
		return tk_errno_code(errno);
	/* The replacement belongs to whoever owned the table: the workers
	 * that open it are that owner's (root may give it away). */
	if (fchmod(fd, o->mode ? (mode_t)o->mode : 0600) != 0 ||
	    (lin && fchown(fd, lin->uid, lin->gid) != 0 && geteuid() == 0)) {
		rc = tk_errno_code(errno);
		goto fail;
	}
	e = posix_fallocate(fd, 0, (off_t)g.file_size);
	if (e != 0) {
		rc = tk_errno_code(e);
		goto fail;
	}
	rc = tk_build(fd, &g, o->policy, &algo, o, lin, t);
	if (rc != TKSHM_OK)
		goto fail;
	close(fd);
	return TKSHM_OK;
fail:
	unlink(tmp);
	close(fd);
	return rc;
}

uint64_t
tk_segment_slots(const struct tkshm_table *t)
{
	return t->nbuckets * TK_SLOTS_PER_BUCKET;
}

uint64_t
tk_slots_rounded(uint64_t slots)
{
	uint64_t nb = 2;

	if (slots < TK_MIN_SLOTS)
		slots = TK_MIN_SLOTS;
	while (nb * TK_SLOTS_PER_BUCKET < slots && nb < TK_MAX_SLOTS)
		nb <<= 1;
	return nb * TK_SLOTS_PER_BUCKET;
}

int
tk_segment_open(const char *path, const tkshm_options *o, struct tkshm_table *t)
{
	struct tk_geometry want, *wantp = NULL;
	struct tk_algo algo;
	char full[4096], why[160];
	bool ro = (o->flags & TKSHM_O_RDONLY) != 0;
	int rc;

	/* Without a policy (attach), words 0: the geometry asked for is only
	 * compared by its slot count. */
	memset(&algo, 0, sizeof algo);
	if (o->policy) {
		rc = tk_algo_init(&algo, o->policy, why, sizeof why);
		if (rc != TKSHM_OK) {
			tk_say(o, "%s", why);
			return rc;
		}
	}
	if (o->flags & ~(TKSHM_O_CREATE | TKSHM_O_EXCL | TKSHM_O_RDONLY |
			 TKSHM_O_HUGEPAGES | TKSHM_O_KEEP)) {
		tk_say(o, "unknown flag bits 0x%x",
		       (unsigned)(o->flags &
				  ~(TKSHM_O_CREATE | TKSHM_O_EXCL |
				    TKSHM_O_RDONLY | TKSHM_O_HUGEPAGES |
				    TKSHM_O_KEEP)));
		return TKSHM_EINVAL;
	}
	if (o->on_full != TKSHM_ON_FULL_EVICT &&
	    o->on_full != TKSHM_ON_FULL_REFUSE) {
		tk_say(o, "unknown on_full value %d", (int)o->on_full);
		return TKSHM_EINVAL;
	}
	/* Refused whether or not a file is created: masking them would
	 * turn 0xffffffff into setuid, setgid and sticky. */
	if (o->mode & ~UINT32_C(0777)) {
		tk_say(o,
		       "mode %#o has bits outside 0777: a table file takes "
		       "permission bits only (no setuid, setgid or sticky)",
		       (unsigned)o->mode);
		return TKSHM_EINVAL;
	}
	/* (gid_t)-1 is chown's "unchanged": -1 says that, nothing else. */
	if (o->gid < -1 || o->gid >= (int64_t)UINT32_MAX) {
		tk_say(o, "gid %lld is not a group id (0 to %lu, or -1)",
		       (long long)o->gid, (unsigned long)UINT32_MAX - 1);
		return TKSHM_EINVAL;
	}
	if (o->slots) {
		if (tk_geometry_for_slots(o->slots, &algo, &want) != 0) {
			tk_say(o, "slots must be at most %llu",
			       (unsigned long long)TK_MAX_SLOTS);
			return TKSHM_EINVAL;
		}
		wantp = &want;
	}

	if (!path) {
		if (!o->policy) {
			tk_say(o, "an anonymous table needs a policy");
			return TKSHM_EPOLICY;
		}
		if (ro)
			return TKSHM_EINVAL;
		if (!wantp)
			(void)tk_geometry_for_slots(TKSHM_DEFAULT_SLOTS, &algo,
						    &want);
		return tk_build(-1, &want, o->policy, &algo, o, NULL, t);
	}
	if (path[0] == '\0')
		return TKSHM_EINVAL;
	if (!strchr(path, '/')) {
		if ((size_t)snprintf(full, sizeof full, "%s/%s",
				     TKSHM_DEFAULT_DIR, path) >= sizeof full)
			return TKSHM_EINVAL;
		path = full;
	} else if (strlen(path) >= sizeof full) {
		return TKSHM_EINVAL;
	}

	for (int attempt = 0; attempt < TK_OPEN_ATTEMPTS; attempt++) {
		/* O_NONBLOCK: opening a FIFO planted at the path must not
		 * hang; fstat then refuses anything but a regular file. */
		int fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_NOFOLLOW |
					    O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			if ((o->flags & TKSHM_O_CREATE) &&
			    (o->flags & TKSHM_O_EXCL)) {
				close(fd);
				tk_say(o, "%s exists", path);
				return TKSHM_EEXIST;
			}
			rc = tk_attach_fd(fd, o, wantp, t);
			close(fd);
			return rc;
		}
		if (errno != ENOENT) {
			int e = errno;
			tk_say(o, "cannot open %s: %s", path,
			       e == ELOOP ? "it is a symbolic link" :
					    strerror(e));
			return tk_errno_code(e);
		}
		if (!(o->flags & TKSHM_O_CREATE) || ro) {
			tk_say(o, "%s does not exist", path);
			return TKSHM_ENOENT;
		}
		if (!o->policy) {
			tk_say(o, "creating %s needs a policy", path);
			return TKSHM_EPOLICY;
		}
		if (!wantp)
			(void)tk_geometry_for_slots(TKSHM_DEFAULT_SLOTS, &algo,
						    &want);
		rc = tk_create_and_link(path, o, &want, &algo, t);
		if (rc != TKSHM_EEXIST)
			return rc;
		if (o->flags & TKSHM_O_EXCL) {
			tk_say(o, "%s exists", path);
			return TKSHM_EEXIST;
		}
		/* Lost the race to publish: attach to the winner's. */
	}
	tk_say(o, "%s keeps appearing and disappearing", path);
	return TKSHM_EBUSY;
}

void
tk_segment_close(struct tkshm_table *t)
{
	if (t->base)
		munmap(t->base, t->map_size);
	t->base = NULL;
}
