#ifndef CELLBOX_DOCKERCKPT_H
#define CELLBOX_DOCKERCKPT_H

/*
 * The engine's checkpoints of a running container (a memory image made by its runtime:
 * gVisor's runsc here; runc's needs CRIU, which does not run on every kernel). The API exists
 * only when dockerd runs with --experimental:
 *
 *	POST /containers/ID/checkpoints {"CheckpointID": NAME, "Exit": bool}
 *	POST /containers/ID/start?checkpoint=NAME
 *
 * and a checkpoint lives in the engine's own data root, ROOT/containers/ID/checkpoints/NAME/
 * (dockerd 20.10 refuses a checkpoint directory of one's own: "custom checkpointdir is not
 * supported"). So a checkpoint moves to another container by its files: read from the old
 * container's directory, written into the new one's before it starts, which needs the data
 * root on this machine and ours to write (root). dockerckpt_engine() says whether the
 * engine of `d` can.
 */

#include "docker.h"

/* What the engine of a checkpoint offers: its data root and whether the API is on. */
struct dockerckpt_engine {
	char *root;		/* GET /info DockerRootDir, NULL when it says none */
	int experimental;	/* GET /info ExperimentalBuild */
};
/*
 * Ask the engine of `d` (GET /info). 0, or -1 with `err`. A caller that needs the files checks
 * that `root` is a directory it may write (the engine may be on another machine).
 */
int dockerckpt_engine(struct docker *d, struct dockerckpt_engine *e,
			     struct strbuf *err);
void dockerckpt_engine_release(struct dockerckpt_engine *e);

/* Whether `s` may name a checkpoint, or be a container id here: 1 to 64 of [A-Za-z0-9._-],
   not a leading '.'. */
int dockerckpt_name_ok(const char *s);

/*
 * Checkpoint container `id` as `name`; with `leave_running` it runs on (a fork), else it
 * stops. 0, or -1 with `err` (an engine without the API says how to turn it on).
 */
int dockerckpt_create(struct docker *d, const char *id, const char *name,
			     int leave_running, struct strbuf *err);
/* Start the created container `id` from its checkpoint `name`. 0, or -1 with `err`. */
int dockerckpt_start(struct docker *d, const char *id, const char *name,
			    struct strbuf *err);
/* ROOT/containers/ID/checkpoints/NAME (the caller frees it); NULL when a part is not a name. */
char *dockerckpt_dir(const char *root, const char *id, const char *name);

#endif
