/* The editor buffer: text and cursor of the cell being written. */
#include "edbuf.h"
#include "edbuf_int.h"

#include <stdlib.h>
#include <string.h>

/* Whether byte `c` continues a UTF-8 sequence. */
static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* ---- undo and redo (the steps: edbuf_undo.c) ---- */

/* A change of `kind` is about to be made: save the text unless it continues the last one. */
static void save(struct edbuf *e, int kind)
{
	if (kind == G_OTHER || kind != e->group || e->cur != e->group_at)
		edbuf_steps_push(&e->undo, e);
	edbuf_steps_clear(&e->redo);
	e->group = kind;
	e->anchor = -1;		/* a change ends the selection */
}

/* The change is made: the next of its kind continues it if the cursor stays here. */
static void changed(struct edbuf *e)
{
	e->group_at = e->cur;
}

/* ---- the text ---- */

void edbuf_init(struct edbuf *e)
{
	memset(e, 0, sizeof(*e));
	strbuf_init(&e->text, 64);
	e->goal = -1;
	e->anchor = -1;
	e->indent = "    ";
	e->openers = ":";
}

void edbuf_release(struct edbuf *e)
{
	strbuf_release(&e->text);
	edbuf_steps_clear(&e->undo);
	edbuf_steps_clear(&e->redo);
	e->cur = 0;
	e->group = G_NONE;
}

void edbuf_set(struct edbuf *e, const char *text)
{
	if (!strcmp(text, e->text.buf) && e->cur == e->text.len)
		return;
	save(e, G_OTHER);
	strbuf_reset(&e->text);
	strbuf_addstr(&e->text, text);
	e->cur = e->text.len;
	e->goal = -1;
	changed(e);
}

void edbuf_load(struct edbuf *e, const char *text)
{
	edbuf_steps_clear(&e->undo);
	edbuf_steps_clear(&e->redo);
	strbuf_reset(&e->text);
	strbuf_addstr(&e->text, text);
	e->cur = e->text.len;
	e->goal = -1;
	e->group = G_NONE;
	e->anchor = -1;
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

/*
 * An edit at a selection: save the text (always a step of its own, which typing after it
 * continues as `kind`) and delete the selection. 0 when there is none.
 */
static int take_selection(struct edbuf *e, int kind)
{
	size_t from, to;

	if (!edbuf_selection(e, &from, &to)) {
		e->anchor = -1;
		return 0;
	}
	save(e, G_OTHER);
	e->group = kind;
	erase(e, from, to);
	return 1;
}

void edbuf_mark(struct edbuf *e)
{
	if (e->anchor < 0)
		e->anchor = (long)e->cur;
}

void edbuf_unmark(struct edbuf *e)
{
	e->anchor = -1;
}

int edbuf_selection(const struct edbuf *e, size_t *from, size_t *to)
{
	size_t a = (size_t)e->anchor;

	if (e->anchor < 0 || a > e->text.len || a == e->cur)
		return 0;
	*from = a < e->cur ? a : e->cur;
	*to = a < e->cur ? e->cur : a;
	return 1;
}

/* Keep bytes [from, to) as the last kill. */
static void killed(struct edbuf *e, size_t from, size_t to)
{
	if (!e->kills)
		return;
	strbuf_reset(e->kills);
	strbuf_add(e->kills, e->text.buf + from, to - from);
}

int edbuf_cut_selection(struct edbuf *e)
{
	size_t from, to;

	if (!edbuf_selection(e, &from, &to))
		return 0;
	killed(e, from, to);
	take_selection(e, G_OTHER);
	changed(e);
	return 1;
}

/* Insert bytes at the cursor, no undo step of its own. */
static int insert(struct edbuf *e, const char *s, size_t len)
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

int edbuf_insert(struct edbuf *e, const char *s, size_t len)
{
	/* One character typed continues the word being typed; anything else is a step. */
	int typed = len && len <= 4 && s[0] != '\n' && !is_cont((unsigned char)s[0]);

	for (size_t i = 1; typed && i < len; i++)
		typed = is_cont((unsigned char)s[i]);
	if (!len)
		return 0;
	if (e->text.len + len > EDBUF_MAX)
		return -1;
	if (!take_selection(e, typed ? G_TYPE : G_OTHER))
		save(e, typed ? G_TYPE : G_OTHER);
	if (insert(e, s, len) < 0)
		return -1;
	changed(e);
	return 0;
}

/* Delete bytes [from, to) as one undo step (nothing when they are none). */
static void cut_range(struct edbuf *e, size_t from, size_t to)
{
	if (from >= to)
		return;
	killed(e, from, to);
	save(e, G_OTHER);
	erase(e, from, to);
	changed(e);
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
	int took = take_selection(e, G_OTHER);
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
	if (e->text.len + ins.len <= EDBUF_MAX) {
		if (!took)
			save(e, G_OTHER);
		insert(e, ins.buf, ins.len);
		changed(e);
	}
	strbuf_release(&ins);
}

int edbuf_backspace(struct edbuf *e)
{
	size_t start = bol(e, e->cur), p = e->cur;

	if (take_selection(e, G_OTHER)) {
		changed(e);
		return 1;
	}
	if (!e->cur)
		return 0;
	if (p > start && e->text.buf[p - 1] == ' ') {
		size_t sp = 0;
		while (start + sp < p && e->text.buf[start + sp] == ' ')
			sp++;
		if (start + sp == p) {	/* only spaces before the cursor: drop one level */
			size_t unit = strlen(e->indent) ? strlen(e->indent) : 1;
			size_t drop = sp % unit ? sp % unit : unit;
			save(e, G_BACKSPACE);
			erase(e, p - drop, p);
			changed(e);
			return 1;
		}
	}
	p--;
	while (p > 0 && is_cont((unsigned char)e->text.buf[p]))
		p--;
	save(e, G_BACKSPACE);
	erase(e, p, e->cur);
	changed(e);
	return 1;
}

int edbuf_delete(struct edbuf *e)
{
	size_t p = e->cur;

	if (take_selection(e, G_OTHER)) {
		changed(e);
		return 1;
	}
	if (p >= e->text.len)
		return 0;
	p++;
	while (p < e->text.len && is_cont((unsigned char)e->text.buf[p]))
		p++;
	save(e, G_DELETE);
	erase(e, e->cur, p);
	changed(e);
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
	cut_range(e, e->cur, end);
}

void edbuf_kill_left(struct edbuf *e)
{
	cut_range(e, bol(e, e->cur), e->cur);
}

/* Whether byte `c` is part of a word (a multibyte character's bytes are). */
static int is_word(unsigned char c)
{
	return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' &&
								   (c | 0x20) <= 'z');
}

static int is_blank(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* The start of the word before `p` (of the blank-delimited one with `bigword`). */
static size_t word_start(const struct edbuf *e, size_t p, int bigword)
{
	const unsigned char *s = (const unsigned char *)e->text.buf;

	while (p > 0 && (bigword ? is_blank(s[p - 1]) : !is_word(s[p - 1])))
		p--;
	while (p > 0 && (bigword ? !is_blank(s[p - 1]) : is_word(s[p - 1])))
		p--;
	return p;
}

/* The end of the word after `p`. */
static size_t word_end(const struct edbuf *e, size_t p)
{
	const unsigned char *s = (const unsigned char *)e->text.buf;

	while (p < e->text.len && !is_word(s[p]))
		p++;
	while (p < e->text.len && is_word(s[p]))
		p++;
	return p;
}

int edbuf_word_left(struct edbuf *e)
{
	size_t p = word_start(e, e->cur, 0);

	if (p == e->cur)
		return 0;
	e->cur = p;
	e->goal = -1;
	return 1;
}

int edbuf_word_right(struct edbuf *e)
{
	size_t p = word_end(e, e->cur);

	if (p == e->cur)
		return 0;
	e->cur = p;
	e->goal = -1;
	return 1;
}

int edbuf_kill_word_left(struct edbuf *e, int bigword)
{
	size_t p = word_start(e, e->cur, bigword);

	if (p == e->cur)
		return 0;
	cut_range(e, p, e->cur);
	return 1;
}

int edbuf_kill_word_right(struct edbuf *e)
{
	size_t p = word_end(e, e->cur);

	if (p == e->cur)
		return 0;
	cut_range(e, e->cur, p);
	return 1;
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
	if (e->text.len - (to - from) + strlen(s) > EDBUF_MAX)
		return;
	save(e, G_OTHER);
	erase(e, from, to);
	e->cur = from;
	insert(e, s, strlen(s));
	changed(e);
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
