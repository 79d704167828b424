#ifndef CELLBOX_OUTPUTS_H
#define CELLBOX_OUTPUTS_H

/*
 * Collects one cell's session events as nbformat outputs, as nbclient and nbconvert make
 * them: consecutive streams of the same name merged and `\r` / backspace collapsed
 * (nbconvert's coalesce_streams), `execute_result`, `display_data` (a captured plot as
 * `image/png` base64, or referenced by path), `error` with ename / evalue / traceback.
 *
 *	outputs_init(&o, session_channel_dir(s), OUTPUTS_EMBED_PNG, NULL, 0);
 *	... for every event of the cell: outputs_event(&o, ev);
 *	cJSON *list = outputs_finish(&o);	// the cell's "outputs"; o.status etc. are set
 *	outputs_release(&o);
 *
 * The text kept is capped (`limit` bytes, default OUTPUTS_LIMIT): past it the text is cut and
 * a note says so, and `truncated` is set.
 */

#include <cjson/cJSON.h>
#include "session.h"
#include "util.h"

#define OUTPUTS_LIMIT ((size_t)32 << 20)

enum {
	OUTPUTS_EMBED_PNG = 1 << 0,	/* plots as data["image/png"] base64 (a notebook) */
	OUTPUTS_COPY_PLOTS = 1 << 1,	/* copy plots to plots_dir, metadata cellbox.plot = path */
};

struct outputs {
	unsigned flags;
	const char *channel_dir;	/* plot paths in events are relative to it */
	const char *plots_dir;		/* OUTPUTS_COPY_PLOTS: where copies go */
	size_t limit, bytes;
	int truncated;
	cJSON *list;
	struct strbuf stream;		/* the stream output being merged */
	char stream_name[8];		/* its name, "" when none is open */
	/* From the done event. */
	char status[16];		/* "ok", "error", "aborted", "" before done */
	int execution_count;		/* -1 when none */
	double duration;
	enum reason reason;		/* why it ended (session.h) */
	char *detail;			/* "timeout", "kernel died (...)", ..., or NULL */
	char *plot_note;		/* an error reading or copying a plot, or NULL */
};

void outputs_init(struct outputs *o, const char *channel_dir, unsigned flags,
		  const char *plots_dir, size_t limit);
void outputs_release(struct outputs *o);
/* Take one event of the cell. */
void outputs_event(struct outputs *o, const struct session_event *ev);
/* The outputs list (the caller owns it); the collector is empty again afterwards. */
cJSON *outputs_finish(struct outputs *o);
/* nbconvert's `\r` and backspace collapse of a stream text, in place. */
void outputs_collapse(struct strbuf *text);

#endif
