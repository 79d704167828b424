#ifndef CELLBOX_OUTMODEL_H
#define CELLBOX_OUTMODEL_H

/*
 * What the output pane shows: the executed cells in order, each with its code and its output
 * as chunks of one kind (stdout, stderr, Out[n], traceback, plot, info). Kernel text goes
 * through the sanitiser (SGR kept) on the way in. Each cell's stored output is bounded: past
 * `cell_max` bytes, streams are dropped and counted, and the cell shows a "truncated" chunk.
 * Carriage returns overwrite the current line, as a terminal would (progress bars).
 * No terminal code.
 */

#include <stddef.h>
#include "sanitize.h"
#include "util.h"

enum out_kind {
	OUT_STDOUT,
	OUT_STDERR,
	OUT_RESULT,
	OUT_ERROR,
	OUT_PLOT,
	OUT_INFO,
	OUT_TRUNCATED,
};

struct out_chunk {
	enum out_kind kind;
	struct strbuf text;	/* sanitised; may hold SGR sequences */
	int plot_index, plot_w, plot_h;	/* OUT_PLOT: the plot it stands for */
	char *display_id;	/* shown by display(..., display_id=...): updates replace it */
};

struct out_cell {
	unsigned long id;	/* the session's request id */
	int count;		/* In [n]; 0 until the kernel says */
	char *code;
	struct out_chunk *chunks;
	size_t nchunks, chunks_alloc;
	size_t stored;		/* bytes of output kept */
	size_t dropped;		/* bytes of output dropped past the bound */
	int done;
	double duration;
	struct sanitizer *san[2];	/* stdout, stderr while the cell runs */
	int rows, rows_width;	/* layout cache of the UI; rows_width 0 = stale */
	int clear_pending;	/* clear_output(wait=True): cleared before the next output */
	long long hist_at;	/* where the history store wrote this cell (-1: it did not) */
	size_t hist_len;
};

struct outmodel {
	struct out_cell **cells;
	size_t ncells, cells_alloc;
	size_t cell_max;	/* output bytes kept per cell */
};

void outmodel_init(struct outmodel *m, size_t cell_max);
void outmodel_release(struct outmodel *m);
/* Forget every cell. */
void outmodel_clear(struct outmodel *m);
/* A cell of no model (a notebook's cell keeps its own); free it with outmodel_cell_free(). */
struct out_cell *outmodel_cell_new(unsigned long id, const char *code);
void outmodel_cell_free(struct out_cell *c);
/* Add a cell for request `id` with its code (NULL for a message with no code). */
struct out_cell *outmodel_add(struct outmodel *m, unsigned long id, const char *code);
/* The cell of request `id`, or NULL. */
struct out_cell *outmodel_find(const struct outmodel *m, unsigned long id);
/* Append raw kernel text of one kind (sanitised here; streams are bounded). */
void outmodel_cell_append(struct outmodel *m, struct out_cell *c, enum out_kind kind,
		     const char *text, size_t len);
/* Add a plot placeholder "[plot N: WxH PNG]". */
void outmodel_cell_plot(struct outmodel *m, struct out_cell *c, int index, int w, int h);
/*
 * display(..., display_id=ID): the display's text as a chunk of its own, or (tag) chunk `at`
 * (its plot) marked as that display's, for outmodel_update_*() to replace. Nothing is
 * merged into such a chunk.
 */
void outmodel_cell_display(struct outmodel *m, struct out_cell *c, const char *display_id,
		      const char *text, size_t len);
void outmodel_cell_tag(struct out_cell *c, size_t at, const char *display_id);
/*
 * update_display(ID): every output shown with that id, in any cell, becomes this text (a
 * display's text/plain) or this plot. Returns how many were replaced.
 */
size_t outmodel_update_text(struct outmodel *m, const char *display_id, const char *text,
			    size_t len);
size_t outmodel_update_plot(struct outmodel *m, const char *display_id, int index, int w,
			    int h);
/* Mark the cell finished: free its sanitisers, add the truncated marker when needed. */
void outmodel_cell_finish(struct out_cell *c, double duration);
/*
 * clear_output: the cell's output so far goes (at once, or with `wait` just before its next
 * output arrives, as Jupyter's front ends do: a progress display does not flicker).
 */
void outmodel_cell_clear(struct out_cell *c, int wait);
/*
 * Keep the finished cells' output under `max` bytes in all: the oldest cells lose their
 * output first (their code stays) and show a marker instead. Returns the bytes freed.
 */
size_t outmodel_trim(struct outmodel *m, size_t max);
/* Bytes the model holds (texts and bookkeeping), for the benchmark. */
size_t outmodel_bytes(const struct outmodel *m);

#endif
