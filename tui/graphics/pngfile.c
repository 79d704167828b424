/* PNG files read as hostile input: opened, read and checked (decoding is pngchild.c's). */
#include "pngfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
