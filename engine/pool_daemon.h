#ifndef CELLBOX_POOL_DAEMON_H
#define CELLBOX_POOL_DAEMON_H

/*
 * Pooled mode, the daemon (`cellbox pool serve`): it starts kernels through sessions, keeps
 * the pool directory described in pool_lease.h in shape, and describes it (`pool status`).
 * It sits above the session, as the lease sits below it.
 */

#include <stdio.h>
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
/* Describe the pool: daemon, kernels, leases, ages, health. NULL with `err` set on failure. */
cJSON *pool_status(const char *pool_dir, struct strbuf *err);

#endif
