#ifndef CELLBOX_NAMED_KEEP_H
#define CELLBOX_NAMED_KEEP_H

/*
 * What a named session's host (named_host.c) keeps of its cells: the last NAMED_LOG_CELLS
 * executes with at most NAMED_LOG_BYTES of their events (NAMED_CELL_LOG_MAX each, then a
 * note), shown to a front end that attaches later; and the cells the kernel ran since it
 * started, the list a checkpoint re-runs (at most NAMED_RERUN_CELLS and NAMED_RERUN_BYTES of
 * code; past them the session cannot be checkpointed). See named.h.
 *
 * An unnamed session keeps the same of its own executes when its front end asks
 * (session.h: session_keep_cells), for the host that takes its kernel over at a `:detach`:
 * that host starts with this keep (session_keep_take) and shows its cells to an attach.
 */

#include <cjson/cJSON.h>
#include "event.h"
#include "named.h"
#include "strbuf.h"

struct host;

/* A request of a front end's: an execute (kept, shown to all) or a private one. */
struct hcell {
	struct host *h;
	unsigned long id;
	char *code;
	struct strbuf log;	/* its ev lines, for front ends that attach later */
	int execute, done, cut;
	unsigned origin;	/* the serial of the front end that sent it */
	struct hcell *next;
};

struct named_keep {
	struct hcell *cells, *last;	/* executes, oldest first */
	size_t ncells, log_bytes;
	cJSON *rerun;			/* the cells since the kernel started: {code, status} */
	int rerun_cells;		/* how many (cJSON counts by walking its list) */
	size_t rerun_bytes;
	int rerun_over;			/* past NAMED_RERUN_CELLS or _BYTES: no checkpoint */
};

void named_keep_init(struct named_keep *k);
/*
 * The ev line of event `ev` of request `id` as front ends get it and the keep holds it
 * ("\n"-ended, its length in *len; free() it).
 */
char *named_keep_ev_line(unsigned long id, const struct session_event *ev, size_t *len);
/*
 * Session `s`'s keep (session_keep_take), when it has one, made `k`'s (what was in `k` freed):
 * the host of an unnamed session's kernel handed over starts with the cells before.
 */
void named_keep_take(struct named_keep *k, struct session *s);
/* Free every cell kept and the list. */
void named_keep_release(struct named_keep *k);
void named_keep_cell_free(struct hcell *c);
/* An execute sent to the kernel, kept from now on (its events as they come). */
void named_keep_add(struct named_keep *k, struct hcell *c);
/* One ev line of cell `c` (`done`: its last), kept within the caps. */
void named_keep_line(struct named_keep *k, struct hcell *c, const char *line, size_t len,
		     int done);
/* Keep at most NAMED_LOG_CELLS finished cells and NAMED_LOG_BYTES of their events. */
void named_keep_trim(struct named_keep *k);
/* A finished execute into the list a checkpoint re-runs (ev: its done). */
void named_keep_rerun(struct named_keep *k, const char *code, const struct session_event *ev);
/* A fresh kernel: nothing to re-run. */
void named_keep_restart(struct named_keep *k);

#endif
