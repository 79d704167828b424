/*
 * Rich outputs as the output pane shows them, at the pane's width: a bundle's text/markdown
 * rendered (headings, emphasis, code, lists) as text with SGR styles, or its text/html as
 * text (html.h: tables as aligned columns), when that is what a user wants to read; else its
 * text/plain. Which:
 *
 *   | the bundle has                                    | shown         |
 *   |---------------------------------------------------|---------------|
 *   | text/markdown, and no text/plain or only          | text/markdown |
 *   |   "<... object>" (display(Markdown(...)))         |               |
 *   | text/html with a <table> (a DataFrame, df.style,  | text/html     |
 *   |   an R data.frame or matrix)                      |               |
 *   | text/html, and no text/plain                      | text/html     |
 *   | text/html, and text/plain only "<... object>"     | text/html     |
 *   |   (display(HTML(...)), an object with no repr)    |               |
 *   | a text/plain of the object's own                  | text/plain    |
 *   |   (an R vector beside repr's markdown and HTML)   |               |
 *
 * An object's own text repr is written for a terminal (jupyter-console shows only it) and
 * its HTML, when not a table, is mostly styling and widgets meant for a browser (an sklearn
 * estimator's diagram, a progress bar); euporie renders HTML with CSS, which a text pane
 * cannot. The markdown and the HTML are the kernel's: their renderers are made for hostile
 * input, and what they write goes through the pane's SGR reader like any output.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "markdown.h"

/* A run of rendered markdown: its style as SGR, then its text. */
static void md_sgr(void *data, const char *s, size_t len, unsigned style)
{
	struct strbuf *out = data;

	if (!s) {
		strbuf_addch(out, '\n');
		return;
	}
	strbuf_addstr(out, "\x1b[0");
	if (style & (MD_BOLD | MD_HEADING))
		strbuf_addstr(out, ";1");
	if (style & MD_ITALIC)
		strbuf_addstr(out, ";3");
	if (style & (MD_H1 | MD_LINK))
		strbuf_addstr(out, ";4");
	if (style & (MD_URL | MD_QUOTE | MD_RULE | MD_MARKER))
		strbuf_addstr(out, ";2");
	if (style & (MD_CODE | MD_BLOCK))
		strbuf_addstr(out, ";36");
	strbuf_addch(out, 'm');
	strbuf_add(out, s, len);
	strbuf_addstr(out, "\x1b[0m");
}

/* A bundle's value for `mime`: a string, or an array of strings joined (as nbformat stores). */
static char *mime_text(const cJSON *data, const char *mime)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, mime), *part;
	struct strbuf sb = STRBUF_INIT;

	if (cJSON_IsString(v))
		return xstrdup(v->valuestring);
	if (!cJSON_IsArray(v))
		return NULL;
	cJSON_ArrayForEach(part, v)
		if (cJSON_IsString(part))
			strbuf_addstr(&sb, part->valuestring);
	return strbuf_detach(&sb, NULL);
}

/* A text/plain that says nothing but the object's type: "<IPython.core.display.HTML object>",
 * "<__main__.R at 0x7f...>". */
static int default_repr(const char *text)
{
	size_t n = strlen(text);

	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		n--;
	if (n < 9 || text[0] != '<' || text[n - 1] != '>' || memchr(text, '\n', n))
		return 0;
	return strstr(text, " object>") == text + n - 8 || strstr(text, " at 0x") != NULL;
}

char *ui_rich_bundle(const struct ui *ui, const cJSON *data, const char *plain)
{
	char *md = data ? mime_text(data, "text/markdown") : NULL, *html = NULL;
	int width = ui->panes[P_OUTPUT].w - 2;
	struct strbuf out = STRBUF_INIT;

	width = width < 20 ? 20 : width > 160 ? 160 : width;
	if (md && (!plain || default_repr(plain))) {
		markdown_render(md, width, md_sgr, &out);
		free(md);
		return strbuf_detach(&out, NULL);
	}
	free(md);
	html = data ? mime_text(data, "text/html") : NULL;
	if (html && (!plain || default_repr(plain) || html_has_table(html, strlen(html)))) {
		html_render(html, strlen(html), width, HTML_SGR, &out);
		free(html);
		return strbuf_detach(&out, NULL);
	}
	free(html);
	return plain ? xasprintf("%s\n", plain) : NULL;
}

char *ui_rich_text(const struct ui *ui, const struct session_ev_rich *r)
{
	return ui_rich_bundle(ui, r->data, r->text);
}
