#ifndef CELLBOX_MARKDOWN_H
#define CELLBOX_MARKDOWN_H

/*
 * Markdown cells drawn as terminal text: headings, emphasis, code spans and fenced or
 * indented code blocks, bullet and numbered lists, block quotes, rules, links and images as
 * text ("text (url)"), tables and HTML as they are. Paragraphs are joined and word-wrapped to
 * the width; code blocks and tables are not reflowed (long lines wrap where they must).
 *
 * The renderer calls `fn` for each run of text in one style, in order, and with `s` NULL at
 * the end of each display line:
 *
 *	markdown_render(source, 72, emit, &ctx);
 *
 * Styles are MD_* bits (a heading's emphasis is MD_HEADING | MD_BOLD ...). No terminal code.
 */

#include <stddef.h>

enum {
	MD_BOLD = 1 << 0,
	MD_ITALIC = 1 << 1,
	MD_CODE = 1 << 2,	/* a code span or a code block */
	MD_LINK = 1 << 3,	/* a link's text */
	MD_URL = 1 << 4,	/* a link's target, shown after its text */
	MD_HEADING = 1 << 5,	/* with MD_H1 for a top-level heading */
	MD_H1 = 1 << 6,
	MD_QUOTE = 1 << 7,	/* a block quote's bar */
	MD_RULE = 1 << 8,
	MD_MARKER = 1 << 9,	/* a list's bullet or number */
	MD_BLOCK = 1 << 10,	/* a code block's line */
};

typedef void (*md_fn)(void *data, const char *s, size_t len, unsigned style);

/* Render markdown `src` at `width` columns (at least 8). */
void markdown_render(const char *src, int width, md_fn fn, void *data);

#endif
