/* A library loaded on first use: its functions found by name (lazylib.h). */
#include "lazylib.h"

#include <dlfcn.h>
#include <stdio.h>

int lazylib_load(const char *soname, const struct lazylib_symbol *symbols, size_t n, char *why,
		 size_t why_size)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(why, why_size, "cannot load %s: %s", soname, dlerror());
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		*symbols[i].slot = dlsym(h, symbols[i].name);
		if (!*symbols[i].slot) {
			snprintf(why, why_size, "%s has no %s", soname, symbols[i].name);
			return -1;
		}
	}
	return 0;
}
