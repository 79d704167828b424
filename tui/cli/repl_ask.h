#ifndef CELLBOX_REPL_ASK_H
#define CELLBOX_REPL_ASK_H

/*
 * What the REPL (cmd_repl.c) asks its kernel and waits for: the kernel's verdict on a cell,
 * and Tab completion in readline from the kernel's complete reply (its matches shown and
 * inserted only as plain text).
 */

#include "session.h"
#include "strbuf.h"

/*
 * The kernel's verdict on a cell: "complete", "incomplete" or "invalid" (the caller frees
 * it); its indent for the next line in *indent when asked (only blanks, or ""). A cell given
 * whole (recalled from history, edited, then Enter) is asked about with its newline
 * (`whole`): it ends there, as IPython's own prompt runs it.
 */
char *repl_ask_is_complete(struct session *s, const char *code, char **indent, int whole);
/*
 * Complete from session `s` in readline (its attempted-completion function), `cell` the
 * lines of the cell typed before the current one; NULL: completion off, its matches freed.
 */
void repl_ask_completion(struct session *s, const struct strbuf *cell);

#endif
