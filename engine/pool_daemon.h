#ifndef CELLBOX_POOL_DAEMON_H
#define CELLBOX_POOL_DAEMON_H

/*
 * Pooled mode, the daemon (`cellbox pool serve`): it starts kernels through sessions, keeps
 * the pool directory described in pool_lease.h in shape, and describes it (`pool status`).
 * It sits above the session, as the lease sits below it.
 */

#include <stdio.h>
#include <sys/types.h>
#include <cjson/cJSON.h>
#include "pool_lease.h"
#include "session.h"
#include "util.h"

struct pool_config {
	int min_size;			/* warm kernels kept ready */
	int max_size;			/* ready + leased at most */
	int prewarm;			/* start min_size kernels at once (else on first lease) */
	double idle_timeout;		/* retire ready kernels above min idle this long; 0 = never */
	double max_age;			/* replace ready kernels older than this; 0 = never */
	double health_interval;		/* ping ready kernels this often; 0 = never */
	const char *preimport;		/* "numpy, matplotlib.pyplot": imported before leasing */
	int ready_fd;			/* "1" is written there once serving (-1: none) */
	const char *const *engines;	/* container engines to place kernels on (--engine) */
	size_t nengines;		/* 0: the one of the kernel options (docker-host) */
};

/* Defaults as llm-sandbox's PoolConfig: min 1, max 4, prewarm, idle 300 s, age 3600 s, 30 s. */
void pool_config_defaults(struct pool_config *pc);

/*
 * Serve the pool in the foreground until SIGTERM or SIGINT: make kernels with `kernel_opts`
 * (backend, python, limits) and keep the pool as described above. Progress and decisions go
 * to `log` (one line each). Returns 0 on a clean stop, -1 with `err` set when it cannot serve
 * (another daemon holds the pool).
 */
int pool_serve(const char *pool_dir, const struct pool_config *pc,
	       const struct session_opts *kernel_opts, FILE *log, struct strbuf *err);
/*
 * The daemon as a process (pool_pid.c). `dirfd` is the pool directory opened by
 * wall_own_dir_open(): ours, 0700, reached without a link; nothing here follows one.
 *
 * The daemon.log of the pool, opened for appending: a regular file of ours with one link
 * (made when missing). The descriptor, or -1 with `err`.
 */
int pool_log_open(int dirfd, struct strbuf *err);
/*
 * The pool's daemon: the process holding the flock on its daemon.lock (as /proc/locks says;
 * never the pid daemon.json names, which a kernel of ours could write). 0 when none.
 */
pid_t pool_daemon_pid(int dirfd);
/*
 * Send `sig` to the pool's daemon: its pid is opened as a pidfd, checked to be a process of
 * our uid that still holds the lock, and signalled through the pidfd. Returns the pidfd
 * (readable once the daemon exited; the caller closes it) with `*pid` set, or -1 with `err`.
 */
int pool_daemon_signal(int dirfd, int sig, pid_t *pid, struct strbuf *err);

/* Describe the pool: daemon, kernels, leases, ages, health. NULL with `err` set on failure. */
cJSON *pool_status(const char *pool_dir, struct strbuf *err);

#endif
