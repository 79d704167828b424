#ifndef CELLBOX_ITERM_H
#define CELLBOX_ITERM_H

/*
 * iTerm2's inline images (also WezTerm, mintty, and others that copied them): one OSC
 * 1337 `File=` with the image file in base64, drawn from the cursor over `cols` x `rows`
 * cells. The image becomes the content of those cells, as sixel does: text written over
 * them removes it. The protocol cannot crop, so a plot partly scrolled out is sent as a
 * PNG of its visible part (png.h).
 */

#include "util.h"

/* Append the OSC that draws `len` bytes of an image file over cols x rows cells. */
void iterm_image(struct strbuf *out, int tmux, const void *data, size_t len, int cols,
		 int rows);

#endif
