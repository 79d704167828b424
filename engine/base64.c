#include "base64.h"

#include "strbuf.h"

/* Append the base64 encoding of `len` bytes. */
void base64_encode(const void *data, size_t len, struct strbuf *out)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	size_t i;

	strbuf_grow(out, (len + 2) / 3 * 4);
	for (i = 0; i + 2 < len; i += 3) {
		char q[4] = { tbl[p[i] >> 2], tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
			      tbl[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)], tbl[p[i + 2] & 63] };
		strbuf_add(out, q, 4);
	}
	if (i < len) {
		char q[4] = { tbl[p[i] >> 2], 0, '=', '=' };
		if (i + 1 < len) {
			q[1] = tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			q[2] = tbl[(p[i + 1] & 15) << 2];
		} else {
			q[1] = tbl[(p[i] & 3) << 4];
		}
		strbuf_add(out, q, 4);
	}
}
