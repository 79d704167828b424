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

#endif
