#ifndef CELLBOX_EDBUF_INT_H
#define CELLBOX_EDBUF_INT_H

/* What the editor buffer's files share (edbuf.c, edbuf_undo.c): not an API. */

#include "edbuf.h"

/* The kinds of change, for grouping undo steps (edbuf.group). */
enum { G_NONE, G_TYPE, G_BACKSPACE, G_DELETE, G_OTHER };

/* Keep the text as it is now as the newest step, dropping the oldest past the caps. */
void edbuf_steps_push(struct edbuf_steps *s, const struct edbuf *e);
/* Forget every step. */
void edbuf_steps_clear(struct edbuf_steps *s);

#endif
