#ifndef CELLBOX_THEME_H
#define CELLBOX_THEME_H

/*
 * Colour themes of the full-screen UI: small text files, one `element = style` line per UI
 * element or syntax class:
 *
 *	# comment
 *	normal          = white on black
 *	status-busy     = black on yellow bold
 *	syntax-keyword  = #ff8700 bold
 *
 * A style is a foreground colour, optionally `on` a background, then attributes (bold, dim,
 * italic, underline, reverse). Colours: `default`, the eight names (black red green yellow blue
 * magenta cyan white), `bright-NAME`, `colorN` (0..255) or `#rrggbb`. Elements a file leaves
 * out look like `normal`. No terminal code: the UI turns styles into colour pairs.
 *
 * One more key names IPython's colour scheme for the kernel's tracebacks and help under the
 * theme: `ipython = LightBG` (NoColor, Linux, LightBG or Neutral; default Linux).
 */

#include "sgr.h"
#include "util.h"

enum theme_element {
	TH_NORMAL,
	TH_BORDER,
	TH_TITLE,
	TH_STATUS,
	TH_STATUS_BUSY,
	TH_STATUS_DEAD,
	TH_PROMPT_IN,
	TH_PROMPT_OUT,
	TH_STDERR,
	TH_ERROR,
	TH_PLOT,
	TH_TRUNCATED,
	TH_INFO,
	TH_SIDE,
	TH_MENU,
	TH_MENU_SELECTED,
	TH_OVERLAY,
	TH_BRACKET,
	TH_SYNTAX_KEYWORD,	/* the syntax classes, in the order of enum hl_class from 1 */
	TH_SYNTAX_BUILTIN,
	TH_SYNTAX_STRING,
	TH_SYNTAX_NUMBER,
	TH_SYNTAX_COMMENT,
	TH_SYNTAX_DECORATOR,
	TH_SYNTAX_MAGIC,
	TH_CELL_SELECTED,	/* notebook: the bar beside the selected cell (command mode) */
	TH_CELL_EDITING,	/* ... in edit mode */
	TH_CELL_CHANGED,	/* the dot of a cell whose source changed since it ran */
	TH_FIND_MATCH,		/* text `/` found */
	TH_MD_HEADING,		/* markdown: headings */
	TH_MD_CODE,		/* code spans and blocks */
	TH_MD_LINK,		/* links */
	TH_MD_QUOTE,		/* quote bars, rules, list markers */
	TH_SELECTION,		/* the editor's selection (left out: `normal` reversed) */
	TH_NELEMENTS,
};

struct theme_style {
	int fg, bg;		/* 0..255 or SGR_DEFAULT */
	unsigned attrs;		/* SGR_BOLD ... */
};

struct theme {
	char *name;
	struct theme_style style[TH_NELEMENTS];
	char ipython[16];	/* IPython's colour scheme under this theme */
};

void theme_init(struct theme *t);
void theme_release(struct theme *t);
/* Element name as files spell it ("status-busy"). */
const char *theme_element_name(enum theme_element el);
/* Parse one colour word; -1 when it is not a colour. */
int theme_parse_color(const char *word, int *out);
/* Parse theme text; `name` is used in error messages ("NAME:LINE: ..."). 0 or -1 with `err`. */
int theme_parse(struct theme *t, const char *text, const char *name, struct strbuf *err);
/*
 * Load theme `name` (a name, or a path with a '/') from the first directory of the
 * NULL-terminated `dirs` holding NAME.theme. 0 or -1 with `err`.
 */
int theme_load(struct theme *t, const char *name, const char *const *dirs, struct strbuf *err);
/* Fit the colours to a terminal with `ncolors` colours (256, 16, 8; 0 = attributes only). */
void theme_degrade(struct theme *t, int ncolors);
/* The built-in dark theme's text (used when no theme file can be found). */
extern const char theme_builtin_dark[];
/* Whether `scheme` is one of IPython's colour schemes (NoColor, Linux, LightBG, Neutral). */
int theme_ipython_scheme_valid(const char *scheme);
/*
 * The theme `auto` stands for: "light" on a light background (`light` 1), else "dark";
 * any other name is itself.
 */
const char *theme_resolve(const char *name, int light);

#endif
