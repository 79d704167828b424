#ifndef CELLBOX_UTIL_H
#define CELLBOX_UTIL_H

/*
 * Small things every module uses: allocation wrappers that abort on OOM, a growable byte
 * buffer with a hard cap (modelled on git's strbuf), UTF-8 checks, clocks and file helpers.
 */

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Allocate or abort with a message: callers never check for NULL. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* A growable list of strings the list owns. */
struct strlist {
	char **items;
	size_t n, alloc;
};

#define STRLIST_INIT { NULL, 0, 0 }

/* Append a copy of `s`. */
void strlist_append(struct strlist *l, const char *s);
void strlist_release(struct strlist *l);

/* Trim white space at both ends of `s`, in place; returns the first kept character. */
char *str_trim(char *s);

/*
 * Read `key = value` lines (the config file, themes): blank lines are skipped and `#` starts
 * a comment, except a `#rrggbb` colour after the `=`. `fn(key, value, why, data)` takes each
 * pair, trimmed (both are the reader's scratch copy: `fn` may cut them up), and returns -1
 * with `why` set to refuse it. Stops at the first error, which
 * goes to `err` as "NAME:LINE: ..."; a line without `=` is "expected '<form>'". 0 or -1.
 */
typedef int (*kv_fn)(char *key, char *value, struct strbuf *why, void *data);
int kv_parse(const char *text, const char *name, const char *form, kv_fn fn, void *data,
	     struct strbuf *err);

/*
 * Check that `s[0..len)` is valid UTF-8. Returns 1 when valid; else 0 and the offset of the
 * first bad byte in *bad.
 */
int utf8_valid(const char *s, size_t len, size_t *bad);
/*
 * Check that `s[0..len)`, read from `name`, is text: no NUL bytes, valid UTF-8. Returns 0, or
 * -1 with `err` saying "'NAME' is not a text file (it contains NUL bytes)" or "'NAME' is not
 * valid UTF-8 (byte 0xe9 at offset 10)".
 */
int text_check(const char *s, size_t len, const char *name, struct strbuf *err);

/* Seconds on the monotonic clock. */
double now_monotonic(void);
/* Seconds since the epoch. */
double now_wall(void);

/* Write all of `len` bytes, retrying short writes and EINTR. */
int write_all(int fd, const void *buf, size_t len);
/* mkdir -p with mode 0700 for each made component. */
int mkdir_p(const char *path);
/*
 * rm -rf below and including `path`, never following a symbolic link: each level is opened
 * O_NOFOLLOW | O_DIRECTORY relative to the one above, so a link planted anywhere inside (or
 * swapped in while it runs) is removed, never followed. Errors are ignored.
 */
void remove_tree(const char *path);
/* The same for `name` in directory `dirfd`, at most `max_depth` levels; 0, or -1 when
   something remains. */
int remove_tree_at(int dirfd, const char *name, int max_depth);
#define REMOVE_TREE_DEPTH 64

/*
 * Parse a size such as "512m", "1g", "1GB", "64 MB" or "1048576" into bytes.
 * Returns 0, or -1 when the text is not a size.
 */
int parse_size(const char *s, unsigned long long *out);
/* Parse seconds as a decimal number ("2", "0.5"); -1 when not a non-negative number. */
int parse_seconds(const char *s, double *out);



/* Append the base64 encoding of `len` bytes. */
void base64_encode(const void *data, size_t len, struct strbuf *out);
/* Copy a file; -1 with errno set on failure. */
int copy_file(const char *from, const char *to);
/* Whether process `pid` runs (a zombie that nobody reaped yet does not). */
int process_alive(pid_t pid);
/* In a child that will run a kernel: no signal blocked, and ours back at their defaults. */
void signals_for_child(void);
#endif
