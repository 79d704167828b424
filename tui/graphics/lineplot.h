#ifndef CELLBOX_LINEPLOT_H
#define CELLBOX_LINEPLOT_H

#include <stdio.h>
#include "graphics.h"

/*
 * Plots in scrolling output, for the line front ends (`repl`, `run`): a layer on graphics.h,
 * not a part of it. Set up from the --graphics and blocks settings, asking the terminal on
 * `fd` only when it is a terminal and the setting is not none.
 */
struct lineplot {
	enum graphics_mode mode;
	enum blocks_kind blocks;
	struct termcap tc;
};

/* Choose how plots show (the terminal on `fd` asked when it is one and `want` is not none). */
void lineplot_init(struct lineplot *g, enum graphics_mode want, enum blocks_kind blocks, int fd,
		   int color);
/*
 * Show the PNG of `len` bytes at `png` (when not NULL; `path` names it) or at `path` on `out`
 * (at the start of a line), written at once, and end at the start of the line below it. Returns 0
 * when it drew the plot, 1 when the mode draws nothing, -1 when the PNG could not be decoded
 * (why appended to `why` when not NULL); after a non-zero return nothing was written and the
 * caller prints its text line instead. Fits printer's plot_hook.
 */
int lineplot_show(void *g, const void *png, size_t len, const char *path, FILE *out,
		  struct strbuf *why);

#endif
