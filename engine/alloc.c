#include "alloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report an allocation failure and abort. */
static void oom(size_t n)
{
	fprintf(stderr, "cellbox: out of memory allocating %zu bytes\n", n);
	abort();
}

/* Allocate `n` bytes or abort. */
void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

/* Allocate `nmemb` zeroed items of `size` bytes or abort. */
void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

/* Resize `p` to `n` bytes or abort. */
void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

/* Copy a string or abort. */
char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

/* Copy the first `n` bytes of `s` as a string or abort. */
char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* Format into a new string or abort. */
char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0 && errno == ENOMEM)
		oom(strlen(fmt));
	return n < 0 ? xstrdup("") : p;	/* a format error: an empty string, as before */
}
