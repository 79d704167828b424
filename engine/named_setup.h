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

/*
 * Fork named session `name` into a new named session `new_name` (docs/sessions.md, "Fork"),
 * the one way every front end forks, the kernel's backend and its host saying which:
 *	NAMED_FORK_COPY	a kernel that is a process of this host (backend flag
 *			BACKEND_CHILD_KERNELS): its process copied in place (named_fork)
 *	NAMED_FORK_MEMORY	a container's kernel that can be memory-checkpointed (gVisor):
 *			checkpointed (which stops it: runsc cannot leave it running), `name`
 *			made again from the file, then `new_name`; front ends attached to
 *			`name` are left detached (their host was replaced)
 *	NAMED_FORK_RERUN	any other container's kernel (runc: no CRIU here): `name`'s cells
 *			since its kernel started run again in a fresh kernel of a new session,
 *			`name` untouched. Not a copy of its memory: what the cells read from
 *			outside (clocks, random numbers, files they did not write) differs.
 *			Opened with `cfg` but for `name`'s backend, kernel, runtime, image and
 *			engine; `why` says why no memory checkpoint was taken
 * `mask`: as named_setup_open's. 0 with *out filled, or -1 with `err` (a checkpoint file a
 * failed restore leaves is named there).
 */
enum named_fork_kind { NAMED_FORK_COPY, NAMED_FORK_MEMORY, NAMED_FORK_RERUN };
struct named_forked {
	enum named_fork_kind kind;
	size_t cells;		/* NAMED_FORK_RERUN: the cells run again */
	int raised;		/* of which raised */
	char why[256];		/* why not a memory copy */
};
int named_setup_fork(const struct cellbox_config *cfg, const char *name, const char *new_name,
		     const sigset_t *mask, struct named_forked *out, struct strbuf *err);
/*
 * What a front end says of the fork (malloc'd, one line): "forked session 'a' into 'b': ...",
 * a re-run said as one ("by re-running N cells: not a memory copy").
 */
char *named_forked_text(const char *name, const char *new_name, const struct named_forked *f);

#endif
