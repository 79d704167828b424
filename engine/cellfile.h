#ifndef CELLBOX_CELLFILE_H
#define CELLBOX_CELLFILE_H

/*
 * Cell files: percent-format scripts (`# %%` cells as jupytext, VS Code and Spyder write
 * them) and nbformat 4.5 notebooks; recorded sessions read into the same shape (history.h).
 *
 * Every reader returns the same thing: a notebook as an nbformat 4 cJSON tree
 *
 *	{"cells": [{"cell_type", "id", "metadata", "source": [lines], "outputs", ...}],
 *	 "metadata": {...}, "nbformat": 4, "nbformat_minor": 5}
 *
 * so that replay, export and the TUI work on one shape. cellfile_write_ipynb() prints it
 * exactly as nbformat.write() does (keys sorted, indent 1, ensure_ascii off, a final
 * newline): a notebook nbformat wrote reads and writes back byte for byte.
 *
 * Known limit: cJSON keeps numbers as doubles, so a float metadata value that is integral
 * (1.0) is written back as 1.
 */

#include <cjson/cJSON.h>
#include "util.h"

/* Biggest cell file read (bytes). */
#define CELLFILE_MAX ((size_t)512 << 20)

/*
 * Parse percent-format text into a notebook. Never fails: text without markers is one code
 * cell. Handles `# %%` / `#%%` markers with titles, `[markdown]` / `[md]` / `[raw]`,
 * `key=value` and JSON metadata, the commented YAML header (kept in metadata.jupytext_header),
 * commented magics (`# %matplotlib inline`, `# !ls`) restored in code cells.
 */
cJSON *cellfile_parse_percent(const char *text, size_t len);
/*
 * Parse and check an nbformat 4 notebook. Returns NULL with `err` naming `name` and the
 * line:column of a JSON error, or the missing / wrong field.
 */
cJSON *cellfile_parse_ipynb(const char *text, size_t len, const char *name, struct strbuf *err);
/*
 * Read a cell file: `.ipynb` (or text starting with '{', unless it is a `.py`) as a notebook,
 * anything else as percent format. Checks that it is UTF-8 text. NULL with `err`. (A recorded
 * session is a cell file too: history_load() reads those and everything this reads.)
 */
cJSON *cellfile_load(const char *path, struct strbuf *err);
/* Read a whole cell file as text (at most CELLFILE_MAX, UTF-8, no NUL); -1 with `err`. */
int cellfile_read(const char *path, struct strbuf *text, struct strbuf *err);

/* Append the notebook as nbformat.write() prints it. */
void cellfile_write_ipynb(const cJSON *nb, struct strbuf *out);
/* Append the notebook as a percent-format script (outputs and run times are dropped). */
void cellfile_write_percent(const cJSON *nb, struct strbuf *out);
/* Append one cell as cellfile_write_percent() writes it: its marker line, then its lines. */
void cellfile_write_percent_cell(const cJSON *cell, struct strbuf *out);

/*
 * Where the parts of percent text are, so that an editor can write the cells it did not
 * change back byte for byte: the header (the YAML block and the blank lines after it) is
 * text[0..header); cell i is text[cells[i].off, +len): its marker line first (when `marker`;
 * text before the first marker has none), its lines, the blank lines before the next marker.
 */
struct cellfile_percent_map {
	size_t header;
	struct cellfile_percent_span {
		size_t off, len;
		int marker;
	} *cells;
	size_t ncells;		/* as many as the notebook's cells */
};

/*
 * Where a notebook's cells are in its text, without parsing them (a notebook opens with the
 * cells it shows first, the rest after): the `cells` array from text[open] ('[') to
 * text[close] (']'), each element's bytes. Nothing is checked but the structure: parse each
 * cell (and the rest) to know it is a notebook. -1 when no cells array is found.
 */
struct cellfile_cells {
	size_t open, close;
	struct cellfile_range {
		size_t off, len;
	} *cells;
	size_t n;
};
int cellfile_ipynb_cells(const char *text, size_t len, struct cellfile_cells *out);
void cellfile_cells_release(struct cellfile_cells *c);
/* Check one cell as cellfile_parse_ipynb() does (a missing id is added: 1); 0, or -1 with `err`. */
int cellfile_check_cell(cJSON *cell, int index, const char *name, struct strbuf *err);

/* cellfile_parse_percent(), filling `map` too (release it with the function below). */
cJSON *cellfile_parse_percent_map(const char *text, size_t len, struct cellfile_percent_map *map);
void cellfile_percent_map_release(struct cellfile_percent_map *map);
/* Write the notebook to `path` (.ipynb, else percent) as tmp + rename. -1 with `err`. */
int cellfile_save(const cJSON *nb, const char *path, struct strbuf *err);
/* Append any JSON value as Python's json.dumps(v, sort_keys=True, indent=1) prints it. */
void cellfile_write_json(const cJSON *v, int indent, struct strbuf *out);

/* An empty notebook (no cells, nbformat 4.5). */
cJSON *cellfile_new_notebook(void);
/* A new cell of `type` ("code", "markdown", "raw") with a fresh id; adds it to nb if given. */
cJSON *cellfile_add_cell(cJSON *nb, const char *type, const char *source);
/* Split text into nbformat's list of lines (each keeps its '\n'). */
cJSON *cellfile_lines(const char *text);
/* The source (a string or list of lines) joined; the caller frees it. */
char *cellfile_join(const cJSON *source);
/* Whether the cell's metadata.tags holds `tag`. */
int cellfile_has_tag(const cJSON *cell, const char *tag);
/* The cell's type ("code", ...), or "" when it has none. */
const char *cellfile_cell_type(const cJSON *cell);

/*
 * Describe the running kernel in the notebook's metadata from its `ready` object
 * (session_kernel_info): language_info replaced, as nbclient does; kernelspec written when
 * the notebook has none or one of another language. NULL or fields missing: left as it is.
 */
void cellfile_set_kernel(cJSON *nb, const cJSON *kernel_info);
/*
 * Record when a cell ran (epoch seconds) in its metadata.execution, with the keys and
 * ISO 8601 UTC timestamps nbclient writes (iopub.status.busy, iopub.execute_input,
 * shell.execute_reply, iopub.status.idle).
 */
void cellfile_set_timing(cJSON *cell, double started, double finished);
/*
 * Set a cell's metadata.cellbox.usage to what it used (usage.h: cpu_seconds,
 * peak_memory_bytes, wall_seconds; null where not measured), the rest of metadata.cellbox kept.
 */
struct usage;
void cellfile_set_usage(cJSON *cell, const struct usage *u);
/* Append an epoch time as nbclient prints it: 2024-05-01T12:00:00.123456Z. */
void cellfile_iso_time(double t, struct strbuf *out);

#endif
