#ifndef CELLBOX_TUI_H
#define CELLBOX_TUI_H

/*
 * The full-screen UI as the command line sees it: run it, and list its keys and commands for
 * the manual page. Everything else of the UI is its own (ui.h, private).
 */

#include "config.h"
#include "named.h"

/*
 * Run the full-screen UI on this terminal (standard input and output must be one) with the
 * settings of `cfg`, on `file` as a notebook (NULL: the REPL-like view). Returns the exit code
 * (reason.h: EXIT_OK, EXIT_USAGE, EXIT_NO_KERNEL).
 */
/*
 * A named session (named.h) for the UI: `name` starts one (`idle`: when it ends by itself),
 * `attach` joins one (`read_only`: to watch). All NULL: the UI's own session, as before.
 */
struct tui_named {
	const char *name, *attach;
	struct named_idle idle;
	int read_only;
};
int tui_run(struct cellbox_config *cfg, const char *file, const struct tui_named *named);
/*
 * The full-screen UI's help, row by row (ui_commands.c): a key or command and what it does,
 * or a heading when `left` is "".
 */
void ui_help_rows(void (*row)(void *data, const char *left, const char *right), void *data);

#endif
