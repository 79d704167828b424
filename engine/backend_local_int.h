#ifndef CELLBOX_BACKEND_LOCAL_INT_H
#define CELLBOX_BACKEND_LOCAL_INT_H

/*
 * What the files of the local family share. Internal: included by the backend_local*.c files
 * only. backend_local.c is the running kernel: start, reap, signal, kill, release, adoption,
 * usage and the ops table. backend_local_fork.c is how the kernel's process is made: forked
 * into pid, mount and user namespaces of its own (a plain fork where they are not allowed),
 * its init (pid 1 there: signals passed on, orphans reaped, its parent's death followed until
 * it is asked to let go) and the runner exec'd.
 */

#include <signal.h>
#include <sys/types.h>

#include "backend.h"

/*
 * The signal that asks the kernel's init to outlive its parent (local_release), and its
 * answer: the init's name (/proc/PID/comm, which only the init itself can change) once it has.
 */
#define LET_GO_SIGNAL (SIGRTMIN + 4)
#define LET_GO_NAME "cellbox-let-go"

/* Set up the runner's process and exec it; on failure report errno through `errfd`. */
void __attribute__((noreturn)) backend_local_exec_runner(const struct kernel_spec *spec,
						       int errfd);
/*
 * The kernel's init, pid 1 of its own pid namespace: runs the runner, passes signals on, reaps
 * orphans, drops PR_SET_PDEATHSIG on LET_GO_SIGNAL from outside its namespace, and ends when
 * the runner does (a signal N told as 128 + N).
 */
void __attribute__((noreturn)) backend_local_kernel_init(const struct kernel_spec *spec,
						       int errfd);
/* Give a new user namespace our own uid and gid (an unprivileged pid namespace needs one). */
int backend_local_map_ids(pid_t pid, uid_t uid, gid_t gid);
/*
 * Fork the kernel into a pid namespace of its own (*in_ns 1), else a plain fork (*in_ns 0):
 * the pid, 0 in the child, -1.
 */
pid_t backend_local_fork_kernel(int *in_ns);

#endif
