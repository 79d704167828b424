#ifndef CELLBOX_HTML_H
#define CELLBOX_HTML_H

/*
 * A kernel's text/html as terminal text: tables as aligned columns under a header rule,
 * paragraphs word-wrapped to the width, headings, lists, <br>, <pre> kept as it is, entities
 * decoded; <script>, <style> and comments dropped whole; every other tag is its text.
 *
 * The HTML is the kernel's, so this is a reader made for hostile input: a tokenizer of its
 * own (no tree, no recursion) that reads each byte a bounded number of times, with hard caps:
 *
 *   | cap             | value            | past it                                     |
 *   |-----------------|------------------|---------------------------------------------|
 *   | input           | HTML_MAX_INPUT   | not read; a note says how many bytes        |
 *   | list nesting    | HTML_MAX_INDENT  | deeper lists keep that indent               |
 *   | table rows      | HTML_MAX_ROWS    | counted: "... k more rows"                  |
 *   | table columns   | HTML_MAX_COLS    | counted: "... k more columns"               |
 *   | a cell's text   | HTML_CELL_BYTES  | cut; a cell is shown in at most             |
 *   |                 | HTML_CELL_COLS   | columns, cut with an ellipsis               |
 *   | output lines    | HTML_MAX_LINES   | a note ends the text                        |
 *
 * Every piece of text goes through the sanitiser (engine/sanitize.h, SAN_NO_CR) before it is
 * measured or placed, so what comes out holds no escape or control of the kernel's: only
 * text, newlines, and (HTML_SGR) bold and dim SGR sequences of this file's own.
 *
 *	html_render(html, strlen(html), 80, HTML_SGR, &out);
 */

#include <stddef.h>
#include "util.h"

#define HTML_MAX_INPUT ((size_t)1 << 20)
#define HTML_MAX_INDENT 8	/* list levels indented */
#define HTML_MAX_ROWS 100	/* body rows of a table shown (and 8 header rows) */
#define HTML_MAX_COLS 32
#define HTML_CELL_BYTES 512
#define HTML_CELL_COLS 40
#define HTML_MAX_LINES 2000

enum {
	HTML_SGR = 1 << 0,	/* headings and header rows bold, rules dim */
};

/* Render `src[0..len)` at `width` columns (at least 20), appending to `out`. */
void html_render(const char *src, size_t len, int width, unsigned flags, struct strbuf *out);
/* Whether the HTML holds a <table> (outside comments, scripts, styles; in the capped input). */
int html_has_table(const char *src, size_t len);

#endif
