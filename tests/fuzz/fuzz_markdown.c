/*
 * libFuzzer target: the markdown renderer (markdown_render), which draws a notebook file's
 * markdown cells and a kernel's text/markdown outputs. The first byte picks the width (8 to
 * 263 columns); the rest is the source. Every run it reports must lie inside the source's
 * bytes or be its own, and be non-empty text without a NUL. Built with -Dfuzz=true.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "markdown.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each run's bytes are read in full: ASan sees a run that reaches past its memory. */
static void check_run(void *ctx, const char *s, size_t len, unsigned style)
{
	size_t *total = ctx;

	(void)style;
	if (!s)
		return;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\0')
			abort();
	*total += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t total = 0;
	char *src;

	if (size < 1)
		return 0;
	src = malloc(size);
	memcpy(src, data + 1, size - 1);
	src[size - 1] = '\0';
	markdown_render(src, 8 + data[0], check_run, &total);
	free(src);
	return 0;
}
