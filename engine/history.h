#ifndef CELLBOX_HISTORY_H
#define CELLBOX_HISTORY_H

/*
 * The history store: every executed cell of every session, on the host.
 *
 * One directory per session, $XDG_STATE_HOME/cellbox/sessions/<id>/ (else
 * ~/.local/state/cellbox/sessions/<id>/), holding history.jsonl and plots/<n>.png (copies of
 * the session's captured plots). history.jsonl has one JSON object a line:
 *
 *	{"session": id, "execution_count": n, "code": "...", "status": "ok"|"error"|"aborted",
 *	 "duration": s, "time": epoch seconds, "reason": "timeout"?, "kernel": "r"?,
 *	 "outputs": [nbformat outputs]}
 *
 * with plots referenced by path (outputs metadata.cellbox.plot), not inlined.
 *
 * Crash safety: a line is appended with one write() on an O_APPEND descriptor, so a kill -9
 * at any moment loses at most the cell in flight; a reader skips a torn or corrupt line with
 * a warning. Kernel restarts do not matter: the store belongs to the front end's session.
 * Bounded: history_open() prunes the oldest sessions while more than `max_entries` cells
 * are stored (the configuration's history-size, default 1000) and sessions older than
 * history-days (default: no age limit), in a thread of its own that history_close() joins.
 * The plot copies of all sessions together are capped too (history-plots-size, 256 MB by
 * default; history_prune_plots): the oldest are dropped first, each cell that showed one
 * then noting it in its place.
 * Counting the stored cells reads every session's file (10 ms for a thousand), so it is done
 * at most once every HISTORY_PRUNE_EVERY seconds, by the first session to open after that
 * (the stamp `history-pruned` beside the sessions directory says when): back-to-back runs do
 * not pay for it, and the store is over its bound by at most that interval's sessions.
 *
 *	struct history *h = history_open(cfg->history_size, cfg->history_days, &err);
 *	outputs_init(&o, session_channel_dir(s), OUTPUTS_COPY_PLOTS, history_plots_dir(h), 0);
 *	... run the cell, feeding outputs_event() ...
 *	history_append(h, &(struct history_cell){ .code = code, .outputs = outputs_finish(&o), ...});
 *	history_close(h);
 */

#include <cjson/cJSON.h>
#include "util.h"

#define HISTORY_DEFAULT_SIZE 1000
/* Output text a recorded cell keeps (the collector's limit for the history). */
#define HISTORY_OUTPUT_LIMIT ((size_t)4 << 20)

struct history;

/* One cell to record. `outputs` stays the caller's. */
struct history_cell {
	int execution_count;	/* -1 when none */
	const char *code;
	const char *status;	/* "ok", "error", "aborted" */
	const char *reason;	/* NULL or why it ended ("timeout", ...) */
	double duration;	/* seconds the kernel took */
	double time;		/* when it ran (epoch seconds); 0 = now */
	const cJSON *outputs;	/* nbformat outputs; NULL = none */
	const char *kernel;	/* the kernel's name (kernel.h); NULL = python */
};

#define HISTORY_PRUNE_EVERY 60	/* seconds between two prunes of the store */

/* The sessions directory ($XDG_STATE_HOME/cellbox/sessions); the caller frees it. */
char *history_sessions_dir(void);
/*
 * Open a new session's store (id made from the time and pid) and, when due, start pruning
 * old sessions beside the caller (see history_prune; done by history_close). NULL with `err`
 * when it cannot be made.
 */
struct history *history_open(size_t max_entries, double max_age_days, struct strbuf *err);
/* Record one cell with a single write(). -1 with `err` on failure. */
int history_append(struct history *h, const struct history_cell *cell, struct strbuf *err);
/*
 * Where the last history_append() of this store wrote its cell: the offset of its line (-1:
 * the last append wrote nothing, or there was none) and, in *len, its bytes with the newline.
 */
long long history_last_at(const struct history *h, size_t *len);
/* The most a line read back by history_read_entry() may take (a cell's outputs, escaped). */
#define HISTORY_ENTRY_MAX ((size_t)32 << 20)
/*
 * Read back the entry this store wrote at `at`, `len` bytes (history_last_at()), in pieces of
 * 64 KiB, never more than HISTORY_ENTRY_MAX: the file is opened anew (no link followed, a
 * regular file), the line must end where it did and name this session. NULL with `err`.
 */
cJSON *history_read_entry(const struct history *h, long long at, size_t len, struct strbuf *err);
/* Close the store. NULL is fine. */
void history_close(struct history *h);
const char *history_session_id(const struct history *h);
/* The session's directory, its history.jsonl, and where its plots are copied. */
const char *history_dir(const struct history *h);
const char *history_path(const struct history *h);
const char *history_plots_dir(const struct history *h);

/* Called for each entry in order; return nonzero to stop. `entry` is valid during the call. */
typedef int (*history_fn)(const cJSON *entry, void *data);
/*
 * Call `fn` for every entry of `text` (a history.jsonl). Torn or corrupt lines are skipped
 * and described in `warn` ("NAME:LINE: ..."). Returns the number of entries seen.
 */
int history_parse(const char *text, size_t len, const char *name, history_fn fn, void *data,
		  struct strbuf *warn);
/*
 * Call `fn` for every entry of every stored session, oldest first (`session` non-NULL: only
 * that one). Returns entries seen, or -1 with `warn` set when the store cannot be read.
 */
int history_iter(const char *session, history_fn fn, void *data, struct strbuf *warn);
/* The ids of the stored sessions, oldest first; NULL-terminated, free with history_free_list. */
char **history_sessions(void);
void history_free_list(char **list);
/*
 * Remove the oldest sessions (never `keep`) while more than `max_entries` cells are stored
 * (0 = no count limit), and sessions last written more than `max_age_days` ago (0 = no age
 * limit).
 */
void history_prune(size_t max_entries, double max_age_days, const char *keep);

/*
 * Cap the plot copies of the whole store at `bytes` (history-plots-size; 0: none), kept by
 * history_prune_plots() when this session closes, if it copied any plot.
 */
void history_set_plots_cap(struct history *h, unsigned long long bytes);
/*
 * Drop the oldest plot copies of the store (the oldest session's first, in the order they
 * were written) while all of them take more than `cap` bytes of disk; each leaves a marker
 * with a note beside it (history_plots.c). Returns how many were dropped. It reads every
 * stored session's plots/ directory: done at a session's close, never for a cell.
 */
int history_prune_plots(unsigned long long cap);
/*
 * The note of a plot `plot` (a path as a record names it) that the cap dropped, or NULL when
 * it was not dropped. Caller frees.
 */
char *history_plot_dropped(const char *plot);

/*
 * A code cell for an entry: its code and outputs (plots embedded as base64 when `embed`),
 * and when it ran as nbclient's metadata.execution.
 */
cJSON *history_entry_cell(const cJSON *entry, int embed);
/*
 * Write the cells of stored session `session` (NULL = the newest) to `path`: a notebook with
 * outputs and embedded plots for .ipynb, a percent script for a kernel's extension (.py, .R);
 * any other name is refused. -1 with `err`.
 */
int history_export(const char *session, const char *path, struct strbuf *err);
/*
 * Load a cell file as a notebook (cellfile.h), or a recorded session: its history.jsonl by
 * path, or its id (as 'history list' shows it) when no file of that name is here. Every entry
 * of a session is a code cell with its outputs, the notebook the kernelspec of the kernel it
 * ran on. NULL with `err`.
 */
cJSON *history_load(const char *path_or_id, struct strbuf *err);
/*
 * The cells of stored session `session` (NULL = the newest) as a notebook, plots embedded.
 * NULL with `err` when there is none.
 */
cJSON *history_session_notebook(const char *session, struct strbuf *err);

#endif
