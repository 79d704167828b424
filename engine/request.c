/* One request of a session and the binding of its events: see request.h. */
#include "request.h"
#include "backend.h"
#include "wall.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct request *request_new(unsigned long id, int is_execute, double timeout,
			    request_event_fn fn, void *data)
{
	struct request *r = xcalloc(1, sizeof(*r));
	char rnd[33];

	r->id = id;
	random_hex(rnd, 16);
	snprintf(r->name, sizeof(r->name), "%010lu-%s", id, rnd);
	r->is_execute = is_execute;
	r->timeout = timeout;
	r->fn = fn;
	r->data = data;
	return r;
}

void request_free(struct request *r)
{
	if (r->reader_open)
		channel_reader_release(&r->rd);
	cJSON_Delete(r->blocked);
	free(r);
}

int request_open(struct request *r, const struct channel *ch, struct strbuf *err)
{
	/* Its results file is ours, made before the command: no name the kernel made is read. */
	int fd = channel_results_create(ch, r->name, err);

	if (fd < 0)
		return -1;
	channel_reader_init(&r->rd, fd, REQUEST_MAX_LINE);
	r->reader_open = 1;
	return 0;
}

void request_begin(struct request *r, struct backend *be)
{
	r->be = be;
	usage_sample_clear(&r->usage0);
	if (!r->is_execute || !be->ops->usage || be->ops->usage(be, 1, &r->usage0) < 0)
		r->usage0.at = clock_now();
}

/* What the cell used since it began, into its done event. */
static void usage_of(struct request *r, struct usage *u)
{
	struct usage_sample end;

	usage_clear(u);
	if (!r->be || !r->is_execute)
		return;
	usage_sample_clear(&end);
	if (!r->be->ops->usage || r->be->ops->usage(r->be, 0, &end) < 0)
		end.at = clock_now();
	usage_between(&r->usage0, &end, u);
}

void request_deliver(struct session *s, struct request *r, struct session_event *ev)
{
	ev->id = r->id;
	if (ev->type == SESSION_EV_DONE)
		usage_of(r, &ev->done.usage);
	if (r->fn)
		r->fn(s, ev, r->data);
}

/* Deliver the policy's error event of a blocked request (the request gives it up). */
static void deliver_blocked(struct session *s, struct request *r)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	if (event_decode_made(&st, r->blocked, r->id, &ev) == 0)
		request_deliver(s, r, &ev);
	r->blocked = NULL;
	event_store_release(&st);
}

/* End a request the kernel did not end: its done event, with no execution count. */
static void deliver_done(struct session *s, struct request *r, enum session_status status,
			 enum reason reason, const char *detail)
{
	struct session_event ev = { .type = SESSION_EV_DONE };

	usage_clear(&ev.done.usage);	/* request_deliver() measures it */
	ev.done.status = status;
	ev.done.execution_count = -1;
	ev.done.reason = reason;
	ev.done.detail = detail;
	r->done = 1;
	request_deliver(s, r, &ev);
}

/* The words of a stop the session made: "timeout", "interrupt". */
static const char *stop_detail(enum reason stop)
{
	return stop == REASON_TIMEOUT ? "timeout" : stop == REASON_INTERRUPTED ? "interrupt" :
	       stop == REASON_OUTPUT_LIMIT ? "output limit" : NULL;
}

void request_abort(struct session *s, struct request *r, enum reason reason, const char *ename,
		   const char *evalue, const char *detail)
{
	static const char *const no_lines[] = { NULL };
	struct session_event ev = { .type = SESSION_EV_ERROR };

	if (r->is_execute && ename && r->blocked) {
		deliver_blocked(s, r);	/* it was blocked: say so, not why the kernel went */
	} else if (r->is_execute && ename) {
		ev.error.ename = ename;
		ev.error.evalue = evalue;
		ev.error.traceback = no_lines;
		request_deliver(s, r, &ev);
	}
	deliver_done(s, r, SESSION_STATUS_ABORTED, reason, detail);
}

void request_end_blocked(struct session *s, struct request *r, const char *policy)
{
	char *detail = xasprintf("blocked by security policy '%s'", policy);

	deliver_blocked(s, r);
	deliver_done(s, r, SESSION_STATUS_ERROR, REASON_BLOCKED, detail);
	free(detail);
}

void request_note(struct session *s, struct request *r, const char *text)
{
	struct session_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = SESSION_EV_STREAM;
	ev.stream.stream = SESSION_STDERR;
	ev.stream.name = "stderr";
	ev.stream.text = text;
	ev.stream.len = strlen(text);
	request_deliver(s, r, &ev);
}

/* Before a request's done: say once what of its lines was not taken, and why. */
static void tell_skipped(struct session *s, struct request *r)
{
	struct strbuf msg = STRBUF_INIT;

	if (r->malformed)
		strbuf_addf(&msg, "cellbox: skipped %u malformed event line%s from the kernel\n",
			    r->malformed, r->malformed == 1 ? "" : "s");
	if (r->dropped)
		strbuf_addf(&msg, "cellbox: dropped %u event line%s over %u MB from the kernel\n",
			    r->dropped, r->dropped == 1 ? "" : "s", REQUEST_MAX_LINE >> 20);
	if (msg.len)
		request_note(s, r, msg.buf);
	r->malformed = r->dropped = 0;
	strbuf_release(&msg);
}

/* A cell raised MemoryError under the local kernel's limit: say which limit it was. */
static void tell_memory_limit(struct request_reader *rd, struct request *r)
{
	struct strbuf msg = STRBUF_INIT;

	strbuf_addstr(&msg, "cellbox: memory limit ");
	wall_describe_size(&msg, rd->memory_limit);
	strbuf_addstr(&msg, " reached (the kernel's address space, --memory)\n");
	request_note(rd->s, r, msg.buf);
	r->memory_error = 0;
	strbuf_release(&msg);
}

/* The output passed its limit: say so, stop taking it, interrupt the cell. */
static void cap_output(struct request_reader *rd, struct request *r)
{
	struct strbuf msg = STRBUF_INIT;

	r->capped = 1;
	strbuf_addstr(&msg, "\ncellbox: the cell's output passed its limit of ");
	wall_describe_size(&msg, rd->output_limit);
	strbuf_addstr(&msg, " (output-limit): the rest is dropped and the cell interrupted\n");
	request_note(rd->s, r, msg.buf);
	strbuf_release(&msg);
	if (!r->stop) {
		r->stop = REASON_OUTPUT_LIMIT;
		rd->be->ops->signal(rd->be, SIGINT);
		if (!*rd->kill_at)
			*rd->kill_at = clock_now() + rd->interrupt_grace;
	}
}

/*
 * A file the kernel names (a display's or result's plot, an artifact), by its name `named`:
 * checked and copied into the host's plots/ (*slot then points at `copy`, naming the copy and
 * carrying the bytes read, which `data` keeps), or refused with a note (*slot NULL). 0 or -1.
 */
static int take_file(struct request_reader *rd, struct request *r, const char *what,
		     const char *named, const struct session_plot **slot,
		     struct session_plot *copy, char *path, size_t size, struct strbuf *data)
{
	struct strbuf why = STRBUF_INIT, msg = STRBUF_INIT;
	const struct session_plot *p = *slot;
	int w = p->width, h = p->height, index = 0, rc;

	rc = channel_take_file(rd->ch, named, &index, &w, &h, data, &why);
	if (rc == 0) {
		*copy = *p;
		copy->index = index;	/* the host's number, not the kernel's */
		copy->width = w;
		copy->height = h;
		/* The name passed the check: plots/<n>.<ext>. */
		snprintf(path, size, "plots/%d%s", index, strrchr(named, '.'));
		copy->path = path;	/* the host's copy, relative to the channel */
		copy->ext = strrchr(path, '.') + 1;
		if (!strcmp(copy->ext, "png"))
			copy->format = "png";
		copy->data = (const unsigned char *)data->buf;
		copy->len = data->len;
		*slot = copy;
	} else if (rc == CHANNEL_BAD_NAME) {	/* not a name of a file: not repeated */
		strbuf_addf(&msg, "cellbox: refused %s from the kernel: its name %s\n", what,
			    why.buf);
	} else {
		strbuf_addf(&msg, "cellbox: refused %s '%.80s' from the kernel: it %s\n", what,
			    named ? named : "(no path)", why.buf);
	}
	if (rc < 0) {
		if (r->refused++ < 8)
			request_note(rd->s, r, msg.buf);
		*slot = NULL;
	}
	strbuf_release(&why);
	strbuf_release(&msg);
	return rc;
}

struct line_ctx {
	struct request_reader *rd;
	struct request *r;
};

/* Whether a line may be a done event (a capped request reads nothing else). */
static int may_be_done(const char *line, size_t len)
{
	return len < 512 && memmem(line, len, "\"done\"", 6) != NULL;
}

/* Handle one line of a results file. */
static int on_line(const char *line, size_t len, void *data)
{
	struct line_ctx *ctx = data;
	struct request_reader *rd = ctx->rd;
	struct request *r = ctx->r;
	struct event_store st = EVENT_STORE_INIT;
	struct strbuf bytes = STRBUF_INIT;
	struct session_plot copy;
	struct session_event ev;
	char path[32];

	if (!r->capped && r->rd.bytes > rd->output_limit)
		cap_output(rd, r);
	if (r->capped && (!line || !may_be_done(line, len)))
		return 0;
	rd->events++;
	if (!line) {
		r->dropped++;
		return 0;
	}
	if (event_decode(&st, line, len, r->id, &ev) < 0) {
		r->malformed++;
		event_store_release(&st);
		return 0;
	}
	if (r->capped && ev.type != SESSION_EV_DONE) {
		event_store_release(&st);
		return 0;
	}
	/* Every file an event names reaches the callback as the host's checked copy, or not. */
	if (ev.type == SESSION_EV_DISPLAY && ev.display.plot)
		take_file(rd, r, "plot", st.named, &ev.display.plot, &copy, path, sizeof(path),
			  &bytes);
	if (ev.type == SESSION_EV_RESULT && ev.result.plot)
		take_file(rd, r, "plot", st.named, &ev.result.plot, &copy, path, sizeof(path),
			  &bytes);
	if (ev.type == SESSION_EV_ARTIFACT &&
	    take_file(rd, r, "artifact", st.named, &ev.artifact.file, &copy, path, sizeof(path),
		      &bytes) < 0) {
		event_store_release(&st);	/* a refused artifact is not reported at all */
		strbuf_release(&bytes);
		return 0;
	}
	if (ev.type == SESSION_EV_INPUT_REQUEST)
		r->inputs++;
	if (ev.type == SESSION_EV_ERROR && rd->memory_limit && ev.error.ename &&
	    !strcmp(ev.error.ename, "MemoryError"))
		r->memory_error = 1;	/* the kernel's word, for a note only */
	if (ev.type == SESSION_EV_DONE) {
		/* The kernel finished it; a stop we made says why it did not end well. */
		tell_skipped(rd->s, r);
		if (r->memory_error)
			tell_memory_limit(rd, r);
		ev.done.detail = stop_detail(r->stop);
		if (r->stop && (ev.done.status != SESSION_STATUS_OK || r->stop == REASON_OUTPUT_LIMIT))
			ev.done.reason = r->stop;
		r->done = 1;
		*rd->kill_at = 0;
	}
	request_deliver(rd->s, r, &ev);
	event_store_release(&st);
	strbuf_release(&bytes);
	return r->done;
}

int request_read(struct request_reader *rd, struct request *r, size_t budget)
{
	struct line_ctx ctx = { rd, r };

	if (channel_reader_poll(&r->rd, budget, on_line, &ctx) >= 0 && r->rd.truncated &&
	    !r->truncated_told) {
		r->truncated_told = 1;
		request_note(rd->s, r, "cellbox: the kernel truncated this request's results file\n");
	}
	return r->done;
}
