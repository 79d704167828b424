/* The editor buffer: text and cursor of the cell being written. */
#include "edbuf.h"

#include <stdlib.h>
#include <string.h>

/* Whether byte `c` continues a UTF-8 sequence. */
static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

void edbuf_init(struct edbuf *e)
{
	strbuf_init(&e->text, 64);
	e->cur = 0;
	e->goal = -1;
	e->indent = "    ";
	e->openers = ":";
}

void edbuf_release(struct edbuf *e)
{
	strbuf_release(&e->text);
	e->cur = 0;
}

void edbuf_set(struct edbuf *e, const char *text)
{
	strbuf_reset(&e->text);
	strbuf_addstr(&e->text, text);
	e->cur = e->text.len;
	e->goal = -1;
}

int edbuf_insert(struct edbuf *e, const char *s, size_t len)
{
	if (e->text.len + len > EDBUF_MAX || strbuf_grow(&e->text, len) < 0)
		return -1;
	memmove(e->text.buf + e->cur + len, e->text.buf + e->cur, e->text.len - e->cur + 1);
	memcpy(e->text.buf + e->cur, s, len);
	e->text.len += len;
	e->cur += len;
	e->goal = -1;
	return 0;
}

/* Delete bytes [from, to). */
static void erase(struct edbuf *e, size_t from, size_t to)
{
	memmove(e->text.buf + from, e->text.buf + to, e->text.len - to + 1);
	e->text.len -= to - from;
	if (e->cur >= to)
		e->cur -= to - from;
	else if (e->cur > from)
		e->cur = from;
	e->goal = -1;
}

/* Start of the line holding byte `pos`. */
static size_t bol(const struct edbuf *e, size_t pos)
{
	while (pos > 0 && e->text.buf[pos - 1] != '\n')
		pos--;
	return pos;
}

/* End of the line holding byte `pos` (its '\n' or the end of the text). */
static size_t eol(const struct edbuf *e, size_t pos)
{
	const char *nl = memchr(e->text.buf + pos, '\n', e->text.len - pos);
	return nl ? (size_t)(nl - e->text.buf) : e->text.len;
}

void edbuf_newline(struct edbuf *e, int autoindent)
{
	size_t start = bol(e, e->cur), n = 0, end = e->cur;
	struct strbuf ins = STRBUF_INIT;

	strbuf_addch(&ins, '\n');
	if (autoindent) {
		while (start + n < e->cur && (e->text.buf[start + n] == ' ' ||
					      e->text.buf[start + n] == '\t'))
			n++;
		strbuf_add(&ins, e->text.buf + start, n);
		while (end > start && (e->text.buf[end - 1] == ' ' || e->text.buf[end - 1] == '\t'))
			end--;
		if (end > start && e->text.buf[end - 1] && strchr(e->openers, e->text.buf[end - 1]))
			strbuf_addstr(&ins, e->indent);
	}
	edbuf_insert(e, ins.buf, ins.len);
	strbuf_release(&ins);
}

int edbuf_backspace(struct edbuf *e)
{
	size_t start = bol(e, e->cur), p = e->cur;

	if (!e->cur)
		return 0;
	if (p > start && e->text.buf[p - 1] == ' ') {
		size_t sp = 0;
		while (start + sp < p && e->text.buf[start + sp] == ' ')
			sp++;
		if (start + sp == p) {	/* only spaces before the cursor: drop one level */
			size_t unit = strlen(e->indent) ? strlen(e->indent) : 1;
			size_t drop = sp % unit ? sp % unit : unit;
			erase(e, p - drop, p);
			return 1;
		}
	}
	p--;
	while (p > 0 && is_cont((unsigned char)e->text.buf[p]))
		p--;
	erase(e, p, e->cur);
	return 1;
}

int edbuf_delete(struct edbuf *e)
{
	size_t p = e->cur;

	if (p >= e->text.len)
		return 0;
	p++;
	while (p < e->text.len && is_cont((unsigned char)e->text.buf[p]))
		p++;
	erase(e, e->cur, p);
	return 1;
}

int edbuf_left(struct edbuf *e)
{
	if (!e->cur)
		return 0;
	e->cur--;
	while (e->cur > 0 && is_cont((unsigned char)e->text.buf[e->cur]))
		e->cur--;
	e->goal = -1;
	return 1;
}

int edbuf_right(struct edbuf *e)
{
	if (e->cur >= e->text.len)
		return 0;
	e->cur++;
	while (e->cur < e->text.len && is_cont((unsigned char)e->text.buf[e->cur]))
		e->cur++;
	e->goal = -1;
	return 1;
}

/* Code points between byte offsets a and b. */
static size_t cps(const char *s, size_t a, size_t b)
{
	size_t n = 0;

	for (size_t i = a; i < b; i++)
		n += !is_cont((unsigned char)s[i]);
	return n;
}

/* Put the cursor at column `col` of the line starting at `start`, or its end. */
static void goto_col(struct edbuf *e, size_t start, size_t col)
{
	size_t end = eol(e, start), p = start;

	while (p < end && col > 0) {
		p++;
		while (p < end && is_cont((unsigned char)e->text.buf[p]))
			p++;
		col--;
	}
	e->cur = p;
}

int edbuf_up(struct edbuf *e)
{
	size_t start = bol(e, e->cur);
	long goal = e->goal >= 0 ? e->goal : (long)edbuf_col(e);

	if (!start)
		return 0;
	goto_col(e, bol(e, start - 1), (size_t)goal);
	e->goal = goal;
	return 1;
}

int edbuf_down(struct edbuf *e)
{
	size_t end = eol(e, e->cur);
	long goal = e->goal >= 0 ? e->goal : (long)edbuf_col(e);

	if (end >= e->text.len)
		return 0;
	goto_col(e, end + 1, (size_t)goal);
	e->goal = goal;
	return 1;
}

void edbuf_home(struct edbuf *e)
{
	e->cur = bol(e, e->cur);
	e->goal = -1;
}

void edbuf_end(struct edbuf *e)
{
	e->cur = eol(e, e->cur);
	e->goal = -1;
}

void edbuf_kill_right(struct edbuf *e)
{
	size_t end = eol(e, e->cur);

	if (end == e->cur && end < e->text.len)
		end++;		/* at the end of a line: join the next one */
	erase(e, e->cur, end);
}

void edbuf_kill_left(struct edbuf *e)
{
	erase(e, bol(e, e->cur), e->cur);
}

size_t edbuf_line(const struct edbuf *e)
{
	size_t n = 0;

	for (size_t i = 0; i < e->cur; i++)
		n += e->text.buf[i] == '\n';
	return n;
}

size_t edbuf_col(const struct edbuf *e)
{
	return cps(e->text.buf, bol(e, e->cur), e->cur);
}

size_t edbuf_lines(const struct edbuf *e)
{
	size_t n = 1;

	for (size_t i = 0; i < e->text.len; i++)
		n += e->text.buf[i] == '\n';
	return n;
}

size_t edbuf_line_start(const struct edbuf *e, size_t n)
{
	size_t p = 0;

	while (n > 0) {
		const char *nl = memchr(e->text.buf + p, '\n', e->text.len - p);
		if (!nl)
			return e->text.len;
		p = (size_t)(nl - e->text.buf) + 1;
		n--;
	}
	return p;
}

size_t edbuf_cursor_cp(const struct edbuf *e)
{
	return cps(e->text.buf, 0, e->cur);
}

size_t edbuf_cp_to_byte(const struct edbuf *e, size_t cp)
{
	size_t p = 0;

	while (p < e->text.len && cp > 0) {
		p++;
		while (p < e->text.len && is_cont((unsigned char)e->text.buf[p]))
			p++;
		cp--;
	}
	return p;
}

void edbuf_replace(struct edbuf *e, size_t from, size_t to, const char *s)
{
	if (to > e->text.len)
		to = e->text.len;
	if (from > to)
		from = to;
	erase(e, from, to);
	e->cur = from;
	edbuf_insert(e, s, strlen(s));
}

long edbuf_match_bracket(const struct edbuf *e, long *at)
{
	static const char open[] = "([{", close[] = ")]}";
	const char *s = e->text.buf;
	long pos = -1;
	int dir, depth = 0;
	char c, want;

	if (e->cur < e->text.len && strchr("()[]{}", s[e->cur]))
		pos = (long)e->cur;
	else if (e->cur > 0 && strchr("()[]{}", s[e->cur - 1]))
		pos = (long)e->cur - 1;
	if (at)
		*at = pos;
	if (pos < 0)
		return -1;
	c = s[pos];
	if (strchr(open, c)) {
		dir = 1;
		want = close[strchr(open, c) - open];
	} else {
		dir = -1;
		want = open[strchr(close, c) - close];
	}
	for (long i = pos; i >= 0 && i < (long)e->text.len; i += dir) {
		if (s[i] == c)
			depth++;
		else if (s[i] == want && --depth == 0)
			return i;
	}
	return -1;
}
