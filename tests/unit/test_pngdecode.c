/*
 * Unit tests of the decode of a kernel's PNG (pngdecode.h: libpng under limits; pngchild.h:
 * in a child under CPU, memory and time limits): hostile PNGs made here (a cut IDAT, a size
 * over the caps, decompression bombs, a bad CRC, palette indices past the palette, the two
 * PNGs that stopped libsixel's loader: one aborts it, one makes it spin), good PNGs of every
 * colour type and depth decoded to the right pixels, and the child's limits (by fault
 * injection, since libpng cannot be made to hang or crash on demand).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

#include "clock.h"
#include "graphics.h"
#include "pngchild.h"
#include "pngdecode.h"
#include "util.h"
#include "../tap.h"

/* ---- making PNGs ---- */

static void put32(struct strbuf *b, uint32_t v)
{
	unsigned char p[4] = { v >> 24, v >> 16, v >> 8, v };
	strbuf_add(b, p, 4);
}

/* Append a chunk with its CRC (`bad_crc`: one off). */
static void chunk(struct strbuf *b, const char *type, const void *data, size_t len, int bad_crc)
{
	uLong crc = crc32(0, (const Bytef *)type, 4);

	crc = crc32(crc, data, (uInt)len);
	put32(b, (uint32_t)len);
	strbuf_add(b, type, 4);
	strbuf_add(b, data, len);
	put32(b, (uint32_t)crc + (bad_crc ? 1 : 0));
}

/* zlib-compress `len` bytes (the caller frees). */
static unsigned char *deflated(const void *raw, size_t len, size_t *out_len)
{
	uLongf n = compressBound(len);
	unsigned char *z = xmalloc(n);

	CHECK(compress2(z, &n, raw, len, 9) == Z_OK);
	*out_len = n;
	return z;
}

struct spec {
	int w, h, depth, type, interlace;
	const void *plte;
	size_t plte_len;
	const void *trns;
	size_t trns_len;
	const struct strbuf *before_idat;	/* chunks to put before IDAT, or NULL */
};

/* A PNG of `raw` (filtered scanlines as they go into IDAT), zlib data cut to `keep`
 * bytes when keep > 0, the IDAT's CRC off by one when `bad_crc`. */
static void make_png(struct strbuf *b, const struct spec *s, const void *raw, size_t raw_len,
		     size_t keep, int bad_crc)
{
	unsigned char ihdr[13];
	size_t zlen;
	unsigned char *z = deflated(raw, raw_len, &zlen);

	strbuf_add(b, "\x89PNG\r\n\x1a\n", 8);
	ihdr[0] = s->w >> 24, ihdr[1] = s->w >> 16, ihdr[2] = s->w >> 8, ihdr[3] = s->w;
	ihdr[4] = s->h >> 24, ihdr[5] = s->h >> 16, ihdr[6] = s->h >> 8, ihdr[7] = s->h;
	ihdr[8] = s->depth, ihdr[9] = s->type, ihdr[10] = 0, ihdr[11] = 0;
	ihdr[12] = s->interlace;
	chunk(b, "IHDR", ihdr, 13, 0);
	if (s->plte)
		chunk(b, "PLTE", s->plte, s->plte_len, 0);
	if (s->trns)
		chunk(b, "tRNS", s->trns, s->trns_len, 0);
	if (s->before_idat)
		strbuf_add(b, s->before_idat->buf, s->before_idat->len);
	chunk(b, "IDAT", z, keep && keep < zlen ? keep : zlen, bad_crc);
	chunk(b, "IEND", "", 0, 0);
	free(z);
}

/* The test picture's colour at x, y. */
static void colour(int x, int y, unsigned char *rgb)
{
	rgb[0] = (unsigned char)(x * 37 + y);
	rgb[1] = (unsigned char)(y * 53);
	rgb[2] = (unsigned char)((x ^ y) * 11);
}

/* Scanlines (filter 0) of a w x h picture, `bpp` bytes a pixel from `px(x, y, out)`, laid out
 * as Adam7's passes when `interlace`. */
static void scanlines(struct strbuf *raw, int w, int h, int bpp, int interlace,
		      void (*px)(int, int, unsigned char *))
{
	static const int passes[7][4] = { { 0, 0, 8, 8 }, { 4, 0, 8, 8 }, { 0, 4, 4, 8 },
					  { 2, 0, 4, 4 }, { 0, 2, 2, 4 }, { 1, 0, 2, 2 },
					  { 0, 1, 1, 2 } };
	unsigned char p[8];

	for (int k = 0; k < (interlace ? 7 : 1); k++) {
		int x0 = interlace ? passes[k][0] : 0, y0 = interlace ? passes[k][1] : 0;
		int dx = interlace ? passes[k][2] : 1, dy = interlace ? passes[k][3] : 1;
		if (x0 >= w || y0 >= h)
			continue;	/* an empty pass has no scanlines */
		for (int y = y0; y < h; y += dy) {
			strbuf_addch(raw, 0);
			for (int x = x0; x < w; x += dx) {
				px(x, y, p);
				strbuf_add(raw, p, (size_t)bpp);
			}
		}
	}
}

/* Decode through the child; pixels or NULL (why then noted). */
static unsigned char *decode(const struct strbuf *png, int *w, int *h, struct strbuf *why)
{
	unsigned char *rgb = pngchild_decode(png->buf, png->len, 8192, NULL, w, h, why);

	if (!rgb)
		tap_note(why->buf);
	return rgb;
}

/* Whether `rgb` (w x h) is the test picture passed through `expect`. */
static int pixels_are(const unsigned char *rgb, int w, int h,
		      void (*expect)(int, int, unsigned char *))
{
	unsigned char e[3];

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			expect(x, y, e);
			if (memcmp(rgb + 3 * ((size_t)y * w + x), e, 3)) {
				printf("# pixel %d,%d is %d,%d,%d, not %d,%d,%d\n", x, y,
				       rgb[3 * ((size_t)y * w + x)], rgb[3 * ((size_t)y * w + x) + 1],
				       rgb[3 * ((size_t)y * w + x) + 2], e[0], e[1], e[2]);
				return 0;
			}
		}
	return 1;
}

/* ---- good images of every kind ---- */

static void px_rgb16(int x, int y, unsigned char *p)
{
	unsigned char c[3];
	colour(x, y, c);
	for (int i = 0; i < 3; i++)
		p[2 * i] = p[2 * i + 1] = c[i];		/* v * 257: scaled back to v exactly */
}

static void px_gray(int x, int y, unsigned char *p)
{
	p[0] = (unsigned char)(x * 16 + y);
}

static void px_gray16(int x, int y, unsigned char *p)
{
	p[0] = p[1] = (unsigned char)(x * 16 + y);
}

static void px_gray_rgb(int x, int y, unsigned char *p)
{
	p[0] = p[1] = p[2] = (unsigned char)(x * 16 + y);
}

static unsigned char alpha_at(int x, int y)
{
	return (unsigned char)(x * 20 + y * 3);
}

static void px_gray_alpha(int x, int y, unsigned char *p)
{
	p[0] = (unsigned char)(x * 16 + y);
	p[1] = alpha_at(x, y);
}

static void px_gray_alpha_over_white(int x, int y, unsigned char *p)
{
	unsigned g = (unsigned)(x * 16 + y) & 0xff, a = alpha_at(x, y);
	p[0] = p[1] = p[2] = (unsigned char)((g * a + 255 * (255 - a) + 127) / 255);
}

static void px_rgba16(int x, int y, unsigned char *p)
{
	px_rgb16(x, y, p);
	p[6] = p[7] = alpha_at(x, y);
}

static void px_rgba_over_white(int x, int y, unsigned char *p)
{
	unsigned a = alpha_at(x, y);
	colour(x, y, p);
	for (int i = 0; i < 3; i++)
		p[i] = (unsigned char)((p[i] * a + 255 * (255 - a) + 127) / 255);
}

static void px_index(int x, int y, unsigned char *p)
{
	p[0] = (unsigned char)((x + y) % 3);
}

static const unsigned char plte3[9] = { 255, 0, 0, 0, 128, 0, 10, 20, 30 };
static const unsigned char trns3[3] = { 255, 0, 128 };

static void px_index_over_white(int x, int y, unsigned char *p)
{
	int k = (x + y) % 3;
	for (int i = 0; i < 3; i++)
		p[i] = (unsigned char)((plte3[3 * k + i] * trns3[k] + 255 * (255 - trns3[k]) + 127) /
				       255);
}

static void check_good(const char *what, const struct spec *s, int bpp,
		       void (*px)(int, int, unsigned char *),
		       void (*expect)(int, int, unsigned char *))
{
	struct strbuf raw = STRBUF_INIT, png = STRBUF_INIT, why = STRBUF_INIT;
	unsigned char *rgb, *here;
	int w = 0, h = 0, w2 = 0, h2 = 0;

	tap_note(what);
	scanlines(&raw, s->w, s->h, bpp, s->interlace, px);
	make_png(&png, s, raw.buf, raw.len, 0, 0);
	rgb = decode(&png, &w, &h, &why);
	CHECK(rgb && w == s->w && h == s->h && pixels_are(rgb, w, h, expect));
	/* the same pixels in this process (the fuzzer's way) */
	here = pngdecode_rgb(png.buf, png.len, 8192, &w2, &h2, &why);
	CHECK(here && rgb && w2 == w && h2 == h && !memcmp(here, rgb, (size_t)w * h * 3));
	free(rgb);
	free(here);
	strbuf_release(&raw);
	strbuf_release(&png);
	strbuf_release(&why);
}

static void test_good_kinds(void)
{
	struct spec s = { 13, 11, 16, 2, 0, NULL, 0, NULL, 0, NULL };

	check_good("16-bit RGB", &s, 6, px_rgb16, colour);
	s.interlace = 1;
	check_good("16-bit RGB, interlaced", &s, 6, px_rgb16, colour);
	s.interlace = 0, s.type = 0, s.depth = 8;
	check_good("8-bit gray", &s, 1, px_gray, px_gray_rgb);
	s.depth = 16;
	check_good("16-bit gray", &s, 2, px_gray16, px_gray_rgb);
	s.depth = 8, s.type = 4;
	check_good("gray and alpha", &s, 2, px_gray_alpha, px_gray_alpha_over_white);
	s.interlace = 1;
	check_good("gray and alpha, interlaced", &s, 2, px_gray_alpha, px_gray_alpha_over_white);
	s.interlace = 0, s.depth = 16, s.type = 6;
	check_good("16-bit RGBA", &s, 8, px_rgba16, px_rgba_over_white);
	s.depth = 8, s.type = 3, s.plte = plte3, s.plte_len = 9, s.trns = trns3, s.trns_len = 3;
	check_good("palette with tRNS", &s, 1, px_index, px_index_over_white);
	s.w = 1, s.h = 1, s.interlace = 1;
	check_good("1x1 palette, interlaced (six empty passes)", &s, 1, px_index,
		   px_index_over_white);
}

/* ---- hostile images ---- */

static void px_white(int x, int y, unsigned char *p)
{
	(void)x, (void)y;
	p[0] = p[1] = p[2] = 255;
}

/* A 16 x 16 picture's PNG, its zlib data cut to `keep` (0 = whole), its IDAT CRC off. */
static void picture_png(struct strbuf *png, size_t keep, int bad_crc)
{
	struct spec s = { 16, 16, 8, 2, 0, NULL, 0, NULL, 0, NULL };
	struct strbuf raw = STRBUF_INIT;

	scanlines(&raw, 16, 16, 3, 0, colour);
	make_png(png, &s, raw.buf, raw.len, keep, bad_crc);
	strbuf_release(&raw);
}

/* graphics_load_mem() refuses `png`, in bounded time; its message contains `want` (or any). */
static void refused(const char *what, const struct strbuf *png, const char *want)
{
	struct strbuf err = STRBUF_INIT;
	double t0 = clock_now();
	struct graphics_image *img = graphics_load_mem(png->buf, png->len, what, &err);

	tap_note(what);
	tap_note(err.buf);
	CHECK(img == NULL && err.len > 0);
	CHECK(!want || strstr(err.buf, want));
	CHECK(clock_now() - t0 < 9);
	graphics_free(img);
	strbuf_release(&err);
}

static void test_cut_and_bad_crc(void)
{
	struct strbuf png = STRBUF_INIT;

	picture_png(&png, 40, 0);
	refused("IDAT cut to 40 of its zlib bytes", &png, NULL);
	strbuf_reset(&png);
	picture_png(&png, 0, 1);
	refused("IDAT with a bad CRC", &png, "CRC");
	strbuf_release(&png);
}

static void test_huge_declared(void)
{
	struct spec s = { 8193, 4, 8, 0, 0, NULL, 0, NULL, 0, NULL };
	struct strbuf raw = STRBUF_INIT, png = STRBUF_INIT, why = STRBUF_INIT;
	int w, h;

	scanlines(&raw, 8193, 4, 1, 0, px_gray);
	make_png(&png, &s, raw.buf, raw.len, 0, 0);
	refused("8193 wide: over the caps", &png, "out of range");
	/* libpng's own limit says so too, whoever calls it */
	CHECK(pngdecode_rgb(png.buf, png.len, 8192, &w, &h, &why) == NULL);
	tap_note(why.buf);
	CHECK(strstr(why.buf, "Image width exceeds user limit") != NULL);
	strbuf_release(&raw);
	strbuf_release(&png);
	strbuf_release(&why);
}

static void test_bombs(void)
{
	struct spec s = { 16, 16, 8, 2, 0, NULL, 0, NULL, 0, NULL };
	struct strbuf raw = STRBUF_INIT, png = STRBUF_INIT, ztxt = STRBUF_INIT;
	size_t big = 64u << 20, zlen;
	unsigned char *zeros = xcalloc(1, big), *z;
	struct strbuf err = STRBUF_INIT;
	struct graphics_image *img;
	double t0;
	int w = 0, h = 0;

	/* An IDAT that inflates to 64 MiB for a 16 x 16 image: libpng takes what the rows need. */
	scanlines(&raw, 16, 16, 3, 0, px_white);
	memcpy(zeros, raw.buf, raw.len);
	memset(zeros + raw.len, 0, big - raw.len);
	make_png(&png, &s, zeros, big, 0, 0);
	printf("# %zu bytes inflating to %zu\n", png.len, big);
	t0 = clock_now();
	img = graphics_load_mem(png.buf, png.len, "IDAT bomb", &err);
	CHECK(img != NULL);
	if (img) {
		graphics_image_size(img, &w, &h);
		CHECK(w == 16 && h == 16 && pixels_are(graphics_image_rgb(img), 16, 16, px_white));
	}
	CHECK(clock_now() - t0 < 2);
	graphics_free(img);
	/* A zTXt of 64 MiB before the IDAT: skipped unread. */
	strbuf_reset(&png);
	z = deflated(zeros, big, &zlen);
	strbuf_add(&ztxt, "k\0\0", 3);
	strbuf_add(&ztxt, z, zlen);
	free(z);
	strbuf_reset(&raw);
	{
		struct strbuf chunks = STRBUF_INIT;
		chunk(&chunks, "zTXt", ztxt.buf, ztxt.len, 0);
		chunk(&chunks, "iCCP", ztxt.buf, ztxt.len, 0);
		s.before_idat = &chunks;
		scanlines(&raw, 16, 16, 3, 0, colour);
		make_png(&png, &s, raw.buf, raw.len, 0, 0);
		strbuf_release(&chunks);
	}
	t0 = clock_now();
	strbuf_reset(&err);
	img = graphics_load_mem(png.buf, png.len, "zTXt and iCCP bombs", &err);
	CHECK(img && pixels_are(graphics_image_rgb(img), 16, 16, colour));
	CHECK(clock_now() - t0 < 2);
	graphics_free(img);
	/* 8192 x 8192 with its IDAT cut short (libsixel's loader: 780 MB): refused. */
	strbuf_reset(&png);
	s.w = s.h = 8192;
	s.before_idat = NULL;
	make_png(&png, &s, zeros, 1u << 20, 60, 0);
	refused("8192 x 8192 with 60 bytes of zlib data", &png, NULL);
	free(zeros);
	strbuf_release(&raw);
	strbuf_release(&png);
	strbuf_release(&ztxt);
	strbuf_release(&err);
}

static void test_palette_range(void)
{
	static const unsigned char plte2[6] = { 255, 0, 0, 0, 0, 255 };
	struct spec s = { 4, 1, 8, 3, 0, plte2, 6, NULL, 0, NULL };
	const unsigned char raw[5] = { 0, 0, 1, 7, 255 };	/* indices 7 and 255: no entry */
	static const unsigned char want[12] = { 255, 0, 0, 0, 0, 255, 0, 0, 0, 0, 0, 0 };
	struct strbuf png = STRBUF_INIT, err = STRBUF_INIT;
	struct graphics_image *img;

	make_png(&png, &s, raw, sizeof(raw), 0, 0);
	img = graphics_load_mem(png.buf, png.len, "palette indices past the palette", &err);
	tap_note(err.buf);
	/* libpng reads an index with no entry as black, within its 256-entry table */
	CHECK(img && !memcmp(graphics_image_rgb(img), want, 12));
	graphics_free(img);
	/* a palette of 300 entries is an error */
	strbuf_reset(&png);
	{
		unsigned char big[900] = { 0 };
		s.plte = big, s.plte_len = sizeof(big);
		make_png(&png, &s, raw, sizeof(raw), 0, 0);
	}
	refused("a palette of 300 entries", &png, NULL);
	strbuf_release(&png);
	strbuf_release(&err);
}

/* The PNG (78 bytes) on which libsixel's loader (stb_image) failed an assertion and aborted:
 * RGBA at 4 bits, a combination PNG does not have. Found by mutating small PNGs. */
static void test_libsixel_abort(void)
{
	struct spec s = { 7, 5, 4, 6, 0, NULL, 0, NULL, 0, NULL };
	struct strbuf raw = STRBUF_INIT, png = STRBUF_INIT;

	scanlines(&raw, 7, 5, 2, 0, px_gray_alpha);
	make_png(&png, &s, raw.buf, raw.len, 0, 0);
	refused("RGBA at 4 bits (aborted libsixel's loader)", &png, NULL);
	strbuf_release(&raw);
	strbuf_release(&png);
}

/* The PNG (77 bytes) on which libsixel's loader spun for ever: a 16 x 16 gray image whose zlib
 * data is the first 20 bytes of 10 MB of zeros; stb_image reads zeros past the end and its
 * output buffer doubles until its int size wraps. */
static void test_libsixel_spin(void)
{
	struct spec s = { 16, 16, 8, 0, 0, NULL, 0, NULL, 0, NULL };
	size_t big = 10000000;
	unsigned char *zeros = xcalloc(1, big);
	struct strbuf png = STRBUF_INIT;

	make_png(&png, &s, zeros, big, 20, 0);
	printf("# %zu bytes\n", png.len);
	refused("cut zlib data of zeros (libsixel's loader spun on it)", &png, NULL);
	free(zeros);
	strbuf_release(&png);
}

/* ---- the child's limits, by fault injection ---- */

static void faulted(enum pngchild_fault f, const struct pngchild_limits *lim, const char *want,
		    double max_s)
{
	struct strbuf png = STRBUF_INIT, why = STRBUF_INIT;
	double t0 = clock_now();
	unsigned char *rgb;
	int w, h, status;

	picture_png(&png, 0, 0);
	pngchild_fault = f;
	rgb = pngchild_decode(png.buf, png.len, 8192, lim, &w, &h, &why);
	pngchild_fault = PNGCHILD_FAULT_NONE;
	tap_note(why.buf);
	printf("# %.2f s\n", clock_now() - t0);
	CHECK(rgb == NULL && strstr(why.buf, want));
	CHECK(clock_now() - t0 < max_s);
	/* the child was reaped: no zombie left */
	CHECK(waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD);
	free(rgb);
	strbuf_release(&png);
	strbuf_release(&why);
}

static void test_child_limits(void)
{
	struct pngchild_limits cpu = { 1, 10000, 256u << 20 }, wall = { 10, 300, 256u << 20 };
	struct strbuf png = STRBUF_INIT, why = STRBUF_INIT;
	unsigned char *rgb;
	int w, h;

	/* 1 s of CPU: on a loaded machine that is several seconds of wall clock */
	faulted(PNGCHILD_FAULT_SPIN, &cpu, "1 s of CPU", 12);
	faulted(PNGCHILD_FAULT_SLEEP, &wall, "longer than 300 ms", 2);
	faulted(PNGCHILD_FAULT_ABORT, NULL, "signal 6", 5);
	faulted(PNGCHILD_FAULT_LIE, NULL, "malformed", 5);
#if !defined(__SANITIZE_ADDRESS__)
	faulted(PNGCHILD_FAULT_ALLOC, &cpu, "failed (exit 3)", 5);	/* RLIMIT_AS: not under ASan */
#endif
	/* and after all that, a good decode */
	picture_png(&png, 0, 0);
	rgb = pngchild_decode(png.buf, png.len, 8192, NULL, &w, &h, &why);
	CHECK(rgb && pixels_are(rgb, w, h, colour));
	free(rgb);
	strbuf_release(&png);
	strbuf_release(&why);
}

static const struct tap_test tests[] = {
	{ "good_kinds", test_good_kinds },
	{ "cut_and_bad_crc", test_cut_and_bad_crc },
	{ "huge_declared", test_huge_declared },
	{ "bombs", test_bombs },
	{ "palette_range", test_palette_range },
	{ "libsixel_abort", test_libsixel_abort },
	{ "libsixel_spin", test_libsixel_spin },
	{ "child_limits", test_child_limits },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
