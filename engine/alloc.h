#ifndef CELLBOX_ALLOC_H
#define CELLBOX_ALLOC_H

/*
 * Allocation that never fails (git's wrapper.c): each wrapper aborts with a message when the
 * memory is not there, so callers never check for NULL. Running out of memory is the one
 * thing that aborts; a buffer that would grow past its cap is an error its caller handles
 * (strbuf.h).
 */

#include <stddef.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Allocate or abort with a message: callers never check for NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
