/*
 * Unit tests of terminal graphics: the reply parser, mode choice, fitting, block characters
 * (half, quadrant, sextant) and the ink-keeping downscale, sixel.
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
 * What Debian's xterm 379 answers to termcap_queries, recorded: as a VT340 (white background)
 * and as a VT420 (the answers before XTVERSION and OSC 11 were asked). kitty 0.26.5's answers,
 * recorded under Xvfb.
 */
static const char xterm_vt340[] =
	"\x1b[?1;0;1024S\x1b[?2;0;600;520S\x1bP>|XTerm(379)\x1b\\\x1b]11;rgb:ffff/ffff/ffff\x1b\\"
	"\x1b[?63;1;2;4;6;9;15;16;22;28c";
static const char kitty_0265[] =
	"\x1b[4;391;640t\x1b[6;17;8t\x1b_Gi=31;OK\x1b\\\x1bP>|kitty(0.26.5)\x1b\\"
	"\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[?62;c";
static const char xterm_vt420[] =
	"\x1b[?1;3S\x1b[?2;3S\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c";

static void test_parse_xterm(void)
{
	struct termcap_reply r;

	CHECK(termcap_parse(&r, xterm_vt340, strlen(xterm_vt340)) == 1);
	CHECK(r.da1 && r.sixel);
	CHECK(r.color_registers == 1024);
	CHECK(r.sixel_max_w == 600 && r.sixel_max_h == 520);
	CHECK(r.cell_w == 0 && r.area_w == 0);	/* xterm keeps window ops off by default */
	CHECK_STR(r.version, "XTerm(379)");
	CHECK(r.bg && r.bg_rgb[0] == 255 && r.bg_rgb[1] == 255 && r.bg_rgb[2] == 255);
	CHECK(!r.kitty);

	CHECK(termcap_parse(&r, xterm_vt420, strlen(xterm_vt420)) == 1);
	CHECK(r.da1 && !r.sixel);
	CHECK(r.color_registers == 0 && r.sixel_max_w == 0);	/* "3" = error, no value */
	CHECK(!r.bg && !r.version[0]);
}

static void test_parse_kitty(void)
{
	struct termcap_reply r;
	const char *s;

	CHECK(termcap_parse(&r, kitty_0265, strlen(kitty_0265)) == 1);
	CHECK(r.kitty && !r.sixel && r.da1);
	CHECK(r.cell_w == 8 && r.cell_h == 17 && r.area_w == 640 && r.area_h == 391);
	CHECK_STR(r.version, "kitty(0.26.5)");
	CHECK(termcap_term_of(r.version) == TERMCAP_TERM_KITTY);
	CHECK(r.bg && !r.bg_rgb[0] && !r.bg_rgb[1] && !r.bg_rgb[2]);
	/* An error answer is not support; nor is an answer to another id. */
	s = "\x1b_Gi=31;EINVAL:bad\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.kitty);
	s = "\x1b_Gi=32;OK\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.kitty);
}

static void test_parse_strings(void)
{
	struct termcap_reply r;
	char long_version[200];
	const char *s;

	/* OSC 11 ended by BEL, 2-digit and 1-digit components, rgba. */
	s = "\x1b]11;rgb:fd/f6/e3\x07\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && r.bg);
	CHECK(r.bg_rgb[0] == 0xfd && r.bg_rgb[1] == 0xf6 && r.bg_rgb[2] == 0xe3);
	s = "\x1b]11;rgba:f/8/0/f\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && r.bg);
	CHECK(r.bg_rgb[0] == 255 && r.bg_rgb[1] == 136 && r.bg_rgb[2] == 0);
	/* Not colours: no background. */
	s = "\x1b]11;rgb:12345/0/0\x07\x1b]11;rgb:zz/0/0\x07\x1b]11;#ffffff\x07\x1b]10;rgb:f/f/f\x07"
	    "\x1b]11;rgb:1/2\x07\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.bg);
	/* XTVERSION keeps printable ASCII, cut to fit. */
	s = "\x1bP>|Wez\x01Term\t 2024\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK_STR(r.version, "WezTerm 2024");
	CHECK(termcap_term_of(r.version) == TERMCAP_TERM_WEZTERM);
	memset(long_version, 'x', sizeof(long_version));
	memcpy(long_version, "\x1bP>|", 4);
	memcpy(long_version + sizeof(long_version) - 7, "\x1b\\\x1b[?6c", 7);
	CHECK(termcap_parse(&r, long_version, sizeof(long_version)) == 1);
	CHECK(strlen(r.version) == TERMCAP_VERSION_MAX - 1);
	/* An unfinished string holds back what follows: no sentinel yet. */
	s = "\x1bP>|iTerm2 3.5\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 0 && !r.version[0]);
	CHECK(termcap_term_of("iTerm2 3.5.0") == TERMCAP_TERM_ITERM2);
	CHECK(termcap_term_of("tmux 3.3a") == TERMCAP_TERM_TMUX);
	CHECK(termcap_term_of("") == TERMCAP_TERM_OTHER && termcap_term_of(NULL) == TERMCAP_TERM_OTHER);
}

/* Unset what the test's own terminal would tell termcap_fill. */
static void clean_env(void)
{
	static const char *const vars[] = { "TMUX", "TERM_PROGRAM", "LC_TERMINAL", "COLORFGBG",
					    "COLORTERM" };

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	setenv("TERM", "xterm-256color", 1);
}

static void test_background(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1, .bg = 1, .bg_rgb = { 253, 246, 227 } };
	static const unsigned char white[3] = { 255, 255, 255 }, black[3] = { 0, 0, 0 };
	static const unsigned char grey[3] = { 100, 100, 100 }, yellow[3] = { 200, 200, 0 };

	CHECK(termcap_is_light(white) && !termcap_is_light(black));
	CHECK(!termcap_is_light(grey) && termcap_is_light(yellow));
	clean_env();
	termcap_fill(&tc, &r, -1);
	CHECK(tc.light == 1);			/* solarized light */
	r.bg_rgb[0] = 0, r.bg_rgb[1] = 43, r.bg_rgb[2] = 54;
	setenv("COLORFGBG", "0;15", 1);		/* the answer beats the variable */
	termcap_fill(&tc, &r, -1);
	CHECK(tc.light == 0);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == 1);			/* no answer: COLORFGBG, light on white */
	setenv("COLORFGBG", "15;default;0", 1);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == 0);
	setenv("COLORFGBG", "default;default", 1);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == -1);
	unsetenv("COLORFGBG");
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == -1);
}

static void test_terminal_program(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1 };

	clean_env();
	strcpy(r.version, "iTerm2 3.5.0");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_ITERM2 && tc.iterm && !tc.sextants);
	strcpy(r.version, "kitty(0.26.5)");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_KITTY && !tc.iterm && tc.sextants);
	/* No XTVERSION: the environment. */
	r.version[0] = '\0';
	setenv("LC_TERMINAL", "iTerm2", 1);
	termcap_fill(&tc, &r, -1);
	CHECK(tc.iterm);
	setenv("TMUX", "/tmp/tmux-0/default,1,0", 1);	/* inside tmux it is not trusted */
	termcap_fill(&tc, &r, -1);
	CHECK(!tc.iterm && tc.tmux && tc.term == TERMCAP_TERM_OTHER);
	strcpy(r.version, "tmux 3.3a");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_TMUX && !tc.iterm && !tc.sextants);
	clean_env();
	setenv("TERM_PROGRAM", "WezTerm", 1);
	r.version[0] = '\0';
	termcap_fill(&tc, &r, -1);
	CHECK(tc.iterm && tc.sextants);
	clean_env();
}

static void test_parse_cells(void)
{
	const char *s = "\x1b[4;480;800t\x1b[6;20;10t\x1b[?62;4c";
	struct termcap_reply r;

	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK(r.cell_w == 10 && r.cell_h == 20);
	CHECK(r.area_w == 800 && r.area_h == 480);
	/* The device class is not an attribute: "?4;6c" would be odd, but 4 first is no sixel. */
	CHECK(termcap_parse(&r, "\x1b[?4;6c", 7) == 1 && !r.sixel);
	/* 8-bit CSI. */
	CHECK(termcap_parse(&r, "\x9b?65;1;4c", strlen("\x9b?65;1;4c")) == 1 && r.sixel);
}

static void test_parse_partial(void)
{
	struct termcap_reply r;
	size_t n = strlen(xterm_vt340);

	/* Every prefix: never the sentinel before the final 'c' of DA1. */
	for (size_t k = 0; k < n; k++)
		if (termcap_parse(&r, xterm_vt340, k) != 0) {
			CHECK(!"sentinel seen in a prefix");
			return;
		}
	CHECK(termcap_parse(&r, xterm_vt340, n) == 1);
}

static void test_parse_noise(void)
{
	/* Type-ahead, a DCS reply, an OSC, an SGR mouse report around the answers. */
	const char *s = "ls\r\x1bP1$r0m\x1b\\\x1b]11;rgb:0/0/0\x07\x1b[<0;3;4M"
			"\x1b[?2;0;1000;1000S\x1b[?62;22;4c";
	struct termcap_reply r;

	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK(r.sixel && r.sixel_max_w == 1000);
	/* A DCS that never ends hides everything after it. */
	CHECK(termcap_parse(&r, "\x1bPq#0\x1b[?62;4c", strlen("\x1bPq#0\x1b[?62;4c")) == 0);
	CHECK(termcap_parse(&r, "", 0) == 0 && !r.da1);
}

/*
 * Random and mutated input: no crash (the sanitizer build watches) nor over-read, the result
 * agrees with the reply it filled in, and whatever came first, a string terminator and a
 * DA1 with sixel after it are always found.
 */
static void test_parse_fuzz(void)
{
	static const char tail[] = "\x1b\\\x1b[?62;4c";	/* ST, then DA1 with sixel */
	struct termcap_reply r;
	char buf[256];
	unsigned seed = 12345;
	int ok = 1, agree = 1, found = 1, sentinels = 0;

	for (int round = 0; round < 20000; round++) {
		size_t n = (seed = seed * 1103515245 + 12345) % sizeof(buf);
		for (size_t k = 0; k < n; k++) {
			seed = seed * 1103515245 + 12345;
			if (round % 2 && k < strlen(xterm_vt340))
				buf[k] = (seed >> 16) % 7 ? xterm_vt340[k] : (char)(seed >> 8);
			else if (round % 3)
				buf[k] = "\x1b[?;0123456789cSt\x9bP\\"[(seed >> 16) % 20];
			else
				buf[k] = "\x1b[]_P\\G>|;=OK11rgb:/f0\x07c?"[(seed >> 16) % 25];
		}
		char *copy = xmalloc(n ? n : 1);	/* exact size: ASan sees an over-read */
		int rc;

		memcpy(copy, buf, n);
		rc = termcap_parse(&r, copy, n);
		agree &= (rc == 0 || rc == 1) && rc == r.da1;
		sentinels += rc;
		if (r.color_registers < 0 || r.cell_w < 0 || r.cell_h < 0 || r.sixel_max_w < 0 ||
		    strlen(r.version) >= sizeof(r.version))
			ok = 0;
		free(copy);
		copy = xmalloc(n + sizeof(tail) - 1);
		memcpy(copy, buf, n);
		memcpy(copy + n, tail, sizeof(tail) - 1);
		found &= termcap_parse(&r, copy, n + sizeof(tail) - 1) == 1 && r.da1 && r.sixel;
		free(copy);
	}
	CHECK(ok);
	CHECK(agree);		/* 1 exactly when the sentinel was seen */
	CHECK(found);		/* noise never hides a terminated reply */
	CHECK(sentinels > 0);	/* the mutated xterm answers reach the sentinel sometimes */
}

static void test_choose(void)
{
	struct termcap tc = { 0 };
	enum graphics_mode m = GRAPHICS_NONE;

	CHECK(graphics_mode_parse("blocks", &m) == 0 && m == GRAPHICS_BLOCKS);
	CHECK(graphics_mode_parse("sixels", &m) < 0);
	CHECK_STR(graphics_mode_name(GRAPHICS_SIXEL), "sixel");
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_NONE);	/* no answer */
	tc.r.da1 = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_BLOCKS);
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 0) == GRAPHICS_NONE);
	tc.r.sixel = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 0) == GRAPHICS_SIXEL);
	CHECK(graphics_choose(GRAPHICS_NONE, &tc, 1) == GRAPHICS_NONE);
	/* iTerm2's own protocol before its sixel; kitty's before both. */
	tc.iterm = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_ITERM);
	tc.r.kitty = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_KITTY);
	CHECK(graphics_choose(GRAPHICS_KITTY_UNICODE, &tc, 1) == GRAPHICS_KITTY_UNICODE);
	CHECK(graphics_mode_parse("kitty-unicode", &m) == 0 && m == GRAPHICS_KITTY_UNICODE);
	CHECK(graphics_mode_parse("iterm", &m) == 0 && m == GRAPHICS_ITERM);
	CHECK_STR(graphics_mode_name(GRAPHICS_KITTY_UNICODE), "kitty-unicode");
	CHECK(graphics_blocks_choose(BLOCKS_AUTO, &tc) == BLOCKS_QUADRANT);
	tc.sextants = 1;
	CHECK(graphics_blocks_choose(BLOCKS_AUTO, &tc) == BLOCKS_SEXTANT);
	CHECK(graphics_blocks_choose(BLOCKS_HALF, &tc) == BLOCKS_HALF);
	CHECK(graphics_mode_in_cells(GRAPHICS_SIXEL) && !graphics_mode_in_cells(GRAPHICS_KITTY));
}

static void test_fill(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1, .area_w = 800, .area_h = 480 };

	termcap_fill(&tc, &r, -1);		/* no tty: 24x80 */
	CHECK(tc.rows == 24 && tc.cols == 80);
	CHECK(tc.cell_source == TERMCAP_CELL_CSI14 && tc.cell_w == 10 && tc.cell_h == 20);
	r.cell_w = 9, r.cell_h = 18;
	termcap_fill(&tc, &r, -1);
	CHECK(tc.cell_source == TERMCAP_CELL_CSI16 && tc.cell_w == 9 && tc.cell_h == 18);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.cell_source == TERMCAP_CELL_GUESS && tc.cell_w == 10 && tc.cell_h == 20);
}

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
	{ "parse_xterm", test_parse_xterm },
	{ "parse_kitty", test_parse_kitty },
	{ "parse_strings", test_parse_strings },
	{ "background", test_background },
	{ "terminal_program", test_terminal_program },
	{ "parse_cells", test_parse_cells },
	{ "parse_partial", test_parse_partial },
	{ "parse_noise", test_parse_noise },
	{ "parse_fuzz", test_parse_fuzz },
	{ "choose", test_choose },
	{ "fill", test_fill },
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
