/*
 * policy_rate.h - rate strings: GCRA policies written the way people
 * already write limits ("10/second", "100 per minute", "5/min,burst=10").
 *
 *     rate  = ows count ows ( "/" / "per" ) ows [ multiple ows ] unit ows
 *             [ "," ows "burst" ows "=" ows count ows ] [ ";" cross-host ]
 *     count, multiple = a JSON number (policy_number.h)
 *     unit  = ms / millisecond[s] / s / sec[s] / second[s] / m / min[s] /
 *             minute[s] / h / hr[s] / hour[s] / d / day[s] / month[s] /
 *             year[s]                        (any case; ows: spaces, tabs)
 *
 * "N/M unit" is gcra:limit=N,periodMs=M*unit with burst N unless given;
 * a month is 30 days and a year 360, as in the `limits` library.  The
 * cross-host part after ';' is the policy string's own (no whitespace).
 * See docs/policies.md, "Rate strings".
 */
#ifndef TKSHM_API_POLICY_RATE_H
#define TKSHM_API_POLICY_RATE_H

#include <stdbool.h>
#include <stddef.h>

#include "tkshm.h"

/* True when spec reads as a rate string: its first character that is not
 * a space or a tab is a digit (no policy kind's name starts with one). */
bool tk_policy_is_rate(const char *spec);

/* Parses the rate string spec into *out (unchanged on error).  TKSHM_OK,
 * or TKSHM_EPOLICY with a sentence in err. */
int tk_policy_parse_rate(const char *spec, tkshm_policy *out, char *err,
			 size_t err_len);

#endif /* TKSHM_API_POLICY_RATE_H */
