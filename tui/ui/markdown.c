/* Markdown as terminal text: blocks line by line, inline emphasis, word wrap. */
#include "markdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "util.h"

/* Text being built with a style for each byte. */
struct styled {
	struct strbuf text;
	unsigned *style;
	size_t alloc;
};

struct md {
	md_fn fn;
	void *data;
	int width;
	int blank;		/* the last line emitted was blank (or nothing was emitted) */
	/* The paragraph being gathered: its text, and the prefixes of its first and next lines. */
	struct strbuf para;
	char first[96], cont[96];
	unsigned prefix_style;
	int in_para, list_indent;	/* list_indent: a list item's text column, -1 none */
};

/* Append `n` bytes in `style`. */
static void st_add(struct styled *s, const char *p, size_t n, unsigned style)
{
	if (s->text.len + n + 1 > s->alloc) {
		s->alloc = 2 * (s->text.len + n + 1) + 64;
		s->style = xrealloc(s->style, s->alloc * sizeof(*s->style));
	}
	for (size_t i = 0; i < n; i++)
		s->style[s->text.len + i] = style;
	strbuf_add(&s->text, p, n);
}

/* End a display line. */
static void line_end(struct md *m, int blank)
{
	m->fn(m->data, NULL, 0, 0);
	m->blank = blank;
}

/* Emit s[from..to) of styled text in runs of one style. */
static void emit_runs(struct md *m, const struct styled *s, size_t from, size_t to)
{
	while (from < to) {
		size_t e = from + 1;
		while (e < to && s->style[e] == s->style[from])
			e++;
		m->fn(m->data, s->text.buf + from, e - from, s->style[from]);
		from = e;
	}
}

/* Word-wrap styled text after a prefix (`first`, then `cont` on the lines that follow). */
static void wrap(struct md *m, const struct styled *s, const char *first, const char *cont,
		 unsigned pstyle)
{
	const char *t = s->text.buf;
	size_t n = s->text.len, i = 0;
	int line_has = 0, col;

	m->fn(m->data, first, strlen(first), pstyle);
	col = utf8_columns(first, strlen(first));
	while (i < n) {
		size_t ws = i, we, k;
		int wcols = 0, w;

		if (t[i] == '\n') {		/* a hard break */
			line_end(m, 0);
			m->fn(m->data, cont, strlen(cont), pstyle);
			col = utf8_columns(cont, strlen(cont));
			line_has = 0;
			i++;
			continue;
		}
		if (t[i] == ' ') {
			i++;
			continue;
		}
		for (we = ws; we < n && t[we] != ' ' && t[we] != '\n';) {
			we += utf8_char(t + we, n - we, &w);
			wcols += w;
		}
		if (line_has && col + 1 + wcols > m->width) {
			line_end(m, 0);
			m->fn(m->data, cont, strlen(cont), pstyle);
			col = utf8_columns(cont, strlen(cont));
			line_has = 0;
		}
		if (line_has) {
			/* the space between words, in the style of the text around it */
			m->fn(m->data, " ", 1, s->style[ws > 0 ? ws - 1 : ws] & s->style[ws]);
			col++;
		}
		/* A word longer than the line is cut where it must be. */
		for (k = ws; k < we;) {
			size_t start = k;
			int c = col;
			while (k < we) {
				size_t l = utf8_char(t + k, we - k, &w);
				if (c + w > m->width && c > utf8_columns(cont, strlen(cont)))
					break;
				c += w;
				k += l;
			}
			if (k == start) {	/* not even one character fits: take it anyway */
				k += utf8_char(t + k, we - k, &w);
				c += w;
			}
			emit_runs(m, s, start, k);
			col = c;
			line_has = 1;
			if (k < we) {
				line_end(m, 0);
				m->fn(m->data, cont, strlen(cont), pstyle);
				col = utf8_columns(cont, strlen(cont));
			}
		}
		i = we;
	}
	line_end(m, 0);
}

/* Whether the run of `c` at p[0..] (length `run`) has a closing run later in p[..n). */
static int has_closer(const char *p, size_t n, size_t from, const char *delim)
{
	size_t dl = strlen(delim);

	for (size_t i = from; i + dl <= n; i++) {
		if (p[i] == '\\') {
			i++;
			continue;
		}
		if (!strncmp(p + i, delim, dl) && i > from && p[i - 1] != ' ')
			return 1;
	}
	return 0;
}

/* Inline markdown of p[0..n) appended to `s` over `base` style. */
static void inline_parse(struct styled *s, const char *p, size_t n, unsigned base)
{
	unsigned style = base;

	for (size_t i = 0; i < n;) {
		const char *rest = p + i;
		size_t left = n - i;

		if (rest[0] == '\\' && left > 1 && strchr("\\`*_{}[]()#+-.!|>~<", rest[1])) {
			st_add(s, rest + 1, 1, style);
			i += 2;
			continue;
		}
		if (rest[0] == '`') {
			size_t run = strspn(rest, "`"), j;
			if (run > left)
				run = left;
			for (j = run; j + run <= left; j++)
				if (!strncmp(rest + j, rest, run) && (j + run == left || rest[j + run] != '`'))
					break;
			if (j + run <= left) {
				size_t a = run, b = j;
				if (b > a + 1 && rest[a] == ' ' && rest[b - 1] == ' ')
					a++, b--;
				st_add(s, rest + a, b - a, style | MD_CODE);
				i += j + run;
				continue;
			}
			st_add(s, rest, run, style);
			i += run;
			continue;
		}
		if ((rest[0] == '*' || rest[0] == '_') && left > 1 && rest[1] == rest[0]) {
			char delim[3] = { rest[0], rest[0], 0 };
			if (style & MD_BOLD) {
				style &= ~(unsigned)MD_BOLD;
				i += 2;
				continue;
			}
			if (left > 2 && rest[2] != ' ' && has_closer(p, n, i + 2, delim)) {
				style |= MD_BOLD;
				i += 2;
				continue;
			}
		}
		if (rest[0] == '*' || rest[0] == '_') {
			char delim[2] = { rest[0], 0 };
			int word_before = i > 0 && p[i - 1] != ' ' && p[i - 1] != '(';
			if (style & MD_ITALIC && (rest[0] == '*' || left == 1 || !strchr(
							  "abcdefghijklmnopqrstuvwxyz0123456789", rest[1]))) {
				style &= ~(unsigned)MD_ITALIC;
				i++;
				continue;
			}
			if (!(style & MD_ITALIC) && left > 1 && rest[1] != ' ' &&
			    !(rest[0] == '_' && word_before) && has_closer(p, n, i + 1, delim)) {
				style |= MD_ITALIC;
				i++;
				continue;
			}
		}
		if (rest[0] == '[' || (rest[0] == '!' && left > 1 && rest[1] == '[')) {
			int image = rest[0] == '!';
			const char *open = rest + image, *close = memchr(open, ']', left - image);
			if (close && (size_t)(close - rest) + 1 < left && close[1] == '(') {
				const char *end = memchr(close + 2, ')', left - (size_t)(close + 2 - rest));
				if (end) {
					size_t tl = (size_t)(close - open - 1), ul = (size_t)(end - close - 2);
					if (image) {
						st_add(s, "[image: ", 8, style | MD_LINK);
						st_add(s, open + 1, tl, style | MD_LINK);
						st_add(s, "]", 1, style | MD_LINK);
					} else {
						inline_parse(s, open + 1, tl, style | MD_LINK);
						if (ul && (ul != tl || strncmp(open + 1, close + 2, tl))) {
							st_add(s, " (", 2, style | MD_URL);
							st_add(s, close + 2, ul, style | MD_URL);
							st_add(s, ")", 1, style | MD_URL);
						}
					}
					i += (size_t)(end - rest) + 1;
					continue;
				}
			}
		}
		if (rest[0] == '<' && (left > 8 && (!strncmp(rest + 1, "http://", 7) ||
						    !strncmp(rest + 1, "https://", 8)))) {
			const char *end = memchr(rest, '>', left);
			if (end && !memchr(rest, ' ', (size_t)(end - rest))) {
				st_add(s, rest + 1, (size_t)(end - rest - 1), style | MD_LINK);
				i += (size_t)(end - rest) + 1;
				continue;
			}
		}
		{
			int w;
			size_t l = utf8_char(rest, left, &w);
			st_add(s, rest, l, style);
			i += l;
		}
	}
}

/* Render the paragraph gathered so far. */
static void para_flush(struct md *m)
{
	struct styled s = { STRBUF_INIT, NULL, 0 };
	size_t len = m->para.len;

	if (!m->in_para)
		return;
	while (len && (m->para.buf[len - 1] == ' ' || m->para.buf[len - 1] == '\n'))
		len--;
	inline_parse(&s, m->para.buf, len, m->prefix_style & MD_HEADING ? m->prefix_style : 0);
	wrap(m, &s, m->first, m->cont, m->prefix_style & ~(unsigned)(MD_HEADING | MD_H1 | MD_BOLD));
	strbuf_release(&s.text);
	free(s.style);
	strbuf_reset(&m->para);
	m->in_para = 0;
	m->list_indent = -1;
}

/* Start a paragraph with these prefixes. */
static void para_start(struct md *m, const char *first, const char *cont, unsigned style)
{
	para_flush(m);
	snprintf(m->first, sizeof(m->first), "%s", first);
	snprintf(m->cont, sizeof(m->cont), "%s", cont);
	m->prefix_style = style;
	m->in_para = 1;
}

/* Add one source line's text to the paragraph (a soft break is a space). */
static void para_add(struct md *m, const char *p, size_t n)
{
	int hard = (n >= 2 && p[n - 1] == ' ' && p[n - 2] == ' ') || (n && p[n - 1] == '\\');

	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || (hard && p[n - 1] == '\\')))
		n--;
	strbuf_add(&m->para, p, n);
	strbuf_addch(&m->para, hard ? '\n' : ' ');
}

/* A line emitted as it is (code, tables), cut to the width where it must be. */
static void verbatim(struct md *m, const char *prefix, const char *p, size_t n, unsigned style)
{
	struct styled s = { STRBUF_INIT, NULL, 0 };
	size_t i = 0;
	int col, w, pw = utf8_columns(prefix, strlen(prefix));

	st_add(&s, p, n, style);
	do {
		size_t start = i;
		m->fn(m->data, prefix, strlen(prefix), style & MD_BLOCK);
		col = pw;
		while (i < n) {
			size_t l = utf8_char(p + i, n - i, &w);
			if (col + w > m->width && i > start)
				break;
			if (p[i] == '\t')
				w = 1;
			col += w;
			i += l;
		}
		emit_runs(m, &s, start, i);
		line_end(m, 0);
	} while (i < n);
	strbuf_release(&s.text);
	free(s.style);
}

/* Whether `l` is a rule: three or more of one of - * _ with only spaces between. */
static int is_rule(const char *l, size_t n)
{
	char c = 0;
	int count = 0;

	for (size_t i = 0; i < n; i++) {
		if (l[i] == ' ' || l[i] == '\t')
			continue;
		if (!strchr("-*_", l[i]) || (c && l[i] != c))
			return 0;
		c = l[i];
		count++;
	}
	return count >= 3;
}

/* A list item's marker at the start of `l` ("- ", "* ", "+ ", "12. ", "3) "): its length. */
static size_t list_marker(const char *l, size_t n, char *num, size_t numsz)
{
	size_t d = strspn(l, "0123456789");

	if (n >= 2 && strchr("-*+", l[0]) && (l[1] == ' ' || l[1] == '\t')) {
		*num = 0;
		return 2;
	}
	if (d && d < 10 && d + 1 < n && (l[d] == '.' || l[d] == ')') && l[d + 1] == ' ') {
		snprintf(num, numsz, "%.*s.", (int)d, l);
		return d + 2;
	}
	return 0;
}

void markdown_render(const char *src, int width, md_fn fn, void *data)
{
	struct md m = { .fn = fn, .data = data, .width = width < 8 ? 8 : width, .blank = 1,
			.list_indent = -1 };
	const char *p = src;
	char fence[8] = "";
	size_t fence_len = 0;

	strbuf_init(&m.para, 0);
	while (*p) {
		size_t n = strcspn(p, "\n"), ind = strspn(p, " ");
		const char *l = p + ind;
		size_t ln = n > ind ? n - ind : 0;
		char num[16];
		size_t mk;

		if (n && p[n - 1] == '\r')
			n--, ln -= ln > 0;
		if (fence_len) {			/* inside a fenced block */
			size_t run = strspn(l, fence);
			if (run >= fence_len && run + strspn(l + run, " \t") >= ln)
				fence_len = 0;
			else
				verbatim(&m, "  ", p, n, MD_CODE | MD_BLOCK);
		} else if (!ln) {			/* a blank line ends a block */
			para_flush(&m);
			if (!m.blank)
				line_end(&m, 1);
		} else if (ln >= 3 && (!strncmp(l, "```", 3) || !strncmp(l, "~~~", 3))) {
			para_flush(&m);
			fence_len = strspn(l, l[0] == '`' ? "`" : "~");
			if (fence_len >= sizeof(fence))
				fence_len = sizeof(fence) - 1;
			memset(fence, l[0], fence_len);
			fence[fence_len] = 0;
		} else if (l[0] == '#' && strspn(l, "#") <= 6 &&
			   (l[strspn(l, "#")] == ' ' || strspn(l, "#") == ln)) {
			size_t level = strspn(l, "#"), t = level + strspn(l + level, " ");
			size_t tn = ln - t;
			while (tn && (l[t + tn - 1] == '#' || l[t + tn - 1] == ' '))
				tn--;	/* closing hashes */
			para_start(&m, "", "", MD_HEADING | MD_BOLD | (level == 1 ? MD_H1 : 0));
			para_add(&m, l + t, tn);
			para_flush(&m);
		} else if (m.in_para && m.list_indent < 0 && !(m.prefix_style & MD_QUOTE) &&
			   (strspn(l, "=") == ln || (strspn(l, "-") == ln && ln >= 2))) {
			/* setext heading: the paragraph above is its text */
			m.prefix_style = MD_HEADING | MD_BOLD | (l[0] == '=' ? MD_H1 : 0);
			para_flush(&m);
		} else if (is_rule(l, ln)) {
			struct styled s = { STRBUF_INIT, NULL, 0 };
			para_flush(&m);
			for (int i = 0; i < m.width; i++)
				st_add(&s, "\u2500", 3, MD_RULE);
			emit_runs(&m, &s, 0, s.text.len);
			line_end(&m, 0);
			strbuf_release(&s.text);
			free(s.style);
		} else if (l[0] == '>') {
			size_t q = 1 + (ln > 1 && l[1] == ' ');
			if (!m.in_para || !(m.prefix_style & MD_QUOTE))
				para_start(&m, "\u2502 ", "\u2502 ", MD_QUOTE);
			if (ln > q)
				para_add(&m, l + q, ln - q);
		} else if ((mk = list_marker(l, ln, num, sizeof(num)))) {
			char first[96], cont[96];
			int depth = (int)(ind / 2);
			if (depth > 8)
				depth = 8;
			snprintf(first, sizeof(first), "%*s%s ", 2 * depth, "", *num ? num : "\u2022");
			snprintf(cont, sizeof(cont), "%*s", 2 * depth + (*num ? (int)strlen(num) : 1) + 1,
				 "");
			para_start(&m, first, cont, MD_MARKER);
			m.list_indent = (int)(ind + mk);
			para_add(&m, l + mk, ln - mk);
		} else if (l[0] == '|' || (l[0] == '<' && !m.in_para)) {
			para_flush(&m);
			verbatim(&m, "", p, n, 0);
		} else if (ind >= 4 && !m.in_para) {
			verbatim(&m, "  ", p + 4, n - 4, MD_CODE | MD_BLOCK);
		} else {
			/* Text: a new paragraph, or the one above (a list item's too) goes on. */
			if (!m.in_para || (m.prefix_style & MD_QUOTE))
				para_start(&m, "", "", 0);
			para_add(&m, l, ln);
		}
		p += n;
		if (*p == '\r')
			p++;
		if (*p == '\n')
			p++;
	}
	para_flush(&m);
	strbuf_release(&m.para);
}
