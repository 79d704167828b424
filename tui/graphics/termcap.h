#ifndef CELLBOX_TERMCAP_H
#define CELLBOX_TERMCAP_H

/*
 * What the terminal can draw, asked once (and again after a resize) with every query sent
 * in one write and DA1 last as the sentinel: terminals answer in order, so once the DA1
 * reply is in, every answer the terminal will give is in. The wait is bounded: a terminal
 * (or a pipe, or a multiplexer) that answers nothing costs at most the timeout.
 *
 *   ESC[?1;1;0S   XTSMGRAPHICS: number of sixel colour registers
 *   ESC[?2;1;0S   XTSMGRAPHICS: the sixel geometry (largest image in pixels)
 *   ESC[14t       the text area in pixels
 *   ESC[16t       one cell in pixels
 *   ESC_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA ST
 *                 the kitty graphics protocol's query: a terminal that speaks it answers
 *                 ESC_Gi=31;OK ST (and stores nothing)
 *   ESC[>q        XTVERSION: the terminal's name and version (DCS >|kitty(0.26.5) ST)
 *   ESC]11;? ST   the background colour (OSC 11;rgb:RRRR/GGGG/BBBB ST)
 *   ESC[c         DA1: attribute 4 means sixel (the sentinel)
 *
 * The cell size comes from CSI 16t, else CSI 14t divided by the rows and columns, else the
 * pixel fields of TIOCGWINSZ, else a guess of 10x20 pixels (cell_source says which). With
 * TERM=linux (the console, which prints strings it does not know) the APC and OSC queries
 * are left out.
 *
 * Inside tmux (TMUX set) the queries go to tmux, which answers for itself: tmux 3.4+ built
 * with sixel lists attribute 4 and draws sixel natively; the kitty query gets no answer.
 * Passthrough to the outer terminal (allow-passthrough on) cannot be detected from inside,
 * so it is used only when asked for (--graphics sixel, kitty-unicode, ... in tmux): see
 * graphics.h. The environment's hints (TERM_PROGRAM, LC_TERMINAL) are not trusted inside
 * tmux, which inherits them from whatever terminal first started its server.
 */

#include <stddef.h>

enum termcap_cell_source {
	TERMCAP_CELL_GUESS = 0,	/* nothing answered: 10x20 */
	TERMCAP_CELL_CSI16,	/* CSI 16t: the cell size itself */
	TERMCAP_CELL_CSI14,	/* CSI 14t: the text area divided by rows and columns */
	TERMCAP_CELL_WINSZ,	/* TIOCGWINSZ's ws_xpixel / ws_ypixel */
};

#define TERMCAP_VERSION_MAX 64

/* The answers, as the parser finds them: 0 where a terminal said nothing. */
struct termcap_reply {
	int da1;			/* the DA1 reply (the sentinel) came */
	int sixel;			/* DA1 listed attribute 4 */
	int color_registers;		/* XTSMGRAPHICS Pi=1 */
	int sixel_max_w, sixel_max_h;	/* XTSMGRAPHICS Pi=2 */
	int cell_w, cell_h;		/* CSI 16t -> CSI 6;h;w t */
	int area_w, area_h;		/* CSI 14t -> CSI 4;h;w t */
	int kitty;			/* the kitty graphics query was answered OK */
	char version[TERMCAP_VERSION_MAX]; /* XTVERSION, printable ASCII only ("" = none) */
	int bg;				/* OSC 11 answered: bg_rgb is the background */
	unsigned char bg_rgb[3];
};

/* What the answers and the environment say about the terminal program. */
enum termcap_term {
	TERMCAP_TERM_OTHER = 0,
	TERMCAP_TERM_KITTY,
	TERMCAP_TERM_WEZTERM,
	TERMCAP_TERM_ITERM2,
	TERMCAP_TERM_GHOSTTY,
	TERMCAP_TERM_FOOT,
	TERMCAP_TERM_MINTTY,
	TERMCAP_TERM_XTERM,
	TERMCAP_TERM_TMUX,
};

struct termcap {
	struct termcap_reply r;
	int rows, cols;			/* TIOCGWINSZ; 24x80 when unknown */
	int cell_w, cell_h;		/* pixels, always set */
	enum termcap_cell_source cell_source;
	int tmux;			/* TMUX is set */
	int truecolor;			/* COLORTERM says truecolor or 24bit */
	enum termcap_term term;		/* XTVERSION, else TERM_PROGRAM / LC_TERMINAL (not in tmux) */
	int iterm;			/* iTerm2's inline images: iTerm2, WezTerm, mintty */
	int sextants;			/* draws the Unicode 13 sextant characters itself */
	int light;			/* background: 1 light, 0 dark, -1 unknown (OSC 11, else
					   COLORFGBG) */
	double waited;			/* seconds spent waiting for the answers */
};

/* The queries, in the order they are written (termcap_queries_short: for TERM=linux). */
extern const char termcap_queries[];
extern const char termcap_queries_short[];

/*
 * Parse what the terminal sent back so far (`buf` is everything read, from the start) into
 * `r`, from scratch. A pure function: bytes that are not replies we know are skipped, any
 * input is safe. Returns 1 when the DA1 sentinel is in, else 0.
 */
int termcap_parse(struct termcap_reply *r, const char *buf, size_t len);

/*
 * Ask the terminal on `fd` (a tty open for reading and writing; -1 to open /dev/tty) and
 * wait at most `timeout_ms` for the sentinel. The tty is put in raw mode for the wait and
 * restored on every path; input that arrives after a timeout is flushed. Fills `tc`
 * (environment and TIOCGWINSZ included) and returns 0, or -1 when there is no terminal to
 * ask or we are not its foreground job (tc then holds the defaults and the environment's
 * hints). Call it again after SIGWINCH: the cell size may have changed with the font.
 */
int termcap_query(struct termcap *tc, int fd, int timeout_ms);

/* Fill `tc` from a parsed reply, the window size and the environment (used by query). */
void termcap_fill(struct termcap *tc, const struct termcap_reply *r, int fd);
/* Which terminal an XTVERSION answer names (TERMCAP_TERM_OTHER when none we know). */
enum termcap_term termcap_term_of(const char *version);
/*
 * Whether a colour is light: 1 when its luma (Rec. 709 weights on the sRGB values) is above
 * one half, else 0.
 */
int termcap_is_light(const unsigned char rgb[3]);

#endif
