#ifndef CELLBOX_STRBUF_H
#define CELLBOX_STRBUF_H

/* A growable buffer of bytes with a cap of its own (struct strbuf). */

#include <stdarg.h>
#include <stddef.h>

/*
 * A growable, always NUL-terminated byte buffer (git's strbuf). `buf` is never NULL: an
 * empty buffer points at a shared empty string (STRBUF_INIT, strbuf_init), so it can be
 * printed and compared as it is; it is never written to but for its NUL.
 *
 * Each buffer has its own cap, `max` bytes (0 = STRBUF_DEFAULT_MAX; set it with
 * strbuf_set_max): growing past it fails with -1 and errno EFBIG and leaves the buffer as
 * it was (curl's dynbuf), so a caller filling a buffer from outside input decides what a
 * full buffer means. Only running out of memory aborts.
 */
#define STRBUF_DEFAULT_MAX ((size_t)1 << 30)

struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max;		/* the cap of len + 1; 0 = STRBUF_DEFAULT_MAX */
};

extern char strbuf_empty[];
#define STRBUF_INIT { strbuf_empty, 0, 0, 0 }

void strbuf_init(struct strbuf *sb, size_t hint);
/* Release the memory; the buffer is empty and keeps its cap. */
void strbuf_release(struct strbuf *sb);
/* Cap the buffer at `max` bytes (0 = the default); what it holds already stays. */
void strbuf_set_max(struct strbuf *sb, size_t max);
/* Make room for `extra` more bytes; -1 (errno EFBIG) past the cap. */
int strbuf_grow(struct strbuf *sb, size_t extra);
/* Append; each returns -1 (errno EFBIG) and appends nothing past the cap, else 0. */
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, int c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void strbuf_reset(struct strbuf *sb);
/* Drop the first `n` bytes. */
void strbuf_remove_front(struct strbuf *sb, size_t n);
/* Hand the buffer to the caller (who frees it) and leave `sb` empty. */
char *strbuf_detach(struct strbuf *sb, size_t *len);
/* Read a whole file; -1 with errno set on failure. */
int strbuf_read_file(struct strbuf *sb, const char *path, size_t max);
/* Read a whole descriptor until EOF. */
int strbuf_read_fd(struct strbuf *sb, int fd, size_t max);

#endif
