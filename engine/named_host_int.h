#ifndef CELLBOX_NAMED_HOST_INT_H
#define CELLBOX_NAMED_HOST_INT_H

/*
 * The host of a named session inside (named_host.c: its loop, its front ends and what they
 * ask; named_host_life.c: its status, and when it ends the session on its own). Not for
 * other files: they have named_int.h's named_host_new(), named_host_state() and
 * named_host_serve().
 */

#include <sys/stat.h>
#include "named_int.h"
#include "named_keep.h"

/* A front end connected to the host. */
struct hclient {
	struct named_conn c;
	int read_only;
	int hello;		/* said hello: gets cells and events */
	unsigned serial;
};

/* The host: one session, its front ends, what it keeps of its cells and the copies made. */
struct host {
	struct session *s;
	const char *name, *dir;
	struct hclient *cl[NAMED_MAX_CLIENTS];
	int ncl;
	unsigned serial;
	struct named_keep keep;		/* the executes kept and the cells to re-run */
	struct hcell *priv;		/* private requests in flight */
	double idle_since, ttl;
	char *ttl_checkpoint;		/* written first when the idle limit ends it; NULL: none */
	int stop;
	const struct named_recorder *rec;
	char *runtime;			/* the runtime directory `dir` is in */
	int forks[NAMED_MAX_FORKS];	/* pidfds of the copies made of the kernel; -1: none */
	int nforks;
	struct stat dir_st;		/* `dir` as the host found it */
	double dir_looked;		/* when it was last looked at */
	int dir_gone;			/* removed (or another in its place): not ours to remove */
};

/* How often the host looks whether its directory is still there (seconds). */
#define DIR_LOOK 5.0

/* named_host_life.c */
/* The session's status into `r`: name, backend, kernel, sandbox, state, what runs, idle
   since, front ends attached, idle limit, the kernel's memory now. */
void named_host_add_status(struct host *h, cJSON *r);

/*
 * Milliseconds until the idle limit ends the session, -1 when there is none now (somebody
 * is attached, or a cell runs); 0 once it has ended it (h->stop, its checkpoint written
 * first when one is asked; a checkpoint that cannot be written keeps the session for
 * another idle limit).
 */
int named_host_idle_wait(struct host *h);
/*
 * Whether the session's directory is gone (its runtime directory removed, as logind does at
 * logout, or a test's): nobody can reach the session then (its socket went with it), nor its
 * kernel run (its channel did), so the host ends it rather than wait forever. Looked at every
 * DIR_LOOK seconds; a directory of another in its place is not ours to remove at the end
 * (h->dir_gone).
 */
int named_host_dir_gone(struct host *h);

#endif
