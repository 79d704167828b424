/*
 * `cellbox tui`: the full-screen split-pane interface (ncursesw).
 *
 * Panes (output, editor, side, status) are rectangles of the screen with a draw function and a
 * key handler that returns flags, as htop's Panel does; overlays (help, pager, completion
 * menu, history search, command prompt) take the keys first while open. One poll loop
 * multiplexes the keyboard, SIGWINCH (through a self-pipe) and the session's descriptor, so
 * the screen stays live while a cell runs. cellbox's own commands are a table of designated
 * initialisers, as tmux's cmd_entry.
 */
#include "cli.h"
#include "edbuf.h"
#include "graphics.h"
#include "highlight.h"
#include "ipycolors.h"
#include "outmodel.h"
#include "sgr.h"
#include "theme.h"
#include "cellfile.h"
#include "files.h"
#include "record.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#ifndef CELLBOX_THEMES_DIR
#define CELLBOX_THEMES_DIR "/usr/local/share/cellbox/themes"
#endif

#define OUT_CELL_MAX (256u << 10)	/* output bytes kept per cell on screen */
#define OUT_TOTAL_MAX (8u << 20)	/* output bytes kept on screen in all */
#define HIST_MAX 10000			/* cells kept for Up/Down and Ctrl-R */
#define SIDE_WIDTH 28
#define PLACES_MAX 64			/* plots drawn in one frame */
#define TUI_QUERY_MS 500		/* the wait for the terminal's answers */

/* What a key handler did. */
enum {
	PANE_HANDLED = 1 << 0,	/* the key was taken */
	PANE_REDRAW = 1 << 1,	/* the screen must be drawn again */
	PANE_QUIT = 1 << 2,	/* leave the UI */
};

struct ui;

struct pane {
	const char *name;
	int x, y, w, h;
	int visible;
	void (*draw)(struct ui *ui, struct pane *p);
	int (*key)(struct ui *ui, struct pane *p, int is_key, wint_t ch);
};

enum { P_OUTPUT, P_EDITOR, P_SIDE, P_STATUS, P_COUNT };

enum overlay { OV_NONE, OV_PAGER, OV_MENU, OV_SEARCH, OV_PROMPT, OV_INPUT, OV_PLOT };

/* A captured plot: its file and its decoded image (NULL when it could not be read). */
struct ui_plot {
	int index, w, h;
	char *path;		/* the file in the channel, for the eyes (open it by `rel`) */
	char *rel;		/* its name there, as the kernel gave it: outputs_open_file() */
	struct graphics_image *img;
};

/* Where a frame draws a plot: screen rows y.. of the image fitted to cols x rows, cropped. */
struct plot_place {
	struct graphics_image *img;
	int y, x, cols, rows, crop_row, crop_rows;
};

struct ui {
	struct cellbox_config *cfg;
	struct session *s;
	struct record rec;		/* this session's cells into the history store */
	struct outmodel out;
	struct edbuf ed;
	struct pane panes[P_COUNT];
	struct theme theme;
	char kernel_scheme[16];		/* IPython's colour scheme the kernel has */
	int ncolors;			/* 0 = no colour (NO_COLOR or a monochrome terminal) */
	char *themes_dirs[5];
	/* History of this session's cells. */
	char **hist;
	size_t nhist, hist_alloc;
	size_t hist_pos;		/* == nhist: the cell being written */
	char *hist_saved;		/* the cell being written while walking history */
	/* Kernel and cells. */
	size_t npending;		/* cells submitted and not done */
	int exec_count;
	double last_duration;
	int spinner;
	double spin_at;
	char *dead_reason;
	int restarting;
	unsigned long is_complete_id, complete_id;
	char *is_complete_text;		/* the text is_complete was asked about */
	/* Plots, for the side pane. */
	struct ui_plot *plots;
	size_t nplots, plots_alloc;
	size_t plot_sel;		/* the gallery's plot (an index into plots) */
	/* Inline plots: the terminal's capabilities and what the frames drew (graphics.h). */
	enum graphics_mode gwant, gmode;
	enum blocks_kind blocks;	/* block characters (resolved from the setting) */
	struct termcap tc;
	struct plot_place placed[PLACES_MAX], shown[PLACES_MAX];
	int nplaced, nshown;		/* this frame's plots, the plots on the terminal now */
	struct strbuf gbuf;		/* the frame's graphics bytes */
	size_t gbytes;			/* graphics bytes written so far */
	/* Output pane. */
	int scroll;			/* rows scrolled back from the bottom */
	int follow;
	/* Overlays. */
	enum overlay ov;
	struct strbuf pager;
	char *pager_title;
	int pager_top;
	char **menu;
	size_t nmenu, menu_sel, comp_from, comp_to;
	struct strbuf line;		/* the search or command being typed */
	long search_hit;
	unsigned long input_id;		/* the cell whose input() is being answered */
	char *input_prompt;
	char *message;			/* one line shown in the status bar until the next key */
	int esc;			/* the previous key was a lone ESC (Alt- prefix) */
	int quit;
	int wake[2];			/* SIGWINCH self-pipe */
	/* Colour pairs handed out so far. */
	struct { short fg, bg; } pairs[1024];
	int npairs;
};

static int wake_fd = -1;

static void menu_free(struct ui *ui);

/* Wake the poll loop: 'w' a window size change, 'i' SIGINT, 'q' SIGTERM or SIGHUP. */
static void on_signal(int sig)
{
	int saved = errno;
	char c = sig == SIGWINCH ? 'w' : sig == SIGINT ? 'i' : 'q';

	if (write(wake_fd, &c, 1) < 0)
		(void)0;
	errno = saved;
}

/* Show `msg` in the status line until the next key. */
static void ui_message(struct ui *ui, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the status-line message (printf-style). */
static void ui_message(struct ui *ui, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	free(ui->message);
	ui->message = strbuf_detach(&sb, NULL);
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

struct look {
	attr_t attr;
	short pair;
};

/* The look of theme element `el`, with SGR attributes `sgr` (may be NULL) on top. */
static struct look look_of(struct ui *ui, int el, const struct sgr_attr *sgr)
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
static void colors_reset(struct ui *ui)
{
	ui->npairs = 0;
	if (ui->ncolors)
		bkgdset(COLOR_PAIR(pair_for(ui, ui->theme.style[TH_NORMAL].fg,
					    ui->theme.style[TH_NORMAL].bg)));
}

/* ---- drawing primitives ----------------------------------------------------------------- */

/* Decode one UTF-8 character of s[0..len): its code point in *wc, its length returned. */
static size_t decode(const char *s, size_t len, wchar_t *wc)
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
static int char_width(wchar_t *wc)
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
static void put_wc(int y, int x, wchar_t wc, struct look l)
{
	cchar_t cc;
	wchar_t str[2] = { wc, 0 };

	setcchar(&cc, str, l.attr, l.pair, NULL);
	mvadd_wch(y, x, &cc);
}

/* Write UTF-8 text at y, x, at most `maxw` columns; returns the columns used. */
static int put_text(int y, int x, int maxw, const char *s, struct look l)
{
	size_t len = strlen(s);
	int used = 0;

	for (size_t i = 0; i < len;) {
		wchar_t wc;
		int w;

		i += decode(s + i, len - i, &wc);
		if (wc == L'\t')
			wc = L' ';
		w = char_width(&wc);
		if (used + w > maxw)
			break;
		put_wc(y, x + used, wc, l);
		used += w;
	}
	return used;
}

/* Fill a row segment with blanks of a look. */
static void fill_row(int y, int x, int w, struct look l)
{
	for (int i = 0; i < w; i++)
		put_wc(y, x + i, L' ', l);
}

/* ---- output pane layout ----------------------------------------------------------------- */

/* Lays out wrapped text, drawing the rows that fall inside the pane. */
struct lay {
	struct ui *ui;
	int x, width;
	int row, col;		/* position in the cell's own rows */
	int base_y;		/* screen row of the cell's row 0 */
	int top, bottom;	/* screen rows that may be drawn */
	int draw;
};

/* Whether row `row` is on screen. */
static int lay_visible(const struct lay *l)
{
	int y = l->base_y + l->row;
	return l->draw && y >= l->top && y < l->bottom;
}

/* End the current row. */
static void lay_newline(struct lay *l)
{
	l->row++;
	l->col = 0;
}

/* Put one character, wrapping at the pane's width. */
static void lay_put(struct lay *l, wchar_t wc, struct look lk)
{
	int w;

	if (wc == L'\n') {
		lay_newline(l);
		return;
	}
	if (wc == L'\t') {
		int n = 8 - l->col % 8;
		while (n-- > 0 && l->col < l->width)
			lay_put(l, L' ', lk);
		return;
	}
	w = char_width(&wc);
	if (w == 0)
		return;
	if (l->col + w > l->width)
		lay_newline(l);
	if (lay_visible(l))
		put_wc(l->base_y + l->row, l->x + l->col, wc, lk);
	l->col += w;
}

/* Lay out plain UTF-8 text in one look. */
static void lay_text(struct lay *l, const char *s, struct look lk)
{
	size_t len = strlen(s);

	for (size_t i = 0; i < len;) {
		wchar_t wc;
		i += decode(s + i, len - i, &wc);
		lay_put(l, wc, lk);
	}
}

/* Lay out sanitised kernel text, its SGR sequences turned into looks over element `el`. */
static void lay_sgr_text(struct lay *l, const char *s, size_t len, int el)
{
	struct sgr_attr a;
	struct look lk;

	sgr_reset(&a);
	lk = look_of(l->ui, el, NULL);
	for (size_t i = 0; i < len;) {
		wchar_t wc;
		size_t n;

		if (s[i] == '\x1b') {
			n = sgr_take(s + i, len - i, &a);
			i += n ? n : 1;		/* a cut-off sequence is skipped */
			if (n)
				lk = look_of(l->ui, el, &a);
			continue;
		}
		i += decode(s + i, len - i, &wc);
		lay_put(l, wc, lk);
	}
}

/* Lay out Python code, highlighted, each line after `first` or `cont`. */
static void lay_code(struct lay *l, const char *code, const char *first, const char *cont)
{
	int state = HL_STATE_NORMAL;
	const char *p = code;
	struct look prompt = look_of(l->ui, TH_PROMPT_IN, NULL);
	unsigned char *cls = NULL;
	size_t cls_alloc = 0;

	for (int lineno = 0;; lineno++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len + 1 > cls_alloc) {
			cls_alloc = len + 64;
			cls = xrealloc(cls, cls_alloc);
		}
		state = hl_line(p, len, state, cls);
		lay_text(l, lineno ? cont : first, prompt);
		for (size_t i = 0; i < len;) {
			wchar_t wc;
			int el = cls[i] == HL_TEXT ? TH_NORMAL : TH_SYNTAX_KEYWORD + cls[i] - 1;
			size_t n = decode(p + i, len - i, &wc);
			lay_put(l, wc, look_of(l->ui, el, NULL));
			i += n;
		}
		lay_newline(l);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(cls);
}

/* The captured plot with kernel index `index`, or NULL. */
static struct ui_plot *plot_find(struct ui *ui, int index)
{
	for (size_t i = ui->nplots; i-- > 0;)
		if (ui->plots[i].index == index)
			return &ui->plots[i];
	return NULL;
}

/* The request that fits a plot in `cols` x `rows` cells in this terminal's graphics mode. */
static void plot_request(const struct ui *ui, int cols, int rows, struct graphics_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->mode = ui->gmode;
	rq->cols = cols;
	rq->rows = rows;
	rq->cell_w = ui->tc.cell_w;
	rq->cell_h = ui->tc.cell_h;
	rq->truecolor = ui->tc.truecolor;
	rq->blocks = ui->blocks;
	if (ui->gmode == GRAPHICS_SIXEL) {
		rq->max_w = ui->tc.r.sixel_max_w;
		rq->max_h = ui->tc.r.sixel_max_h;
		rq->colors = ui->tc.r.color_registers;
		if (ui->tc.tmux && !ui->tc.r.sixel)
			rq->flags |= GRAPHICS_TMUX_PASSTHROUGH;
	} else if (ui->gmode != GRAPHICS_BLOCKS && ui->tc.tmux) {
		rq->flags |= GRAPHICS_TMUX_PASSTHROUGH;	/* kitty, iTerm2: tmux has neither */
	}
}

/* Whether plots are drawn at all. */
static int plots_drawn(const struct ui *ui)
{
	return ui->gmode != GRAPHICS_NONE && ui->gmode != GRAPHICS_AUTO;
}

/*
 * The most rows a plot takes in the output pane: half the screen for the pixel protocols;
 * block characters, coarse as they are, get the pane (the screen but the status line and
 * a two-row editor) less six rows, so the plot's line, the text around it and the cell's
 * first row still show with it.
 */
static int plot_cap_rows(const struct ui *ui)
{
	if (ui->gmode == GRAPHICS_BLOCKS)
		return LINES > 15 ? LINES - 9 : 6;
	return LINES > 12 ? LINES / 2 : 6;
}

/* Rows of the image of plot `ch` in the output pane at `width`; 0 when it is not drawn. */
static int plot_rows(struct ui *ui, const struct out_chunk *ch, int width)
{
	struct ui_plot *pl;
	struct graphics_request rq;
	struct graphics_size sz;

	if (!plots_drawn(ui))
		return 0;
	pl = plot_find(ui, ch->plot_index);
	if (!pl || !pl->img || width < 4)
		return 0;
	plot_request(ui, width, plot_cap_rows(ui), &rq);
	graphics_fit(pl->img, &rq, &sz);
	return sz.rows;
}

/*
 * Add a plot to the frame: fitted to cols x rows cells, its `height` rows starting at screen
 * row y, drawn where they fall inside screen rows top..bottom-1.
 */
static void plot_place(struct ui *ui, struct graphics_image *img, int y, int x, int cols,
		       int rows, int height, int top, int bottom)
{
	struct plot_place *pp;
	int first = y > top ? y : top, end = y + height < bottom ? y + height : bottom;

	if (end <= first || ui->nplaced >= PLACES_MAX)
		return;
	pp = &ui->placed[ui->nplaced++];
	pp->img = img;
	pp->y = first;
	pp->x = x;
	pp->cols = cols;
	pp->rows = rows;
	pp->crop_row = first - y;
	pp->crop_rows = end - first;
}

/* Lay out one cell: In [n] and its code, then its output. Returns its rows. */
static int lay_cell(struct lay *l, const struct out_cell *c)
{
	char first[32];

	l->row = l->col = 0;
	if (c->code) {
		if (c->count)
			snprintf(first, sizeof(first), "In [%d]: ", c->count);
		else
			snprintf(first, sizeof(first), "In [%s]: ", c->done ? " " : "*");
		lay_code(l, c->code, first, "   ...: ");
	}
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
			snprintf(out, sizeof(out), "Out[%d]: ", c->count);
			lay_text(l, out, look_of(l->ui, TH_PROMPT_OUT, NULL));
		}
		if (ch->kind == OUT_PLOT) {
			int start, rows = plot_rows(l->ui, ch, l->width);
			lay_sgr_text(l, ch->text.buf, len, TH_PLOT);
			start = l->row;		/* the image's rows, reserved below its line */
			if (rows && l->draw) {
				/* The "more rows below" marker keeps the pane's last row. */
				int bottom = l->bottom - (l->ui->scroll > 0);
				plot_place(l->ui, plot_find(l->ui, ch->plot_index)->img,
					   l->base_y + start, l->x, l->width, plot_cap_rows(l->ui), rows,
					   l->top, bottom);
			}
			while (l->row - start < rows)
				lay_newline(l);
			continue;
		}
		lay_sgr_text(l, ch->text.buf, len, el_of[ch->kind]);
		if (len && ch->text.buf[len - 1] != '\n')
			lay_newline(l);
	}
	lay_newline(l);		/* a blank row between cells */
	return l->row;
}

/* Rows of cell `c` at `width` (cached). */
static int cell_rows(struct ui *ui, struct out_cell *c, int width)
{
	struct lay l = { .ui = ui, .width = width };

	if (c->rows_width != width) {
		c->rows = lay_cell(&l, c);
		c->rows_width = width;
	}
	return c->rows;
}

/* Draw the output pane: the cells that fall in view after scrolling. */
static void draw_output(struct ui *ui, struct pane *p)
{
	long total = 0, top, y;
	size_t i;

	for (i = 0; i < ui->out.ncells; i++)
		total += cell_rows(ui, ui->out.cells[i], p->w);
	if (ui->follow)
		ui->scroll = 0;
	if (ui->scroll > total - p->h)
		ui->scroll = total > p->h ? (int)(total - p->h) : 0;
	if (ui->scroll < 0)
		ui->scroll = 0;
	top = total - p->h - ui->scroll;	/* the cell row at the pane's first screen row */
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
			lay_cell(&l, c);
		}
		y += rows;
	}
	if (!ui->out.ncells)
		put_text(p->y, p->x, p->w, "cellbox: write a cell below, Enter runs it. F1: help.",
			 look_of(ui, TH_INFO, NULL));
	if (ui->scroll) {
		char buf[48];
		snprintf(buf, sizeof(buf), " -- %d more rows below -- ", ui->scroll);
		put_text(p->y + p->h - 1, p->x + p->w - (int)strlen(buf), p->w, buf,
			 look_of(ui, TH_STATUS, NULL));
	}
}

/* ---- editor pane ------------------------------------------------------------------------ */

/* Rows the editor wants: its lines and the separator, at most half the screen. */
static int editor_rows(const struct ui *ui, int screen_h)
{
	int want = (int)edbuf_lines(&ui->ed) + 1, max = screen_h / 2;

	if (max < 2)
		max = 2;
	return want < max ? want : max;
}

/* Draw the editor pane: a separator with hints, the highlighted cell, the cursor. */
static void draw_editor(struct ui *ui, struct pane *p)
{
	struct look sep = look_of(ui, TH_BORDER, NULL), prompt = look_of(ui, TH_PROMPT_IN, NULL);
	struct look bracket = look_of(ui, TH_BRACKET, NULL);
	size_t cur_line = edbuf_line(&ui->ed), nlines = edbuf_lines(&ui->ed), first_line = 0;
	int rows = p->h - 1, state = HL_STATE_NORMAL, prompt_w = 8, cur_x = 0, cur_y = p->y + 1;
	size_t cur_col = edbuf_col(&ui->ed), hscroll = 0;
	long at, match = edbuf_match_bracket(&ui->ed, &at);
	const char *text = ui->ed.text.buf;
	unsigned char *cls = xmalloc(ui->ed.text.len + 1);
	char title[96];

	for (int x = 0; x < p->w; x++) {
		cchar_t cc;
		setcchar(&cc, L"\u2500", sep.attr, sep.pair, NULL);
		mvadd_wch(p->y, p->x + x, &cc);
	}
	snprintf(title, sizeof(title), " In [%d] \u00b7 Enter runs \u00b7 Ctrl-J newline \u00b7 "
		 "F1 help ", ui->exec_count + 1);
	put_text(p->y, p->x + 2, p->w - 2, title, look_of(ui, TH_TITLE, NULL));
	if (rows < 1)
		rows = 1;
	if (cur_line >= (size_t)rows)
		first_line = cur_line - (size_t)rows + 1;
	if (cur_col + (size_t)prompt_w + 1 > (size_t)p->w)
		hscroll = cur_col + (size_t)prompt_w + 1 - (size_t)p->w;
	/* Classify the whole text once, line by line, carrying the string state. */
	for (size_t ln = 0, off = 0; ln < nlines; ln++) {
		size_t end = edbuf_line_start(&ui->ed, ln + 1), len;
		len = end > off && ln + 1 < nlines ? end - off - 1 : end - off;
		state = hl_line(text + off, len, state, cls + off);
		off = end;
	}
	for (int r = 0; r < rows && first_line + (size_t)r < nlines; r++) {
		size_t ln = first_line + (size_t)r, off = edbuf_line_start(&ui->ed, ln);
		size_t end = ln + 1 < nlines ? edbuf_line_start(&ui->ed, ln + 1) - 1 : ui->ed.text.len;
		int y = p->y + 1 + r, x = prompt_w;
		size_t col = 0;

		put_text(y, p->x, prompt_w, ln ? "   ...: " : "In  >>: ", prompt);
		for (size_t i = off; i < end;) {
			wchar_t wc;
			size_t n = decode(text + i, end - i, &wc);
			int el = cls[i] == HL_TEXT ? TH_NORMAL : TH_SYNTAX_KEYWORD + cls[i] - 1;
			int w = wc == L'\t' ? 1 : char_width(&wc);
			struct look lk = ((long)i == at || (long)i == match) && match >= 0 ?
					 bracket : look_of(ui, el, NULL);

			if (wc == L'\t')
				wc = L' ';
			if (col >= hscroll && x + w <= p->w)
				put_wc(y, p->x + x, wc, lk);
			if (col >= hscroll)
				x += w;
			if (ln == cur_line && i + n == ui->ed.cur)
				cur_x = x;
			col++;
			i += n;
		}
		if (ln == cur_line) {
			cur_y = y;
			if (ui->ed.cur == off)
				cur_x = prompt_w;
		}
	}
	free(cls);
	if (cur_x >= p->w)
		cur_x = p->w - 1;
	move(cur_y, p->x + cur_x);
}

/* ---- side pane and status line ---------------------------------------------------------- */

/* Draw the side pane: this session's history, newest first, and the plots. */
static void draw_side(struct ui *ui, struct pane *p)
{
	struct look title = look_of(ui, TH_TITLE, NULL), text = look_of(ui, TH_SIDE, NULL);
	struct look border = look_of(ui, TH_BORDER, NULL);
	int y = p->y, plots_h = ui->nplots ? (int)(ui->nplots < 6 ? ui->nplots : 6) + 1 : 0;
	int hist_end = p->y + p->h - plots_h;

	for (int r = 0; r < p->h; r++) {
		cchar_t cc;
		setcchar(&cc, L"\u2502", border.attr, border.pair, NULL);
		mvadd_wch(p->y + r, p->x, &cc);
	}
	put_text(y++, p->x + 2, p->w - 2, "History", title);
	for (size_t i = ui->nhist; i-- > 0 && y < hist_end;) {
		char *first = xstrdup(ui->hist[i]), *nl = strchr(first, '\n');
		if (nl)
			strcpy(nl, " \u2026");
		put_text(y++, p->x + 2, p->w - 2, first, text);
		free(first);
	}
	if (plots_h) {
		y = hist_end;
		put_text(y++, p->x + 2, p->w - 2, "Plots", title);
		for (size_t i = ui->nplots; i-- > 0 && y < p->y + p->h;) {
			char buf[64];
			snprintf(buf, sizeof(buf), "plot %d  %dx%d", ui->plots[i].index,
				 ui->plots[i].w, ui->plots[i].h);
			put_text(y++, p->x + 2, p->w - 2, buf, i == ui->plot_sel ?
				 look_of(ui, TH_MENU_SELECTED, NULL) : text);
		}
	}
}

/* Draw the status line: kernel state, backend, count, duration, theme or a message. */
static void draw_status(struct ui *ui, struct pane *p)
{
	static const char spin[] = "|/-\\";
	enum session_state st = session_state(ui->s);
	const char *state = "idle";
	int el = TH_STATUS;
	char buf[256];

	if (ui->restarting) {
		state = "restarting", el = TH_STATUS_BUSY;
	} else if (st == SESSION_DEAD) {
		state = "dead", el = TH_STATUS_DEAD;
	} else if (ui->npending || st == SESSION_BUSY) {
		state = "busy", el = TH_STATUS_BUSY;
	} else if (st == SESSION_STARTING) {
		state = "starting", el = TH_STATUS_BUSY;
	}
	fill_row(p->y, p->x, p->w, look_of(ui, TH_STATUS, NULL));
	snprintf(buf, sizeof(buf), " %c %s ", !strcmp(state, "busy") ? spin[ui->spinner % 4] : ' ',
		 state);
	{
		int x = put_text(p->y, p->x, p->w, buf, look_of(ui, el, NULL));
		if (ui->message)
			snprintf(buf, sizeof(buf), " %s", ui->message);
		else
			snprintf(buf, sizeof(buf), " %s \u2502 [%d] \u2502 %.3f s \u2502 %s \u2502 "
				 "F1 help  Ctrl-O command  Ctrl-Q quit", session_backend_name(ui->s),
				 ui->exec_count, ui->last_duration, ui->theme.name ? ui->theme.name : "");
		put_text(p->y, p->x + x, p->w - x, buf, look_of(ui, TH_STATUS, NULL));
	}
}

/* ---- overlays --------------------------------------------------------------------------- */

/* Open the pager overlay on `text`. */
static void pager_open(struct ui *ui, const char *title, const char *text)
{
	strbuf_reset(&ui->pager);
	sanitize_str(text, strlen(text), 0, &ui->pager);
	free(ui->pager_title);
	ui->pager_title = xstrdup(title);
	ui->pager_top = 0;
	ui->ov = OV_PAGER;
}

/* Draw a box with a title; returns the inner rectangle through the pointers. */
static void draw_box(struct ui *ui, int y, int x, int h, int w, const char *title)
{
	struct look lk = look_of(ui, TH_OVERLAY, NULL);

	for (int r = 0; r < h; r++)
		fill_row(y + r, x, w, lk);
	for (int c = 0; c < w; c++) {
		cchar_t cc;
		setcchar(&cc, L"\u2500", lk.attr, lk.pair, NULL);
		mvadd_wch(y, x + c, &cc);
		mvadd_wch(y + h - 1, x + c, &cc);
	}
	put_text(y, x + 2, w - 4, title, look_of(ui, TH_TITLE, NULL));
}

/* Draw the pager overlay (help, obj?). */
static void draw_pager(struct ui *ui)
{
	int h = LINES - 2, w = COLS - 4, y = 1, x = 2, row = 0;
	struct look lk = look_of(ui, TH_OVERLAY, NULL);
	const char *p = ui->pager.buf;
	char title[128];

	if (h < 3 || w < 10)
		return;
	snprintf(title, sizeof(title), " %s \u00b7 Up/Down/PgUp/PgDn scroll \u00b7 q or Esc closes ",
		 ui->pager_title);
	draw_box(ui, y, x, h, w, title);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, len);

		if (row >= ui->pager_top && row - ui->pager_top < h - 2)
			put_text(y + 1 + row - ui->pager_top, x + 1, w - 2, line, lk);
		free(line);
		row++;
		p += len + (nl ? 1 : 0);
	}
	if (ui->pager_top > row - 1)
		ui->pager_top = row > 0 ? row - 1 : 0;
}

/* Draw the completion menu above the cursor. */
static void draw_menu(struct ui *ui)
{
	struct pane *ed = &ui->panes[P_EDITOR];
	int h = (int)(ui->nmenu < 10 ? ui->nmenu : 10), w = 10, first = 0;
	int y = ed->y - h, x = ed->x + 8 + (int)edbuf_col(&ui->ed);

	for (size_t i = 0; i < ui->nmenu; i++)
		if ((int)strlen(ui->menu[i]) + 2 > w)
			w = (int)strlen(ui->menu[i]) + 2;
	if (w > COLS - 2)
		w = COLS - 2;
	if (x + w > COLS)
		x = COLS - w;
	if (y < 0)
		y = 0;
	if ((int)ui->menu_sel >= h)
		first = (int)ui->menu_sel - h + 1;
	for (int r = 0; r < h && first + r < (int)ui->nmenu; r++) {
		struct look lk = look_of(ui, (size_t)(first + r) == ui->menu_sel ? TH_MENU_SELECTED
								      : TH_MENU, NULL);
		fill_row(y + r, x, w, lk);
		put_text(y + r, x + 1, w - 1, ui->menu[first + r], lk);
	}
}

/* The one-line overlays (history search, command prompt) over the status line. */
static void draw_line_overlay(struct ui *ui)
{
	struct look lk = look_of(ui, TH_MENU, NULL);
	struct strbuf sb = STRBUF_INIT;
	int y = LINES - 1, x;

	if (ui->ov == OV_SEARCH) {
		const char *hit = ui->search_hit >= 0 ? ui->hist[ui->search_hit] : "";
		char *one = xstrdup(hit), *nl;
		for (nl = strchr(one, '\n'); nl; nl = strchr(nl, '\n'))
			*nl = ' ';
		strbuf_addf(&sb, "(history search)'%s': ", ui->line.buf);
		x = (int)sb.len;
		strbuf_addstr(&sb, one);
		free(one);
	} else if (ui->ov == OV_INPUT) {
		strbuf_addf(&sb, "input: %s", ui->input_prompt ? ui->input_prompt : "");
		x = (int)sb.len;
		strbuf_addstr(&sb, ui->line.buf);
		x = (int)sb.len;
	} else {
		strbuf_addf(&sb, ":%s", ui->line.buf);
		x = (int)sb.len;
	}
	fill_row(y, 0, COLS, lk);
	put_text(y, 0, COLS, sb.buf, lk);
	move(y, x < COLS ? x : COLS - 1);
	strbuf_release(&sb);
}

/* Draw the plot viewer: the gallery's plot on the whole screen but the status line. */
static void draw_plot_view(struct ui *ui)
{
	struct ui_plot *pl = ui->plot_sel < ui->nplots ? &ui->plots[ui->plot_sel] : NULL;
	struct graphics_request rq;
	struct graphics_size sz;
	int h = LINES - 1, w = COLS;
	char title[192];

	if (!pl || h < 4 || w < 10) {
		ui->ov = OV_NONE;
		return;
	}
	snprintf(title, sizeof(title), " plot %d \u00b7 %dx%d \u00b7 %zu of %zu \u00b7 Left/Right: "
		 "other plots \u00b7 s: save as \u00b7 q or Esc closes ", pl->index, pl->w, pl->h,
		 ui->plot_sel + 1, ui->nplots);
	draw_box(ui, 0, 0, h, w, title);
	if (!pl->img) {
		char *line = xasprintf("no inline graphics here (--graphics %s); the PNG is %s",
				       graphics_mode_name(ui->gmode), pl->path ? pl->path : "gone");
		put_text(2, 2, w - 4, line, look_of(ui, TH_OVERLAY, NULL));
		free(line);
		return;
	}
	plot_request(ui, w - 2, h - 2, &rq);
	graphics_fit(pl->img, &rq, &sz);
	plot_place(ui, pl->img, 1, 1 + (w - 2 - sz.cols) / 2, w - 2, h - 2, sz.rows, 1, h - 1);
}

/* Whether two frames draw a plot the same way. */
static int place_equal(const struct plot_place *a, const struct plot_place *b)
{
	return a->img == b->img && a->y == b->y && a->x == b->x && a->cols == b->cols &&
	       a->rows == b->rows && a->crop_row == b->crop_row && a->crop_rows == b->crop_rows;
}

/* Drop the plots an overlay covers: all under the pager, those beside the completion menu. */
static void plots_hide(struct ui *ui)
{
	if (ui->ov == OV_PAGER) {
		ui->nplaced = 0;
	} else if (ui->ov == OV_MENU) {
		int h = (int)(ui->nmenu < 10 ? ui->nmenu : 10), top = ui->panes[P_EDITOR].y - h;
		int k = 0;
		for (int i = 0; i < ui->nplaced; i++)
			if (ui->placed[i].y + ui->placed[i].crop_rows <= top)
				ui->placed[k++] = ui->placed[i];
		ui->nplaced = k;
	}
}

/*
 * Before curses' update: when the plots on the terminal are not the ones this frame draws,
 * make curses forget the cells under them (wredrawln), so it rewrites those rows and the
 * old pixels go (kitty placements are not in the cells: plots_write deletes them). Returns
 * whether the plots must be written after the update; sets *cleared when the screen is
 * wiped, which takes kitty's placements with it.
 */
static int plots_prepare(struct ui *ui, int *cleared)
{
	int same = ui->nplaced == ui->nshown;

	*cleared = is_cleared(curscr) || is_cleared(stdscr);
	for (int i = 0; same && i < ui->nplaced; i++)
		same = place_equal(&ui->placed[i], &ui->shown[i]);
	if (same && !*cleared)
		return 0;
	for (int i = 0; i < ui->nshown && graphics_mode_in_cells(ui->gmode); i++)
		wredrawln(stdscr, ui->shown[i].y, ui->shown[i].crop_rows);
	return 1;
}

/* The plot this frame places where `old` was shown (the same image), or NULL. */
static const struct plot_place *placed_again(const struct ui *ui, const struct plot_place *old)
{
	for (int i = 0; i < ui->nplaced; i++)
		if (ui->placed[i].img == old->img)
			return &ui->placed[i];
	return NULL;
}

/*
 * After curses' update: write the frame's plots at once, the cursor saved around them.
 * Images in the cells are all drawn again (curses has just rewritten the old ones away);
 * kitty placements that went are deleted, and only those that moved are placed again.
 */
static void plots_write(struct ui *ui, int cleared)
{
	int layer = !graphics_mode_in_cells(ui->gmode);

	strbuf_reset(&ui->gbuf);
	strbuf_addstr(&ui->gbuf, "\x1b" "7");	/* DECSC ... DECRC: curses' cursor and colours */
	for (int i = 0; layer && !cleared && i < ui->nshown; i++) {
		struct graphics_request rq;

		if (!ui->shown[i].img || placed_again(ui, &ui->shown[i]))
			continue;
		plot_request(ui, ui->shown[i].cols, ui->shown[i].rows, &rq);
		graphics_unplace(ui->shown[i].img, &rq, &ui->gbuf);
	}
	for (int i = 0; i < ui->nplaced; i++) {
		struct plot_place *pp = &ui->placed[i];
		struct graphics_request rq;

		if (layer && !cleared) {
			int k = 0;
			while (k < ui->nshown && ui->shown[k].img != pp->img)
				k++;
			if (k < ui->nshown && place_equal(pp, &ui->shown[k]))
				continue;	/* a placement that did not move stays */
		}
		plot_request(ui, pp->cols, pp->rows, &rq);
		rq.crop_row = pp->crop_row;
		rq.crop_rows = pp->crop_rows;
		strbuf_addf(&ui->gbuf, "\x1b[%d;%dH", pp->y + 1, pp->x + 1);
		graphics_render(pp->img, &rq, &ui->gbuf, NULL, NULL);
	}
	if (ui->gbuf.len > 2) {
		strbuf_addstr(&ui->gbuf, "\x1b" "8");
		write_all(1, ui->gbuf.buf, ui->gbuf.len);
		ui->gbytes += ui->gbuf.len;
	}
	memcpy(ui->shown, ui->placed, (size_t)ui->nplaced * sizeof(*ui->placed));
	ui->nshown = ui->nplaced;
}

/* Make the terminal drop every plot image it holds (kitty), written at once. */
static void plots_drop(struct ui *ui)
{
	struct graphics_request rq;

	plot_request(ui, 1, 1, &rq);
	strbuf_reset(&ui->gbuf);
	for (size_t i = 0; i < ui->nplots; i++)
		if (ui->plots[i].img)
			graphics_forget(ui->plots[i].img, &rq, &ui->gbuf);
	if (ui->gbuf.len) {
		write_all(1, ui->gbuf.buf, ui->gbuf.len);
		ui->gbytes += ui->gbuf.len;
	}
}

/* ---- layout and the frame --------------------------------------------------------------- */

/* Place the panes for the current screen size. */
static void ui_layout(struct ui *ui)
{
	int side = ui->panes[P_SIDE].visible && COLS >= 60 ? SIDE_WIDTH : 0;
	int ed_h = editor_rows(ui, LINES - 1);
	struct pane *o = &ui->panes[P_OUTPUT], *e = &ui->panes[P_EDITOR];
	struct pane *sd = &ui->panes[P_SIDE], *st = &ui->panes[P_STATUS];

	o->x = 0, o->y = 0, o->w = COLS - side, o->h = LINES - 1 - ed_h;
	e->x = 0, e->y = o->h, e->w = COLS - side, e->h = ed_h;
	sd->x = COLS - side, sd->y = 0, sd->w = side, sd->h = LINES - 1;
	st->x = 0, st->y = LINES - 1, st->w = COLS, st->h = 1;
	if (o->h < 0)
		o->h = 0;
}

/* Draw one frame and write it to the terminal once, the plots right after. */
static void ui_draw(struct ui *ui)
{
	int cy, cx, plots, cleared;

	ui_layout(ui);
	erase();
	ui->nplaced = 0;
	for (int i = 0; i < P_COUNT; i++) {
		struct pane *p = &ui->panes[i];
		if (p->visible && p->w > 0 && p->h > 0 && i != P_EDITOR)
			p->draw(ui, p);
	}
	ui->panes[P_EDITOR].draw(ui, &ui->panes[P_EDITOR]);	/* last: it places the cursor */
	getyx(stdscr, cy, cx);
	if (ui->ov == OV_PAGER)
		draw_pager(ui);
	else if (ui->ov == OV_MENU)
		draw_menu(ui);
	else if (ui->ov == OV_SEARCH || ui->ov == OV_PROMPT || ui->ov == OV_INPUT)
		draw_line_overlay(ui);
	plots_hide(ui);
	if (ui->ov == OV_PLOT) {
		ui->nplaced = 0;
		draw_plot_view(ui);
	}
	if (ui->ov == OV_NONE || ui->ov == OV_MENU)
		move(cy, cx);
	curs_set(ui->ov == OV_PAGER || ui->ov == OV_PLOT ? 0 : 1);
	plots = plots_prepare(ui, &cleared);
	refresh();
	if (plots)
		plots_write(ui, cleared);
}

/* ---- history ---------------------------------------------------------------------------- */

/* Remember a cell for Up/Down and Ctrl-R (not twice in a row). */
static void hist_add(struct ui *ui, const char *code)
{
	if (ui->nhist && !strcmp(ui->hist[ui->nhist - 1], code))
		goto out;
	if (ui->nhist == HIST_MAX) {
		free(ui->hist[0]);
		memmove(ui->hist, ui->hist + 1, (HIST_MAX - 1) * sizeof(*ui->hist));
		ui->nhist--;
	}
	if (ui->nhist == ui->hist_alloc) {
		ui->hist_alloc = ui->hist_alloc ? 2 * ui->hist_alloc : 64;
		ui->hist = xrealloc(ui->hist, ui->hist_alloc * sizeof(*ui->hist));
	}
	ui->hist[ui->nhist++] = xstrdup(code);
out:
	ui->hist_pos = ui->nhist;
	free(ui->hist_saved);
	ui->hist_saved = NULL;
}

/* Step through history by `dir` (-1 older, +1 newer); 0 when there is nowhere to go. */
static int hist_walk(struct ui *ui, int dir)
{
	if (dir < 0 && ui->hist_pos == 0)
		return 0;
	if (dir > 0 && ui->hist_pos >= ui->nhist)
		return 0;
	if (ui->hist_pos == ui->nhist) {
		free(ui->hist_saved);
		ui->hist_saved = xstrdup(ui->ed.text.buf);
	}
	ui->hist_pos += dir;
	edbuf_set(&ui->ed, ui->hist_pos == ui->nhist ? (ui->hist_saved ? ui->hist_saved : "")
						       : ui->hist[ui->hist_pos]);
	if (dir < 0) {		/* older: cursor on the first line, so Up goes on walking */
		ui->ed.cur = 0;
		edbuf_end(&ui->ed);
	}
	return 1;
}

/* Find the newest history entry before `from` containing the search text. */
static long hist_search(struct ui *ui, long from)
{
	for (long i = from; i >= 0; i--)
		if (strstr(ui->hist[i], ui->line.buf))
			return i;
	return -1;
}

/* ---- running cells ---------------------------------------------------------------------- */

/* Take the code of one recorded cell of an earlier session into the history list. */
static int load_hist_entry(const cJSON *entry, void *data)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "code"));

	if (code && *code)
		hist_add(data, code);
	return 0;
}

/* Put one event of a running cell into the output model. */
/* Fill in a captured plot: its file under the channel and, when drawn, its decoded image. */
static void plot_add(struct ui *ui, struct ui_plot *pl, int index, int w, int h, const char *rel)
{
	pl->index = index;
	pl->w = w;
	pl->h = h;
	pl->path = rel && !strstr(rel, "..") ?
		xasprintf("%s/%s", session_channel_dir(ui->s), rel) : NULL;
	pl->rel = pl->path ? xstrdup(rel) : NULL;
	pl->img = NULL;
	if (pl->path && plots_drawn(ui)) {
		struct strbuf err = STRBUF_INIT;
		/* The kernel names the file: decode the one checked, not what is there later. */
		int fd = outputs_open_file(session_channel_dir(ui->s), rel, OUTPUTS_FILE_MAX, &err);
		if (fd >= 0) {
			pl->img = graphics_load_fd(fd, rel, &err);
			close(fd);
		}
		if (!pl->img)
			ui_message(ui, "plot %d: %s", index, err.buf);
		strbuf_release(&err);
	}
	ui->plot_sel = (size_t)(pl - ui->plots);
}

/* Forget the captured plots; the output pane keeps their text lines. */
static void plots_forget(struct ui *ui)
{
	plots_drop(ui);
	for (size_t i = 0; i < ui->nplots; i++) {
		graphics_free(ui->plots[i].img);
		free(ui->plots[i].path);
		free(ui->plots[i].rel);
	}
	ui->nplots = 0;
	ui->plot_sel = 0;
	ui->nplaced = 0;
	for (int i = 0; i < ui->nshown; i++)
		ui->shown[i].img = NULL;	/* freed: the next frame differs, whatever it draws */
	for (size_t i = 0; i < ui->out.ncells; i++) {
		struct out_cell *c = ui->out.cells[i];
		for (size_t k = 0; k < c->nchunks; k++)
			if (c->chunks[k].kind == OUT_PLOT)
				c->chunks[k].plot_index = 0;	/* the kernel counts from 1 again */
		c->rows_width = 0;
	}
}

/* A plot of a display or result event: its line in the cell and the plot list. */
static void cell_plot(struct ui *ui, struct out_cell *c, const struct session_plot *plot)
{
	out_cell_plot(&ui->out, c, plot->index, plot->width, plot->height);
	if (ui->nplots == ui->plots_alloc) {
		ui->plots_alloc = ui->plots_alloc ? 2 * ui->plots_alloc : 8;
		ui->plots = xrealloc(ui->plots, ui->plots_alloc * sizeof(*ui->plots));
	}
	plot_add(ui, &ui->plots[ui->nplots++], plot->index, plot->width, plot->height,
		 plot->path);
}

/* An artifact (a file the cell saved): a line naming it and where it is. */
static void cell_artifact(struct ui *ui, struct out_cell *c, const struct session_ev_artifact *ev)
{
	const char *name = ev->name, *fmt = ev->file->format, *rel = ev->file->path;
	int idx = ev->file->index;
	const char *ext = rel ? strrchr(rel, '.') : NULL;
	struct strbuf err = STRBUF_INIT, data = STRBUF_INIT;
	char *line, *dst = NULL;

	if (!rel || strstr(rel, "..") || !ext)
		return;
	strbuf_init(&err, 0);
	/* The channel goes with the session: keep a copy next to the history when recording. */
	if (ui->rec.h && mkdir_p(history_plots_dir(ui->rec.h)) == 0) {
		dst = xasprintf("%s/%d%s", history_plots_dir(ui->rec.h), idx, ext);
		if (outputs_copy_file(session_channel_dir(ui->s), rel, dst, &err) < 0) {
			free(dst);
			dst = NULL;
		}
	} else if (outputs_read_file(session_channel_dir(ui->s), rel, OUTPUTS_FILE_MAX, &data,
				     &err) == 0) {
		dst = xasprintf("%s/%s", session_channel_dir(ui->s), rel);
	}
	if (dst)
		line = xasprintf("[artifact %d: %s%s%s, %s %s]\n", idx, name ? name : "",
				 name ? ", " : "", fmt ? fmt : "file", ui->rec.h ? "saved to" : "at",
				 dst);
	else
		line = xasprintf("[artifact %d not kept: %s]\n", idx, err.buf);
	out_cell_append(&ui->out, c, OUT_INFO, line, strlen(line));	/* sanitised there */
	free(line);
	free(dst);
	strbuf_release(&err);
	strbuf_release(&data);
}

static void on_cell_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct out_cell *c = outmodel_find(&ui->out, ev->id);

	if (!c)
		return;
	record_event(&ui->rec, s, ev);	/* the full output goes to the history store */
	switch (ev->type) {
	case SESSION_EV_STREAM:
		out_cell_append(&ui->out, c, ev->stream.stream == SESSION_STDERR ? OUT_STDERR
										 : OUT_STDOUT,
				ev->stream.text, ev->stream.len);
		break;
	case SESSION_EV_DISPLAY: {
		const struct session_plot *plot = ev->display.plot;
		const char *text = ev->display.text;
		if (plot) {
			cell_plot(ui, c, plot);
		} else if (ev->display.pager && text) {
			pager_open(ui, "help", text);
		} else if (text) {
			char *line = xasprintf("%s\n", text);
			out_cell_append(&ui->out, c, OUT_STDOUT, line, strlen(line));
			free(line);
		}
		break;
	}
	case SESSION_EV_RESULT: {
		const char *text = ev->result.text;
		if (ev->result.execution_count >= 0)
			c->count = ev->result.execution_count;
		if (text) {
			char *line = xasprintf("%s\n", text);
			out_cell_append(&ui->out, c, OUT_RESULT, line, strlen(line));
			free(line);
		}
		if (ev->result.plot)
			cell_plot(ui, c, ev->result.plot);
		break;
	}
	case SESSION_EV_ARTIFACT:
		cell_artifact(ui, c, &ev->artifact);
		break;
	case SESSION_EV_ERROR: {
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < ev->error.ntraceback; i++)
			strbuf_addf(&sb, "%s\n", ev->error.traceback[i]);
		if (!sb.len)
			strbuf_addf(&sb, "%s: %s\n", ev->error.ename ? ev->error.ename : "Error",
				    ev->error.evalue ? ev->error.evalue : "");
		out_cell_append(&ui->out, c, OUT_ERROR, sb.buf, sb.len);
		strbuf_release(&sb);
		break;
	}
	case SESSION_EV_INPUT_REQUEST: {
		if (ui->ov == OV_MENU)
			menu_free(ui);
		free(ui->input_prompt);
		ui->input_prompt = xstrdup(ev->input.prompt);
		ui->input_id = ev->id;
		strbuf_reset(&ui->line);
		ui->ov = OV_INPUT;
		break;
	}
	case SESSION_EV_DONE: {
		const struct session_ev_done *d = &ev->done;

		if (d->execution_count > 0) {
			c->count = d->execution_count;
			ui->exec_count = d->execution_count;
		}
		if (d->detail) {
			char *msg = xasprintf("[%s]\n", d->reason == REASON_INTERRUPTED ? "interrupted"
										   : d->detail);
			out_cell_append(&ui->out, c, OUT_INFO, msg, strlen(msg));
			free(msg);
		} else if (d->status == SESSION_STATUS_ABORTED) {
			out_cell_append(&ui->out, c, OUT_INFO, "[interrupted]\n", 14);
		}
		ui->last_duration = d->duration;
		record_cell(&ui->rec, c->code);
		out_cell_finish(c, ui->last_duration);
		outmodel_trim(&ui->out, OUT_TOTAL_MAX);
		if (ui->npending)
			ui->npending--;
		if (ui->ov == OV_INPUT && ui->input_id == ev->id)
			ui->ov = OV_NONE;	/* interrupted while asking */
		break;
	}
	default:
		break;
	}
}

/* Submit the editor's text as a cell. */
static void run_cell(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	char *code = xstrdup(ui->ed.text.buf);
	size_t len = strlen(code);
	unsigned long id;

	while (len && (code[len - 1] == '\n' || code[len - 1] == ' '))
		code[--len] = '\0';
	if (!len) {
		free(code);
		return;
	}
	id = session_execute(ui->s, code, SESSION_EXEC_ALLOW_STDIN, ui->cfg->timeout, on_cell_event,
			     ui, &err);
	hist_add(ui, code);
	if (!id) {
		struct out_cell *c = outmodel_add(&ui->out, 0, code);
		strbuf_addstr(&err, "\n");
		out_cell_append(&ui->out, c, OUT_ERROR, err.buf, err.len);
		out_cell_finish(c, 0);
	} else {
		outmodel_add(&ui->out, id, code);
		ui->npending++;
	}
	edbuf_set(&ui->ed, "");
	ui->follow = 1;
	free(code);
	strbuf_release(&err);
}

/* A guess at whether the cell needs more lines, for when the kernel is busy. */
static int looks_incomplete(const struct edbuf *e)
{
	const char *s = e->text.buf;
	int depth = 0, state = HL_STATE_NORMAL;
	size_t nlines = edbuf_lines(e), last = edbuf_line_start(e, nlines - 1);
	unsigned char *cls = xmalloc(e->text.len + 1);
	int rc;

	for (size_t ln = 0, off = 0; ln < nlines; ln++) {
		size_t end = ln + 1 < nlines ? edbuf_line_start(e, ln + 1) - 1 : e->text.len;
		state = hl_line(s + off, end - off, state, cls + off);
		off = end + 1;
	}
	for (size_t i = 0; i < e->text.len; i++)
		if (cls[i] != HL_STRING && cls[i] != HL_COMMENT)
			depth += (s[i] == '(' || s[i] == '[' || s[i] == '{') -
				 (s[i] == ')' || s[i] == ']' || s[i] == '}');
	{
		size_t end = e->text.len;
		while (end > last && (s[end - 1] == ' ' || s[end - 1] == '\t'))
			end--;
		rc = depth > 0 || state != HL_STATE_NORMAL ||
		     (end > last && (s[end - 1] == ':' || s[end - 1] == '\\')) ||
		     (nlines > 1 && end > last && (s[last] == ' ' || s[last] == '\t'));
	}
	free(cls);
	return rc;
}

/* Act on the kernel's is_complete answer: run the cell or add an indented line. */
static void on_is_complete(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	const char *status;

	(void)s;
	if (ev->type == SESSION_EV_DONE && ui->is_complete_id == ev->id) {
		ui->is_complete_id = 0;
		free(ui->is_complete_text);
		ui->is_complete_text = NULL;
	}
	if (ev->type != SESSION_EV_REPLY || ui->is_complete_id != ev->id)
		return;
	/* The user typed on meanwhile: the answer is about text that is gone. */
	if (!ui->is_complete_text || strcmp(ui->is_complete_text, ui->ed.text.buf))
		return;
	status = ev->reply.status;
	if (status && !strcmp(status, "incomplete")) {
		const char *indent = ev->reply.indent;
		edbuf_insert(&ui->ed, "\n", 1);
		if (indent)
			edbuf_insert(&ui->ed, indent, strlen(indent));
	} else {
		run_cell(ui);
	}
}

/* Enter: run when the kernel says the cell is complete, else a new line. */
static void enter_key(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *params;

	if (ui->ed.cur != ui->ed.text.len) {	/* in the middle of the text: a new line */
		edbuf_newline(&ui->ed, 1);
		return;
	}
	if (session_state(ui->s) != SESSION_IDLE || ui->npending || ui->is_complete_id) {
		if (looks_incomplete(&ui->ed))
			edbuf_newline(&ui->ed, 1);
		else
			run_cell(ui);
		return;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "code", ui->ed.text.buf);
	ui->is_complete_id = session_request(ui->s, "is_complete", params, on_is_complete, ui,
					     &err);
	cJSON_Delete(params);
	if (ui->is_complete_id) {
		unsigned long id = ui->is_complete_id;
		free(ui->is_complete_text);
		ui->is_complete_text = xstrdup(ui->ed.text.buf);
		/*
		 * The kernel is idle, so the answer takes well under a millisecond: wait for it,
		 * as IPython does, so that keys typed next apply to the right text.
		 */
		while (session_pending(ui->s, id))
			if (session_wait(ui->s, id) < 0 && errno != EINTR)
				break;
	} else {
		run_cell(ui);
	}
	strbuf_release(&err);
}

/* Forget the completion menu. */
static void menu_free(struct ui *ui)
{
	for (size_t i = 0; i < ui->nmenu; i++)
		free(ui->menu[i]);
	free(ui->menu);
	ui->menu = NULL;
	ui->nmenu = ui->menu_sel = 0;
}

/* Put completion `m` in place of the text it completes. */
static void menu_accept(struct ui *ui, const char *m)
{
	edbuf_replace(&ui->ed, ui->comp_from, ui->comp_to, m);
	menu_free(ui);
	ui->ov = OV_NONE;
}

/* Take the kernel's completions: insert the only one, or open the menu. */
static void on_complete(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	int start, end;

	(void)s;
	if (ev->type == SESSION_EV_DONE && ev->id == ui->complete_id)
		ui->complete_id = 0;
	if (ev->type != SESSION_EV_REPLY || ev->id != ui->complete_id)
		return;
	start = ev->reply.cursor_start;
	end = ev->reply.cursor_end;
	menu_free(ui);
	for (size_t i = 0; i < ev->reply.nmatches; i++) {
		ui->menu = xrealloc(ui->menu, (ui->nmenu + 1) * sizeof(*ui->menu));
		ui->menu[ui->nmenu++] = xstrdup(ev->reply.matches[i]);
	}
	ui->comp_from = edbuf_cp_to_byte(&ui->ed, start > 0 ? (size_t)start : 0);
	ui->comp_to = edbuf_cp_to_byte(&ui->ed, end > 0 ? (size_t)end : 0);
	if (!ui->nmenu)
		ui_message(ui, "no completions");
	else if (ui->nmenu == 1)
		menu_accept(ui, ui->menu[0]);
	else
		ui->ov = OV_MENU;
}

/* Tab: indent at the start of a line, else ask the kernel for completions. */
static void tab_key(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	size_t start = edbuf_line_start(&ui->ed, edbuf_line(&ui->ed)), i;
	cJSON *params;

	for (i = start; i < ui->ed.cur && ui->ed.text.buf[i] == ' '; i++)
		;
	if (i == ui->ed.cur) {
		edbuf_insert(&ui->ed, ui->ed.indent, strlen(ui->ed.indent));
		return;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "code", ui->ed.text.buf);
	cJSON_AddNumberToObject(params, "cursor_pos", (double)edbuf_cursor_cp(&ui->ed));
	ui->complete_id = session_request(ui->s, "complete", params, on_complete, ui, &err);
	cJSON_Delete(params);
	if (!ui->complete_id)
		ui_message(ui, "%s", err.buf);
	strbuf_release(&err);
}

/* Give the kernel the theme's IPython colour scheme, unless it has it already. */
static void ui_match_kernel_colors(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;

	if (!ui->s || !strcmp(ui->kernel_scheme, ui->theme.ipython))
		return;
	if (ipycolors_apply(ui->s, ui->theme.ipython, &err) == 0)
		snprintf(ui->kernel_scheme, sizeof(ui->kernel_scheme), "%s", ui->theme.ipython);
	strbuf_release(&err);
}

/* Restart the kernel, showing "restarting" while it starts. */
static void restart_kernel(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;

	ui->restarting = 1;
	ui_draw(ui);
	if (session_restart(ui->s, &err) < 0) {
		ui_message(ui, "cannot restart the kernel: %s", err.buf);
	} else {
		struct out_cell *c = outmodel_add(&ui->out, 0, NULL);
		out_cell_append(&ui->out, c, OUT_INFO, "[kernel restarted]\n", 19);
		out_cell_finish(c, 0);
		ui->exec_count = 0;
		strcpy(ui->kernel_scheme, "Linux");	/* a fresh kernel has IPython's default */
		ui_match_kernel_colors(ui);
		ui_message(ui, "kernel restarted");
		free(ui->dead_reason);
		ui->dead_reason = NULL;
	}
	ui->restarting = 0;
	ui->follow = 1;
	strbuf_release(&err);
}

/* Show a kernel death at once, with the reason and the way back. */
static void on_state(struct session *s, enum session_state state, const char *msg, void *data)
{
	struct ui *ui = data;
	struct out_cell *c;
	char *text;

	(void)s;
	if (state != SESSION_DEAD || ui->restarting)
		return;
	free(ui->dead_reason);
	ui->dead_reason = xstrdup(msg ? msg : "kernel died");
	text = xasprintf("[%s: press F6 or run ':restart' to start a new kernel; the history "
			 "stays]\n", ui->dead_reason);
	c = outmodel_add(&ui->out, 0, NULL);
	out_cell_append(&ui->out, c, OUT_ERROR, text, strlen(text));
	out_cell_finish(c, 0);
	free(text);
	ui->follow = 1;
}

/* ---- commands --------------------------------------------------------------------------- */

struct tui_command {
	const char *name;	/* first: cli_find() looks names up */
	const char *usage;
	const char *help;
	int min, max;		/* the words it takes after its name (tmux's args counts) */
	/* Run with argv[0] the name; 0, or -1 with `msg` saying why. PANE_* flags in *flags. */
	int (*fn)(struct ui *ui, int argc, char **argv, struct strbuf *msg);
};

static int tc_restart(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_interrupt(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_clear(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_clear_plots(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_save(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_load(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_copy_in(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_copy_out(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_theme(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_side(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_help(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_redraw(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_save_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_quit(struct ui *ui, int argc, char **argv, struct strbuf *msg);

static const struct tui_command tui_commands[] = {
	{ .name = "restart", .usage = "restart", .fn = tc_restart,
	  .help = "kill the kernel and start a fresh one (F6)" },
	{ .name = "interrupt", .usage = "interrupt", .fn = tc_interrupt,
	  .help = "interrupt the running cell (Ctrl-C)" },
	{ .name = "clear", .usage = "clear", .fn = tc_clear,
	  .help = "clear the output pane (the kernel and history stay)" },
	{ .name = "clear-plots", .usage = "clear-plots", .fn = tc_clear_plots,
	  .help = "forget the kernel's captured plots" },
	{ .name = "save", .usage = "save FILE.py|FILE.ipynb", .fn = tc_save, .min = 1, .max = 1,
	  .help = "save this session's cells as a percent-format .py or an .ipynb" },
	{ .name = "load", .usage = "load FILE [run]", .fn = tc_load, .min = 1, .max = 2,
	  .help = "load a .py (percent cells), an .ipynb or a recorded session (its id) into "
		  "the editor, or run all its cells" },
	{ .name = "copy-in", .usage = "copy-in SRC [DST]", .fn = tc_copy_in, .min = 1, .max = 2,
	  .help = "copy a host file into the sandbox (DST relative to the kernel's directory)" },
	{ .name = "copy-out", .usage = "copy-out SRC [DST]", .fn = tc_copy_out, .min = 1, .max = 2,
	  .help = "copy a file of the sandbox to the host" },
	{ .name = "theme", .usage = "theme [NAME]", .fn = tc_theme, .max = 1,
	  .help = "switch theme (dark, light, high-contrast, monochrome); none: list them" },
	{ .name = "side", .usage = "side", .fn = tc_side,
	  .help = "show or hide the side pane (F3)" },
	{ .name = "redraw", .usage = "redraw [N [scroll]]", .fn = tc_redraw, .max = 2,
	  .help = "repaint the whole screen (Ctrl-L); N times: report the time per frame; "
		  "scroll: N frames scrolling the output one row each" },
	{ .name = "plot", .usage = "plot [N]", .fn = tc_plot, .max = 1,
	  .help = "show plot N (else the newest) on the whole screen (F4)" },
	{ .name = "save-plot", .usage = "save-plot N FILE", .fn = tc_save_plot, .min = 2, .max = 2,
	  .help = "copy plot N's PNG to FILE (s in the plot view)" },
	{ .name = "help", .usage = "help", .fn = tc_help,
	  .help = "keys and commands (F1)" },
	{ .name = "quit", .usage = "quit", .fn = tc_quit,
	  .help = "leave cellbox (Ctrl-Q; Ctrl-D on an empty cell)" },
};

/* :restart */
static int tc_restart(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	restart_kernel(ui);
	return 0;
}

/* :interrupt */
static int tc_interrupt(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (!ui->npending) {
		strbuf_addstr(msg, "no cell is running");
		return -1;
	}
	session_interrupt(ui->s);
	return 0;
}

/* :clear: drop the finished cells from the output pane. */
static int tc_clear(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	/* Running cells stay, so their events still have somewhere to go. */
	for (size_t i = 0; i < ui->out.ncells;) {
		struct out_cell *c = ui->out.cells[i];
		if (c->done) {
			struct outmodel one = { .cells = &c, .ncells = 1 };
			outmodel_clear(&one);
			memmove(ui->out.cells + i, ui->out.cells + i + 1,
				(ui->out.ncells - i - 1) * sizeof(*ui->out.cells));
			ui->out.ncells--;
		} else {
			i++;
		}
	}
	ui->scroll = 0;
	return 0;
}

/* Events nobody waits for. */
static void on_ignore(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)ev, (void)data;
}

/* :clear-plots */
static int tc_clear_plots(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (!session_request(ui->s, "clear_plots", NULL, on_ignore, NULL, msg))
		return -1;
	plots_forget(ui);
	return 0;
}

/* :save FILE: this session's cells (.ipynb with their outputs, from the history store). */
static int tc_save(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	cJSON *nb;
	size_t n = 0;
	int rc;

	(void)argc;
	if (ui->rec.h) {
		nb = history_session_notebook(history_session_id(ui->rec.h), msg);
		if (!nb)
			return -1;
		cellfile_set_kernel(nb, session_kernel_info(ui->s));
		rc = cellfile_save(nb, argv[1], msg);
		cJSON_Delete(nb);
		if (rc == 0)
			strbuf_addf(msg, "saved this session to '%s'", argv[1]);
		return rc;
	}
	/* Not recording (history-size = 0): the code of the output pane's cells. */
	nb = cellfile_new_notebook();
	cellfile_set_kernel(nb, session_kernel_info(ui->s));
	for (size_t i = 0; i < ui->out.ncells; i++)
		if (ui->out.cells[i]->code && ++n)
			cellfile_add_cell(nb, "code", ui->out.cells[i]->code);
	rc = cellfile_save(nb, argv[1], msg);
	cJSON_Delete(nb);
	if (rc == 0)
		strbuf_addf(msg, "saved %zu cells to '%s'", n, argv[1]);
	return rc;
}

/* Copy a file between the host and the sandbox, in either direction. */
static int copy_file_cmd(struct ui *ui, int in, int argc, char **argv, struct strbuf *msg)
{
	const char *dst = argc == 3 ? argv[2] : NULL;
	int rc;

	if (session_state(ui->s) != SESSION_IDLE) {
		strbuf_addstr(msg, "the kernel is busy: copy when it is idle");
		return -1;
	}
	rc = in ? files_copy_in(ui->s, argv[1], dst, msg) : files_copy_out(ui->s, argv[1], dst, msg);
	if (rc == 0)
		strbuf_addf(msg, "copied '%s' %s the sandbox", argv[1], in ? "into" : "out of");
	return rc;
}

/* :copy-in SRC [DST]: a host file into the sandbox. */
static int tc_copy_in(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	return copy_file_cmd(ui, 1, argc, argv, msg);
}

/* :copy-out SRC [DST]: a sandbox file to the host. */
static int tc_copy_out(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	return copy_file_cmd(ui, 0, argc, argv, msg);
}

/* :load FILE [run]: the code cells of a .py or .ipynb into the editor, or run them all. */
static int tc_load(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf all = STRBUF_INIT;
	const cJSON *cell;
	cJSON *nb;
	size_t n = 0;

	if (argc == 3 && strcmp(argv[2], "run")) {
		strbuf_addstr(msg, "usage: load FILE [run]");
		return -1;
	}
	nb = history_load(argv[1], msg);
	if (!nb)
		return -1;
	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		char *code;

		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "cell_type"))
			   ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "cell_type"))
			   : "", "code"))
			continue;
		code = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
		if (argc == 3) {
			edbuf_set(&ui->ed, code);
			run_cell(ui);
		} else {
			strbuf_addf(&all, "%s%s", n ? "\n\n" : "", code);
		}
		free(code);
		n++;
	}
	if (argc == 3) {
		strbuf_addf(msg, "running %zu cells from '%s'", n, argv[1]);
	} else {
		edbuf_set(&ui->ed, all.buf);
		strbuf_addf(msg, "loaded %zu cells from '%s' into the editor", n, argv[1]);
	}
	strbuf_release(&all);
	cJSON_Delete(nb);
	return 0;
}

/*
 * Load theme `name` (`auto`: light or dark by the terminal's background) and fit it to the
 * terminal; -1 with `msg`.
 */
static int ui_set_theme(struct ui *ui, const char *name, struct strbuf *msg)
{
	struct theme t;

	theme_init(&t);
	if (theme_load(&t, theme_resolve(name, ui->tc.light),
		       (const char *const *)ui->themes_dirs, msg) < 0) {
		theme_release(&t);
		return -1;
	}
	theme_degrade(&t, ui->ncolors);
	theme_release(&ui->theme);
	ui->theme = t;
	colors_reset(ui);
	ui_match_kernel_colors(ui);
	return 0;
}

/* :theme [NAME] */
static int tc_theme(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	if (argc == 1) {
		strbuf_addf(msg, "theme %s; others: dark light high-contrast monochrome",
			    ui->theme.name);
		return 0;
	}
	if (ui_set_theme(ui, argv[1], msg) < 0)
		return -1;
	strbuf_addf(msg, "theme %s", ui->theme.name);
	return 0;
}

/* :side */
static int tc_side(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	ui->panes[P_SIDE].visible = !ui->panes[P_SIDE].visible;
	return 0;
}

/* Compare two doubles for qsort. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The position in ui->plots of kernel plot `arg` (NULL: the newest); -1 with a message. */
static long plot_arg(struct ui *ui, const char *arg, struct strbuf *msg)
{
	char *end;
	long n;

	if (!ui->nplots) {
		strbuf_addstr(msg, "no plots yet");
		return -1;
	}
	if (!arg)
		return (long)ui->nplots - 1;
	n = strtol(arg, &end, 10);
	for (size_t i = 0; !*end && i < ui->nplots; i++)
		if (ui->plots[i].index == n)
			return (long)i;
	strbuf_addf(msg, "no plot '%s'", arg);
	return -1;
}

/* :plot [N]: the plot viewer. */
static int tc_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	long i = plot_arg(ui, argc > 1 ? argv[1] : NULL, msg);

	if (i < 0)
		return -1;
	ui->plot_sel = (size_t)i;
	ui->ov = OV_PLOT;
	return 0;
}

/* :save-plot N FILE: copy a plot's PNG. */
static int tc_save_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	long i = plot_arg(ui, argv[1], msg);

	(void)argc;
	if (i < 0)
		return -1;
	if (!ui->plots[i].rel) {
		strbuf_addf(msg, "cannot copy plot %s to '%s': no file", argv[1], argv[2]);
		return -1;
	}
	strbuf_addf(msg, "cannot copy plot %s to '%s': ", argv[1], argv[2]);
	if (outputs_copy_file(session_channel_dir(ui->s), ui->plots[i].rel, argv[2], msg) < 0)
		return -1;
	strbuf_reset(msg);
	strbuf_addf(msg, "plot %d saved to %s", ui->plots[i].index, argv[2]);
	return 0;
}

/* :redraw [N [scroll]]: repaint everything, N times with the time per frame. */
static int tc_redraw(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, scroll = argc > 2 && !strcmp(argv[2], "scroll");
	int max_scroll = 0, follow = ui->follow, was = ui->scroll;
	size_t bytes = ui->gbytes;
	double *t;

	if (n < 1 || n > 100000 || (argc > 2 && !scroll)) {
		strbuf_addstr(msg, "usage: redraw [N [scroll]] (N from 1 to 100000)");
		return -1;
	}
	if (scroll) {	/* from the top of the output down, one row a frame, again and again */
		ui->follow = 0;
		ui->scroll = INT_MAX / 2;
		ui_draw(ui);
		max_scroll = ui->scroll;
		bytes = ui->gbytes;
	}
	t = xmalloc((size_t)n * sizeof(*t));
	for (int i = 0; i < n; i++) {
		double t0 = now_monotonic();
		if (scroll) {
			ui->scroll = max_scroll ? max_scroll - i % (max_scroll + 1) : 0;
		} else {
			clearok(curscr, TRUE);
			for (size_t k = 0; k < ui->out.ncells; k++)
				ui->out.cells[k]->rows_width = 0;	/* lay out every cell again */
		}
		ui_draw(ui);
		t[i] = now_monotonic() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	if (scroll)
		strbuf_addf(msg, "redraw: %d scrolling frames, %d rows, median %.3f ms, "
			    "p90 %.3f ms, %zu B/frame", n, max_scroll,
			    t[n / 2] * 1e3, t[n * 9 / 10] * 1e3, (ui->gbytes - bytes) / (size_t)n);
	else if (n > 1)
		strbuf_addf(msg, "redraw: %d full frames, median %.3f ms, p90 %.3f ms", n,
			    t[n / 2] * 1e3, t[n * 9 / 10] * 1e3);
	free(t);
	if (scroll) {
		ui->follow = follow;
		ui->scroll = was;
	}
	clearok(curscr, TRUE);
	return 0;
}

static const struct { const char *keys, *what; } key_help[] = {
	{ "Enter", "run the cell when it is complete, else a new line" },
	{ "Alt-Enter, F5", "run the cell as it is" },
	{ "Ctrl-J", "a new line, always" },
	{ "Up / Down", "move; on the first / last line: walk the history" },
	{ "Ctrl-R", "search the history (Ctrl-R again: older; Enter takes it)" },
	{ "Tab", "complete (the kernel's completions) or indent" },
	{ "obj?  obj??", "help on obj in this pager" },
	{ "Ctrl-C", "interrupt the running cell; when idle, clear the cell" },
	{ "PgUp / PgDn", "scroll the output (Shift-Up/Down: one row)" },
	{ "Home/End, Ctrl-A/E", "start / end of the line; Ctrl-K, Ctrl-U delete" },
	{ "Ctrl-L", "repaint the screen" },
	{ "F1", "this help" },
	{ "F3", "show or hide the side pane (history, plots)" },
	{ "F4", "the plot viewer: Left/Right other plots, s save as" },
	{ "F6", "restart the kernel" },
	{ "Ctrl-O, F2", "a cellbox command (below)" },
	{ "Ctrl-Q, Ctrl-D", "quit (Ctrl-D on an empty cell)" },
};

/* :help: keys and commands in the pager. */
static int tc_help(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf sb = STRBUF_INIT;

	(void)argc, (void)argv, (void)msg;
	strbuf_addstr(&sb, "Keys\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(key_help); i++)
		strbuf_addf(&sb, "  %-20s %s\n", key_help[i].keys, key_help[i].what);
	strbuf_addstr(&sb, "\nCommands (Ctrl-O, then the command and Enter)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++)
		strbuf_addf(&sb, "  %-24s %s\n", tui_commands[i].usage, tui_commands[i].help);
	strbuf_addstr(&sb, "\nIPython magics (%timeit, %%bash ...) and !shell lines go to the "
			   "kernel as they are.\n");
	pager_open(ui, "cellbox help", sb.buf);
	strbuf_release(&sb);
	return 0;
}

/* :quit */
static int tc_quit(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	ui->quit = 1;
	return 0;
}

/* Split a command line into words and run it. */
static void run_command(struct ui *ui, const char *line)
{
	char *copy = xstrdup(line), *argv[8], *save = NULL;
	int argc = 0, i;
	struct strbuf msg = STRBUF_INIT;
	const struct tui_command *cmd = NULL;

	for (char *w = strtok_r(copy, " \t", &save); w && argc < 8; w = strtok_r(NULL, " \t", &save))
		argv[argc++] = w;
	if (!argc)
		goto out;
	i = cli_find(argv[0], tui_commands, ARRAY_SIZE(tui_commands), sizeof(tui_commands[0]),
		     "command", &msg);
	if (i < 0) {
		ui_message(ui, "%s (F1 lists them)", msg.buf);
		goto out;
	}
	cmd = &tui_commands[i];
	if (argc - 1 < cmd->min || argc - 1 > cmd->max)
		ui_message(ui, "usage: %s", cmd->usage);
	else if (cmd->fn(ui, argc, argv, &msg) < 0)
		ui_message(ui, "%s: %s", cmd->name, msg.buf);
	else if (msg.len)
		ui_message(ui, "%s", msg.buf);
out:
	strbuf_release(&msg);
	free(copy);
}

/* ---- keys ------------------------------------------------------------------------------- */

#undef CTRL
#define CTRL(c) ((c) & 0x1f)

/* Keys of the one-line overlays: history search and the command prompt. */
static int line_overlay_key(struct ui *ui, int is_key, wint_t ch)
{
	if (ui->ov == OV_INPUT && !is_key && (ch == CTRL('c') || ch == '\r' || ch == '\n')) {
		struct strbuf err = STRBUF_INIT;
		struct out_cell *c = outmodel_find(&ui->out, ui->input_id);
		ui->ov = OV_NONE;
		if (ch == CTRL('c')) {
			session_interrupt(ui->s);
		} else {
			if (c) {	/* echo the answer where the cell's output goes */
				char *echo = xasprintf("%s%s\n", ui->input_prompt, ui->line.buf);
				out_cell_append(&ui->out, c, OUT_STDOUT, echo, strlen(echo));
				free(echo);
			}
			if (session_input_reply(ui->s, ui->input_id, ui->line.buf, &err) < 0)
				ui_message(ui, "%s", err.buf);
		}
		strbuf_release(&err);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && (ch == 27 || ch == CTRL('g') || ch == CTRL('c'))) {
		ui->ov = OV_NONE;
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && (ch == '\r' || ch == '\n')) {
		char *line = xstrdup(ui->line.buf);
		enum overlay was = ui->ov;
		ui->ov = OV_NONE;
		if (was == OV_SEARCH && ui->search_hit >= 0)
			edbuf_set(&ui->ed, ui->hist[ui->search_hit]);
		else if (was == OV_PROMPT)
			run_command(ui, line);
		free(line);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (ui->ov == OV_SEARCH && !is_key && ch == CTRL('r')) {
		if (ui->search_hit > 0) {
			long older = hist_search(ui, ui->search_hit - 1);
			if (older >= 0)
				ui->search_hit = older;
		}
		return PANE_HANDLED | PANE_REDRAW;
	}
	if ((is_key && ch == KEY_BACKSPACE) || (!is_key && (ch == 127 || ch == CTRL('h')))) {
		while (ui->line.len && (ui->line.buf[ui->line.len - 1] & 0xc0) == 0x80)
			ui->line.len--;
		if (ui->line.len)
			ui->line.len--;
		ui->line.buf[ui->line.len] = '\0';
	} else if (!is_key && ch >= 0x20) {
		char mb[8];
		mbstate_t st;
		size_t n;
		memset(&st, 0, sizeof(st));
		n = wcrtomb(mb, (wchar_t)ch, &st);
		if (n != (size_t)-1 && ui->line.len < 1024)
			strbuf_add(&ui->line, mb, n);
	} else {
		return PANE_HANDLED;
	}
	if (ui->ov == OV_SEARCH)
		ui->search_hit = ui->nhist ? hist_search(ui, (long)ui->nhist - 1) : -1;
	return PANE_HANDLED | PANE_REDRAW;
}

/* Keys of the open overlay; 0 when the key is not taken. */
static int overlay_key(struct ui *ui, int is_key, wint_t ch)
{
	switch (ui->ov) {
	case OV_PAGER:
		if (is_key && ch == KEY_UP)
			ui->pager_top -= ui->pager_top > 0;
		else if (is_key && ch == KEY_DOWN)
			ui->pager_top++;
		else if (is_key && ch == KEY_PPAGE)
			ui->pager_top = ui->pager_top > LINES - 4 ? ui->pager_top - (LINES - 4) : 0;
		else if ((is_key && ch == KEY_NPAGE) || (!is_key && ch == ' '))
			ui->pager_top += LINES - 4;
		else if ((!is_key && (ch == 'q' || ch == 27 || ch == '\r' || ch == CTRL('c'))) ||
			 (is_key && ch == KEY_F(1)))
			ui->ov = OV_NONE;
		return PANE_HANDLED | PANE_REDRAW;
	case OV_MENU:
		if (is_key && ch == KEY_UP) {
			ui->menu_sel = ui->menu_sel ? ui->menu_sel - 1 : ui->nmenu - 1;
		} else if ((is_key && ch == KEY_DOWN) || (!is_key && ch == '\t')) {
			ui->menu_sel = (ui->menu_sel + 1) % ui->nmenu;
		} else if (!is_key && (ch == '\r' || ch == '\n')) {
			menu_accept(ui, ui->menu[ui->menu_sel]);
		} else {
			menu_free(ui);
			ui->ov = OV_NONE;
			if (!is_key && (ch == 27 || ch == CTRL('c') || ch == CTRL('g')))
				return PANE_HANDLED | PANE_REDRAW;
			return PANE_REDRAW;	/* not taken: the editor gets the key too */
		}
		return PANE_HANDLED | PANE_REDRAW;
	case OV_SEARCH:
	case OV_PROMPT:
	case OV_INPUT:
		return line_overlay_key(ui, is_key, ch);
	case OV_PLOT:
		if (is_key && (ch == KEY_LEFT || ch == KEY_UP)) {
			ui->plot_sel -= ui->plot_sel > 0;
		} else if (is_key && (ch == KEY_RIGHT || ch == KEY_DOWN)) {
			ui->plot_sel += ui->plot_sel + 1 < ui->nplots;
		} else if (!is_key && ch == 's' && ui->plot_sel < ui->nplots) {
			strbuf_reset(&ui->line);
			strbuf_addf(&ui->line, "save-plot %d ", ui->plots[ui->plot_sel].index);
			ui->ov = OV_PROMPT;
		} else if ((!is_key && (ch == 'q' || ch == 27 || ch == '\r' || ch == CTRL('c'))) ||
			   (is_key && ch == KEY_F(4))) {
			ui->ov = OV_NONE;
		}
		return PANE_HANDLED | PANE_REDRAW;
	default:
		return 0;
	}
}

/* Keys that work wherever the focus is. */
static int global_key(struct ui *ui, int is_key, wint_t ch)
{
	struct strbuf msg = STRBUF_INIT;
	int rc = PANE_HANDLED | PANE_REDRAW;

	if (is_key) {
		switch (ch) {
		case KEY_F(1):
			tc_help(ui, 0, NULL, &msg);
			break;
		case KEY_F(2):
			goto prompt;
		case KEY_F(3):
			tc_side(ui, 0, NULL, &msg);
			break;
		case KEY_F(4):
			if (ui->plot_sel < ui->nplots)
				ui->ov = OV_PLOT;
			else
				ui_message(ui, "no plots yet");
			break;
		case KEY_F(6):
			restart_kernel(ui);
			break;
		case KEY_F(10):
			ui->quit = 1;
			break;
		default:
			rc = 0;
		}
		goto out;
	}
	switch (ch) {
	case CTRL('q'):
		ui->quit = 1;
		break;
	case CTRL('l'):
		clearok(curscr, TRUE);
		break;
	case CTRL('o'):
prompt:
		strbuf_reset(&ui->line);
		ui->ov = OV_PROMPT;
		break;
	case CTRL('r'):
		strbuf_reset(&ui->line);
		ui->search_hit = ui->nhist ? (long)ui->nhist - 1 : -1;
		ui->ov = OV_SEARCH;
		break;
	case CTRL('c'):
		if (ui->npending)
			session_interrupt(ui->s);
		else
			edbuf_set(&ui->ed, "");
		break;
	case CTRL('d'):
		if (!ui->ed.text.len)
			ui->quit = 1;
		else
			edbuf_delete(&ui->ed);
		break;
	default:
		rc = 0;
	}
out:
	strbuf_release(&msg);
	return rc;
}

/* The output pane's keys: scrolling. */
static int output_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	int page = p->h > 2 ? p->h - 1 : 1;

	if (!is_key)
		return 0;
	switch (ch) {
	case KEY_PPAGE: ui->scroll += page; break;
	case KEY_NPAGE: ui->scroll -= page; break;
	case KEY_SR: ui->scroll++; break;
	case KEY_SF: ui->scroll--; break;
	default: return 0;
	}
	if (ui->scroll < 0)
		ui->scroll = 0;
	ui->follow = ui->scroll == 0;
	return PANE_HANDLED | PANE_REDRAW;
}

/* The editor pane's keys. */
static int editor_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	int esc = ui->esc;

	(void)p;
	ui->esc = 0;
	if (is_key) {
		switch (ch) {
		case KEY_LEFT: edbuf_left(&ui->ed); break;
		case KEY_RIGHT: edbuf_right(&ui->ed); break;
		case KEY_UP:
			if (!edbuf_up(&ui->ed))
				hist_walk(ui, -1);
			break;
		case KEY_DOWN:
			if (!edbuf_down(&ui->ed))
				hist_walk(ui, +1);
			break;
		case KEY_HOME: edbuf_home(&ui->ed); break;
		case KEY_END: edbuf_end(&ui->ed); break;
		case KEY_BACKSPACE: edbuf_backspace(&ui->ed); break;
		case KEY_DC: edbuf_delete(&ui->ed); break;
		case KEY_ENTER: enter_key(ui); break;
		case KEY_F(5): run_cell(ui); break;
		default: return 0;
		}
		return PANE_HANDLED | PANE_REDRAW;
	}
	switch (ch) {
	case 27:
		ui->esc = 1;
		return PANE_HANDLED;
	case '\r':
		if (esc)
			run_cell(ui);	/* Alt-Enter */
		else
			enter_key(ui);
		break;
	case '\n':
		edbuf_newline(&ui->ed, 1);
		break;
	case '\t': tab_key(ui); break;
	case 127:
	case CTRL('h'): edbuf_backspace(&ui->ed); break;
	case CTRL('a'): edbuf_home(&ui->ed); break;
	case CTRL('e'): edbuf_end(&ui->ed); break;
	case CTRL('b'): edbuf_left(&ui->ed); break;
	case CTRL('f'): edbuf_right(&ui->ed); break;
	case CTRL('k'): edbuf_kill_right(&ui->ed); break;
	case CTRL('u'): edbuf_kill_left(&ui->ed); break;
	default:
		if (ch >= 0x20 && ch != 0x7f) {
			char mb[8];
			mbstate_t st;
			size_t n;
			memset(&st, 0, sizeof(st));
			n = wcrtomb(mb, (wchar_t)ch, &st);
			if (n != (size_t)-1 && edbuf_insert(&ui->ed, mb, n) < 0)
				ui_message(ui, "the cell is too big");
			break;
		}
		return 0;
	}
	return PANE_HANDLED | PANE_REDRAW;
}

/* Hand a key to the overlay, the global keys, then the editor. */
static int ui_key(struct ui *ui, int is_key, wint_t ch)
{
	int rc;

	if (is_key && ch == KEY_RESIZE)
		return PANE_REDRAW;
	free(ui->message);
	ui->message = NULL;
	if (ui->ov != OV_NONE) {
		rc = overlay_key(ui, is_key, ch);
		if (rc & PANE_HANDLED)
			return rc;
	}
	rc = global_key(ui, is_key, ch);
	if (rc & PANE_HANDLED)
		return rc;
	/* Then the panes, each taking what it knows: output (scrolling), then the editor. */
	for (int i = 0; i < P_COUNT; i++) {
		struct pane *p = &ui->panes[i];
		if (p->visible && p->key) {
			rc = p->key(ui, p, is_key, ch);
			if (rc & PANE_HANDLED)
				return rc;
		}
	}
	return PANE_REDRAW;
}

/* ---- setup ------------------------------------------------------------------------------ */

/* The directories themes are looked up in, first match wins. */
static void themes_dirs(struct ui *ui)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int k = 0;

	if (xdg && *xdg)
		ui->themes_dirs[k++] = xasprintf("%s/cellbox/themes", xdg);
	else if (home)
		ui->themes_dirs[k++] = xasprintf("%s/.config/cellbox/themes", home);
	if (n > 0) {
		char *slash;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* The build tree (build/tui/cellbox next to build/themes) and a relocated install. */
		ui->themes_dirs[k++] = xasprintf("%s/../themes", exe);
		ui->themes_dirs[k++] = xasprintf("%s/../share/cellbox/themes", exe);
	}
	ui->themes_dirs[k++] = xstrdup(CELLBOX_THEMES_DIR);
	ui->themes_dirs[k] = NULL;
}

/* Start curses: raw keys, our own SIGWINCH, colours as far as the terminal goes. */
static int screen_start(struct ui *ui, const char *theme_name)
{
	struct sigaction sa;
	struct strbuf err = STRBUF_INIT;
	const char *nc = getenv("NO_COLOR");

	if (pipe2(ui->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		cli_error("cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	wake_fd = ui->wake[1];
	/*
	 * Ask the terminal before curses owns it: termcap sets and restores raw mode itself.
	 * The background decides the theme `auto`, so that asks too.
	 */
	if (ui->gwant != GRAPHICS_NONE || !strcmp(theme_name, "auto"))
		termcap_query(&ui->tc, -1, TUI_QUERY_MS);
	else
		termcap_fill(&ui->tc, NULL, 1);
	if (!initscr()) {
		cli_error("cannot start the screen (TERM='%s')", getenv("TERM"));
		return -1;
	}
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	/* Leave through the loop, so the terminal is restored and the kernel stopped. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);	/* a SIGINT from outside: as Ctrl-C on a running cell */
	ui->ncolors = 0;
	if (has_colors() && !(nc && *nc)) {
		start_color();
		use_default_colors();
		ui->ncolors = COLORS >= 256 ? 256 : COLORS >= 16 ? 16 : COLORS >= 8 ? 8 : 0;
	}
	ui->gmode = graphics_choose(ui->gwant, &ui->tc, ui->ncolors > 0);
	if (ui->gmode == GRAPHICS_BLOCKS && !ui->ncolors)
		ui->gmode = GRAPHICS_NONE;	/* half-blocks are colours or nothing */
	blocks_kind_parse(ui->cfg->blocks, &ui->blocks);
	ui->blocks = graphics_blocks_choose(ui->blocks, &ui->tc);
	if (ui_set_theme(ui, theme_name, &err) < 0) {
		/* A missing theme is not worth refusing to start: fall back to the built-in one. */
		theme_release(&ui->theme);
		theme_init(&ui->theme);
		theme_parse(&ui->theme, theme_builtin_dark, "dark", NULL);
		theme_degrade(&ui->theme, ui->ncolors);
		colors_reset(ui);
		ui_message(ui, "theme: %s (using the built-in dark theme)", err.buf);
	}
	strbuf_release(&err);
	return 0;
}

/* Ask the terminal again after a resize (the font, so the cell size, may have changed). */
static void graphics_requery(struct ui *ui)
{
	struct termcap tc;

	if (!plots_drawn(ui))
		return;
	if (termcap_query(&tc, -1, TUI_QUERY_MS) == 0 && (tc.r.da1 || !ui->tc.r.da1))
		ui->tc = tc;
}

/* Apply a new window size. */
static void screen_resize(void)
{
	struct winsize ws;

	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resize_term(ws.ws_row, ws.ws_col);
}

/* Read every key that is waiting; returns the OR of the handlers' flags. */
static int read_keys(struct ui *ui)
{
	int flags = 0, r;
	wint_t ch;

	while ((r = get_wch(&ch)) != ERR) {
		flags |= ui_key(ui, r == KEY_CODE_YES, ch);
		if (ui->quit)
			break;
	}
	return flags;
}

/* The poll loop: keys, window size changes and kernel events. */
static void ui_loop(struct ui *ui)
{
	int dirty = 1;

	while (!ui->quit) {
		struct pollfd fds[3] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = ui->wake[0], .events = POLLIN },
			{ .fd = session_fd(ui->s), .events = POLLIN },
		};
		int timeout = -1, busy = ui->npending > 0;
		size_t cells_before = ui->out.ncells;

		if (dirty) {
			ui_draw(ui);
			dirty = 0;
		}
		if (busy && (timeout < 0 || timeout > 100))
			timeout = 100;
		if (poll(fds, 3, timeout) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN) {
			char buf[64];
			ssize_t n;
			int resized = 0;
			while ((n = read(ui->wake[0], buf, sizeof(buf))) > 0)
				for (ssize_t k = 0; k < n; k++) {
					resized |= buf[k] == 'w';
					if (buf[k] == 'q')
						ui->quit = 1;
					else if (buf[k] == 'i' && ui->npending)
						session_interrupt(ui->s);
				}
			if (resized) {
				screen_resize();
				graphics_requery(ui);
				clearok(curscr, TRUE);	/* the terminal may have reflowed */
				for (size_t i = 0; i < ui->out.ncells; i++)
					ui->out.cells[i]->rows_width = 0;
			}
			dirty = 1;
		}
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (fds[0].revents & (POLLHUP | POLLERR) && !(fds[0].revents & POLLIN))
				break;	/* the terminal went away */
			dirty |= read_keys(ui) & PANE_REDRAW;
		}
		if (session_dispatch(ui->s) > 0 || ui->out.ncells != cells_before)
			dirty = 1;
		if (session_state(ui->s) == SESSION_DEAD && !ui->dead_reason)
			dirty = 1;
		if (busy && now_monotonic() - ui->spin_at > 0.1) {
			ui->spinner++;
			ui->spin_at = now_monotonic();
			dirty = 1;
		}
		if (busy != (ui->npending > 0))
			dirty = 1;
	}
}

int cmd_tui(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct ui ui;
	const char *theme = cfg->theme ? cfg->theme : "auto";
	struct strbuf err = STRBUF_INIT;
	int rc = EXIT_OK;

	(void)args;
	if (!isatty(0) || !isatty(1)) {
		cli_error("tui: standard input and output must be a terminal (try 'cellbox repl')");
		return EXIT_USAGE;
	}
	setlocale(LC_ALL, "");
	memset(&ui, 0, sizeof(ui));
	ui.cfg = cfg;
	ui.follow = 1;
	ui.search_hit = -1;
	graphics_mode_parse(cfg->graphics ? cfg->graphics : "auto", &ui.gwant);
	strbuf_init(&ui.gbuf, 0);
	outmodel_init(&ui.out, OUT_CELL_MAX);
	edbuf_init(&ui.ed);
	strbuf_init(&ui.pager, 0);
	strbuf_init(&ui.line, 0);
	theme_init(&ui.theme);
	strcpy(ui.kernel_scheme, "Linux");
	themes_dirs(&ui);
	ui.panes[P_OUTPUT] = (struct pane){ .name = "output", .visible = 1, .draw = draw_output,
					    .key = output_key };
	ui.panes[P_EDITOR] = (struct pane){ .name = "editor", .visible = 1, .draw = draw_editor,
					    .key = editor_key };
	ui.panes[P_SIDE] = (struct pane){ .name = "side", .visible = 0, .draw = draw_side };
	ui.panes[P_STATUS] = (struct pane){ .name = "status", .visible = 1, .draw = draw_status };

	fprintf(stderr, "cellbox: starting the kernel...\r");
	ui.s = cli_open_session_cb(cfg, on_state, &ui);
	if (!ui.s) {
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	/* The kernel's language: its highlighting and indentation in the editor. */
	hl_set_language(session_kernel(ui.s)->language);
	ui.ed.indent = session_kernel(ui.s)->indent;
	ui.ed.openers = session_kernel(ui.s)->openers;
	if (cfg->history_size) {
		/* Up, Ctrl-R and the side pane reach the cells of earlier sessions too. */
		history_iter(NULL, load_hist_entry, &ui, &err);
		strbuf_reset(&err);
	}
	record_open(&ui.rec, cfg, ui.s);
	if (screen_start(&ui, theme) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	ui_loop(&ui);
	plots_drop(&ui);	/* kitty keeps images until told */
	endwin();
out:
	cli_close_session(ui.s, cfg);
	record_close(&ui.rec);
	strbuf_release(&err);
	outmodel_release(&ui.out);
	edbuf_release(&ui.ed);
	strbuf_release(&ui.pager);
	strbuf_release(&ui.line);
	theme_release(&ui.theme);
	menu_free(&ui);
	for (size_t i = 0; i < ui.nhist; i++)
		free(ui.hist[i]);
	free(ui.hist);
	free(ui.hist_saved);
	for (size_t i = 0; i < ui.nplots; i++) {
		graphics_free(ui.plots[i].img);
		free(ui.plots[i].path);
		free(ui.plots[i].rel);
	}
	free(ui.plots);
	strbuf_release(&ui.gbuf);
	free(ui.message);
	free(ui.pager_title);
	free(ui.dead_reason);
	free(ui.is_complete_text);
	free(ui.input_prompt);
	for (int k = 0; ui.themes_dirs[k]; k++)
		free(ui.themes_dirs[k]);
	if (ui.wake[0] > 0) {
		close(ui.wake[0]);
		close(ui.wake[1]);
	}
	return rc;
}
