/*
 * A kernel's text/html as text (tui/ui/html.c): a pandas DataFrame's table, paragraphs,
 * headings, lists, <br>, <pre>, entities, script and style dropped; and the hostile cases:
 * escapes in cells and entities, deep nesting, a huge attribute, unterminated everything,
 * each cap (rows, columns, cell width, lines, input).
 */
#include <locale.h>
#include <time.h>

#include "tap.h"
#include "html_int.h"	/* utf8_columns() */
#include "sanitize.h"

/* Render `html` at `width` without SGR; the caller frees. Checks the output is clean text. */
static char *render(const char *html, size_t len, int width)
{
	struct strbuf out = STRBUF_INIT;

	html_render(html, len, width, 0, &out);
	CHECK(sanitize_is_clean(out.buf, out.len, SAN_NO_CR));
	return strbuf_detach(&out, NULL);
}

static char *render_str(const char *html, int width)
{
	return render(html, strlen(html), width);
}

/* The line `n` (0-based) of `s`, into buf. */
static const char *line_of(const char *s, int n, char *buf, size_t size)
{
	const char *e;

	while (n-- > 0 && (s = strchr(s, '\n')))
		s++;
	if (!s)
		return "";
	e = strchrnul(s, '\n');
	snprintf(buf, size, "%.*s", (int)(e - s), s);
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static const char *dataframe =
	"<div>\n<style scoped>\n    .dataframe tbody tr th:only-of-type {\n"
	"        vertical-align: middle;\n    }\n</style>\n"
	"<table border=\"1\" class=\"dataframe\">\n  <thead>\n"
	"    <tr style=\"text-align: right;\">\n      <th></th>\n      <th>name</th>\n"
	"      <th>score</th>\n    </tr>\n  </thead>\n  <tbody>\n"
	"    <tr>\n      <th>0</th>\n      <td>alice &amp; bob</td>\n      <td>1.5</td>\n"
	"    </tr>\n    <tr>\n      <th>1</th>\n      <td>carol</td>\n      <td>-22.25</td>\n"
	"    </tr>\n  </tbody>\n</table>\n</div>";

static void test_dataframe(void)
{
	char *s = render_str(dataframe, 80), buf[256];

	tap_note(s);
	CHECK_STR(line_of(s, 0, buf, sizeof(buf)), "   name         score");
	CHECK_STR(line_of(s, 1, buf, sizeof(buf)),
		  "\u2500  \u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500"
		  "  \u2500\u2500\u2500\u2500\u2500\u2500");
	CHECK_STR(line_of(s, 2, buf, sizeof(buf)), "0  alice & bob     1.5");
	CHECK_STR(line_of(s, 3, buf, sizeof(buf)), "1  carol        -22.25");
	CHECK(count_lines(s) == 4);
	CHECK(!strstr(s, "vertical-align"));
	free(s);
	CHECK(html_has_table(dataframe, strlen(dataframe)));
	CHECK(!html_has_table("<b>x</b><!-- <table> --><script><table></script>", 48));
}

static void test_text(void)
{
	char *s = render_str("<h2>Title</h2><p>one   two\nthree</p><p>a<br>b &lt;c&gt; &#x41;&#66;"
			     "&nbsp;&bogus; &</p><ul><li>first</li><li>second<ol><li>x</li>"
			     "<li>y</li></ol></li></ul><pre>  keep\n    this</pre><b>after</b>"
			     "<script>alert('no')</script><style>p{}</style><!-- gone -->end", 40);
	const char *want =
		"Title\n\none two three\n\na\nb <c> AB\u00a0&bogus; &\n\n"
		"  \u2022 first\n  \u2022 second\n    1. x\n    2. y\n\n"
		"  keep\n    this\n\nafterend\n";

	tap_note(s);
	CHECK_STR(s, want);
	free(s);
	s = render_str("<p>the quick brown fox jumps over the lazy dog again and again</p>", 20);
	CHECK_STR(s, "the quick brown fox\njumps over the lazy\ndog again and again\n");
	free(s);
}

/* What a kernel can put in a cell or an entity never reaches the terminal as an escape. */
static void test_escapes(void)
{
	char *s = render_str("<table><tr><th>a\x1b]0;HACKED\x07</th><th>b</th></tr>"
			     "<tr><td>\x1b[2Jx\x1b[31m</td><td>&#27;[H&#x9b;2J&#0;&#xd800;"
			     "&#99999999;y</td></tr></table><p>\x1b]52;c;aGk=\x07ok\r\x1b" "c</p>", 60);

	tap_note(s);
	CHECK(!strchr(s, '\x1b'));
	CHECK(!strstr(s, "HACKED"));
	CHECK(!strstr(s, "\xc2\x9b"));
	CHECK(strstr(s, "x") && strstr(s, "2J") && strstr(s, "y"));	/* the escapes went whole */
	free(s);
	/* with HTML_SGR, the only escapes are the renderer's own SGR */
	{
		struct strbuf out = STRBUF_INIT;
		html_render("<h1>\x1b[5mhead</h1><table><tr><th>\x1b[8mh</th></tr><tr><td>1</td>"
			    "</tr></table>", 71, 40, HTML_SGR, &out);
		CHECK(sanitize_is_clean(out.buf, out.len, SAN_KEEP_SGR | SAN_NO_CR));
		CHECK(!strstr(out.buf, "[5m") && !strstr(out.buf, "[8m"));
		CHECK(strstr(out.buf, "\x1b[1mhead\x1b[0m") != NULL);
		strbuf_release(&out);
	}
}

static void test_table_caps(void)
{
	struct strbuf h = STRBUF_INIT;
	char *s, buf[512];

	strbuf_addstr(&h, "<table><tr>");
	for (int c = 0; c < HTML_MAX_COLS + 5; c++)
		strbuf_addf(&h, "<th>c%d</th>", c);
	for (int r = 0; r < HTML_MAX_ROWS + 7; r++) {
		strbuf_addstr(&h, "<tr>");
		for (int c = 0; c < HTML_MAX_COLS + 5; c++)
			strbuf_addf(&h, "<td>%d</td>", r);
	}
	s = render(h.buf, h.len, 200);
	CHECK(count_lines(s) == 1 + 1 + HTML_MAX_ROWS + 1);
	CHECK(strstr(s, "... 7 more rows, ") != NULL);
	CHECK(strstr(s, " more columns\n") != NULL);
	free(s);
	/* a long cell: cut with an ellipsis at HTML_CELL_COLS; the table fits the width */
	strbuf_reset(&h);
	strbuf_addstr(&h, "<table><tr><td>");
	for (int i = 0; i < 100000; i++)
		strbuf_addstr(&h, "word ");
	strbuf_addstr(&h, "</td><td>second cell here</td></tr><tr><td>x</td><td>y</td></tr></table>");
	s = render(h.buf, h.len, 30);
	tap_note(s);
	line_of(s, 0, buf, sizeof(buf));
	CHECK(strstr(buf, "\u2026") != NULL);
	CHECK(utf8_columns(buf, strlen(buf)) <= 30);
	free(s);
	/* colspan and rowspan (pandas' MultiIndex) keep the columns in place */
	s = render_str("<table><tr><th rowspan=\"2\">a</th><td>1</td></tr><tr><td>2</td></tr>"
		       "<tr><th colspan=2>wide</th><td>3</td></tr></table>", 40);
	tap_note(s);
	CHECK_STR(line_of(s, 1, buf, sizeof(buf)), "      2");
	CHECK_STR(line_of(s, 2, buf, sizeof(buf)), "wide     3");
	free(s);
	strbuf_release(&h);
}

/* Hostile shapes: each is read in bounded time and output. */
static void test_hostile(void)
{
	struct strbuf h = STRBUF_INIT;
	char *s, note[64];
	clock_t t0 = clock();

	for (int i = 0; i < 100000; i++)
		strbuf_addstr(&h, "<div><ul><li><table><tr><td><pre><h1>");
	strbuf_addstr(&h, "deep");
	s = render(h.buf, h.len, 80);
	CHECK(strstr(s, "deep") || strstr(s, "not read"));
	free(s);
	/* a 10 MB attribute: past the input cap, not read */
	strbuf_reset(&h);
	strbuf_addstr(&h, "<p>before</p><a title=\"");
	for (int i = 0; i < 10 << 20; i += 16)
		strbuf_addstr(&h, ">x<tr><td>&amp;\x1b[");
	strbuf_addstr(&h, "\">link</a>");
	s = render(h.buf, h.len, 80);
	tap_note(s);
	CHECK(!strncmp(s, "before\n", 7));
	CHECK(strstr(s, "bytes past 1048576 not read") != NULL);
	CHECK(count_lines(s) <= 3);
	free(s);
	/* unterminated: a tag, a comment, a script, a quote; 10^5 lines of <br> */
	s = render_str("a<b c='>", 80);
	CHECK_STR(s, "a\n");
	free(s);
	s = render_str("a<!-- b", 80);
	CHECK_STR(s, "a\n");
	free(s);
	s = render_str("a<script>b", 80);
	CHECK_STR(s, "a\n");
	free(s);
	s = render_str("x < y &#x; <3 </ >z", 80);
	CHECK_STR(s, "x < y &#x; <3 z\n");
	free(s);
	strbuf_reset(&h);
	for (int i = 0; i < 100000; i++)
		strbuf_addstr(&h, "l<br>");
	s = render(h.buf, h.len, 80);
	CHECK(count_lines(s) == HTML_MAX_LINES + 1);
	CHECK(strstr(s, "[html: more than 2000 lines") != NULL);
	free(s);
	snprintf(note, sizeof(note), "hostile cases: %.2f s of CPU",
		 (double)(clock() - t0) / CLOCKS_PER_SEC);
	tap_note(note);
	CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 10);
	strbuf_release(&h);
}

static const struct tap_test tests[] = {
	{ "html_dataframe", test_dataframe },
	{ "html_text", test_text },
	{ "html_escapes", test_escapes },
	{ "html_table_caps", test_table_caps },
	{ "html_hostile", test_hostile },
};

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "C.UTF-8");
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
