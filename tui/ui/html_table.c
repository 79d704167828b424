/*
 * The tables of html.c: rows and cells read into fixed slots (HTML_MAX_COLS a row, the rows
 * past HTML_MAX_ROWS counted, not kept), then drawn as aligned columns: each column as wide
 * as its widest cell up to HTML_CELL_COLS, the widest narrowed (then the last dropped) until
 * the table fits the width, a cut cell ending in an ellipsis, numbers right-aligned, a rule
 * under the header rows.
 */
#include "html_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEAD_ROWS 8
#define MAX_SPAN 65534
#define MAX_COL (1 << 20)	/* where counting the columns of a row stops */

void html_table_init(struct html_table *t)
{
	memset(t, 0, sizeof(*t));
	strbuf_init(&t->caption, 0);
}

static void row_clear(struct html_row *r)
{
	for (int c = 0; c < HTML_MAX_COLS; c++) {
		strbuf_release(&r->cells[c].text);
		r->cells[c].cut = r->cells[c].head = 0;
	}
	r->n = 0;
	r->head = 0;
}

void html_table_release(struct html_table *t)
{
	for (int i = 0; i < t->alloc; i++)
		row_clear(&t->rows[i]);
	free(t->rows);
	strbuf_release(&t->caption);
	memset(t, 0, sizeof(*t));
}

void html_table_end_cell(struct html_table *t)
{
	t->cell = NULL;
	t->in_caption = 0;
}

/* An empty cell at column `c` of the open row (a rowspan from above covers it). */
static void cover(struct html_table *t, int c)
{
	struct html_row *r = &t->rows[t->nrows];

	t->span[c]--;
	if (c + 1 > r->n)
		r->n = c + 1;
}

/* End the open row: keep it, or count it when a cap is reached (or drop it when empty). */
static void row_end(struct html_table *t)
{
	struct html_row *r;
	int all_th = 1;

	html_table_end_cell(t);
	if (!t->row_open)
		return;
	t->row_open = 0;
	for (int c = t->col; c < HTML_MAX_COLS; c++)	/* columns a rowspan covers, at the end */
		if (t->span[c] > 0)
			cover(t, c);
	r = &t->rows[t->nrows];
	if (r->n == 0 && t->col == 0)
		return;
	for (int c = 0; c < r->n; c++)
		if (r->cells[c].text.len && !r->cells[c].head)
			all_th = 0;
	r->head = t->in_thead || (!t->body_seen && all_th && r->n > 0);
	if (!r->head)
		t->body_seen = 1;
	if (r->head ? t->nhead >= MAX_HEAD_ROWS || t->nbody > 0 : t->nbody >= HTML_MAX_ROWS) {
		t->more_rows += !r->head;
		row_clear(r);
		return;
	}
	*(r->head ? &t->nhead : &t->nbody) += 1;
	t->nrows++;
}

void html_table_row(struct html_table *t, int open)
{
	row_end(t);
	if (!open)
		return;
	if (t->nrows + 1 > t->alloc) {
		int n = t->alloc ? t->alloc * 2 : 8;
		t->rows = xrealloc(t->rows, (size_t)n * sizeof(*t->rows));
		memset(t->rows + t->alloc, 0, (size_t)(n - t->alloc) * sizeof(*t->rows));
		for (int i = t->alloc; i < n; i++)
			for (int c = 0; c < HTML_MAX_COLS; c++)
				strbuf_init(&t->rows[i].cells[c].text, 0);
		t->alloc = n;
	}
	t->row_open = 1;
	t->col = 0;
}

void html_table_cell(struct html_table *t, int head, int colspan, int rowspan)
{
	struct html_row *r;
	int c;

	html_table_end_cell(t);
	if (!t->row_open)
		html_table_row(t, 1);
	r = &t->rows[t->nrows];
	while (t->col < HTML_MAX_COLS && t->span[t->col] > 0)
		cover(t, t->col++);
	colspan = colspan < 1 ? 1 : colspan > HTML_MAX_COLS ? HTML_MAX_COLS : colspan;
	rowspan = rowspan < 1 ? 1 : rowspan > MAX_SPAN ? MAX_SPAN : rowspan;
	c = t->col;
	if (c >= HTML_MAX_COLS) {	/* past the kept columns: counted */
		if (c < MAX_COL)
			t->col += colspan;
		if (t->col - HTML_MAX_COLS > t->more_cols)
			t->more_cols = t->col - HTML_MAX_COLS;
		return;
	}
	t->cell = &r->cells[c];
	t->cell->head = head;
	for (int i = c; i < c + colspan && i < HTML_MAX_COLS; i++)
		t->span[i] = rowspan - 1;
	t->col += colspan;
	r->n = t->col < HTML_MAX_COLS ? t->col : HTML_MAX_COLS;
	if (t->col - HTML_MAX_COLS > t->more_cols)
		t->more_cols = t->col - HTML_MAX_COLS;
}

void html_table_text(struct html_table *t, const char *s, size_t len)
{
	struct html_cell *cell = t->cell;
	struct strbuf *sb = t->in_caption ? &t->caption : cell ? &cell->text : NULL;

	if (!sb)
		return;
	for (size_t i = 0; i < len; i++) {
		int sp = s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f';
		if (sp && (!sb->len || sb->buf[sb->len - 1] == ' '))
			continue;
		if (sb->len >= HTML_CELL_BYTES) {
			if (cell && !t->in_caption)
				cell->cut = 1;
			while (sb->len && ((unsigned char)sb->buf[sb->len - 1] & 0xc0) == 0x80)
				sb->len--;	/* not half a character: */
			if (sb->len && (unsigned char)sb->buf[sb->len - 1] >= 0xc0)
				sb->len--;	/* a lead byte whose tail did not fit */
			sb->buf[sb->len] = '\0';
			return;
		}
		strbuf_addch(sb, sp ? ' ' : s[i]);
	}
}

/* The cell's text without its trailing space. */
static size_t trimmed(const struct html_cell *cell)
{
	size_t n = cell->text.len;

	while (n && cell->text.buf[n - 1] == ' ')
		n--;
	return n;
}

/* A number as a column of numbers shows it (pandas' NaN, inf and its "..." too). */
static int numeric(const char *s, size_t n)
{
	int digit = 0;

	if ((n == 3 && (!memcmp(s, "NaN", 3) || !memcmp(s, "nan", 3) || !memcmp(s, "inf", 3) ||
			!memcmp(s, "...", 3))) || (n == 4 && !memcmp(s, "-inf", 4)))
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digit = 1;
		else if (!strchr("+-.,eE%", s[i]))
			return 0;
	}
	return digit;
}

/* Append `s[0..n)` in `w` columns: cut with an ellipsis when longer (or `cut`), padded. */
static void fit(struct strbuf *sb, const char *s, size_t n, int w, int cut, int right, int pad)
{
	int cols = utf8_columns(s, n), used = 0, cw;
	size_t i = 0, end;

	if (cols > w || cut) {
		while (i < n) {
			size_t k = utf8_char(s + i, n - i, &cw);
			if (used + cw > w - 1)
				break;
			used += cw;
			i += k;
		}
		end = i;
		cols = used + (w >= 1);
	} else {
		end = n;
	}
	if (right)
		for (int k = cols; k < w; k++)
			strbuf_addch(sb, ' ');
	strbuf_add(sb, s, end);
	if (end < n || cut)
		strbuf_addstr(sb, w >= 1 ? "\u2026" : "");
	if (!right && pad)
		for (int k = cols; k < w; k++)
			strbuf_addch(sb, ' ');
}

void html_table_render(struct html_table *t, struct html_out *o)
{
	int w[HTML_MAX_COLS] = { 0 }, right[HTML_MAX_COLS], ncols = 0, shown, total;
	long hidden = 0;
	struct strbuf line = STRBUF_INIT;

	row_end(t);
	for (int i = 0; i < t->nrows; i++)
		if (t->rows[i].n > ncols)
			ncols = t->rows[i].n;
	if (t->caption.len)
		html_out_line(o, t->caption.buf, t->caption.len, NULL);
	for (int c = 0; c < ncols; c++) {
		int nums = 0, others = 0;
		for (int i = 0; i < t->nrows; i++) {
			const struct html_cell *cell = &t->rows[i].cells[c];
			size_t n = trimmed(cell);
			int cw = utf8_columns(cell->text.buf, n) + cell->cut;
			if (c >= t->rows[i].n)
				continue;
			if (cw > w[c])
				w[c] = cw > HTML_CELL_COLS ? HTML_CELL_COLS : cw;
			if (n && !t->rows[i].head)
				*(numeric(cell->text.buf, n) ? &nums : &others) += 1;
		}
		right[c] = nums && !others;
	}
	total = 0;
	for (int c = 0; c < ncols; c++)
		total += w[c] + (c ? 2 : 0);
	shown = ncols;
	while (shown > 0 && total > o->width) {	/* narrow the widest, then drop the last */
		int widest = 0;
		for (int c = 1; c < shown; c++)
			if (w[c] > w[widest])
				widest = c;
		if (w[widest] > 4) {
			w[widest]--;
			total--;
		} else if (shown > 1) {
			total -= w[shown - 1] + 2;
			shown--;
			hidden++;
		} else {
			w[0] = o->width;
			total = o->width;
		}
	}
	for (int i = 0; i < t->nrows && !o->full; i++) {
		const struct html_row *r = &t->rows[i];
		strbuf_reset(&line);
		for (int c = 0; c < shown; c++) {
			const struct html_cell *cell = &r->cells[c];
			if (c)
				strbuf_addstr(&line, "  ");
			if (c < r->n)
				fit(&line, cell->text.buf, trimmed(cell), w[c], cell->cut,
				    right[c] && !r->head, c + 1 < shown);
			else if (c + 1 < shown)
				fit(&line, "", 0, w[c], 0, 0, 1);
		}
		while (line.len && line.buf[line.len - 1] == ' ')
			line.len--;
		html_out_line(o, line.buf, line.len, r->head ? "1" : NULL);
		if (r->head && (i + 1 == t->nrows || !t->rows[i + 1].head)) {
			strbuf_reset(&line);
			for (int c = 0; c < shown; c++) {
				if (c)
					strbuf_addstr(&line, "  ");
				for (int k = 0; k < w[c]; k++)
					strbuf_addstr(&line, "\u2500");
			}
			html_out_line(o, line.buf, line.len, "2");
		}
	}
	strbuf_reset(&line);
	if (t->more_rows)
		strbuf_addf(&line, "... %ld more row%s", t->more_rows, t->more_rows == 1 ? "" : "s");
	if (t->more_cols + hidden)
		strbuf_addf(&line, "%s%ld more column%s", line.len ? ", " : "... ",
			    t->more_cols + hidden, t->more_cols + hidden == 1 ? "" : "s");
	if (line.len)
		html_out_line(o, line.buf, line.len, "2");
	strbuf_release(&line);
	html_table_release(t);
	html_table_init(t);
}
