/*
 * libFuzzer target: the notebook reader (cellfile_parse_ipynb). A notebook it accepts is
 * written as nbformat does and must read back. Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cellfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read; what was accepted is written and read again. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	cJSON *nb = cellfile_parse_ipynb((const char *)data, size, "fuzz.ipynb", &err), *again;

	if (nb) {
		cellfile_write_ipynb(nb, &text);
		strbuf_reset(&err);
		again = cellfile_parse_ipynb(text.buf, text.len, "again.ipynb", &err);
		if (!again)
			abort();	/* we wrote a notebook we cannot read */
		cJSON_Delete(again);
		cJSON_Delete(nb);
	} else if (!err.len) {
		abort();		/* refused without saying why */
	}
	strbuf_release(&err);
	strbuf_release(&text);
	return 0;
}
