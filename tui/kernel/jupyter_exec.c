/* `cellbox kernel`: execute_request, the session's events as iopub messages (jupyter_int.h). */
#include "jupyter_int.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

/* A display's or result's bundle as Jupyter sends it: a plot's PNG as base64 image/png. */
static void add_bundle(cJSON *c, const struct session_ev_rich *r)
{
	cJSON *data = cJSON_IsObject(r->data) ? cJSON_Duplicate(r->data, 1) : cJSON_CreateObject();

	if (r->plot && r->plot->data && (!r->plot->format || !strcmp(r->plot->format, "png"))) {
		struct strbuf b64 = STRBUF_INIT;

		base64_encode(r->plot->data, r->plot->len, &b64);
		cJSON_DeleteItemFromObjectCaseSensitive(data, "image/png");
		cJSON_AddStringToObject(data, "image/png", b64.buf ? b64.buf : "");
		strbuf_release(&b64);
	}
	cJSON_AddItemToObject(c, "data", data);
	cJSON_AddItemToObject(c, "metadata", cJSON_IsObject(r->metadata) ?
			      cJSON_Duplicate(r->metadata, 1) : cJSON_CreateObject());
}

/* Keep a cell for history_request (the oldest go past JUPYTER_HISTORY_MAX). */
static void remember(struct jupyter_kernel *k, int line, const char *input, const char *output)
{
	if (k->nhistory == JUPYTER_HISTORY_MAX) {
		free(k->history[0].input);
		free(k->history[0].output);
		memmove(k->history, k->history + 1, --k->nhistory * sizeof(*k->history));
	}
	if (k->nhistory == k->history_alloc) {
		k->history_alloc = k->history_alloc ? 2 * k->history_alloc : 16;
		k->history = xrealloc(k->history, k->history_alloc * sizeof(*k->history));
	}
	k->history[k->nhistory++] = (struct jupyter_cell){
		.line = line, .input = xstrdup(input), .output = output ? xstrdup(output) : NULL,
	};
}

/* The reply of the cell in flight, the history, idle; queued cells aborted after an error. */
static void finish(struct jupyter_kernel *k, const struct session_ev_done *d)
{
	cJSON *c = k->reply;
	int failed = k->errored || d->status != SESSION_STATUS_OK;

	if (d->execution_count > 0)
		k->count = d->execution_count;
	if (failed && !k->errored) {
		/* ended without an error event of the kernel's: say why, as an error */
		const char *ename = d->reason == REASON_INTERRUPTED ? "KeyboardInterrupt" :
				    "CellboxError";
		const char *evalue = d->detail ? d->detail : "the cell did not finish";
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "ename", ename);
		cJSON_AddStringToObject(e, "evalue", evalue);
		cJSON_AddItemToObject(e, "traceback", cJSON_CreateArray());
		cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(e, "traceback"),
				     cJSON_CreateString(evalue));
		jupyter_shell_publish(k, k->cur, "error", cJSON_Duplicate(e, 1));
		cJSON_AddItemToObject(c, "ename", cJSON_DetachItemFromObject(e, "ename"));
		cJSON_AddItemToObject(c, "evalue", cJSON_DetachItemFromObject(e, "evalue"));
		cJSON_AddItemToObject(c, "traceback", cJSON_DetachItemFromObject(e, "traceback"));
		cJSON_Delete(e);
	}
	cJSON_AddStringToObject(c, "status", failed ? "error" : "ok");
	cJSON_AddNumberToObject(c, "execution_count", k->count);
	if (!failed) {
		cJSON_AddItemToObject(c, "payload", k->payload);
		k->payload = NULL;
		cJSON_AddItemToObject(c, "user_expressions", cJSON_CreateObject());
	}
	if (!k->silent && k->store_history)
		remember(k, k->count, jupyter_str(k->cur->m.content, "code", ""), k->result_text);
	jupyter_shell_reply(k, k->cur, "execute_reply", c);
	k->reply = NULL;
	cJSON_Delete(k->payload);
	k->payload = NULL;
	free(k->result_text);
	k->result_text = NULL;
	jupyter_shell_end(k);
	if (failed && k->stop_on_error)
		jupyter_exec_abort_queue(k);
}

/* One event of the cell in flight, as its iopub message. */
static void on_event(struct session *s, const struct session_event *ev, void *data)
{
	struct jupyter_kernel *k = data;
	const struct jupyter_pending *p = k->cur;
	cJSON *c;

	(void)s;
	if (!p || ev->id != k->cur_id)
		return;
	switch (ev->type) {
	case SESSION_EV_STREAM:
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", ev->stream.stream == SESSION_STDERR ? "stderr" :
					"stdout");
		cJSON_AddStringToObject(c, "text", ev->stream.text);
		jupyter_shell_publish(k, p, "stream", c);
		break;
	case SESSION_EV_DISPLAY:
		c = cJSON_CreateObject();
		if (ev->display.pager) {	/* `obj?`: a payload for the pager, as IPython's */
			add_bundle(c, &ev->display);
			cJSON_AddStringToObject(c, "source", "page");
			cJSON_AddNumberToObject(c, "start", 0);
			cJSON_DeleteItemFromObjectCaseSensitive(c, "metadata");
			cJSON_AddItemToArray(k->payload, c);
			break;
		}
		if (ev->display.update && !ev->display.display_id) {
			cJSON_Delete(c);
			break;
		}
		add_bundle(c, &ev->display);
		cJSON_AddItemToObject(c, "transient", cJSON_CreateObject());
		if (ev->display.display_id)
			cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(c, "transient"),
						"display_id", ev->display.display_id);
		jupyter_shell_publish(k, p, ev->display.update ? "update_display_data" :
				      "display_data", c);
		break;
	case SESSION_EV_RESULT:
		if (k->silent)
			break;
		c = cJSON_CreateObject();
		add_bundle(c, &ev->result);
		cJSON_AddNumberToObject(c, "execution_count", ev->result.execution_count > 0 ?
					ev->result.execution_count : k->count + 1);
		free(k->result_text);
		k->result_text = ev->result.text ? xstrdup(ev->result.text) : NULL;
		jupyter_shell_publish(k, p, "execute_result", c);
		break;
	case SESSION_EV_ERROR: {
		cJSON *tb = cJSON_CreateArray();

		for (size_t i = 0; i < ev->error.ntraceback; i++)
			cJSON_AddItemToArray(tb, cJSON_CreateString(ev->error.traceback[i]));
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "ename", ev->error.ename ? ev->error.ename : "Error");
		cJSON_AddStringToObject(c, "evalue", ev->error.evalue ? ev->error.evalue : "");
		cJSON_AddItemToObject(c, "traceback", tb);
		/* the reply carries the first error */
		if (!k->errored)
			for (const cJSON *m = c->child; m; m = m->next)
				cJSON_AddItemToObject(k->reply, m->string, cJSON_Duplicate(m, 1));
		k->errored = 1;
		jupyter_shell_publish(k, p, "error", c);
		break;
	}
	case SESSION_EV_CLEAR_OUTPUT:
		c = cJSON_CreateObject();
		cJSON_AddBoolToObject(c, "wait", ev->clear.wait);
		jupyter_shell_publish(k, p, "clear_output", c);
		break;
	case SESSION_EV_INPUT_REQUEST:
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "prompt", ev->input.prompt);
		cJSON_AddBoolToObject(c, "password", ev->input.password);
		if (jupyter_wire_send(&k->w, k->sock[JUPYTER_STDIN], &p->m, 1, "input_request",
				      c) < 0)
			fprintf(stderr, "cellbox kernel: cannot send input_request\n");
		break;
	case SESSION_EV_NEXT_INPUT:
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "source", "set_next_input");
		cJSON_AddStringToObject(c, "text", ev->next_input.text);
		cJSON_AddBoolToObject(c, "replace", ev->next_input.replace);
		cJSON_AddItemToArray(k->payload, c);
		break;
	case SESSION_EV_DONE:
		finish(k, &ev->done);
		break;
	default:
		break;		/* artifacts and the like: Jupyter shows nothing for them */
	}
}

int jupyter_exec_start(struct jupyter_kernel *k, struct jupyter_pending *p)
{
	const cJSON *content = p->m.content;
	const char *code = jupyter_str(content, "code", "");
	struct strbuf err = STRBUF_INIT, why = STRBUF_INIT;
	unsigned flags = 0;
	cJSON *c;

	k->silent = jupyter_bool(content, "silent", 0);
	k->store_history = jupyter_bool(content, "store_history", !k->silent);
	k->stop_on_error = jupyter_bool(content, "stop_on_error", 1);
	k->errored = 0;
	if (k->silent)
		flags |= SESSION_EXEC_SILENT;
	if (jupyter_bool(content, "allow_stdin", 1))
		flags |= SESSION_EXEC_ALLOW_STDIN;
	/* a kernel that died since the last cell: a fresh one, as Jupyter's restarter would */
	if (session_revive(k->s, &why, &err) == 1) {
		fprintf(stderr, "cellbox kernel: restarted the kernel: %s\n", why.buf);
		k->count = 0;
	}
	strbuf_reset(&err);
	if (!k->silent) {
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "code", code);
		cJSON_AddNumberToObject(c, "execution_count", k->count + 1);
		jupyter_shell_publish(k, p, "execute_input", c);
	}
	k->cur = p;
	k->reply = cJSON_CreateObject();
	k->payload = cJSON_CreateArray();
	k->cur_id = session_execute(k->s, code, flags, k->timeout, on_event, k, &err);
	if (!k->cur_id) {
		struct session_ev_done d = { .status = SESSION_STATUS_ERROR, .reason = REASON_ERROR,
					     .execution_count = -1, .detail = err.buf };

		fprintf(stderr, "cellbox kernel: execute: %s\n", err.buf);
		finish(k, &d);	/* answered, and `p` freed with it */
	}
	strbuf_release(&err);
	strbuf_release(&why);
	return 1;	/* `p` is taken: waiting on the session, or answered */
}

void jupyter_exec_input(struct jupyter_kernel *k, const struct jupyter_msg *m)
{
	struct strbuf err = STRBUF_INIT;

	if (!k->cur || strcmp(k->cur->m.type, "execute_request"))
		return;		/* no cell asked */
	if (session_input_reply(k->s, k->cur_id, jupyter_str(m->content, "value", ""), &err) < 0)
		fprintf(stderr, "cellbox kernel: input_reply: %s\n", err.buf);
	strbuf_release(&err);
}

void jupyter_exec_abort_queue(struct jupyter_kernel *k)
{
	struct jupyter_pending **pp = &k->queue;

	while (*pp) {
		struct jupyter_pending *p = *pp;
		cJSON *c;

		if (strcmp(p->m.type, "execute_request")) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		if (k->tail == &p->next)
			k->tail = pp;
		jupyter_shell_status(k, p, "busy");
		c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "status", "aborted");
		cJSON_AddNumberToObject(c, "execution_count", k->count);
		jupyter_shell_reply(k, p, "execute_reply", c);
		jupyter_shell_status(k, p, "idle");
		jupyter_shell_free(p);
	}
}

/* One history entry: [session, line, input] or [session, line, [input, output]]. */
static cJSON *entry(const struct jupyter_cell *cell, int output)
{
	cJSON *e = cJSON_CreateArray();

	cJSON_AddItemToArray(e, cJSON_CreateNumber(1));
	cJSON_AddItemToArray(e, cJSON_CreateNumber(cell->line));
	if (output) {
		cJSON *io = cJSON_CreateArray();

		cJSON_AddItemToArray(io, cJSON_CreateString(cell->input));
		cJSON_AddItemToArray(io, cell->output ? cJSON_CreateString(cell->output) :
				     cJSON_CreateNull());
		cJSON_AddItemToArray(e, io);
	} else {
		cJSON_AddItemToArray(e, cJSON_CreateString(cell->input));
	}
	return e;
}

cJSON *jupyter_exec_history(struct jupyter_kernel *k, const cJSON *request)
{
	const char *type = jupyter_str(request, "hist_access_type", "tail");
	const char *pattern = jupyter_str(request, "pattern", "*");
	int output = jupyter_bool(request, "output", 0), unique = jupyter_bool(request, "unique", 0);
	int n = jupyter_int(request, "n", -1), start = jupyter_int(request, "start", 0);
	int stop = jupyter_int(request, "stop", 0);
	cJSON *c = cJSON_CreateObject(), *h = cJSON_CreateArray();
	size_t from = 0, i;

	if (!strcmp(type, "tail")) {
		if (n >= 0 && (size_t)n < k->nhistory)
			from = k->nhistory - (size_t)n;
		for (i = from; i < k->nhistory; i++)
			cJSON_AddItemToArray(h, entry(&k->history[i], output));
	} else if (!strcmp(type, "range")) {
		for (i = 0; i < k->nhistory; i++)
			if (k->history[i].line >= start && (!stop || k->history[i].line < stop))
				cJSON_AddItemToArray(h, entry(&k->history[i], output));
	} else if (!strcmp(type, "search")) {
		/* the newest n matches, oldest first; `unique`: each input once (its last run) */
		size_t found = 0;

		for (i = k->nhistory; i-- > 0 && (n < 0 || found < (size_t)n); ) {
			const struct jupyter_cell *cell = &k->history[i];
			int seen = 0;

			if (fnmatch(pattern, cell->input, 0))
				continue;
			for (size_t j = i + 1; unique && j < k->nhistory && !seen; j++)
				seen = !strcmp(k->history[j].input, cell->input) &&
				       !fnmatch(pattern, k->history[j].input, 0);
			if (seen)
				continue;
			cJSON_InsertItemInArray(h, 0, entry(cell, output));
			found++;
		}
	}
	cJSON_AddStringToObject(c, "status", "ok");
	cJSON_AddItemToObject(c, "history", h);
	return c;
}

void jupyter_exec_release(struct jupyter_kernel *k)
{
	for (size_t i = 0; i < k->nhistory; i++) {
		free(k->history[i].input);
		free(k->history[i].output);
	}
	free(k->history);
	cJSON_Delete(k->payload);
	free(k->result_text);
}
