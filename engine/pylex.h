#ifndef CELLBOX_PYLEX_H
#define CELLBOX_PYLEX_H

/*
 * A Python tokenizer: the one the security policy reads cells with and the full-screen UI
 * highlights them with. It follows Python's own tokenizer where the two could disagree about
 * what is code: string prefixes, triple quotes, backslash continuations, brackets that join
 * lines, and f-strings whose replacement fields hold code (with the nesting of Python 3.12,
 * a superset of what 3.11 accepts).
 *
 *	struct pylex lx;
 *	struct py_token t;
 *	pylex_init(&lx, text, len);
 *	while (pylex_next(&lx, &t) != PY_END)
 *		... t.type, text[t.start .. t.end) ...
 *
 * Offsets are bytes into the text. The tokenizer never fails: what Python would reject comes
 * out as PY_ERROR tokens (a lone `!`, `?`, `$`) or as a string flagged PY_STR_OPEN.
 */

#include <stddef.h>

enum py_tok {
	PY_END,
	PY_NAME,	/* identifiers and keywords (bytes >= 0x80 count as letters) */
	PY_NUMBER,
	PY_STRING,	/* a whole literal, prefix and quotes included */
	PY_OP,		/* operators and delimiters, longest match as Python makes them */
	PY_COMMENT,	/* from `#` to the end of the line */
	PY_NEWLINE,	/* the end of a logical line */
	PY_NL,		/* a line break that does not end a logical line (brackets, blank lines) */
	PY_ERROR,	/* one character Python has no token for: `!`, `?`, `$`, a backtick */
};

/* Flags of a PY_STRING token. */
enum {
	PY_STR_RAW = 1 << 0,
	PY_STR_BYTES = 1 << 1,
	PY_STR_F = 1 << 2,	/* f-string (or t-string): {fields} hold code */
	PY_STR_TRIPLE = 1 << 3,
	PY_STR_OPEN = 1 << 4,	/* not closed: ran to the end of the line (or text, when triple) */
};

struct py_token {
	enum py_tok type;
	size_t start, end;	/* the token is text[start .. end) */
	unsigned flags;		/* PY_STR_* */
	size_t body, body_end;	/* strings: the part between the quotes */
	char quote;		/* strings: ' or " */
	int line_first;		/* the first token of a logical line (after indentation) */
};

struct pylex {
	const char *s;
	size_t len, pos;
	int depth;		/* open brackets */
	int line_first;		/* the next token starts a logical line */
	int line_has_tokens;	/* the logical line so far has a token (NEWLINE vs NL) */
};

void pylex_init(struct pylex *lx, const char *s, size_t len);
/* The next token into *t; returns its type (PY_END at the end, again and again). */
enum py_tok pylex_next(struct pylex *lx, struct py_token *t);
/*
 * Take the rest of the physical line from the current position as raw text, with the lines
 * that backslash continuations join to it (how IPython reads `!cmd` and `%magic`). Returns
 * the end offset (before the final newline); the next token starts a logical line.
 */
size_t pylex_skip_line(struct pylex *lx);

/*
 * Where a string literal whose opening quote(s) end at `i` closes: returns the offset after
 * the closing quote(s), or `len` with *open set when it runs on (a one-quote string stops at
 * the end of its line, leaving the newline). f-strings skip their replacement fields, so a
 * quote inside a field does not close them.
 */
size_t pylex_string_end(const char *s, size_t len, size_t i, char quote, unsigned flags,
			int *open);
/*
 * The replacement fields of an f-string token, one per call: *pos starts at t->body (and is
 * advanced); the field's code is s[*fs .. *fe) between its braces (format spec included).
 * Returns 1 for a field, 0 when there are no more.
 */
int pylex_fstring_field(const char *s, const struct py_token *t, size_t *pos, size_t *fs,
			size_t *fe);
/*
 * Python reads identifiers in their NFKC form: `ｏｓ` (fullwidth) is `os`, `ſys` is `sys`. The
 * ASCII that the character at s[i] (UTF-8, *n bytes long) becomes in an identifier, *out_len
 * bytes of it; NULL when it does not become ASCII.
 */
const char *pylex_fold(const char *s, size_t len, size_t i, size_t *n, size_t *out_len);
/* Whether `name[0..n)` is a Python keyword (soft keywords included). */
int pylex_is_keyword(const char *name, size_t n);

#endif
