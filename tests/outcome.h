#ifndef CELLBOX_TEST_OUTCOME_H
#define CELLBOX_TEST_OUTCOME_H

/*
 * What the engine tests keep of a cell: a session_event_fn that collects the streams, the
 * result, the error, plots, replies and the done event of one request, and helpers that run a
 * cell or a request to its end. Shared by the integration (local) and docker suites.
 *
 *   run(s, code, flags, timeout, &o)      a cell to its end (seconds taken)
 *   expect_result(), expect_shown()       ... and check its result, or what it displayed,
 *   expect_error()                        or the error it raised
 *   request(s, kind, json, &o)            a request (is_complete, complete, ...) to its reply
 *   cell_start(), cell_await(),           a cell started, its output awaited while it runs,
 *   cell_interrupt(), cell_wait()         interrupted, waited for
 *   run_and_interrupt(s, code, out, &o)   ... all four: interrupted once its output shows
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "util.h"
#include "tap.h"

/* Everything one cell produced. */
struct outcome {
	struct strbuf out, err;
	int results;
	char result[256];
	int shown_count;	/* display events with text and no plot (R's printed values) */
	char shown[256];	/* the last one's text/plain */
	char ename[64];
	char evalue[256];
	char status[16];
	char reason[256];	/* the done event's detail */
	enum reason why;	/* ... and its reason */
	int plots;
	int last_plot_index;
	int input_requests;
	int events;
	int order_ok;		/* streams came before done */
	int done_seen;
	int reply_seen;
	char reply_status[32];	/* is_complete */
	char reply_indent[32];
	struct strbuf matches;	/* complete: one a line */
	int reply_found;	/* inspect */
	char reply_text[256];
	int reply_cleared;	/* clear_plots */
	const char *answer;	/* for input requests */
};

/* session_open(so), checked: NULL (its error told as a TAP note) when it fails. */
static inline struct session *open_checked(const struct session_opts *so)
{
	struct strbuf err = STRBUF_INIT;
	struct session *s = session_open(so, &err);

	if (!s)
		tap_note(err.buf);
	CHECK(s != NULL);
	strbuf_release(&err);
	return s;
}

static inline void outcome_init(struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	strbuf_init(&o->out, 0);
	strbuf_init(&o->err, 0);
	strbuf_init(&o->matches, 0);
	o->order_ok = 1;
}

static inline void outcome_release(struct outcome *o)
{
	strbuf_release(&o->out);
	strbuf_release(&o->err);
	strbuf_release(&o->matches);
}

static inline const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static inline void collect(struct session *s, const struct session_event *ev, void *data)
{
	struct outcome *o = data;

	o->events++;
	if (o->done_seen)
		o->order_ok = 0;
	switch (ev->type) {
	case SESSION_EV_STREAM:
		strbuf_add(ev->stream.stream == SESSION_STDERR ? &o->err : &o->out, ev->stream.text,
			   ev->stream.len);
		break;
	case SESSION_EV_RESULT:
		o->results++;
		snprintf(o->result, sizeof(o->result), "%s", str_or_empty(ev->result.text));
		break;
	case SESSION_EV_ERROR:
		snprintf(o->ename, sizeof(o->ename), "%s", str_or_empty(ev->error.ename));
		snprintf(o->evalue, sizeof(o->evalue), "%s", str_or_empty(ev->error.evalue));
		break;
	case SESSION_EV_DISPLAY: {
		const struct session_plot *plot = ev->display.plot;
		if (plot) {
			char *path = xasprintf("%s/%s", session_channel_dir(s),
					       str_or_empty(plot->path));
			o->plots++;
			o->last_plot_index = plot->index;
			CHECK(plot->path && access(path, R_OK) == 0);
			free(path);
		} else if (ev->display.text && *ev->display.text) {
			o->shown_count++;
			snprintf(o->shown, sizeof(o->shown), "%s", ev->display.text);
		}
		break;
	}
	case SESSION_EV_INPUT_REQUEST: {
		struct strbuf err = STRBUF_INIT;
		o->input_requests++;
		CHECK(session_input_reply(s, ev->id, o->answer ? o->answer : "", &err) == 0);
		strbuf_release(&err);
		break;
	}
	case SESSION_EV_REPLY:
		o->reply_seen = 1;
		snprintf(o->reply_status, sizeof(o->reply_status), "%s",
			 str_or_empty(ev->reply.status));
		for (size_t i = 0; i < ev->reply.nmatches; i++)
			strbuf_addf(&o->matches, "%s\n", ev->reply.matches[i]);
		snprintf(o->reply_indent, sizeof(o->reply_indent), "%s",
			 str_or_empty(ev->reply.indent));
		o->reply_found = ev->reply.found;
		snprintf(o->reply_text, sizeof(o->reply_text), "%s", str_or_empty(ev->reply.text));
		o->reply_cleared = ev->reply.cleared;
		break;
	case SESSION_EV_DONE:
		o->done_seen = 1;
		snprintf(o->status, sizeof(o->status), "%s", event_status_name(ev->done.status));
		snprintf(o->reason, sizeof(o->reason), "%s", str_or_empty(ev->done.detail));
		o->why = ev->done.reason;
		break;
	default:
		break;
	}
}

/*
 * Start a cell whose events fill `o` (input requests answered with `answer`); its id, 0 when
 * it did not start.
 */
static inline unsigned long cell_start(struct session *s, const char *code, unsigned flags,
				       double timeout, const char *answer, struct outcome *o)
{
	struct strbuf err = STRBUF_INIT;
	unsigned long id;

	outcome_init(o);
	o->answer = answer;
	id = session_execute(s, code, flags, timeout, collect, o, &err);
	CHECK(id > 0);
	if (!id)
		tap_note(err.buf);
	strbuf_release(&err);
	return id;
}

/* Wait for the end of cell or request `id` (0: there is none). */
static inline void cell_wait(struct session *s, unsigned long id)
{
	while (id && session_wait(s, id) < 0)
		;
}

/*
 * Dispatch the session's events until cell `id` wrote to stdout (`out` in it, unless NULL)
 * and, with `need_err`, to stderr; 30 s at the most.
 */
static inline void cell_await(struct session *s, unsigned long id, struct outcome *o,
			      const char *out, int need_err)
{
	double t0 = clock_now();

	while (id && (!o->out.len || (out && !strstr(o->out.buf, out)) ||
		      (need_err && !o->err.len)) && clock_now() - t0 < 30) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		session_dispatch(s);
	}
}

/* Interrupt the running cell `id` and wait for its end. */
static inline void cell_interrupt(struct session *s, unsigned long id)
{
	CHECK(session_interrupt(s) == 0);
	cell_wait(s, id);
}

/* Run a cell to its end and fill `o`; returns seconds taken. */
static inline double run(struct session *s, const char *code, unsigned flags, double timeout,
		  struct outcome *o)
{
	double t0 = clock_now();

	cell_wait(s, cell_start(s, code, flags, timeout, NULL, o));
	CHECK(o->done_seen);
	return clock_now() - t0;
}

/*
 * Run a cell and check what it gave: its plain result, or with `shown` the text it displayed
 * last (R's printed value). The cell's code and errors are told when it differs.
 */
static inline void expect_text(struct session *s, const char *code, int shown, const char *want)
{
	struct outcome o;
	const char *got;

	run(s, code, 0, 0, &o);
	got = shown ? o.shown : o.result;
	CHECK_STR(got, want);
	if (strcmp(got, want))
		tap_note(code), tap_note(o.err.buf), tap_note(o.evalue);
	outcome_release(&o);
}

/* Run a cell and check its plain result. */
static inline void expect_result(struct session *s, const char *code, const char *want)
{
	expect_text(s, code, 0, want);
}

/* Run a cell and check what it shows (R's printed value). */
static inline void expect_shown(struct session *s, const char *code, const char *want)
{
	expect_text(s, code, 1, want);
}

/* Run a cell and check that it raised `ename`: its status is "error". */
static inline void expect_error(struct session *s, const char *code, const char *ename)
{
	struct outcome o;

	run(s, code, 0, 0, &o);
	CHECK_STR(o.ename, ename);
	CHECK_STR(o.status, "error");
	outcome_release(&o);
}

/* Send a request and wait for its reply. */
static inline void request(struct session *s, const char *kind, const char *json, struct outcome *o)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *params = json ? cJSON_Parse(json) : NULL;
	unsigned long id;

	outcome_init(o);
	id = session_request(s, kind, params, collect, o, &err);
	CHECK(id > 0);
	cell_wait(s, id);
	cJSON_Delete(params);
	strbuf_release(&err);
}

/*
 * Start a cell, interrupt it once its stdout shows `out` (any output when NULL), and wait for
 * its end. Fills `o`.
 */
static inline void run_and_interrupt(struct session *s, const char *code, const char *out,
				     struct outcome *o)
{
	unsigned long id = cell_start(s, code, 0, 0, NULL, o);

	cell_await(s, id, o, out, 0);
	cell_interrupt(s, id);
}

#endif
