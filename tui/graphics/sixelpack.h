#ifndef CELLBOX_SIXELPACK_H
#define CELLBOX_SIXELPACK_H

/*
 * Sixel that scrolls: an image is quantised to a palette once (per size), and each band of
 * six pixel rows is packed into sixel data once, the first time a frame shows it. A frame
 * then costs a DCS header, the palette and a copy of the cached bands between its first
 * and last pixel row. Scrolling by whole cells moves the first row by the cell height, so
 * the bands start at a few different phases (row mod 6); each phase's bands are cached.
 * Only the last band of a crop, cut short by the crop, is packed on every frame.
 *
 * The palette: the image's own colours when it has no more than `colors` of them (no
 * dithering noise on a plot's white), else libsixel's median-cut palette; each pixel takes
 * its nearest palette colour.
 */

#include "util.h"

struct sixelpack;

/* Quantise `rgb` (w x h RGB888, not kept). NULL with `err` when libsixel fails. */
struct sixelpack *sixelpack_new(const unsigned char *rgb, int w, int h, int colors,
				struct strbuf *err);
void sixelpack_free(struct sixelpack *sp);
/* Append one DCS that draws pixel rows y0 .. y1 - 1, the whole width. */
void sixelpack_draw(struct sixelpack *sp, int y0, int y1, struct strbuf *out);
/* Bytes of memory the pack holds (indices, scratch, cached bands). */
size_t sixelpack_bytes(const struct sixelpack *sp);

#endif
