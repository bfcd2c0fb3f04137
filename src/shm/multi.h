/*
 * multi.h - the shared-memory `all` and `any` of tkshm_check_multi_at
 * (src/api/multi.c), also for the callers inside the library that decide
 * dimensions locally (strict mode's failure policy: the safe shares of an
 * `all` that Redis did not answer).
 */
#ifndef TKSHM_SHM_MULTI_H
#define TKSHM_SHM_MULTI_H

#include <stddef.h>

#include "tkshm.h"

/* tkshm_check_multi_at's shared-memory path on dimensions already
 * validated (n within 1..TKSHM_MULTI_MAX): every dimension's decision in
 * d[0..n), each counted in its table's stats as it stands.  `all`
 * consumes nothing unless every dimension admits; a key named more than
 * once is checked by each dimension in turn.  TKSHM_OK, or an error of
 * the check (TKSHM_EFULL, TKSHM_EBUSY, TKSHM_ECORRUPT), having consumed
 * nothing. */
int tk_multi_local(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		   double now_ms, tkshm_decision *d);

/* Counts in each dimension's table the decisions d[0..n) that stand, once
 * each: a denied `all` counts its deniers (the dimensions that would have
 * admitted consumed nothing), otherwise every dimension counts what it
 * decided (the Redis script's decisions too: src/redis/strict.c). */
void tk_multi_count(tkshm_multi_mode mode, const tkshm_dimension *dims,
		    size_t n, const tkshm_decision *d);

/* What tk_multi_all_one_word returns when it did not decide. */
#define TK_MULTI_GENERAL 1

/* `all` over dimensions that are each a local, writable GCRA table of
 * one-word states (tk_multi_local's arguments, validated): when no key is
 * named twice and every key is present, each dimension decided on its
 * slot and, if all admit, each slot replaced by one CAS from what was
 * read, the decisions counted as tk_multi_local counts them: TKSHM_OK.
 * Otherwise (a repeated or absent key, a CAS lost to a rival) nothing is
 * consumed and it returns TK_MULTI_GENERAL: tk_multi_local decides. */
int tk_multi_all_one_word(const tkshm_dimension *dims, size_t n, double now_ms,
			  tkshm_decision *d);

#endif /* TKSHM_SHM_MULTI_H */
