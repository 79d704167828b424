#ifndef CELLBOX_UTF8_H
#define CELLBOX_UTF8_H

/* UTF-8 and text checks (git's utf8.c): is what a file holds text cellbox can show and edit. */

#include <stddef.h>

struct strbuf;

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
int utf8_check_text(const char *s, size_t len, const char *name, struct strbuf *err);
/*
 * One character at `s` (at most `len` bytes), as a terminal shows it, without the locale's
 * help: its length in bytes (1 for a byte that starts no valid sequence) and in *cols its
 * columns (wcwidth; 1 for a control or an unknown character). The front ends' renderers
 * (markdown, HTML) measure text with it.
 */
size_t utf8_char(const char *s, size_t len, int *cols);
/* The columns of s[0..len) by utf8_char(). */
int utf8_columns(const char *s, size_t len);

#endif
