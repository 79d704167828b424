#ifndef CELLBOX_NAMED_H
#define CELLBOX_NAMED_H

/*
 * Named sessions: a session that outlives the front end that opened it (`--name`), which
 * front ends attach to, several at a time, and leave again (docs/sessions.md).
 *
 * One host process per named session owns it: the session (session.h) and so its kernel,
 * its timeouts, deaths and restarts, its quota and its history recording. It is forked from
 * the front end that names the session, before that front end's first cell, and lives apart
 * from it (its own process group and session, no terminal): closing the terminal, killing
 * the front end or detaching leaves it running. One process per session rather than one per
 * user (tmux's server) because each holds the wall for one hostile kernel: a host that fails
 * takes its own session only, `cellbox kill` is one process, and the host runs with the
 * settings, policy and limits its session was opened with.
 *
 * Where: RUNTIME/sessions/NAME/ (the runtime directory's rules: ours and 0700, or refused),
 * holding `sock`, the host's unix socket, and `host.log`, its messages. A front end talks to
 * the host over the socket in lines of JSON (named_wire.c), capped both ways; the host takes
 * a connection only from our own uid (SO_PEERCRED). A front end's end is a session like any
 * other (session_open() of a named session returns one whose calls go to the host: session.h
 * says which do nothing there), so the REPL and the UI need no second code path.
 *
 * What the host sends a front end (each line an object with "t"):
 *	hello	the session: name, backend, kernel, channel, kernel_info, state, read_only
 *	cell	a cell another front end ran (id, code), or with "past" one that ran before
 *		this front end attached; its events follow as ev lines
 *	ev	an event of a request (id, ev: event_to_json())
 *	state	the kernel's state changed (state, msg)
 *	reply	the answer of a front end's own command (req, ok, and what it asked for)
 * What a front end sends: hello (read_only), execute (code, flags, timeout), request (kind,
 * params), input (id, value), interrupt, restart, revive, status, kill, fork (name); each
 * with a `req` number the reply carries back. A read-only front end may ask for status only.
 *
 * The host keeps the last NAMED_LOG_CELLS cells (at most NAMED_LOG_BYTES of their events,
 * NAMED_CELL_LOG_MAX each) to show a front end that attaches; it ends when killed (`cellbox
 * kill`, the kill command, SIGTERM), or after `ttl` seconds idle with nobody attached.
 */

#include <sys/types.h>
#include <cjson/cJSON.h>
#include "session.h"
#include "strbuf.h"

#define NAMED_NAME_MAX 64		/* bytes of a session's name */
/* bytes of one line either way (an artifact of 64 MB in base64) */
#define NAMED_LINE_MAX (128u << 20)
#define NAMED_QUEUE_MAX (256u << 20)	/* bytes waiting for a front end that does not read */
#define NAMED_MAX_CLIENTS 16		/* front ends attached at once */
#define NAMED_LOG_CELLS 200
#define NAMED_LOG_BYTES (64u << 20)
#define NAMED_CELL_LOG_MAX (8u << 20)

/*
 * When a named session ends by itself: after `ttl` seconds idle (no cell running) with nobody
 * attached (0: never), its cells first written to checkpoint file `checkpoint` when set (an
 * absolute path; named_checkpoint()'s file). When that file cannot be written the session is
 * kept, its host's log says why, and it is tried again after another `ttl`.
 */
struct named_idle {
	double ttl;
	const char *checkpoint;
};

/* How a host opens its session (setup_open() without the name): NULL with `err`. */
typedef struct session *(*named_open_fn)(void *data, session_state_fn on_state, void *state_data,
					  struct strbuf *err);
/* How a host records its cells (the history): opened with the session, each event, each end. */
struct named_recorder {
	void (*open)(void *data, struct session *s);
	void (*event)(void *data, struct session *s, const struct session_event *ev);
	void (*cell)(void *data, const char *code);
	void *data;
};

/* Whether `name` may name a session: 1 to NAMED_NAME_MAX of [A-Za-z0-9._-], not a leading '.'. */
int named_name_ok(const char *name);
/* A fresh name ("s-" and 6 random letters) for a session asked to detach without one. */
char *named_generate(void);

/*
 * Start the host of session `name` under `runtime` and wait until its session is open: it
 * forks, leaves our process group and terminal, calls `open` and serves (`rec`: its
 * recording; `idle`: when it ends by itself, NULL never). 0, or -1 with `err` (the session's
 * own error when it could not open one; "a session named X is running" when one is).
 */
int named_start(const char *runtime, const char *name, const struct named_idle *idle,
		named_open_fn open,
		void *data, const struct named_recorder *rec, struct strbuf *err);
/*
 * Attach to session `name`: a session whose calls go to its host. `read_only`: watch only.
 * `opts` gives on_state. NULL with `err` ("no session named X").
 */
struct session *named_attach(const char *runtime, const char *name, int read_only,
			     const struct session_opts *opts, struct strbuf *err);

/* One named session as `cellbox ls` shows it. */
struct named_info {
	char *name;
	pid_t pid;		/* its host's; 0 when the host is gone */
	char *backend, *kernel, *state;	/* "idle", "busy", "dead", "starting"; "gone" */
	char *running;		/* the running cell's first line, NULL when none */
	double idle_since;	/* wall-clock time the last cell ended (or the session began) */
	int attached;		/* front ends attached now */
	unsigned long long memory;	/* the kernel's resident bytes; 0 when not known */
	double ttl;		/* seconds; 0 = none */
};
/* The named sessions under `runtime`, asked each (1 s at most each); how many in *out. */
size_t named_list(const char *runtime, struct named_info **out);
void named_info_free(struct named_info *v, size_t n);
/*
 * End session `name`: its host closes the session (the kernel killed) and leaves; a host
 * that is gone has its directory removed. 0, or -1 with `err`.
 */
int named_kill(const char *runtime, const char *name, struct strbuf *err);

/*
 * Fork session `name` into a new session `new_name` (docs/sessions.md, "Fork"): its kernel
 * process copied, every variable, import and object in it, independent from then on. The
 * local backend only; a kernel that runs a cell forks once it ends. 0, or -1 with `err`.
 */
int named_fork(const char *runtime, const char *name, const char *new_name, struct strbuf *err);

/*
 * Remove what sessions whose host is gone left (not one whose host is still starting: its
 * host.pid names a live process); a line each into `out`. How many.
 */
int named_gc(const char *runtime, struct strbuf *out);

/*
 * Re-run checkpoints (named_checkpoint.c), for every backend (a memory image needs gVisor,
 * below; CRIU does not run on this machine's kernel): the cells the session's kernel ran
 * since it started (NAMED_RERUN_CELLS, NAMED_RERUN_BYTES of code at most; a session past them
 * cannot be checkpointed), written to `path` (0600, replaced whole) with its name and kernel; *ncells
 * says how many. 0, or -1 with `err`.
 */
#define NAMED_CKPT_VERSION 1
#define NAMED_CKPT_MAX (64u << 20)	/* bytes of a checkpoint file */
#define NAMED_RERUN_CELLS 10000
#define NAMED_RERUN_BYTES (16u << 20)
int named_checkpoint(const char *runtime, const char *name, const char *path, size_t *ncells,
		     struct strbuf *err);
/*
 * Write such a file from a host's status reply (name, kernel, backend) and its cells (an
 * array of {code, status}). The host writes one itself when its idle limit ends it. 0, or -1
 * with `err`.
 */
int named_checkpoint_write(const char *path, const cJSON *status, const cJSON *cells,
			   struct strbuf *err);
/* A checkpoint read back: its cells' code, in order, and what it says of the session. */
struct named_ckpt {
	char **code;		/* NULL-terminated */
	size_t ncells;
	char *name;		/* a valid name, or NULL */
	char *kernel;		/* as written (check it with kernel_find), or NULL */
};
/*
 * Read checkpoint file `path`, which is outside input: a regular file (never a FIFO waited
 * on) of at most NAMED_CKPT_MAX, this version and kind, its cells text within the caps.
 * 0, or -1 with `err` (nothing kept).
 */
int named_checkpoint_load(const char *path, struct named_ckpt *ck, struct strbuf *err);
/* The same for the file's text (`what` names it in errors). */
int named_checkpoint_parse(const char *text, size_t len, const char *what,
			   struct named_ckpt *ck, struct strbuf *err);
void named_checkpoint_free(struct named_ckpt *ck);
/*
 * Run checkpoint `ck`'s cells again in session `s`, in order (a restore of a re-run
 * checkpoint, a fork by re-running): each waited for by `wait` (NULL: session_wait until it
 * ends), which may say stop (non-zero: an interrupt, SIGTERM); `each`, when set, is told cell
 * i of n before it runs. *raised counts the cells that did not end ok. The number of cells
 * run to their end: ck->ncells when all were, else fewer with `err` naming the cell.
 */
size_t named_checkpoint_rerun(struct session *s, const struct named_ckpt *ck, double timeout,
			      int (*wait)(struct session *s, unsigned long id),
			      void (*each)(size_t i, size_t n), int *raised, struct strbuf *err);

/*
 * Memory checkpoints (named_memckpt.c), where the kernel runs under gVisor (docker, runtime
 * runsc) on an engine with the checkpoint API (dockerd --experimental) whose data root is ours
 * to write: session `name`'s host checkpoints the kernel's container (which stops it: runsc
 * cannot leave it running) and writes memckpt.h's file at `path` (absolute), signed with the
 * user's key, its meta the container's config, the channel's path in the container, the
 * kernel's ready file and the cells (the re-run's list). Between cells only (refused
 * while one runs). 0, or -1 with `err`. Without `path` (NULL) none is taken: 0 when one could
 * be (but for a cell running), else -1 and why not in `err`.
 */
int named_checkpoint_memory(const char *runtime, const char *name, const char *path,
			    struct strbuf *err);
/*
 * The session of memory checkpoint `path` made again (a host's open): the file checked whole
 * (memckpt_read), a fresh channel with the kernel's ready file, a container of the checked
 * config (only the members cellbox's own create sets) with the channel mounted at the old
 * paths, the image written into its checkpoints directory, started from it, and the kernel
 * adopted. NULL with `err` (the container removed, the channel too).
 */
struct session *named_memckpt_restore(const struct session_opts *so, const char *path,
				      struct strbuf *err);

#endif
