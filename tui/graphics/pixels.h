#ifndef CELLBOX_PIXELS_H
#define CELLBOX_PIXELS_H

/*
 * RGB888 pixel buffers (3 bytes a pixel, rows top to bottom, no padding) scaled for the
 * encoders. Every function returns a fresh buffer of w * h * 3 bytes the caller frees; the
 * source is never changed. Target sizes may be smaller or larger than the source in each
 * direction (an output pixel covers at least one source pixel).
 *
 *   pixels_scale_box   each output pixel is the average of the source pixels it covers:
 *                      faithful for the pixel protocols (sixel, iTerm2), where the
 *                      downscale is mild;
 *   pixels_scale_ink   for half-blocks, where a plot shrinks three to six times: pixels far
 *                      from the background (lines, text, markers) are "ink", and an output
 *                      pixel with enough ink takes the ink's own colour instead of a blend
 *                      with the background, so thin dark lines and letters stay dark and
 *                      coloured lines keep their colour instead of fading to pastel.
 */

/* Box filter. */
unsigned char *pixels_scale_box(const unsigned char *src, int sw, int sh, int w, int h);
/* Ink-keeping filter against the background colour `bg` (see pixels_background). */
unsigned char *pixels_scale_ink(const unsigned char *src, int sw, int sh, int w, int h,
				const unsigned char bg[3]);
/* The image's most common colour (a plot's background), from a sample of its pixels. */
void pixels_background(const unsigned char *src, int w, int h, unsigned char bg[3]);

#endif
