#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "strbuf.h"

/* Trim white space at both ends, in place. */
char *parse_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Whether `#` at `p` starts a #rrggbb colour rather than a comment. */
static int is_colour(const char *p)
{
	for (int i = 1; i <= 6; i++)
		if (!isxdigit((unsigned char)p[i]))
			return 0;
	return !isalnum((unsigned char)p[7]);
}

/* Read `key = value` lines, handing each pair to `fn`. */
int parse_kv(const char *text, const char *name, const char *form, kv_fn fn, void *data,
	     struct strbuf *err)
{
	char *copy = xstrdup(text), *line, *next;
	struct strbuf why = STRBUF_INIT;
	int lineno = 0, rc = 0;

	for (line = copy; line && rc == 0; line = next) {
		char *eq, *hash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		eq = strchr(line, '=');
		for (hash = strchr(line, '#'); hash && eq && hash > eq && is_colour(hash);)
			hash = strchr(hash + 1, '#');
		if (hash)
			*hash = '\0';
		line = parse_trim(line);
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			strbuf_addf(err, "%s:%d: expected '%s'", name, lineno, form);
			rc = -1;
			break;
		}
		*eq = '\0';
		if (!*parse_trim(line)) {
			strbuf_addf(err, "%s:%d: expected '%s' (no key before the '=')", name, lineno,
				    form);
			rc = -1;
			break;
		}
		strbuf_reset(&why);
		if (fn(parse_trim(line), parse_trim(eq + 1), &why, data) < 0) {
			strbuf_addf(err, "%s:%d: %s", name, lineno, why.buf);
			rc = -1;
		}
	}
	strbuf_release(&why);
	free(copy);
	return rc;
}

/* Parse a size with an optional unit into bytes. */
int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	double v;
	unsigned long long mult = 1;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b': break;
	case 'k': mult = 1ULL << 10; break;
	case 'm': mult = 1ULL << 20; break;
	case 'g': mult = 1ULL << 30; break;
	case 't': mult = 1ULL << 40; break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (mult > 1 && (*end == 'b' || *end == 'B'))
			end++;
		if (*end)
			return -1;
	}
	/* More than an unsigned long long holds is no size (and converting it is undefined). */
	if (!(v * (double)mult < 18446744073709551616.0))
		return -1;
	*out = (unsigned long long)(v * (double)mult);
	return 0;
}

/* Parse a non-negative number of seconds. */
int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0 || v != v)
		return -1;
	*out = v;
	return 0;
}
