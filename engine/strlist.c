/* A growable list of strings the list owns. */
#include "strlist.h"
#include "alloc.h"

#include <stdlib.h>

void strlist_append(struct strlist *l, const char *s)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 4;
		l->items = xrealloc(l->items, l->alloc * sizeof(*l->items));
	}
	l->items[l->n++] = xstrdup(s);
}

void strlist_release(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = l->alloc = 0;
}
