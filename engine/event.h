#ifndef CELLBOX_EVENT_H
#define CELLBOX_EVENT_H

/*
 * Events: what a request's results/<id>.jsonl says (kernels/PROTOCOL.md), decoded once
 * into typed structs. The session reads each line, decodes it here and hands the struct to
 * the request's callback; front ends (printer, the TUI, the nbformat collector, the history)
 * read fields and never look at the JSON.
 *
 * Everything in an event came from the kernel, which is hostile in a container backend:
 * every field has been type-checked (a string member that is not a string is NULL, a number
 * that is not a number is -1 or 0 as documented), a plot or artifact reaches a callback only
 * as the host's checked copy (struct session_plot: the session checked the kernel's name and
 * file once, where it crosses the wall), and strings may hold anything (sanitise before
 * printing). Pointers are valid only during the callback.
 *
 * Decoding is the one place where a future check applies to every consumer at once (a byte
 * cap per request, events only for a request in flight).
 */

#include <stddef.h>
#include <cjson/cJSON.h>
#include "reason.h"
#include "usage.h"
#include "util.h"

enum session_event_type {
	SESSION_EV_STREAM,
	SESSION_EV_DISPLAY,
	SESSION_EV_RESULT,
	SESSION_EV_ERROR,
	SESSION_EV_INPUT_REQUEST,
	SESSION_EV_REPLY,
	SESSION_EV_DONE,
	SESSION_EV_CLEAR_OUTPUT,	/* clear_output(wait): the cell's outputs so far go */
	SESSION_EV_ARTIFACT,	/* a file the cell made (savefig, a plotly figure's HTML) */
	SESSION_EV_NEXT_INPUT,	/* set_next_input: text for the next cell (`%load`) */
	SESSION_EV_OTHER,	/* a type this host does not know: ignore */
};

enum session_stream {
	SESSION_STDOUT,
	SESSION_STDERR,
	SESSION_STREAM_OTHER,	/* a name the protocol does not have */
};

/* How the kernel says a request ended (done.status). */
enum session_status {
	SESSION_STATUS_OK,
	SESSION_STATUS_ERROR,	/* also for a status this host does not know */
	SESSION_STATUS_ABORTED,	/* interrupted (KeyboardInterrupt), or ended by the session */
};

/*
 * A file the kernel wrote into the channel (a captured image: display.plot, result.plot; or
 * an artifact), as the session took it: checked once where it crosses the wall
 * (channel_take_file(): the kernel's name is plots/<n>.<ext>, the file a regular one of the
 * kernel's with one link, within its cap and the quota, a PNG's header and size sane) and
 * copied into the host's plots/. A consumer uses `data` (embed it, decode it, write it where
 * it keeps plots) and never reads the file again or re-checks the name: a refused file
 * reaches no callback as a plot at all.
 */
struct session_plot {
	int index;		/* n of plots/<n>.<ext>, from 1 */
	const char *path;	/* the host's copy, relative to the channel: "plots/<n>.<ext>"
				   (for a path to show; the bytes are `data`) */
	const char *ext;	/* its extension without the dot: "png", "svg", "html", ... */
	const char *format;	/* "png" (an artifact: "svg", "pdf", "html", ...); NULL when not
				   said */
	int width, height;	/* pixels (a PNG's from its header); 0 when not said */
	const unsigned char *data;	/* the bytes checked, as the session read them once */
	size_t len;
};

/* stream: text as it was printed. */
struct session_ev_stream {
	enum session_stream stream;
	const char *name;	/* "stdout", "stderr" (or what the kernel said) */
	const char *text;	/* never NULL */
	size_t len;
};

/* display and result: a mime bundle. */
struct session_ev_rich {
	const cJSON *data;	/* the bundle: an object of mime -> value; NULL when none */
	const char *text;	/* its text/plain, NULL when it has none */
	const cJSON *metadata;	/* an object, NULL when none */
	int execution_count;	/* result: Out[n]; -1 when not said (and for displays) */
	const struct session_plot *plot;	/* a captured image (a shown figure, a Figure as
						   Out[n]), else NULL */
	const char *display_id;	/* display: display(..., display_id=...); NULL when none */
	int update;		/* display: update_display(): the outputs shown with display_id
				   take this bundle, and nothing new is shown (nothing at all
				   without an id) */
	int pager;		/* display: `obj?` help meant for a pager */
};

/* clear_output: the cell's outputs so far go, at once or (wait) before the next output. */
struct session_ev_clear {
	int wait;
};

/* artifact: a file the cell saved (not an output: Jupyter shows nothing for it). */
struct session_ev_artifact {
	const struct session_plot *file;	/* never NULL */
	const char *name;	/* the name the cell gave it ("out.png"); NULL when none */
};

/* error: an exception. */
struct session_ev_error {
	const char *ename;	/* NULL when not said */
	const char *evalue;	/* NULL when not said */
	const char *const *traceback;	/* lines (may carry SGR colours) */
	size_t ntraceback;
	/*
	 * A cell the security policy blocked (ename "SecurityViolation", made by the session):
	 * the verdict's violations, an array of objects as policy_error_event() writes them.
	 * NULL for every error of the kernel's: it cannot claim a verdict of the host's.
	 */
	const cJSON *violations;
};

/* input_request: the cell called input() (SESSION_EXEC_ALLOW_STDIN). */
struct session_ev_input {
	const char *prompt;	/* never NULL */
	int password;
};

/* reply: the answer of a request other than execute; members it does not have are empty. */
struct session_ev_reply {
	const char *status;	/* is_complete: "complete", "incomplete", "invalid" */
	const char *indent;	/* is_complete */
	const char *const *matches;	/* complete */
	size_t nmatches;
	int cursor_start, cursor_end;	/* complete, code points; -1 when not said */
	int found;		/* inspect */
	const cJSON *data;	/* inspect: a mime bundle */
	const char *text;	/* its text/plain */
	int cleared;		/* clear_plots: how many; -1 when not said */
};

/* done: the last event of every request. */
struct session_ev_done {
	enum session_status status;
	int execution_count;	/* -1 when none */
	double duration;	/* seconds the kernel took; 0 when not said */
	enum reason reason;	/* why it ended: REASON_OK, REASON_TIMEOUT, REASON_OOM_KILLED, ... */
	/*
	 * The reason in words when the session ended the request or stopped it ("timeout",
	 * "interrupt", "timeout: kernel restarted", "kernel died (exit code 3)", "kernel killed:
	 * out of memory (limit 64 MB)", "restart", "session closed"); NULL when the kernel
	 * finished it by itself. This is what JSON outputs and the history call "reason".
	 */
	const char *detail;
	/*
	 * What the cell used, measured by the host (usage.h), never the kernel's word: set by
	 * the session for a cell (execute), not measured (negative members) for other requests.
	 */
	struct usage usage;
};

/* set_next_input: what the kernel asks to be the next cell's text (IPython's %load). */
struct session_ev_next_input {
	const char *text;	/* never NULL; anything (front ends strip controls) */
	int replace;		/* replace the cell that ran rather than add one after it */
};

struct session_event {
	enum session_event_type type;
	unsigned long id;	/* the request this event belongs to */
	union {
		struct session_ev_stream stream;
		struct session_ev_rich display;	/* SESSION_EV_DISPLAY */
		struct session_ev_rich result;	/* SESSION_EV_RESULT */
		struct session_ev_error error;
		struct session_ev_input input;
		struct session_ev_reply reply;
		struct session_ev_done done;
		struct session_ev_clear clear;		/* SESSION_EV_CLEAR_OUTPUT */
		struct session_ev_artifact artifact;
		struct session_ev_next_input next_input;
	};
};

/*
 * What the fields of a decoded event point into, until event_store_release(). A plot or
 * artifact is decoded into `plot` with path and data NULL, and the kernel's name for its file
 * in `named` (unchecked: only the session reads it, and hands it to channel_take_file()).
 */
struct event_store {
	cJSON *json;
	const char **strings;	/* traceback lines or completion matches */
	size_t alloc;
	struct session_plot plot;
	const char *named;
};

#define EVENT_STORE_INIT { NULL, NULL, 0, { 0 }, NULL }

/*
 * Decode one event line into `ev` (id set to `id`); its fields point into `st`, which the
 * caller releases after use (a store can be reused: decoding releases what it held). Returns
 * 0, or -1 when the line is not an event (not a JSON object with a string `type`). A done
 * event comes out with reason REASON_OK, or REASON_ERROR for any other status: the session
 * knows more (a timeout, an interrupt) and says so.
 */
int event_decode(struct event_store *st, const char *line, size_t len, unsigned long id,
		 struct session_event *ev);
/*
 * Decode an event the host made itself (`json`, which the store takes over) the same way,
 * with the members only the host may give (an error's `violations`). -1 as above.
 */
int event_decode_made(struct event_store *st, cJSON *json, unsigned long id,
		      struct session_event *ev);
void event_store_release(struct event_store *st);
/*
 * The event as the protocol's JSON again (event.c), for a named session's front ends
 * (named.h): what event_decode_made() reads back, with a done's `reason` and `detail`, an
 * error's `violations` and a checked file's bytes in base64 (member "b64" of the plot or
 * artifact). The caller deletes it.
 */
cJSON *event_to_json(const struct session_event *ev);

/* Name of an event type as the protocol spells it ("stream", ...). */
const char *event_type_name(enum session_event_type type);
/* The status as the protocol spells it ("ok", "error", "aborted"). */
const char *event_status_name(enum session_status status);

#endif
