/*
 * label.c - the bounded key prefix kept for operators (tkshm-inspect).
 *
 * Labels are display only: nothing decides from them.  A label is written
 * once per insert, never on the check path, seqlock-style (layout.h,
 * tk_label): w[0] = 0, then w[1] and w[2], then w[0], which carries the
 * fingerprint check.  A reader (tk_label_read) copies w[1] and w[2] between
 * two reads of w[0] and accepts the label only if both reads are equal and
 * name the slot's fp; a label torn by two racing inserters of the same
 * slot is then shown as missing.  A crash mid-write leaves w[0] = 0: "no
 * label".  The check is 32 bits: a stale label of another key shows only
 * if that key shared the slot and the low 32 bits of its fingerprint.
 *
 * The slot's denial tally is zeroed here too, before the label names the
 * new key: counts of the slot's previous key are not shown as its own.
 */
#include <string.h>

#include "shm/atomic.h"
#include "shm/table.h"

/* A lease table's whole key, seqlock-style (layout.h, tk_keyrec): two
 * inserters racing on one slot leave an odd or changed seq, which readers
 * refuse, and the next insert rewrites the record. */
static void
tk_keyrec_write(struct tk_keyrec *r, uint64_t fp, const void *key, size_t len)
{
	uint64_t seq = tk_load_relaxed(&r->seq);

	/* Relaxed + release fence: a reader that sees any byte below also
	 * sees the odd seq (the fence orders this store before them). */
	tk_store_relaxed(&r->seq, seq | 1);
	tk_fence_release();
	/* Relaxed: published by the release store of seq below. */
	tk_store_relaxed(&r->fp, fp);
	tk_store_relaxed(&r->len, (uint64_t)len);
	for (size_t i = 0; i < len; i++)
		/* Relaxed byte stores: validated by the seq around them. */
		tk_store8_relaxed(&r->key[i], ((const unsigned char *)key)[i]);
	/* Release: the record is complete before seq turns even. */
	tk_store_release(&r->seq, (seq | 1) + 1);
}

bool
tk_keyrec_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
	       unsigned char *out, size_t *len)
{
	const struct tk_keyrec *r;
	uint64_t s1, s2, n;

	if (!t->keyrecs || fp == 0)
		return false;
	r = &t->keyrecs[index];
	/* Acquire: pairs with the writer's release of an even seq. */
	s1 = tk_load_acquire(&r->seq);
	if (s1 & 1)
		return false;
	/* Relaxed: validated by the second read of seq. */
	if (tk_load_relaxed(&r->fp) != fp)
		return false;
	n = tk_load_relaxed(&r->len);
	if (n == 0 || n > TKSHM_LEASE_KEY_MAX) /* bounds, before any copy */
		return false;
	for (uint64_t i = 0; i < n; i++)
		/* Relaxed: validated by the second read of seq. */
		out[i] = tk_load8_relaxed(&r->key[i]);
	/* Acquire fence, then the second read: the copies above happen
	 * before it. */
	tk_fence_acquire();
	s2 = tk_load_relaxed(&r->seq);
	if (s2 != s1)
		return false;
	*len = (size_t)n;
	return true;
}

/* The 32-bit fingerprint check of a label: never 0, which means no label
 * (a fingerprint whose low 32 bits are 0 shares its check with 1's). */
static uint64_t
tk_label_check(uint64_t fp)
{
	uint32_t c = (uint32_t)fp;

	return c != 0 ? c : 1;
}

void
tk_label_write(struct tkshm_table *t, uint64_t index, uint64_t fp,
	       const void *key, size_t len)
{
	struct tk_label *l = &t->labels[index];
	unsigned char prefix[TK_LABEL_PREFIX];
	uint64_t w0, w[2];
	size_t n;

	if (key == NULL) {
		/* A key carried in by its fingerprint has no bytes. */
		key = "";
		len = 0;
	}
	n = len < TK_LABEL_PREFIX ? len : TK_LABEL_PREFIX;
	memset(prefix, 0, sizeof prefix);
	memcpy(prefix, key, n);
	w0 = tk_label_check(fp) | (uint64_t)(len < 255 ? len : 255) << 32 |
	     (uint64_t)prefix[0] << 40 | (uint64_t)prefix[1] << 48 |
	     (uint64_t)prefix[2] << 56;
	memcpy(w, prefix + 3, sizeof w);

	/* Relaxed, then a release fence: readers that see any new word also
	 * see w[0] = 0 (the fence orders this store before the word stores). */
	tk_store_relaxed(&l->w[0], 0);
	/* Relaxed: display only; the release store of w[0] below publishes
	 * it. */
	tk_store32_relaxed(&t->denials[index], 0);
	tk_fence_release();
	for (unsigned i = 0; i < 2; i++)
		/* Relaxed: published by the release store of w[0] below. */
		tk_store_relaxed(&l->w[1 + i], w[i]);
	/* Release: the words are visible before the check that validates
	 * them. */
	tk_store_release(&l->w[0], w0);
	if (t->keyrecs && len <= TKSHM_LEASE_KEY_MAX)
		tk_keyrec_write(&t->keyrecs[index], fp, key, len);
}

bool
tk_label_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
	      unsigned char out[TK_LABEL_PREFIX], unsigned *key_len)
{
	const struct tk_label *l = &t->labels[index];
	uint64_t w0, w[2];

	if (fp == 0)
		return false;
	/* Acquire: pairs with the writer's release store of w[0], so the
	 * words read below are at least as new as that label. */
	w0 = tk_load_acquire(&l->w[0]);
	if ((w0 & UINT32_MAX) != tk_label_check(fp))
		return false;
	for (unsigned i = 0; i < 2; i++)
		/* Relaxed: validated by the second read of w[0] below. */
		w[i] = tk_load_relaxed(&l->w[1 + i]);
	/* Acquire fence: the word loads above complete before the load of
	 * w[0] below, so a writer that started meanwhile (w[0] = 0 first) is
	 * seen. */
	tk_fence_acquire();
	if (tk_load_relaxed(&l->w[0]) != w0)
		return false;
	*key_len = (unsigned)(w0 >> 32 & 0xff);
	out[0] = (unsigned char)(w0 >> 40);
	out[1] = (unsigned char)(w0 >> 48);
	out[2] = (unsigned char)(w0 >> 56);
	memcpy(out + 3, w, sizeof w);
	return true;
}
