/*
 * A kernel's text/html as terminal text (html.h): the tokenizer, entities, and the flow of
 * text into word-wrapped lines; tables are html_table.c's.
 *
 * The tokenizer reads tags, end tags, comments and text, left to right, never going back:
 * a tag's attributes are skipped to its '>' (quoted values with their '>'), a comment to its
 * "-->", the content of <script> and <style> to its end tag, each by one forward search; an
 * unterminated one ends the input. Nothing is kept per open element but a few counters
 * (list depth, <pre>, headings, tables), so 10^5 nested tags cost what 10^5 words do.
 */
#include "html_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <wchar.h>

#include "sanitize.h"

/* ---- tokens ---- */

enum tok { T_END, T_TEXT, T_OPEN, T_CLOSE };

struct token {
	enum tok type;
	const char *text;	/* T_TEXT */
	size_t len;
	char name[16];		/* T_OPEN, T_CLOSE: lower case, cut */
	const char *attrs;	/* T_OPEN: between the name and the '>' */
	size_t alen;
};

struct lexer {
	const char *s;
	size_t len, pos;
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Where `needle` (lower case) first is in s[from..len), case aside; len when nowhere. */
static size_t find_ci(const char *s, size_t len, size_t from, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = from; i + n <= len; i++) {
		const char *p = memchr(s + i, needle[0], len - i);
		if (!p)
			return len;
		i = (size_t)(p - s);
		if (i + n <= len && !strncasecmp(s + i, needle, n))
			return i;
	}
	return len;
}

static void lex_next(struct lexer *lx, struct token *t)
{
	const char *s = lx->s;
	size_t len = lx->len;

	for (;;) {
		size_t p = lx->pos, q;
		int close;

		if (p >= len) {
			t->type = T_END;
			return;
		}
		if (s[p] != '<') {
			const char *lt = memchr(s + p, '<', len - p);
			size_t e = lt ? (size_t)(lt - s) : len;
			t->type = T_TEXT;
			t->text = s + p;
			t->len = e - p;
			lx->pos = e;
			return;
		}
		if (len - p >= 4 && !memcmp(s + p, "<!--", 4)) {
			const char *end = memmem(s + p + 4, len - p - 4, "-->", 3);
			lx->pos = end ? (size_t)(end - s) + 3 : len;
			continue;
		}
		close = p + 1 < len && s[p + 1] == '/';
		q = p + 1 + (size_t)close;
		if (q < len && is_alpha(s[q])) {
			size_t n = 0;
			char quote = 0, last = 0;
			while (q < len && !is_space(s[q]) && s[q] != '>' && s[q] != '/') {
				if (n < sizeof(t->name) - 1)
					t->name[n++] = (char)tolower((unsigned char)s[q]);
				q++;
			}
			t->name[n] = '\0';
			t->attrs = s + q;
			while (q < len && (quote || s[q] != '>')) {	/* to the '>', values skipped */
				if (quote) {
					if (s[q] == quote)
						quote = 0;
				} else if ((s[q] == '"' || s[q] == '\'') && last == '=') {
					quote = s[q];
				}
				if (!is_space(s[q]))
					last = s[q];
				q++;
			}
			t->alen = (size_t)(s + q - t->attrs);
			lx->pos = q < len ? q + 1 : len;
			t->type = close ? T_CLOSE : T_OPEN;
			return;
		}
		if (q < len && (s[q] == '!' || s[q] == '?' || close)) {	/* <!DOCTYPE>, <?xml?>, </ > */
			const char *gt = memchr(s + q, '>', len - q);
			lx->pos = gt ? (size_t)(gt - s) + 1 : len;
			continue;
		}
		t->type = T_TEXT;	/* a '<' that starts nothing */
		t->text = s + p;
		t->len = 1;
		lx->pos = p + 1;
		return;
	}
}

/* Elements whose content is not text to show: skipped to their end tag. */
static int is_raw(const char *name)
{
	return !strcmp(name, "script") || !strcmp(name, "style") || !strcmp(name, "template") ||
	       !strcmp(name, "title") || !strcmp(name, "textarea");
}

/* After the open tag of a raw element: on to its end tag. */
static void skip_raw(struct lexer *lx, const char *name)
{
	char needle[20] = "</";

	strncat(needle, name, sizeof(needle) - 3);
	lx->pos = find_ci(lx->s, lx->len, lx->pos, needle);
}

/* The value of attribute `want` as a number from 1 to 99999, else 1. */
static int attr_int(const char *a, size_t n, const char *want)
{
	size_t i = 0, wl = strlen(want);

	while (i < n) {
		size_t name, nlen, v, vlen;
		char quote = 0;
		while (i < n && (is_space(a[i]) || a[i] == '/'))
			i++;
		name = i;
		while (i < n && !is_space(a[i]) && a[i] != '=' && a[i] != '/')
			i++;
		nlen = i - name;
		while (i < n && is_space(a[i]))
			i++;
		if (i >= n || a[i] != '=') {
			if (!nlen)
				i++;
			continue;
		}
		i++;
		while (i < n && is_space(a[i]))
			i++;
		if (i < n && (a[i] == '"' || a[i] == '\''))
			quote = a[i++];
		v = i;
		while (i < n && (quote ? a[i] != quote : !is_space(a[i])))
			i++;
		vlen = i - v;
		i += quote && i < n;
		if (nlen == wl && !strncasecmp(a + name, want, wl)) {
			int x = 0;
			for (size_t k = 0; k < vlen && k < 5 && a[v + k] >= '0' && a[v + k] <= '9'; k++)
				x = x * 10 + (a[v + k] - '0');
			return x >= 1 ? x : 1;
		}
	}
	return 1;
}

/* ---- entities ---- */

static const struct {
	const char *name;
	unsigned cp;
} entities[] = {
	{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' }, { "apos", '\'' },
	{ "nbsp", 0xa0 }, { "copy", 0xa9 }, { "reg", 0xae }, { "deg", 0xb0 }, { "plusmn", 0xb1 },
	{ "middot", 0xb7 }, { "times", 0xd7 }, { "divide", 0xf7 }, { "ndash", 0x2013 },
	{ "mdash", 0x2014 }, { "lsquo", 0x2018 }, { "rsquo", 0x2019 }, { "ldquo", 0x201c },
	{ "rdquo", 0x201d }, { "bull", 0x2022 }, { "hellip", 0x2026 }, { "euro", 0x20ac },
	{ "larr", 0x2190 }, { "rarr", 0x2192 }, { "le", 0x2264 }, { "ge", 0x2265 },
	{ "ne", 0x2260 }, { "infin", 0x221e },
};

static void put_cp(struct strbuf *sb, unsigned cp)
{
	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	if (cp < 0x80) {
		strbuf_addch(sb, (int)cp);
	} else if (cp < 0x800) {
		strbuf_addch(sb, (int)(0xc0 | cp >> 6));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		strbuf_addch(sb, (int)(0xe0 | cp >> 12));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3f)));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3f)));
	} else {
		strbuf_addch(sb, (int)(0xf0 | cp >> 18));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 12) & 0x3f)));
		strbuf_addch(sb, (int)(0x80 | ((cp >> 6) & 0x3f)));
		strbuf_addch(sb, (int)(0x80 | (cp & 0x3f)));
	}
}

/* One entity at s[0] == '&': its length (0: not one, the '&' is text) and its character. */
static size_t entity(const char *s, size_t len, unsigned *cp)
{
	size_t i = 1, digits = 0;

	if (i < len && s[i] == '#') {
		int hex = ++i < len && (s[i] == 'x' || s[i] == 'X');
		unsigned long v = 0;
		i += (size_t)hex;
		for (; i < len && digits < 8 && isxdigit((unsigned char)s[i]); i++, digits++) {
			int d = isdigit((unsigned char)s[i]) ? s[i] - '0' :
				tolower((unsigned char)s[i]) - 'a' + 10;
			if (!hex && d > 9)
				break;
			v = v * (hex ? 16 : 10) + (unsigned long)d;
		}
		if (!digits)
			return 0;
		*cp = v > 0x10ffff ? 0xfffd : (unsigned)v;
		return i + (i < len && s[i] == ';');
	}
	for (size_t k = 0; k < sizeof(entities) / sizeof(entities[0]); k++) {
		size_t n = strlen(entities[k].name);
		if (len >= n + 2 && !memcmp(s + 1, entities[k].name, n) && s[n + 1] == ';') {
			*cp = entities[k].cp;
			return n + 2;
		}
	}
	return 0;
}

/* ---- the flow of text ---- */

struct render {
	struct html_out o;
	struct sanitizer san;
	struct strbuf decoded, clean;
	struct strbuf line, word;	/* the line being filled, the word being read */
	int col, wcols, started, filled, space;
	int indent;		/* columns before each line of the block */
	struct strbuf marker;	/* a list item's bullet, for its first line */
	int pre, heading, lists, blank_due;
	int ordered[HTML_MAX_INDENT], number[HTML_MAX_INDENT];
	int tables;		/* <table> depth: the outermost is drawn, the inner ones are text */
	struct html_table t;
};

static void line_put(struct render *r)
{
	while (!r->pre && r->line.len && r->line.buf[r->line.len - 1] == ' ')
		r->line.len--;
	html_out_line(&r->o, r->line.buf, r->line.len, r->heading ? "1" : NULL);
	strbuf_reset(&r->line);
	r->col = r->started = r->filled = 0;
}

/* Begin a line: the blank line due before a block, the indent, a list item's bullet. */
static void line_begin(struct render *r)
{
	if (r->started)
		return;
	if (r->blank_due && !r->o.last_blank)
		html_out_line(&r->o, "", 0, NULL);
	r->blank_due = 0;
	r->started = 1;
	for (int i = 0; i < r->indent && i < r->o.width / 2; i++)
		strbuf_addch(&r->line, ' ');
	r->col = r->indent < r->o.width / 2 ? r->indent : r->o.width / 2;
	if (r->marker.len) {
		int back = utf8_columns(r->marker.buf, r->marker.len);
		r->line.len -= (size_t)(back <= r->col ? back : r->col);
		r->line.buf[r->line.len] = '\0';
		strbuf_add(&r->line, r->marker.buf, r->marker.len);
		r->col += back - (back <= r->col ? back : r->col);
		strbuf_reset(&r->marker);
	}
}

static void word_end(struct render *r)
{
	if (!r->word.len) {
		return;
	}
	line_begin(r);
	if (r->filled && r->col + r->space + r->wcols > r->o.width) {
		line_put(r);
		line_begin(r);
	} else if (r->filled && r->space) {
		strbuf_addch(&r->line, ' ');
		r->col++;
	}
	strbuf_add(&r->line, r->word.buf, r->word.len);
	r->col += r->wcols;
	r->filled = 1;
	r->space = 0;
	strbuf_reset(&r->word);
	r->wcols = 0;
}

/* End the line in progress; `blank`: a blank line before the next text. */
static void block(struct render *r, int blank)
{
	word_end(r);
	if (r->started)
		line_put(r);
	r->space = 0;
	if (blank)
		r->blank_due = 1;
}

/* Sanitised text into the flow: words wrapped at the width, or (in <pre>) kept as they are. */
static void flow_text(struct render *r, const char *s, size_t len)
{
	for (size_t i = 0; i < len && !r->o.full;) {
		int w;
		size_t n = utf8_char(s + i, len - i, &w);

		if (r->pre) {
			if (s[i] == '\n') {
				line_begin(r);
				line_put(r);
			} else {
				line_begin(r);
				if (r->col + w > r->o.width && r->col > 0) {
					line_put(r);
					line_begin(r);
				}
				strbuf_add(&r->line, s[i] == '\t' ? " " : s + i, s[i] == '\t' ? 1 : n);
				r->col += s[i] == '\t' ? 1 : w;
			}
		} else if (is_space(s[i])) {
			word_end(r);
			r->space = 1;
		} else {
			strbuf_add(&r->word, s + i, n);
			r->wcols += w;
			if (r->wcols >= r->o.width - r->indent)
				word_end(r);	/* a word as wide as the line: cut */
		}
		i += n;
	}
}

/* Raw text of the HTML: entities decoded, sanitised, into the table or the flow. */
static void text(struct render *r, const char *s, size_t len)
{
	strbuf_reset(&r->decoded);
	strbuf_reset(&r->clean);
	for (size_t i = 0; i < len;) {
		const char *amp = memchr(s + i, '&', len - i);
		size_t e = amp ? (size_t)(amp - s) : len, n;
		unsigned cp;

		strbuf_add(&r->decoded, s + i, e - i);
		if (e >= len)
			break;
		n = entity(s + e, len - e, &cp);
		if (n)
			put_cp(&r->decoded, cp == 0xa0 && r->tables ? ' ' : cp);
		else
			strbuf_addch(&r->decoded, '&');
		i = e + (n ? n : 1);
	}
	sanitize_feed(&r->san, r->decoded.buf, r->decoded.len, &r->clean);
	if (r->tables)
		html_table_text(&r->t, r->clean.buf, r->clean.len);
	else
		flow_text(r, r->clean.buf, r->clean.len);
}

/* ---- elements ---- */

static int is_name(const char *name, const char *list)
{
	size_t n = strlen(name);

	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

#define BLANK_BLOCKS "p pre blockquote hr h1 h2 h3 h4 h5 h6 table dl figure details"
#define LINE_BLOCKS "div br li dt dd section article header footer main nav aside form " \
		    "fieldset address summary center figcaption tr caption ul ol"

/* A tag inside a table: rows and cells of the outermost, a space for the rest. */
static void table_tag(struct render *r, const struct token *t)
{
	const char *n = t->name;
	int open = t->type == T_OPEN;

	if (!strcmp(n, "table")) {
		r->tables += open ? 1 : -1;
		if (r->tables == 0) {
			html_table_render(&r->t, &r->o);
			r->blank_due = 1;
		}
		return;
	}
	if (r->tables > 1) {
		html_table_text(&r->t, " ", 1);
		return;
	}
	if (!strcmp(n, "tr"))
		html_table_row(&r->t, open);
	else if ((!strcmp(n, "td") || !strcmp(n, "th")) && open)
		html_table_cell(&r->t, n[1] == 'h', attr_int(t->attrs, t->alen, "colspan"),
				attr_int(t->attrs, t->alen, "rowspan"));
	else if (!strcmp(n, "td") || !strcmp(n, "th"))
		html_table_end_cell(&r->t);
	else if (!strcmp(n, "thead")) {
		html_table_row(&r->t, 0);
		r->t.in_thead = open;
	} else if (!strcmp(n, "tbody") || !strcmp(n, "tfoot")) {
		html_table_row(&r->t, 0);
		r->t.in_thead = 0;
	} else if (!strcmp(n, "caption")) {
		html_table_end_cell(&r->t);
		r->t.in_caption = open;
	} else {
		html_table_text(&r->t, " ", 1);
	}
}

static void list_item(struct render *r)
{
	int level = (r->lists < HTML_MAX_INDENT ? r->lists : HTML_MAX_INDENT) - 1;

	block(r, 0);
	strbuf_reset(&r->marker);
	if (level >= 0 && r->ordered[level])
		strbuf_addf(&r->marker, "%d. ", ++r->number[level] % 100000);
	else
		strbuf_addstr(&r->marker, "\u2022 ");
	r->indent = 2 * (level + 1) + utf8_columns(r->marker.buf, r->marker.len);
}

static void tag(struct render *r, struct lexer *lx, const struct token *t)
{
	const char *n = t->name;
	int open = t->type == T_OPEN;

	if (open && is_raw(n)) {
		skip_raw(lx, n);
		return;
	}
	if (r->tables || (open && !strcmp(n, "table"))) {
		if (!r->tables)
			block(r, 1);
		table_tag(r, t);
		return;
	}
	if (!strcmp(n, "br")) {
		word_end(r);
		line_begin(r);
		line_put(r);
		return;
	}
	if ((!strcmp(n, "ul") || !strcmp(n, "ol")) && (open || r->lists > 0)) {
		r->lists += open ? 1 : -1;
		if (open && r->lists <= HTML_MAX_INDENT) {
			r->ordered[r->lists - 1] = n[0] == 'o';
			r->number[r->lists - 1] = 0;
		}
		block(r, r->lists == 0 || (open && r->lists == 1));
		r->indent = 2 * (r->lists < HTML_MAX_INDENT ? r->lists : HTML_MAX_INDENT);
		return;
	}
	if (!strcmp(n, "li") && open) {
		list_item(r);
		return;
	}
	if (!strcmp(n, "pre")) {
		block(r, 1);
		r->pre += open ? 1 : -(r->pre > 0);
		return;
	}
	if (n[0] == 'h' && n[1] >= '1' && n[1] <= '6' && !n[2]) {
		block(r, 1);
		r->heading += open ? 1 : -(r->heading > 0);
		return;
	}
	if (!strcmp(n, "hr")) {
		struct strbuf rule = STRBUF_INIT;
		block(r, 1);
		for (int i = 0; i < r->o.width && i < 40; i++)
			strbuf_addstr(&rule, "\u2500");
		line_begin(r);
		r->started = 0;
		html_out_line(&r->o, rule.buf, rule.len, "2");
		strbuf_release(&rule);
		strbuf_reset(&r->line);
		r->blank_due = 1;
		return;
	}
	if (is_name(n, BLANK_BLOCKS))
		block(r, 1);
	else if (is_name(n, LINE_BLOCKS))
		block(r, 0);
	else if (!strcmp(n, "td") || !strcmp(n, "th"))
		r->space = 1;	/* a cell outside a table: words apart */
}

/* Read the HTML, calling `tag` and `text` for what it holds, until the end or the cap. */
static void run(struct render *r, const char *src, size_t len)
{
	struct lexer lx = { src, len, 0 };
	struct token t;

	for (lex_next(&lx, &t); t.type != T_END && !r->o.full; lex_next(&lx, &t)) {
		if (t.type == T_TEXT)
			text(r, t.text, t.len);
		else
			tag(r, &lx, &t);
	}
}

void html_render(const char *src, size_t len, int width, unsigned flags, struct strbuf *out)
{
	struct render r;
	size_t n = len > HTML_MAX_INPUT ? HTML_MAX_INPUT : len;

	memset(&r, 0, sizeof(r));
	r.o.out = out;
	r.o.flags = flags;
	r.o.width = width < 20 ? 20 : width;
	r.o.last_blank = 1;
	sanitize_init(&r.san, SAN_NO_CR);
	strbuf_init(&r.decoded, 0);
	strbuf_init(&r.clean, 0);
	strbuf_init(&r.line, 0);
	strbuf_init(&r.word, 0);
	strbuf_init(&r.marker, 0);
	html_table_init(&r.t);
	run(&r, src, n);
	strbuf_reset(&r.clean);
	sanitize_finish(&r.san, &r.clean);
	if (r.tables)
		html_table_text(&r.t, r.clean.buf, r.clean.len);
	else
		flow_text(&r, r.clean.buf, r.clean.len);
	if (r.tables)
		html_table_render(&r.t, &r.o);
	block(&r, 0);
	if (n < len && !r.o.full)
		html_out_line(&r.o, "", 0, NULL);
	if (n < len && !r.o.full)
		strbuf_addf(out, "[html: %zu bytes past %zu not read]\n", len - n, n);
	sanitize_release(&r.san);
	strbuf_release(&r.decoded);
	strbuf_release(&r.clean);
	strbuf_release(&r.line);
	strbuf_release(&r.word);
	strbuf_release(&r.marker);
	html_table_release(&r.t);
}

int html_has_table(const char *src, size_t len)
{
	struct lexer lx = { src, len > HTML_MAX_INPUT ? HTML_MAX_INPUT : len, 0 };
	struct token t;

	for (lex_next(&lx, &t); t.type != T_END; lex_next(&lx, &t)) {
		if (t.type == T_OPEN && !strcmp(t.name, "table"))
			return 1;
		if (t.type == T_OPEN && is_raw(t.name))
			skip_raw(&lx, t.name);
	}
	return 0;
}
