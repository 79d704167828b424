#ifndef CELLBOX_CELLRUN_H
#define CELLBOX_CELLRUN_H

/*
 * Helper cells: the one way the front ends and the engine run a cell of their own (copying
 * files, checking a pooled kernel's libraries) and keep its error. Built on session.h's API.
 */

#include "session.h"

/*
 * Run `code` as a silent, trusted cell (no history, no count, past the policy) and wait for
 * it: 0, or -1 with `err` saying why ("ename: evalue" of the error it raised, or why it could
 * not be sent).
 */
int cellrun_silent(struct session *s, const char *code, struct strbuf *err);

#endif
