#ifndef CELLBOX_PARSE_H
#define CELLBOX_PARSE_H

/* Reading settings as people write them: `key = value` lines, sizes ("512m"), seconds. */

struct strbuf;

/* Trim white space at both ends of `s`, in place; returns the first kept character. */
char *parse_trim(char *s);

/*
 * Read `key = value` lines (the config file, themes): blank lines are skipped and `#` starts
 * a comment, except a `#rrggbb` colour after the `=`. `fn(key, value, why, data)` takes each
 * pair, trimmed (both are the reader's scratch copy: `fn` may cut them up), and returns -1
 * with `why` set to refuse it. Stops at the first error, which
 * goes to `err` as "NAME:LINE: ..."; a line without `=` is "expected '<form>'". 0 or -1.
 */
typedef int (*kv_fn)(char *key, char *value, struct strbuf *why, void *data);
int parse_kv(const char *text, const char *name, const char *form, kv_fn fn, void *data,
	     struct strbuf *err);

/*
 * Parse a size such as "512m", "1g", "1GB", "64 MB" or "1048576" into bytes.
 * Returns 0, or -1 when the text is not a size.
 */
int parse_size(const char *s, unsigned long long *out);
/* Parse seconds as a decimal number ("2", "0.5"); -1 when not a non-negative number. */
int parse_seconds(const char *s, double *out);

#endif
