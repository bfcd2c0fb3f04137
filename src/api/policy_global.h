/*
 * policy_global.h - the cross-host part of a policy (tkshm_global): its
 * place in policy strings.  Its validation against the kind is
 * algorithms/cross_host.h's (tk_algo_init runs it on every policy).
 *
 * In a policy string it follows the kind's options after a ';':
 *     "gcra:limit=100,periodMs=1000;mode=lease,failure=safe-share,hosts=3"
 * with the options mode (local | strict | lease), failure (safe-share |
 * fail-open | fail-closed), hosts, leaseMs and prefix.  A policy without
 * the part, or with mode=local, is local; the other options are then
 * neither formatted nor compared.
 */
#ifndef TKSHM_API_POLICY_GLOBAL_H
#define TKSHM_API_POLICY_GLOBAL_H

#include <stdbool.h>
#include <stddef.h>

#include "tkshm.h"

/* The defaults a parsed policy starts from (local). */
void tk_global_defaults(tkshm_global *g);

/* Parses "name=value{,name=value}" (the text after ';', `len` bytes) into
 * *g, which holds the defaults.  TKSHM_OK or TKSHM_EPOLICY. */
int tk_global_parse(const char *s, size_t len, tkshm_global *g, char *err,
		    size_t err_len);

/* Appends ";mode=...,..." for a non-local policy (nothing for a local
 * one) to out[*used..cap).  False when it does not fit. */
bool tk_global_format(const tkshm_global *g, char *out, size_t *used,
		      size_t cap);

/* Equal cross-host parts: both local, or every field bit-identical. */
bool tk_global_equal(const tkshm_global *a, const tkshm_global *b);

/* "local", "strict", "lease" / "safe-share", "fail-open", "fail-closed"
 * ("?" for a value out of range). */
const char *tk_global_mode_name(tkshm_global_mode m);
const char *tk_global_failure_name(tkshm_failure_policy f);

#endif /* TKSHM_API_POLICY_GLOBAL_H */
