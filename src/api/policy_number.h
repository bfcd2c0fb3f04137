/*
 * policy_number.h - the one number grammar of policy strings.
 *
 * A number in a policy string is written as in JSON (RFC 8259, section 6),
 * the notation of ThrottleKit's options:
 *
 *     number = [ "-" ] int [ "." 1*DIGIT ] [ ( "e" / "E" ) [ "+" / "-" ] 1*DIGIT ]
 *     int    = "0" / ( %x31-39 *DIGIT )
 *
 * so "10", "0.5", "1e3", "-330" are numbers and "+5", "5.", ".5", "010",
 * "0x10", "inf", "nan" and anything with a space are not.  A number that
 * overflows a double is refused too; one that underflows reads as the
 * nearest double (0 or a subnormal), which the kind's validation judges.
 */
#ifndef TKSHM_API_POLICY_NUMBER_H
#define TKSHM_API_POLICY_NUMBER_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..n) is one number of the grammar above, read into *v. */
bool tk_policy_number(const char *s, size_t n, double *v);

#endif /* TKSHM_API_POLICY_NUMBER_H */
