#ifndef CELLBOX_REQUEST_H
#define CELLBOX_REQUEST_H

/*
 * One request of a session and the binding of its events (the session's queue is in
 * session.c; session.h says the rules a front end sees). A request has a name no kernel can
 * guess (`<sequence>-<random>`) and a results file the host made for it before its command
 * was written (channel_results_create), read through the descriptor the host holds. Its
 * events are the lines of that file only, only up to its done: every event type (streams,
 * displays and their updates, results, clear_output, artifacts, input requests, set_next_input,
 * done) is bound to it that way, and a type this host does not know is handed on as
 * SESSION_EV_OTHER for the request it came in. Lines that are not events are counted and told once before the
 * done; past the output limit only a done is read; every file an event names (a plot, an
 * artifact) reaches the callback as the host's checked copy (channel_take_file) or not at all.
 *
 *	r = request_new(id, is_execute, timeout, fn, data);
 *	request_open(r, &ch, err);		// its results file, before the command
 *	request_read(&rd, r, budget);		// at each dispatch while it is the head
 *	request_free(r);
 *
 * The session also makes events of its own for a request: notes (stderr text), the error and
 * done of one the kernel will not finish, and the done of one the policy blocked.
 */

#include <cjson/cJSON.h>
#include "channel.h"
#include "event.h"
#include "reason.h"

struct session;
struct backend;

/* The callback of a request (session.h's session_event_fn). */
typedef void (*request_event_fn)(struct session *s, const struct session_event *ev, void *data);

/* Bytes of one event line; a longer one is dropped and reported. */
#define REQUEST_MAX_LINE (32u << 20)

struct request {
	struct request *next;
	unsigned long id;
	char name[48];		/* <sequence>-<random>: ordered, and never guessed */
	int is_execute;
	double timeout;		/* seconds, 0 = none */
	double deadline;	/* monotonic; set when the request reaches the head */
	enum reason stop;	/* REASON_TIMEOUT, REASON_INTERRUPTED or REASON_OUTPUT_LIMIT once
				   SIGINT was sent; REASON_OK (0) while not stopped */
	int done;
	int reader_open;
	struct event_reader rd;
	int inputs;		/* input requests so far: the answer to the k-th is <name>.<k>.input */
	int capped;		/* its output passed the limit: only its done is read now */
	int memory_error;	/* it raised MemoryError under an address-space limit */
	int clears_plots;	/* the kernel empties its plot list as it begins (clear_plots) */
	unsigned malformed, dropped, refused;	/* lines not taken, told once at its end */
	int truncated_told;
	request_event_fn fn;
	void *data;
	cJSON *blocked;		/* the policy's error event: never sent, ended by the host */
	/*
	 * A cell's usage (usage.h): the backend it runs on and its counters when it reached the
	 * head (session_queue.c sets them; be NULL until then); its done event gets the
	 * difference from the counters then (request_deliver()).
	 */
	struct backend *be;
	struct usage_sample usage0;
};

/* A new request `id` (its name made here, with 16 random bytes). */
struct request *request_new(unsigned long id, int is_execute, double timeout,
			    request_event_fn fn, void *data);
/* Free it (its reader closes its results file; the files in the channel stay). */
void request_free(struct request *r);
/* Make its results file in `ch` and the reader on it. 0 or -1 with `err`. */
int request_open(struct request *r, const struct channel *ch, struct strbuf *err);

/*
 * The request reached the head: its clock starts, and a cell's counters are read (the memory
 * peak reset) on backend `be`.
 */
void request_begin(struct request *r, struct backend *be);
/* Hand `ev` to the request's callback (its id set; a done, the cell's usage). */
void request_deliver(struct session *s, struct request *r, struct session_event *ev);
/* Deliver a note of the session's own as stderr text. */
void request_note(struct session *s, struct request *r, const char *text);
/*
 * End a request the kernel will not finish: an error (cells only, when `ename` is set; a
 * blocked one gives its policy error instead) and a done with `reason` and `detail`.
 */
void request_abort(struct session *s, struct request *r, enum reason reason, const char *ename,
		   const char *evalue, const char *detail);
/* End a request the policy `policy` blocked: its error, and a done with REASON_BLOCKED. */
void request_end_blocked(struct session *s, struct request *r, const char *policy);

/* What request_read() needs of the session. */
struct request_reader {
	struct session *s;
	struct channel *ch;		/* plots and artifacts are taken from (and into) it */
	struct backend *be;		/* SIGINT for a request past the output limit */
	unsigned long long output_limit;
	/*
	 * The local kernel's address-space limit (kernel_spec.memory; 0: none or a container's,
	 * which kills): a cell that raises MemoryError under it is told which limit it hit.
	 */
	unsigned long long memory_limit;
	double interrupt_grace;
	double *kill_at;		/* the session's grace deadline: set on a stop, 0 at done */
	int events;			/* lines handled so far */
};

/*
 * Read what is new in the results file of `r`, the session's head request, at most `budget`
 * bytes, and deliver its events (the rules above). Returns r->done.
 */
int request_read(struct request_reader *rd, struct request *r, size_t budget);

#endif
