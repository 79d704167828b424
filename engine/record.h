#ifndef CELLBOX_RECORD_H
#define CELLBOX_RECORD_H

/*
 * History recording for the line front ends (`run`, `repl`): feeds a cell's events to an
 * outputs collector and appends the finished cell to the session's history store. A store
 * that cannot be opened or written is reported once and then left alone: recording never
 * stops a cell from running.
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
void record_close(struct record *r);

#endif
