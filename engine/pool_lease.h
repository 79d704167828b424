#ifndef CELLBOX_POOL_LEASE_H
#define CELLBOX_POOL_LEASE_H

/*
 * Pooled mode: warm kernels kept ready by `cellbox pool serve`, shared by every cellbox of the
 * user through files, in the spirit of the queue.
 *
 * A pool is a directory:
 *
 *	daemon.lock          flock()ed by the daemon while it lives; daemon.json says who it is
 *	kernels/<k>/         each kernel's channel (kernels/PROTOCOL.md), made by the daemon
 *	ready/<k>            an empty file: kernel <k> is warm and free
 *	leased/<k>.<pid>     kernel <k> is leased to process <pid>
 *
 * A lease is one rename(ready/<k>, leased/<k>.<pid>): atomic, so no kernel is ever handed to
 * two clients, and taking one costs no round trip to the daemon. The client then owns the
 * kernel: it talks to it through kernels/<k>/ and, when done, kills it and removes its entry
 * and channel. A kernel that ran user code is never handed to anyone else. The daemon refills
 * ready/ to the minimum, keeps ready + leased at or under the maximum, reclaims the kernels of
 * clients that died, retires idle and old kernels, and pings ready kernels (a kernel that
 * stopped answering is replaced). Its kernels die with it (PR_SET_PDEATHSIG); a restarted
 * daemon removes whatever a crashed one left. A client waiting for a kernel leaves want/<pid>.
 *
 * This module is the client's side, below the session: leasing a kernel, the strategies for
 * when none is free, and whether the pool's daemon lives. The daemon is pool_daemon.h (above
 * the session: it opens sessions to start kernels).
 */

#include <cjson/cJSON.h>
#include "util.h"

/* Where a waiting client leaves its pid (want/<pid>): the daemon grows the pool for it. */
#define POOL_WANT_DIR "want"

/* What a client does when no warm kernel is free (llm-sandbox's ExhaustionStrategy). */
enum pool_strategy {
	POOL_WAIT,		/* wait up to the acquisition timeout for one (default) */
	POOL_FAIL_FAST,		/* fail at once: "pool exhausted" */
	POOL_TEMPORARY,		/* start a kernel outside the pool, destroyed after use */
};

struct pool_lease {
	char *entry;		/* leased/<k>.<pid> */
	char *channel_dir;	/* kernels/<k> */
};

/* The pool directory of `name` under `runtime_dir` (caller frees). */
char *pool_dir_path(const char *runtime_dir, const char *name);
/* Parse "wait", "fail-fast" or "temporary"; -1 for anything else. */
int pool_strategy_parse(const char *s, enum pool_strategy *out);
/*
 * Lease a warm kernel. Returns 1 with `lease` filled; 0 when the caller should start a kernel
 * of its own (strategy temporary, or no daemon serves this pool: `err` then says why);
 * -1 with `err` set when the pool is exhausted or no daemon serves it (fail-fast), or the
 * wait timed out.
 */
int pool_lease(const char *pool_dir, enum pool_strategy strategy, double timeout,
	       struct pool_lease *lease, struct strbuf *err);
/* The pool's daemon.json (who serves it and how), NULL when there is none. Caller frees. */
cJSON *pool_info(const char *pool_dir);
/* The backend the pool's daemon runs its kernels on ("local", "docker"), NULL when unknown. */
char *pool_backend(const char *pool_dir);
/* The kernel the pool's daemon runs ("python", "r"), NULL when unknown. */
char *pool_kernel(const char *pool_dir);
/* Whether a live daemon holds the pool's lock. */
int pool_daemon_alive(const char *pool_dir);
/*
 * Whether the daemon that handed out `lease` still serves: then a released kernel is its to
 * end (it removes every released kernel, so a client may leave a container to it).
 */
int pool_lease_daemon_alive(const struct pool_lease *lease);
/* Give the lease up: remove the entry (the kernel and channel are the caller's to end). */
void pool_lease_release(struct pool_lease *lease);

#endif
