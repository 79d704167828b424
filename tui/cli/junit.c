/* A JUnit XML report of a replay (junit.h). */
#include "junit.h"

#include <stdlib.h>
#include <string.h>

void junit_init(struct junit_suite *s, const char *name)
{
	memset(s, 0, sizeof(*s));
	s->name = xstrdup(name);
}

void junit_release(struct junit_suite *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->cases[i].name);
		free(s->cases[i].message);
		free(s->cases[i].text);
	}
	free(s->cases);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

struct junit_case *junit_add(struct junit_suite *s, const char *name, double time,
			     enum junit_status status, const char *message, const char *text)
{
	struct junit_case *c;

	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 16;
		s->cases = xrealloc(s->cases, s->alloc * sizeof(*s->cases));
	}
	c = &s->cases[s->n++];
	c->name = xstrdup(name);
	c->time = time;
	c->status = status;
	c->message = message ? xstrdup(message) : NULL;
	c->text = text ? xstrdup(text) : NULL;
	return c;
}

void junit_fail(struct junit_case *c, const char *message, const char *text)
{
	if (c->status != JUNIT_FAILED || !c->message) {
		free(c->message);
		c->message = xstrdup(message);
	}
	c->status = JUNIT_FAILED;
	if (text && *text) {
		size_t old = c->text ? strlen(c->text) : 0, add = strlen(text);
		c->text = xrealloc(c->text, old + add + 2);
		if (old)
			c->text[old++] = '\n';
		memcpy(c->text + old, text, add + 1);
	}
}

/* The length of the UTF-8 character at s (at most `left` bytes), or 0 when it is not one. */
static size_t xml_char(const unsigned char *s, size_t left)
{
	size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 :
		   (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	unsigned cp;

	if (!n || n > left || (n > 1 && s[0] < 0xc2) || s[0] > 0xf4)
		return 0;
	cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
			cp == 0xffff)) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* Append `text` escaped for XML text and attributes, without control characters. */
static void escape(const char *text, int attribute, struct strbuf *out)
{
	const unsigned char *s = (const unsigned char *)(text ? text : "");
	size_t left = strlen((const char *)s);

	while (left) {
		size_t n;

		if (s[0] == 0x1b) {
			/* A terminal escape (IPython's coloured tracebacks): the whole sequence. */
			size_t k = 1;
			if (k < left && s[k] == '[') {
				for (k++; k < left && (s[k] < 0x40 || s[k] > 0x7e); k++)
					;
				k += k < left;
			} else if (k < left) {
				k++;
			}
			s += k;
			left -= k;
			continue;
		}
		n = xml_char(s, left);
		if (!n) {
			strbuf_addstr(out, "\xef\xbf\xbd");
			n = 1;
		} else if (*s == '&') {
			strbuf_addstr(out, "&amp;");
		} else if (*s == '<') {
			strbuf_addstr(out, "&lt;");
		} else if (*s == '>') {
			strbuf_addstr(out, "&gt;");
		} else if (*s == '"' && attribute) {
			strbuf_addstr(out, "&quot;");
		} else if ((*s == '\n' || *s == '\t') && attribute) {
			strbuf_addstr(out, *s == '\n' ? "&#10;" : "&#9;");
		} else if (*s < 0x20 && *s != '\n' && *s != '\t') {
			;	/* XML 1.0 has no other C0 character; \r too goes */
		} else {
			strbuf_add(out, s, n);
		}
		s += n;
		left -= n;
	}
}

void junit_write(const struct junit_suite *s, struct strbuf *out)
{
	size_t failures = 0, errors = 0, skipped = 0;
	static const char *const tag[] = {
		[JUNIT_FAILED] = "failure", [JUNIT_SKIPPED] = "skipped", [JUNIT_ERROR] = "error",
	};

	for (size_t i = 0; i < s->n; i++) {
		failures += s->cases[i].status == JUNIT_FAILED;
		errors += s->cases[i].status == JUNIT_ERROR;
		skipped += s->cases[i].status == JUNIT_SKIPPED;
	}
	strbuf_addstr(out, "<testsuite name=\"");
	escape(s->name, 1, out);
	strbuf_addf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" "
		    "time=\"%.3f\">\n", s->n, failures, errors, skipped, s->time);
	for (size_t i = 0; i < s->n; i++) {
		const struct junit_case *c = &s->cases[i];

		strbuf_addstr(out, "  <testcase classname=\"");
		escape(s->name, 1, out);
		strbuf_addstr(out, "\" name=\"");
		escape(c->name, 1, out);
		strbuf_addf(out, "\" time=\"%.3f\"", c->time);
		if (c->status == JUNIT_PASSED) {
			strbuf_addstr(out, "/>\n");
			continue;
		}
		strbuf_addf(out, ">\n    <%s", tag[c->status]);
		if (c->message) {
			strbuf_addstr(out, " message=\"");
			escape(c->message, 1, out);
			strbuf_addch(out, '"');
		}
		if (c->text && *c->text) {
			strbuf_addch(out, '>');
			escape(c->text, 0, out);
			strbuf_addf(out, "</%s>\n", tag[c->status]);
		} else {
			strbuf_addstr(out, "/>\n");
		}
		strbuf_addstr(out, "  </testcase>\n");
	}
	strbuf_addstr(out, "</testsuite>\n");
}

int junit_save(const char *path, const char *xml, int many, struct strbuf *err)
{
	struct strbuf doc = STRBUF_INIT;
	int rc;

	strbuf_addstr(&doc, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
	if (many)
		strbuf_addstr(&doc, "<testsuites>\n");
	strbuf_addstr(&doc, xml);
	if (many)
		strbuf_addstr(&doc, "</testsuites>\n");
	rc = fsutil_write_atomic(path, doc.buf, doc.len, 0644, err);
	strbuf_release(&doc);
	return rc;
}
