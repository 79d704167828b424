#ifndef CELLBOX_RECORD_H
#define CELLBOX_RECORD_H

/*
 * History recording for the front ends: feeds a cell's events to an outputs collector and
 * appends the finished cell to the session's history store. A front end that collects the
 * cell's outputs itself (a notebook's, embedding plots) shares its collector instead, so
 * that a cell is collected once: record_share() when the cell starts, record_append() when
 * it is done. A store that cannot be opened or written is reported once and then left alone:
 * recording never stops a cell from running.
 */

#include "config.h"
#include "history.h"
#include "outputs.h"
#include "session.h"

struct record {
	struct history *h;	/* NULL: not recording */
	struct outputs out;
	const char *kernel;	/* the session's kernel, recorded with each cell */
};

/* Start recording for session `s` (nothing when history-size is 0). */
void record_open(struct record *r, const struct cellbox_config *cfg, struct session *s);
/* Take one event of the running cell. */
void record_event(struct record *r, struct session *s, const struct session_event *ev);
/* The cell is done: append it with its outputs. */
void record_cell(struct record *r, const char *code);
/*
 * Collect the history's shape of the next cell with the front end's collector `o` (fresh
 * from outputs_init(), embedding plots) instead of record_event(): outputs_share().
 */
void record_share(struct record *r, struct outputs *o);
/*
 * The cell `o` collected is done and `outputs` is what outputs_finish(o) gave: append it with
 * the history's shape of those outputs (outputs_copy_shape()). `outputs` stays the caller's,
 * as it was.
 */
void record_append(struct record *r, const char *code, struct outputs *o, cJSON *outputs);
void record_close(struct record *r);

#endif
