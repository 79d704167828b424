#ifndef CELLBOX_NAMED_SETUP_H
#define CELLBOX_NAMED_SETUP_H

#include "named.h"
#include "setup.h"

/*
 * A named session (named.h), set up as setup_open() sets one up. With `start`, its host is
 * started with the settings of `cfg` (the session as setup_open() opens it, recording the
 * history; `idle`: when it ends by itself, NULL never) and then attached to; without,
 * it is attached to as it runs (`read_only`: to watch). NULL with `err` ("a session named X
 * is running", "no session named X", or why its kernel did not start). setup_close()
 * detaches from it.
 */
struct session *named_setup_open(const struct cellbox_config *cfg, const char *name, int start,
				 const struct named_idle *idle, int read_only,
				 session_state_fn on_state, void *data,
				 const sigset_t *mask, struct strbuf *err);
/*
 * The same, its host's session made from memory checkpoint `path` (named_memckpt_restore:
 * the kernel restored and adopted, not started) and attached to.
 */
struct session *named_setup_restore(const struct cellbox_config *cfg, const char *name,
				    const char *path, const struct named_idle *idle,
				    const sigset_t *mask, struct strbuf *err);
/*
 * `:detach` of an unnamed session `s`: its running kernel handed to the host of a new named
 * session `name` (no idle limit), which adopts it from its channel (session_take_over: every
 * variable in memory, the policy's hook installed, the session's options), then `s` let go of
 * (session_detach: the kernel and channel left to the host) and the new session attached to,
 * which the caller then uses as its session. Requests in flight are waited for up to 2 s
 * first (dispatched as usual). NULL with `err` when it may not be handed over
 * (session_hand_over) or the host could not take it: `s` is then as it was.
 */
struct session *named_setup_handover(const struct cellbox_config *cfg, struct session *s,
				     const char *name, session_state_fn on_state, void *data,
				     const sigset_t *mask, struct strbuf *err);

#endif
