/* PNG files read as hostile input and decoded by libsixel from a memory file. */
#include "pngfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sixel.h>

struct load_ctx {
	unsigned char *rgb;
	int w, h, max_side;
	struct strbuf *why;
};

/* Take the first frame libsixel decoded, as RGB888. */
static SIXELSTATUS on_frame(sixel_frame_t *frame, void *data)
{
	struct load_ctx *c = data;
	int w = sixel_frame_get_width(frame), h = sixel_frame_get_height(frame);
	int fmt = sixel_frame_get_pixelformat(frame);
	unsigned char *px = sixel_frame_get_pixels(frame);
	unsigned char *pal = sixel_frame_get_palette(frame);
	size_t n;

	if (c->rgb)
		return SIXEL_OK;
	if (w <= 0 || h <= 0 || w > c->max_side || h > c->max_side) {
		strbuf_addf(c->why, "image size %dx%d is out of range", w, h);
		return SIXEL_BAD_INPUT;
	}
	n = (size_t)w * h;
	c->rgb = xmalloc(n * 3);
	if (fmt == SIXEL_PIXELFORMAT_PAL8 && pal) {
		int ncolors = sixel_frame_get_ncolors(frame);
		for (size_t i = 0; i < n; i++) {
			int k = px[i] < ncolors ? px[i] : 0;
			memcpy(c->rgb + 3 * i, pal + 3 * k, 3);
		}
	} else if (fmt == SIXEL_PIXELFORMAT_RGB888) {
		memcpy(c->rgb, px, n * 3);
	} else {
		int out_fmt = 0;
		if (SIXEL_FAILED(sixel_helper_normalize_pixelformat(c->rgb, &out_fmt, px, fmt, w,
								     h)) ||
		    out_fmt != SIXEL_PIXELFORMAT_RGB888) {
			strbuf_addf(c->why, "unsupported pixel format 0x%x", fmt);
			free(c->rgb);
			c->rgb = NULL;
			return SIXEL_BAD_INPUT;
		}
	}
	c->w = w;
	c->h = h;
	return SIXEL_OK;
}

/* A 32-bit big-endian number. */
static unsigned long be32(const unsigned char *p)
{
	return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 |
	       p[3];
}

static int read_fd(int fd, size_t max_bytes, int max_side, struct strbuf *png,
		   struct strbuf *why);

int pngfile_read(const char *path, size_t max_bytes, int max_side, struct strbuf *png,
		 struct strbuf *why)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), rc;

	if (fd < 0) {
		strbuf_addstr(why, errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return -1;
	}
	rc = read_fd(fd, max_bytes, max_side, png, why);
	close(fd);
	return rc;
}

int pngfile_check(const char *png, size_t len, size_t max_bytes, int max_side,
		  struct strbuf *why)
{
	const unsigned char *p = (const unsigned char *)png;
	unsigned long w, h;

	if (len > max_bytes) {
		strbuf_addf(why, "larger than %zu bytes", max_bytes);
		return -1;
	}
	if (len < 24 || memcmp(p, "\x89PNG\r\n\x1a\n", 8) || memcmp(p + 12, "IHDR", 4)) {
		strbuf_addstr(why, "not a PNG");
		return -1;
	}
	w = be32(p + 16);
	h = be32(p + 20);
	if (!w || !h || w > (unsigned long)max_side || h > (unsigned long)max_side) {
		strbuf_addf(why, "image size %lux%lu is out of range", w, h);
		return -1;
	}
	return 0;
}

/* Read `fd` into `png` (appended) and check it; 0, or -1 with `why`. */
static int read_fd(int fd, size_t max_bytes, int max_side, struct strbuf *png,
		   struct strbuf *why)
{
	struct stat st;
	size_t at = png->len;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		strbuf_addstr(why, "not a regular file");
		return -1;
	}
	if (st.st_size > (off_t)max_bytes || strbuf_read_fd(png, fd, max_bytes) < 0) {
		strbuf_addf(why, "larger than %zu bytes", max_bytes);
		return -1;
	}
	return pngfile_check(png->buf + at, png->len - at, max_bytes, max_side, why);
}

unsigned char *pngfile_decode(const char *png, size_t len, int max_side, int *w, int *h,
			      struct strbuf *why)
{
	struct load_ctx c = { NULL, 0, 0, max_side, why };
	unsigned char white[3] = { 255, 255, 255 };
	sixel_allocator_t *alloc = NULL;
	char fdpath[64];
	SIXELSTATUS st;
	int fd = memfd_create("cellbox-plot", MFD_CLOEXEC);

	if (fd < 0 || fsutil_write_all(fd, png, len) < 0) {
		strbuf_addf(why, "cannot hold it in memory: %s", strerror(errno));
		goto out;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	st = sixel_allocator_new(&alloc, NULL, NULL, NULL, NULL);
	if (SIXEL_FAILED(st)) {
		strbuf_addstr(why, sixel_helper_format_error(st));
		goto out;
	}
	st = sixel_helper_load_image_file(fdpath, 1, 0, 256, white, SIXEL_LOOP_DISABLE, on_frame,
					  0, NULL, &c, alloc);
	sixel_allocator_unref(alloc);
	if ((SIXEL_FAILED(st) || !c.rgb) && !why->len)
		strbuf_addstr(why, sixel_helper_format_error(st));
	if (SIXEL_FAILED(st)) {
		free(c.rgb);
		c.rgb = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	*w = c.w;
	*h = c.h;
	return c.rgb;
}
