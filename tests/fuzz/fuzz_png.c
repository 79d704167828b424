/*
 * libFuzzer target: the check of a kernel's plot before it is copied anywhere
 * (wall_png_check): the signature, the IHDR chunk, the dimensions. Built with -Dfuzz=true;
 * run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wall.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What passes has dimensions within the caps. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf why = STRBUF_INIT;
	int w = 0, h = 0;

	if (wall_png_check(data, size, 16384, 100000000ull, &w, &h, &why) == 0) {
		if (w < 1 || h < 1 || w > 16384 || h > 16384 || (long long)w * h > 100000000ll)
			abort();
	} else if (!why.len) {
		abort();
	}
	strbuf_release(&why);
	return 0;
}
