/* `cellbox kernel`: the sockets and the one zmq_poll loop over them and the session: jupyter.h. */
#include "jupyter_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

static const int socket_types[JUPYTER_NCHANNELS] = {
	[JUPYTER_SHELL] = ZMQ_ROUTER,
	[JUPYTER_IOPUB] = ZMQ_PUB,
	[JUPYTER_STDIN] = ZMQ_ROUTER,
	[JUPYTER_CONTROL] = ZMQ_ROUTER,
	[JUPYTER_HB] = ZMQ_REP,
};

static const char *const channel_names[JUPYTER_NCHANNELS] = {
	"shell", "iopub", "stdin", "control", "hb",
};

/* Make and bind the five sockets: -1 with `err`. */
static int bind_all(struct jupyter_kernel *k, void *ctx, const struct jupyter_conn *c,
		    struct strbuf *err)
{
	int64_t max = JUPYTER_MAX_PART;
	int linger = 1000;
	char endpoint[300];

	for (int ch = 0; ch < JUPYTER_NCHANNELS; ch++) {
		k->sock[ch] = zmq_socket(ctx, socket_types[ch]);
		if (!k->sock[ch]) {
			strbuf_addf(err, "zmq socket: %s", zmq_strerror(errno));
			return -1;
		}
		zmq_setsockopt(k->sock[ch], ZMQ_MAXMSGSIZE, &max, sizeof(max));
		zmq_setsockopt(k->sock[ch], ZMQ_LINGER, &linger, sizeof(linger));
		jupyter_conn_endpoint(c, ch, endpoint, sizeof(endpoint));
		if (zmq_bind(k->sock[ch], endpoint) < 0) {
			strbuf_addf(err, "cannot bind the %s channel to %s: %s", channel_names[ch],
				    endpoint, zmq_strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * Echo the heartbeat's pings as they came (a REP socket answers a whole request: its frames
 * are all read first; past the first 8 they are dropped).
 */
static void heartbeat(void *sock)
{
	enum { MAX = 8 };

	for (;;) {
		zmq_msg_t parts[MAX], extra;
		int n = 0, more = 1;

		while (more) {
			zmq_msg_t *p = n < MAX ? &parts[n] : &extra;

			zmq_msg_init(p);
			if (zmq_msg_recv(p, sock, n ? 0 : ZMQ_DONTWAIT) < 0) {
				zmq_msg_close(p);
				break;
			}
			more = zmq_msg_more(p);
			if (p == &extra)
				zmq_msg_close(p);
			else
				n++;
		}
		if (!n)
			return;
		for (int i = 0; i < n; i++) {
			zmq_msg_send(&parts[i], sock, i + 1 < n ? ZMQ_SNDMORE : 0);
			zmq_msg_close(&parts[i]);
		}
	}
}

/* Take every message waiting on `ch`: control at once, shell into the queue, stdin's input. */
static void drain(struct jupyter_kernel *k, enum jupyter_channel ch)
{
	struct strbuf err = STRBUF_INIT;
	int rc;

	for (;;) {
		struct jupyter_pending *p = xcalloc(1, sizeof(*p));

		strbuf_reset(&err);
		rc = jupyter_wire_recv(&k->w, k->sock[ch], &p->m, &err);
		if (rc <= 0) {
			free(p);
			if (rc == 0)
				break;
			fprintf(stderr, "cellbox kernel: dropped a message on %s: %s\n",
				channel_names[ch], err.buf);
			continue;
		}
		p->ch = ch;
		if (ch == JUPYTER_STDIN) {
			if (!strcmp(p->m.type, "input_reply"))
				jupyter_exec_input(k, &p->m);
			jupyter_shell_free(p);
		} else if (ch == JUPYTER_CONTROL) {
			if (!jupyter_shell_handle(k, p))
				jupyter_shell_free(p);
		} else {
			*k->tail = p;
			k->tail = &p->next;
		}
	}
	strbuf_release(&err);
}

/* Start the queued shell requests in order while none waits on the session. */
static void run_queue(struct jupyter_kernel *k)
{
	while (!k->cur && k->queue && !k->quit) {
		struct jupyter_pending *p = k->queue;

		k->queue = p->next;
		if (!k->queue)
			k->tail = &k->queue;
		p->next = NULL;
		if (!jupyter_shell_handle(k, p))
			jupyter_shell_free(p);
	}
}

/* The loop: until a shutdown_request or a stop signal. */
static void serve(struct jupyter_kernel *k, int wake_fd, int parent_fd,
		  volatile sig_atomic_t *stop, volatile sig_atomic_t *interrupt)
{
	static const enum jupyter_channel polled[] = {
		JUPYTER_CONTROL, JUPYTER_SHELL, JUPYTER_STDIN, JUPYTER_HB,
	};
	enum { NSOCK = ARRAY_SIZE(polled) };

	jupyter_shell_status(k, NULL, "starting");
	while (!k->quit && !*stop) {
		zmq_pollitem_t items[NSOCK + 3];
		int n = NSOCK, dead = session_state(k->s) == SESSION_DEAD;

		for (int i = 0; i < NSOCK; i++)
			items[i] = (zmq_pollitem_t){ .socket = k->sock[polled[i]], .events = ZMQ_POLLIN };
		items[n++] = (zmq_pollitem_t){ .fd = wake_fd, .events = ZMQ_POLLIN };
		items[n++] = (zmq_pollitem_t){ .fd = parent_fd,
					       .events = parent_fd >= 0 ? ZMQ_POLLIN : 0 };
		if (!dead)	/* nothing more comes from a dead kernel */
			items[n++] = (zmq_pollitem_t){ .fd = session_fd(k->s), .events = ZMQ_POLLIN };
		if (zmq_poll(items, n, -1) < 0 && errno != EINTR) {
			fprintf(stderr, "cellbox kernel: poll: %s\n", zmq_strerror(errno));
			break;
		}
		if (items[NSOCK + 1].revents) {
			fprintf(stderr, "cellbox kernel: the front end's process ended: shutting down\n");
			break;
		}
		if (items[NSOCK].revents) {
			char buf[64];

			while (read(wake_fd, buf, sizeof(buf)) > 0)
				;
		}
		if (*interrupt) {
			*interrupt = 0;
			session_interrupt(k->s);
		}
		heartbeat(k->sock[JUPYTER_HB]);
		drain(k, JUPYTER_CONTROL);
		drain(k, JUPYTER_STDIN);
		/* the requests that came before a cell's end are queued when it ends: an error
		   aborts them all (stop_on_error), not only those read in an earlier turn */
		drain(k, JUPYTER_SHELL);
		if (!dead && items[NSOCK + 2].revents)
			session_dispatch(k->s);
		run_queue(k);
	}
}

struct jupyter_kernel *jupyter_listen(const struct jupyter_conn *c, struct strbuf *err)
{
	struct jupyter_kernel *k = xcalloc(1, sizeof(*k));

	k->tail = &k->queue;
	k->key = xstrdup(c->key);
	k->w.key = k->key;
	k->w.keylen = c->keylen;
	jupyter_wire_uuid(k->w.session);
	k->ctx = zmq_ctx_new();
	if (!k->ctx) {
		strbuf_addf(err, "zmq: %s", zmq_strerror(errno));
		jupyter_close(k);
		return NULL;
	}
	if (bind_all(k, k->ctx, c, err) < 0) {
		jupyter_close(k);
		return NULL;
	}
	return k;
}

void jupyter_serve(struct jupyter_kernel *k, struct session *s, double timeout, int wake_fd,
		   int parent_fd, volatile sig_atomic_t *stop, volatile sig_atomic_t *interrupt)
{
	k->s = s;
	k->timeout = timeout;
	serve(k, wake_fd, parent_fd, stop, interrupt);
	/* the cell in flight ends (interrupted) while its callbacks can still answer it */
	if (k->cur && session_pending(s, k->cur_id)) {
		session_interrupt(s);
		for (int tries = 0; tries < 3 && session_pending(s, k->cur_id); tries++)
			session_wait(s, k->cur_id);
	}
}

void jupyter_close(struct jupyter_kernel *k)
{
	if (!k)
		return;
	while (k->queue) {
		struct jupyter_pending *p = k->queue;

		k->queue = p->next;
		jupyter_shell_free(p);
	}
	jupyter_shell_free(k->cur);
	cJSON_Delete(k->reply);
	jupyter_exec_release(k);
	for (int ch = 0; ch < JUPYTER_NCHANNELS; ch++)
		if (k->sock[ch])
			zmq_close(k->sock[ch]);
	if (k->ctx)
		zmq_ctx_term(k->ctx);
	free(k->key);
	free(k);
}
