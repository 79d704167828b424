#ifndef CELLBOX_SESSION_INT_H
#define CELLBOX_SESSION_INT_H

/*
 * What the files of a session share. Internal: included by the session*.c files only.
 * session.c is the API of session.h and calls its parts, which call each other through this
 * header, never session.c. session_kernel.c is how a session gets its kernel: allocated
 * (and freed), the channel made ready, the kernel prepared, launched and awaited, adopted
 * from a channel or leased from a pool, and the policy's import hook sent. session_state.c
 * is its state and timer, and what ends a kernel's run (death, the quota, a lost channel, an
 * ignored interrupt: killed and restarted). session_queue.c is the requests in flight:
 * submitted, their events read, ended. session_files.c makes and removes the requests'
 * files off the round trip (the next results file ahead, the finished ones' behind).
 * session_names.c holds the names a session starts from that need no session (it does not
 * need this header). session_keep.c keeps its executes for a host that takes it over.
 *
 * Include session.h before it (struct session_opts, enum session_state): it does not include
 * session.h itself, as session.c, session.h's own file, includes it (no include circle);
 * named_client.c, which is a named session's end of the session, includes it too.
 */

#include "channel.h"
#include "wall.h"

#define POLL_INTERVAL 0.010		/* without inotify */

struct request;
struct named_keep;

struct session {
	struct named_client *named;	/* the end of a named session (named_client.h): every
					   call goes there; nothing below is used */
	char *backend_name, *python, *runtime_dir, *cwd;
	const struct kernel_def *kernel;	/* which runner, started how */
	char *image;		/* the container image when none is configured */
	int wake;		/* the runner waits on the channel's `wake` FIFO */
	struct session_opts opts;
	struct channel ch;
	struct backend *be;
	int epfd, timerfd;
	enum session_state state;
	struct request *head, *tail;
	unsigned long next_id;
	cJSON *info;
	double kill_at;		/* grace deadline after SIGINT, 0 = none */
	struct pool_lease lease;	/* the pooled kernel's lease, entry NULL when none */
	char *pool_note;	/* why a pooled session got a fresh kernel */
	int hand_back;		/* the pool's container is still ours: its daemon may end it */
	sigset_t wait_mask;	/* for epoll_pwait in session_wait() */
	int has_wait_mask;
	int slow_waits;		/* the last session_wait() took long: the next sleeps at once */
	off_t log_start;	/* size of `log` when the current kernel started */
	char *policy_error;	/* why the kernel did not take the policy's import hook */
	int policy_waiting;	/* session_open waits for the hook: it reports, not on_state */
	double usage_at;	/* when a channel without a tmpfs was last counted */
	int more;		/* a results file has more to read than one dispatch takes */
	int timer_off;		/* the timer is disarmed (and so has no expiry to read) */
	char *death;		/* how the last kernel ended, for session_revive() */
	double start_deadline;	/* a starting kernel's: ready by then */
	char *runner_path;	/* the runner in the channel's host part, as the backend runs it */
	int prepared;		/* prepare_kernel() ran: the next launch only starts */
	struct request *spent;	/* finished, their files still in the channel (session_tidy) */
	int n_spent;
	struct request *spare;	/* the request next_id, its results file made ahead */
	struct wall_pending next_cmd;	/* the next command's file, made ahead (fd -1: none) */
	struct session *parent;	/* a context's: the session whose sandbox it shares */
	struct session *contexts[SESSION_CONTEXTS_MAX];	/* this session's open contexts */
	struct named_keep *keep;	/* its executes kept for a host that takes it over
					   (session_keep.c); NULL: none kept */
};

/* session_state.c */
/* Tell the front end about a state change. */
void session_set_state(struct session *s, enum session_state state, const char *msg);
/* Arm the timer for the nearest deadline (and the polling fallbacks). */
void session_arm_timer(struct session *s);
/* The kernel is gone: finish what it left, say why, and mark the session dead. */
void session_kernel_died(struct session *s, enum reason reason, const char *why);
/* Stop a kernel that broke the channel's rules (its quota, its channel) and end its cells. */
void session_kernel_stopped(struct session *s, enum reason reason, const char *why);
/* Whether the kernel keeps more on the host than its quota allows (then it is stopped). */
int session_over_quota(struct session *s);
/* Kill an unresponsive kernel, end its requests and start a fresh one. */
void session_kill_and_restart(struct session *s);

/* session_queue.c */
/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
unsigned long session_submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			     session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err);
/* Read new events of the head request (and of the ones after it once it is done). */
int session_read_events(struct session *s);
/* Take the finished head off the queue; the next request starts its clock. */
void session_pop_head(struct session *s);
/* End every queued request with `reason` (the kernel went away). */
void session_abort_all(struct session *s, enum reason reason, const char *ename,
		       const char *evalue, const char *detail);
/* Tell the runner that something is there for it (a command, an input answer, an interrupt). */
void session_wake_kernel(struct session *s);
/* SIGINT to the kernel, and a wake-up for a runner blocked waiting for one; the grace's
 * deadline (kill_at), when none is set, counted from when the signal has gone. */
int session_interrupt_kernel(struct session *s);

/*
 * The requests' files (session_files.c). session_new_request() makes request next_id (its
 * results file too unless `blocked`), from the spare when there is one; NULL with `err`.
 * session_make_spare() makes the next one's ahead, and the next command's temporary file
 * (after a command is out, while the kernel runs it); session_drop_spare() removes them
 * (before the kernel part is remade, at the end). session_write_command() writes commands/REL
 * into the file made ahead, or as channel_write() does when there is none.
 * session_spend() takes a finished request off the host's hands: its files are removed by
 * session_tidy() (after the next command is out, before the host sleeps, at the end), or at
 * once when many are waiting.
 */
struct request *session_new_request(struct session *s, int is_execute, double timeout,
				    session_event_fn fn, void *data, int blocked,
				    struct strbuf *err);
void session_make_spare(struct session *s);
void session_drop_spare(struct session *s);
int session_write_command(struct session *s, const char *rel, const char *text,
			  struct strbuf *err);
void session_spend(struct session *s, struct request *r);
void session_tidy(struct session *s);

/*
 * session_keep.c: what a session keeps of its executes (session.h: session_keep_cells).
 * session_keep_wrap() has a cell to keep come through the keep: it swaps *fn and *data for
 * its own, which keep each event and pass it on; session_keep_sent() after the cell was
 * submitted (its *data, its id: 0 when it was not) keeps it from then on, or lets it go.
 * session_keep_state() sees the state changes (a restarted kernel: nothing to re-run);
 * session_keep_release() frees the keep.
 */
void session_keep_wrap(struct session *s, const char *code, session_event_fn *fn, void **data);
void session_keep_sent(struct session *s, void *data, unsigned long id);
void session_keep_state(struct session *s, const char *msg);
void session_keep_release(struct session *s);

/* session_kernel.c */
/* Allocate a session and the descriptors every session has; NULL with `err`. */
struct session *session_new(const struct session_opts *opts, struct strbuf *err);
/* Free what every session has, after the kernel was dealt with. */
void session_free(struct session *s, int remove_channel);
/* A backend and a fresh channel with the runner in it, watched: a kernel of our own to start. */
int session_new_channel(struct session *s, struct strbuf *err);
/* Lease a pooled kernel: 1 when the session has one, 0 to start our own, -1 on error. */
int session_open_pooled(struct session *s, const struct session_opts *opts, struct strbuf *err);
/* Take over the kernel serving in `dir`: read its ready file, watch it, adopt its pid. */
int session_adopt_kernel(struct session *s, const char *dir, struct strbuf *err);
/* Make the channel ready for a kernel and let the backend prepare its start (prepare()). */
int session_prepare_kernel(struct session *s, struct strbuf *err);
/* Start the runner (prepared first unless it is); session_kernel_ready() awaits it. */
int session_launch_kernel(struct session *s, struct strbuf *err);
/*
 * One look at a starting kernel: 1 when its ready file is there (and speaks our protocol),
 * 0 when it is still starting, -1 with `err` when it failed, died or ran out of time.
 */
int session_kernel_ready(struct session *s, struct strbuf *err);
/* Start the runner and wait for its ready file. */
int session_start_kernel(struct session *s, struct strbuf *err);
/* Ask the kernel to refuse the policy's modules when imported; 0 when there are none. */
unsigned long session_send_policy(struct session *s, struct strbuf *err);

/*
 * named_client.c: the front end's end of a named session (named.h). session.c hands each
 * call of a session whose `named` is set to the function here of the same name, which does
 * what session.h says of that call; session_of_named() (session.c) makes the session.
 */
struct named_client;

void named_client_close(struct named_client *nc);
int named_client_dispatch(struct named_client *nc);
unsigned long named_client_execute(struct named_client *nc, const char *code, unsigned flags,
				   double timeout, session_event_fn fn, void *data,
				   struct strbuf *err);
unsigned long named_client_request(struct named_client *nc, const char *kind,
				   const cJSON *params, session_event_fn fn, void *data,
				   struct strbuf *err);
int named_client_input_reply(struct named_client *nc, unsigned long id, const char *value,
			     struct strbuf *err);
int named_client_fd(const struct named_client *nc);
int named_client_pending(const struct named_client *nc, unsigned long id);
int named_client_wait(struct named_client *nc, unsigned long id);
void named_client_set_sigmask(struct named_client *nc, const sigset_t *mask);
int named_client_interrupt(struct named_client *nc);
int named_client_restart(struct named_client *nc, struct strbuf *err);
int named_client_revive(struct named_client *nc, struct strbuf *why, struct strbuf *err);
enum session_state named_client_state(const struct named_client *nc);
const char *named_client_channel_dir(const struct named_client *nc);
const cJSON *named_client_kernel_info(const struct named_client *nc);
const char *named_client_backend_name(const struct named_client *nc);
const struct kernel_def *named_client_kernel(const struct named_client *nc);
const char *named_client_name(const struct named_client *nc);
int named_client_read_only(const struct named_client *nc);
void named_client_watch(struct named_client *nc, session_watch_fn fn, void *data);

struct session *session_of_named(struct named_client *nc);

#endif
