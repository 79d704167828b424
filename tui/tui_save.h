#ifndef CELLBOX_TUI_SAVE_H
#define CELLBOX_TUI_SAVE_H

/*
 * Saving and loading the TUI's cells: a small stand-in, isolated here, for the engine's cell
 * file reader/writer (percent .py and .ipynb) that is being written separately. Swap these two
 * functions for it when it lands; the TUI calls nothing else.
 */

#include <stddef.h>
#include "util.h"

/* Write `cells` as a percent-format .py (or, for a name ending in .ipynb, an nbformat 4.5
 * notebook without outputs). 0, or -1 with `msg`. */
int tui_save_cells(const char *path, const char *const *cells, size_t n, struct strbuf *msg);
/* Read the code cells of a percent-format .py (a file without markers is one cell).
 * 0 with a new array in *cells (caller frees each and it), or -1 with `msg`. */
int tui_load_cells(const char *path, char ***cells, size_t *n, struct strbuf *msg);

#endif
