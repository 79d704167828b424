/*
 * libFuzzer target: papermill's parameter files (nbparams_load_yaml: libyaml's events, PyYAML's
 * resolvers, the caps), then the cell's text for Python and R. Built with -Dfuzz=true; run by
 * scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nbparams.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The text as a parameters file; what it gives must write one line a parameter. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct nbparam p;

	nbparams_init(&p);
	if (nbparams_load_yaml(&p, (const char *)data, size, "fuzz", &err) < 0) {
		if (strncmp(err.buf, "fuzz", 4))
			abort();	/* every error names the file */
	} else {
		for (int r = 0; r < 2; r++) {
			size_t lines = 0;

			strbuf_reset(&out);
			if (nbparams_codify(&p, r ? "R" : "python", &out, &err) < 0)
				abort();
			for (size_t i = 0; i < out.len; i++)
				lines += out.buf[i] == '\n';
			if (lines != p.n + 1)
				abort();	/* a value broke out of its line */
		}
		cJSON_Delete(nbparams_json(&p));
	}
	nbparams_release(&p);
	strbuf_release(&err);
	strbuf_release(&out);
	return 0;
}
