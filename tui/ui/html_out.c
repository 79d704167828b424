/*
 * The lines html.c and html_table.c write (counted against HTML_MAX_LINES, the reader's SGR
 * around them) and the columns their text takes.
 */
#include "html_int.h"


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
