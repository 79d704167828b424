/*
 * A named session's host: the loop that owns the session while front ends come and go. It
 * polls the session (its kernel's events, deaths and deadlines run here, attached or not),
 * the listening socket and each front end; runs what front ends send; sends every execute's
 * cell and events to every front end and keeps the recent ones for those that attach later;
 * records the history. See named.h.
 */
#include "named_host_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "msg.h"
#include "util.h"

static volatile sig_atomic_t terminated;

static void on_term(int sig)
{
	(void)sig;
	terminated = 1;
}

static struct hclient *client_of(struct host *h, unsigned serial)
{
	for (int i = 0; i < h->ncl; i++)
		if (h->cl[i]->serial == serial)
			return h->cl[i];
	return NULL;
}

/* A line to every front end that said hello, but `except` (a serial; 0: none). */
static void broadcast(struct host *h, const char *line, size_t len, unsigned except)
{
	for (int i = 0; i < h->ncl; i++)
		if (h->cl[i]->hello && h->cl[i]->serial != except)
			named_conn_send_line(&h->cl[i]->c, line, len);
}

static void send_msg(struct host *h, cJSON *msg, unsigned except)
{
	char *text = cJSON_PrintUnformatted(msg);
	size_t n = strlen(text);

	text = realloc(text, n + 2);
	if (!text)
		abort();
	text[n] = '\n';
	broadcast(h, text, n + 1, except);
	free(text);
	cJSON_Delete(msg);
}

static void on_event(struct session *s, const struct session_event *ev, void *data)
{
	struct hcell *c = data;
	struct host *h = c->h;
	size_t n;
	char *text = named_keep_ev_line(c->id, ev, &n);
	int done = ev->type == SESSION_EV_DONE;

	if (c->execute) {
		named_keep_line(&h->keep, c, text, n, done);
		broadcast(h, text, n, 0);
		if (h->rec)
			h->rec->event(h->rec->data, s, ev);
	} else {
		struct hclient *cl = client_of(h, c->origin);

		if (cl)
			named_conn_send_line(&cl->c, text, n);
	}
	free(text);
	if (!done)
		return;
	c->done = 1;
	if (c->execute)
		named_keep_rerun(&h->keep, c->code, ev);
	if (c->execute) {
		if (h->rec)
			h->rec->cell(h->rec->data, c->code);
		h->idle_since = clock_wall();
		named_keep_trim(&h->keep);
	} else {
		struct hcell **p = &h->priv;

		while (*p && *p != c)
			p = &(*p)->next;
		if (*p)
			*p = c->next;
		named_keep_cell_free(c);
	}
}

void named_host_state(struct session *s, enum session_state state, const char *msg, void *data)
{
	struct host *h = data;
	cJSON *m = cJSON_CreateObject();

	(void)s;
	if (msg && !strcmp(msg, "kernel restarted")) {	/* a fresh kernel: nothing to re-run */
		named_keep_restart(&h->keep);
	}
	cJSON_AddStringToObject(m, "t", "state");
	cJSON_AddStringToObject(m, "state", session_state_name(state));
	if (msg)
		cJSON_AddStringToObject(m, "msg", msg);
	send_msg(h, m, 0);
}

static cJSON *reply_to(const cJSON *msg)
{
	cJSON *r = cJSON_CreateObject();
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(msg, "req");

	cJSON_AddStringToObject(r, "t", "reply");
	cJSON_AddNumberToObject(r, "req", cJSON_IsNumber(req) ? req->valuedouble : 0);
	return r;
}

static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 ? v->valuedouble : 0;
}

/* A front end says hello: the cells kept, then the session (the reply), then it is live. */
static void hello(struct host *h, struct hclient *cl, const cJSON *msg, cJSON *r)
{
	const cJSON *info = session_kernel_info(h->s);

	cl->read_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "read_only"));
	named_host_add_status(h, r);
	cJSON_AddStringToObject(r, "channel", session_channel_dir(h->s));
	if (info)
		cJSON_AddItemToObject(r, "kernel_info", cJSON_Duplicate(info, 1));
	cJSON_AddBoolToObject(r, "read_only", cl->read_only);
	cJSON_AddTrueToObject(r, "ok");
	/* The cells kept go first: when the front end has the reply, it has them all. */
	for (struct hcell *c = h->keep.cells; c; c = c->next) {
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "t", "cell");
		cJSON_AddNumberToObject(m, "id", (double)c->id);
		cJSON_AddStringToObject(m, "code", c->code);
		cJSON_AddTrueToObject(m, "past");
		named_conn_send(&cl->c, m);
		cJSON_Delete(m);
		named_conn_send_line(&cl->c, c->log.buf, c->log.len);
	}
	named_conn_send(&cl->c, r);
	cl->hello = 1;
}

/* An execute or another request: 0 with its id in `r`, or -1 with `err`. */
static int submit(struct host *h, struct hclient *cl, const cJSON *msg, int execute, cJSON *r,
		  struct strbuf *err)
{
	static const char *const kinds[] = { "complete", "inspect", "is_complete", "clear_plots" };
	struct hcell *c = xcalloc(1, sizeof(*c));
	const char *code = named_str(msg, "code"), *kind = named_str(msg, "kind");
	unsigned flags = (unsigned)num_of(msg, "flags") &
			 (SESSION_EXEC_SILENT | SESSION_EXEC_ALLOW_STDIN | SESSION_EXEC_CLEAR_PLOTS |
			  SESSION_EXEC_TRUSTED);
	size_t k = 0;

	c->h = h;
	/* A front end's own silent cell (the UI's width, its variables pane) is its alone. */
	c->execute = execute && !(flags & SESSION_EXEC_SILENT);
	c->origin = cl->serial;
	strbuf_init(&c->log, 0);
	if (execute) {
		if (!code) {
			strbuf_addstr(err, "execute without code");
			goto fail;
		}
		c->code = xstrdup(code);
		c->id = session_execute(h->s, code, flags, num_of(msg, "timeout"), on_event, c, err);
	} else {
		while (kind && k < ARRAY_SIZE(kinds) && strcmp(kind, kinds[k]))
			k++;
		if (!kind || k == ARRAY_SIZE(kinds)) {
			strbuf_addstr(err, "no such request");
			goto fail;
		}
		c->code = xstrdup(kind);
		c->id = session_request(h->s, kind, cJSON_GetObjectItemCaseSensitive(msg, "params"),
					on_event, c, err);
	}
	if (!c->id)
		goto fail;
	cJSON_AddNumberToObject(r, "id", (double)c->id);
	if (!c->execute) {
		c->next = h->priv;
		h->priv = c;
		return 0;
	}
	named_keep_add(&h->keep, c);
	return 0;
fail:
	named_keep_cell_free(c);
	return -1;
}

/* Tell the others a front end's cell has begun (after its sender heard its id). */
static void tell_cell(struct host *h, struct hclient *cl, const char *code, double id)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "t", "cell");
	cJSON_AddNumberToObject(m, "id", id);
	cJSON_AddStringToObject(m, "code", code);
	send_msg(h, m, cl->serial);
}

/* A copy's pidfd kept: the host lingers while one lives (named_fork_linger). */
static int keep_fork(struct host *h, int pidfd)
{
	for (int i = 0; i < h->nforks; i++)
		if (h->forks[i] >= 0 && named_fork_alive(&h->forks[i], 1) == 0) {
			close(h->forks[i]);
			h->forks[i] = pidfd;
			return 0;
		}
	if (h->nforks == NAMED_MAX_FORKS)
		return -1;
	h->forks[h->nforks++] = pidfd;
	return 0;
}

/* What a fork's front end is answered with, once the fork is done (named_fork_begin). */
struct fork_asker {
	struct host *h;
	unsigned origin;		/* the front end's serial */
	double req;			/* its message's number */
};

static void on_forked(void *data, const char *name, int pidfd, const char *error)
{
	struct fork_asker *a = data;
	struct host *h = a->h;
	struct hclient *cl = client_of(h, a->origin);
	cJSON *r = cJSON_CreateObject();

	if (pidfd >= 0 && keep_fork(h, pidfd) < 0)
		close(pidfd);	/* (past NAMED_MAX_FORKS: not waited for) */
	cJSON_AddStringToObject(r, "t", "reply");
	cJSON_AddNumberToObject(r, "req", a->req);
	cJSON_AddBoolToObject(r, "ok", !error);
	if (error)
		cJSON_AddStringToObject(r, "error", error);
	else
		cJSON_AddStringToObject(r, "name", name);
	cJSON_AddStringToObject(r, "state", session_state_name(session_state(h->s)));
	if (cl)
		named_conn_send(&cl->c, r);
	cJSON_Delete(r);
	free(a);
}

/* A front end asks for a fork: 0 when its kernel was asked (answered in on_forked), or -1. */
static int fork_begin(struct host *h, struct hclient *cl, const cJSON *msg, struct strbuf *err)
{
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(msg, "req");
	struct fork_asker *a = xcalloc(1, sizeof(*a));

	a->h = h;
	a->origin = cl->serial;
	a->req = cJSON_IsNumber(req) ? req->valuedouble : 0;
	if (named_fork_begin(h->s, h->name, named_str(msg, "name"), h->runtime, h->rec,
			     on_forked, a, err) < 0) {
		free(a);
		return -1;
	}
	return 0;
}

static void handle(struct host *h, struct hclient *cl, const cJSON *msg)
{
	struct strbuf err = STRBUF_INIT, why = STRBUF_INIT;
	const char *t = named_str(msg, "t");
	cJSON *r = reply_to(msg);
	int rc = 0;

	if (!t) {
		strbuf_addstr(&err, "a message without a type");
		rc = -1;
	} else if (!strcmp(t, "hello")) {
		hello(h, cl, msg, r);
		cJSON_Delete(r);
		return;
	} else if (!strcmp(t, "status")) {
		named_host_add_status(h, r);
	} else if (!strcmp(t, "cells")) {
		named_host_add_status(h, r);
		if (named_memckpt_restored(h->s)) {
			strbuf_addstr(&err, "its kernel was itself restored from a memory checkpoint: "
				      "the cells it ran before are not kept here, so it cannot be "
				      "re-run (nor checkpointed again)");
			rc = -1;
		} else if (h->keep.rerun_over) {
			strbuf_addf(&err, "it ran more than %d cells (or %u MiB of code) since its "
				    "kernel started: too many to re-run", NAMED_RERUN_CELLS,
				    NAMED_RERUN_BYTES >> 20);
			rc = -1;
		} else {
			cJSON_AddItemToObject(r, "cells", cJSON_Duplicate(h->keep.rerun, 1));
		}
	} else if (cl->read_only) {
		strbuf_addstr(&err, "this front end is attached read-only");
		rc = -1;
	} else if (!strcmp(t, "memckpt")) {
		rc = named_memckpt_make(h->s, h->name, h->keep.rerun, named_str(msg, "path"),
					cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(msg, "probe")),
					&err);
	} else if (!strcmp(t, "execute") || !strcmp(t, "request")) {
		int execute = !strcmp(t, "execute");

		rc = submit(h, cl, msg, execute, r, &err);
		if (rc == 0 && execute && !((unsigned)num_of(msg, "flags") & SESSION_EXEC_SILENT)) {
			cJSON_AddTrueToObject(r, "ok");
			named_conn_send(&cl->c, r);
			tell_cell(h, cl, named_str(msg, "code"),
				  cJSON_GetObjectItemCaseSensitive(r, "id")->valuedouble);
			cJSON_Delete(r);
			return;
		}
	} else if (!strcmp(t, "input")) {
		rc = session_input_reply(h->s, (unsigned long)num_of(msg, "id"),
					 named_str(msg, "value") ? named_str(msg, "value") : "", &err);
	} else if (!strcmp(t, "interrupt")) {
		session_interrupt(h->s);
	} else if (!strcmp(t, "restart")) {
		rc = session_restart(h->s, &err);
	} else if (!strcmp(t, "revive")) {
		int v = session_revive(h->s, &why, &err);

		cJSON_AddNumberToObject(r, "revived", v);
		if (why.len)
			cJSON_AddStringToObject(r, "why", why.buf);
		rc = v < 0 ? -1 : 0;
	} else if (!strcmp(t, "kill")) {
		h->stop = 1;
	} else if (!strcmp(t, "fork")) {
		rc = fork_begin(h, cl, msg, &err);
		if (rc == 0) {		/* answered when the kernel's fork is done (on_fork) */
			cJSON_Delete(r);
			strbuf_release(&err);
			strbuf_release(&why);
			return;
		}
	} else {
		strbuf_addf(&err, "no such command");
		rc = -1;
	}
	cJSON_AddBoolToObject(r, "ok", rc == 0);
	if (rc < 0)
		cJSON_AddStringToObject(r, "error", err.len ? err.buf : "failed");
	cJSON_AddStringToObject(r, "state", session_state_name(session_state(h->s)));
	named_conn_send(&cl->c, r);
	cJSON_Delete(r);
	strbuf_release(&err);
	strbuf_release(&why);
}

static void accept_client(struct host *h, int lfd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	/* Our own uid only (the directory is ours and 0700 too). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != geteuid() ||
	    h->ncl == NAMED_MAX_CLIENTS) {
		close(fd);
		return;
	}
	h->cl[h->ncl] = xcalloc(1, sizeof(struct hclient));
	named_conn_init(&h->cl[h->ncl]->c, fd);
	h->cl[h->ncl]->serial = ++h->serial;
	h->ncl++;
}

static void drop_client(struct host *h, int i)
{
	named_conn_close(&h->cl[i]->c);
	free(h->cl[i]);
	h->cl[i] = h->cl[--h->ncl];
}

struct host *named_host_new(const char *name, const char *dir, const struct named_idle *idle,
			    const struct named_recorder *rec)
{
	struct host *h = xcalloc(1, sizeof(*h));

	h->name = name;
	h->dir = dir;
	h->ttl = idle ? idle->ttl : 0;
	h->ttl_checkpoint = idle && idle->checkpoint ? xstrdup(idle->checkpoint) : NULL;
	h->rec = rec;
	h->idle_since = clock_wall();
	named_keep_init(&h->keep);
	if (lstat(dir, &h->dir_st) < 0)
		h->dir_st.st_ino = 0;
	h->dir_looked = clock_now();
	h->runtime = xstrdup(dir);
	if (strrchr(h->runtime, '/'))
		*strrchr(h->runtime, '/') = 0;		/* RUNTIME/sessions */
	if (strrchr(h->runtime, '/'))
		*strrchr(h->runtime, '/') = 0;		/* RUNTIME */
	return h;
}

void named_host_serve(struct host *h, struct session *s, int lfd)
{
	struct sigaction sa = { .sa_handler = on_term };
	int lingers;

	h->s = s;
	named_keep_take(&h->keep, s);	/* the cells of an unnamed session handed over */
	sigaction(SIGTERM, &sa, NULL);
	while (!h->stop && !terminated) {
		struct pollfd p[2 + NAMED_MAX_CLIENTS];
		int n = 2, wait = named_host_idle_wait(h);

		if (h->stop || named_host_dir_gone(h))
			break;
		if (wait < 0 || wait > (int)(DIR_LOOK * 1000))
			wait = (int)(DIR_LOOK * 1000);
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = session_fd(s), .events = POLLIN };
		for (int i = 0; i < h->ncl; i++)
			p[n++] = (struct pollfd){ .fd = h->cl[i]->c.fd,
						  .events = POLLIN | (h->cl[i]->c.out.len ? POLLOUT : 0) };
		if (poll(p, (nfds_t)n, wait) < 0) {
			if (errno != EINTR)
				break;
			continue;
		}
		if (p[1].revents)
			session_dispatch(s);
		for (int i = h->ncl - 1; i >= 0; i--) {
			struct hclient *cl = h->cl[i];
			short ev = p[2 + i].revents;
			cJSON *m;

			if (ev & POLLOUT)
				named_conn_flush(&cl->c);
			if (ev & (POLLIN | POLLHUP | POLLERR))
				named_conn_read(&cl->c);
			while (!h->stop && (m = named_conn_next(&cl->c))) {
				handle(h, cl, m);
				cJSON_Delete(m);
			}
			if (cl->c.dead)
				drop_client(h, i);
		}
		if (p[0].revents & POLLIN)
			accept_client(h, lfd);
	}
	/* The end: the kernel goes (its cells end), the front ends hear it, the directory goes. */
	close(lfd);
	lingers = named_fork_alive(h->forks, h->nforks) > 0;
	if (!lingers)
		session_close(s);
	named_host_state(NULL, SESSION_CLOSED, "session ended", h);
	for (int i = 0; i < h->ncl; i++)
		named_conn_flush(&h->cl[i]->c);
	if (!h->dir_gone)
		fsutil_remove_tree(h->dir);
	while (h->ncl)
		drop_client(h, h->ncl - 1);
	/* Its name is free and its front ends gone; copies of its kernel live on (named_fork.c). */
	if (lingers)
		named_fork_linger(s, h->forks, h->nforks);
	for (int i = 0; i < h->nforks; i++)
		if (h->forks[i] >= 0)
			close(h->forks[i]);
	free(h->runtime);
	named_keep_release(&h->keep);
	free(h->ttl_checkpoint);
	free(h);
}
