/*
 * label.c - the bounded key prefix kept for operators (tkshm-inspect).
 *
 * Labels are display only: nothing decides from them.  A label is written
 * once per insert, never on the check path, seqlock-style: fp = 0, the
 * words, then fp.  A reader (tk_label_read) copies the words between two
 * reads of fp and accepts the label only if both equal the slot's fp; a
 * label torn by two racing inserters of the same slot is then shown as
 * missing.  A crash mid-write leaves fp = 0: "no label".
 *
 * The slot's denial tally is zeroed here too, before the label names the
 * new key: counts of the slot's previous key are not shown as its own.
 */
#include <string.h>

#include "shm/atomic.h"
#include "shm/table.h"

void
tk_label_write(struct tkshm_table *t, uint64_t index, uint64_t fp,
	       const void *key, size_t len)
{
	struct tk_label *l = &t->labels[index];
	unsigned char bytes[24];
	uint64_t w[3];
	size_t n = len < TK_LABEL_PREFIX ? len : TK_LABEL_PREFIX;

	memset(bytes, 0, sizeof bytes);
	bytes[0] = (unsigned char)(len < 255 ? len : 255);
	memcpy(bytes + 1, key, n);
	memcpy(w, bytes, sizeof w);

	/* Relaxed, then a release fence: readers that see any new word also
	 * see fp = 0 (the fence orders this store before the word stores). */
	tk_store_relaxed(&l->fp, 0);
	/* Relaxed: display only; the release store of fp below publishes it. */
	__atomic_store_n(&t->denials[index], 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < 3; i++)
		/* Relaxed: published by the release store of fp below. */
		tk_store_relaxed(&l->w[i], w[i]);
	/* Release: the words are visible before the fp that validates them. */
	tk_store_release(&l->fp, fp);
}

bool
tk_label_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
	      unsigned char out[TK_LABEL_PREFIX], unsigned *key_len)
{
	const struct tk_label *l = &t->labels[index];
	unsigned char bytes[24];
	uint64_t w[3];

	/* Acquire: pairs with the writer's release store of fp, so the words
	 * read below are at least as new as that label. */
	if (fp == 0 || tk_load_acquire(&l->fp) != fp)
		return false;
	for (unsigned i = 0; i < 3; i++)
		/* Relaxed: validated by the second read of fp below. */
		w[i] = tk_load_relaxed(&l->w[i]);
	/* Acquire fence: the word loads above complete before the fp load
	 * below, so a writer that started meanwhile (fp = 0 first) is seen. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (tk_load_relaxed(&l->fp) != fp)
		return false;
	memcpy(bytes, w, sizeof bytes);
	*key_len = bytes[0];
	memcpy(out, bytes + 1, TK_LABEL_PREFIX);
	return true;
}
