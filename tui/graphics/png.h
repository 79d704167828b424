#ifndef CELLBOX_PNG_H
#define CELLBOX_PNG_H

/*
 * A small PNG writer for images made here (the visible part of a plot for iTerm2, which
 * cannot crop): 8-bit RGB, each row filtered (none, Sub or Up, whichever is smallest), one
 * zlib stream of fixed-Huffman deflate with LZ77 matches. Plots, mostly flat colour,
 * shrink to a few percent of their raw size; decoders see an ordinary PNG.
 */

#include "util.h"

/* Append the PNG of w x h RGB888 pixels. */
void png_encode_rgb(const unsigned char *rgb, int w, int h, struct strbuf *out);

#endif
