/* The cell editor's vi mode: the command table, motions and operators on the text (vi.h). */
#include "vi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_MOTION = 1, K_OPERATOR, K_COMMAND };
enum motion { M_LEFT = 1, M_RIGHT, M_DOWN, M_UP, M_WORD, M_BACK, M_END, M_BOL, M_FIRST, M_EOL,
	      M_TOP, M_BOTTOM };
enum operator { O_DELETE = 1, O_CHANGE, O_YANK };
enum command { C_INSERT = 1, C_APPEND, C_INSERT_FIRST, C_APPEND_EOL, C_OPEN_BELOW, C_OPEN_ABOVE,
	       C_DELETE_CHAR, C_DELETE_EOL, C_CHANGE_EOL, C_PUT, C_PUT_BEFORE, C_UNDO, C_REDO,
	       C_RUN };

/* A row of the table: the keys typed, how F1 writes them (NULL: as typed), what they do. */
struct vi_cmd {
	const char *keys, *shown;
	enum kind kind;
	int what;
	const char *help;
};

/* Normal mode's commands, in the order F1 lists them. */
static const struct vi_cmd vi_cmds[] = {
	{ "i", NULL, K_COMMAND, C_INSERT, "insert mode before the cursor (Esc: normal mode)" },
	{ "a", NULL, K_COMMAND, C_APPEND, "insert after the cursor" },
	{ "I", NULL, K_COMMAND, C_INSERT_FIRST, "insert at the line's first non-blank" },
	{ "A", NULL, K_COMMAND, C_APPEND_EOL, "insert at the end of the line" },
	{ "o", NULL, K_COMMAND, C_OPEN_BELOW, "a new line below, in insert mode" },
	{ "O", NULL, K_COMMAND, C_OPEN_ABOVE, "a new line above, in insert mode" },
	{ "h", NULL, K_MOTION, M_LEFT, "left (a count before any motion: 3l)" },
	{ "l", NULL, K_MOTION, M_RIGHT, "right" },
	{ "j", NULL, K_MOTION, M_DOWN, "down a line" },
	{ "k", NULL, K_MOTION, M_UP, "up a line" },
	{ "w", NULL, K_MOTION, M_WORD, "the next word's start" },
	{ "b", NULL, K_MOTION, M_BACK, "back to a word's start" },
	{ "e", NULL, K_MOTION, M_END, "the end of a word" },
	{ "0", NULL, K_MOTION, M_BOL, "the start of the line" },
	{ "^", NULL, K_MOTION, M_FIRST, "the line's first non-blank" },
	{ "$", NULL, K_MOTION, M_EOL, "the end of the line" },
	{ "gg", NULL, K_MOTION, M_TOP, "the first line (N gg: line N)" },
	{ "G", NULL, K_MOTION, M_BOTTOM, "the last line (N G: line N)" },
	{ "d", NULL, K_OPERATOR, O_DELETE, "delete to where a motion goes: dw, d$, 2dd (lines)" },
	{ "c", NULL, K_OPERATOR, O_CHANGE, "change (delete, then insert): cw, c$, cc (the line)" },
	{ "y", NULL, K_OPERATOR, O_YANK, "copy (to the terminal's too, as Alt-W): yw, yy (lines)" },
	{ "x", NULL, K_COMMAND, C_DELETE_CHAR, "delete the character under the cursor" },
	{ "D", NULL, K_COMMAND, C_DELETE_EOL, "delete to the end of the line (d$)" },
	{ "C", NULL, K_COMMAND, C_CHANGE_EOL, "change to the end of the line (c$)" },
	{ "p", NULL, K_COMMAND, C_PUT, "paste after the cursor (lines: below)" },
	{ "P", NULL, K_COMMAND, C_PUT_BEFORE, "paste before the cursor (lines: above)" },
	{ "u", NULL, K_COMMAND, C_UNDO, "undo" },
	{ "\x12", "Ctrl-R", K_COMMAND, C_REDO, "redo" },
	{ "\r", "Enter", K_COMMAND, C_RUN, "run the cell (Shift-, Alt-Enter as in insert mode)" },
};

/* ---- the text ---- */

static int is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* Start of the line holding byte `p`. */
static size_t bol(const struct edbuf *e, size_t p)
{
	while (p > 0 && e->text.buf[p - 1] != '\n')
		p--;
	return p;
}

/* End of the line holding byte `p` (its '\n' or the end of the text). */
static size_t eol(const struct edbuf *e, size_t p)
{
	const char *nl = memchr(e->text.buf + p, '\n', e->text.len - p);

	return nl ? (size_t)(nl - e->text.buf) : e->text.len;
}

/* The character after / before the one at `p`. */
static size_t next(const struct edbuf *e, size_t p)
{
	if (p < e->text.len)
		for (p++; p < e->text.len && is_cont((unsigned char)e->text.buf[p]); p++)
			;
	return p;
}

static size_t prev(const struct edbuf *e, size_t p)
{
	if (p > 0)
		for (p--; p > 0 && is_cont((unsigned char)e->text.buf[p]); p--)
			;
	return p;
}

/* The first non-blank of the line holding `p` (its end when it is all blank). */
static size_t first_nonblank(const struct edbuf *e, size_t p)
{
	size_t end = eol(e, p);

	for (p = bol(e, p); p < end && (e->text.buf[p] == ' ' || e->text.buf[p] == '\t'); p++)
		;
	return p;
}

/* The class of the character at `p`, for words: 0 a blank, 1 a word's, 2 punctuation. */
static int cls(const struct edbuf *e, size_t p)
{
	unsigned char c = p < e->text.len ? (unsigned char)e->text.buf[p] : ' ';

	if (c == ' ' || c == '\t' || c == '\n')
		return 0;
	if (c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
		return 1;
	return 2;
}

/* Put the cursor at the start of line `n` (0-based, clamped to the last), on its first non-blank. */
static void goto_line(struct edbuf *e, size_t n)
{
	size_t lines = edbuf_lines(e);

	e->cur = first_nonblank(e, edbuf_line_start(e, n < lines ? n : lines - 1));
	e->goal = -1;
}

/* In normal mode the cursor sits on a character: not past a line's last one. */
static void clamp(struct edbuf *e)
{
	if (e->cur > e->text.len)
		e->cur = e->text.len;
	if (e->cur == eol(e, e->cur) && e->cur > bol(e, e->cur))
		e->cur = prev(e, e->cur);
}

/* ---- motions ---- */

/*
 * Move the cursor by motion `m`, `n` times (`counted`: a count was typed, for gg and G).
 * With `op` the motion is an operator's: l and $ may reach the end of the line.
 */
static void move(struct edbuf *e, int m, long n, int counted, int op)
{
	size_t p = e->cur, end = eol(e, p);

	if (m == M_DOWN || m == M_UP) {	/* edbuf keeps the column they aim for */
		for (long i = 0; i < n && (m == M_DOWN ? edbuf_down(e) : edbuf_up(e)); i++)
			;
		return;
	}
	for (long i = 0; i < n; i++) {
		switch (m) {
		case M_LEFT:
			if (p > bol(e, p))
				p = prev(e, p);
			break;
		case M_RIGHT:
			if (next(e, p) < end || (op && p < end))
				p = next(e, p);
			break;
		case M_WORD:
			for (int c = cls(e, p); c && p < e->text.len && cls(e, p) == c;)
				p = next(e, p);
			while (p < e->text.len && !cls(e, p))
				p = next(e, p);
			break;
		case M_BACK:
			if (!p)
				break;
			p = prev(e, p);
			while (p > 0 && !cls(e, p))
				p = prev(e, p);
			for (int c = cls(e, p); p > 0 && cls(e, prev(e, p)) == c;)
				p = prev(e, p);
			break;
		case M_END:
			p = next(e, p);
			while (p < e->text.len && !cls(e, p))
				p = next(e, p);
			for (int c = cls(e, p); next(e, p) < e->text.len && cls(e, next(e, p)) == c;)
				p = next(e, p);
			break;
		case M_EOL:		/* n$: the end of the line n - 1 below */
			p = i ? eol(e, next(e, eol(e, p))) : eol(e, p);
			break;
		}
	}
	e->goal = -1;
	if (m == M_BOL)
		p = bol(e, p);
	else if (m == M_FIRST)
		p = first_nonblank(e, p);
	e->cur = p;
	if (m == M_TOP)
		goto_line(e, counted ? (size_t)n - 1 : 0);
	else if (m == M_BOTTOM)
		goto_line(e, counted ? (size_t)n - 1 : edbuf_lines(e) - 1);
}

/* ---- operators and commands ---- */

/* Fill the register with bytes [from, to) (whole lines: `lines`, ending in '\n'). */
static void fill(struct vi *v, struct strbuf *reg, const struct edbuf *e, size_t from,
		 size_t to, int lines)
{
	strbuf_reset(reg);
	strbuf_add(reg, e->text.buf + from, to - from);
	if (lines && (!reg->len || reg->buf[reg->len - 1] != '\n'))
		strbuf_addch(reg, '\n');
	v->linewise = lines;
	v->reg_len = reg->len;
}

/*
 * Operator `op` from `start` to the cursor: characters (the one at the far end too with
 * `inclusive`) or whole lines (`lines`). Returns what the caller says of it.
 */
static enum vi_result apply(struct vi *v, struct edbuf *e, struct strbuf *reg, int op,
			    size_t start, int lines, int inclusive)
{
	size_t from = start < e->cur ? start : e->cur, to = start < e->cur ? e->cur : start;

	if (inclusive)
		to = next(e, to);
	if (lines) {
		from = bol(e, from);
		to = eol(e, to);
	}
	fill(v, reg, e, from, to, lines);
	if (op == O_YANK) {
		e->cur = lines ? start : from;
		return VI_YANKED;
	}
	if (lines && op == O_DELETE) {	/* the line's newline goes too (the one before, last) */
		if (to < e->text.len)
			to++;
		else if (from > 0)
			from--;
	}
	edbuf_replace(e, from, to, "");
	if (op == O_CHANGE) {
		v->mode = VI_INSERT;
		return VI_TAKEN;
	}
	if (lines)
		e->cur = first_nonblank(e, e->cur);
	return VI_TAKEN;
}

/* A motion after operator `op`: the range it covers, as vi has it. */
static enum vi_result operate(struct vi *v, struct edbuf *e, struct strbuf *reg, int op, int m,
			      long n, int counted)
{
	size_t start = e->cur;
	int inclusive = m == M_END, lines = m == M_DOWN || m == M_UP || m == M_TOP ||
					    m == M_BOTTOM;

	if (op == O_CHANGE && m == M_WORD && cls(e, start)) {
		size_t p = start;	/* cw: to the end of the word (vi's rule), n words */
		for (long i = 0; i < n; i++) {
			if (i)
				for (p = next(e, p); p < e->text.len && !cls(e, p); p = next(e, p))
					;
			for (int c = cls(e, p); next(e, p) < e->text.len && cls(e, next(e, p)) == c;)
				p = next(e, p);
		}
		e->cur = p;
		return apply(v, e, reg, op, start, 0, 1);
	}
	move(e, m, n, counted, 1);
	if (m == M_WORD && e->cur > eol(e, start) && eol(e, start) > start)
		e->cur = eol(e, start);	/* dw on a line's last word keeps the newline */
	if (m == M_END && e->cur >= e->text.len)
		inclusive = 0;
	if (e->cur == start && !lines && !inclusive)
		return VI_TAKEN;	/* it did not move: nothing to do */
	return apply(v, e, reg, op, start, lines, inclusive);
}

/* p / P: the register after or before the cursor (whole lines: below or above), `n` times. */
static void put(struct vi *v, struct edbuf *e, const struct strbuf *reg, int after, long n)
{
	int lines = v->linewise && v->reg_len == reg->len && reg->len && reg->buf[reg->len - 1] == '\n';
	struct strbuf s = STRBUF_INIT;
	size_t at;

	if (!reg->len) {
		v->msg = "nothing to paste (y, d or x fill the register)";
		return;
	}
	if ((size_t)n > EDBUF_MAX / reg->len) {
		v->msg = "the paste is too big for a cell";
		return;
	}
	if (lines && after) {	/* "\nline" n times after the line's end */
		for (long i = 0; i < n; i++) {
			strbuf_addch(&s, '\n');
			strbuf_add(&s, reg->buf, reg->len - 1);
		}
		at = eol(e, e->cur);
	} else {
		for (long i = 0; i < n; i++)
			strbuf_add(&s, reg->buf, reg->len);
		at = lines ? bol(e, e->cur) : after && e->cur < eol(e, e->cur) ? next(e, e->cur) : e->cur;
	}
	e->cur = at;
	if (edbuf_insert(e, s.buf, s.len) < 0)
		v->msg = "the paste is too big for a cell";
	else if (lines)
		e->cur = first_nonblank(e, after ? at + 1 : at);
	else
		e->cur = prev(e, e->cur);	/* on the last character pasted */
	strbuf_release(&s);
}

/* A command of normal mode. */
static enum vi_result command(struct vi *v, struct edbuf *e, struct strbuf *reg, int c, long n)
{
	size_t start = e->cur, end = eol(e, e->cur);

	switch (c) {
	case C_APPEND:
		if (e->cur < end)
			e->cur = next(e, e->cur);
		/* fall through */
	case C_INSERT:
		v->mode = VI_INSERT;
		break;
	case C_INSERT_FIRST:
		e->cur = first_nonblank(e, e->cur);
		v->mode = VI_INSERT;
		break;
	case C_APPEND_EOL:
		e->cur = end;
		v->mode = VI_INSERT;
		break;
	case C_OPEN_BELOW:
		e->cur = end;
		edbuf_newline(e, 1);
		v->mode = VI_INSERT;
		break;
	case C_OPEN_ABOVE: {
		size_t b = bol(e, e->cur), ind = first_nonblank(e, b) - b;
		char *line = xmalloc(ind + 2);

		memcpy(line, e->text.buf + b, ind);	/* the line's indent, then a newline */
		line[ind] = '\n';
		line[ind + 1] = '\0';
		e->cur = b;
		if (edbuf_insert(e, line, ind + 1) == 0)
			e->cur = b + ind;
		free(line);
		v->mode = VI_INSERT;
		break;
	}
	case C_DELETE_CHAR:
		for (long i = 0; i < n && e->cur < end; i++)
			e->cur = next(e, e->cur);
		if (e->cur == start)
			break;
		return apply(v, e, reg, O_DELETE, start, 0, 0);
	case C_DELETE_EOL:
	case C_CHANGE_EOL:
		return operate(v, e, reg, c == C_DELETE_EOL ? O_DELETE : O_CHANGE, M_EOL, n, 0);
	case C_PUT:
	case C_PUT_BEFORE:
		put(v, e, reg, c == C_PUT, n);
		break;
	case C_UNDO:
	case C_REDO:
		if (!(c == C_UNDO ? edbuf_undo(e) : edbuf_redo(e)))
			v->msg = c == C_UNDO ? "nothing to undo" : "nothing to redo";
		for (long i = 1; i < n && (c == C_UNDO ? edbuf_undo(e) : edbuf_redo(e)); i++)
			;
		break;
	case C_RUN:
		return VI_RUN;
	}
	return VI_TAKEN;
}

/* ---- keys ---- */

void vi_init(struct vi *v)
{
	memset(v, 0, sizeof(*v));
	v->mode = VI_INSERT;
}

/* Forget what was half typed. */
static void forget(struct vi *v)
{
	v->count = v->count2 = 0;
	v->op = 0;
	v->prefix = 0;
}

void vi_insert(struct vi *v)
{
	forget(v);
	v->mode = VI_INSERT;
}

/* The row for key `ch` after `prefix` (0: none); *partial when `ch` begins a longer one. */
static const struct vi_cmd *find(wint_t prefix, wint_t ch, int *partial)
{
	*partial = 0;
	for (size_t i = 0; i < ARRAY_SIZE(vi_cmds); i++) {
		const char *k = vi_cmds[i].keys;

		if (prefix && (wint_t)(unsigned char)k[0] == prefix && (wint_t)(unsigned char)k[1] == ch &&
		    !k[2])
			return &vi_cmds[i];
		if (!prefix && (wint_t)(unsigned char)k[0] == ch) {
			if (!k[1])
				return &vi_cmds[i];
			*partial = 1;
		}
	}
	return NULL;
}

enum vi_result vi_key(struct vi *v, struct edbuf *e, struct strbuf *reg, wint_t ch)
{
	const struct vi_cmd *cmd;
	enum vi_result rc = VI_TAKEN;
	long *count = v->op ? &v->count2 : &v->count, n;
	int partial, counted = v->count || v->count2;

	v->msg = NULL;
	if (v->mode == VI_INSERT) {
		if (ch != 27)
			return VI_PASS;
		v->mode = VI_NORMAL;	/* the cursor back onto the last character typed */
		edbuf_unmark(e);
		if (e->cur > bol(e, e->cur))
			e->cur = prev(e, e->cur);
		e->goal = -1;
		return VI_TAKEN;
	}
	if (ch == 27) {			/* Esc: forget what was half typed, else it is not ours */
		int had = v->count || v->op || v->prefix;
		forget(v);
		return had ? VI_TAKEN : VI_PASS;
	}
	if (!v->prefix && ((ch >= '1' && ch <= '9') || (ch == '0' && *count))) {
		*count = *count * 10 + (long)(ch - '0');
		if (*count > VI_COUNT_MAX)
			*count = VI_COUNT_MAX;
		return VI_TAKEN;
	}
	cmd = find(v->prefix, ch, &partial);
	if (!cmd && partial) {
		v->prefix = ch;
		return VI_TAKEN;
	}
	n = (v->count ? v->count : 1) * (v->count2 ? v->count2 : 1);
	if (n > VI_COUNT_MAX)
		n = VI_COUNT_MAX;	/* 9999d9999w is 9999 words */
	if (!cmd) {
		forget(v);		/* not a command: dropped, with what came before it */
	} else if (cmd->kind == K_OPERATOR && !v->op) {
		v->op = cmd->what;	/* wait for the motion */
		v->prefix = 0;
		return VI_TAKEN;
	} else if (cmd->kind == K_OPERATOR && v->op == cmd->what) {
		size_t start = e->cur;	/* dd, cc, yy: n lines from this one */
		move(e, M_DOWN, n - 1, 0, 1);
		if (v->op == O_CHANGE) {	/* cc: the lines' text, not their ends */
			e->cur = eol(e, e->cur);
			start = bol(e, start);
			rc = apply(v, e, reg, O_CHANGE, start, 0, 0);
			v->linewise = 1;	/* ... yet lines in the register */
			strbuf_addch(reg, '\n');
			v->reg_len = reg->len;
		} else {
			rc = apply(v, e, reg, v->op, start, 1, 0);
		}
	} else if (cmd->kind == K_MOTION && v->op) {
		rc = operate(v, e, reg, v->op, cmd->what, n, counted);
	} else if (cmd->kind == K_MOTION) {
		move(e, cmd->what, n, counted, 0);
	} else if (!v->op) {
		rc = command(v, e, reg, cmd->what, n);
	}
	forget(v);
	if (v->mode == VI_NORMAL)
		clamp(e);
	return rc;
}

void vi_pending(const struct vi *v, char *buf, size_t size)
{
	const char *op = v->op == O_DELETE ? "d" : v->op == O_CHANGE ? "c" : v->op == O_YANK ? "y" : "";
	char c1[16] = "", c2[16] = "", pre[2] = { v->prefix ? (char)v->prefix : 0, 0 };

	if (v->count)
		snprintf(c1, sizeof(c1), "%ld", v->count);
	if (v->count2)
		snprintf(c2, sizeof(c2), "%ld", v->count2);
	snprintf(buf, size, "%s%s%s%s", c1, op, c2, pre);
}

void vi_rows(void (*row)(void *data, const char *left, const char *right), void *data)
{
	for (size_t i = 0; i < ARRAY_SIZE(vi_cmds); i++)
		row(data, vi_cmds[i].shown ? vi_cmds[i].shown : vi_cmds[i].keys, vi_cmds[i].help);
}
