#ifndef CELLBOX_LAZYLIB_H
#define CELLBOX_LAZYLIB_H

/*
 * A library loaded on first use, as libcurl (curl_lazy.c) and libzmq (tui/kernel/zmq_lazy.c)
 * are: the program is not linked to it, and only the commands that need it pay its loading.
 * The caller keeps a table of the functions it forwards to (a name, and where its address
 * goes) and calls lazylib_load() once (under pthread_once).
 */

#include <stddef.h>

struct lazylib_symbol {
	const char *name;
	void **slot;
};

/*
 * dlopen() `soname` (RTLD_NOW, RTLD_LOCAL) and fill each of the `n` slots of `symbols` with its
 * function's address. 0 when all were found; -1 with the reason in `why` (a NUL-terminated
 * line of at most `why_size` bytes: the loader's error, or the first name missing).
 */
int lazylib_load(const char *soname, const struct lazylib_symbol *symbols, size_t n, char *why,
		 size_t why_size);

#endif
