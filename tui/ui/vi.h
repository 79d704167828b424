#ifndef CELLBOX_VI_H
#define CELLBOX_VI_H

/*
 * The cell editor's vi mode (the setting editing-mode = vi), as IPython's and prompt_toolkit's:
 * insert mode types text (the editor's other keys work there as they do in emacs mode), Esc
 * goes to normal mode, where keys are vi's commands on the text:
 *
 *	[count] motion				h j k l w b e 0 ^ $ gg G
 *	[count] operator [count] motion		d c y (dw, c$, y2j); doubled (dd cc yy): lines
 *	[count] command				x D C p P u Ctrl-R i a I A o O, Enter (run)
 *
 * One table (vi.c) holds a row per command, its keys, what it is and its line of help: the
 * dispatch reads it and F1 lists it. The register is the editor's clipboard (what Alt-W copies
 * and Ctrl-V pastes), whole lines when a line command filled it. The cursor in normal mode
 * sits on a character (never past the last of a line but on an empty one). No terminal code.
 */

#include <wchar.h>

#include "edbuf.h"

enum vi_mode { VI_INSERT, VI_NORMAL };

/* What a key did beyond the text: the caller acts on it. */
enum vi_result {
	VI_PASS,	/* not a key of vi's here: the editor's other keys take it */
	VI_TAKEN,	/* done (the text, the cursor or the mode may have changed) */
	VI_RUN,		/* Enter in normal mode: run the cell */
	VI_YANKED,	/* y filled the register: a copy (the terminal's clipboard too) */
};

#define VI_COUNT_MAX 9999	/* counts (and their products: 2d3w) are cut to this */

struct vi {
	enum vi_mode mode;
	long count;		/* the count typed before the command (0: none) */
	long count2;		/* ... and after its operator (d2w) */
	int op;			/* the operator waiting for its motion (0: none) */
	wint_t prefix;		/* the first key of a two-key command (g of gg), or 0 */
	int linewise;		/* the register holds whole lines (dd, yy) */
	size_t reg_len;		/* ... as long as it is this long (else something else filled it) */
	const char *msg;	/* why the last key did nothing ("nothing to undo"), or NULL */
};

void vi_init(struct vi *v);
/*
 * A key `ch` (a character, Enter '\r', Esc 27, Ctrl-R 0x12; no modifiers) on text `e`, with
 * register `reg`. In insert mode only Esc is vi's; in normal mode every character is (one
 * that is no command is dropped, half-typed commands with it).
 */
enum vi_result vi_key(struct vi *v, struct edbuf *e, struct strbuf *reg, wint_t ch);
/* Go to insert mode (a new cell starts there, as in IPython), forgetting half-typed keys. */
void vi_insert(struct vi *v);
/* The keys of a command half typed ("2d", "g"), for the status line; "" when none. */
void vi_pending(const struct vi *v, char *buf, size_t size);
/* F1's and the manual page's rows: a row per command, its keys and what it does. */
void vi_rows(void (*row)(void *data, const char *left, const char *right), void *data);

#endif
