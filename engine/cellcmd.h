#ifndef CELLBOX_CELLCMD_H
#define CELLBOX_CELLCMD_H

/*
 * What a cell's text asks of the front end rather than of the kernel, decided in one place
 * for the REPL and the full-screen UI: `exit` and `quit` end the front end (as IPython's
 * terminal has them), a one-line text starting with ':' is a front-end command.
 */

/* Whether a cell is `exit` or `quit` (called or not). */
int cellcmd_is_exit(const char *code);
/* Whether a cell is a front-end command: one line that starts with ':'. */
int cellcmd_is_command(const char *code);

#endif
