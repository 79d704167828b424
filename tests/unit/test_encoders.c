/*
 * Unit tests of the image encoders and the PNG reader: the PNG writer, hostile plot files,
 * the kitty graphics protocol (chunks, placements, placeholders), iTerm2's OSC 1337 and the
 * cache budget.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graphics.h"
#include "kitty.h"
#include "png.h"
#include "pngchild.h"
#include "pngfile.h"
#include "util.h"
#include "../tap.h"

/* A w x h test picture: flat areas, gradients, thin lines. The caller frees it. */
static unsigned char *picture(int w, int h)
{
	unsigned char *px = xmalloc((size_t)w * h * 3);

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			unsigned char *p = px + 3 * ((size_t)y * w + x);
			if (y < h / 3) {
				p[0] = p[1] = p[2] = 255;
			} else if (y < 2 * h / 3) {
				p[0] = (unsigned char)(x * 255 / (w > 1 ? w - 1 : 1));
				p[1] = (unsigned char)(y * 7);
				p[2] = (unsigned char)(x ^ y);
			} else {
				p[0] = p[1] = p[2] = x % 9 == 0 ? 0 : 250;
			}
		}
	return px;
}

/* Write `len` bytes to a fresh temporary file; the caller unlinks and frees the path. */
static char *temp_file(const void *data, size_t len)
{
	char *path = xstrdup("/tmp/cellbox-enc-XXXXXX");
	int fd = mkstemp(path);

	if (fd < 0 || fsutil_write_all(fd, data, len) < 0) {
		CHECK(!"cannot write a temporary file");
		exit(1);
	}
	close(fd);
	return path;
}

/* A PNG of the test picture in a temporary file. */
static char *picture_file(int w, int h)
{
	unsigned char *px = picture(w, h);
	struct strbuf png = STRBUF_INIT;
	char *path;

	png_encode_rgb(px, w, h, &png);
	path = temp_file(png.buf, png.len);
	strbuf_release(&png);
	free(px);
	return path;
}

/* The test picture loaded through a PNG file, which is then removed; the file's bytes in
 * `png` when given (a check that they were read). */
static struct graphics_image *load_picture(int w, int h, struct strbuf *png)
{
	char *path = picture_file(w, h);
	struct strbuf err = STRBUF_INIT;
	struct graphics_image *img = graphics_load(path, &err);

	if (png)
		CHECK(strbuf_read_file(png, path, 1u << 20) == 0);
	unlink(path);
	free(path);
	strbuf_release(&err);
	return img;
}

static void test_png_roundtrip(void)
{
	static const int sizes[][2] = { { 1, 1 }, { 3, 4 }, { 97, 61 }, { 640, 480 } };

	for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
		int w = sizes[k][0], h = sizes[k][1], dw = 0, dh = 0;
		unsigned char *px = picture(w, h), *back;
		struct strbuf png = STRBUF_INIT, why = STRBUF_INIT;

		png_encode_rgb(px, w, h, &png);
		back = pngchild_decode(png.buf, png.len, 8192, NULL, &dw, &dh, &why);
		CHECK(back != NULL);
		if (!back)
			tap_note(why.buf);
		CHECK(dw == w && dh == h);
		CHECK(back && !memcmp(back, px, (size_t)w * h * 3));
		if (w == 640)		/* flat and striped: deflate earns its keep */
			CHECK(png.len < (size_t)w * h * 3 / 8);
		free(back);
		free(px);
		strbuf_release(&png);
		strbuf_release(&why);
	}
}

static void test_hostile_files(void)
{
	struct strbuf err = STRBUF_INIT, png = STRBUF_INIT;
	char dir[] = "/tmp/cellbox-hostile-XXXXXX", path[256], *good = picture_file(8, 8);
	unsigned char head[24];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	/* A symbolic link (to a good PNG) is not followed. */
	snprintf(path, sizeof(path), "%s/link.png", dir);
	CHECK(symlink(good, path) == 0);
	CHECK(graphics_load(path, &err) == NULL && strstr(err.buf, "symbolic link"));
	unlink(path);
	/* A FIFO with no writer: refused at once, not waited on. */
	strbuf_reset(&err);
	snprintf(path, sizeof(path), "%s/fifo.png", dir);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(graphics_load(path, &err) == NULL && strstr(err.buf, "not a regular file"));
	unlink(path);
	/* A directory. */
	strbuf_reset(&err);
	CHECK(graphics_load(dir, &err) == NULL && strstr(err.buf, "not a regular file"));
	/* A header that claims 100000 x 100000 pixels: refused before anything decodes it. */
	CHECK(strbuf_read_file(&png, good, 1u << 20) == 0 && png.len > 24);
	memcpy(head, png.buf, 24);
	head[16] = 0, head[17] = 1, head[18] = 0x86, head[19] = 0xa0;	/* width 100000 */
	snprintf(path, sizeof(path), "%s/huge.png", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, head, 24) == 0 &&
	      fsutil_write_all(fd, png.buf + 24, png.len - 24) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && strstr(err.buf, "100000x8 is out of range"));
	unlink(path);
	/* Cut short: the signature and IHDR are there, the data is not. */
	snprintf(path, sizeof(path), "%s/short.png", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, png.buf, 40) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && err.len > 0);
	unlink(path);
	/* Not a PNG at all (a GIF, say). */
	snprintf(path, sizeof(path), "%s/plot.png", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, "GIF89a\x01\x00\x01\x00\x00\x00\x00;junkjunkjunkjunk", 30) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && strstr(err.buf, "not a PNG"));
	unlink(path);
	/* Larger than the cap (64 MiB) by its size alone: a sparse file, not read. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, png.buf, png.len) == 0 && ftruncate(fd, 65 << 20) == 0);
	close(fd);
	strbuf_reset(&err);
	CHECK(graphics_load(path, &err) == NULL && strstr(err.buf, "larger than"));
	unlink(path);
	rmdir(dir);
	unlink(good);
	free(good);
	strbuf_release(&png);
	strbuf_release(&err);
}

/* The kitty commands in `s`: how many, each payload's length checked against the rules. */
static int check_chunks(const char *s, size_t *payload_total, int *bad)
{
	int n = 0;

	*payload_total = 0;
	*bad = 0;
	for (const char *p = s; (p = strstr(p, "\x1b_G")); n++) {
		const char *semi = strchr(p, ';'), *end = strstr(p, "\x1b\\");
		size_t len;

		if (!end || !semi || semi > end) {
			(*bad)++;
			break;
		}
		len = (size_t)(end - semi - 1);
		if (len > 4096 || (strstr(p, "m=1") && strstr(p, "m=1") < semi &&
					  len % 4))
			(*bad)++;
		if (n && strncmp(p, "\x1b_Gm=", 5))
			(*bad)++;	/* chunks after the first carry only m and q */
		*payload_total += len;
		p = end + 2;
	}
	return n;
}

static void test_kitty_transmit(void)
{
	unsigned char data[10000];
	struct strbuf out = STRBUF_INIT, b64 = STRBUF_INIT;
	size_t total;
	int bad, n;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 31 + 7);
	kitty_transmit(&out, 0, data, sizeof(data), "a=t,f=100,i=7,q=2");
	base64_encode(data, sizeof(data), &b64);
	n = check_chunks(out.buf, &total, &bad);
	/* 13336 bytes of base64: 4096 + 4096 + 4096 + 1048. */
	CHECK(n == 4 && !bad && total == b64.len);
	CHECK(!strncmp(out.buf, "\x1b_Ga=t,f=100,i=7,q=2,m=1;", 25));
	CHECK(strstr(out.buf, "\x1b_Gm=0,q=2;") != NULL);
	CHECK(strstr(out.buf, "m=1;") && strstr(out.buf + 30, "\x1b_Gm=1,q=2;"));
	/* Through tmux: each chunk wrapped on its own, ESCs doubled. */
	strbuf_reset(&out);
	kitty_transmit(&out, 1, data, 100, "a=t,f=100,i=7,q=2");
	CHECK(!strncmp(out.buf, "\x1bPtmux;\x1b\x1b_Ga=t,", 14));
	CHECK(!strcmp(out.buf + out.len - 5, "\x1b\x1b\\\x1b\\"));
	strbuf_release(&out);
	strbuf_release(&b64);
}

static void test_kitty_ids(void)
{
	unsigned a = kitty_image_id(), b = kitty_image_id();

	/* Low byte 1..255 (a 256-colour index), bits 8..23 zero, ids differ. */
	CHECK(a != b && (a & 0xffff00) == 0 && (b & 0xffff00) == 0);
	CHECK((a & 255) >= 1 && (b & 255) >= 1);
	for (int i = 0; i < 600; i++) {
		unsigned c = kitty_image_id();
		if ((c & 255) == 0 || (c & 0xffff00)) {
			CHECK(!"an id that a placeholder cannot carry");
			return;
		}
	}
	CHECK(kitty_diacritic(0) == 0x305 && kitty_diacritic(1) == 0x30d &&
	      kitty_diacritic(296) == 0x1d244);
}

static void test_kitty_render(void)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, png = STRBUF_INIT, tmp = STRBUF_INIT;
	struct graphics_image *img = load_picture(64, 48, &png);
	struct graphics_request rq = { .mode = GRAPHICS_KITTY, .cols = 80, .rows = 20,
				       .cell_w = 8, .cell_h = 16 };
	struct graphics_size sz;
	unsigned id;
	char want[128];

	CHECK(img != NULL);
	if (!img)
		goto out;
	/* First: the PNG, then the placement over 8 x 3 cells, the cursor left alone. */
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK(sz.cols == 8 && sz.rows == 3);
	CHECK(sscanf(out.buf, "\x1b_Ga=t,f=100,i=%u,q=2,m=0;", &id) == 1);
	base64_encode(png.buf, png.len, &tmp);
	CHECK(strstr(out.buf, tmp.buf) != NULL);
	snprintf(want, sizeof(want), "\x1b_Ga=p,i=%u,p=1,x=0,y=0,w=64,h=48,c=8,r=3,C=1,q=2\x1b\\", id);
	CHECK(out.len > strlen(want) && !strcmp(out.buf + out.len - strlen(want), want));
	/* Again, cropped to its last two rows: only a placement, of the source rows 16..47. */
	strbuf_reset(&out);
	rq.crop_row = 1;
	rq.crop_rows = 2;
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	snprintf(want, sizeof(want), "\x1b_Ga=p,i=%u,p=1,x=0,y=16,w=64,h=32,c=8,r=2,C=1,q=2\x1b\\",
		 id);
	CHECK_STR(out.buf, want);
	/* Off the screen: the placement goes, the image stays; forgotten: both go. */
	strbuf_reset(&out);
	graphics_unplace(img, &rq, &out);
	snprintf(want, sizeof(want), "\x1b_Ga=d,d=i,i=%u,p=1,q=2\x1b\\", id);
	CHECK_STR(out.buf, want);
	strbuf_reset(&out);
	graphics_forget(img, &rq, &out);
	snprintf(want, sizeof(want), "\x1b_Ga=d,d=I,i=%u,q=2\x1b\\", id);
	CHECK_STR(out.buf, want);
	strbuf_reset(&out);
	graphics_forget(img, &rq, &out);
	CHECK(out.len == 0);
	/* Drawn after being forgotten: sent again, under the same id. */
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	snprintf(want, sizeof(want), "\x1b_Ga=t,f=100,i=%u,", id);
	CHECK(!strncmp(out.buf, want, strlen(want)));
	/* Scrolling output (run, repl): transmit and place at the cursor, then a new line. */
	strbuf_reset(&out);
	rq = (struct graphics_request){ .mode = GRAPHICS_KITTY, .flags = GRAPHICS_NEWLINES,
					.cols = 80, .rows = 20, .cell_w = 8, .cell_h = 16 };
	CHECK(graphics_render(img, &rq, &out, &sz, &err) == 0);
	CHECK(!strncmp(out.buf, "\x1b_Ga=T,f=100,q=2,c=8,r=3,m=0;", 29));
	CHECK(!strcmp(out.buf + out.len - 4, "\x1b\\\r\n"));
out:
	graphics_free(img);
	strbuf_release(&out);
	strbuf_release(&png);
	strbuf_release(&tmp);
	strbuf_release(&err);
}

static void test_kitty_placeholders(void)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, want = STRBUF_INIT;
	struct graphics_image *img = load_picture(64, 48, NULL);
	struct graphics_request rq = { .mode = GRAPHICS_KITTY_UNICODE, .cols = 80, .rows = 20,
				       .cell_w = 8, .cell_h = 16, .crop_row = 1, .crop_rows = 2 };
	const char *ph = "\xf4\x8e\xbb\xae";	/* U+10EEEE */
	unsigned id;

	CHECK(img != NULL);
	if (!img)
		goto out;
	CHECK(graphics_render(img, &rq, &out, NULL, &err) == 0);
	CHECK(sscanf(out.buf, "\x1b_Ga=T,U=1,f=100,i=%u,c=8,r=3,q=2,", &id) == 1);
	/* Rows 1 and 2: row mark, column 0, high byte; seven cells that inherit. */
	strbuf_addf(&want, "\x1b[38;5;%um%s\xcc\x8d\xcc\x85", id & 255, ph);
	CHECK(strstr(out.buf, want.buf) != NULL);
	strbuf_reset(&want);
	strbuf_addf(&want, "%s%s%s%s%s%s%s\x1b[39m\x1b[8D\x1b[B\x1b[38;5;%um%s\xcc\x8e\xcc\x85", ph,
		    ph, ph, ph, ph, ph, ph, id & 255, ph);
	CHECK(strstr(out.buf, want.buf) != NULL);
	CHECK(!strcmp(out.buf + out.len - 5, "\x1b[39m"));
	/* Drawn again: no transmission, only the text; a new size re-makes the placement. */
	strbuf_reset(&out);
	CHECK(graphics_render(img, &rq, &out, NULL, &err) == 0);
	CHECK(strstr(out.buf, "\x1b_G") == NULL && strstr(out.buf, ph) != NULL);
	strbuf_reset(&out);
	rq.cols = 4;
	rq.crop_rows = 0;
	CHECK(graphics_render(img, &rq, &out, NULL, &err) == 0);
	strbuf_reset(&want);
	strbuf_addf(&want, "\x1b_Ga=p,U=1,i=%u,c=4,r=2,q=2\x1b\\", id);
	CHECK(!strncmp(out.buf, want.buf, want.len));
out:
	graphics_free(img);
	strbuf_release(&out);
	strbuf_release(&want);
	strbuf_release(&err);
}

static void test_iterm(void)
{
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT, png = STRBUF_INIT, b64 = STRBUF_INIT;
	struct graphics_image *img = load_picture(64, 48, &png);
	struct graphics_request rq = { .mode = GRAPHICS_ITERM, .cols = 80, .rows = 20,
				       .cell_w = 8, .cell_h = 16 };
	char want[128];
	const char *colon;

	CHECK(img != NULL);
	if (!img)
		goto out;
	/* Whole: the file itself over 8 x 3 cells. */
	CHECK(graphics_render(img, &rq, &out, NULL, &err) == 0);
	snprintf(want, sizeof(want), "\x1b]1337;File=inline=1;size=%zu;width=8;height=3;"
		 "preserveAspectRatio=0:", png.len);
	CHECK(!strncmp(out.buf, want, strlen(want)));
	base64_encode(png.buf, png.len, &b64);
	CHECK(!strncmp(out.buf + strlen(want), b64.buf, b64.len));
	CHECK(out.buf[out.len - 1] == '\a');
	/* Cropped: a PNG of the visible rows, 64 x 16 pixels (cells of 8 x 16) for one row. */
	strbuf_reset(&out);
	rq.crop_row = 2;
	rq.crop_rows = 1;
	CHECK(graphics_render(img, &rq, &out, NULL, &err) == 0);
	CHECK(strstr(out.buf, ";width=8;height=1;") != NULL);
	colon = strchr(out.buf, ':');
	CHECK(colon && !strncmp(colon + 1, "iVBORw0KGgo", 11));	/* "\x89PNG\r\n\x1a\n" */
	{
		/* Its IHDR: 64 x 16. */
		static const char want_ihdr[] = "iVBORw0KGgoAAAANSUhEUgAAAEAAAAAQCAIAAAA";
		CHECK(colon && !strncmp(colon + 1, want_ihdr, strlen(want_ihdr)));
	}
out:
	graphics_free(img);
	strbuf_release(&out);
	strbuf_release(&png);
	strbuf_release(&b64);
	strbuf_release(&err);
}

static void test_cache_budget(void)
{
	/* 40 plots of 640x480 drawn in sixel at full size: their caches stay in the budget. */
	char *path = picture_file(640, 480);
	struct graphics_image *imgs[40];
	struct graphics_request rq = { .mode = GRAPHICS_SIXEL, .cols = 640, .cell_w = 1,
				       .cell_h = 20 };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	size_t max = 0;
	int ok = 1;

	for (int i = 0; i < 40; i++) {
		imgs[i] = graphics_load(path, &err);
		ok = ok && imgs[i] && graphics_render(imgs[i], &rq, &out, NULL, &err) == 0;
		strbuf_reset(&out);
		if (graphics_cache_bytes() > max)
			max = graphics_cache_bytes();
	}
	CHECK(ok);
	CHECK(max <= GRAPHICS_CACHE_BUDGET + (4u << 20));
	CHECK(graphics_cache_bytes() > 0);
	/* The first plot gave its caches up; drawn again, it is the same. */
	ok = imgs[0] && graphics_render(imgs[0], &rq, &out, NULL, &err) == 0 &&
	     !strncmp(out.buf, "\x1bPq\"1;1;640;480#", 16);
	CHECK(ok);
	for (int i = 0; i < 40; i++)
		graphics_free(imgs[i]);
	CHECK(graphics_cache_bytes() == 0);
	unlink(path);
	free(path);
	strbuf_release(&out);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "png_roundtrip", test_png_roundtrip },
	{ "hostile_files", test_hostile_files },
	{ "kitty_transmit", test_kitty_transmit },
	{ "kitty_ids", test_kitty_ids },
	{ "kitty_render", test_kitty_render },
	{ "kitty_placeholders", test_kitty_placeholders },
	{ "iterm", test_iterm },
	{ "cache_budget", test_cache_budget },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
