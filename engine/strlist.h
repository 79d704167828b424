#ifndef CELLBOX_STRLIST_H
#define CELLBOX_STRLIST_H

/* A growable list of strings the list owns. */

#include <stddef.h>

struct strlist {
	char **items;
	size_t n, alloc;
};

#define STRLIST_INIT { NULL, 0, 0 }

/* Append a copy of `s`. */
void strlist_append(struct strlist *l, const char *s);
/* Free the list and its strings. */
void strlist_release(struct strlist *l);

#endif
