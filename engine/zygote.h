#ifndef CELLBOX_ZYGOTE_H
#define CELLBOX_ZYGOTE_H

/*
 * A zygote: a Python runner (local backend) that imported Python, IPython and a pool's
 * --preimport modules, built the kernels' IPython shell, ran no user code and started no
 * threads, and forks kernels on demand.
 * A new kernel is then a fork() of it instead of a fresh interpreter, ready in tens of
 * milliseconds rather than hundreds.
 *
 * The zygote is spoken to over a socketpair only its starter holds (close-on-exec, closed by
 * every child of the starter that does not exec and by every process the zygote forks): no
 * kernel can ask it for anything. For a kernel it fits, the local backend asks it instead of
 * forking: the zygote clones a kernel's init with CLONE_PARENT into new pid and mount
 * namespaces (and a user namespace unless root), so the init is the starter's child as a cold
 * kernel's is (reaped by it, PR_SET_PDEATHSIG on it, its own process group, /proc of its
 * namespace, signals passed on, the runner's status as its own); the init forks the runner,
 * pid 2, which drops what the zygote had (capabilities unless root, every descriptor, the
 * random generators' state, its stdio, limits and working directory) and goes on into the
 * runner's main() (runner/zygote.py `_zygote`). The kernel then makes its channel, capture threads
 * and inotify watch as a cold one, and takes the zygote's shell over.
 *
 * Only a process that installs a zygote (the pool daemon; the tests) gets forked kernels.
 */

#include <sys/types.h>
#include "backend.h"
#include "util.h"

struct zygote;

/*
 * Start a zygote in directory `dir` (made 0700; its runner and log live there) for kernels
 * run by `python` with modules `preimport` ("numpy, pandas"; NULL or "" for none). It
 * imports in the background: the first zygote_fork() waits for it. NULL with `err` set.
 */
struct zygote *zygote_start(const char *dir, const char *python, const char *preimport,
			    struct strbuf *err);
/* The zygote's pid (also once it is gone). */
pid_t zygote_pid(const struct zygote *z);
/* The --preimport list it was started with ("" for none). */
const char *zygote_preimport(const struct zygote *z);
/* Whether the zygote can still fork kernels (it has not died nor failed a request). */
int zygote_usable(const struct zygote *z);
/* Why it is no longer usable ("" while it is). */
const char *zygote_error(const struct zygote *z);
/* Tell the zygote that its process ended (its starter reaped `pid`): 1 when it was the zygote's. */
int zygote_reaped(struct zygote *z, pid_t pid);
/*
 * Fork a kernel for `spec`: its init, a child of ours in a pid namespace of its own, and the
 * runner under it. Returns 0 with `*kernel` the init's pid, or -1 with `err` set (the zygote
 * is then no longer usable: zygote_error()).
 */
int zygote_fork(struct zygote *z, const struct kernel_spec *spec, pid_t *kernel,
		struct strbuf *err);
/* Kill the zygote and free it. NULL is fine. */
void zygote_free(struct zygote *z);

/*
 * The process's zygote (NULL: none): the local backend forks the kernels it fits (python,
 * the same interpreter) from it. The caller keeps it alive while it is installed.
 */
void zygote_install(struct zygote *z);
/* The installed zygote when it can fork a kernel for `spec`, else NULL. */
struct zygote *zygote_for(const struct kernel_spec *spec);
/* In a child of the installing process that does not exec (a kernel's init): drop the socket. */
void zygote_close_inherited(void);

#endif
