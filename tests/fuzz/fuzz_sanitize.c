/*
 * libFuzzer target: the sanitiser (sanitize_feed), which stands between kernel text and the
 * terminal. The first byte picks the flags and where the input is cut in two (a sequence split
 * across chunks must still be recognised). Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sanitize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether `out` holds only text, \n \t \r, and (when kept) complete SGR sequences. */
static int safe(const struct strbuf *out, int keep_sgr)
{
	for (size_t i = 0; i < out->len; i++) {
		unsigned char c = (unsigned char)out->buf[i];

		if (c == 0x1b) {
			size_t j = i + 1;

			if (!keep_sgr || j >= out->len || out->buf[j] != '[')
				return 0;
			for (j++; j < out->len && ((out->buf[j] >= '0' && out->buf[j] <= '9') ||
						   out->buf[j] == ';' || out->buf[j] == ':'); j++)
				;
			if (j >= out->len || out->buf[j] != 'm')
				return 0;
			i = j;
		} else if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
			return 0;
		}
	}
	return 1;
}

/* Feed the input in two chunks; the output must be safe to show. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sanitizer san;
	struct strbuf out = STRBUF_INIT;
	unsigned flags;
	size_t cut;

	if (!size)
		return 0;
	flags = data[0] & 1 ? SAN_KEEP_SGR : 0;
	data++, size--;
	cut = size ? (size_t)data[0] * size / 256 : 0;
	sanitize_init(&san, flags);
	sanitize_feed(&san, (const char *)data, cut, &out);
	sanitize_feed(&san, (const char *)data + cut, size - cut, &out);
	if (!safe(&out, flags & SAN_KEEP_SGR))
		abort();
	sanitize_release(&san);
	strbuf_release(&out);
	return 0;
}
