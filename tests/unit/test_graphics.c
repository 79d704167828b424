/*
 * Unit tests of terminal graphics: fitting, block characters (half, quadrant, sextant) and the
 * ink-keeping downscale, sixel. The terminal's replies and the mode choice: test_termcap.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sixel.h>

#include "graphics.h"
#include "pixels.h"
#include "png.h"
#include "termcap.h"
#include "util.h"
#include "../tap.h"

/*
 * A 3x4 RGB PNG:  red    green  blue
 *                 white  black  grey(128)
 *                 yellow cyan   magenta
 *                 black  white  black
 */
static const unsigned char tiny_png[] =
	"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x03\x00"
	"\x00\x00\x04\x08\x02\x00\x00\x00\xc4\x4f\x12\x50\x00\x00\x00\x1d\x49\x44\x41\x54\x78"
	"\xda\x63\xf8\xcf\xc0\xc0\x00\xc1\xff\xff\x83\xe8\x86\x86\x06\x06\x10\x03\xc4\x03\xf1"
	"\xa1\xc2\x00\x46\x11\x10\x72\xe9\xc6\x8b\x58\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42"
	"\x60\x82";

/* Write the tiny PNG to a temporary file; the caller unlinks and frees the path. */
static char *tiny_png_file(void)
{
	char *path = xstrdup("/tmp/cellbox-tiny-XXXXXX");
	int fd = mkstemp(path);

	if (fd < 0 || fsutil_write_all(fd, tiny_png, sizeof(tiny_png) - 1) < 0) {
		CHECK(!"cannot write the tiny PNG");
		exit(1);
	}
	close(fd);
	return path;
}

/* Load the PNG at `path` (a note when it does not load), then unlink and free the path. */
static struct graphics_image *load_file(char *path)
{
	struct strbuf err = STRBUF_INIT;
	struct graphics_image *img = graphics_load(path, &err);

	if (!img)
		tap_note(err.buf);
	unlink(path);
	free(path);
	strbuf_release(&err);
	return img;
}

#define UB "\xe2\x96\x80"	/* U+2580 */

static void test_blocks_truecolor(void)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct graphics_image *img = load_file(tiny_png_file());
	struct graphics_request rq = { .mode = GRAPHICS_BLOCKS, .cols = 80, .truecolor = 1,
				       .blocks = BLOCKS_HALF };
	struct graphics_size sz;
	int w = 0, h = 0;

	CHECK(img != NULL);
	if (!img)
		goto out;
	graphics_image_size(img, &w, &h);
	CHECK(w == 3 && h == 4);
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK(sz.cols == 3 && sz.rows == 2 && sz.px_w == 3 && sz.px_h == 4);
	/* Each cell: top pixel as foreground, bottom as background; rows moved to by CUB+CUD. */
	CHECK_STR(out.buf,
		  "\x1b[38;2;255;0;0;48;2;255;255;255m" UB
		  "\x1b[38;2;0;255;0;48;2;0;0;0m" UB
		  "\x1b[38;2;0;0;255;48;2;128;128;128m" UB "\x1b[0m"
		  "\x1b[3D\x1b[B"
		  "\x1b[38;2;255;255;0;48;2;0;0;0m" UB
		  "\x1b[38;2;0;255;255;48;2;255;255;255m" UB
		  "\x1b[38;2;255;0;255;48;2;0;0;0m" UB "\x1b[0m");
	/* Scrolling output and the 256-colour cube; the crop keeps the second row only. */
	strbuf_reset(&out);
	rq.truecolor = 0;
	rq.flags = GRAPHICS_NEWLINES;
	rq.crop_row = 1;
	rq.crop_rows = 5;
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK_STR(out.buf,
		  "\x1b[38;5;226;48;5;16m" UB
		  "\x1b[38;5;51;48;5;231m" UB
		  "\x1b[38;5;201;48;5;16m" UB "\x1b[0m\r\n");
	/* One column: the image fills one cell (at the cells' 1:2, 3x4 pixels are 1 x 0.67). */
	strbuf_reset(&out);
	rq = (struct graphics_request){ .mode = GRAPHICS_BLOCKS, .cols = 1, .truecolor = 1,
					.blocks = BLOCKS_HALF };
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK(sz.cols == 1 && sz.rows == 1 && sz.px_w == 1 && sz.px_h == 2);
out:
	graphics_free(img);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* Write w x h RGB pixels as a PNG in a temporary file; the caller unlinks and frees it. */
static char *png_file(const unsigned char *rgb, int w, int h)
{
	char *path = xstrdup("/tmp/cellbox-test-XXXXXX");
	struct strbuf png = STRBUF_INIT;
	int fd = mkstemp(path);

	png_encode_rgb(rgb, w, h, &png);
	if (fd < 0 || fsutil_write_all(fd, png.buf, png.len) < 0) {
		CHECK(!"cannot write a PNG");
		exit(1);
	}
	close(fd);
	strbuf_release(&png);
	return path;
}

/* Load pixels through a PNG file (png.c writes it, graphics_load reads it back). */
static struct graphics_image *load_pixels(const unsigned char *rgb, int w, int h)
{
	return load_file(png_file(rgb, w, h));
}

/* Render `w` x `h` pixels with `rq` into `out` (a check each: loaded, rendered); -1 when not. */
static int render_pixels(const unsigned char *rgb, int w, int h,
			 const struct graphics_request *rq, struct strbuf *out,
			 struct graphics_size *sz)
{
	struct graphics_image *img = load_pixels(rgb, w, h);
	int rc;

	CHECK(img != NULL);
	if (!img)
		return -1;
	rc = graphics_render(img, rq, out, sz, NULL);
	CHECK(rc == 0);
	graphics_free(img);
	return rc;
}

#define R 255, 0, 0
#define W 255, 255, 255
#define K 0, 0, 0
#define B 0, 0, 255
#define G 0, 255, 0

static void test_quadrants(void)
{
	/* Four cells of 2x2: red corner on white; black with a white corner; blue; green
	 * over white. Square cells (10x10) so each pixel is one quadrant. */
	static const unsigned char px[] = {
		R, W, K, K,
		W, W, K, W,
		B, B, G, G,
		B, B, W, W,
	};
	struct graphics_request rq = { .mode = GRAPHICS_BLOCKS, .cols = 80, .cell_w = 10,
				       .cell_h = 10, .truecolor = 1, .blocks = BLOCKS_QUADRANT };
	struct strbuf out = STRBUF_INIT;
	struct graphics_size sz;

	if (render_pixels(px, 4, 4, &rq, &out, &sz) < 0)
		goto out;
	CHECK(sz.cols == 2 && sz.rows == 2 && sz.px_w == 4 && sz.px_h == 4);
	/*
	 * Red top-left: U+2598 red on white. The black cell keeps white as background and
	 * draws its black three quarters (U+259B) in the foreground. A blue cell is a space on
	 * blue; green over white is U+2584 (lower half) in white on green.
	 */
	CHECK_STR(out.buf,
		  "\x1b[38;2;255;0;0;48;2;255;255;255m\xe2\x96\x98"
		  "\x1b[38;2;0;0;0m\xe2\x96\x9b\x1b[0m\x1b[2D\x1b[B"
		  "\x1b[48;2;0;0;255m "
		  "\x1b[38;2;255;255;255;48;2;0;255;0m\xe2\x96\x84\x1b[0m");
out:
	strbuf_release(&out);
}

static void test_sextants(void)
{
	/* One cell of 2x3: black but the right column's top and bottom pixels, in 6x9 cells. */
	static const unsigned char px[] = {
		K, W,
		K, K,
		K, W,
	};
	struct graphics_request rq = { .mode = GRAPHICS_BLOCKS, .cols = 80, .cell_w = 6,
				       .cell_h = 9, .blocks = BLOCKS_SEXTANT };
	struct strbuf out = STRBUF_INIT;
	struct graphics_size sz;

	if (render_pixels(px, 2, 3, &rq, &out, &sz) < 0)
		goto out;
	CHECK(sz.cols == 1 && sz.rows == 1 && sz.px_w == 2 && sz.px_h == 3);
	/* U+1FB20 BLOCK SEXTANT-26, white on black, in the 256-colour cube. */
	CHECK_STR(out.buf, "\x1b[38;5;231;48;5;16m\xf0\x9f\xac\xa0\x1b[0m");
out:
	strbuf_release(&out);
}

static void test_ink_downscale(void)
{
	/* A 1-pixel dark line and a 1-pixel red line on white, shrunk four times. */
	enum { SW = 16, SH = 16 };
	unsigned char src[SW * SH * 3], bg[3], *box, *ink;

	memset(src, 255, sizeof(src));
	for (int y = 0; y < SH; y++) {
		memset(src + 3 * (y * SW + 5), 30, 3);			/* dark column 5 */
		memcpy(src + 3 * (y * SW + 10), "\xff\x00\x00", 3);	/* red column 10 */
	}
	pixels_background(src, SW, SH, bg);
	CHECK(bg[0] == 255 && bg[1] == 255 && bg[2] == 255);
	box = pixels_scale_box(src, SW, SH, 4, 4);
	ink = pixels_scale_ink(src, SW, SH, 4, 4, bg);
	/* The box filter blends a quarter of ink into white: pale. */
	CHECK(box[3] > 180 && box[6] == 255 && box[7] > 180);
	/* The ink filter keeps them dark and red: a quarter of ink is most of the colour. */
	CHECK(ink[3] < 80 && ink[4] < 80 && ink[5] < 80);
	CHECK(ink[6] > 230 && ink[7] < 60 && ink[8] < 60);
	CHECK(ink[0] == 255 && ink[9] == 255);			/* blank boxes stay white */
	free(box);
	free(ink);
}

static void test_blocks_keep_lines(void)
{
	/* 80 x 40 white with a 1-pixel black column at x = 41, drawn in 20 x 5 half-block
	 * cells: four pixels a cell across, four a row. The column's cells stay dark. */
	enum { IW = 80, IH = 40 };
	unsigned char px[IW * IH * 3];
	struct graphics_request rq = { .mode = GRAPHICS_BLOCKS, .cols = 20, .truecolor = 1,
				       .blocks = BLOCKS_HALF };
	struct strbuf out = STRBUF_INIT;
	struct graphics_size sz;
	int dark = 0, pale = 0;

	memset(px, 255, sizeof(px));
	for (int y = 0; y < IH; y++)
		memset(px + 3 * (y * IW + 41), 0, 3);
	if (render_pixels(px, IW, IH, &rq, &out, &sz) < 0)
		goto out;
	CHECK(sz.cols == 20 && sz.rows == 5);
	/* Cell 10 of each row: its colours; a box average would give (191, 191, 191). */
	for (const char *p = out.buf; (p = strstr(p, "38;2;")); p++) {
		int r, g, b;
		if (sscanf(p, "38;2;%d;%d;%d", &r, &g, &b) == 3 && r == g && g == b && r < 255) {
			if (r < 40)
				dark++;
			else
				pale++;
		}
	}
	CHECK(dark == 5 && pale == 0);
out:
	strbuf_release(&out);
}

/* Decode sixel data (libsixel) into RGB; NULL when it fails. */
static unsigned char *decode_sixel(const struct strbuf *six, int *w, int *h)
{
	unsigned char *idx = NULL, *pal = NULL, *rgb;
	int n = 0;

	if (SIXEL_FAILED(sixel_decode_raw((unsigned char *)six->buf, (int)six->len, &idx, w, h,
					  &pal, &n, NULL)))
		return NULL;
	rgb = xmalloc((size_t)*w * *h * 3);
	for (int i = 0; i < *w * *h; i++)
		memcpy(rgb + 3 * i, pal + 3 * idx[i], 3);
	free(idx);
	free(pal);
	return rgb;
}

/* Whether two RGB buffers agree within `tol` a channel. */
static int near(const unsigned char *a, const unsigned char *b, size_t n, int tol)
{
	for (size_t i = 0; i < n; i++)
		if (abs(a[i] - b[i]) > tol)
			return 0;
	return 1;
}

static void test_sixel_bands(void)
{
	/* 40 x 50 pixels of stripes, blocks and sparse dots in eight colours. */
	enum { IW = 40, IH = 50 };
	static const unsigned char cols[8][3] = {
		{ 255, 255, 255 }, { 0, 0, 0 }, { 255, 0, 0 }, { 0, 128, 255 },
		{ 30, 200, 30 }, { 128, 128, 128 }, { 250, 200, 0 }, { 90, 0, 90 },
	};
	unsigned char src[IW * IH * 3], *dec;
	struct graphics_image *img;
	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 80, .rows = 24,
				       .cell_w = 10, .cell_h = 10 };
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	int w = 0, h = 0;

	for (int y = 0; y < IH; y++)
		for (int x = 0; x < IW; x++) {
			int c = (x * 7 + y * 3) % 97 == 0 ? 7 : y < 10 ? x % 3 : y < 30 ?
				(x / 5 + y / 4) % 6 : (x + y) % 8 == 0 ? 1 + y % 5 : 0;
			memcpy(src + 3 * (y * IW + x), cols[c], 3);
		}
	img = load_pixels(src, IW, IH);
	CHECK(img != NULL);
	if (!img)
		return;
	/* The whole image decodes to itself (colour registers are in percent: +-2). */
	CHECK(graphics_render(img, &rq, &a, NULL, NULL) == 0);
	CHECK(!strncmp(a.buf, "\x1bPq\"1;1;40;50#", 14));
	dec = decode_sixel(&a, &w, &h);
	CHECK(dec && w == IW && h == IH);
	CHECK(dec && near(dec, src, sizeof(src), 2));
	free(dec);
	/* Cell rows 1..3 (pixel rows 10..39): those rows, from bands starting at row 10. */
	rq.crop_row = 1;
	rq.crop_rows = 3;
	CHECK(graphics_render(img, &rq, &b, NULL, NULL) == 0);
	CHECK(!strncmp(b.buf, "\x1bPq\"1;1;40;30#", 14));
	dec = decode_sixel(&b, &w, &h);
	CHECK(dec && w == IW && h == 30);
	CHECK(dec && near(dec, src + 3 * 10 * IW, (size_t)IW * 30 * 3, 2));
	free(dec);
	/* The same crop again: the same bytes, from the cache. */
	strbuf_reset(&a);
	CHECK(graphics_render(img, &rq, &a, NULL, NULL) == 0);
	CHECK(a.len == b.len && !memcmp(a.buf, b.buf, a.len));
	/* The first cell row: only the colours drawn there are defined in its header. */
	strbuf_reset(&a);
	rq.crop_row = 0;
	rq.crop_rows = 1;
	CHECK(graphics_render(img, &rq, &a, NULL, NULL) == 0);
	dec = decode_sixel(&a, &w, &h);
	CHECK(dec && h == 10 && near(dec, src, (size_t)IW * 10 * 3, 2));
	free(dec);
	{
		int present = 0, defined = 0;

		for (int c = 0; c < 8; c++)
			for (int i = 0; i < IW * 10; i++)
				if (!memcmp(src + 3 * i, cols[c], 3)) {
					present++;
					break;
				}
		for (const char *p = a.buf; (p = strstr(p, ";2;")); p += 3)
			defined++;
		CHECK(present == 4 && defined == present);	/* white, black, red, purple */
	}
	graphics_free(img);
	strbuf_release(&a);
	strbuf_release(&b);
}

static void test_sixel(void)
{
	struct strbuf err = STRBUF_INIT, a = STRBUF_INIT, b = STRBUF_INIT;
	struct graphics_image *img = load_file(tiny_png_file());
	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 80, .rows = 24,
				       .cell_w = 10, .cell_h = 20 };
	struct graphics_size sz;

	CHECK(img != NULL);
	if (!img)
		goto out;
	CHECK(graphics_render(img, &rq, &a, &sz, &err) == 0);
	/* DCS, raster attributes with the size in pixels, colour registers, ST. */
	CHECK(!strncmp(a.buf, "\x1bPq\"1;1;3;4#", 12));
	CHECK(a.len > 4 && !strcmp(a.buf + a.len - 2, "\x1b\\"));
	CHECK(strstr(a.buf, ";2;100;0;0") != NULL);		/* red, in percent */
	CHECK(sz.cols == 1 && sz.rows == 1);
	/* The cache gives the same bytes. */
	CHECK(graphics_render(img, &rq, &b, &sz, &err) == 0);
	CHECK(a.len == b.len && !memcmp(a.buf, b.buf, a.len));
	/* Through tmux: wrapped, every ESC doubled. */
	strbuf_reset(&b);
	rq.flags = GRAPHICS_TMUX_PASSTHROUGH;
	CHECK(graphics_render(img, &rq, &b, &sz, &err) == 0);
	CHECK(!strncmp(b.buf, "\x1bPtmux;\x1b\x1bPq", 10));
	CHECK(b.len > 5 && !strcmp(b.buf + b.len - 5, "\x1b\x1b\\\x1b\\"));
	/* Cells of 1x2 pixels: two rows; the crop draws the second, 3x2 pixels. */
	strbuf_reset(&b);
	rq = (struct graphics_request){ .mode = GRAPHICS_SIXEL, .cols = 80, .cell_w = 1,
					.cell_h = 2, .crop_row = 1, .crop_rows = 1 };
	CHECK(graphics_render(img, &rq, &b, &sz, &err) == 0);
	CHECK(sz.rows == 2 && sz.cols == 3);
	CHECK(!strncmp(b.buf, "\x1bPq\"1;1;3;2#", 12));
out:
	graphics_free(img);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&err);
}

static void test_fit(void)
{
	struct strbuf err = STRBUF_INIT;
	struct graphics_image *img = load_file(tiny_png_file());
	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 80, .rows = 24,
				       .cell_w = 10, .cell_h = 20 };
	struct graphics_size sz;
	struct strbuf out = STRBUF_INIT;

	CHECK(img != NULL);
	if (!img)
		goto out;
	graphics_fit(img, &rq, &sz);
	CHECK(sz.px_w == 3 && sz.px_h == 4);		/* never enlarged */
	/* A crop past the end draws nothing. */
	rq.crop_row = 5;
	rq.crop_rows = 1;
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0 && out.len == 0);
out:
	graphics_free(img);
	strbuf_release(&out);
	strbuf_release(&err);
}

static void test_load_errors(void)
{
	struct strbuf err = STRBUF_INIT;
	char path[] = "/tmp/cellbox-notpng-XXXXXX";
	int fd = mkstemp(path);

	CHECK(graphics_load("/nonexistent/plot.png", &err) == NULL);
	CHECK(strstr(err.buf, "cannot decode '/nonexistent/plot.png'") != NULL);
	strbuf_reset(&err);
	CHECK(graphics_load("-", &err) == NULL);
	CHECK(fd >= 0 && fsutil_write_all(fd, "\x89PNG\r\n\x1a\nnot really", 18) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && err.len > 0);
	unlink(path);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "blocks", test_blocks_truecolor },
	{ "quadrants", test_quadrants },
	{ "sextants", test_sextants },
	{ "ink_downscale", test_ink_downscale },
	{ "blocks_keep_lines", test_blocks_keep_lines },
	{ "sixel_bands", test_sixel_bands },
	{ "sixel", test_sixel },
	{ "fit", test_fit },
	{ "load_errors", test_load_errors },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
