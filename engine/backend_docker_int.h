#ifndef CELLBOX_BACKEND_DOCKER_INT_H
#define CELLBOX_BACKEND_DOCKER_INT_H

/*
 * What the files of the docker family share. Internal: included by the backend_docker*.c files
 * only. backend_docker.c is the running container: the start (after prepare), the stdin
 * wake-up, reap (why it stopped), signal, kill, detach and free, the adoption of a pooled
 * kernel's container, and the ops table. backend_docker_conn.c is its connections: the
 * engine's, the wait connection and the stdin, and letting go of a container (forget,
 * discard). backend_docker_create.c is how the container is made: the body of POST
 * /containers/create (its user, the channel's mounts, the hardening: read-only root, tmpfs,
 * capabilities, limits; the runtime, the labels) and the create call with its errors (a
 * missing or stale image).
 * backend_docker_gc.c is what outlives a process: the owner labels, whether a container or its
 * owner still runs, and the removal of the containers whose cellbox process is gone (gc, and
 * the sweep before a process's first container). backend_docker_notes.c is the notes a
 * container's starter leaves at the channel's top for its adopters (and contexts).
 * backend_docker_exec.c is the family's `contexts`: a context's kernel started by an exec in
 * the container of a running sandbox.
 */

#include "backend.h"
#include "docker.h"
#include "egress.h"
#include "usage.h"

#define DEFAULT_MEMORY (1ull << 30)
#define LABEL_PID "org.cellbox.pid"
#define LABEL_START "org.cellbox.start"
#define LABEL_HOST "org.cellbox.host"
#define LABEL_CHANNEL "org.cellbox.channel"
#define LABEL_STREAM "org.cellbox.stream"

struct backend_docker {
	struct backend base;
	char *engine;		/* "docker" or "podman" */
	struct docker d;
	int connected;
	char *id;		/* the running container, NULL when none */
	char *cg_id;		/* the container whose cgroup cg is (usage.h), NULL: none yet */
	struct usage_cgroup cg;
	int created;		/* id is created and not started yet (prepare()) */
	int wait_fd;		/* POST /containers/ID/wait; readable when it exits */
	struct strbuf wait_reply;
	unsigned long long memory;	/* the limit in force, for messages */
	int stdin_fd;		/* the container's stdin (attached), or -1: the runner's wake-up */
	int open_stdin;		/* the container was made with OpenStdin (its runner wakes so) */
	int oom_unsure;		/* podman, or a runtime other than runc: OOM kills may go unsaid */
	int stream;		/* the channel goes over the attach stream (backend_docker_stream.c) */
	int watch_only;		/* adopted to be watched (kernel_handle.watch): never writes */
	int stream_fd;		/* the attach connection until the stream begins, else -1 */
	int stream_thread;	/* st's thread runs */
	struct docker_stream *st;	/* the stream, while the container runs */
	struct egress_proxy egress;	/* network allow:...: its proxy, from the first create */
	char *exec_id;		/* a context's kernel: its exec in container `id`, which is
				   the sandbox's, never removed by us (backend_docker_exec.c) */
	char *exec_runner;	/* and its runner's file, which finds it in the container */
};

/* backend_docker.c's table of the family's `contexts` (backend_docker_exec.c's calls). */
extern const struct backend_ops backend_docker_exec_ops;

/* backend_docker_notes.c: the notes at the channel's host-only top */
/* Leave the notes of `db`'s container, started for `spec`: its id, facts and engine. */
void backend_docker_notes_write(const struct backend_docker *db, const struct kernel_spec *spec);
/*
 * The container id `k`'s channel names (its starter's note), checked to be one; -1 with
 * `err` when there is none.
 */
int backend_docker_read_id(const struct kernel_handle *k, const char *engine, struct strbuf *id,
			   struct strbuf *err);
/*
 * The facts of the container of `k`'s channel (its starter's note) into `db`, its engine's
 * API version into `api` (of `n` bytes): 0, or -1 when there are none.
 */
int backend_docker_read_facts(const struct kernel_handle *k, struct backend_docker *db,
			      char *api, size_t n);
/* The engine of the container of `k`'s channel: its note, else `k`'s sandbox's host. */
const char *backend_docker_engine_of(const struct kernel_handle *k, struct strbuf *buf);

/* backend_docker_exec.c: the backend ops of a context's kernel (backend.h says what each does) */
int backend_docker_exec_start(struct backend *be, const struct kernel_spec *spec,
			      struct strbuf *err);
int backend_docker_exec_exit_fd(struct backend *be);
int backend_docker_exec_reap(struct backend *be, enum reason *reason, struct strbuf *why);
int backend_docker_exec_signal(struct backend *be, int sig);
void backend_docker_exec_kill(struct backend *be);
void backend_docker_exec_detach(struct backend *be);

/* backend_docker_conn.c (and backend_docker_connect() of backend.h) */
/* The same as backend_docker_connect() with the engine's API version known (docker_init_api). */
int backend_docker_connect_api(struct docker *d, const char *engine, const char *host,
			       const char *api, struct strbuf *err);
/* Wait on a connection of its own (wait_fd): it answers when the container stops. */
int backend_docker_open_wait(struct backend_docker *db, struct strbuf *err);
/* Attach to the container's stdin, the runner's wake-up (non-blocking writes). */
int backend_docker_attach_stdin(struct backend_docker *db, struct strbuf *err);
/* Forget the container (gone, being removed, or left running): its id and descriptors. */
void backend_docker_forget(struct backend_docker *db);
/*
 * Remove the container of `db` (killing it) and forget it: its id, its wait and stdin
 * descriptors. Nothing when it has none. Every failed or ended container goes this way.
 */
void backend_docker_discard(struct backend_docker *db);

/* backend_docker_create.c */
/* Whether the engine may not report an OOM kill: podman (cgroup v1), or not runc (gVisor). */
int backend_docker_oom_unsure(const char *engine, const char *runtime);
/* backend channel_owner(): the container's user, 1 when it is not ours. */
int backend_docker_channel_owner(struct backend *be, const struct kernel_spec *spec, uid_t *uid,
			    gid_t *gid);
/* Create the container for `spec` (not started): docker_prepare and docker_start's first half. */
int backend_docker_create_container(struct backend_docker *db, const struct kernel_spec *spec,
			       struct strbuf *err);

/* backend_docker_stream.c */
struct sandbox_opts;
/* Whether the channel goes over a stream: the channel setting, auto = not a unix socket. */
int backend_docker_stream_wanted(const struct sandbox_opts *sb, const struct docker *d);
/* The container's command that receives and runs the relay (`group`: signals go to a group). */
void backend_docker_stream_cmd(cJSON *cmd, const struct kernel_spec *spec, const char *exec,
			       int group);
/* Attach to the created container's stdin, stdout and stderr (db->stream_fd). */
int backend_docker_stream_attach(struct backend_docker *db, struct strbuf *err);
/*
 * Once the container started: send the relay, the host part of channel `channel_dir` and
 * start; the thread runs. `adopted`: the relay runs already (a pooled kernel taken over):
 * hello instead, and what the host part has.
 */
int backend_docker_stream_begin(struct backend_docker *db, const char *channel_dir, int adopted,
				struct strbuf *err);
/* The round trip of the last ping the relay answered, in ms; -1 before one (or no stream). */
double backend_docker_stream_latency(struct backend_docker *db);
/* Send what is new in the host part, or a wake-up (backend wake()). */
void backend_docker_stream_wake(struct backend_docker *db);
/*
 * Wait up to `seconds` for the stream to end (the container stopped: its last bytes are in);
 * with `why` set, 2 when the kernel's files filled the channel's quota, 1 when the stream
 * broke (the relay broke the protocol), else 0.
 */
int backend_docker_stream_settle(struct backend_docker *db, double seconds, struct strbuf *why);
/* Stop the thread, close the connection, free the stream; nothing when there is none. */
void backend_docker_stream_end(struct backend_docker *db);

/* backend_docker_gc.c */
/* Remove the containers of dead cellbox processes, once per process. */
void backend_docker_sweep_once(struct backend_docker *db);
/* Remove container `id` (killing it first); errors are ignored. */
void backend_docker_remove_container(struct docker *d, const char *id);
/* Whether container `id` runs: 1, 0 (stopped or gone), -1 when the engine cannot say. */
int backend_docker_container_running(const char *engine, const char *host, const char *id);
/* backend_gc: patient (up to 10 s for a container the engine is busy with). */
int backend_docker_gc_dead(const char *engine, const char *host, const char *runtime_dir,
			   struct strbuf *out, struct strbuf *err);

#endif
