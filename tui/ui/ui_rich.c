/*
 * Rich outputs as the output pane shows them: a bundle's text/markdown rendered (headings,
 * emphasis, code, lists) as text with SGR styles, at the pane's width; else its text/plain.
 * The markdown is the kernel's: the renderer reads it as it reads a notebook's cells, and
 * what it writes goes through the pane's SGR reader like any output.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

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

char *ui_rich_text(const struct ui *ui, const struct session_ev_rich *r)
{
	char *md = r->data ? mime_text(r->data, "text/markdown") : NULL;
	int width = ui->panes[P_OUTPUT].w - 2;
	struct strbuf out = STRBUF_INIT;

	if (!md)
		return r->text ? xasprintf("%s\n", r->text) : NULL;
	markdown_render(md, width < 20 ? 20 : width > 160 ? 160 : width, md_sgr, &out);
	free(md);
	return strbuf_detach(&out, NULL);
}
