#ifndef CELLBOX_EDBUF_H
#define CELLBOX_EDBUF_H

/*
 * The text of the cell being written, with a cursor: one UTF-8 buffer, the cursor a byte
 * offset that always sits on a character boundary. Lines are separated by '\n'. Columns are
 * counted in code points (the kernel's cursor_pos is in code points too). No terminal code.
 */

#include <stddef.h>
#include "util.h"

#define EDBUF_MAX ((size_t)1 << 20)	/* insertions past this size are refused */
#define EDBUF_UNDO_STEPS 200		/* undo steps kept (the oldest go first) ... */
#define EDBUF_UNDO_BYTES ((size_t)8 << 20)	/* ... and the bytes they may hold */

/* A state of the text to go back to: the text and its cursor (prompt_toolkit keeps these). */
struct edbuf_step {
	char *text;
	size_t len, cur;
};

/* Steps one way (undo) or the other (redo), newest last. */
struct edbuf_steps {
	struct edbuf_step *v;
	size_t n, alloc, bytes;
};

struct edbuf {
	struct strbuf text;
	size_t cur;		/* byte offset of the cursor */
	long goal;		/* column Up/Down aim for; -1 = the cursor's */
	const char *indent;	/* one indent level ["    "] */
	const char *openers;	/* a line ending in one of these indents the next [":"] */
	/*
	 * Undo and redo. Every change saves the text as it was before; changes of one kind in a
	 * row with the cursor where the last one left it (characters typed, Backspaces, Deletes)
	 * save once, so one undo takes back a typed word or line, as in IPython.
	 */
	struct edbuf_steps undo, redo;
	int group;		/* the kind of the last change (enum in edbuf.c), 0: none */
	size_t group_at;	/* where it left the cursor */
	/*
	 * The selection: from the anchor to the cursor (either way), when the anchor is set
	 * (>= 0). Every change of the text drops it; typing, a paste, Enter, Backspace and
	 * Delete at a selection replace or delete it, as one undo step.
	 */
	long anchor;
	/*
	 * Where the text of a kill goes (Ctrl-K, Ctrl-U, the word kills, a cut selection), in
	 * place of what was there, as readline's kill ring of one: the caller's clipboard, or NULL.
	 */
	struct strbuf *kills;
};

void edbuf_init(struct edbuf *e);
void edbuf_release(struct edbuf *e);
/* Replace the text, cursor at the end (a step undo takes back). */
void edbuf_set(struct edbuf *e, const char *text);
/* Replace the text, cursor at the end, and forget the undo history (a new cell). */
void edbuf_load(struct edbuf *e, const char *text);
/* Undo the last change / redo the last undone one; 0 when there is none. */
int edbuf_undo(struct edbuf *e);
int edbuf_redo(struct edbuf *e);
/* Insert bytes at the cursor (in place of the selection); -1 (nothing done) past EDBUF_MAX. */
int edbuf_insert(struct edbuf *e, const char *s, size_t len);
/* Insert a newline, indented like the current line, one level more after an opener (':'). */
void edbuf_newline(struct edbuf *e, int autoindent);
/* Delete the selection, else the character before the cursor (an indent level in blanks). */
int edbuf_backspace(struct edbuf *e);
/* Delete the character under the cursor, or the selection. */
int edbuf_delete(struct edbuf *e);
/* Set the anchor at the cursor unless one is set (a Shift-motion extends from it). */
void edbuf_mark(struct edbuf *e);
/* Drop the anchor: no selection. */
void edbuf_unmark(struct edbuf *e);
/* The selection's bytes [*from, *to): 1 when there is a selection of at least one byte. */
int edbuf_selection(const struct edbuf *e, size_t *from, size_t *to);
/* Delete the selection as one undo step (a kill); 0 when there is none. */
int edbuf_cut_selection(struct edbuf *e);
/* Cursor movement: each returns 0 when the cursor could not move. */
int edbuf_left(struct edbuf *e);
int edbuf_right(struct edbuf *e);
int edbuf_up(struct edbuf *e);
int edbuf_down(struct edbuf *e);
void edbuf_home(struct edbuf *e);
void edbuf_end(struct edbuf *e);
/* Delete from the cursor to the end of the line (Ctrl-K) or from its start (Ctrl-U). */
void edbuf_kill_right(struct edbuf *e);
void edbuf_kill_left(struct edbuf *e);
/*
 * Words, as readline's and IPython's: a word is a run of letters, digits and '_' (any byte of
 * a multibyte character counts as a letter). Back: to the start of the word before the
 * cursor; forward: to the end of the word after it. Each returns 0 when it could not move.
 */
int edbuf_word_left(struct edbuf *e);
int edbuf_word_right(struct edbuf *e);
/*
 * Delete to the start of the word before the cursor (Ctrl-/Alt-Backspace), or with `bigword`
 * back to the blank before it (Ctrl-W, readline's unix-word-rubout).
 */
int edbuf_kill_word_left(struct edbuf *e, int bigword);
/* Delete to the end of the word after the cursor (Alt-D). */
int edbuf_kill_word_right(struct edbuf *e);
/* The cursor's line (0-based) and column in code points; the number of lines. */
size_t edbuf_line(const struct edbuf *e);
size_t edbuf_col(const struct edbuf *e);
size_t edbuf_lines(const struct edbuf *e);
/* Byte offset where line `n` starts (the end of the text past the last line). */
size_t edbuf_line_start(const struct edbuf *e, size_t n);
/* The cursor as a code-point offset from the start of the text. */
size_t edbuf_cursor_cp(const struct edbuf *e);
/* Byte offset of code point `cp` (clamped to the end). */
size_t edbuf_cp_to_byte(const struct edbuf *e, size_t cp);
/* Replace bytes [from, to) with `s`, cursor after it. */
void edbuf_replace(struct edbuf *e, size_t from, size_t to, const char *s);
/*
 * The bracket matching the one under the cursor, or else the one just before it: its byte
 * offset, or -1 when there is no bracket there or it has no partner. Brackets inside strings
 * and comments are not told apart (good enough for a highlight).
 */
long edbuf_match_bracket(const struct edbuf *e, long *at);

#endif
