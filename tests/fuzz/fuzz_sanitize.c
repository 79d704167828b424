/*
 * libFuzzer target: the sanitiser (sanitize_feed), which stands between every outside text and
 * the terminal. The first byte picks the flags and where the input is cut in two (a sequence
 * or a character split across chunks must still be recognised). Built with -Dfuzz=true; run
 * by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sanitize.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Whether `out` is valid UTF-8 holding only text, \n \t (\r unless SAN_NO_CR), and (when
 * kept) complete SGR sequences: no other ESC, no C0 or DEL, no C1 control in either encoding
 * (a raw 0x80..0x9f byte would make it invalid UTF-8; U+0080..U+009F is C2 80..9F).
 */
static int safe(const struct strbuf *out, unsigned flags)
{
	if (!utf8_valid(out->buf, out->len, NULL))
		return 0;
	for (size_t i = 0; i < out->len; i++) {
		unsigned char c = (unsigned char)out->buf[i];

		if (c == 0x1b) {
			size_t j = i + 1;

			if (!(flags & SAN_KEEP_SGR) || j >= out->len || out->buf[j] != '[')
				return 0;
			for (j++; j < out->len && ((out->buf[j] >= '0' && out->buf[j] <= '9') ||
						   out->buf[j] == ';' || out->buf[j] == ':'); j++)
				;
			if (j >= out->len || out->buf[j] != 'm')
				return 0;
			i = j;
		} else if (c == '\r') {
			if (flags & SAN_NO_CR)
				return 0;
		} else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
			return 0;
		} else if (c == 0xc2 && i + 1 < out->len &&
			   (unsigned char)out->buf[i + 1] <= 0x9f) {
			return 0;
		}
	}
	return 1;
}

/* Feed the input in two chunks; the output must be safe to show, and stay so when finished. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sanitizer san;
	struct strbuf out = STRBUF_INIT;
	unsigned flags;
	size_t cut;

	if (!size)
		return 0;
	flags = (data[0] & 1 ? SAN_KEEP_SGR : 0) | (data[0] & 2 ? SAN_NO_CR : 0);
	data++, size--;
	cut = size ? (size_t)data[0] * size / 256 : 0;
	sanitize_init(&san, flags);
	sanitize_feed(&san, (const char *)data, cut, &out);
	sanitize_feed(&san, (const char *)data + cut, size - cut, &out);
	sanitize_finish(&san, &out);
	if (!safe(&out, flags))
		abort();
	/* Clean text passes unchanged: sanitising the output again gives it back. */
	if (!(flags & SAN_KEEP_SGR) && !sanitize_is_clean(out.buf, out.len, flags))
		abort();
	sanitize_release(&san);
	strbuf_release(&out);
	return 0;
}
