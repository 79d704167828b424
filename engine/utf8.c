#include "utf8.h"

#include <string.h>
#include <wchar.h>

#include "strbuf.h"

/* Find the first byte of `str` that is not valid UTF-8. */
int utf8_valid(const char *str, size_t len, size_t *bad)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t need;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			goto invalid;
		}
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				goto invalid;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			goto invalid;
		i += need + 1;
	}
	return 1;
invalid:
	if (bad)
		*bad = i;
	return 0;
}

/* Check that what was read from `name` is text. */
int utf8_check_text(const char *s, size_t len, const char *name, struct strbuf *err)
{
	size_t bad;

	if (memchr(s, '\0', len)) {
		strbuf_addf(err, "'%s' is not a text file (it contains NUL bytes)", name);
		return -1;
	}
	if (!utf8_valid(s, len, &bad)) {
		strbuf_addf(err, "'%s' is not valid UTF-8 (byte 0x%02x at offset %zu)", name,
			    (unsigned char)s[bad], bad);
		return -1;
	}
	return 0;
}

size_t utf8_char(const char *s, size_t len, int *cols)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = u[0] < 0x80 ? 1 : u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 1;
	wchar_t wc = u[0];
	int cw;

	if (n > len)
		n = 1;
	if (n > 1) {
		wc = u[0] & (0x7f >> n);
		for (size_t i = 1; i < n; i++) {
			if ((u[i] & 0xc0) != 0x80) {
				*cols = 1;
				return 1;
			}
			wc = (wc << 6) | (u[i] & 0x3f);
		}
	}
	cw = wcwidth(wc);
	*cols = wc < 0x20 || cw < 0 ? 1 : cw;
	return n;
}

int utf8_columns(const char *s, size_t len)
{
	int cols = 0, w;

	for (size_t i = 0; i < len;)
		i += utf8_char(s + i, len - i, &w), cols += w;
	return cols;
}
