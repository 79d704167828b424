#include "strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"

char strbuf_empty[1];

/* Start an empty buffer, with room for `hint` bytes when it is not 0. */
void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->buf = strbuf_empty;
	sb->len = sb->alloc = sb->max = 0;
	if (hint)
		strbuf_grow(sb, hint);
}

/* Free the buffer's memory and leave it empty, with its cap. */
void strbuf_release(struct strbuf *sb)
{
	size_t max = sb->max;

	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, 0);
	sb->max = max;
}

/* Set the buffer's cap. */
void strbuf_set_max(struct strbuf *sb, size_t max)
{
	sb->max = max;
}

/* Make room for `extra` more bytes within the cap. */
int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want, cap;

	if (!sb->buf)
		strbuf_init(sb, 0);
	cap = sb->max ? sb->max : STRBUF_DEFAULT_MAX;
	if (extra >= cap || sb->len + extra + 1 > cap) {
		errno = EFBIG;
		return -1;
	}
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	if (want < sb->alloc * 2)
		want = sb->alloc * 2;
	if (want < 64)
		want = 64;
	if (want > cap)
		want = cap;
	if (sb->alloc) {
		sb->buf = xrealloc(sb->buf, want);
	} else {
		sb->buf = xmalloc(want);
		sb->buf[0] = '\0';
	}
	sb->alloc = want;
	return 0;
}

/* Append `len` bytes. */
int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (strbuf_grow(sb, len) < 0)
		return -1;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

/* Append a string. */
int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

/* Append one character. */
int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	return strbuf_add(sb, &ch, 1);
}

/* Append formatted text. */
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	if (strbuf_grow(sb, 64) < 0 && strbuf_grow(sb, 0) < 0)
		return -1;
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0) {
		sb->buf[sb->len] = '\0';
		return -1;
	}
	if ((size_t)n >= sb->alloc - sb->len) {
		if (strbuf_grow(sb, (size_t)n) < 0) {
			sb->buf[sb->len] = '\0';	/* what the first try wrote is not ours */
			return -1;
		}
		vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
	return 0;
}

/* Append formatted text. */
int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return rc;
}

/* Empty the buffer, keeping its memory. */
void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

/* Drop the first `n` bytes. */
void strbuf_remove_front(struct strbuf *sb, size_t n)
{
	if (n >= sb->len) {
		strbuf_reset(sb);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	sb->len -= n;
	sb->buf[sb->len] = '\0';
}

/* Hand the buffer's memory to the caller. */
char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	size_t max = sb->max;
	char *p;

	p = sb->alloc ? sb->buf : xstrdup("");
	if (len)
		*len = sb->len;
	strbuf_init(sb, 0);
	sb->max = max;
	return p;
}

/* Read a descriptor until end of file. */
int strbuf_read_fd(struct strbuf *sb, int fd, size_t max)
{
	for (;;) {
		ssize_t n;

		if (sb->len >= max) {
			errno = EFBIG;
			return -1;
		}
		if (strbuf_grow(sb, 65536) < 0 && strbuf_grow(sb, 1) < 0)
			return -1;
		n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
	}
}

/* Read a whole file. */
int strbuf_read_file(struct strbuf *sb, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc, saved;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	rc = strbuf_read_fd(sb, fd, max);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}
