/*
 * libFuzzer target: a kernel's plot from the wall to the terminal. One input goes through the
 * check before it is copied anywhere (wall_png_check: the signature, the IHDR chunk, the
 * dimensions), then, when it passes, through the whole decode and draw: graphics_load_mem()
 * (the file check, libpng's decode, in this process here so that the sanitizers see it) and
 * graphics_render() in every graphics mode (blocks of each kind, sixel, kitty, kitty-unicode,
 * iTerm2), whole and cropped, which scales the pixels and encodes them (sixel: libsixel's
 * dither; iTerm2 cropped: our PNG writer). The decode gets the input with its chunks' CRCs
 * made right (else nearly every mutation stops at libpng's CRC check; the unit tests cover
 * that refusal), the wall's check both. Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "graphics.h"
#include "wall.h"

#define DRAW_MAX_PIXELS (1u << 20)	/* larger images decode and draw too, only slowly */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Draw `img` in one mode, whole then a crop; what it writes is bounded by the box. */
static void draw(struct graphics_image *img, enum graphics_mode mode, enum blocks_kind blocks,
		 unsigned flags)
{
	struct graphics_request rq = { .mode = mode, .flags = flags, .cols = 24, .rows = 10,
				       .cell_w = 6, .cell_h = 12, .colors = 16,
				       .truecolor = blocks != BLOCKS_HALF, .blocks = blocks };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	struct graphics_size sz;

	if (graphics_render(img, &rq, &out, &sz, &err) == 0 && sz.rows > 1) {
		rq.crop_row = 1;
		rq.crop_rows = sz.rows - 1;
		strbuf_reset(&out);
		graphics_render(img, &rq, &out, NULL, &err);
	}
	graphics_unplace(img, &rq, &out);
	graphics_forget(img, &rq, &out);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* A copy of the input with the CRC of every whole chunk after the signature recomputed. */
static unsigned char *fix_crcs(const uint8_t *data, size_t size)
{
	unsigned char *p = malloc(size ? size : 1);
	size_t at = 8;

	memcpy(p, data, size);
	while (size >= 12 && at <= size - 12) {
		size_t n = (size_t)p[at] << 24 | (size_t)p[at + 1] << 16 | (size_t)p[at + 2] << 8 |
			   p[at + 3];
		uLong crc;

		if (n > size - 12 - at)
			break;
		crc = crc32(0, p + at + 4, (uInt)(n + 4));
		p[at + 8 + n] = (unsigned char)(crc >> 24);
		p[at + 9 + n] = (unsigned char)(crc >> 16);
		p[at + 10 + n] = (unsigned char)(crc >> 8);
		p[at + 11 + n] = (unsigned char)crc;
		at += 12 + n;
	}
	return p;
}

/* What passes the wall's check has dimensions within the caps; then it is drawn. */
int LLVMFuzzerTestOneInput(const uint8_t *raw, size_t size)
{
	struct strbuf why = STRBUF_INIT;
	struct graphics_image *img;
	int w = 0, h = 0, iw, ih;
	unsigned char *data;

	graphics_decode_in_process(1);
	if (wall_png_check(raw, size, 16384, 100000000ull, &w, &h, &why) < 0) {
		if (!why.len)
			abort();
		strbuf_release(&why);
		return 0;
	}
	if (w < 1 || h < 1 || w > 16384 || h > 16384 || (long long)w * h > 100000000ll)
		abort();
	strbuf_release(&why);
	if ((unsigned long long)w * h > DRAW_MAX_PIXELS)
		return 0;
	data = fix_crcs(raw, size);
	img = graphics_load_mem(data, size, "fuzz", &why);
	free(data);
	if (!img) {
		if (!why.len)
			abort();
		strbuf_release(&why);
		return 0;
	}
	graphics_image_size(img, &iw, &ih);
	if (iw != w || ih != h)		/* libpng decodes the size the wall checked */
		abort();
	draw(img, GRAPHICS_BLOCKS, BLOCKS_HALF, 0);
	draw(img, GRAPHICS_BLOCKS, BLOCKS_QUADRANT, GRAPHICS_NEWLINES);
	draw(img, GRAPHICS_BLOCKS, BLOCKS_SEXTANT, 0);
	draw(img, GRAPHICS_SIXEL, BLOCKS_AUTO, 0);
	draw(img, GRAPHICS_KITTY, BLOCKS_AUTO, 0);
	draw(img, GRAPHICS_KITTY, BLOCKS_AUTO, GRAPHICS_NEWLINES | GRAPHICS_TMUX_PASSTHROUGH);
	draw(img, GRAPHICS_KITTY_UNICODE, BLOCKS_AUTO, 0);
	draw(img, GRAPHICS_ITERM, BLOCKS_AUTO, GRAPHICS_NEWLINES);
	graphics_free(img);
	return 0;
}
