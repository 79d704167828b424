/*
 * libFuzzer target: the percent-format reader (cellfile_parse_percent), for cell files from
 * anyone. What it reads is written back and read again. Built with -Dfuzz=true; run by
 * scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cellfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse, write, parse again: what we wrote must read. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *nb = cellfile_parse_percent((const char *)data, size), *again;
	struct strbuf text = STRBUF_INIT;

	if (!nb)
		return 0;
	cellfile_write_percent(nb, &text);
	again = cellfile_parse_percent(text.buf, text.len);
	if (!again)
		abort();
	cJSON_Delete(again);
	cJSON_Delete(nb);
	strbuf_release(&text);
	return 0;
}
