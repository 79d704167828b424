#ifndef CELLBOX_JUPYTER_H
#define CELLBOX_JUPYTER_H

/*
 * `cellbox kernel`: a Jupyter kernel provider. A Jupyter front end (jupyter_client, nbclient,
 * jupyter-console) starts `cellbox kernel -f CONNECTION_FILE` and speaks the Jupyter wire
 * protocol (messaging spec 5.3) to it over ZMQ; behind it runs one cellbox session, and this
 * floor translates between the two. One job a file:
 *
 *	jupyter_conn.c		the connection file: endpoints, key, signature scheme
 *	jupyter_wire.c		framing and signing: frames <-> a checked message, HMAC-SHA256
 *	jupyter_shell.c		the handlers of the shell and control channels, in a table
 *	jupyter_exec.c		execute_request: the session's events as iopub messages
 *	jupyter_loop.c		the sockets and the one zmq_poll loop (heartbeat included)
 *
 * The front end's bytes are outside input: frames are capped in number and size, JSON is
 * parsed with cJSON with a length, a message whose signature does not match is dropped with a
 * line on stderr, and a field of the wrong type counts as absent.
 */

#include <signal.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "session.h"
#include "strbuf.h"

/* The five channels, in the connection file's order of ports. */
enum jupyter_channel {
	JUPYTER_SHELL,
	JUPYTER_IOPUB,
	JUPYTER_STDIN,
	JUPYTER_CONTROL,
	JUPYTER_HB,
	JUPYTER_NCHANNELS,
};

/* ---- the connection file (jupyter_conn.c) ------------------------------------------------ */

#define JUPYTER_CONN_MAX (64u << 10)	/* bytes of a connection file read at most */
#define JUPYTER_KEY_MAX 1024		/* bytes of a key */

struct jupyter_conn {
	char transport[8];		/* "tcp" or "ipc" */
	char ip[256];			/* tcp: the address; ipc: the path's stem */
	int ports[JUPYTER_NCHANNELS];
	char key[JUPYTER_KEY_MAX + 1];	/* empty: messages are not signed */
	size_t keylen;
};

/* Read the connection file `path`. -1 with `err` when it is not one this kernel can serve. */
int jupyter_conn_read(const char *path, struct jupyter_conn *c, struct strbuf *err);
/* The same from its text. */
int jupyter_conn_parse(const char *text, size_t len, struct jupyter_conn *c, struct strbuf *err);
/* The ZMQ endpoint of channel `ch` ("tcp://127.0.0.1:5555", "ipc://path-2"). */
void jupyter_conn_endpoint(const struct jupyter_conn *c, enum jupyter_channel ch, char *out,
			   size_t size);

/* ---- messages on the wire (jupyter_wire.c) ------------------------------------------------ */

#define JUPYTER_MAX_FRAMES 32		/* identities + delimiter + signature + 4 + buffers */
#define JUPYTER_MAX_IDS 8		/* routing identities before "<IDS|MSG>" */
#define JUPYTER_MAX_ID_LEN 256		/* bytes of one identity */
#define JUPYTER_MAX_PART (64u << 20)	/* bytes of one frame (a cell's code: 64 MB) */

/* One frame as it came (the bytes are the caller's). */
struct jupyter_frame {
	const void *data;
	size_t len;
};

/* A message whose signature was checked and whose four dicts are JSON objects. */
struct jupyter_msg {
	struct strbuf ids[JUPYTER_MAX_IDS];	/* the routing identities, to answer to */
	size_t nids;
	cJSON *header, *parent, *metadata, *content;
	const char *type;			/* header.msg_type, never NULL */
};

/* What signs and names our messages. */
struct jupyter_wire {
	const char *key;
	size_t keylen;
	char session[40];			/* our session id (a uuid) */
};

enum {
	JUPYTER_NOT_A_MESSAGE = -1,	/* frames that are no message: dropped */
	JUPYTER_BAD_SIGNATURE = -2,	/* a message not signed with our key: dropped */
};

/*
 * Check and decode the frames of one message: `m` holds copies of what it needs. 0, or
 * JUPYTER_NOT_A_MESSAGE / JUPYTER_BAD_SIGNATURE with `err` saying why (`m` is then empty).
 */
int jupyter_wire_parse(const struct jupyter_wire *w, const struct jupyter_frame *f, size_t n,
		       struct jupyter_msg *m, struct strbuf *err);
void jupyter_msg_release(struct jupyter_msg *m);
/* A fresh uuid4 in its text form (message ids, our session id). */
void jupyter_wire_uuid(char out[37]);
/*
 * Receive one multipart message from `sock` without waiting: 1 with `m` set, 0 when none is
 * there, or the parse error (what was received is dropped; `err` says why).
 */
int jupyter_wire_recv(const struct jupyter_wire *w, void *sock, struct jupyter_msg *m,
		      struct strbuf *err);
/*
 * Sign and send a message of `type` with `content` (taken: deleted here), in answer to
 * `parent` (may be NULL): to its identities on a ROUTER socket, under a topic on iopub
 * (`ids` NULL). -1 when ZMQ refused it.
 */
int jupyter_wire_send(const struct jupyter_wire *w, void *sock, const struct jupyter_msg *parent,
		      int to_ids, const char *type, cJSON *content);

/* ---- the kernel (jupyter_loop.c) ---------------------------------------------------------- */

/*
 * The kernel's three steps:
 *
 *	k = jupyter_listen(&conn, &err);	// the five sockets bound
 *	s = session_open(...);			// meanwhile the front end connects
 *	jupyter_serve(k, s, ...);		// until shutdown_request or a stop signal
 *	jupyter_close(k);
 *
 * The sockets are bound before the session starts, as ipykernel binds them before it loads:
 * the front end's connections (its iopub subscription above all, which ZMQ makes after the
 * connection, so that what is published before it is lost) are made while the kernel starts,
 * not raced against its first cell. Requests that come meanwhile wait in the sockets.
 */
struct jupyter_kernel;
/* Bind the sockets of connection `c`: NULL with `err` when one cannot be. */
struct jupyter_kernel *jupyter_listen(const struct jupyter_conn *c, struct strbuf *err);
/*
 * Serve the front end with session `s` until a shutdown_request (not a restart) or a stop
 * signal; a cell that runs past `timeout` seconds (0: none) is interrupted, as by the timeout
 * setting everywhere. The caller's signal handlers set `*stop` (SIGTERM) or `*interrupt`
 * (SIGINT: the running cell is interrupted, as by interrupt_request) and write a byte to the
 * pipe whose reading end is `wake_fd`, which the loop polls. `parent_fd` (-1: none) is
 * readable when the front end's process ended: the loop ends too. A cell still running at the
 * end is interrupted and answered first.
 */
void jupyter_serve(struct jupyter_kernel *k, struct session *s, double timeout, int wake_fd,
		   int parent_fd, volatile sig_atomic_t *stop, volatile sig_atomic_t *interrupt);
/* Close the sockets and free everything. NULL is fine. */
void jupyter_close(struct jupyter_kernel *k);

#endif
