#ifndef CELLBOX_BLOCKS_H
#define CELLBOX_BLOCKS_H

/*
 * Pictures made of text: each cell is one character from the block elements with a
 * foreground and a background colour, so it shows two colours in a pattern of sub-pixels.
 *
 *   half      U+2580 (upper half block): 1 x 2 sub-pixels a cell, each its exact colour;
 *   quadrant  U+2596..U+259F and the halves: 2 x 2, two colours a cell (in nearly every
 *             monospace font);
 *   sextant   U+1FB00..U+1FB3B (Unicode 13, "Symbols for Legacy Computing"): 2 x 3, two
 *             colours a cell; kitty, WezTerm, foot and Ghostty draw them themselves, other
 *             terminals need a font that has them.
 *
 * For quadrants and sextants each cell's sub-pixels are split into the two groups that
 * differ most (the split with the least squared error), each group drawn in its mean colour.
 * Colours are 24-bit, or the nearest of the xterm 256-colour cube and grey ramp.
 */

#include "util.h"

enum blocks_kind {
	BLOCKS_AUTO = 0,	/* the caller's choice: graphics_blocks_choose() */
	BLOCKS_HALF,
	BLOCKS_QUADRANT,
	BLOCKS_SEXTANT,
};

/* Parse "auto", "half", "quadrant" or "sextant"; -1 for anything else. */
int blocks_kind_parse(const char *s, enum blocks_kind *kind);
const char *blocks_kind_name(enum blocks_kind kind);
/* The sub-pixels of one cell: `sx` across, `sy` down (AUTO counts as quadrant). */
void blocks_cell_pixels(enum blocks_kind kind, int *sx, int *sy);
/*
 * Append cell rows row0 .. row0 + nrows - 1 of a picture `cols` x `rows` cells big, drawn
 * from `px`: (cols * sx) x (rows * sy) RGB888 pixels. Each row ends with SGR 0, then "\r\n"
 * when `newlines`, else (between rows) CUB + CUD back to the picture's left edge.
 */
void blocks_encode(const unsigned char *px, int cols, int rows, enum blocks_kind kind,
		   int row0, int nrows, int truecolor, int newlines, struct strbuf *out);
/* The nearest colour of the xterm 256-colour cube (16..231) or grey ramp (232..255). */
int blocks_color256(const unsigned char rgb[3]);

#endif
