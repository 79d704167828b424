/* cellbox repl: a GNU readline line REPL on one persistent session. */
#include "cli.h"
#include "named.h"
#include "named_setup.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "lineplot.h"
#include "printer.h"
#include "record.h"
#include "repl_ask.h"
#include "repl_line.h"
#include "sanitize.h"

struct repl {
	struct session *s;
	struct printer pr;
	const struct cellbox_config *cfg;
	int tty;
	int hung_up;		/* the terminal went away at an input request */
	int failed;		/* a cell raised (the exit code of a piped session) */
	int blocked;		/* the security policy blocked a cell (exit 7 then) */
	int next_count;		/* the n of the next In [n] */
	FILE *in;		/* cells in pipe mode */
	struct record rec;	/* the cells recorded in the history store */
	char *next_input;	/* text the kernel asked for as the next cell (%load) */
	int done;		/* `exit` or `quit` was typed */
};

static struct repl *the_repl;	/* for SIGINT and the terminal's end */

/* Let SIGINT in (around a blocking read) or keep it out again. */
static void let_sigint_in(int on)
{
	static sigset_t saved;

	if (on)
		sigprocmask(SIG_SETMASK, cli_wait_mask(), &saved);
	else
		sigprocmask(SIG_SETMASK, &saved, NULL);
}

/* Whether the terminal hung up (its other side closed: a tmux pane killed, ssh gone). */
static int terminal_gone(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL));
}

/* A line for input() or a debugger (the kernel's prompt, sanitised); Ctrl-C: NULL, cli_sigint. */
static char *input_line(struct repl *r, const char *kernel_prompt)
{
	struct strbuf clean = STRBUF_INIT;
	const char *prompt = sanitize_cstr(kernel_prompt, SAN_NO_CR, &clean);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (r->tty) {
		cli_sigint |= repl_line_read(prompt, "", &line) == REPL_LINE_INTERRUPTED;
		strbuf_release(&clean);
		if (!line && terminal_gone()) {
			r->hung_up = 1;
			raise(SIGHUP);	/* as the hang-up it is: the REPL leaves at the next wait */
		}
		return line;
	}
	fputs(prompt, stdout);
	strbuf_release(&clean);
	fflush(stdout);
	let_sigint_in(1);
	n = getline(&line, &cap, r->in);
	let_sigint_in(0);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	return line;
}

/* Print the cell's events; answer its input requests. */
static void on_cell_event(struct session *s, const struct session_event *ev, void *data)
{
	struct repl *r = data;

	if (ev->type == SESSION_EV_INPUT_REQUEST) {
		struct strbuf err = STRBUF_INIT;
		char *line;

		fflush(stdout);
		line = input_line(r, ev->input.prompt);
		/*
		 * Ctrl-C interrupts (unanswered); end of input answers "", as a closed stdin; a
		 * terminal that hung up answers nothing: the REPL leaves.
		 */
		if (!line && r->hung_up) {
			strbuf_release(&err);
			return;
		}
		if (!line && cli_sigint) {
			cli_sigint = 0;
			session_interrupt(s);
		} else if (session_input_reply(s, ev->id, line ? line : "", &err) < 0)
			msg_error("%s", err.buf);
		free(line);
		strbuf_release(&err);
		return;
	}
	if (ev->type == SESSION_EV_NEXT_INPUT) {
		/* %load: the text is the next prompt's, to edit and run (sanitised) */
		struct strbuf sb = STRBUF_INIT;
		const char *text = ev->next_input.text;
		sanitize_str(text, strnlen(text, 1u << 20), SAN_NO_CR, &sb);
		while (sb.len && sb.buf[sb.len - 1] == '\n')
			sb.buf[--sb.len] = '\0';
		free(r->next_input);
		r->next_input = strbuf_detach(&sb, NULL);
		return;
	}
	printer_event(&r->pr, ev);
	record_event(&r->rec, s, ev);
	if (ev->type == SESSION_EV_DONE) {
		if (ev->done.execution_count >= 0)
			r->next_count = ev->done.execution_count + 1;
		if (ev->done.status != SESSION_STATUS_OK)
			r->failed = 1;
		if (ev->done.reason == REASON_BLOCKED)
			r->blocked = 1;
		if (ev->done.detail && ev->done.reason != REASON_INTERRUPTED)
			msg_error("%s", ev->done.detail);
	}
}

/* Run one cell and wait for it, passing Ctrl-C on to the kernel. */
/*
 * ":export FILE" (not Python, so it cannot clash with a cell): write this session's recorded
 * cells to FILE.py or FILE.ipynb.
 */
static int repl_command(struct repl *r, const char *code)
{
	const char *p = code + strspn(code, " \t");
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;

	if (strncmp(p, ":export", 7) || (p[7] && !strchr(" \t\n", p[7])))
		return 0;
	p += 7;
	p += strspn(p, " \t");
	strbuf_add(&path, p, strcspn(p, "\n"));
	while (path.len && strchr(" \t\r", path.buf[path.len - 1]))
		path.buf[--path.len] = '\0';
	if (!path.len)
		msg_error(":export needs a file name (FILE.py or FILE.ipynb)");
	else if (!r->rec.h)
		msg_error(":export: no history is being recorded (history-size is 0)");
	else if (history_export(history_session_id(r->rec.h), path.buf, &err) < 0)
		msg_error("%s", err.buf);
	else
		cli_printf(stdout, "exported the session to %s\n", path.buf);
	strbuf_release(&err);
	strbuf_release(&path);
	return 1;
}

/*
 * Before a cell, as Jupyter's restarter does: a kernel that died since the last one (or that
 * could not be restarted then: the engine was away) is started again, with a message.
 * Returns 0 when a kernel runs.
 */
static int revive(struct repl *r)
{
	struct strbuf why = STRBUF_INIT, err = STRBUF_INIT;
	int rc = session_revive(r->s, &why, &err);

	if (rc > 0) {
		msg_error("the kernel had ended (%s): restarted it", why.buf);
		r->next_count = 1;
	} else if (rc < 0) {
		msg_error("cannot restart the kernel (%s): %s", why.len ? why.buf : "it ended",
			  err.buf);
	}
	strbuf_release(&why);
	strbuf_release(&err);
	return rc < 0 ? -1 : 0;
}

static void run_cell(struct repl *r, const char *code)
{
	struct strbuf err = STRBUF_INIT;
	unsigned long id;

	if (repl_command(r, code))
		return;
	if (cellcmd_is_exit(code)) {	/* as IPython's terminal: the REPL ends */
		r->done = 1;
		return;
	}
	if (revive(r) < 0) {
		r->failed = 1;
		return;
	}
	id = session_execute(r->s, code, SESSION_EXEC_ALLOW_STDIN, r->cfg->timeout, on_cell_event,
			     r, &err);
	if (!id) {
		msg_error("%s", err.buf);
		r->failed = 1;
		strbuf_release(&err);
		return;
	}
	if (cli_wait(r->s, id) == CLI_TERMINATED) {
		strbuf_release(&err);
		return;		/* the session is closed on the way out */
	}
	record_cell(&r->rec, code);
	printer_reset(&r->pr);
	/* A kernel stopped as its cell ended (a quota checked after the done) says why, here. */
	if (session_state(r->s) == SESSION_DEAD && revive(r) < 0)
		r->failed = 1;
	strbuf_release(&err);
}

/*
 * A line that is :detach, said where a cell would begin: 1 (the caller leaves the session
 * running when it is named). An unnamed one is given a generated name first, its kernel
 * handed to that session's host (named_setup_handover), or says why it cannot be.
 */
static int is_detach(struct repl *r, const char *line)
{
	struct strbuf err = STRBUF_INIT;
	size_t n = strspn(line, " \t");
	struct session *named;
	char *name;

	if (strncmp(line + n, ":detach", 7) || line[n + 7 + strspn(line + n + 7, " \t\r\n")])
		return 0;
	if (session_named(r->s))
		return 1;
	name = named_generate();
	named = named_setup_handover(r->cfg, r->s, name, NULL, NULL, cli_session_mask(), &err);
	if (named)
		r->s = named;
	else
		msg_error(":detach: cannot detach: %s", err.buf);
	free(name);
	strbuf_release(&err);
	return 1;
}

/*
 * A line that is `:fork [NAME]`, said where a cell would begin: 1, the session forked into a
 * new named session NAME (else a generated one) and said so, or why not.
 */
static int is_fork(struct repl *r, const char *line)
{
	struct strbuf err = STRBUF_INIT;
	char name[NAMED_NAME_MAX + 2] = "", *made = NULL, *text;
	struct named_forked f;
	size_t n = strspn(line, " \t");
	int words;

	if (strncmp(line + n, ":fork", 5) || !strchr(" \t\r\n", line[n + 5]))
		return 0;
	words = sscanf(line + n + 5, " %65[^ \t\r\n] %c", name, &(char){ 0 });
	if (words == 2 || strlen(name) > NAMED_NAME_MAX || (name[0] && !named_name_ok(name)))
		msg_error(":fork [NAME]: NAME is letters, digits, '.', '_', '-' (at most %d)",
			  NAMED_NAME_MAX);
	else if (!session_named(r->s))
		msg_error(":fork: this session has no name: only a named session can be forked "
			  "(start one with --name NAME)");
	else if (session_read_only(r->s))
		msg_error(":fork: this front end is attached read-only");
	else if (named_setup_fork(r->cfg, session_named(r->s), name[0] ? name :
				  (made = named_generate()), cli_session_mask(), &f, &err) < 0)
		msg_error(":fork: %s", err.buf);
	else {
		text = named_forked_text(session_named(r->s), made ? made : name, &f);
		fprintf(stderr, "%s (cellbox attach %s)\n", text, made ? made : name);
		free(text);
	}
	strbuf_release(&err);
	free(made);
	return 1;
}

/* Between prompts: the cells other front ends run in a named session, printed. */
static void dispatch_side(void *data)
{
	session_dispatch(((struct repl *)data)->s);
}

/* Pipe mode: cells from stdin, plain output. */
static int repl_pipe(struct repl *r)
{
	struct strbuf cell = STRBUF_INIT;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	r->in = stdin;
	for (;;) {
		let_sigint_in(1);
		n = getline(&line, &cap, r->in);
		let_sigint_in(0);
		if (n < 0 || cli_sigterm)
			break;
		int blank = strspn(line, " \t\r\n") == (size_t)n;
		char *status;

		if (blank && cell.len && !session_kernel(r->s)->blank_line_ends_cell) {
			strbuf_addch(&cell, '\n');	/* R: only a complete cell runs */
			continue;
		}
		if (!cell.len && is_detach(r, line)) {
			if (session_named(r->s))
				break;
			continue;
		}
		if (!cell.len && is_fork(r, line))
			continue;
		if (blank) {
			if (cell.len) {
				run_cell(r, cell.buf);
				strbuf_reset(&cell);
			}
			if (cli_sigterm || r->done)
				break;
			continue;
		}
		strbuf_add(&cell, line, (size_t)n);
		if (!utf8_valid(cell.buf, cell.len, NULL)) {
			msg_error("line is not valid UTF-8: cell skipped");
			r->failed = 1;
			strbuf_reset(&cell);
			continue;
		}
		status = repl_ask_is_complete(r->s, cell.buf, NULL, 0);
		if (strcmp(status, "incomplete")) {
			run_cell(r, cell.buf);
			strbuf_reset(&cell);
		}
		free(status);
		if (cli_sigterm || r->done)
			break;
	}
	if (cli_sigint || cli_sigterm) {
		free(line);
		strbuf_release(&cell);
		/* Ctrl-C (or SIGTERM) while reading: stop, run nothing more */
		return cli_sigterm ? cli_exit_terminated() : EXIT_INTERRUPTED;
	}
	if (cell.len)
		run_cell(r, cell.buf);
	free(line);
	strbuf_release(&cell);
	if (r->blocked)
		return reason_exit_code(REASON_BLOCKED);
	return r->failed ? EXIT_CELL_ERROR : EXIT_OK;
}

/* One recorded cell of this or an earlier session into readline's history, whole. */
static int load_history_entry(const cJSON *entry, void *data)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "code"));
	struct strbuf clean = STRBUF_INIT;

	(void)data;
	if (code && *code && !cellcmd_is_exit(code))
		add_history(sanitize_cstr(code, SAN_NO_CR, &clean));	/* shown when recalled */
	strbuf_release(&clean);
	return 0;
}

static int repl_tty(struct repl *r)
{
	struct strbuf cell = STRBUF_INIT;
	const cJSON *info = session_kernel_info(r->s);
	const char *backend = session_backend_name(r->s);
#define INFO(key) cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, key))
	char *indent = xstrdup("");

	const char *leave = session_named(r->s) ? "Ctrl-D or :detach leaves it running" :
			    "Ctrl-D exits";

	/* The versions are the kernel's words. */
	if (INFO("ipython"))
		cli_printf(stdout, "cellbox %s: Python %s, IPython %s on the %s backend. %s.\n",
			   CELLBOX_VERSION, INFO("python"), INFO("ipython"), backend, leave);
	else
		cli_printf(stdout, "cellbox %s: %s %s on the %s backend. %s.\n", CELLBOX_VERSION,
			   session_kernel(r->s)->language, INFO("version"), backend, leave);
	if (session_named(r->s))
		cli_printf(stdout, "session '%s'\n", session_named(r->s));
#undef INFO
	rl_readline_name = "cellbox";
	rl_catch_signals = 0;
	rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{(,[]+-*/%^~!:";
	repl_ask_completion(r->s, &cell);
	repl_line_set_closers(session_kernel(r->s)->closers, session_kernel(r->s)->indent);
	using_history();
	stifle_history(10000);
	/* Up recalls whole cells of this and earlier sessions, from the history store. */
	if (r->cfg->history_size) {
		struct strbuf warn = STRBUF_INIT;
		history_iter(NULL, load_history_entry, NULL, &warn);
		strbuf_release(&warn);
	}

	if (session_named(r->s))
		repl_line_set_side(session_fd(r->s), dispatch_side, r);
	for (;;) {
		char *prompt, *line = NULL, *status, *load = NULL;	/* load: %load's text */
		int got, pasting, whole;

		prompt = repl_line_prompt(r->next_count, cell.len > 0);
		if (!cell.len && r->next_input) {
			load = r->next_input;
			r->next_input = NULL;
		}
		/* As IPython's terminal: only a continuation line starts with the kernel's indent. */
		got = repl_line_read(prompt, cell.len ? indent : load ? load : "", &line);
		free(prompt);
		free(load);
		if (got == REPL_LINE_EOF) {
			fputc('\n', stdout);
			break;
		}
		if (got == REPL_LINE_INTERRUPTED) {
			strbuf_reset(&cell);
			continue;
		}
		if (!cell.len && !line[strspn(line, " \t")]) {
			free(line);
			continue;
		}
		if (!cell.len && is_detach(r, line)) {
			free(line);
			if (session_named(r->s))
				break;
			continue;
		}
		if (!cell.len && is_fork(r, line)) {
			free(line);
			continue;
		}
		/*
		 * More input waiting means a paste (or typing ahead): its lines keep their own
		 * indent and its blank lines do not end the cell; the kernel decides at its end.
		 */
		pasting = repl_line_waiting();
		whole = !cell.len && strchr(line, '\n') != NULL;	/* a multi-line cell at once */
		/*
		 * A blank line ends a multi-line cell, as in IPython (not in R, nor in a paste);
		 * it is not part of the cell (its pre-filled indent would go into the history).
		 */
		if (!line[strspn(line, " \t")] && !pasting &&
		    session_kernel(r->s)->blank_line_ends_cell) {
			free(line);
			repl_line_remember(cell.buf);
			run_cell(r, cell.buf);
			strbuf_reset(&cell);
			if (r->done)
				break;
			continue;
		}
		strbuf_addstr(&cell, line);
		strbuf_addch(&cell, '\n');
		free(line);
		free(indent);
		if (pasting) {
			indent = xstrdup("");
			continue;
		}
		status = repl_ask_is_complete(r->s, cell.buf, &indent, whole);
		if (strcmp(status, "incomplete")) {
			repl_line_remember(cell.buf);
			run_cell(r, cell.buf);
			strbuf_reset(&cell);
		}
		free(status);
		if (r->done)
			break;
	}
	repl_ask_completion(NULL, NULL);
	free(indent);
	strbuf_release(&cell);
	clear_history();
	return EXIT_OK;
}

int cmd_repl_session(struct session *s, struct cellbox_config *cfg)
{
	struct repl r = { 0 };
	struct lineplot gl;
	unsigned flags = 0;
	int rc;

	r.cfg = cfg;
	r.tty = isatty(0) && isatty(1);
	r.next_count = 1;
	r.s = s;
	if (r.tty) {
		flags = PRINTER_PROMPTS;
		if (cli_want_color(1))
			flags |= PRINTER_COLOR;
	}
	printer_init(&r.pr, flags, session_channel_dir(r.s), NULL);
	cli_setup_graphics(cfg, r.s, &r.pr, &gl);
	record_open(&r.rec, cfg, r.s);
	cli_named_watch(r.s, &r.pr, &r.next_count);
	if (session_named(r.s))
		session_dispatch(r.s);	/* the cells that ran before, first */
	if (session_read_only(r.s))
		cli_printf(stderr, "watching session '%s' (read-only: cells cannot be run here)\n",
			   session_named(r.s));
	the_repl = &r;
	rc = r.tty ? repl_tty(&r) : repl_pipe(&r);
	if (cli_sigterm)
		rc = cli_exit_terminated();
	the_repl = NULL;
	record_close(&r.rec);
	cli_named_left(r.s);
	cli_close_session(r.s, cfg);
	printer_release(&r.pr);
	free(r.next_input);
	return rc;
}

/* cellbox repl */
static int repl_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct named_idle idle;
	struct session *s;

	if (cli_existing(cfg, cli_value(args, "existing")) < 0)
		return EXIT_USAGE;
	if (cli_named_idle(args, &idle) < 0)
		return EXIT_USAGE;
	cli_catch_sigint();
	s = cli_open_named(cfg, cli_value(args, "name"), cli_value(args, "attach"), &idle, 0);
	if (!s)
		return EXIT_NO_KERNEL;
	session_keep_cells(s);	/* an unnamed one's, for the host of a :detach to show */
	return cmd_repl_session(s, cfg);
}

static const struct cli_option repl_options[] = {
	CLI_NAMED_OPTIONS,
	CLI_EXISTING_OPTION,
	{ NULL },
};

const struct cli_command cmd_repl_entry = {
	.name = "repl",
	.run = repl_exec,
	.spec = { .options = repl_options, .max_args = 0, .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS |
					     CONFIG_FOR_POOL | CONFIG_FOR_PLOTS },
	.usage = "repl [OPTIONS]",
	.summary = "A line REPL on one persistent session (readline; reads cells from a pipe).",
	.help = "Prompts In [n]: / Out[n]:, multi-line cells decided by the kernel, Tab completion\n"
		"from the kernel, Ctrl-C interrupts a cell or clears the line, Ctrl-D (or exit) exits.\n"
		"Up recalls whole cells of this and earlier sessions (the history store). A pasted\n"
		"block is one cell, its indent as pasted. %load FILE puts FILE in the next prompt.\n"
		"In a named session, :detach (or Ctrl-D, or closing the terminal) leaves it running;\n"
		"cells other front ends run there are printed as they run; :fork [NAME] copies its\n"
		"kernel into a new named session (cellbox fork --help). In an unnamed one, :detach\n"
		"names it (printed) and hands its kernel, variables and all, to that session's host.\n"
		"With stdin not a terminal, cells are read from it (a blank line or a complete\n"
		"statement ends a cell) and printed plainly; the exit code is 1 when a cell failed,\n"
		"7 when the security policy blocked one.\n",
};
