/* Tables of entries named by their first member: counted, and looked up by a name or a prefix. */
#include "table.h"

#include <string.h>

/* The name of entry `i` of a table whose entries start with their name. */
static const char *table_name_at(const void *table, size_t i, size_t size)
{
	return *(const char *const *)((const char *)table + i * size);
}

size_t table_count(const void *table, size_t size)
{
	size_t n = 0;

	while (table && table_name_at(table, n, size))
		n++;
	return n;
}

int table_find(const char *word, const void *table, size_t n, size_t size, const char *what,
	     struct strbuf *err)
{
	size_t len = strlen(word);
	int found = -1, matches = 0;

	for (size_t i = 0; i < n && table_name_at(table, i, size); i++) {
		const char *name = table_name_at(table, i, size);

		if (!strcmp(name, word))
			return (int)i;
		if (len && !strncmp(name, word, len)) {
			found = (int)i;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	if (!matches) {
		strbuf_addf(err, "unknown %s '%s'", what, word);
		return -1;
	}
	strbuf_addf(err, "ambiguous %s '%s':", what, word);
	for (size_t i = 0, k = 0; i < n && table_name_at(table, i, size); i++)
		if (!strncmp(table_name_at(table, i, size), word, len))
			strbuf_addf(err, "%s %s", k++ ? "," : "", table_name_at(table, i, size));
	return -1;
}
