/* The UI's colours, drawing primitives, pane layout and the frame. */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

/* Show a message in the status line until the next key (printf-style). */
void ui_message(struct ui *ui, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	free(ui->status.message);
	ui->status.message = strbuf_detach(&sb, NULL);
}

/* ---- colours ---------------------------------------------------------------------------- */

/* The colour pair for fg/bg, made on first use (0 when out of pairs). */
static short pair_for(struct ui *ui, int fg, int bg)
{
	if (!ui->ncolors || (fg == SGR_DEFAULT && bg == SGR_DEFAULT))
		return 0;
	for (int i = 0; i < ui->npairs; i++)
		if (ui->pairs[i].fg == fg && ui->pairs[i].bg == bg)
			return (short)(i + 1);
	if (ui->npairs >= (int)ARRAY_SIZE(ui->pairs) || ui->npairs + 1 >= COLOR_PAIRS)
		return 0;
	init_pair((short)(ui->npairs + 1), (short)fg, (short)bg);
	ui->pairs[ui->npairs].fg = (short)fg;
	ui->pairs[ui->npairs].bg = (short)bg;
	return (short)(++ui->npairs);
}

/* Curses attributes of SGR flags. */
static attr_t flag_attrs(unsigned f)
{
	attr_t a = A_NORMAL;

	if (f & SGR_BOLD)
		a |= A_BOLD;
	if (f & SGR_DIM)
		a |= A_DIM;
	if (f & SGR_UNDERLINE)
		a |= A_UNDERLINE;
	if (f & SGR_REVERSE)
		a |= A_REVERSE;
#ifdef A_ITALIC
	if (f & SGR_ITALIC)
		a |= A_ITALIC;
#endif
	return a;
}

/* A kernel colour fitted to the terminal. */
static int fit_color(const struct ui *ui, int c)
{
	if (c == SGR_DEFAULT || !ui->ncolors)
		return ui->ncolors ? c : SGR_DEFAULT;
	if (ui->ncolors >= 256)
		return c;
	return ui->ncolors >= 16 ? sgr_to_16(c) : sgr_to_8(c);
}


/* The look of theme element `el`, with SGR attributes `sgr` (may be NULL) on top. */
struct look ui_look_of(struct ui *ui, int el, const struct sgr_attr *sgr)
{
	const struct theme_style *st = &ui->theme.style[el];
	int fg = st->fg, bg = st->bg;
	unsigned flags = st->attrs;
	struct look l;

	if (sgr) {
		if (sgr->fg != SGR_DEFAULT)
			fg = fit_color(ui, sgr->fg);
		if (sgr->bg != SGR_DEFAULT)
			bg = fit_color(ui, sgr->bg);
		flags |= sgr->flags;
	}
	l.attr = flag_attrs(flags);
	l.pair = pair_for(ui, fg, bg);
	return l;
}

/* Forget the colour pairs (after a theme change). */
void ui_colors_reset(struct ui *ui)
{
	ui->npairs = 0;
	if (ui->ncolors)
		bkgdset(COLOR_PAIR(pair_for(ui, ui->theme.style[TH_NORMAL].fg,
					    ui->theme.style[TH_NORMAL].bg)));
}

/* ---- drawing primitives ----------------------------------------------------------------- */

/* Decode one UTF-8 character of s[0..len): its code point in *wc, its length returned. */
size_t ui_decode(const char *s, size_t len, wchar_t *wc)
{
	mbstate_t st;
	size_t n;

	memset(&st, 0, sizeof(st));
	n = mbrtowc(wc, s, len, &st);
	if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
		*wc = 0xfffd;
		return 1;
	}
	return n;
}

/* Columns a character takes; control characters are shown as '?'. */
int ui_char_width(wchar_t *wc)
{
	int w;

	if (*wc < 0x20 || *wc == 0x7f || (*wc >= 0x80 && *wc < 0xa0)) {
		*wc = L'?';
		return 1;
	}
	w = wcwidth(*wc);
	if (w < 0) {
		*wc = L'?';
		return 1;
	}
	return w;
}

/* Put one character at y, x with a look. */
void ui_put_wc(int y, int x, wchar_t wc, struct look l)
{
	cchar_t cc;
	wchar_t str[2] = { wc, 0 };

	setcchar(&cc, str, l.attr, l.pair, NULL);
	mvadd_wch(y, x, &cc);
}

/* Write UTF-8 text at y, x, at most `maxw` columns; returns the columns used. */
int ui_put_text(int y, int x, int maxw, const char *s, struct look l)
{
	size_t len = strlen(s);
	int used = 0;

	for (size_t i = 0; i < len;) {
		wchar_t wc;
		int w;

		i += ui_decode(s + i, len - i, &wc);
		if (wc == L'\t')
			wc = L' ';
		w = ui_char_width(&wc);
		if (used + w > maxw)
			break;
		ui_put_wc(y, x + used, wc, l);
		used += w;
	}
	return used;
}

/* Fill a row segment with blanks of a look. */
void ui_fill_row(int y, int x, int w, struct look l)
{
	for (int i = 0; i < w; i++)
		ui_put_wc(y, x + i, L' ', l);
}

/* Draw a box with a title over its top border. */
void ui_draw_box(struct ui *ui, int y, int x, int h, int w, const char *title)
{
	struct look lk = ui_look_of(ui, TH_OVERLAY, NULL);

	for (int r = 0; r < h; r++)
		ui_fill_row(y + r, x, w, lk);
	for (int c = 0; c < w; c++) {
		cchar_t cc;
		setcchar(&cc, L"\u2500", lk.attr, lk.pair, NULL);
		mvadd_wch(y, x + c, &cc);
		mvadd_wch(y + h - 1, x + c, &cc);
	}
	ui_put_text(y, x + 2, w - 4, title, ui_look_of(ui, TH_TITLE, NULL));
}

/* ---- layout and the frame --------------------------------------------------------------- */

/* Place the panes for the current screen size. */
void ui_layout(struct ui *ui)
{
	int side = ui_side_width(ui);
	int ed_h = ui_editor_rows(ui, LINES - 1);
	struct pane *o = &ui->panes[P_OUTPUT], *e = &ui->panes[P_EDITOR];
	struct pane *sd = &ui->panes[P_SIDE], *st = &ui->panes[P_STATUS];

	struct pane *nb = &ui->panes[P_NOTEBOOK];

	o->x = 0, o->y = 0, o->w = COLS - side, o->h = LINES - 1 - ed_h;
	e->x = 0, e->y = o->h, e->w = COLS - side, e->h = ed_h;
	sd->x = COLS - side, sd->y = 0, sd->w = side, sd->h = LINES - 1;
	st->x = 0, st->y = LINES - 1, st->w = COLS, st->h = 1;
	if (o->h < 0)
		o->h = 0;
	/* Notebook mode: one pane where the output and the editor are */
	nb->x = 0, nb->y = 0, nb->w = COLS - side, nb->h = LINES - 1;
}

/* Draw one frame and write it to the terminal once, the plots (and an OSC 52) right after. */
void ui_draw(struct ui *ui)
{
	int cy, cx, plots, cleared;

	ui_layout(ui);
	/* Twice at most: a notebook whose cells drew other heights than laid out draws again. */
	for (int pass = 0; pass < 2; pass++) {
		erase();
		ui->gfx.nplaced = 0;
		for (int i = 0; i < P_COUNT; i++) {
			struct pane *p = &ui->panes[i];
			if (p->visible && p->w > 0 && p->h > 0 && i != ui->focus)
				p->draw(ui, p);
		}
		ui->panes[ui->focus].draw(ui, &ui->panes[ui->focus]);	/* last: the cursor */
		if (!ui->nbv || !ui->nbv->relayout)
			break;
		ui->nbv->relayout = 0;
	}
	getyx(stdscr, cy, cx);
	ui_overlays_draw(ui, cy, cx);	/* and hides the plots they cover */
	plots = ui_plots_prepare(ui, &cleared);
	refresh();
	if (plots)
		ui_plots_write(ui, cleared);
	ui_clip_flush(ui);		/* a copy for the terminal's clipboard */
}

