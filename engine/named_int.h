#ifndef CELLBOX_NAMED_INT_H
#define CELLBOX_NAMED_INT_H

/*
 * What the files of named sessions share. Internal. named_wire.c is a connection's lines of
 * JSON (read and written without blocking, capped both ways); named_dir.c the sessions'
 * directory (names, paths, connecting, ls, kill); named_spawn.c starts a host (named_start),
 * named_host.c is its loop; session.c calls named_client.c, a front end's end, for a session
 * whose `named` is set.
 */

#include <cjson/cJSON.h>
#include "named.h"

struct named_conn {
	int fd;			/* non-blocking; -1 once closed */
	struct strbuf in;	/* read, not yet a whole line */
	struct strbuf out;	/* to write */
	int dead;		/* EOF, an error, a line or a queue past its cap */
};

void named_conn_init(struct named_conn *c, int fd);
void named_conn_close(struct named_conn *c);
/* Queue `msg` as a line and write what can be written now. -1 when the connection is dead. */
int named_conn_send(struct named_conn *c, const cJSON *msg);
/* Queue a line made already (with its newline). */
int named_conn_send_line(struct named_conn *c, const char *line, size_t len);
/* Write what is queued, without blocking: 0 when all is out, 1 when more waits, -1 dead. */
int named_conn_flush(struct named_conn *c);
/* Read what is there, without blocking: 0, or -1 when the connection is dead (EOF too). */
int named_conn_read(struct named_conn *c);
/* The next whole line as JSON (the caller deletes it), or NULL when none is there. */
cJSON *named_conn_next(struct named_conn *c);
/* The string member `key` of a message, or NULL when it has none that is a string. */
const char *named_str(const cJSON *o, const char *key);

/* named_dir.c: RUNTIME/sessions/NAME (made, ours and 0700, with `make`); NULL with `err`. */
char *named_dir(const char *runtime, const char *name, int make, struct strbuf *err);
/* Connect to the host in `dir` (blocking, then non-blocking); -1 with `err`. */
int named_connect(const char *dir, struct strbuf *err);
/*
 * Send `msg` (a `req` number is added) and wait up to `timeout` seconds for the reply to it;
 * what comes before it goes into the array `others` (NULL: dropped). NULL with `err`.
 */
cJSON *named_call(struct named_conn *c, cJSON *msg, double timeout, cJSON *others,
		  struct strbuf *err);
/*
 * One question to the host of session `name` under `runtime`: `msg` (deleted here) sent and
 * its reply waited for up to `timeout` seconds. The reply when it says ok (the caller deletes
 * it), else NULL with `err` ("session 'NAME': why").
 */
cJSON *named_ask(const char *runtime, const char *name, cJSON *msg, double timeout,
		 struct strbuf *err);

/*
 * named_host.c: the host's loop. named_host_new() before the session opens (its state
 * callback is named_host_state() with the host as data), named_host_serve() until the end:
 * it closes the session, removes `dir` and frees the host.
 */
struct host;
/*
 * named_memckpt.c: the host's memory checkpoint of its session `s` into `path` (named.h).
 * `probe`: only whether one could be taken (everything it needs but the kernel idle), none taken.
 */
int named_memckpt_make(struct session *s, const char *name, const cJSON *cells,
		       const char *path, int probe, struct strbuf *err);
/*
 * Whether its kernel was restored from a memory checkpoint: the host has only the cells
 * since, not a list to re-run (a re-run checkpoint or fork of it is refused).
 */
int named_memckpt_restored(struct session *s);
struct host *named_host_new(const char *name, const char *dir, const struct named_idle *idle,
			    const struct named_recorder *rec);
void named_host_state(struct session *s, enum session_state state, const char *msg, void *data);
void named_host_serve(struct host *h, struct session *s, int lfd);

/*
 * named_fork.c: a fork of a local session's kernel (docs/sessions.md, "Fork"). The host of
 * session `self` asks for one named `name` with named_fork_begin(): the copy's channel made
 * and the kernel's fork request sent (0), or -1 with `err`. Once the request is done, the
 * copy is found (its pid as the channel's ready file says, looked for only in the namespace
 * of the session's kernel, then held by a pidfd), its pid note written and session `name`'s
 * host started on it by adoption, recording with `rec` (the forked host's, opened again).
 * Then `done` hears the copy's pidfd (the caller's to keep), or -1 and why not (the copy
 * killed and its channel removed).
 */
#define NAMED_MAX_FORKS 64		/* copies a host made that may live at once */
typedef void (*named_forked_fn)(void *data, const char *name, int pidfd, const char *error);
int named_fork_begin(struct session *s, const char *self, const char *name,
		     const char *runtime, const struct named_recorder *rec,
		     named_forked_fn done, void *data, struct strbuf *err);
/* How many of the copies (pidfds; -1: none) still live. */
int named_fork_alive(const int *pidfds, int n);
/*
 * The session ends while copies of it live: its kernel is stopped, not killed (its pid
 * namespace's init keeps the copies alive), the session detached, and this waits until every
 * copy has ended, then kills the kernel and removes its channel.
 */
void named_fork_linger(struct session *s, const int *pidfds, int n);

#endif
