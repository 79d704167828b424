/*
 * Contexts (context.h): another session started in the sandbox of a running one. Not a part
 * of the session module: it opens a session as any caller does (session_open()) and ties it
 * to its parent through the session's own members (session_int.h, as named_client.c reads
 * them); session_close() unties either side.
 */
#include "context.h"
#include "session_int.h"

#include <string.h>

#include "backend.h"
#include "kernel.h"

struct session *context_open(struct session *parent, const char *kernel,
			     session_state_fn on_state, void *state_data,
			     struct strbuf *err)
{
	const struct backend_ops *ops;
	struct session_opts o;
	struct session *c;
	int slot = -1;

	if (parent->named || parent->parent) {
		strbuf_addstr(err, parent->named ? "a named session has no contexts yet (its host "
			      "owns its sandbox)" : "a context has no contexts of its own: "
			      "make it in the session's");
		return NULL;
	}
	ops = backend_find(parent->backend_name, err);
	if (!ops)
		return NULL;
	if (!(ops->flags & BACKEND_CONTEXTS)) {
		strbuf_addf(err, "the %s backend cannot start another kernel in a running "
			    "sandbox yet (docs/sessions.md, \"Contexts\")", parent->backend_name);
		return NULL;
	}
	for (int i = SESSION_CONTEXTS_MAX - 1; i >= 0; i--)
		if (!parent->contexts[i])
			slot = i;
	if (slot < 0) {
		strbuf_addf(err, "too many contexts: %d are open (the most a session has); "
			    "remove one first", SESSION_CONTEXTS_MAX);
		return NULL;
	}
	if (kernel && !kernel_find(kernel)) {
		strbuf_addf(err, "no kernel '%.40s' (python or r)", kernel);
		return NULL;
	}
	/* The parent's sandbox: its backend, directory, limits, policy; a fresh kernel. */
	o = parent->opts;
	o.backend = parent->backend_name;
	o.runtime_dir = parent->runtime_dir;
	o.cwd = parent->cwd;
	o.kernel = kernel ? kernel : parent->kernel->name;
	o.pool_dir = NULL;
	o.within = parent->ch.dir;
	o.keep_channel = 0;
	o.on_state = on_state;
	o.state_data = state_data;
	c = session_open(&o, err);
	if (!c)
		return NULL;
	c->parent = parent;
	parent->contexts[slot] = c;
	return c;
}

int context_count(const struct session *s)
{
	int n = 0;

	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		n += s->contexts[i] != NULL;
	return n;
}
