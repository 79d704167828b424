/*
 * A front end's end of a named session: the calls of session.h, answered by the session's
 * host over its socket (named.h). session.c hands every call of a session whose `named` is
 * set to the function here of the same name. Events arrive as the host sent them: the ones
 * of this front end's requests go to their callbacks, the others (cells other front ends ran,
 * cells that ran before it attached) to the watcher (session_watch). A host that goes away
 * ends every request in flight with REASON_CHANNEL_LOST.
 */
#include "named_int.h"
#include "session_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base64.h"
#include "kernel.h"
#include "util.h"

#define CALL_TIMEOUT 30.0		/* seconds a host has to answer a call */
#define RESTART_TIMEOUT 300.0		/* ... a restart or a revive (a container's start) */

struct nreq {
	unsigned long id;
	session_event_fn fn;
	void *data;
	struct nreq *next;
};

struct named_client {
	struct session *s;
	struct named_conn c;
	int epfd, evfd;		/* session_fd(): the socket, and evfd while `queue` holds some */
	cJSON *queue;		/* messages read while a call waited for its reply */
	char *name, *backend, *channel;
	cJSON *info;
	const struct kernel_def *kernel;
	enum session_state state;
	int read_only, gone;
	struct nreq *reqs;
	session_watch_fn watch;
	void *watch_data;
	session_state_fn on_state;
	void *state_data;
	sigset_t mask;
	int has_mask;
	struct strbuf bytes;	/* the file of the event being delivered */
};

static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void poke(struct named_client *nc)
{
	uint64_t one = 1;

	if (cJSON_GetArraySize(nc->queue) && write(nc->evfd, &one, sizeof(one)) < 0)
		return;
}

/* Send `msg` (taken) and wait for its reply; NULL with `err`, or when it says not ok. */
static cJSON *call(struct named_client *nc, cJSON *msg, double timeout, struct strbuf *err)
{
	cJSON *r, *m;

	if (nc->gone) {
		strbuf_addf(err, "session '%s' has ended", nc->name);
		cJSON_Delete(msg);
		return NULL;
	}
	r = named_call(&nc->c, msg, timeout, nc->queue, err);
	cJSON_Delete(msg);
	/*
	 * Lines that came behind the reply in the same read wait in the connection's buffer,
	 * where no poll sees them (a cell's events, when it ends at once): queued, and poked.
	 */
	while ((m = named_conn_next(&nc->c)))
		cJSON_AddItemToArray(nc->queue, m);
	poke(nc);
	if (r && named_str(r, "state"))
		nc->state = session_state_named(named_str(r, "state"));
	if (r && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
		strbuf_addstr(err, named_str(r, "error") ? named_str(r, "error") : "refused");
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

static cJSON *msg_of(const char *t)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "t", t);
	return m;
}

/* A checked file's bytes, sent along in base64, into the event's plot. */
static void fill_file(struct named_client *nc, struct event_store *st, const cJSON *p)
{
	const char *b64 = named_str(p, "b64");

	if (!p)
		return;
	st->plot.path = named_str(p, "path");
	st->plot.ext = named_str(p, "ext");
	strbuf_reset(&nc->bytes);
	if (b64 && base64_decode(b64, strlen(b64), &nc->bytes) == 0) {
		st->plot.data = (const unsigned char *)nc->bytes.buf;
		st->plot.len = nc->bytes.len;
	}
}

static struct nreq **req_of(struct named_client *nc, unsigned long id)
{
	struct nreq **p = &nc->reqs;

	while (*p && (*p)->id != id)
		p = &(*p)->next;
	return p;
}

static void deliver(struct named_client *nc, const cJSON *m)
{
	const char *t = named_str(m, "t");
	unsigned long id = (unsigned long)num_of(m, "id");

	if (!t)
		return;
	if (!strcmp(t, "ev")) {
		struct event_store st = EVENT_STORE_INIT;
		struct session_event ev;
		cJSON *j = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m, "ev"), 1);
		struct nreq **p = req_of(nc, id), *r = *p;

		if (event_decode_made(&st, j, id, &ev) == 0) {
			const cJSON *o = st.json;

			if (ev.type == SESSION_EV_ARTIFACT)
				fill_file(nc, &st, o);
			else if (ev.type == SESSION_EV_DISPLAY || ev.type == SESSION_EV_RESULT)
				fill_file(nc, &st, cJSON_GetObjectItemCaseSensitive(o, "plot"));
			if (r && ev.type == SESSION_EV_DONE)
				*p = r->next;	/* off the list first: the callback may ask */
			if (r && r->fn)
				r->fn(nc->s, &ev, r->data);
			else if (!r && nc->watch)
				nc->watch(nc->s, id, NULL, 0, &ev, nc->watch_data);
			if (r && ev.type == SESSION_EV_DONE)
				free(r);
		}
		event_store_release(&st);
	} else if (!strcmp(t, "cell")) {
		if (nc->watch && named_str(m, "code"))
			nc->watch(nc->s, id, named_str(m, "code"),
				  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "past")), NULL,
				  nc->watch_data);
	} else if (!strcmp(t, "state")) {
		nc->state = session_state_named(named_str(m, "state"));
		if (nc->state == SESSION_CLOSED)
			nc->gone = 1;
		if (nc->on_state)
			nc->on_state(nc->s, nc->state, named_str(m, "msg"), nc->state_data);
	}
}

/* The host is gone: every request in flight ends, as a lost kernel's would. */
static void host_gone(struct named_client *nc)
{
	int was = nc->gone;

	nc->gone = 1;
	nc->state = was ? SESSION_CLOSED : SESSION_DEAD;
	while (nc->reqs) {
		struct nreq *r = nc->reqs;
		struct session_event ev = { .type = SESSION_EV_DONE, .id = r->id };

		nc->reqs = r->next;
		ev.done.status = SESSION_STATUS_ABORTED;
		ev.done.execution_count = -1;
		ev.done.reason = REASON_CHANNEL_LOST;
		usage_clear(&ev.done.usage);
		ev.done.detail = was ? "session ended" : "the session's host went away";
		if (r->fn)
			r->fn(nc->s, &ev, r->data);
		free(r);
	}
	if (!was && nc->on_state)
		nc->on_state(nc->s, SESSION_DEAD, "the session's host went away", nc->state_data);
}

int named_client_dispatch(struct named_client *nc)
{
	uint64_t n;
	int events = 0;
	cJSON *m;

	if (read(nc->evfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		n = 0;
	while ((m = cJSON_DetachItemFromArray(nc->queue, 0))) {
		deliver(nc, m);
		cJSON_Delete(m);
		events++;
	}
	if (nc->c.fd >= 0 && !nc->c.dead)
		named_conn_read(&nc->c);
	while ((m = named_conn_next(&nc->c))) {
		deliver(nc, m);
		cJSON_Delete(m);
		events++;
	}
	if (nc->c.dead && nc->c.fd >= 0) {
		epoll_ctl(nc->epfd, EPOLL_CTL_DEL, nc->c.fd, NULL);
		close(nc->c.fd);
		nc->c.fd = -1;
		host_gone(nc);
	}
	return events;
}

struct session *named_attach(const char *runtime, const char *name, int read_only,
			     const struct session_opts *opts, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	char *dir = named_dir(runtime, name, 0, err);
	struct named_client *nc;
	struct epoll_event ev = { .events = EPOLLIN };
	cJSON *m, *r;
	int fd;

	if (!dir)
		return NULL;
	fd = named_connect(dir, &why);
	free(dir);
	if (fd < 0) {
		strbuf_addf(err, "session '%s': %s", name, why.buf);
		strbuf_release(&why);
		return NULL;
	}
	nc = xcalloc(1, sizeof(*nc));
	named_conn_init(&nc->c, fd);
	nc->queue = cJSON_CreateArray();
	nc->name = xstrdup(name);
	strbuf_init(&nc->bytes, 0);
	nc->epfd = epoll_create1(EPOLL_CLOEXEC);
	nc->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.data.fd = fd;
	epoll_ctl(nc->epfd, EPOLL_CTL_ADD, fd, &ev);
	ev.data.fd = nc->evfd;
	epoll_ctl(nc->epfd, EPOLL_CTL_ADD, nc->evfd, &ev);
	m = msg_of("hello");
	cJSON_AddBoolToObject(m, "read_only", read_only);
	r = call(nc, m, CALL_TIMEOUT, &why);
	if (!r) {
		strbuf_addf(err, "session '%s': %s", name, why.buf);
		strbuf_release(&why);
		named_client_close(nc);
		return NULL;
	}
	nc->backend = xstrdup(named_str(r, "backend") ? named_str(r, "backend") : "?");
	nc->channel = xstrdup(named_str(r, "channel") ? named_str(r, "channel") : "");
	nc->kernel = kernel_find(named_str(r, "kernel"));
	if (!nc->kernel)
		nc->kernel = kernel_find(NULL);
	nc->info = cJSON_DetachItemFromObjectCaseSensitive(r, "kernel_info");
	nc->read_only = read_only;
	if (opts) {
		nc->on_state = opts->on_state;
		nc->state_data = opts->state_data;
	}
	cJSON_Delete(r);
	strbuf_release(&why);
	nc->s = session_of_named(nc);
	poke(nc);
	return nc->s;
}

void named_client_close(struct named_client *nc)
{
	if (!nc)
		return;
	named_conn_close(&nc->c);
	while (nc->reqs) {
		struct nreq *r = nc->reqs;
		nc->reqs = r->next;
		free(r);
	}
	if (nc->epfd >= 0)
		close(nc->epfd);
	if (nc->evfd >= 0)
		close(nc->evfd);
	cJSON_Delete(nc->queue);
	cJSON_Delete(nc->info);
	strbuf_release(&nc->bytes);
	free(nc->name);
	free(nc->backend);
	free(nc->channel);
	free(nc);
}

static unsigned long submit(struct named_client *nc, cJSON *m, session_event_fn fn, void *data,
			    struct strbuf *err)
{
	cJSON *r = call(nc, m, CALL_TIMEOUT, err);
	struct nreq *q;

	if (!r)
		return 0;
	q = xcalloc(1, sizeof(*q));
	q->id = (unsigned long)num_of(r, "id");
	q->fn = fn;
	q->data = data;
	*req_of(nc, 0) = q;	/* at the end: ids are not 0 */
	cJSON_Delete(r);
	return q->id;
}

unsigned long named_client_execute(struct named_client *nc, const char *code, unsigned flags,
				   double timeout, session_event_fn fn, void *data,
				   struct strbuf *err)
{
	cJSON *m = msg_of("execute");

	cJSON_AddStringToObject(m, "code", code);
	cJSON_AddNumberToObject(m, "flags", flags);
	cJSON_AddNumberToObject(m, "timeout", timeout);
	return submit(nc, m, fn, data, err);
}

unsigned long named_client_request(struct named_client *nc, const char *kind,
				   const cJSON *params, session_event_fn fn, void *data,
				   struct strbuf *err)
{
	cJSON *m = msg_of("request");

	cJSON_AddStringToObject(m, "kind", kind);
	if (params)
		cJSON_AddItemToObject(m, "params", cJSON_Duplicate(params, 1));
	return submit(nc, m, fn, data, err);
}

int named_client_input_reply(struct named_client *nc, unsigned long id, const char *value,
			     struct strbuf *err)
{
	cJSON *m = msg_of("input"), *r;

	cJSON_AddNumberToObject(m, "id", (double)id);
	cJSON_AddStringToObject(m, "value", value);
	r = call(nc, m, CALL_TIMEOUT, err);
	cJSON_Delete(r);
	return r ? 0 : -1;
}

int named_client_fd(const struct named_client *nc)
{
	return nc->epfd;
}

int named_client_pending(const struct named_client *nc, unsigned long id)
{
	for (const struct nreq *r = nc->reqs; r; r = r->next)
		if (r->id == id)
			return 1;
	return 0;
}

int named_client_wait(struct named_client *nc, unsigned long id)
{
	while (named_client_pending(nc, id)) {
		struct epoll_event evs[2];

		named_client_dispatch(nc);
		if (!named_client_pending(nc, id))
			break;
		if (epoll_pwait(nc->epfd, evs, 2, -1, nc->has_mask ? &nc->mask : NULL) < 0 &&
		    errno == EINTR)
			return -1;
	}
	return 0;
}

void named_client_set_sigmask(struct named_client *nc, const sigset_t *mask)
{
	nc->has_mask = mask != NULL;
	if (mask)
		nc->mask = *mask;
}

static int simple(struct named_client *nc, const char *t, double timeout, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	cJSON *r = call(nc, msg_of(t), timeout, err ? err : &why);

	strbuf_release(&why);
	cJSON_Delete(r);
	return r ? 0 : -1;
}

int named_client_interrupt(struct named_client *nc)
{
	return simple(nc, "interrupt", CALL_TIMEOUT, NULL);
}

int named_client_restart(struct named_client *nc, struct strbuf *err)
{
	return simple(nc, "restart", RESTART_TIMEOUT, err);
}

int named_client_revive(struct named_client *nc, struct strbuf *why, struct strbuf *err)
{
	cJSON *r;
	int rc;

	if (nc->read_only)
		return 0;	/* a watcher restarts nothing: its cells are refused anyway */
	r = call(nc, msg_of("revive"), RESTART_TIMEOUT, err);
	if (!r)
		return -1;
	rc = (int)num_of(r, "revived");
	if (named_str(r, "why"))
		strbuf_addstr(why, named_str(r, "why"));
	cJSON_Delete(r);
	return rc;
}

enum session_state named_client_state(const struct named_client *nc)
{
	return nc->state;
}

const char *named_client_channel_dir(const struct named_client *nc)
{
	return nc->channel;
}

const cJSON *named_client_kernel_info(const struct named_client *nc)
{
	return nc->info;
}

const char *named_client_backend_name(const struct named_client *nc)
{
	return nc->backend;
}

const struct kernel_def *named_client_kernel(const struct named_client *nc)
{
	return nc->kernel;
}

const char *named_client_name(const struct named_client *nc)
{
	return nc->name;
}

int named_client_read_only(const struct named_client *nc)
{
	return nc->read_only;
}

void named_client_watch(struct named_client *nc, session_watch_fn fn, void *data)
{
	nc->watch = fn;
	nc->watch_data = data;
	poke(nc);
}
