/*
 * libFuzzer target: a named session's checkpoint file as `cellbox restore` reads it
 * (named_checkpoint_parse: the JSON, its version and kind, the cells' types, UTF-8 and caps).
 * Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "named.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What it accepts is within the caps, every cell valid text; what it refuses it says why. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT;
	struct named_ckpt ck;
	size_t bytes = 0;

	if (named_checkpoint_parse((const char *)data, size, "fuzz", &ck, &err) < 0) {
		if (!err.len || ck.code || ck.ncells)
			abort();
	} else {
		if (ck.ncells > NAMED_RERUN_CELLS || (ck.name && !named_name_ok(ck.name)))
			abort();
		for (size_t i = 0; i < ck.ncells; i++) {
			bytes += strlen(ck.code[i]);
			if (!utf8_valid(ck.code[i], strlen(ck.code[i]), NULL))
				abort();
		}
		if (bytes > NAMED_RERUN_BYTES || ck.code[ck.ncells])
			abort();
		named_checkpoint_free(&ck);
	}
	strbuf_release(&err);
	return 0;
}
