#ifndef CELLBOX_JUPYTER_INT_H
#define CELLBOX_JUPYTER_INT_H

/*
 * What the parts of `cellbox kernel` share (jupyter.h lists them): the kernel's state, one
 * struct the loop owns and the handlers read.
 *
 * Shell requests are answered in order, one at a time, as ipykernel does: the loop queues
 * them and hands the head to jupyter_shell_handle(); one that waits on the session (execute,
 * complete, inspect, is_complete) stays `cur` until its done event, when jupyter_shell_end()
 * publishes idle and the next one starts. Control requests are handled at once.
 */

#include "jupyter.h"

/* A request received and not yet answered. */
struct jupyter_pending {
	struct jupyter_msg m;
	enum jupyter_channel ch;	/* the socket it came on, and the reply goes to */
	struct jupyter_pending *next;
};

/* A cell of this kernel's history (history_request). */
struct jupyter_cell {
	int line;			/* its execution count */
	char *input;
	char *output;			/* its execute_result's text/plain, or NULL */
};

#define JUPYTER_HISTORY_MAX 1000	/* cells kept for history_request */

struct jupyter_kernel {
	struct session *s;
	struct jupyter_wire w;
	char *key;			/* the connection file's, ours to keep */
	void *ctx, *sock[JUPYTER_NCHANNELS];
	struct jupyter_pending *queue, **tail;	/* shell requests waiting their turn */
	struct jupyter_pending *cur;	/* the one waiting on the session, else NULL */
	unsigned long cur_id;		/* its session request */
	double timeout;			/* a cell's, in seconds; 0 = none */
	int quit;			/* a shutdown_request (not a restart) came */
	int count;			/* the last execution count */
	/* the execute_request in flight */
	int silent, store_history, stop_on_error;
	cJSON *reply;			/* the reply's content as it is known so far */
	cJSON *payload;			/* execute_reply's payload (the pager's help) */
	char *result_text;		/* its execute_result's text/plain, for the history */
	int errored;			/* an error event came */
	struct jupyter_cell *history;
	size_t nhistory, history_alloc;
};

/* Publish on iopub, in answer to `parent` (may be NULL); `content` is taken. */
void jupyter_shell_publish(struct jupyter_kernel *k, const struct jupyter_pending *parent,
			   const char *type, cJSON *content);
/* Publish status `state` ("busy", "idle", "starting") for `parent`. */
void jupyter_shell_status(struct jupyter_kernel *k, const struct jupyter_pending *parent,
			  const char *state);
/* Answer `p` on its own socket; `content` is taken. */
void jupyter_shell_reply(struct jupyter_kernel *k, const struct jupyter_pending *p,
			 const char *type, cJSON *content);
/*
 * Handle request `p` (busy, its handler, idle unless it waits on the session): 1 when it was
 * taken (it became `cur`, or was answered and freed), else 0 (`p` is the caller's to free).
 */
int jupyter_shell_handle(struct jupyter_kernel *k, struct jupyter_pending *p);
/* The request `cur` is answered: idle, free it, make way for the next. */
void jupyter_shell_end(struct jupyter_kernel *k);
/* Free a pending request. */
void jupyter_shell_free(struct jupyter_pending *p);

/*
 * execute_request (jupyter_exec.c): always 1, `p` taken: it waits on the session as `cur`, or
 * (the session refused it) it was answered with an error and freed.
 */
int jupyter_exec_start(struct jupyter_kernel *k, struct jupyter_pending *p);
/* input_reply on stdin for the cell in flight. */
void jupyter_exec_input(struct jupyter_kernel *k, const struct jupyter_msg *m);
/* Answer the queued execute_requests "aborted" (a cell failed with stop_on_error). */
void jupyter_exec_abort_queue(struct jupyter_kernel *k);
/* history_request's reply content from the cells kept. */
cJSON *jupyter_exec_history(struct jupyter_kernel *k, const cJSON *request);
void jupyter_exec_release(struct jupyter_kernel *k);

/* The members of a request's content, typed: a missing or mistyped one is `dflt`. */
const char *jupyter_str(const cJSON *content, const char *name, const char *dflt);
int jupyter_bool(const cJSON *content, const char *name, int dflt);
int jupyter_int(const cJSON *content, const char *name, int dflt);

#endif
