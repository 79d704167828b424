/* cellbox mcp: a cell's events collected into its ExecutionResult, with progress on the way. */
#include "mcp.h"
#include "outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room kept in an answer for what is not an image. */
#define ANSWER_SLACK (64u << 10)

/* Keep kernel text (sanitised) on `sb` within the cap, counting what is cut. */
static void keep_text(struct mcp_call *call, struct strbuf *sb, struct sanitizer *san,
		      const char *text, size_t len, struct strbuf *clean)
{
	size_t room;

	strbuf_reset(clean);
	sanitize_feed(san, text, len, clean);
	room = call->srv->output_max > sb->len ? call->srv->output_max - sb->len : 0;
	if (clean->len > room) {
		call->cut += clean->len - room;
		while (room && (clean->buf[room] & 0xc0) == 0x80)
			room--;	/* never cut a UTF-8 sequence */
	}
	strbuf_add(sb, clean->buf, clean->len < room ? clean->len : room);
}

/* Tell the client what just came, when it asked for progress (at most a bounded part). */
static void progress(struct mcp_call *call, const char *text)
{
	size_t len = strlen(text);
	char *cut = NULL;

	if (!call->progress_token || call->cancelled || !len)
		return;
	if (len > MCP_PROGRESS_MAX) {
		size_t n = MCP_PROGRESS_MAX;

		while (n && (text[n] & 0xc0) == 0x80)
			n--;
		cut = xasprintf("%.*s[... %zu bytes more]\n", (int)n, text, len - n);
	}
	call->progress++;
	mcp_notify_progress(call->srv, call->progress_token, call->progress, cut ? cut : text);
	free(cut);
}

/* Take a plot of the running cell. */
static void call_add_plot(struct mcp_call *call, const struct session_plot *plot)
{
	struct mcp_plot pl = { plot->index, plot->width, plot->height };
	char line[96];

	if (plot->index <= 0 || call->nplots == MCP_PLOTS_MAX)
		return;
	if (call->nplots == call->plots_alloc) {
		call->plots_alloc = call->plots_alloc ? 2 * call->plots_alloc : 4;
		call->plots = xrealloc(call->plots, call->plots_alloc * sizeof(*call->plots));
	}
	call->plots[call->nplots++] = pl;
	if (call->ms)
		mcp_session_add_plot(call->ms, &pl);
	snprintf(line, sizeof(line), "[plot %d: %dx%d PNG]\n", pl.index, pl.width, pl.height);
	progress(call, line);
}

/* A copy of kernel text for the structured error: sanitised, at most `max` bytes. */
static cJSON *capped_string(const char *text, size_t max, struct strbuf *clean)
{
	size_t n;

	strbuf_reset(clean);
	sanitize_str(text, strlen(text), 0, clean);
	n = clean->len < max ? clean->len : max;
	while (n < clean->len && n && (clean->buf[n] & 0xc0) == 0x80)
		n--;
	clean->buf[n] = '\0';
	return cJSON_CreateString(clean->buf);
}

/* Take the error of the running cell: its traceback goes to stderr, as printed. */
static void call_add_error(struct mcp_call *call, const struct session_ev_error *e,
			   struct strbuf *clean)
{
	size_t max = call->srv->output_max, kept = 0;
	cJSON *tb;

	if (!e->ntraceback) {
		char *msg = xasprintf("%s: %s\n", e->ename ? e->ename : "Error",
				      e->evalue ? e->evalue : "");
		keep_text(call, &call->err, &call->san_err, msg, strlen(msg), clean);
		free(msg);
	}
	for (size_t i = 0; i < e->ntraceback; i++) {
		keep_text(call, &call->err, &call->san_err, e->traceback[i], strlen(e->traceback[i]),
			  clean);
		keep_text(call, &call->err, &call->san_err, "\n", 1, clean);
	}
	cJSON_Delete(call->error);
	call->error = cJSON_CreateObject();
	cJSON_AddItemToObject(call->error, "ename", capped_string(e->ename ? e->ename : "Error",
								  1024, clean));
	cJSON_AddItemToObject(call->error, "evalue", capped_string(e->evalue ? e->evalue : "",
								   max, clean));
	tb = cJSON_AddArrayToObject(call->error, "traceback");
	for (size_t i = 0; i < e->ntraceback && kept < max; i++) {
		cJSON *line = capped_string(e->traceback[i], max - kept, clean);

		kept += strlen(line->valuestring) + 1;
		cJSON_AddItemToArray(tb, line);
	}
	/* The host's verdict (a kernel cannot claim one: event.h) for the client to read. */
	if (e->violations)
		cJSON_AddItemToObject(call->error, "violations", cJSON_Duplicate(e->violations, 1));
}

/* A request of the call ended: the next step, or the answer. */
static void call_step_done(struct mcp_call *call, const struct session_ev_done *d)
{
	struct mcp_server *srv = call->srv;
	struct mcp_session *ms = call->ms;

	call->req = 0;
	if (ms && ms->running == call)
		ms->running = NULL;
	if (ms)
		ms->used = clock_wall();
	call->done_seen = 1;
	call->done = *d;
	free(call->detail);
	call->detail = d->detail ? xstrdup(d->detail) : NULL;
	call->done.detail = call->detail;
	call->state = MCP_CALL_DONE;
	if (call->kind == MCP_CALL_CELL && ms)
		mcp_session_add_cell(ms, call);	/* a cancelled one too: it ran */
	if (call->cancelled)
		return;
	if (call->kind == MCP_CALL_CELL) {
		struct strbuf text = STRBUF_INIT;
		cJSON *content = cJSON_CreateArray(), *er;

		er = mcp_call_execution_result(srv, call, &text, content);
		cJSON_InsertItemInArray(content, 0, mcp_text_item(text.buf));
		/* A cell the policy refused did not run: a tool error, its violations in it. */
		call->result = mcp_tool_result(content, er, d->reason == REASON_BLOCKED);
		strbuf_release(&text);
	} else {
		mcp_file_finish(srv, call);
	}
}

/* Every event of a call's request. */
void mcp_cell_event(struct session *s, const struct session_event *ev, void *data)
{
	struct mcp_call *call = data;
	struct strbuf clean = STRBUF_INIT;

	(void)s;
	switch (ev->type) {
	case SESSION_EV_STREAM: {
		int to_err = ev->stream.stream == SESSION_STDERR;

		keep_text(call, to_err ? &call->err : &call->out, to_err ? &call->san_err :
			  &call->san_out, ev->stream.text, ev->stream.len, &clean);
		if (call->kind == MCP_CALL_CELL) {
			strbuf_reset(&clean);
			sanitize_str(ev->stream.text, ev->stream.len, 0, &clean);
			progress(call, clean.buf);
		}
		break;
	}
	case SESSION_EV_RESULT:
	case SESSION_EV_DISPLAY: {
		const struct session_ev_rich *r = ev->type == SESSION_EV_RESULT ? &ev->result :
						  &ev->display;
		const char *text = r->text;

		if (r->plot) {
			call_add_plot(call, r->plot);	/* a shown figure, or one as Out[n] */
		} else if (text) {
			keep_text(call, &call->out, &call->san_out, text, strlen(text), &clean);
			if (*text && text[strlen(text) - 1] != '\n')
				keep_text(call, &call->out, &call->san_out, "\n", 1, &clean);
		}
		break;
	}
	case SESSION_EV_ERROR:
		call_add_error(call, &ev->error, &clean);
		break;
	case SESSION_EV_DONE:
		call_step_done(call, &ev->done);
		break;
	default:
		break;
	}
	strbuf_release(&clean);
}

/* ---- the ExecutionResult --------------------------------------------------------------- */

/* A content item of a PNG. */
static cJSON *image_item(const struct strbuf *b64)
{
	cJSON *t = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "type", "image");
	cJSON_AddStringToObject(t, "data", b64->buf);
	cJSON_AddStringToObject(t, "mimeType", "image/png");
	return t;
}

cJSON *mcp_call_execution_result(struct mcp_server *srv, struct mcp_call *call,
				 struct strbuf *text, cJSON *content)
{
	const struct session_ev_done *d = &call->done;
	enum reason why = call->done_seen ? d->reason : REASON_CLOSED;
	int exit_code = reason_exit_code(why);
	cJSON *o = cJSON_CreateObject(), *plots;
	struct strbuf notes = STRBUF_INIT;
	/* The streams are in twice (text, structure), and escaping can double them. */
	size_t room = srv->max_message > ANSWER_SLACK + 8 * srv->output_max ?
		      srv->max_message - ANSWER_SLACK - 8 * srv->output_max : 0;
	int omitted = 0;

	cJSON_AddNumberToObject(o, "exit_code", exit_code);
	cJSON_AddStringToObject(o, "stdout", call->out.buf);
	cJSON_AddStringToObject(o, "stderr", call->err.buf);
	plots = cJSON_AddArrayToObject(o, "plots");
	for (size_t i = 0; i < call->nplots; i++) {
		const struct mcp_plot *pl = &call->plots[i];
		struct strbuf png = STRBUF_INIT, b64 = STRBUF_INIT, why_not = STRBUF_INIT;
		char rel[32];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddNumberToObject(e, "index", pl->index);
		cJSON_AddStringToObject(e, "format", "png");
		cJSON_AddNumberToObject(e, "width", pl->width);
		cJSON_AddNumberToObject(e, "height", pl->height);
		if (call->ms && !call->ms->oneshot) {
			char *uri = mcp_plot_uri(call->ms->handle, pl->index);
			cJSON_AddStringToObject(e, "uri", uri);
			free(uri);
		} else {
			cJSON_AddNullToObject(e, "uri");
		}
		cJSON_AddItemToArray(plots, e);
		snprintf(rel, sizeof(rel), "plots/%d.png", pl->index);
		if (!call->ms || outputs_read_file(session_channel_dir(call->ms->s), rel,
						    srv->file_max, &png, &why_not) < 0) {
			strbuf_addf(&notes, "[plot %d could not be read: %s]\n", pl->index,
				    why_not.len ? why_not.buf : "the session is gone");
		} else if ((png.len + 2) / 3 * 4 > room) {
			omitted++;
		} else {
			base64_encode(png.buf, png.len, &b64);
			room -= b64.len;
			cJSON_AddItemToArray(content, image_item(&b64));
		}
		strbuf_release(&png);
		strbuf_release(&b64);
		strbuf_release(&why_not);
	}
	cJSON_AddStringToObject(o, "status", event_status_name(call->done_seen ? d->status :
								  SESSION_STATUS_ABORTED));
	if (call->done_seen && d->execution_count >= 0)
		cJSON_AddNumberToObject(o, "execution_count", d->execution_count);
	else
		cJSON_AddNullToObject(o, "execution_count");
	cJSON_AddNumberToObject(o, "duration", call->done_seen ? d->duration : 0);
	if (call->error)
		cJSON_AddItemToObject(o, "error", cJSON_Duplicate(call->error, 1));
	else
		cJSON_AddNullToObject(o, "error");
	cJSON_AddStringToObject(o, "outcome", reason_name(why));
	if (call->detail)
		cJSON_AddStringToObject(o, "reason", call->detail);
	else
		cJSON_AddNullToObject(o, "reason");
	cJSON_AddBoolToObject(o, "truncated", call->cut > 0);
	if (call->done_seen) {
		cJSON_AddItemToObject(o, "usage", usage_to_json(&d->usage));
	} else {
		struct usage none;

		usage_clear(&none);
		cJSON_AddItemToObject(o, "usage", usage_to_json(&none));
	}
	if (call->ms && !call->ms->oneshot)
		cJSON_AddStringToObject(o, "handle", call->ms->handle);

	/* The text a model reads: the streams, the notes, then one line of how it ended. */
	strbuf_addstr(text, call->out.buf);
	if (call->err.len)
		strbuf_addf(text, "%s[stderr]\n%s", text->len && text->buf[text->len - 1] != '\n' ?
			    "\n" : "", call->err.buf);
	if (text->len && text->buf[text->len - 1] != '\n')
		strbuf_addch(text, '\n');
	strbuf_addstr(text, notes.buf);
	if (call->cut)
		strbuf_addf(text, "[output truncated: %zu bytes not kept (mcp-output-max)]\n",
			    call->cut);
	if (omitted)
		strbuf_addf(text, "[%d plot%s not included: the answer would pass mcp-max-message%s]\n",
			    omitted, omitted == 1 ? "" : "s", call->ms && !call->ms->oneshot ?
			    "; read them as resources" : "");
	strbuf_addf(text, "[exit code %d", exit_code);
	if (why != REASON_OK)
		strbuf_addf(text, ": %s", call->detail ? call->detail : reason_name(why));
	if (call->error && why == REASON_ERROR)
		strbuf_addf(text, " (%s)", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
						    call->error, "ename")));
	if (call->nplots)
		strbuf_addf(text, "; %zu plot%s", call->nplots, call->nplots == 1 ? "" : "s");
	if (call->done_seen) {
		char used[96];

		usage_format(&d->usage, used, sizeof(used));
		if (*used)
			strbuf_addf(text, "; %s", used);
	}
	strbuf_addstr(text, "]");
	strbuf_release(&notes);
	return o;
}
