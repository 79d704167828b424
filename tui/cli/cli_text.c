/* Outside text on its way to the terminal: always through the sanitiser (cli.h). */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitize.h"
#include "utf8.h"

void cli_put_text(FILE *f, const char *text)
{
	struct strbuf clean = STRBUF_INIT;

	fputs(sanitize_cstr(text, SAN_NO_CR, &clean), f);
	strbuf_release(&clean);
}

void cli_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		abort();
	va_end(ap);
	cli_put_text(f, text);
	free(text);
}

const char *cli_first_line(const char *text, size_t max, struct strbuf *out, int *more)
{
	size_t l;

	sanitize_cstr(text, SAN_NO_CR, out);
	l = strcspn(out->buf, "\n");
	if (more)
		*more = l > max || out->buf[l + strspn(out->buf + l, "\n")];
	if (l > max) {
		l = max;
		while (l && ((unsigned char)out->buf[l] & 0xc0) == 0x80)
			l--;	/* not inside a character */
	}
	if (l < out->len) {
		out->buf[l] = '\0';
		out->len = l;
	}
	return out->buf;
}

void cli_put_json(const cJSON *o)
{
	char *text = cJSON_Print(o);
	const unsigned char *s = (const unsigned char *)text;
	size_t len = strlen(text), i = 0;

	/* Bytes past ASCII only stand inside strings, where \u escapes mean the same. */
	while (i < len) {
		size_t bad = len - i;
		int valid = utf8_valid(text + i, len - i, &bad);

		for (size_t j = i; j < i + bad; j++) {
			if (s[j] == 0xc2 && s[j + 1] <= 0x9f) {
				printf("\\u%04x", s[j + 1]);
				j++;
			} else {
				putchar(s[j]);
			}
		}
		if (valid)
			break;
		fputs("\\ufffd", stdout);
		i += bad + 1;
	}
	putchar('\n');
	cJSON_free(text);
}
