#ifndef CELLBOX_SETUP_H
#define CELLBOX_SETUP_H

/*
 * Setting a session up as every front end does (the line commands, the full-screen UI, the
 * MCP server): the security policy of the settings, loaded once; the libraries a session
 * asks for, checked, installed once and verified in a pooled kernel; the pool; the files
 * copied in after the start and out before the end. Errors come back in `err`, worded for
 * the user; the front end decides where they go.
 */

#include <signal.h>
#include <stdio.h>
#include "config.h"
#include "session.h"

/*
 * The policy `name` (a preset, NAME.policy in the policies directories, or FILE.policy),
 * loaded once and kept until another is asked for; NULL for none (policy_is_none), or NULL
 * with `err` set when it cannot be read.
 */
const struct policy *setup_policy(const char *name, struct strbuf *err);
/* The libraries `set` (requirements, ',' between) parse and none is a module `p` blocks. */
int setup_libraries_check(const char *set, const struct policy *p, struct strbuf *err);
/*
 * Have the libraries `set` installed (once: later sessions reuse them) for a session of `so`
 * and point `so` at them: *image (containers: the derived image) or *python (local: the
 * venv's interpreter) is set to what `so` now borrows, and the caller keeps it until the
 * session ends, then frees it. "installed X in N s" goes to `progress` (NULL: quiet) after
 * `who` ("cellbox"). `shared`: a derived image may be another user's who chose so too
 * (the setting libraries-shared). Nothing for an empty set. -1 with `err`.
 */
int setup_libraries_prepare(const char *set, const char *wheelhouse, int shared,
			    struct session_opts *so, FILE *progress, const char *who,
			    char **image, char **python, struct strbuf *err);
/*
 * setup_libraries_prepare() for the libraries of the settings (the libraries, wheelhouse
 * settings), with what it makes kept for every later session of the process. -1 with `err`.
 */
int setup_settings_libraries(const struct cellbox_config *cfg, struct session_opts *so,
			     struct strbuf *err);
/* A pooled kernel of `s` must hold the libraries `set`: -1 with `err` when it does not. */
int setup_libraries_verify(struct session *s, const char *set, struct strbuf *err);

/*
 * Open a session with the settings of `cfg`: its policy, its libraries, the pool, then the
 * --copy-in files. `on_state` (may be NULL) hears of kernel state changes, `mask` (may be
 * NULL) is the signal mask its waits sleep with (session_set_sigmask). A note about the pool
 * goes to `note`. NULL with `err` (the session is closed again when a later step failed).
 */
struct session *setup_open(const struct cellbox_config *cfg, session_state_fn on_state,
			   void *data, const sigset_t *mask, struct strbuf *note,
			   struct strbuf *err);
/*
 * Close a session from setup_open(), first copying out the --copy-out files while its kernel
 * lives and `*stop` (may be NULL) is 0. -1 when a copy failed (its words in `err`, the
 * others still tried), else 0. NULL is fine.
 */
int setup_close(struct session *s, const struct cellbox_config *cfg,
		const volatile sig_atomic_t *stop, struct strbuf *err);

#endif
