/* Unit tests of terminal graphics: the reply parser, mode choice, fitting, half-blocks, sixel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphics.h"
#include "termcap.h"
#include "util.h"
#include "../tap.h"

/* What Debian's xterm 379 answers to termcap_queries, recorded: as a VT340 and as a VT420. */
static const char xterm_vt340[] =
	"\x1b[?1;0;1024S\x1b[?2;0;600;520S\x1b[?63;1;2;4;6;9;15;16;22;28c";
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

	CHECK(termcap_parse(&r, xterm_vt420, strlen(xterm_vt420)) == 1);
	CHECK(r.da1 && !r.sixel);
	CHECK(r.color_registers == 0 && r.sixel_max_w == 0);	/* "3" = error, no value */
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
			else
				buf[k] = "\x1b[?;0123456789cSt\x9bP\\"[(seed >> 16) % 20];
		}
		char *copy = xmalloc(n ? n : 1);	/* exact size: ASan sees an over-read */
		int rc;

		memcpy(copy, buf, n);
		rc = termcap_parse(&r, copy, n);
		agree &= (rc == 0 || rc == 1) && rc == r.da1;
		sentinels += rc;
		if (r.color_registers < 0 || r.cell_w < 0 || r.cell_h < 0 || r.sixel_max_w < 0)
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

	if (fd < 0 || write_all(fd, tiny_png, sizeof(tiny_png) - 1) < 0) {
		CHECK(!"cannot write the tiny PNG");
		exit(1);
	}
	close(fd);
	return path;
}

#define UB "\xe2\x96\x80"	/* U+2580 */

static void test_blocks_truecolor(void)
{
	char *path = tiny_png_file();
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	struct graphics_image *img = graphics_load(path, &err);
	struct graphics_request rq = { .mode = GRAPHICS_BLOCKS, .cols = 80, .truecolor = 1 };
	struct graphics_size sz;
	int w = 0, h = 0;

	CHECK(img != NULL);
	if (!img) {
		tap_note(err.buf);
		goto out;
	}
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
	/* Half the width: 1x2 pixels, one cell (a box filter: the average of each quarter). */
	strbuf_reset(&out);
	rq = (struct graphics_request){ .mode = GRAPHICS_BLOCKS, .cols = 1, .truecolor = 1 };
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK(sz.cols == 1 && sz.rows == 1 && sz.px_w == 1 && sz.px_h == 1);
out:
	graphics_free(img);
	unlink(path);
	free(path);
	strbuf_release(&out);
	strbuf_release(&err);
}

static void test_sixel(void)
{
	char *path = tiny_png_file();
	struct strbuf err = STRBUF_INIT, a = STRBUF_INIT, b = STRBUF_INIT;
	struct graphics_image *img = graphics_load(path, &err);
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
	unlink(path);
	free(path);
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&err);
}

static void test_fit(void)
{
	char *path = tiny_png_file();
	struct strbuf err = STRBUF_INIT;
	struct graphics_image *img = graphics_load(path, &err);
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
	unlink(path);
	free(path);
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
	CHECK(fd >= 0 && write_all(fd, "\x89PNG\r\n\x1a\nnot really", 18) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && err.len > 0);
	unlink(path);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "parse_xterm", test_parse_xterm },
	{ "parse_cells", test_parse_cells },
	{ "parse_partial", test_parse_partial },
	{ "parse_noise", test_parse_noise },
	{ "parse_fuzz", test_parse_fuzz },
	{ "choose", test_choose },
	{ "fill", test_fill },
	{ "blocks", test_blocks_truecolor },
	{ "sixel", test_sixel },
	{ "fit", test_fit },
	{ "load_errors", test_load_errors },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
