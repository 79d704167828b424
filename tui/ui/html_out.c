/*
 * The lines html.c and html_table.c write (counted against HTML_MAX_LINES, the reader's SGR
 * around them) and the columns their text takes.
 */
#include "html_int.h"

#include <wchar.h>

void html_out_line(struct html_out *o, const char *s, size_t len, const char *sgr)
{
	if (o->full)
		return;
	if (o->lines >= HTML_MAX_LINES) {
		o->full = 1;
		strbuf_addf(o->out, "[html: more than %d lines; the rest is not shown]\n",
			    HTML_MAX_LINES);
		return;
	}
	if (sgr && (o->flags & HTML_SGR) && len)
		strbuf_addf(o->out, "\x1b[%sm", sgr);
	strbuf_add(o->out, s, len);
	if (sgr && (o->flags & HTML_SGR) && len)
		strbuf_addstr(o->out, "\x1b[0m");
	strbuf_addch(o->out, '\n');
	o->lines++;
	o->last_blank = len == 0;
}

size_t html_char(const char *s, size_t len, int *w)
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
				*w = 1;
				return 1;
			}
			wc = (wc << 6) | (u[i] & 0x3f);
		}
	}
	cw = wcwidth(wc);
	*w = cw < 0 ? 1 : cw;
	return n;
}

int html_columns(const char *s, size_t len)
{
	int cols = 0, w;

	for (size_t i = 0; i < len;) {
		i += html_char(s + i, len - i, &w);
		cols += w;
	}
	return cols;
}
