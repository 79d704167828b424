/*
 * The output pane: every executed cell laid out as wrapped rows (In [n] with highlighted code,
 * streams, Out[n], tracebacks, plots in reserved rows), drawn from the bottom up with
 * scrolling back.
 */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "highlight.h"

/* Whether row `row` is on screen. */
int ui_lay_visible(const struct lay *l)
{
	int y = l->base_y + l->row;
	return l->draw && y >= l->top && y < l->bottom;
}

/* End the current row. */
void ui_lay_newline(struct lay *l)
{
	l->row++;
	l->col = 0;
}

/* Put one character, wrapping at the pane's width. */
void ui_lay_put(struct lay *l, wchar_t wc, struct look lk)
{
	int w;

	if (wc == L'\n') {
		ui_lay_newline(l);
		return;
	}
	if (wc == L'\t') {
		int n = 8 - l->col % 8;
		while (n-- > 0 && l->col < l->width)
			ui_lay_put(l, L' ', lk);
		return;
	}
	w = ui_char_width(&wc);
	if (w == 0)
		return;
	if (l->col + w > l->width)
		ui_lay_newline(l);
	if (ui_lay_visible(l))
		ui_put_wc(l->base_y + l->row, l->x + l->col, wc, lk);
	l->col += w;
}

/* Lay out plain UTF-8 text in one look. */
void ui_lay_text(struct lay *l, const char *s, struct look lk)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len;) {
		wchar_t wc;
		i += ui_decode(s + i, len - i, &wc);
		ui_lay_put(l, wc, lk);
	}
}

/* Lay out sanitised kernel text, its SGR sequences turned into looks over element `el`. */
void ui_lay_sgr_text(struct lay *l, const char *s, size_t len, int el)
{
	struct sgr_attr a;
	struct look lk;

	sgr_reset(&a);
	lk = ui_look_of(l->ui, el, NULL);
	for (size_t i = 0; i < len;) {
		wchar_t wc;
		size_t n;

		if (s[i] == '\x1b') {
			n = sgr_take(s + i, len - i, &a);
			i += n ? n : 1;		/* a cut-off sequence is skipped */
			if (n)
				lk = ui_look_of(l->ui, el, &a);
			continue;
		}
		i += ui_decode(s + i, len - i, &wc);
		ui_lay_put(l, wc, lk);
	}
}

/* Lay out Python code, highlighted, each line after `first` or `cont`. */
void ui_lay_code(struct lay *l, const char *code, const char *first, const char *cont)
{
	int state = HL_STATE_NORMAL;
	const char *p = code;
	struct look prompt = ui_look_of(l->ui, TH_PROMPT_IN, NULL);
	unsigned char *cls = NULL;
	size_t cls_alloc = 0;

	for (int lineno = 0;; lineno++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len + 1 > cls_alloc) {
			cls_alloc = len + 64;
			cls = xrealloc(cls, cls_alloc);
		}
		state = highlight_line(p, len, state, cls);
		ui_lay_text(l, lineno ? cont : first, prompt);
		for (size_t i = 0; i < len;) {
			wchar_t wc;
			int el = cls[i] == HL_TEXT ? TH_NORMAL : TH_SYNTAX_KEYWORD + cls[i] - 1;
			size_t n = ui_decode(p + i, len - i, &wc);
			ui_lay_put(l, wc, ui_look_of(l->ui, el, NULL));
			i += n;
		}
		ui_lay_newline(l);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(cls);
}

/* Lay out one cell: In [n] and its code, then its output. Returns its rows. */
int ui_lay_cell(struct lay *l, const struct out_cell *c)
{
	char first[32];

	l->row = l->col = 0;
	if (c->code) {
		if (c->count)
			snprintf(first, sizeof(first), "In [%d]: ", c->count);
		else
			snprintf(first, sizeof(first), "In [%s]: ", c->done ? " " : "*");
		ui_lay_code(l, c->code, first, "   ...: ");
	}
	ui_lay_chunks(l, c);
	ui_lay_newline(l);		/* a blank row between cells */
	return l->row;
}

/* Lay out a cell's output: streams, Out[n], tracebacks, plots in their reserved rows. */
void ui_lay_chunks(struct lay *l, const struct out_cell *c)
{
	for (size_t i = 0; i < c->nchunks; i++) {
		const struct out_chunk *ch = &c->chunks[i];
		static const int el_of[] = {
			[OUT_STDOUT] = TH_NORMAL, [OUT_STDERR] = TH_STDERR,
			[OUT_RESULT] = TH_NORMAL, [OUT_ERROR] = TH_ERROR, [OUT_PLOT] = TH_PLOT,
			[OUT_INFO] = TH_INFO, [OUT_TRUNCATED] = TH_TRUNCATED,
		};
		size_t len = ch->text.len;

		if (ch->kind == OUT_RESULT) {
			char out[32];
			const char *nl = memchr(ch->text.buf, '\n', len);
			snprintf(out, sizeof(out), "Out[%d]: ", c->count);
			ui_lay_text(l, out, ui_look_of(l->ui, TH_PROMPT_OUT, NULL));
			if (nl && nl + 1 < ch->text.buf + len)	/* more than one line: as IPython */
				ui_lay_newline(l);
		}
		if (ch->kind == OUT_PLOT) {
			int start, rows = ui_plot_rows(l->ui, ch, l->width);
			ui_lay_sgr_text(l, ch->text.buf, len, TH_PLOT);
			start = l->row;		/* the image's rows, reserved below its line */
			if (rows && l->draw) {
				/* The "more rows below" marker keeps the pane's last row. */
				int bottom = l->bottom - (l->ui->outpane.scroll > 0);
				ui_plot_place(l->ui, ui_plot_find(l->ui, ch->plot_index)->img,
					   l->base_y + start, l->x, l->width, ui_plot_cap_rows(l->ui), rows,
					   l->top, bottom);
			}
			while (l->row - start < rows)
				ui_lay_newline(l);
			continue;
		}
		ui_lay_sgr_text(l, ch->text.buf, len, el_of[ch->kind]);
		if (len && ch->text.buf[len - 1] != '\n')
			ui_lay_newline(l);
	}
}

/* Rows of cell `c` at `width` (cached). */
static int cell_rows(struct ui *ui, struct out_cell *c, int width)
{
	struct lay l = { .ui = ui, .width = width };

	if (c->rows_width != width) {
		c->rows = ui_lay_cell(&l, c);
		c->rows_width = width;
	}
	return c->rows;
}

/* Draw the output pane: the cells that fall in view after scrolling. */
void ui_output_draw(struct ui *ui, struct pane *p)
{
	long total = 0, top, y;
	size_t i;

	for (i = 0; i < ui->out.ncells; i++)
		total += cell_rows(ui, ui->out.cells[i], p->w);
	if (ui->outpane.follow)
		ui->outpane.scroll = 0;
	if (ui->outpane.scroll > total - p->h)
		ui->outpane.scroll = total > p->h ? (int)(total - p->h) : 0;
	if (ui->outpane.scroll < 0)
		ui->outpane.scroll = 0;
	top = total - p->h - ui->outpane.scroll;	/* the cell row at the pane's first screen row */
	if (top < 0)
		top = 0;
	y = 0;
	for (i = 0; i < ui->out.ncells; i++) {
		struct out_cell *c = ui->out.cells[i];
		int rows = c->rows;
		if (y + rows > top && y < top + p->h) {
			struct lay l = { .ui = ui, .x = p->x, .width = p->w, .draw = 1,
					 .base_y = p->y + (int)(y - top), .top = p->y,
					 .bottom = p->y + p->h };
			ui_lay_cell(&l, c);
		}
		y += rows;
	}
	if (!ui->out.ncells)
		ui_put_text(p->y, p->x, p->w, "cellbox: write a cell below, Enter runs it. F1: help.",
			 ui_look_of(ui, TH_INFO, NULL));
	if (ui->outpane.scroll) {
		char buf[48];
		snprintf(buf, sizeof(buf), " -- %d more rows below -- ", ui->outpane.scroll);
		ui_put_text(p->y + p->h - 1, p->x + p->w - (int)strlen(buf), p->w, buf,
			 ui_look_of(ui, TH_STATUS, NULL));
	}
}

/* The output pane's keys: scrolling. */
int ui_output_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	(void)p;
	return keytab_run(ui, KM_OUTPUT, is_key, ch);	/* PgUp/PgDn */
}

/* Mark every cell's layout stale (a resize, a redraw benchmark). */
void ui_output_relayout(struct ui *ui)
{
	for (size_t i = 0; i < ui->out.ncells; i++)
		ui->out.cells[i]->rows_width = 0;
}
