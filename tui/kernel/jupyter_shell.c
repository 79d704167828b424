/* `cellbox kernel`: the shell and control requests, one row of a table each (jupyter_int.h). */
#include "jupyter_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

const char *jupyter_str(const cJSON *content, const char *name, const char *dflt)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(content, name));

	return v ? v : dflt;
}

int jupyter_bool(const cJSON *content, const char *name, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(content, name);

	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

int jupyter_int(const cJSON *content, const char *name, int dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(content, name);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > INT_MAX)
		return dflt;
	return (int)v->valuedouble;
}

void jupyter_shell_publish(struct jupyter_kernel *k, const struct jupyter_pending *parent,
			   const char *type, cJSON *content)
{
	if (jupyter_wire_send(&k->w, k->sock[JUPYTER_IOPUB], parent ? &parent->m : NULL, 0, type,
			      content) < 0)
		fprintf(stderr, "cellbox kernel: cannot publish %s\n", type);
}

void jupyter_shell_status(struct jupyter_kernel *k, const struct jupyter_pending *parent,
			  const char *state)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "execution_state", state);
	jupyter_shell_publish(k, parent, "status", c);
}

void jupyter_shell_reply(struct jupyter_kernel *k, const struct jupyter_pending *p,
			 const char *type, cJSON *content)
{
	if (jupyter_wire_send(&k->w, k->sock[p->ch], &p->m, 1, type, content) < 0)
		fprintf(stderr, "cellbox kernel: cannot send %s\n", type);
}

void jupyter_shell_free(struct jupyter_pending *p)
{
	if (!p)
		return;
	jupyter_msg_release(&p->m);
	free(p);
}

void jupyter_shell_end(struct jupyter_kernel *k)
{
	struct jupyter_pending *p = k->cur;

	k->cur = NULL;
	k->cur_id = 0;
	cJSON_Delete(k->reply);
	k->reply = NULL;
	if (p)
		jupyter_shell_status(k, p, "idle");
	jupyter_shell_free(p);
}

/* ---- the requests answered at once ------------------------------------------------------- */

/* kernel_info_request: the session's kernel, its language_info from the runner's `ready`. */
static int kernel_info(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	const cJSON *ready = session_kernel_info(k->s);
	const cJSON *li = cJSON_GetObjectItemCaseSensitive(ready, "language_info");
	const struct kernel_def *kd = session_kernel(k->s);
	cJSON *c = cJSON_CreateObject(), *info;
	char banner[200];

	if (cJSON_IsObject(li)) {
		info = cJSON_Duplicate(li, 1);
	} else {
		info = cJSON_CreateObject();
		cJSON_AddStringToObject(info, "name", kd ? kd->language : "python");
	}
	if (!cJSON_GetObjectItemCaseSensitive(info, "version"))
		cJSON_AddStringToObject(info, "version", "");
	snprintf(banner, sizeof(banner), "cellbox %s: %.20s %.20s on the %s backend",
		 CELLBOX_VERSION, jupyter_str(info, "name", "?"), jupyter_str(info, "version", ""),
		 session_backend_name(k->s));
	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddStringToObject(c, "protocol_version", "5.3");
	cJSON_AddStringToObject(c, "implementation", "cellbox");
	cJSON_AddStringToObject(c, "implementation_version", CELLBOX_VERSION);
	cJSON_AddItemToObject(c, "language_info", info);
	cJSON_AddStringToObject(c, "banner", banner);
	cJSON_AddItemToObject(c, "help_links", cJSON_CreateArray());
	cJSON_AddBoolToObject(c, "debugger", 0);
	jupyter_shell_reply(k, p, "kernel_info_reply", c);
	return 0;
}

/* comm_info_request: this kernel has no comms. */
static int comm_info(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	cJSON *c = cJSON_CreateObject();

	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddItemToObject(c, "comms", cJSON_CreateObject());
	jupyter_shell_reply(k, p, "comm_info_reply", c);
	return 0;
}

/* history_request: the cells of this kernel process (jupyter_exec.c keeps them). */
static int history(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	jupyter_shell_reply(k, p, "history_reply", jupyter_exec_history(k, p->m.content));
	return 0;
}

/* interrupt_request: the running cell gets a KeyboardInterrupt (session_interrupt). */
static int interrupt(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	cJSON *c = cJSON_CreateObject();

	session_interrupt(k->s);
	cJSON_AddStringToObject(c, "status", "ok");
	jupyter_shell_reply(k, p, "interrupt_reply", c);
	return 0;
}

/* shutdown_request: restart the session, or end the loop. */
static int shutdown(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	int restart = jupyter_bool(p->m.content, "restart", 0);
	struct strbuf err = STRBUF_INIT;
	cJSON *c = cJSON_CreateObject();

	if (restart) {
		if (session_restart(k->s, &err) < 0)
			fprintf(stderr, "cellbox kernel: restart: %s\n", err.buf);
		k->count = 0;
	} else {
		k->quit = 1;
	}
	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddBoolToObject(c, "restart", restart);
	jupyter_shell_publish(k, p, "shutdown_reply", cJSON_Duplicate(c, 1));
	jupyter_shell_reply(k, p, "shutdown_reply", c);
	strbuf_release(&err);
	return 0;
}

/* ---- the requests the kernel answers (session_request) ----------------------------------- */

/* The kernel's reply and done of a complete, inspect or is_complete request. */
static void on_reply(struct session *s, const struct session_event *ev, void *data)
{
	struct jupyter_kernel *k = data;
	const struct session_ev_reply *r = &ev->reply;
	const char *type;
	cJSON *c;

	(void)s;
	if (!k->cur || ev->id != k->cur_id)
		return;
	type = k->cur->m.type;
	if (ev->type == SESSION_EV_REPLY) {
		c = k->reply;
		if (!strcmp(type, "is_complete_request")) {
			const char *st = r->status;

			if (!st || (strcmp(st, "complete") && strcmp(st, "incomplete") &&
				    strcmp(st, "invalid")))
				st = "unknown";
			cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString(st));
			if (!strcmp(st, "incomplete"))
				cJSON_AddStringToObject(c, "indent", r->indent ? r->indent : "");
		} else if (!strcmp(type, "complete_request")) {
			cJSON *matches = cJSON_GetObjectItemCaseSensitive(c, "matches");

			for (size_t i = 0; i < r->nmatches; i++)
				cJSON_AddItemToArray(matches, cJSON_CreateString(r->matches[i]));
			if (r->cursor_start >= 0)
				cJSON_ReplaceItemInObject(c, "cursor_start",
							  cJSON_CreateNumber(r->cursor_start));
			if (r->cursor_end >= 0)
				cJSON_ReplaceItemInObject(c, "cursor_end",
							  cJSON_CreateNumber(r->cursor_end));
		} else {
			cJSON_ReplaceItemInObject(c, "found", cJSON_CreateBool(r->found));
			if (cJSON_IsObject(r->data))
				cJSON_ReplaceItemInObject(c, "data", cJSON_Duplicate(r->data, 1));
		}
		return;
	}
	if (ev->type != SESSION_EV_DONE)
		return;
	jupyter_shell_reply(k, k->cur, !strcmp(type, "is_complete_request") ? "is_complete_reply" :
			    !strcmp(type, "complete_request") ? "complete_reply" : "inspect_reply",
			    k->reply);
	k->reply = NULL;
	jupyter_shell_end(k);
}

/* The code points of `s` (Jupyter's cursor positions count them). */
static int code_points(const char *s)
{
	int n = 0;

	for (; *s && n < INT_MAX; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/*
 * complete_request, inspect_request, is_complete_request: a request of the kernel's, its
 * reply made ready first (what the front end gets when the kernel says nothing).
 */
static int ask_kernel(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	const cJSON *content = p->m.content;
	const char *code = jupyter_str(content, "code", "");
	int pos = jupyter_int(content, "cursor_pos", -1);
	struct strbuf err = STRBUF_INIT;
	cJSON *params = cJSON_CreateObject(), *c = cJSON_CreateObject();
	const char *kind;

	cJSON_AddStringToObject(params, "code", code);
	if (pos < 0)
		pos = code_points(code);
	cJSON_AddStringToObject(c, "status", "ok");
	if (!strcmp(p->m.type, "is_complete_request")) {
		kind = "is_complete";
		cJSON_ReplaceItemInObject(c, "status", cJSON_CreateString("unknown"));
	} else if (!strcmp(p->m.type, "complete_request")) {
		kind = "complete";
		cJSON_AddNumberToObject(params, "cursor_pos", pos);
		cJSON_AddItemToObject(c, "matches", cJSON_CreateArray());
		cJSON_AddNumberToObject(c, "cursor_start", pos);
		cJSON_AddNumberToObject(c, "cursor_end", pos);
		cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	} else {
		kind = "inspect";
		cJSON_AddNumberToObject(params, "cursor_pos", pos);
		cJSON_AddNumberToObject(params, "detail_level",
					jupyter_int(content, "detail_level", 0) ? 1 : 0);
		cJSON_AddBoolToObject(c, "found", 0);
		cJSON_AddItemToObject(c, "data", cJSON_CreateObject());
		cJSON_AddItemToObject(c, "metadata", cJSON_CreateObject());
	}
	k->cur = p;
	k->reply = c;
	k->cur_id = session_request(k->s, kind, params, on_reply, k, &err);
	cJSON_Delete(params);
	if (!k->cur_id) {
		fprintf(stderr, "cellbox kernel: %s: %s\n", kind, err.buf);
		k->cur = NULL;
		k->reply = NULL;
		jupyter_shell_reply(k, p, !strcmp(kind, "is_complete") ? "is_complete_reply" :
				    !strcmp(kind, "complete") ? "complete_reply" : "inspect_reply", c);
	}
	strbuf_release(&err);
	return k->cur == p;
}

/* execute_request (jupyter_exec.c). */
static int execute(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	return jupyter_exec_start(k, p);
}

/* The requests, and the channels each is taken on. */
static const struct handler {
	const char *type;
	int (*fn)(struct jupyter_kernel *k, struct jupyter_pending *p);
	int control;		/* taken on control too (on shell all are) */
} handlers[] = {
	{ "kernel_info_request", kernel_info, 1 },
	{ "execute_request", execute, 0 },
	{ "is_complete_request", ask_kernel, 0 },
	{ "complete_request", ask_kernel, 0 },
	{ "inspect_request", ask_kernel, 0 },
	{ "history_request", history, 0 },
	{ "comm_info_request", comm_info, 0 },
	{ "interrupt_request", interrupt, 1 },
	{ "shutdown_request", shutdown, 1 },
};

int jupyter_shell_handle(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	const struct handler *h = NULL;
	int waits = 0;

	for (size_t i = 0; i < ARRAY_SIZE(handlers) && !h; i++)
		if (!strcmp(handlers[i].type, p->m.type) &&
		    (p->ch == JUPYTER_SHELL || handlers[i].control))
			h = &handlers[i];
	if (!h) {
		/* comm_open and the like: nothing here answers them (as a kernel without comms) */
		fprintf(stderr, "cellbox kernel: ignored %.60s on %s\n", p->m.type,
			p->ch == JUPYTER_SHELL ? "shell" : "control");
		return 0;
	}
	jupyter_shell_status(k, p, "busy");
	waits = h->fn(k, p);
	if (!waits)
		jupyter_shell_status(k, p, "idle");
	return waits;
}
