/*
 * Overlays: windows over the panes that take the keys first while open (the help and `obj?`
 * pager, the completion menu, the one-line prompts for history search, commands and input(),
 * the plot viewer, the output pager of ui_outpager.c). They are a stack: the top one is drawn last and gets the keys. Each kind
 * is one record of the table below (how it draws, its keys, where the cursor goes), so adding
 * one is a row and two functions.
 */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the cursor is while an overlay is on top. */
enum ov_cursor {
	CURSOR_PANE,		/* where the focused pane put it (the menu beside the editor) */
	CURSOR_OWN,		/* the overlay's draw puts it */
	CURSOR_HIDDEN,
};

struct overlay_type {
	const char *name;
	void (*draw)(struct ui *ui);
	/* PANE_* flags; without PANE_HANDLED the key goes on to the panes. */
	int (*key)(struct ui *ui, int is_key, wint_t ch);
	enum ov_cursor cursor;
	int own_plots;		/* draws the frame's only plot, after the panes' are hidden */
};

static void draw_pager(struct ui *ui);
static void draw_menu(struct ui *ui);
static void draw_line_overlay(struct ui *ui);
static int pager_key(struct ui *ui, int is_key, wint_t ch);
static int menu_key(struct ui *ui, int is_key, wint_t ch);
static int line_overlay_key(struct ui *ui, int is_key, wint_t ch);
static int plot_view_key(struct ui *ui, int is_key, wint_t ch);

static const struct overlay_type overlay_types[OV_COUNT] = {
	[OV_PAGER] = { .name = "pager", .draw = draw_pager, .key = pager_key,
		       .cursor = CURSOR_HIDDEN },
	[OV_MENU] = { .name = "menu", .draw = draw_menu, .key = menu_key, .cursor = CURSOR_PANE },
	[OV_SEARCH] = { .name = "search", .draw = draw_line_overlay, .key = line_overlay_key,
			.cursor = CURSOR_OWN },
	[OV_PROMPT] = { .name = "prompt", .draw = draw_line_overlay, .key = line_overlay_key,
			.cursor = CURSOR_OWN },
	[OV_INPUT] = { .name = "input", .draw = draw_line_overlay, .key = line_overlay_key,
		       .cursor = CURSOR_OWN },
	[OV_PLOT] = { .name = "plot", .draw = ui_plot_view_draw, .key = plot_view_key,
		      .cursor = CURSOR_HIDDEN, .own_plots = 1 },
	[OV_FIND] = { .name = "find", .draw = draw_line_overlay, .key = line_overlay_key,
		      .cursor = CURSOR_OWN },
	[OV_RECOVER] = { .name = "recover", .draw = ui_nbview_draw_recover,
			 .key = ui_nbview_recover_key, .cursor = CURSOR_HIDDEN },
	[OV_OUTPUT] = { .name = "output", .draw = ui_outpager_draw, .key = ui_outpager_key,
			.cursor = CURSOR_HIDDEN },
};

/* Keep ui->ovl.ov, the top overlay's kind, in step with the stack. */
static void top_changed(struct ui *ui)
{
	ui->ovl.ov = ui->ovl.nov ? ui->ovl.ovs[ui->ovl.nov - 1] : OV_NONE;
}

/* Start the overlays' state: none open. */
void ui_overlays_init(struct overlay_stack *o)
{
	memset(o, 0, sizeof(*o));
	strbuf_init(&o->pager, 0);
	strbuf_init(&o->line, 0);
	o->search_hit = -1;
}

/* Free the overlays' state. */
void ui_overlays_release(struct overlay_stack *o)
{
	strbuf_release(&o->pager);
	strbuf_release(&o->line);
	free(o->pager_title);
	free(o->input_prompt);
	memset(o, 0, sizeof(*o));
}

/* Open an overlay on top of the others (one of each kind: an open one comes to the top). */
void ui_overlay_push(struct ui *ui, enum overlay kind)
{
	ui_overlay_close(ui, kind);
	if (ui->ovl.nov == OVERLAYS_MAX)
		memmove(ui->ovl.ovs, ui->ovl.ovs + 1, (OVERLAYS_MAX - 1) * sizeof(*ui->ovl.ovs)), ui->ovl.nov--;
	ui->ovl.ovs[ui->ovl.nov++] = kind;
	top_changed(ui);
}

/* Close the top overlay. */
void ui_overlay_pop(struct ui *ui)
{
	if (ui->ovl.nov)
		ui->ovl.nov--;
	top_changed(ui);
}

/* Close the top overlay and open `kind` in its place. */
void ui_overlay_replace(struct ui *ui, enum overlay kind)
{
	ui_overlay_pop(ui);
	ui_overlay_push(ui, kind);
}

/* Close the overlay of `kind` wherever it is in the stack. */
void ui_overlay_close(struct ui *ui, enum overlay kind)
{
	int k = 0;

	for (int i = 0; i < ui->ovl.nov; i++)
		if (ui->ovl.ovs[i] != kind)
			ui->ovl.ovs[k++] = ui->ovl.ovs[i];
	ui->ovl.nov = k;
	top_changed(ui);
}

/* Draw the open overlays, bottom first; the plots they cover are dropped from the frame. */
void ui_overlays_draw(struct ui *ui, int cy, int cx)
{
	const struct overlay_type *top = ui->ovl.nov ? &overlay_types[ui->ovl.ov] : NULL;

	for (int i = 0; i < ui->ovl.nov; i++)
		if (!overlay_types[ui->ovl.ovs[i]].own_plots)
			overlay_types[ui->ovl.ovs[i]].draw(ui);
	ui_plots_hide(ui);
	if (top && top->own_plots) {
		ui->gfx.nplaced = 0;
		top->draw(ui);
		top = ui->ovl.nov ? &overlay_types[ui->ovl.ov] : NULL;	/* it may have closed itself */
	}
	if (!top || top->cursor == CURSOR_PANE)
		move(cy, cx);
	curs_set(top && top->cursor == CURSOR_HIDDEN ? 0 : 1);
}

/* Keys of the top overlay; 0 when none is open. */
int ui_overlay_key(struct ui *ui, int is_key, wint_t ch)
{
	return ui->ovl.nov ? overlay_types[ui->ovl.ov].key(ui, is_key, ch) : 0;
}

/* ---- the pager ---- */

/* Open the pager overlay on `text`. */
void ui_pager_open(struct ui *ui, const char *title, const char *text)
{
	strbuf_reset(&ui->ovl.pager);
	sanitize_str(text, strlen(text), 0, &ui->ovl.pager);
	free(ui->ovl.pager_title);
	ui->ovl.pager_title = xstrdup(title);
	ui->ovl.pager_top = 0;
	ui_overlay_push(ui, OV_PAGER);
}

/*
 * Where a long line of the pager goes on after it wraps: under the column after the last run
 * of two spaces in its first 40 (the text of a "key   what it does" table), else its indent.
 */
static int hang_of(const char *line, size_t len)
{
	int hang = (int)strspn(line, " ");

	for (size_t i = (size_t)hang; i + 1 < len && i < 40; i++)
		if (line[i] == ' ' && line[i + 1] == ' ') {
			while (i < len && line[i] == ' ')
				i++;
			hang = (int)i;
		}
	return hang;
}

/* Draw the pager overlay (help, obj?): the whole screen but the status line, lines wrapped. */
static void draw_pager(struct ui *ui)
{
	int h = LINES - 1, w = COLS, y = 0, x = 0, row = 0, inner = COLS - 2;
	struct look lk = ui_look_of(ui, TH_OVERLAY, NULL);
	const char *p = ui->ovl.pager.buf;
	char title[128];

	if (h < 3 || w < 10)
		return;
	snprintf(title, sizeof(title), " %s \u00b7 Up/Down/PgUp/PgDn scroll \u00b7 q or Esc closes ",
		 ui->ovl.pager_title);
	ui_draw_box(ui, y, x, h, w, title);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p), i = 0;
		int hang = hang_of(p, len), col = 0;

		if (hang > inner / 2)
			hang = 0;
		while (i < len) {	/* one screen row: as many words as fit, then wrap */
			size_t end = i, brk = 0;
			int c = col;
			while (end < len) {
				wchar_t wc;
				size_t n = ui_decode(p + end, len - end, &wc);
				int cw = wc == L'\t' ? 1 : ui_char_width(&wc);
				if (c + cw > inner)
					break;
				if (wc == L' ')
					brk = end + n;
				c += cw;
				end += n;
			}
			if (end < len && brk > i && p[end] != ' ')
				end = brk;	/* at the last space, not in a word */
			if (end == i)	/* not even one character fits */
				end += ui_decode(p + i, len - i, &(wchar_t){ 0 });
			for (; i < end;) {
				wchar_t wc;
				size_t n = ui_decode(p + i, len - i, &wc);
				if (wc == L'\t')
					wc = L' ';
				if (row >= ui->ovl.pager_top && row - ui->ovl.pager_top < h - 2 && col < inner)
					ui_put_wc(y + 1 + row - ui->ovl.pager_top, x + 1 + col, wc, lk);
				col += ui_char_width(&wc);
				i += n;
			}
			if (i < len) {
				row++;
				col = hang;
				while (i < len && p[i] == ' ')
					i++;
			}
		}
		row++;
		p += len + (nl ? 1 : 0);
	}
	if (ui->ovl.pager_top > row - 1)
		ui->ovl.pager_top = row > 0 ? row - 1 : 0;
}

/* The pager's keys: scrolling, q or Esc closes. */
static int pager_key(struct ui *ui, int is_key, wint_t ch)
{
	if (is_key && ch == KEY_UP)
		ui->ovl.pager_top -= ui->ovl.pager_top > 0;
	else if (is_key && ch == KEY_DOWN)
		ui->ovl.pager_top++;
	else if (is_key && ch == KEY_PPAGE)
		ui->ovl.pager_top = ui->ovl.pager_top > LINES - 3 ? ui->ovl.pager_top - (LINES - 3) : 0;
	else if ((is_key && ch == KEY_NPAGE) || (!is_key && ch == ' '))
		ui->ovl.pager_top += LINES - 3;
	else if ((!is_key && (ch == 'q' || ch == 27 || ch == '\r' || ch == CTRL('c'))) ||
		 (is_key && ch == KEY_F(1)))
		ui_overlay_pop(ui);
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the completion menu ---- */

/* Draw the completion menu above the cursor. */
static void draw_menu(struct ui *ui)
{
	struct pane *ed = &ui->panes[P_EDITOR];
	int h = (int)(ui->editor.nmenu < 10 ? ui->editor.nmenu : 10), w = 10, first = 0;
	int y = ed->y - h, x = ed->x + 8 + (int)edbuf_col(&ui->editor.ed);

	for (size_t i = 0; i < ui->editor.nmenu; i++)
		if ((int)strlen(ui->editor.menu[i]) + 2 > w)
			w = (int)strlen(ui->editor.menu[i]) + 2;
	if (w > COLS - 2)
		w = COLS - 2;
	if (x + w > COLS)
		x = COLS - w;
	if (y < 0)
		y = 0;
	if ((int)ui->editor.menu_sel >= h)
		first = (int)ui->editor.menu_sel - h + 1;
	for (int r = 0; r < h && first + r < (int)ui->editor.nmenu; r++) {
		struct look lk = ui_look_of(ui, (size_t)(first + r) == ui->editor.menu_sel ? TH_MENU_SELECTED
								      : TH_MENU, NULL);
		ui_fill_row(y + r, x, w, lk);
		ui_put_text(y + r, x + 1, w - 1, ui->editor.menu[first + r], lk);
	}
}

/* The menu's keys: Up/Down/Tab choose, Enter takes; any other key closes it and goes on. */
static int menu_key(struct ui *ui, int is_key, wint_t ch)
{
	if (is_key && ch == KEY_UP) {
		ui->editor.menu_sel = ui->editor.menu_sel ? ui->editor.menu_sel - 1 : ui->editor.nmenu - 1;
	} else if ((is_key && ch == KEY_DOWN) || (!is_key && ch == '\t')) {
		ui->editor.menu_sel = (ui->editor.menu_sel + 1) % ui->editor.nmenu;
	} else if (!is_key && (ch == '\r' || ch == '\n')) {
		ui_menu_accept(ui, ui->editor.menu[ui->editor.menu_sel]);
	} else {
		ui_menu_free(ui);
		ui_overlay_pop(ui);
		if (!is_key && (ch == 27 || ch == CTRL('c') || ch == CTRL('g')))
			return PANE_HANDLED | PANE_REDRAW;
		return PANE_REDRAW;	/* not taken: the editor gets the key too */
	}
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the one-line overlays: history search, command prompt, input() ---- */

/* The one-line overlays (history search, command prompt) over the status line. */
static void draw_line_overlay(struct ui *ui)
{
	struct look lk = ui_look_of(ui, TH_MENU, NULL);
	struct strbuf sb = STRBUF_INIT;
	int y = LINES - 1, x;

	if (ui->ovl.ov == OV_SEARCH) {
		const char *hit = ui->ovl.search_hit >= 0 ? ui->editor.hist[ui->ovl.search_hit] : "";
		char *one = xstrdup(hit), *nl;
		for (nl = strchr(one, '\n'); nl; nl = strchr(nl, '\n'))
			*nl = ' ';
		strbuf_addf(&sb, "(history search)'%s': ", ui->ovl.line.buf);
		x = (int)sb.len;
		strbuf_addstr(&sb, one);
		free(one);
	} else if (ui->ovl.ov == OV_INPUT) {
		strbuf_addf(&sb, "input: %s", ui->ovl.input_prompt ? ui->ovl.input_prompt : "");
		x = (int)sb.len;
		strbuf_addstr(&sb, ui->ovl.line.buf);
		x = (int)sb.len;
	} else {
		strbuf_addf(&sb, "%s%s", ui->ovl.ov == OV_FIND ? "/" : ":", ui->ovl.line.buf);
		x = (int)sb.len;
	}
	ui_fill_row(y, 0, COLS, lk);
	ui_put_text(y, 0, COLS, sb.buf, lk);
	move(y, x < COLS ? x : COLS - 1);
	strbuf_release(&sb);
}

/* Keys of the one-line overlays: history search, the command prompt, input(). */
static int line_overlay_key(struct ui *ui, int is_key, wint_t ch)
{
	if (ui->ovl.ov == OV_INPUT && !is_key && (ch == CTRL('c') || ch == '\r' || ch == '\n')) {
		struct strbuf err = STRBUF_INIT;
		struct out_cell *c = ui_view_of_request(ui, ui->ovl.input_id);
		ui_overlay_pop(ui);
		if (ch == CTRL('c')) {
			session_interrupt(ui->s);
		} else {
			if (c) {	/* echo the answer where the cell's output goes */
				char *echo = xasprintf("%s%s\n", ui->ovl.input_prompt, ui->ovl.line.buf);
				outmodel_cell_append(&ui->out, c, OUT_STDOUT, echo, strlen(echo));
				free(echo);
			}
			if (session_input_reply(ui->s, ui->ovl.input_id, ui->ovl.line.buf, &err) < 0)
				ui_message(ui, "%s", err.buf);
		}
		strbuf_release(&err);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && (ch == 27 || ch == CTRL('g') || ch == CTRL('c'))) {
		ui_overlay_pop(ui);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && (ch == '\r' || ch == '\n')) {
		char *line = xstrdup(ui->ovl.line.buf);
		enum overlay was = ui->ovl.ov;
		int flags = 0;
		ui_overlay_pop(ui);
		if (was == OV_SEARCH && ui->ovl.search_hit >= 0) {
			edbuf_set(&ui->editor.ed, ui->editor.hist[ui->ovl.search_hit]);
			if (ui->nbv && ui->nbv->editing) {	/* the cell holds what its editor has */
				notebook_set_source(&ui->nbv->nb, ui->nbv->sel, ui->editor.ed.text.buf);
				ui_nbview_show_sel(ui);
			}
		} else if (was == OV_PROMPT) {
			flags = ui_run_command(ui, line);
		} else if (was == OV_FIND && ui->nbv) {
			if (*line) {
				free(ui->nbv->find);
				ui->nbv->find = xstrdup(line);
			}
			ui_nbview_find_next(ui, +1);
		}
		free(line);
		return flags | PANE_HANDLED | PANE_REDRAW;
	}
	if (ui->ovl.ov == OV_SEARCH && !is_key && ch == CTRL('r')) {
		if (ui->ovl.search_hit > 0) {
			long older = ui_hist_search(ui, ui->ovl.search_hit - 1);
			if (older >= 0)
				ui->ovl.search_hit = older;
		}
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (is_key && ch == KEYS_PASTE) {	/* the first line of it */
		size_t n = strcspn(ui->paste, "\n");
		if (ui->ovl.line.len + n <= 1024)
			strbuf_add(&ui->ovl.line, ui->paste, n);
	} else if ((is_key && ch == KEY_BACKSPACE) || (!is_key && (ch == 127 || ch == CTRL('h')))) {
		while (ui->ovl.line.len && (ui->ovl.line.buf[ui->ovl.line.len - 1] & 0xc0) == 0x80)
			ui->ovl.line.len--;
		if (ui->ovl.line.len)
			ui->ovl.line.len--;
		ui->ovl.line.buf[ui->ovl.line.len] = '\0';
	} else if (!is_key && ch >= 0x20) {
		char mb[8];
		mbstate_t st;
		size_t n;
		memset(&st, 0, sizeof(st));
		n = wcrtomb(mb, (wchar_t)ch, &st);
		if (n != (size_t)-1 && ui->ovl.line.len < 1024)
			strbuf_add(&ui->ovl.line, mb, n);
	} else {
		return PANE_HANDLED;
	}
	if (ui->ovl.ov == OV_SEARCH)
		ui->ovl.search_hit = ui->editor.nhist ? ui_hist_search(ui, (long)ui->editor.nhist - 1) : -1;
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the plot viewer (its image: draw_plot_view in ui_plots.c) ---- */

/* The viewer's keys: Left/Right other plots, s saves, q or Esc closes. */
static int plot_view_key(struct ui *ui, int is_key, wint_t ch)
{
	if (is_key && (ch == KEY_LEFT || ch == KEY_UP)) {
		ui->side.plot_sel -= ui->side.plot_sel > 0;
	} else if (is_key && (ch == KEY_RIGHT || ch == KEY_DOWN)) {
		ui->side.plot_sel += ui->side.plot_sel + 1 < ui->nplots;
	} else if (!is_key && ch == 's' && ui->side.plot_sel < ui->nplots) {
		strbuf_reset(&ui->ovl.line);
		strbuf_addf(&ui->ovl.line, "save-plot %d ", ui->plots[ui->side.plot_sel].index);
		ui_overlay_push(ui, OV_PROMPT);	/* over the viewer: it stays once saved */
	} else if ((!is_key && (ch == 'q' || ch == 27 || ch == '\r' || ch == CTRL('c'))) ||
		   (is_key && ch == KEY_F(4))) {
		ui_overlay_pop(ui);
	}
	return PANE_HANDLED | PANE_REDRAW;
}
