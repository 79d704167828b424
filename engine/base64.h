#ifndef CELLBOX_BASE64_H
#define CELLBOX_BASE64_H

/* Base64 (RFC 4648, with padding), as images travel in notebooks and terminal protocols. */

#include <stddef.h>

struct strbuf;

/* Append the base64 encoding of `len` bytes. */
void base64_encode(const void *data, size_t len, struct strbuf *out);
/* Append the bytes that `len` characters of base64 stand for; -1 at a character that is not. */
int base64_decode(const char *text, size_t len, struct strbuf *out);

#endif
