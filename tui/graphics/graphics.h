#ifndef CELLBOX_GRAPHICS_H
#define CELLBOX_GRAPHICS_H

/*
 * Plots in the terminal: a PNG read once (and decoded once), then drawn as
 *
 *   kitty          the kitty graphics protocol: the PNG sent once, placed, moved, cropped
 *                  and deleted by id (kitty.h);
 *   kitty-unicode  the same PNG shown through Unicode placeholders, which are text and so
 *                  scroll with it and survive tmux (kitty 0.28+, Ghostty);
 *   iterm          iTerm2's inline images, OSC 1337 (iTerm2, WezTerm, mintty: iterm.h);
 *   sixel          sixel, quantised once per size and packed band by band (sixelpack.h);
 *   blocks         Unicode block characters in two colours a cell: half-blocks, quadrants
 *                  or sextants (blocks.h), from a downscale that keeps lines and text;
 *   none           a text line naming the file.
 *
 * Rendering is sized in cells: "this image in at most COLS x ROWS cells" gives the bytes to
 * write with the cursor at the image's top-left cell, and the cells the image covers. The
 * bytes never move the cursor to an absolute position, so the caller places them: the line
 * front ends write them where the output is, the full-screen UI after moving the cursor to
 * the top-left cell of the reserved rows, in the same buffer as the rest of its frame
 * (DESIGN.md rule 6). A crop (first row and number of rows, in cells of the fitted image)
 * draws only the visible part of an image scrolled partly off the pane.
 *
 *	struct graphics_image *img = graphics_load(path, &err);
 *	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 80, .rows = 20,
 *				       .cell_w = tc.cell_w, .cell_h = tc.cell_h };
 *	struct graphics_size sz;
 *	graphics_render(img, &rq, &frame, &sz, &err);	  appends to the frame's buffer
 *	...
 *	graphics_forget(img, &rq, &frame);		  kitty: the terminal drops it too
 *	graphics_free(img);
 *
 * Two kinds of image live on the screen differently. Sixel, iTerm2, blocks and placeholders
 * are the content of the cells they cover: text written there replaces them, so a UI that
 * moves a plot rewrites the old cells (graphics_mode_in_cells). A kitty placement is a
 * layer over the text: it stays until deleted (graphics_unplace) or moved by placing it
 * again, and costs a few dozen bytes a move.
 *
 * With GRAPHICS_NEWLINES (scrolling output: `repl`, `run`) the bytes end at the start of the
 * line below the image. Without it, half-blocks and placeholders leave the cursor after the
 * last cell of the last row, kitty does not move it (C=1), and sixel and iTerm2 leave it
 * where the terminal puts it, so callers that go on writing should position it themselves.
 *
 * Caches: the scaled pixels, the sixel palette and bands, and the encoded bytes of recent
 * requests are kept per image, under one budget for all images (the least recently drawn
 * give theirs up first). Redrawing an unchanged frame costs a copy.
 */

#include "blocks.h"
#include "termcap.h"
#include "util.h"

enum graphics_mode {
	GRAPHICS_AUTO = 0,	/* choose from the terminal's answers */
	GRAPHICS_NONE,		/* a text line */
	GRAPHICS_BLOCKS,	/* block characters */
	GRAPHICS_SIXEL,		/* sixel */
	GRAPHICS_KITTY,		/* kitty graphics protocol, placements */
	GRAPHICS_KITTY_UNICODE,	/* kitty graphics protocol, Unicode placeholders */
	GRAPHICS_ITERM,		/* iTerm2 inline images */
};

enum {
	GRAPHICS_NEWLINES = 1 << 0,	/* scrolling output: end at the start of the next line
					   (half-blocks: rows end with "\r\n"; kitty: a=T with
					   the cursor moved) instead of a fixed screen */
	GRAPHICS_TMUX_PASSTHROUGH = 1 << 1, /* wrap sixel, kitty and iTerm2 sequences in
					      tmux's passthrough DCS */
};

struct graphics_request {
	enum graphics_mode mode;	/* any mode that draws (not AUTO or NONE) */
	unsigned flags;
	int cols, rows;			/* the box to fit in, in cells (rows 0 = no cap) */
	int cell_w, cell_h;		/* pixels of one cell (0 = 10 x 20) */
	int max_w, max_h;		/* the terminal's sixel geometry, 0 = no limit */
	int colors;			/* sixel colour registers (0 = 256) */
	int truecolor;			/* blocks: 24-bit colour, else the 256-colour cube */
	enum blocks_kind blocks;	/* blocks: the characters (AUTO = quadrants) */
	int crop_row, crop_rows;	/* draw only these rows of the fitted image (0,0 = all) */
};

/* What a render covers. */
struct graphics_size {
	int cols, rows;			/* cells covered by the whole fitted image */
	int px_w, px_h;			/* pixels of the fitted image (blocks: sub-pixels) */
};

struct graphics_image;

/* Parse "auto", "sixel", "kitty", "kitty-unicode", "iterm", "blocks" or "none"; -1 else. */
int graphics_mode_parse(const char *s, enum graphics_mode *mode);
const char *graphics_mode_name(enum graphics_mode mode);
/*
 * The mode to use: `want` unless it is GRAPHICS_AUTO; then kitty when the terminal answered
 * its query, iterm when it is iTerm2, WezTerm or mintty (XTVERSION, or the environment
 * outside tmux), sixel when DA1 lists it, half-blocks when it answered and `color` (a
 * colour terminal), else none.
 */
enum graphics_mode graphics_choose(enum graphics_mode want, const struct termcap *tc, int color);
/* The block characters to use: `want` unless AUTO; then sextants where the terminal draws
 * them itself (tc->sextants), else quadrants. */
enum blocks_kind graphics_blocks_choose(enum blocks_kind want, const struct termcap *tc);
/* Whether images of `mode` are the content of their cells (see above); 0 for kitty. */
int graphics_mode_in_cells(enum graphics_mode mode);

/*
 * Read a PNG and decode it onto white. The file is opened without following a symlink,
 * must be a regular file of at most 64 MiB with a PNG signature and at most 8192 x 8192
 * pixels, and is decoded from the bytes read (so what is drawn is what is sent) by libpng in
 * a child process under CPU, memory and time limits (pngchild.h): a PNG that crashes, spins
 * or bloats the decoder costs this image, not the caller. NULL with `err` on failure.
 */
struct graphics_image *graphics_load(const char *path, struct strbuf *err);
/* The same from `len` bytes in memory (a plot as the session checked it, event.h), so
 * nothing is read by a name again; `name` is for messages. */
struct graphics_image *graphics_load_mem(const void *png, size_t len, const char *name,
					 struct strbuf *err);
void graphics_free(struct graphics_image *img);
/* For the fuzzer only: decode in this process (the same libpng decode, no child), so that
 * the sanitizers see it. */
void graphics_decode_in_process(int on);
/* The image's size in pixels. */
void graphics_image_size(const struct graphics_image *img, int *w, int *h);
/* Its pixels: w * h * 3 bytes, RGB888, rows top to bottom. */
const unsigned char *graphics_image_rgb(const struct graphics_image *img);
/*
 * The size the image takes under `rq`, without rendering. Pixel protocols: never enlarged,
 * aspect kept, whole cells. Blocks: the cells the image fills at the cell's aspect, never
 * more sub-pixels than the image has pixels.
 */
void graphics_fit(const struct graphics_image *img, const struct graphics_request *rq,
		  struct graphics_size *sz);
/* The same for an image of w x h pixels not decoded (yet): what it will take once it is. */
void graphics_fit_size(int w, int h, const struct graphics_request *rq, struct graphics_size *sz);
/*
 * Append the bytes that draw `img` under `rq` to `out`; fill `sz` when not NULL. kitty
 * sends the PNG the first time it draws an image (and kitty-unicode its virtual placement,
 * again when the size changes). Returns 0, or -1 with a message in `err` (may be NULL).
 */
int graphics_render(struct graphics_image *img, const struct graphics_request *rq,
		    struct strbuf *out, struct graphics_size *sz, struct strbuf *err);
/* Append what takes the image's placement off the screen (kitty; nothing for the others). */
void graphics_unplace(struct graphics_image *img, const struct graphics_request *rq,
		      struct strbuf *out);
/* Append what makes the terminal drop the image and its data (kitty modes; else nothing). */
void graphics_forget(struct graphics_image *img, const struct graphics_request *rq,
		     struct strbuf *out);
/* The budget of all images' caches, and the bytes they hold now (the image being drawn
 * may take the total over the budget until the next one is drawn). */
#define GRAPHICS_CACHE_BUDGET (48u << 20)
size_t graphics_cache_bytes(void);
/* Append `s` wrapped in tmux's passthrough: ESC Ptmux; with every ESC doubled, ESC \. */
void graphics_wrap_tmux(const char *s, size_t len, struct strbuf *out);

#endif
