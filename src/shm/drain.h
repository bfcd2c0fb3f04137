/*
 * drain.h - carrying every key of a replaced table into its replacement
 * (protocol.h, L6; drain.c).
 */
#ifndef TKSHM_SHM_DRAIN_H
#define TKSHM_SHM_DRAIN_H

struct tkshm_table;

/* L6: carries every key of n->pred into n, converted as the keys stand
 * at `now` (inserted at TK_DRAIN_NOW).  A one-word key that finds its
 * window of n full is kept as its debt (I8); a wide one is dropped (a
 * full window refuses new keys anyway).  TKSHM_OK or an error of
 * tk_carry_insert other than TKSHM_EFULL. */
int tk_carry_drain(struct tkshm_table *n, double now);

#endif /* TKSHM_SHM_DRAIN_H */
