/*
 * fuzz_common.h - what the fuzz targets share: the fixed clock their
 * seeds were made at, the keys those seeds hold, and a check that stops
 * the run on a broken contract (libFuzzer reports an abort as a crash).
 */
#ifndef TKSHM_FUZZ_COMMON_H
#define TKSHM_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

/* The instant the seed tables were written at (make_seeds.c): targets read
 * them at and around it, so their states are neither all idle nor new. */
#define TKF_T0_MS 1700000000000.0

/* The keys the seed tables hold; the table target looks them up. */
static const char *const tkf_keys[] = { "a", "b", "client-1", "10.0.0.7", "k" };
#define TKF_NKEYS (sizeof tkf_keys / sizeof tkf_keys[0])

/* A contract the library states did not hold: a finding, so abort. */
#define TKF_REQUIRE(cond)                                               \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr, "%s:%d: contract broken: %s\n", \
				__FILE__, __LINE__, #cond);             \
			abort();                                        \
		}                                                       \
	} while (0)

#endif /* TKSHM_FUZZ_COMMON_H */
