#ifndef CELLBOX_TABLE_H
#define CELLBOX_TABLE_H

/*
 * Tables of designated initialisers whose entries start with their name (a const char *):
 * commands, options, the UI's ':' commands. A table may end early with an entry whose name
 * is NULL.
 */

#include <stddef.h>
#include "util.h"

/*
 * Find `word` in a table of `n` entries of `size` bytes each: the entry of that name, else
 * the one whose name starts with `word`. Returns its index, or -1 with `err` saying
 * "unknown WHAT 'x'" or "ambiguous WHAT 'x': a, b".
 */
int table_find(const char *word, const void *table, size_t n, size_t size, const char *what,
	       struct strbuf *err);
/* The number of entries of a table ended by a NULL name. */
size_t table_count(const void *table, size_t size);

#endif
