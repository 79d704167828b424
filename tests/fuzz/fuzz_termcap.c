/*
 * libFuzzer target: the terminal reply parser (termcap_parse): what a terminal (or anything
 * on the other end of the tty) answers. Built with -Dfuzz=true; run by scripts/fuzz. The unit
 * test graphics/parse_fuzz runs a fixed random sweep of the same function in every build.
 */
#include <stddef.h>
#include <stdint.h>

#include "termcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse one input; the sanitizers judge. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct termcap_reply r;

	termcap_parse(&r, (const char *)data, size);
	return 0;
}
