#ifndef CELLBOX_SESSION_H
#define CELLBOX_SESSION_H

/*
 * A session is one persistent IPython kernel in a sandbox and the channel to it.
 *
 * The API is single-threaded and event-driven so that a front end can multiplex keys and
 * kernel events in one poll loop:
 *
 *	id = session_execute(s, code, 0, 0, on_event, data, &err);
 *	while (session_pending(s, id)) {
 *		poll session_fd(s) (and the keyboard) for POLLIN, with no timeout;
 *		session_dispatch(s);		// calls on_event for every new event
 *	}
 *
 * session_wait() is that loop for callers that only wait.
 *
 * Events are the runner's event lines (kernels/PROTOCOL.md) decoded once into typed
 * structs (event.h: stream, display with its mime bundle and plot, result, error, input
 * request, reply, done); they are valid only during the callback.
 *
 * The kernel is hostile in a container backend (docs/security.md), and the session is the
 * wall between it and the front ends: request ids cannot be guessed, and a request's events
 * are read only from the results file the session made for it, only while it is in flight
 * and only up to its done. Lines that are not events are counted and told once, in a stderr
 * note before the done; past `output_limit` bytes the rest is dropped and the cell
 * interrupted. Every event type (clear_output and artifact too) is bound to its request
 * that way (request.h). A file an event names (a display's or result's plot, an artifact)
 * reaches the callback only after it was checked (a regular file of the kernel's, one link,
 * within its cap; a PNG's header) and copied into the host's part of the channel: the path
 * then names that copy; a refused plot is dropped with a note, a refused artifact with its
 * event.
 * A kernel that takes the session past `channel_quota` bytes on the host (what its kernel
 * part holds now, and every copy the host made of its plots and files since the session
 * began, through every restart), or that removes its channel, is stopped; session_restart()
 * (or session_revive()) starts a fresh one.
 *
 * Every request ends with exactly one SESSION_EV_DONE event, also when the kernel dies,
 * times out or is restarted: the session then makes the error and done events itself. The
 * done event's `reason` (reason.h) says why it ended, for programs, and `detail` in words:
 *
 *	reason			detail				when
 *	REASON_OK		NULL				the kernel finished it
 *	REASON_ERROR		NULL				the code raised
 *	REASON_INTERRUPTED	"interrupt"			session_interrupt() stopped it
 *	REASON_TIMEOUT		"timeout"			it ran past its timeout
 *	REASON_INTERRUPT_KILLED	"interrupt: kernel restarted"	it ignored the interrupt
 *	REASON_TIMEOUT_KILLED	"timeout: kernel restarted"	... past the grace period
 *	REASON_KERNEL_DIED	"kernel died (exit code 3)"	the backend's words
 *	REASON_OOM_KILLED	"kernel killed: out of memory (limit 64 MB)"
 *	REASON_CHANNEL_LOST	"kernel lost (...)", "channel removed by the kernel: ..."
 *	REASON_OUTPUT_LIMIT	"output limit"			its output passed output_limit
 *	REASON_QUOTA_EXCEEDED	"channel quota exceeded: ..."	the kernel kept too much on the host
 *	REASON_RESTARTED	"restart"			queued behind a restart
 *	REASON_CLOSED		"session closed"		session_close() came first
 *	REASON_BLOCKED		"blocked by security policy 'NAME'"	the policy blocked it
 *
 * A request the kernel finished despite a stop keeps its kernel's outcome (REASON_OK after a
 * late interrupt) with the stop's detail. (REASON_CANNOT_START and REASON_BAD_INPUT are for
 * front ends: no session, or a request refused before it was made.)
 */

#include <signal.h>
#include <cjson/cJSON.h>
#include "backend.h"
#include "event.h"
#include "kernel.h"
#include "policy.h"
#include "pool_lease.h"
#include "reason.h"
#include "util.h"

enum session_state {
	SESSION_STARTING,
	SESSION_IDLE,
	SESSION_BUSY,		/* a request is being served */
	SESSION_DEAD,		/* the kernel exited; session_restart() brings it back */
	SESSION_CLOSED,
};

struct session;
typedef void (*session_event_fn)(struct session *s, const struct session_event *ev, void *data);
/* Kernel state changes: `msg` says what happened ("kernel died (exit code 3)", "restarted"). */
typedef void (*session_state_fn)(struct session *s, enum session_state state, const char *msg,
				 void *data);

struct session_opts {
	const char *backend;		/* "local" (default) */
	const char *kernel;		/* "python" (NULL, the default), "r": kernel.h */
	const char *python;		/* the Python kernel's interpreter (local backend) */
	const char *rscript;		/* the R kernel's Rscript (local backend) */
	const char *runtime_dir;	/* where channels live; NULL = $XDG_RUNTIME_DIR/cellbox */
	const char *cwd;		/* kernel's working directory; NULL = ours */
	double startup_timeout;		/* seconds to wait for `ready`; 0 = 30 */
	double interrupt_grace;		/* seconds a cell may ignore SIGINT; 0 = 2 */
	unsigned long long memory;	/* address-space limit of the kernel in bytes; 0 = none */
	int keep_channel;		/* leave the channel directory behind on close */
	const char *pool_dir;		/* take a warm kernel from this pool (pool.h); NULL = no */
	enum pool_strategy pool_strategy;	/* when the pool has none free */
	double pool_timeout;		/* seconds POOL_WAIT waits; 0 = 30 */
	struct sandbox_opts sandbox;	/* docker/podman: image and limits (strings borrowed) */
	/*
	 * The security policy (borrowed; NULL = none): a cell it blocks is not sent and ends
	 * with a SecurityViolation error (its `violations` set) and reason REASON_BLOCKED; the
	 * kernel's import hook refuses the modules it blocks (session_open fails when the
	 * kernel cannot take it).
	 */
	const struct policy *policy;
	unsigned long long channel_quota;	/* bytes the kernel may keep on the host; 0 = 1 GB */
	unsigned long long output_limit;	/* bytes of events one request may send; 0 = 2 GB */
	/*
	 * A context's (context.h): the channel of the running sandbox its kernel starts in
	 * (borrowed, for session_open() only); NULL: a sandbox of its own.
	 */
	const char *within;
	session_state_fn on_state;
	void *state_data;
};

/* Flags of session_execute(). */
enum {
	SESSION_EXEC_SILENT = 1 << 0,		/* no Out[n], no execution count */
	SESSION_EXEC_ALLOW_STDIN = 1 << 1,	/* input() asks the front end */
	SESSION_EXEC_CLEAR_PLOTS = 1 << 2,	/* clear the plot list before running */
	SESSION_EXEC_TRUSTED = 1 << 3,		/* cellbox's own code: no policy, no import hook */
};

/*
 * Start a kernel and wait until it is ready (or `startup_timeout` passes). On failure
 * returns NULL with `err` saying why, including the tail of the runner's log.
 */
struct session *session_open(const struct session_opts *opts, struct strbuf *err);
/*
 * session_open() in two steps, for a caller that starts several kernels at once (the pool
 * daemon): session_begin() starts a kernel and returns at once (SESSION_STARTING; NULL with
 * `err` when it cannot start one); poll session_fd() (the channel, the kernel's exit and the
 * startup deadline wake it) and call session_started(): 1 once the kernel is ready (the
 * session is then as session_open() leaves it), 0 while it starts, -1 with `err` when it
 * failed (close the session). Not for pooled kernels nor a policy: NULL with `err`.
 */
struct session *session_begin(const struct session_opts *opts, struct strbuf *err);
int session_started(struct session *s, struct strbuf *err);
/*
 * session_begin() in two steps, to have kernels ready to start: session_prepare() does what
 * takes time and runs nothing (the channel; a container created, not started: backend.h
 * prepare()), session_launch() then starts it (0, or -1 with `err`: close the session).
 * Until it is launched the session has no kernel: only session_close() applies.
 */
struct session *session_prepare(const struct session_opts *opts, struct strbuf *err);
int session_launch(struct session *s, struct strbuf *err);
/*
 * With `pool_dir` set, session_open() first leases a warm kernel from that pool (ready in a
 * millisecond); when there is none it follows `pool_strategy`: a fresh kernel of its own for
 * POOL_TEMPORARY or when no daemon serves the pool (session_pool_note() says why), an error
 * for POOL_FAIL_FAST or when POOL_WAIT times out. A pooled kernel is killed on close, never
 * reused.
 */
/* Why a session that asked for a pooled kernel got a fresh one; NULL when it got one. */
const char *session_pool_note(const struct session *s);
/* Whether the kernel came from a pool. */
int session_pooled(const struct session *s);
/*
 * Take over a kernel that is already serving in `channel_dir` (started by another process,
 * such as the pool daemon). Returns NULL with `err` set when there is none.
 */
struct session *session_attach(const struct session_opts *opts, const char *channel_dir,
			       struct strbuf *err);
/* Shut the kernel down (politely, then by force) and free everything. NULL is fine. */
void session_close(struct session *s);
/* The most contexts a session has open at once (context.h). */
#define SESSION_CONTEXTS_MAX 8
/* Free the session but leave the kernel running and its channel in place (the pool daemon). */
void session_detach(struct session *s);
/*
 * Handing the kernel to another process (`:detach` of an unnamed session: named_setup.h).
 * session_hand_over(): 0 when it may be handed over now, its kernel made to outlive this
 * process (the backend's release(): a local kernel's init drops its PR_SET_PDEATHSIG), else
 * -1 and why not in `err`: a cell running or queued (their bookkeeping is this process's), a
 * kernel that is our child and cannot be released, a pool's, one whose network goes through
 * our egress proxy. session_take_over(), in the taker: a session on `from`'s kernel (adopted
 * from its channel, as session_attach()), with from's options but the state callback, its
 * requests numbered on from from's and from's keep (below) its own; the giver then lets go
 * with session_detach().
 */
int session_hand_over(struct session *s, struct strbuf *err);
struct session *session_take_over(struct session *from, session_state_fn on_state,
				  void *data, struct strbuf *err);
/*
 * What a host that takes the kernel over shows an attach of the cells before (the UI and the
 * REPL ask it of an unnamed session). session_keep_cells(): from now on the session keeps its
 * executes but silent ones, their code and events, as a named session's host keeps its own
 * (named_keep.h, within its caps), and the cells since its kernel started. session_take_over()
 * hands the keep to the taker; session_keep_take() gives it to the caller (the host: its
 * keep, NULL when none, to free with named_keep_release() and free()), the session keeping
 * no more.
 */
struct named_keep;
void session_keep_cells(struct session *s);
struct named_keep *session_keep_take(struct session *s);

/*
 * Queue a cell for execution. `timeout` (seconds, 0 = none) interrupts it when it runs too
 * long. Returns the request id (> 0), or 0 with `err` set when the request cannot be written
 * or the kernel is dead.
 */
unsigned long session_execute(struct session *s, const char *code, unsigned flags,
			      double timeout, session_event_fn fn, void *data, struct strbuf *err);
/*
 * Queue another kind of request ("complete", "inspect", "is_complete", "clear_plots"):
 * `params` (may be NULL) is merged into the command and stays the caller's. A kernel that does
 * not answer one within SESSION_REQUEST_TIMEOUT seconds of its turn is treated as a cell past
 * its timeout (interrupted, then killed and restarted after the grace): no request of the
 * host's own waits on the kernel for ever.
 */
#define SESSION_REQUEST_TIMEOUT 30.0
unsigned long session_request(struct session *s, const char *kind, const cJSON *params,
			      session_event_fn fn, void *data, struct strbuf *err);
/* Answer an input request of request `id`. */
int session_input_reply(struct session *s, unsigned long id, const char *value,
			struct strbuf *err);

/*
 * The descriptor to poll for POLLIN: readable when session_dispatch() has work, including
 * every deadline (a cell's timeout, an interrupt's grace, the polling fallbacks), which is on
 * a timer inside it: a poll on it needs no timeout of its own.
 */
int session_fd(const struct session *s);
/* Read whatever is new and call the callbacks; never blocks. Returns events delivered. */
int session_dispatch(struct session *s);
/* Whether request `id` has not yet had its done event. */
int session_pending(const struct session *s, unsigned long id);
/*
 * Dispatch until request `id` is done. Returns 0, or -1 when a signal interrupted the wait
 * (errno EINTR: the caller may interrupt the kernel and wait again). While the kernel's
 * answers come within 2 ms, the wait looks for the next one awake for 0.3 ms before it
 * sleeps (cells back to back: a wake-up from an idle core costs more than that).
 */
int session_wait(struct session *s, unsigned long id);

/*
 * The signal mask in force while session_wait() sleeps (epoll_pwait). A front end that keeps
 * SIGINT blocked everywhere else and lets it in only here can check its flag before each wait
 * without a Ctrl-C slipping in between the check and the sleep. NULL: the mask is not changed.
 */
void session_set_sigmask(struct session *s, const sigset_t *mask);

/* Interrupt the running cell (SIGINT; killed and restarted if ignored past the grace). */
int session_interrupt(struct session *s);
/* Kill the kernel and start a fresh one; pending requests end with reason "restart". */
int session_restart(struct session *s, struct strbuf *err);
/*
 * Before a cell (Jupyter's restarter): see whether the kernel died since the last request
 * (it exited, its container or engine went away, it was stopped) and if so start a fresh
 * one. Returns 0 when the kernel runs, 1 after a restart (`why` says how the old one
 * ended), -1 with `err` when no kernel could be started (the next call tries again).
 */
int session_revive(struct session *s, struct strbuf *why, struct strbuf *err);

enum session_state session_state(const struct session *s);
/*
 * A state's name ("starting", "idle", "busy", "dead", "closed"): the one table, for the named
 * sessions' wire, `cellbox ls` and MCP. session_state_named() reads one back (an unknown or
 * NULL name: SESSION_DEAD, the state that asks nothing of the kernel).
 */
const char *session_state_name(enum session_state st);
enum session_state session_state_named(const char *name);
/* The channel directory (plots are under plots/). */
const char *session_channel_dir(const struct session *s);
/* The `ready` object of the running kernel (protocol, pid, python, ipython). */
const cJSON *session_kernel_info(const struct session *s);
/*
 * Where channels live: `configured`, else $XDG_RUNTIME_DIR/cellbox, else /dev/shm/cellbox-UID
 * when /dev/shm is a writable tmpfs of at least 1 GiB, else /tmp/cellbox-UID (each used only
 * when it is ours and 0700: channels are refused in anyone else's).
 */
char *session_runtime_dir(const char *configured);
/*
 * Remove the channels that dead cellbox processes left there (and, when nothing is
 * `configured`, in /tmp/cellbox-UID, where they were kept before /dev/shm was preferred);
 * how many (`out`: a line each).
 */
int session_gc(const char *configured, struct strbuf *out);
/* Name of the backend ("local"). */
const char *session_backend_name(const struct session *s);
/* The sandbox settings it was opened with (image, runtime, engine); NULL when attached to a
 * host. */
const struct sandbox_opts *session_sandbox(const struct session *s);
/*
 * The last round trip to the sandbox's end of the kernel's channel in milliseconds, where the
 * channel goes over a stream (a remote engine: the relay answers pings); -1 where it is not
 * measured (a shared channel, no kernel).
 */
double session_latency(const struct session *s);
/*
 * The sandbox's counters now, read on the host side (usage.h): CPU time so far and memory in
 * use, for a live view (CPU% from two samples). 0, or -1 where they are not measured (no
 * kernel; a named session's front end; an engine on another machine). A cell's own usage is
 * in its done event.
 */
int session_usage(struct session *s, struct usage_sample *u);
/* The kernel the session runs (kernel.h). */
const struct kernel_def *session_kernel(const struct session *s);

/*
 * Write `files/NAME` into the channel's host part, where the kernel can read it (as
 * `<channel>/host/files/NAME`) but not change it. Returns 0 or -1 with `err` set.
 */
int session_write_file(struct session *s, const char *rel, const void *data, size_t len,
		       struct strbuf *err);
/* Remove `files/NAME` from the host part. */
void session_remove_file(struct session *s, const char *rel);
/*
 * Take the kernel's `<channel>/kernel/out/NAME` by the wall's rules (a regular file of the
 * kernel's with one link, of at most `max` bytes, 0: the channel quota): into `data`, or with
 * `dst` set into that host path; then remove it (with neither, only remove it). 0 or -1.
 */
int session_take_file(struct session *s, const char *name, size_t max, const char *dst,
		      struct strbuf *data, struct strbuf *err);

/*
 * A front end keeps `n` more copies of each plot or artifact the kernel gives (the history
 * store's, a --plots directory's): each counts against the channel quota, which bounds what
 * the session's kernels put on the host, across restarts (channel.h: `copied`).
 */
void session_add_copies(struct session *s, unsigned n);

/*
 * Named sessions (named.h): a session that session_open() did not open but named_attach()
 * did is the front end's end of a session a host process owns. Its calls go to the host;
 * these do nothing there: session_write_file, session_remove_file and session_take_file
 * fail (files are copied in and out by the host, with its settings), session_add_copies
 * (the host records the history). session_close() detaches: the session runs on.
 *
 * The name of the session `s` is the end of; NULL for a session of this process's own.
 */
const char *session_named(const struct session *s);
/* Whether it was attached read-only: its calls that would run anything fail. */
int session_read_only(const struct session *s);
/*
 * Cells of a named session that this front end did not run: those other front ends run
 * (`past` 0) and, right after attaching, those that ran before (`past` 1). `fn` hears a
 * cell's start (its `code`, `ev` NULL), then each of its events (`code` NULL), as a
 * request's callback would. Nothing for a session of this process's own.
 */
typedef void (*session_watch_fn)(struct session *s, unsigned long id, const char *code, int past,
				 const struct session_event *ev, void *data);
void session_watch(struct session *s, session_watch_fn fn, void *data);

/* The container image this build's runner protocol needs ("cellbox-python:p2"). */
const char *session_kernel_image(void);
/* The same for kernel `name` ("cellbox-r:p2"); NULL for a kernel there is not. Caller frees. */
char *session_kernel_image_for(const char *name);

#endif
