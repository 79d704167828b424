#ifndef CELLBOX_KITTY_H
#define CELLBOX_KITTY_H

/*
 * The kitty graphics protocol (kitty, Ghostty, Konsole, WezTerm with it enabled): images
 * are sent once as PNG (f=100, base64 in chunks of at most 4096 bytes, m=1 on all but the
 * last) under an image id, then placed, moved (a placement with the same image and
 * placement id replaces the old one), cropped by a source rectangle and deleted by id,
 * without sending the pixels again. Every command is quiet (q=2): the terminal answers
 * nothing that could end up as input.
 *
 * Unicode placeholders (U=1, kitty 0.28+, Ghostty): the image gets a virtual placement of
 * C x R cells and shows wherever the text has U+10EEEE cells whose foreground colour is
 * the image id and whose combining marks (the diacritics table of the protocol) give the
 * row, the column and the id's high byte. Being text, it scrolls with the text, is cut by
 * whatever overwrites it, and survives tmux, which only has to pass the transmission
 * through. Ids here are (high << 24) | low with low in 1..255, so the foreground is a
 * 256-colour index (38;5;low) that tmux keeps as it is.
 */

#include "util.h"

#define KITTY_CHUNK 4096	/* the protocol's largest chunk of base64 */
#define KITTY_MAX_CELLS 297	/* rows and columns the diacritics can number */

/* A fresh image id: a per-process high byte, the low byte counting 1..255. */
unsigned kitty_image_id(void);
/* Append one command `ESC _ G keys ST` without payload (wrapped for tmux when `tmux`). */
void kitty_command(struct strbuf *out, int tmux, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Append the transmission of `len` bytes of PNG: the first chunk's command carries `keys`
 * (e.g. "a=t,f=100,i=7,q=2"), the next ones only m (and q=2). Each chunk is wrapped on its
 * own for tmux when `tmux`.
 */
void kitty_transmit(struct strbuf *out, int tmux, const void *png, size_t len,
		    const char *keys);
/*
 * Append placeholder rows row0 .. row0 + nrows - 1 of image `id`, `cols` cells wide: the
 * first cell of a row names its row, column 0 and the id's high byte, the others inherit
 * (the protocol's left-to-right rule). Rows end with SGR 39, then "\r\n" when `newlines`,
 * else (between rows) CUB + CUD back to the left edge.
 */
void kitty_placeholders(struct strbuf *out, unsigned id, int row0, int nrows, int cols,
			int newlines);
/* The protocol's diacritic for number n (0 <= n < KITTY_MAX_CELLS). */
unsigned kitty_diacritic(int n);

#endif
