#ifndef CELLBOX_NOTEBOOK_H
#define CELLBOX_NOTEBOOK_H

/*
 * A notebook open for editing: the cells of an `.ipynb` or a percent-format `.py`, in order,
 * each kept as its nbformat cell (cJSON, as cellfile.h reads it) with what an editor needs
 * beside it. Saving writes the format that was read: a notebook as nbformat writes it, so one
 * saved unchanged is byte for byte the file that was read (for a file nbformat wrote); a
 * percent script with every cell that did not change written back as it was read (marker
 * line, title, metadata, blank lines, the YAML header), the others as cellfile writes them.
 *
 * Writes are tmp + rename. A recovery file beside the notebook (`.NAME.cellbox-recover`, the
 * same format) holds the unsaved state, written by notebook_autosave() and removed by a save
 * or a clean close; after a crash it is still there and newer than the file, and opening the
 * notebook can offer it. The file's identity (device, inode, size, mtime) is kept from when
 * it was read or written, so a change on disk by someone else is seen before it is
 * overwritten.
 *
 *	struct notebook nb;
 *	notebook_init(&nb);
 *	if (notebook_open(&nb, "analysis.ipynb", &err) < 0) ...	// 1: a new file
 *	cell = nb.cells[i]; notebook_set_source(&nb, i, "x = 1\n");
 *	notebook_set_outputs(&nb, i, outputs, 3);		// after the cell ran
 *	notebook_save(&nb, NULL, 0, &err);
 *	notebook_release(&nb);
 *
 * No terminal code: the view (tui/ui_notebook.c) draws it.
 */

#include <sys/types.h>
#include <cjson/cJSON.h>
#include "cellfile.h"
#include "util.h"

#define NOTEBOOK_TRASH_MAX 100	/* deleted cells `z` can bring back */

enum nb_format {
	NB_IPYNB,
	NB_PERCENT,
};

struct out_cell;

/* One cell and what the editor keeps beside it. */
struct nb_cell {
	cJSON *json;		/* the nbformat cell (owned): cell_type, id, metadata, source, ... */
	char *source;		/* its source, joined */
	char *ran;		/* the source its outputs came from (NULL: it has not run) */
	int orig;		/* percent: the index of its text in the file as read; -1 none */
	int edited;		/* its source is not the one in that text (the rest is) */
	int collapsed;		/* outputs hidden */
	/* For the view. */
	struct out_cell *view;	/* its outputs as the output pane draws them; NULL = to make */
	int rows, rows_width;	/* layout cache; rows_width 0 = stale */
	unsigned long req;	/* the session request running it (0: none) */
	int queued;		/* waiting to run behind other cells */
};

struct notebook {
	char *path;
	enum nb_format format;
	cJSON *root;		/* metadata, nbformat, ...: the cells are detached into cells[] */
	struct nb_cell **cells;
	size_t ncells, alloc;
	int dirty;		/* changes not saved */
	int is_new;		/* the file did not exist: it is made by the first save */
	/* Percent: the text as read and where its parts are, to write unchanged ones back. */
	struct strbuf text;
	struct cellfile_percent_map map;
	/* A notebook opened in two steps: its text and the cells not parsed yet. */
	struct strbuf raw;
	struct cellfile_cells spans;
	size_t parsed;
	int added_ids;
	/* The file on disk as last read or written. */
	int have_stat;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	/* Deleted cells, the newest last, with where they were. */
	struct { cJSON *json; char *ran; size_t at; } trash[NOTEBOOK_TRASH_MAX];
	size_t ntrash;
	/* Copied or cut cells. */
	cJSON **clip;
	size_t nclip;
	double changed_at, autosaved_at;	/* monotonic clock: the last change, autosave */
};

void notebook_init(struct notebook *nb);
void notebook_release(struct notebook *nb);
/*
 * Open `path` (.ipynb, else percent format). Returns 0; 1 when there is no such file (an
 * empty notebook of one code cell, made on the first save); -1 with `err`.
 */
int notebook_open(struct notebook *nb, const char *path, struct strbuf *err);

/*
 * The same in two steps, so that the cells that show first are there at once: the first
 * `first` cells (of a notebook; a percent file is read whole), then the others with
 * notebook_open_rest(), which says what is wrong with the file when something is.
 */
int notebook_open_first(struct notebook *nb, const char *path, size_t first, struct strbuf *err);
int notebook_open_rest(struct notebook *nb, struct strbuf *err);
/* How many cells the notebook has (some may be waiting for notebook_open_rest). */
size_t notebook_total(const struct notebook *nb);

/* The cell's type: "code", "markdown" or "raw". */
const char *notebook_cell_type(const struct nb_cell *c);
/* The cell's execution count, or 0 when it has none. */
int notebook_cell_count(const struct nb_cell *c);
/* Whether the cell's source changed since its outputs were made. */
int notebook_cell_changed(const struct nb_cell *c);

/* Insert a new cell of `type` with `source` at `at` (0..ncells); returns its index. */
size_t notebook_insert(struct notebook *nb, size_t at, const char *type, const char *source);
/* Delete cell `at` (kept for notebook_undelete). A notebook keeps at least one cell. */
void notebook_delete(struct notebook *nb, size_t at);
/* Bring back the last deleted cell where it was; its index, or -1 when there is none. */
long notebook_undelete(struct notebook *nb);
/* Move cell `at` one place up (dir -1) or down (+1); its new index. */
size_t notebook_move(struct notebook *nb, size_t at, int dir);
/* Change the cell's type (code, markdown, raw); a cell that stops being code loses its outputs. */
void notebook_set_type(struct notebook *nb, size_t at, const char *type);
/* Replace the cell's source. */
void notebook_set_source(struct notebook *nb, size_t at, const char *source);
/* The outputs of a run (taken over) and its execution count (-1: none). */
void notebook_set_outputs(struct notebook *nb, size_t at, cJSON *outputs, int count);
/* Clear the outputs and the execution count of one cell. */
void notebook_clear_outputs(struct notebook *nb, size_t at);
/* Copy cell `at` to the clipboard (cut: and delete it). */
void notebook_copy(struct notebook *nb, size_t at, int cut);
/* Paste the clipboard's cells (with fresh ids) at `at`; how many. */
size_t notebook_paste(struct notebook *nb, size_t at);
/* The next cell from `from` (not included) in direction `dir` whose source holds `text`
   (case-insensitive), wrapping around; -1 when none does. */
long notebook_find(const struct notebook *nb, size_t from, int dir, const char *text);

/* The notebook as its format writes it. */
void notebook_serialize(const struct notebook *nb, struct strbuf *out);
/*
 * Write the notebook to `path` (NULL: its own file) as tmp + rename. Unless `force`, refuses
 * when its own file changed on disk since it was read or written (-2, with `err` saying so).
 * Saving to another path makes that the notebook's file (its format from the name). The
 * recovery file goes. 0, or -1 with `err`.
 */
int notebook_save(struct notebook *nb, const char *path, int force, struct strbuf *err);
/* Whether the file on disk is not the one last read or written (changed or gone). */
int notebook_disk_changed(const struct notebook *nb);

/* The recovery file's path (the caller frees it). */
char *notebook_recovery_path(const struct notebook *nb);
/* Write the recovery file now (when there are unsaved changes). 0 or -1 with `err`. */
int notebook_autosave(struct notebook *nb, struct strbuf *err);
/* Whether a recovery file newer than the notebook's file is there (after a crash). */
int notebook_has_recovery(const struct notebook *nb);
/* Replace the cells with the recovery file's (marked unsaved). 0 or -1 with `err`. */
int notebook_recover(struct notebook *nb, struct strbuf *err);
/* Remove the recovery file. */
void notebook_discard_recovery(const struct notebook *nb);

/* The cell changed (its outputs, how it shows): the view lays it out again. */
void notebook_cell_stale(struct nb_cell *c);

#endif
