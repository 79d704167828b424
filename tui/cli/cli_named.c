/*
 * Named sessions from the line commands: opening one (--name starts it, --attach joins it),
 * what is said on leaving it, and the cells of other front ends printed as they run (and
 * those that ran before this one attached).
 */
#include "cli.h"
#include "named.h"
#include "printer.h"
#include "named_setup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int cli_named_idle(const struct cli_args *args, struct named_idle *idle)
{
	static char *path;	/* the process's own, for its host */
	const char *file = cli_value(args, "ttl-checkpoint");
	char cwd[4096];

	idle->ttl = cli_seconds(args, "ttl", 0);
	idle->checkpoint = NULL;
	if (!file)
		return 0;
	if (!idle->ttl) {
		msg_error("--ttl-checkpoint FILE is written when --ttl SECONDS ends the session: "
			  "give --ttl too");
		return -1;
	}
	if (!*file) {
		msg_error("--ttl-checkpoint: an empty file name");
		return -1;
	}
	free(path);
	if (file[0] == '/') {
		path = xstrdup(file);
	} else if (getcwd(cwd, sizeof(cwd))) {
		path = xasprintf("%s/%s", cwd, file);
	} else {
		msg_error("--ttl-checkpoint %s: no working directory to find it from", file);
		return -1;
	}
	idle->checkpoint = path;
	return 0;
}

struct session *cli_open_named(const struct cellbox_config *cfg, const char *name,
			       const char *attach, const struct named_idle *idle, int read_only)
{
	struct strbuf err = STRBUF_INIT;
	struct session *s;

	if (!name && !attach)
		return cli_open_session(cfg);
	if (name && attach) {
		msg_error("--name starts a session, --attach joins one: not both");
		return NULL;
	}
	s = named_setup_open(cfg, name ? name : attach, name != NULL, idle, read_only, NULL, NULL,
			     cli_session_mask(), &err);
	if (!s)
		msg_error("%s", err.buf);
	strbuf_release(&err);
	return s;
}

void cli_named_left(struct session *s)
{
	const char *name = s ? session_named(s) : NULL;

	if (name && session_state(s) != SESSION_CLOSED)
		cli_printf(stderr, "detached from session '%s': it runs on (cellbox attach %s; "
			   "cellbox kill %s ends it)\n", name, name, name);
}

struct cli_watch {
	struct printer *pr;
	int *next_count;	/* the In [n] of the next prompt, which their cells move on */
	/*
	 * A stream's text after its last newline, held back: the REPL draws its prompt again
	 * after each batch (repl_line.c), and a part of a line printed before it would be erased
	 * with the prompt's line.
	 */
	struct strbuf partial;
	struct session_event partial_ev;	/* the stream event it came with */
};

#define PARTIAL_MAX (1u << 20)	/* a line held back longer than this is printed as it is */

/* Print the held-back text up to its last newline; with `all`, all of it and a newline. */
static void flush_partial(struct cli_watch *w, int all)
{
	struct session_event e = w->partial_ev;
	const char *nl = w->partial.len ? memrchr(w->partial.buf, '\n', w->partial.len) : NULL;
	size_t n = all ? w->partial.len : nl ? (size_t)(nl - w->partial.buf) + 1 : 0;

	if (!n)
		return;
	if (all && w->partial.buf[w->partial.len - 1] != '\n')
		strbuf_addch(&w->partial, '\n'), n++;
	e.stream.text = w->partial.buf;
	e.stream.len = n;
	printer_event(w->pr, &e);
	strbuf_remove_front(&w->partial, n);
}

/* A cell another front end ran: its code, then its outputs as this front end's would be. */
static void on_watch(struct session *s, unsigned long id, const char *code, int past,
		     const struct session_event *ev, void *data)
{
	struct cli_watch *w = data;
	struct printer *pr = w->pr;

	(void)s;
	(void)id;
	if (code) {
		struct strbuf sb = STRBUF_INIT;
		size_t n = strlen(code);

		while (n && code[n - 1] == '\n')
			n--;
		sanitize_str(code, n, SAN_NO_CR, &sb);
		printer_reset(pr);
		fprintf(stdout, "[%s] In [*]: ", past ? "earlier" : "another front end");
		for (const char *p = sb.buf; *p; p++) {
			fputc(*p, stdout);
			if (*p == '\n')
				fputs("        ...: ", stdout);
		}
		fputc('\n', stdout);
		fflush(stdout);
		strbuf_release(&sb);
		return;
	}
	/* Another front end answers its own cell's input; %load is its own. */
	if (ev->type == SESSION_EV_INPUT_REQUEST || ev->type == SESSION_EV_NEXT_INPUT)
		return;
	if (ev->type == SESSION_EV_STREAM && w->partial.len + ev->stream.len < PARTIAL_MAX) {
		if (w->partial.len && w->partial_ev.stream.stream != ev->stream.stream)
			flush_partial(w, 1);
		w->partial_ev = *ev;	/* its own words only: the event's go with it */
		w->partial_ev.stream.name = ev->stream.stream == SESSION_STDERR ? "stderr" : "stdout";
		strbuf_add(&w->partial, ev->stream.text, ev->stream.len);
		flush_partial(w, 0);
	} else {
		flush_partial(w, 1);
		printer_event(pr, ev);
	}
	fflush(stdout);
	if (ev->type == SESSION_EV_DONE && ev->done.execution_count >= 0 && w->next_count)
		*w->next_count = ev->done.execution_count + 1;
}

void cli_named_watch(struct session *s, struct printer *pr, int *next_count)
{
	static struct cli_watch w;

	w.pr = pr;
	w.next_count = next_count;
	strbuf_init(&w.partial, 0);
	session_watch(s, on_watch, &w);
}
