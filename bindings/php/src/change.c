/* What a policy or size change did to a table (tkshm_change), as the PHP
 * array that Table::change(), Table::apply() and Table::plan() return:
 *
 *   ['kind' => 'in_place', 'states_kept' => true, 'slots_before' => 1024,
 *    'slots_after' => 1024, 'text' => 'limit 10 -> 20, states kept']
 *
 * The keys are the C struct's field names, as stats() uses them; the kind
 * is the enum's name in lower case, as stats()['on_full'] is. */
#include "php_tkshm.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Slots are at most TKSHM_MAX_SLOTS (2^36): they fit a PHP int. */
void
tkshm_php_change_array(zval *out, const tkshm_change *c)
{
	array_init(out);
	add_assoc_string(out, "kind", tkshm_change_name(c->kind));
	add_assoc_bool(out, "states_kept", c->states_kept);
	add_assoc_long(out, "slots_before", (zend_long)c->slots_before);
	add_assoc_long(out, "slots_after", (zend_long)c->slots_after);
	add_assoc_string(out, "text", c->text);
}

void
tkshm_php_change_note_shrink(tkshm_change *c, uint64_t asked)
{
	size_t used = strlen(c->text);

	/* NONE's whole text is "unchanged": the note replaces it. */
	if (c->kind == TKSHM_CHANGE_NONE)
		used = 0;
	snprintf(c->text + used, sizeof(c->text) - used,
		 "%sslots %" PRIu64 " kept (%" PRIu64
		 " asked: a table does not shrink)",
		 used ? ", " : "", c->slots_after, asked);
}

uint64_t
tkshm_php_slots_rounded(uint64_t slots)
{
	uint64_t n = 8;

	while (n < slots && n < TKSHM_MAX_SLOTS)
		n <<= 1;
	return n;
}
