/*
 * Notebook mode's view: the cells of an open notebook in one pane, each with its source (code
 * highlighted, markdown drawn as terminal text, raw cells plain) and its outputs under it as
 * the output pane draws them (streams, Out[n], tracebacks, plots in reserved rows). A bar
 * marks the selected cell (another look in edit mode), a dot a cell whose source changed
 * since it ran, `[+]` in the header and the status line unsaved changes.
 *
 * Only the cells that show are laid out and drawn: the view is a first cell and how many of
 * its rows are above the pane, and each cell caches its rows at the width. Images that came
 * in the file are decoded when their cell first shows, and only so many are kept decoded.
 */
#include "ui.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "highlight.h"
#include "kernel.h"
#include "markdown.h"

#define NB_GUTTER 2		/* the selection bar and the "changed since it ran" dot */

/* ---- opening and closing ---- */

int ui_nbview_open(struct ui *ui, const char *path, size_t first, struct strbuf *err)
{
	struct nbview *v = xcalloc(1, sizeof(*v));
	int rc;

	notebook_init(&v->nb);
	rc = notebook_open_first(&v->nb, path, first, err);
	if (rc >= 0 && first == SIZE_MAX && notebook_open_rest(&v->nb, err) < 0)
		rc = -1;
	if (rc < 0) {
		notebook_release(&v->nb);
		free(v);
		return -1;
	}
	if (ui->nbv)
		ui_nbview_close(ui);
	outmodel_init(&v->views, OUT_CELL_MAX);
	v->next_image = -1;
	ui->nbv = v;
	ui->panes[P_OUTPUT].visible = ui->panes[P_EDITOR].visible = 0;
	ui->panes[P_NOTEBOOK].visible = 1;
	ui->focus = P_NOTEBOOK;
	ui->outpane.scroll = 0;
	ui->kernel_cols = 0;	/* the width output is drawn at changes: tell the kernel */
	if (notebook_has_recovery(&v->nb))
		ui_overlay_push(ui, OV_RECOVER);
	return rc;
}

void ui_nbview_close(struct ui *ui)
{
	struct nbview *v = ui->nbv;

	if (!v)
		return;
	if (v->editing)
		ui_nbview_leave_edit(ui);
	if (v->outputs_open)
		outputs_release(&v->out);
	ui_nbview_images_forget(ui);
	notebook_release(&v->nb);
	outmodel_release(&v->views);
	free(v->find);
	free(v->running_code);	/* a cell that ran when the notebook closed */
	free(v);
	ui->nbv = NULL;
	ui->panes[P_OUTPUT].visible = ui->panes[P_EDITOR].visible = 1;
	ui->panes[P_NOTEBOOK].visible = 0;
	ui->focus = P_EDITOR;
	ui->kernel_cols = 0;
}

/* ---- laying out a cell ---- */

/*
 * Lay out source text after prompts, highlighted as Python when `code`; with `cursor` >= 0
 * the cursor's screen place goes to *cy, *cx (and the editor's selection stands out);
 * matches of `hit` (case-insensitive) stand out.
 */
static void lay_source(struct lay *l, const char *text, int code, const char *first,
		       const char *cont, long cursor, int *cy, int *cx, const char *hit)
{
	struct look prompt = ui_look_of(l->ui, TH_PROMPT_IN, NULL);
	size_t len = strlen(text), hitlen = hit ? strlen(hit) : 0, from, to;
	unsigned char *cls = xmalloc(len + 1);
	int state = HL_STATE_NORMAL;

	for (size_t off = 0; off <= len;) {	/* classify line by line */
		size_t e = off + strcspn(text + off, "\n");
		if (code)
			state = highlight_line(text + off, e - off, state, cls + off);
		else
			memset(cls + off, HL_TEXT, e - off);
		cls[e] = HL_TEXT;
		off = e + 1;
	}
	if (hitlen)
		for (const char *p = strcasestr(text, hit); p; p = strcasestr(p + hitlen, hit))
			memset(cls + (p - text), HL_NCLASSES, hitlen);
	if (cursor >= 0 && edbuf_selection(&l->ui->editor.ed, &from, &to) && to <= len)
		memset(cls + from, HL_NCLASSES + 1, to - from);	/* the cell being edited's */
	ui_lay_text(l, first, prompt);
	for (size_t i = 0; i <= len;) {
		wchar_t wc;
		size_t n;
		int el;

		if ((long)i == cursor) {
			if (l->col >= l->width)
				ui_lay_newline(l);
			*cy = l->base_y + l->row;
			*cx = l->x + l->col;
		}
		if (i == len)
			break;
		if (text[i] == '\n') {
			ui_lay_newline(l);
			ui_lay_text(l, cont, prompt);
			i++;
			continue;
		}
		n = ui_decode(text + i, len - i, &wc);
		el = cls[i] == HL_NCLASSES ? TH_FIND_MATCH : cls[i] == HL_NCLASSES + 1 ? TH_SELECTION :
		     cls[i] == HL_TEXT ? TH_NORMAL : TH_SYNTAX_KEYWORD + cls[i] - 1;
		if (wc != L'\t') {
			wchar_t probe = wc;
			if (l->col + ui_char_width(&probe) > l->width)
				ui_lay_newline(l);
		}
		ui_lay_put(l, wc, ui_look_of(l->ui, el, NULL));
		i += n;
	}
	ui_lay_newline(l);
	free(cls);
}

/* What markdown rendering draws into. */
struct md_lay {
	struct lay *l;
};

/* One run of rendered markdown, in the look its style has. */
static void md_put(void *data, const char *s, size_t len, unsigned style)
{
	struct lay *l = ((struct md_lay *)data)->l;
	struct sgr_attr a;
	int el = TH_NORMAL;

	if (!s) {
		ui_lay_newline(l);
		return;
	}
	sgr_reset(&a);
	if (style & MD_HEADING)
		el = TH_MD_HEADING;
	else if (style & (MD_CODE | MD_BLOCK))
		el = TH_MD_CODE;
	else if (style & (MD_LINK | MD_URL))
		el = TH_MD_LINK;
	else if (style & (MD_QUOTE | MD_RULE | MD_MARKER))
		el = TH_MD_QUOTE;
	if (style & MD_BOLD)
		a.flags |= SGR_BOLD;
	if (style & MD_ITALIC)
		a.flags |= SGR_ITALIC;
	if (style & (MD_H1 | MD_LINK))
		a.flags |= SGR_UNDERLINE;
	if (style & MD_URL)
		a.flags |= SGR_DIM;
	for (size_t i = 0; i < len;) {
		wchar_t wc;
		i += ui_decode(s + i, len - i, &wc);
		ui_lay_put(l, wc, ui_look_of(l->ui, el, &a));
	}
}

/* Lay out notebook cell `i` (the cell's own rows from 0). Returns its rows. */
static int lay_nbcell(struct ui *ui, struct lay *l, size_t i)
{
	struct nbview *v = ui->nbv;
	struct nb_cell *c = v->nb.cells[i];
	const char *type = notebook_cell_type(c);
	int editing = v->editing && i == v->sel, cy = -1, cx = -1;
	const char *text = editing ? ui->editor.ed.text.buf : c->source;
	long cursor = editing ? (long)ui->editor.ed.cur : -1;
	const char *hit = !editing && v->find && ui->ovl.ov != OV_FIND ? v->find : NULL;
	char first[32];

	l->row = l->col = 0;
	if (!strcmp(type, "code")) {
		int n = notebook_cell_count(c);
		if (c->req || c->queued)
			snprintf(first, sizeof(first), "In [*]: ");
		else if (n)
			snprintf(first, sizeof(first), "In [%d]: ", n);
		else
			snprintf(first, sizeof(first), "In [ ]: ");
		lay_source(l, text, 1, first, "   ...: ", cursor, &cy, &cx, hit);
		if (!c->view && !c->req)
			ui_nbview_view_build(ui, c);
		else if (l->draw)
			ui_nbview_view_images(ui, c);
		if (c->collapsed && c->view && c->view->nchunks)
			ui_lay_text(l, "[outputs hidden: o shows them]\n", ui_look_of(ui, TH_INFO, NULL));
		else if (c->view)
			ui_lay_chunks(l, c->view);
	} else if (!strcmp(type, "markdown") && !editing && *c->source) {
		struct md_lay ml = { l };
		markdown_render(c->source, l->width, md_put, &ml);
	} else if (!strcmp(type, "markdown")) {
		lay_source(l, text, 0, editing ? "md  >>: " : "", editing ? "   ...: " : "", cursor,
			   &cy, &cx, hit);
		if (!editing)	/* an empty markdown cell */
			ui_lay_text(l, "(empty markdown cell)\n", ui_look_of(ui, TH_INFO, NULL));
	} else {
		lay_source(l, text, 0, "   raw: ", "        ", cursor, &cy, &cx, hit);
	}
	ui_lay_newline(l);		/* a blank row between cells */
	if (editing && cy >= 0) {
		v->cursor_y = cy;
		v->cursor_x = cx;
	}
	return l->row;
}

/* Rows of cell `i` at `width` (cached, but for the cell being edited). */
static int nbcell_rows(struct ui *ui, size_t i, int width)
{
	struct nb_cell *c = ui->nbv->nb.cells[i];
	struct lay l = { .ui = ui, .width = width };
	int editing = ui->nbv->editing && i == ui->nbv->sel;

	if (editing || c->rows_width != width || (c->view && c->view->rows_width != width)) {
		c->rows = lay_nbcell(ui, &l, i);
		c->rows_width = editing ? 0 : width;
		if (c->view)
			c->view->rows_width = width;
	}
	return c->rows;
}

/* The width cells are laid out at: the pane's, less the gutter. */
static int cell_width(const struct ui *ui)
{
	int w = ui->panes[P_NOTEBOOK].w - NB_GUTTER;
	return w > 8 ? w : 8;
}

/* Rows of the pane the cells have (the header row is not theirs). */
static int cells_height(const struct ui *ui)
{
	int h = ui->panes[P_NOTEBOOK].h - 1;
	return h > 1 ? h : 1;
}

/* ---- scrolling ---- */

void ui_nbview_scroll(struct ui *ui, int rows)
{
	struct nbview *v = ui->nbv;
	int w = cell_width(ui);

	v->top_row += rows;
	while (v->top_row < 0 && v->top > 0) {
		v->top--;
		v->top_row += nbcell_rows(ui, v->top, w);
	}
	if (v->top_row < 0)
		v->top_row = 0;
	while (v->top + 1 < v->nb.ncells && v->top_row >= nbcell_rows(ui, v->top, w)) {
		v->top_row -= nbcell_rows(ui, v->top, w);
		v->top++;
	}
	if (v->top + 1 >= v->nb.ncells && v->top_row >= nbcell_rows(ui, v->top, w))
		v->top_row = nbcell_rows(ui, v->top, w) - 1;
}

/* Far below the pane: the selected cell at its bottom, laying out only the cells that show. */
static void sel_at_bottom(struct ui *ui, int w, int h)
{
	struct nbview *v = ui->nbv;
	int rows;

	v->top = v->sel;
	v->top_row = 0;
	rows = nbcell_rows(ui, v->sel, w);
	if (rows < h)
		ui_nbview_scroll(ui, rows - h);
}

/* The pane row the selected cell starts at, or h or more when it starts below the pane. */
static int sel_row(struct ui *ui, int w, int h)
{
	struct nbview *v = ui->nbv;
	int y = -v->top_row;

	for (size_t i = v->top; i < v->sel && y < h; i++)
		y += nbcell_rows(ui, i, w);
	return y;
}

void ui_nbview_show_sel(struct ui *ui)
{
	struct nbview *v = ui->nbv;
	int w = cell_width(ui), h = cells_height(ui), y, rows, need_top, need_end;

	if (!v || !v->nb.ncells)
		return;
	v->follow = 1;
	if (v->sel >= v->nb.ncells)
		v->sel = v->nb.ncells - 1;
	if (v->top >= v->nb.ncells)
		v->top = v->nb.ncells - 1, v->top_row = 0;
	if (v->sel < v->top || (v->sel == v->top && !v->editing)) {
		v->top = v->sel;
		v->top_row = 0;
	} else if (v->sel - v->top > (size_t)h) {
		sel_at_bottom(ui, w, h);
	}
	/* Where the cell starts in the pane (below its end: put at the bottom, counted again). */
	y = sel_row(ui, w, h);
	if (y >= h) {
		sel_at_bottom(ui, w, h);
		y = sel_row(ui, w, h);
	}
	/* Then what of it must show. */
	rows = nbcell_rows(ui, v->sel, w);
	need_top = 0;
	need_end = rows - 1;
	if (v->editing) {	/* the cursor's row, from a layout that does not draw */
		struct lay l = { .ui = ui, .width = w, .base_y = 0 };
		lay_nbcell(ui, &l, v->sel);
		need_top = need_end = v->cursor_y;
	}
	if (y + need_end >= h)
		ui_nbview_scroll(ui, y + need_end - h + 1 > y + need_top ? y + need_top
								     : y + need_end - h + 1);
	else if (y + need_top < 0)
		ui_nbview_scroll(ui, y + need_top);
}

void ui_nbview_select(struct ui *ui, size_t i)
{
	struct nbview *v = ui->nbv;

	if (v->nb.ncells)
		v->sel = i < v->nb.ncells ? i : v->nb.ncells - 1;
	v->prefix = 0;
	ui_nbview_show_sel(ui);
}

/* ---- drawing ---- */

/* The bar beside the selected cell and the dot of a changed one, rows y0..y1 of the pane. */
static void draw_gutter(struct ui *ui, struct pane *p, size_t i, int y0, int y1)
{
	struct nbview *v = ui->nbv;
	struct nb_cell *c = v->nb.cells[i];
	int top = p->y + 1, bottom = p->y + p->h;

	if (i == v->sel) {
		struct look bar = ui_look_of(ui, v->editing ? TH_CELL_EDITING : TH_CELL_SELECTED, NULL);
		for (int y = y0 < top ? top : y0; y < y1 - 1 && y < bottom; y++)
			ui_put_wc(y, p->x, L'\u258c', bar);
	}
	if (notebook_cell_changed(c) && y0 >= top && y0 < bottom)
		ui_put_wc(y0, p->x + 1, L'\u2022', ui_look_of(ui, TH_CELL_CHANGED, NULL));
}

/* The language of the notebook's kernel, for its header: the session's, or the one it asks. */
static const char *kernel_language(const struct ui *ui)
{
	const struct kernel_def *k = ui->s ? session_kernel(ui->s) : NULL;

	if (!k && ui->cfg->session.kernel)
		k = kernel_find(ui->cfg->session.kernel);
	return (k ? k : kernel_default())->language;
}

/* Draw the notebook pane: a header, then the cells that show. */
void ui_nbview_draw(struct ui *ui, struct pane *p)
{
	struct nbview *v = ui->nbv;
	struct look sep = ui_look_of(ui, TH_BORDER, NULL);
	int w = cell_width(ui), y;
	char title[256];
	const char *name = strrchr(v->nb.path, '/') ? strrchr(v->nb.path, '/') + 1 : v->nb.path;

	for (int x = 0; x < p->w; x++)
		ui_put_wc(p->y, p->x + x, L'\u2500', sep);
	snprintf(title, sizeof(title), " %s%s \u00b7 %s \u00b7 %s \u00b7 %s \u00b7 F1 help ", name,
		 v->nb.dirty ? " [+]" : "", kernel_language(ui), v->editing ? "edit mode" : "command mode",
		 v->editing ? "Esc: command mode \u00b7 Shift-Enter/F5 runs"
			    : "Enter edits \u00b7 Shift-Enter/F5 runs \u00b7 a/b new cell");
	ui_put_text(p->y, p->x + 2, p->w - 2, title, ui_look_of(ui, TH_TITLE, NULL));
	if (v->nb.ncells && v->top >= v->nb.ncells)
		v->top = v->nb.ncells - 1;
	if (v->follow)		/* outputs and plots came since the key that moved it */
		ui_nbview_show_sel(ui);
	y = p->y + 1 - v->top_row;
	for (size_t i = v->top; i < v->nb.ncells && y < p->y + p->h; i++) {
		int rows = nbcell_rows(ui, i, w), drawn;
		struct lay l = { .ui = ui, .x = p->x + NB_GUTTER, .width = w, .draw = 1,
				 .base_y = y, .top = p->y + 1, .bottom = p->y + p->h };

		drawn = lay_nbcell(ui, &l, i);
		if (drawn != rows) {	/* its plots decoded as it drew: the layout was off */
			v->nb.cells[i]->rows = drawn;
			v->relayout = v->follow;
		}
		draw_gutter(ui, p, i, y, y + drawn);
		y += drawn;
	}
	if (v->editing) {
		/* The completion menu goes above the cursor: the editor pane's place for it. */
		ui->panes[P_EDITOR].y = v->cursor_y;
		ui->panes[P_EDITOR].x = v->cursor_x - 8 - (int)edbuf_col(&ui->editor.ed);
		move(v->cursor_y, v->cursor_x < COLS ? v->cursor_x : COLS - 1);
	} else {
		move(p->y, p->x);
	}
}

/* The status line's part about the notebook. */
void ui_nbview_status(struct ui *ui, struct strbuf *sb)
{
	struct nbview *v = ui->nbv;
	const char *name = strrchr(v->nb.path, '/') ? strrchr(v->nb.path, '/') + 1 : v->nb.path;

	strbuf_addf(sb, "%s%s \u2502 cell %zu/%zu \u2502 %s", name, v->nb.dirty ? " [+]" : "",
		    v->sel + 1, notebook_total(&v->nb), v->editing ? "edit" : "command");
}

