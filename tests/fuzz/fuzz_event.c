/*
 * libFuzzer target for the event decoder (event_decode): every line of a results file is
 * kernel output. Not built by meson; run:
 *
 *   clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iengine -I/usr/include/cjson \
 *         tests/fuzz/fuzz_event.c engine/event.c engine/reason.c engine/util.c -lcjson \
 *         -o fuzz_event
 *   ./fuzz_event -max_len=4096
 *
 * The unit test events/decode_fuzz runs a fixed mutation sweep of the same function in CI.
 */
#include <stddef.h>
#include <stdint.h>

#include "event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode one input; the sanitizers judge. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	event_decode(&st, (const char *)data, size, 1, &ev);
	event_store_release(&st);
	return 0;
}
