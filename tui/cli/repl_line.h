#ifndef CELLBOX_REPL_LINE_H
#define CELLBOX_REPL_LINE_H

/*
 * The REPL's terminal line (cmd_repl.c's terminal mode): its prompts, what a line is
 * pre-filled with, reading it through readline's callback interface (so that Ctrl-C can
 * clear it), and whole cells in readline's history.
 *
 * The indent rule is IPython's terminal's: only a continuation line of an unfinished cell is
 * pre-filled with the kernel's indent; the first line of a new cell starts empty (or with a
 * %load's text). A closer of the kernel (kernel_def.closers: R's `}`) typed where only blanks
 * are before it takes one indent level back, as an editor does.
 */

enum { REPL_LINE_READ, REPL_LINE_EOF, REPL_LINE_INTERRUPTED };

/*
 * The prompt of cell `count`: "In [n]: " in colour, or for a continuation line "...: "
 * right-aligned under it (the same width). The caller frees it.
 */
char *repl_line_prompt(int count, int continuation);
/* Characters the visible prompt of cell `count` takes (both kinds are this wide). */
int repl_line_prompt_width(int count);
/*
 * Read a line with `prompt`, pre-filled with `prefill` ("" for none). REPL_LINE_READ with the
 * line in *out (the caller frees it), REPL_LINE_EOF at Ctrl-D or SIGTERM, REPL_LINE_INTERRUPTED
 * when Ctrl-C cleared it.
 */
int repl_line_read(const char *prompt, const char *prefill, char **out);
/*
 * While a line is read, `fn(data)` runs whenever `fd` is readable (a named session's cells
 * from other front ends), the line being typed cleared around what it prints and drawn again.
 * fd -1: none.
 */
void repl_line_set_side(int fd, void (*fn)(void *), void *data);
/* Whether more input is already there: the rest of a paste (unbracketed), or typed ahead. */
int repl_line_waiting(void);
/* Remember a whole cell in readline's history, lines and all (not twice in a row). */
void repl_line_remember(const char *cell);
/* The kernel's closers and one indent level (kernel_def), for the dedent; NULL: none. */
void repl_line_set_closers(const char *closers, const char *indent);

#endif
