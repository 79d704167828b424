/*
 * libFuzzer target for the terminal reply parser (termcap_parse). Not built by meson; run:
 *
 *   clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Itui -Iengine \
 *         tests/fuzz/fuzz_termcap.c tui/termcap.c engine/util.c -o fuzz_termcap
 *   ./fuzz_termcap -max_len=512
 *
 * The unit test graphics/parse_fuzz runs a fixed random sweep of the same function in CI.
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
