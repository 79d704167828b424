#ifndef CELLBOX_HIGHLIGHT_H
#define CELLBOX_HIGHLIGHT_H

/*
 * A syntax highlighter for the editor and the In [n] code in the output pane: it gives each
 * byte of a line a class. Python by default: the tokens come from the engine's Python
 * tokenizer (pylex.h), the one the security policy reads cells with; IPython's line magics
 * (%...) and shell escapes (!...) at the start of a line are a class of their own. R after
 * highlight_set_language("R") (highlight_r.c): its strings span lines, raw strings r"(...)", names
 * with dots, %op% operators as builtins. Lines are highlighted in order; the state carried
 * from one line to the next says whether a string is still open.
 */

#include <stddef.h>

enum hl_class {
	HL_TEXT,
	HL_KEYWORD,
	HL_BUILTIN,
	HL_STRING,
	HL_NUMBER,
	HL_COMMENT,
	HL_DECORATOR,
	HL_MAGIC,
	HL_NCLASSES,
};

enum {
	HL_STATE_NORMAL = 0,
	HL_STATE_TRIPLE_SINGLE = 1,	/* inside ''' */
	HL_STATE_TRIPLE_DOUBLE = 2,	/* inside """ */
};

/* Classify `len` bytes of one line (no '\n') into cls[0..len); returns the next line's state. */
int highlight_line(const char *s, size_t len, int state, unsigned char *cls);
/* Which language highlight_line() highlights from now on: "python" (the default) or "R". */
void highlight_set_language(const char *language);
/* R's highlighter (what highlight_line() does after highlight_set_language("R")). */
int highlight_line_r(const char *s, size_t len, int state, unsigned char *cls);
/* Name of a class as themes spell it after "syntax-" ("keyword", ...). */
const char *highlight_class_name(enum hl_class c);

#endif
