/*
 * label.h - reading and writing the display-only key prefixes (label.c).
 */
#ifndef TKSHM_SHM_LABEL_H
#define TKSHM_SHM_LABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/table.h"

struct tk_label_text {
	unsigned char bytes[TK_LABEL_PREFIX];
	size_t len;	/* bytes of the prefix that are valid */
	size_t key_len; /* the key's length, 255 meaning 255 or more */
	bool truncated; /* the key is longer than the prefix */
};

/* Reads the label of slot `index` if it was written for `fp`. */
bool tk_label_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		   struct tk_label_text *out);

#endif /* TKSHM_SHM_LABEL_H */
