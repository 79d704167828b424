#ifndef CELLBOX_OUTPUTS_H
#define CELLBOX_OUTPUTS_H

/*
 * Collects one cell's session events as nbformat outputs, as nbclient makes them:
 * consecutive streams of the same name merged and `\r` / backspace collapsed (nbconvert's
 * coalesce_streams), `execute_result` and `display_data` with every mime type and their
 * metadata (a captured plot as `image/png` base64, or referenced by path), `error` with
 * ename / evalue / traceback. Like nbclient it honours clear_output (at once, or with
 * wait=True before the next output) and display ids: a display or update with an id
 * replaces the data and metadata of every output shown with that id.
 *
 *	outputs_init(&o, session_channel_dir(s), OUTPUTS_EMBED_PNG, NULL, 0);
 *	... for every event of the cell: outputs_event(&o, ev);
 *	cJSON *list = outputs_finish(&o);	// the cell's "outputs"; o.status etc. are set
 *	outputs_release(&o);
 *
 * Artifacts (files a cell saved) are not outputs: they are left to the front end.
 * The text kept is capped (`limit` bytes, default OUTPUTS_LIMIT): past it the text is cut and
 * a note says so, and `truncated` is set.
 *
 * One collection, two shapes: a notebook's collector can give the history its shape of the
 * same outputs (outputs_share(), outputs_copy_shape()), so that a cell is collected once.
 */

#include <cjson/cJSON.h>
#include "session.h"
#include "util.h"

#define OUTPUTS_LIMIT ((size_t)32 << 20)
/* Biggest plot or artifact file read from a channel. */
#define OUTPUTS_FILE_MAX ((size_t)256 << 20)

enum {
	OUTPUTS_EMBED_PNG = 1 << 0,	/* plots as data["image/png"] base64 (a notebook) */
	OUTPUTS_COPY_PLOTS = 1 << 1,	/* copy plots to plots_dir, metadata cellbox.plot = path */
	/*
	 * The lists outputs_finish() hands out stay alive until outputs_release() (a notebook
	 * being replayed): display updates reach the outputs of earlier cells too, as in
	 * nbclient. Without it an update reaches only the cell's own outputs.
	 */
	OUTPUTS_KEEP_DISPLAYS = 1 << 2,
};

/* An output shown with a display id. */
struct outputs_display {
	char *id;
	cJSON *output;		/* the display_data / execute_result object */
	const cJSON *list;	/* the outputs list it is in */
};

struct outputs_copy;

struct outputs {
	unsigned flags;
	const char *channel_dir;	/* plot paths in events are relative to it */
	const char *plots_dir;		/* OUTPUTS_COPY_PLOTS: where copies go */
	size_t limit, bytes;
	int truncated;
	cJSON *list;
	struct strbuf stream;		/* the stream output being merged */
	char stream_name[8];		/* its name, "" when none is open */
	int clear_pending;		/* clear_output(wait=True): clear before the next output */
	struct outputs_display *displays;
	size_t ndisplays, displays_alloc;
	/* From the done event. */
	char status[16];		/* "ok", "error", "aborted", "" before done */
	int execution_count;		/* -1 when none */
	double duration;
	enum reason reason;		/* why it ended (session.h) */
	char *detail;			/* "timeout", "kernel died (...)", ..., or NULL */
	struct usage usage;		/* what it used, as the host measured it (usage.h) */
	char *plot_note;		/* an error reading or copying a plot, or NULL */
	struct outputs_copy *copy;	/* outputs_share(): the copy shape (outputs.c) */
};

void outputs_init(struct outputs *o, const char *channel_dir, unsigned flags,
		  const char *plots_dir, size_t limit);
void outputs_release(struct outputs *o);
/* Take one event of the cell. */
void outputs_event(struct outputs *o, const struct session_event *ev);
/* The outputs list (the caller owns it); the collector is empty again afterwards. */
cJSON *outputs_finish(struct outputs *o);
/*
 * Also give the outputs in the copy shape: as a collector with OUTPUTS_COPY_PLOTS, `plots_dir`
 * and `limit` would make them (the history's), from this one collection. `o` embeds its plots
 * (OUTPUTS_EMBED_PNG, no OUTPUTS_COPY_PLOTS). Each plot is copied to `plots_dir` as it comes;
 * the outputs are kept once, each plot output remembering its plot, and the copy shape is made
 * from them when asked for. Where the shapes part (text past either limit, a plot whose bundle
 * has an image/png of its own) the rest of the cell is collected in the copy shape apart, as
 * two collectors would. `plots_dir` NULL: no copy shape any more.
 */
void outputs_share(struct outputs *o, const char *plots_dir, size_t limit);
/*
 * Call `fn` with the cell's outputs in the copy shape; `list` is what outputs_finish() gave
 * last, no event fed since. Usually lent in place: the embedded image/png taken out of each
 * plot output's data and metadata.cellbox {plot, width, height} put in, all put back before
 * this returns. Without outputs_share() `fn` gets `list`. What `fn` returns.
 */
int outputs_copy_shape(struct outputs *o, cJSON *list,
		       int (*fn)(const cJSON *outputs, void *data), void *data);
/* nbconvert's `\r` and backspace collapse of a stream text, in place. */
void outputs_collapse(struct strbuf *text);

/*
 * Open the session's checked copy of a plot or artifact by its name, for a consumer that has
 * the name from another source than a session event (an MCP client's resource URI): `rel`
 * must be `plots/<n>.<ext>` (channel_take_file()'s copy), opened by the wall's rules
 * (wall_open(): no link followed, no blocking, a regular file of ours with one link, at most
 * `max` bytes). A descriptor (close-on-exec), or -1 with `err`. Consumers of session events
 * never need it: an event carries the checked bytes (event.h).
 */
int outputs_open_file(const char *channel_dir, const char *rel, size_t max, struct strbuf *err);
/* The same, read into `sb`. 0, or -1 with `err` saying which file and why. */
int outputs_read_file(const char *channel_dir, const char *rel, size_t max, struct strbuf *sb,
		      struct strbuf *err);
/* Copy such a file to `dst` (a plot saved later by its number: :save-plot). 0 or -1. */
int outputs_copy_file(const char *channel_dir, const char *rel, const char *dst,
		      struct strbuf *err);
/* Write `len` bytes of a plot or artifact to `dst` (created 0644, replaced if there). 0 or -1
   with `err`. */
int outputs_save_file(const void *data, size_t len, const char *dst, struct strbuf *err);
/*
 * The host's kept copy of a plot or artifact numbered `index` (the history's plots/): written
 * whole as DIR/<index>.<ext>, or DIR/<index>-<k>.<ext> when that name is taken, never over a
 * copy that is there. Two kernels number their files alike (a context's and the session's;
 * one before and after clear_plots), and a copy of one must not replace the other's.
 * Returns k (1: the plain name), or 0 with `err` (past OUTPUTS_COPY_NAMES names taken).
 */
int outputs_copy_new(const char *dir, int index, const char *ext, const void *data,
		     size_t len, struct strbuf *err);
#define OUTPUTS_COPY_NAMES 64
/* The path outputs_copy_new() wrote for (`index`, `k`). */
char *outputs_copy_name(const char *dir, int index, int k, const char *ext);

#endif
