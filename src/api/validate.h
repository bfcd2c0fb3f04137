/*
 * validate.h - the argument checks every public call shares (table_api.c).
 */
#ifndef TKSHM_API_VALIDATE_H
#define TKSHM_API_VALIDATE_H

#include <stddef.h>

#include "tkshm.h"

/* TKSHM_OK or the error naming what is wrong with the argument. */
int tk_check_key(const void *key, size_t len);
/* The cost check includes the table's kind (tokenBudget: whole tokens). */
int tk_check_cost(const tkshm_table *t, double cost);
int tk_check_now(double now);

#endif /* TKSHM_API_VALIDATE_H */
