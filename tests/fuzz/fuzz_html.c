/*
 * libFuzzer target: the HTML reader (html_render, html_has_table), which draws a kernel's
 * text/html outputs. The first byte picks the width (20 to 147 columns, its low bit HTML_SGR);
 * the rest is the HTML. What comes out must be clean text (the sanitiser's own check: no
 * escape but the reader's SGR, no control but newline), within the line cap. Built with
 * -Dfuzz=true.
 */
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "sanitize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	struct strbuf out = STRBUF_INIT;
	unsigned flags;
	size_t lines = 0;
	char *src;

	if (!init) {
		setlocale(LC_ALL, "C.UTF-8");
		init = 1;
	}
	if (size < 1)
		return 0;
	flags = data[0] & 1 ? HTML_SGR : 0;
	src = malloc(size);	/* not NUL-terminated: the reader goes by the length */
	memcpy(src, data + 1, size - 1);
	html_render(src, size - 1, 20 + (data[0] >> 1), flags, &out);
	(void)html_has_table(src, size - 1);
	if (!sanitize_is_clean(out.buf, out.len, SAN_NO_CR | (flags ? SAN_KEEP_SGR : 0)))
		abort();
	for (size_t i = 0; i < out.len; i++)
		lines += out.buf[i] == '\n';
	if (lines > HTML_MAX_LINES + 3)
		abort();
	strbuf_release(&out);
	free(src);
	return 0;
}
