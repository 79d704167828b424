/*
 * What an unnamed session keeps of its executes for the host that takes its kernel over at a
 * `:detach` (session.h: session_keep_cells): a named session's keep (named_keep.h), filled as
 * the host fills its own, with the very lines the host would have kept, so that the host
 * starts with it (session_take_over, session_keep_take) and an attach shows the cells ran
 * before the detach. See session_int.h.
 */
#include "session.h"
#include "session_int.h"
#include "named_keep.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* A kept cell in flight: its events go to the keep, then on to the caller's callback. */
struct kept {
	struct hcell *c;
	session_event_fn fn;
	void *data;
};

void session_keep_cells(struct session *s)
{
	if (s->named || s->keep)
		return;
	s->keep = xmalloc(sizeof(*s->keep));
	named_keep_init(s->keep);
}

struct named_keep *session_keep_take(struct session *s)
{
	struct named_keep *k = s->keep;

	s->keep = NULL;
	return k;
}

void session_keep_release(struct session *s)
{
	if (!s->keep)
		return;
	named_keep_release(s->keep);
	free(s->keep);
	s->keep = NULL;
}

void session_keep_state(struct session *s, const char *msg)
{
	/* As the host does (named_host_state): a fresh kernel, nothing to re-run. */
	if (s->keep && msg && !strcmp(msg, "kernel restarted"))
		named_keep_restart(s->keep);
}

static void kept_event(struct session *s, const struct session_event *ev, void *data)
{
	struct kept *k = data;
	struct hcell *c = k->c;
	int done = ev->type == SESSION_EV_DONE;

	/* (A keep taken while the cell ran is the taker's now: the cell is left alone.) */
	if (s->keep && (!c->cut || done)) {
		size_t n;
		char *line = named_keep_ev_line(c->id, ev, &n);

		named_keep_line(s->keep, c, line, n, done);
		free(line);
	}
	if (s->keep && done) {
		c->done = 1;
		named_keep_rerun(s->keep, c->code, ev);
		named_keep_trim(s->keep);	/* (last: it may free the cell) */
	}
	if (k->fn)
		k->fn(s, ev, k->data);
	if (done)
		free(k);
}

void session_keep_wrap(struct session *s, const char *code, session_event_fn *fn, void **data)
{
	struct kept *k = xmalloc(sizeof(*k));

	(void)s;
	k->c = xcalloc(1, sizeof(*k->c));
	k->c->code = xstrdup(code);
	k->c->execute = 1;
	strbuf_init(&k->c->log, 0);
	k->fn = *fn;
	k->data = *data;
	*fn = kept_event;
	*data = k;
}

void session_keep_sent(struct session *s, void *data, unsigned long id)
{
	struct kept *k = data;

	if (id && s->keep) {	/* its events come at dispatches, after this */
		k->c->id = id;
		named_keep_add(s->keep, k->c);
		return;
	}
	named_keep_cell_free(k->c);
	free(k);
}
