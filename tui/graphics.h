#ifndef CELLBOX_GRAPHICS_H
#define CELLBOX_GRAPHICS_H

/*
 * Plots in the terminal: a PNG decoded once, then drawn as sixel (libsixel), as Unicode
 * half-blocks (U+2580 with a truecolor or 256-colour foreground and background: two pixels
 * a cell), or not at all (a text line naming the file).
 *
 * Rendering is sized in cells: "this image in at most COLS x ROWS cells" gives the bytes to
 * write with the cursor at the image's top-left cell, and the cells the image covers. The
 * bytes never move the cursor to an absolute position, so the caller places them: the line
 * front ends write them where the output is, the full-screen UI after moving the cursor to
 * the top-left cell of the reserved rows, in the same buffer as the rest of its frame
 * (DESIGN.md rule 6). A crop (first row and number of rows, in cells of the fitted image)
 * draws only the visible part of an image scrolled partly off the pane. Encoded output is
 * cached per request inside the image, so redrawing an unchanged frame costs a copy.
 *
 *	struct graphics_image *img = graphics_load(path, &err);
 *	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 80, .rows = 20,
 *				       .cell_w = tc.cell_w, .cell_h = tc.cell_h };
 *	struct graphics_size sz;
 *	graphics_render(img, &rq, &frame, &sz);	  appends to the frame's buffer
 *	...
 *	graphics_free(img);
 *
 * Cursor after the bytes: half-blocks leave it after the last cell of the last row (or,
 * with GRAPHICS_NEWLINES, at the start of the next line); sixel leaves it where the
 * terminal puts it (xterm: on the image's last text row), so callers that go on writing
 * should position it themselves.
 */

#include <stdio.h>
#include "termcap.h"
#include "util.h"

enum graphics_mode {
	GRAPHICS_AUTO = 0,	/* choose from the terminal's answers */
	GRAPHICS_NONE,		/* a text line */
	GRAPHICS_BLOCKS,	/* half-blocks */
	GRAPHICS_SIXEL,		/* sixel */
};

enum {
	GRAPHICS_NEWLINES = 1 << 0,	/* half-blocks: rows end with "\r\n" (scrolling output)
					   instead of moving back down-left (a fixed screen) */
	GRAPHICS_TMUX_PASSTHROUGH = 1 << 1, /* sixel: wrap in tmux's passthrough DCS */
};

struct graphics_request {
	enum graphics_mode mode;	/* GRAPHICS_SIXEL or GRAPHICS_BLOCKS */
	unsigned flags;
	int cols, rows;			/* the box to fit in, in cells (rows 0 = no cap) */
	int cell_w, cell_h;		/* pixels of one cell (sixel) */
	int max_w, max_h;		/* the terminal's sixel geometry, 0 = no limit */
	int colors;			/* sixel colour registers (0 = 256) */
	int truecolor;			/* half-blocks: 24-bit colour, else the 256-colour cube */
	int crop_row, crop_rows;	/* draw only these rows of the fitted image (0,0 = all) */
};

/* What a render covers. */
struct graphics_size {
	int cols, rows;			/* cells covered by the whole fitted image */
	int px_w, px_h;			/* pixels of the fitted image (blocks: 1 x 2 per cell) */
};

struct graphics_image;

/* Parse "auto", "sixel", "blocks" or "none"; -1 for anything else. */
int graphics_mode_parse(const char *s, enum graphics_mode *mode);
const char *graphics_mode_name(enum graphics_mode mode);
/*
 * The mode to use: `want` unless it is GRAPHICS_AUTO; then sixel when the terminal said so,
 * half-blocks when it answered and `color` (a colour terminal), else none.
 */
enum graphics_mode graphics_choose(enum graphics_mode want, const struct termcap *tc, int color);

/* Decode a PNG (or any image libsixel reads) onto white. NULL with `err` on failure. */
struct graphics_image *graphics_load(const char *path, struct strbuf *err);
void graphics_free(struct graphics_image *img);
/* The image's size in pixels. */
void graphics_image_size(const struct graphics_image *img, int *w, int *h);
/* Its pixels: w * h * 3 bytes, RGB888, rows top to bottom. */
const unsigned char *graphics_image_rgb(const struct graphics_image *img);
/*
 * The size the image takes under `rq` (never enlarged, aspect kept, whole cells), without
 * rendering.
 */
void graphics_fit(const struct graphics_image *img, const struct graphics_request *rq,
		  struct graphics_size *sz);
/*
 * Append the bytes that draw `img` under `rq` to `out`; fill `sz` when not NULL. Results are
 * cached per request. Returns 0, or -1 with a message in `out`-free `err` (may be NULL).
 */
int graphics_render(struct graphics_image *img, const struct graphics_request *rq,
		    struct strbuf *out, struct graphics_size *sz, struct strbuf *err);

/*
 * For the line front ends (`repl`, `run`): how plots are shown in scrolling output. Set up
 * from the --graphics setting, asking the terminal on `fd` only when it is a terminal and
 * the setting is auto (or when sixel/blocks need the cell size).
 */
struct graphics_line {
	enum graphics_mode mode;
	struct termcap tc;
};

void graphics_line_init(struct graphics_line *g, enum graphics_mode want, int fd, int color);
/*
 * Show the PNG at `path` on `out` (at the start of a line), written at once, and end at the
 * start of the line below it. Returns 0 when it drew the plot, 1 when the mode draws
 * nothing, -1 when the PNG could not be decoded; after a non-zero return nothing was
 * written and the caller prints its text line instead. Fits printer's plot_hook.
 */
int graphics_line_plot(void *g, const char *path, FILE *out);

#endif
