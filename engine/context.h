#ifndef CELLBOX_CONTEXT_H
#define CELLBOX_CONTEXT_H

#include "session.h"

/*
 * Contexts (docs/sessions.md, "Contexts"): another kernel in the sandbox of session `parent`,
 * a session of its own (its own channel, runner, state, requests and restarts) that shares
 * the parent's files and limits: on the local backend a kernel in the same working
 * directory under the same memory limit; in a container a kernel started by an exec there,
 * its channel's parts inside the parent's (channel_create_within()). `kernel` is "python" or
 * "r" (NULL: the parent's).
 * Only where the backend's family can (backend.h BACKEND_CONTEXTS), never for a named
 * session's front end nor a context's context, and at most SESSION_CONTEXTS_MAX open at once
 * per parent: else NULL with `err` (empty on entry, as for session_open()) saying why. Its
 * events pass the same wall as any kernel's. Close it with session_close(); a parent closed
 * first lets its contexts run on as sessions of their own (close them too).
 */
struct session *context_open(struct session *parent, const char *kernel,
			     session_state_fn on_state, void *state_data, struct strbuf *err);
/* How many contexts of `s` are open. */
int context_count(const struct session *s);

#endif
