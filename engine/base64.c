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

/* Append the bytes `len` characters of base64 stand for; -1 at anything that is not base64. */
int base64_decode(const char *text, size_t len, struct strbuf *out)
{
	unsigned acc = 0;
	int bits = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		int c = (unsigned char)text[i], v;

		if (c == '=')
			break;
		v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 :
		    c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' ? 62 : c == '/' ? 63 : -1;
		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (strbuf_addch(out, (int)((acc >> bits) & 0xff)) < 0)
				return -1;
		}
	}
	for (; i < len; i++)
		if (text[i] != '=')
			return -1;
	return 0;
}
