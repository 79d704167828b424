/*
 * Named sessions as front ends open them (named_setup.h): the host started with the settings'
 * session (setup_open() in the host, so its policy, libraries, pool and files are the
 * settings'), recording the history itself, then attached to like any other.
 */
#include "named_setup.h"
#include "clock.h"
#include "msg.h"
#include "named.h"
#include "record.h"

#include <poll.h>
#include <stdlib.h>

/* What the host process opens and records with (its copy of the front end's memory). */
struct host_ctx {
	const struct cellbox_config *cfg;
	const char *restore;		/* a memory checkpoint's file to restore, else NULL */
	struct session *adopt;		/* a session whose kernel is handed over, else NULL */
	struct record rec;
};

static struct session *host_open(void *data, session_state_fn on_state, void *state_data,
				 struct strbuf *err)
{
	struct host_ctx *c = data;
	struct strbuf note = STRBUF_INIT;
	struct session *s;

	if (c->adopt)		/* the front end's session, as it was when the host forked */
		return session_take_over(c->adopt, on_state, state_data, err);
	if (c->restore) {
		struct session_opts so = c->cfg->session;

		so.on_state = on_state;
		so.state_data = state_data;
		return named_memckpt_restore(&so, c->restore, err);
	}
	s = setup_open(c->cfg, on_state, state_data, NULL, &note, err);

	if (s && note.len)
		msg_error("note: %s", note.buf);
	strbuf_release(&note);
	return s;
}

static void rec_open(void *data, struct session *s)
{
	struct host_ctx *c = data;

	record_open(&c->rec, c->cfg, s);
}

static void rec_event(void *data, struct session *s, const struct session_event *ev)
{
	record_event(&((struct host_ctx *)data)->rec, s, ev);
}

static void rec_cell(void *data, const char *code)
{
	record_cell(&((struct host_ctx *)data)->rec, code);
}

static struct host_ctx ctx;

struct session *named_setup_restore(const struct cellbox_config *cfg, const char *name,
				    const char *path, const struct named_idle *idle,
				    const sigset_t *mask, struct strbuf *err)
{
	struct session *s;

	ctx.restore = path;
	s = named_setup_open(cfg, name, 1, idle, 0, NULL, NULL, mask, err);
	ctx.restore = NULL;
	return s;
}

struct session *named_setup_handover(const struct cellbox_config *cfg, struct session *s,
				     const char *name, session_state_fn on_state, void *data,
				     const sigset_t *mask, struct strbuf *err)
{
	struct session *named;

	/* The front end's own requests in flight (the UI's variables pane, its width) end first. */
	for (double end = clock_now() + 2; session_state(s) == SESSION_BUSY && clock_now() < end;) {
		struct pollfd p = { .fd = session_fd(s), .events = POLLIN };

		poll(&p, 1, 50);
		session_dispatch(s);
	}
	if (session_hand_over(s, err) < 0)
		return NULL;
	ctx.adopt = s;
	named = named_setup_open(cfg, name, 1, NULL, 0, on_state, data, mask, err);
	ctx.adopt = NULL;
	if (named)		/* the host has the kernel and its channel: let go of both */
		session_detach(s);
	return named;
}

struct session *named_setup_open(const struct cellbox_config *cfg, const char *name, int start,
				 const struct named_idle *idle, int read_only,
				 session_state_fn on_state, void *data,
				 const sigset_t *mask, struct strbuf *err)
{
	static const struct named_recorder rec = { rec_open, rec_event, rec_cell, &ctx };
	struct session_opts so = cfg->session;
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	struct session *s = NULL;

	if (!runtime) {
		strbuf_addstr(err, "no runtime directory of ours for the session");
		return NULL;
	}
	ctx.cfg = cfg;
	so.on_state = on_state;
	so.state_data = data;
	if (!start || named_start(runtime, name, idle, host_open, &ctx, &rec, err) == 0)
		s = named_attach(runtime, name, read_only, &so, err);
	if (s && mask)
		session_set_sigmask(s, mask);
	free(runtime);
	return s;
}
