/*
 * Kernel events into the output model: a cell's streams, results, errors, plots and input
 * requests as they arrive, its end; submitting the editor's cell; restarting the kernel and
 * showing its death at once.
 */
#include "ui.h"
#include "named.h"
#include "named_setup.h"
#include "ipycolors.h"
#include "sanitize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Take the code of one recorded cell of an earlier session into the history list. */
int ui_load_hist_entry(const cJSON *entry, void *data)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "code"));

	if (code && *code)
		ui_hist_add(data, code);
	return 0;
}

/* A plot into the plot list (the side pane, the gallery) as the UI's plot `index`. */
static void list_plot(struct ui *ui, const struct session_plot *plot, int index)
{
	if (ui->nplots == ui->plots_alloc) {
		ui->plots_alloc = ui->plots_alloc ? 2 * ui->plots_alloc : 8;
		ui->plots = xrealloc(ui->plots, ui->plots_alloc * sizeof(*ui->plots));
	}
	ui_plot_add(ui, &ui->plots[ui->nplots++], plot, index);
}

/*
 * A plot of a display or result event: its line in the cell and the plot list, under the
 * UI's next number (the kernel's index names only its file: contexts each count from 1).
 */
static void cell_plot(struct ui *ui, struct outmodel *m, struct out_cell *c,
		      const struct session_plot *plot)
{
	int n = ++ui->plot_seq;

	outmodel_cell_plot(m, c, n, plot->width, plot->height);
	list_plot(ui, plot, n);
}

/* update_display(): the outputs shown with that id take the new bundle, in every cell. */
static void display_update(struct ui *ui, struct outmodel *m, const struct session_ev_rich *d)
{
	if (!d->display_id)
		return;		/* nothing to update: and nothing new is shown */
	if (d->plot) {
		if (outmodel_update_plot(m, d->display_id, ui->plot_seq + 1, d->plot->width,
					 d->plot->height))
			list_plot(ui, d->plot, ++ui->plot_seq);
	} else {
		char *line = ui_rich_text(ui, d);

		if (line)
			outmodel_update_text(m, d->display_id, line, strlen(line));
		free(line);
	}
}

/* An artifact (a file the cell saved): a line naming it and where it is. */
static void cell_artifact(struct ui *ui, struct outmodel *m, struct out_cell *c,
			  const struct session_ev_artifact *ev)
{
	const struct session_plot *f = ev->file;	/* the session's checked copy */
	const char *name = ev->name, *fmt = f->format;
	int idx = f->index;
	struct strbuf err = STRBUF_INIT;
	char *line, *dst = NULL;

	strbuf_init(&err, 0);
	/* The channel goes with the session: keep a copy next to the history when recording. */
	if (ui->rec.h && fsutil_mkdir_p(history_plots_dir(ui->rec.h)) == 0) {
		const char *kept = history_plots_dir(ui->rec.h);
		int k = outputs_copy_new(kept, idx, f->ext, f->data, f->len, &err);

		dst = k ? outputs_copy_name(kept, idx, k, f->ext) : NULL;
	} else {
		dst = xasprintf("%s/%s", session_channel_dir(ui->s), f->path);
	}
	if (dst)
		line = xasprintf("[artifact %d: %s%s%s, %s %s]\n", idx, name ? name : "",
				 name ? ", " : "", fmt ? fmt : "file", ui->rec.h ? "saved to" : "at",
				 dst);
	else
		line = xasprintf("[artifact %d not kept: %s]\n", idx, err.buf);
	outmodel_cell_append(m, c, OUT_INFO, line, strlen(line));	/* sanitised there */
	free(line);
	free(dst);
	strbuf_release(&err);
}

/* Put one event of a running cell into its view `c` (of model `m`). */
void ui_view_event(struct ui *ui, struct outmodel *m, struct out_cell *c,
		const struct session_event *ev)
{
	char *line;

	switch (ev->type) {
	case SESSION_EV_STREAM:
		outmodel_cell_append(m, c, ev->stream.stream == SESSION_STDERR ? OUT_STDERR
										 : OUT_STDOUT,
				ev->stream.text, ev->stream.len);
		break;
	case SESSION_EV_DISPLAY: {
		const struct session_plot *plot = ev->display.plot;
		const char *text = ev->display.text;
		const char *id = ev->display.display_id;

		if (ev->display.update) {
			display_update(ui, m, &ev->display);
			break;
		}
		if (plot) {
			cell_plot(ui, m, c, plot);
			if (id)
				outmodel_cell_tag(c, c->nchunks - 1, id);
		} else if (ev->display.pager && text) {
			ui_pager_open(ui, "help", text);
		} else if ((line = ui_rich_text(ui, &ev->display))) {
			if (id)
				outmodel_cell_display(m, c, id, line, strlen(line));
			else
				outmodel_cell_append(m, c, OUT_STDOUT, line, strlen(line));
			free(line);
		}
		break;
	}
	case SESSION_EV_RESULT: {
		if (ev->result.execution_count >= 0)
			c->count = ev->result.execution_count;
		if ((line = ui_rich_text(ui, &ev->result))) {
			outmodel_cell_append(m, c, OUT_RESULT, line, strlen(line));
			free(line);
		}
		if (ev->result.plot)
			cell_plot(ui, m, c, ev->result.plot);
		break;
	}
	case SESSION_EV_ARTIFACT:
		cell_artifact(ui, m, c, &ev->artifact);
		break;
	case SESSION_EV_CLEAR_OUTPUT:
		outmodel_cell_clear(c, ev->clear.wait);
		break;
	case SESSION_EV_ERROR: {
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < ev->error.ntraceback; i++)
			strbuf_addf(&sb, "%s\n", ev->error.traceback[i]);
		if (!sb.len)
			strbuf_addf(&sb, "%s: %s\n", ev->error.ename ? ev->error.ename : "Error",
				    ev->error.evalue ? ev->error.evalue : "");
		outmodel_cell_append(m, c, OUT_ERROR, sb.buf, sb.len);
		strbuf_release(&sb);
		break;
	}
	case SESSION_EV_INPUT_REQUEST: {
		if (ui->ovl.ov == OV_MENU) {
			ui_menu_free(ui);
			ui_overlay_pop(ui);
		}
		free(ui->ovl.input_prompt);
		ui->ovl.input_prompt = xstrdup(ev->input.prompt);
		ui->ovl.input_id = ev->id;
		strbuf_reset(&ui->ovl.line);
		/* The one-line overlays share the line being typed: the question takes its place. */
		if (ui->ovl.ov == OV_SEARCH || ui->ovl.ov == OV_PROMPT)
			ui_overlay_replace(ui, OV_INPUT);
		else
			ui_overlay_push(ui, OV_INPUT);
		break;
	}
	case SESSION_EV_DONE: {
		const struct session_ev_done *d = &ev->done;

		if (d->execution_count > 0) {
			c->count = d->execution_count;
			ui->exec_count = d->execution_count;
		}
		if (d->detail) {
			char *msg = xasprintf("[%s]\n", d->reason == REASON_INTERRUPTED ? "interrupted"
										   : d->detail);
			outmodel_cell_append(m, c, OUT_INFO, msg, strlen(msg));
			free(msg);
		} else if (d->status == SESSION_STATUS_ABORTED) {
			outmodel_cell_append(m, c, OUT_INFO, "[interrupted]\n", 14);
		}
		ui->last_duration = d->duration;
		ui->status.last = d->usage;
		ui->status.has_last = 1;
		outmodel_cell_finish(c, ui->last_duration);
		if (ui->ovl.input_id == ev->id)
			ui_overlay_close(ui, OV_INPUT);	/* interrupted while asking */
		break;
	}
	default:
		break;
	}
}

/* `%load` and the like: the text the kernel asks to be the next cell, as the editor's. */
static void console_next_input(struct ui *ui, const char *text)
{
	char *clean = ui_next_input_text(text);

	if (ui->editor.ed.text.len) {	/* typed meanwhile: keep it, the text goes after it */
		ui->editor.ed.cur = ui->editor.ed.text.len;
		edbuf_insert(&ui->editor.ed, "\n", 1);
	}
	if (edbuf_insert(&ui->editor.ed, clean, strlen(clean)) < 0)
		ui_message(ui, "the text for the editor is too big");
	free(clean);
}

/* Put one event of a running cell of the output pane into its cell. */
void ui_on_cell_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct out_cell *c = outmodel_find(&ui->out, ev->id);

	if (!c)
		return;
	record_event(&ui->rec, s, ev);	/* the full output goes to the history store */
	if (ev->type == SESSION_EV_NEXT_INPUT)
		console_next_input(ui, ev->next_input.text);
	ui_view_event(ui, &ui->out, c, ev);
	if (ev->type == SESSION_EV_DONE) {
		record_cell(&ui->rec, c->code);
		c->hist_at = history_last_at(ui->rec.h, &c->hist_len);
		if (c->dropped && c->hist_at >= 0) {
			static const char note[] = "[F9 or :output shows it all, from the history]\n";
			outmodel_cell_append(&ui->out, c, OUT_INFO, note, sizeof(note) - 1);
		}
		outmodel_trim(&ui->out, OUT_TOTAL_MAX);
		ui_cell_finished(ui);
	}
}

/* The view of request `id`: a cell of the output pane or of the notebook; NULL when gone. */
struct out_cell *ui_view_of_request(struct ui *ui, unsigned long id)
{
	struct out_cell *c = outmodel_find(&ui->out, id);

	for (size_t i = 0; !c && ui->nbv && i < ui->nbv->nb.ncells; i++)
		if (ui->nbv->nb.cells[i]->req == id)
			c = ui->nbv->nb.cells[i]->view;
	return c;
}

/* Submit the editor's text as a cell. */
void ui_run_cell(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	char *code = xstrdup(ui->editor.ed.text.buf);
	size_t len = strlen(code);
	unsigned long id;

	while (len && (code[len - 1] == '\n' || code[len - 1] == ' '))
		code[--len] = '\0';
	if (!len) {
		free(code);
		return;
	}
	if (cellcmd_is_command(code)) {
		/* A line starting with ':' is not Python: one of cellbox's commands. */
		ui_hist_add(ui, code);
		ui_editor_load(ui, "");
		if (ui_run_command(ui, code + 1) & PANE_QUIT)
			ui->quit = 1;
		free(code);
		return;
	}
	if (cellcmd_is_exit(code)) {	/* as IPython's terminal: exit and quit end it */
		ui->quit = 1;
		free(code);
		return;
	}
	if (!ui_session_ready(ui)) {	/* the text stays in the editor */
		ui_message(ui, "the kernel is not running: F6 starts a new one");
		free(code);
		return;
	}
	id = session_execute(ui->s, code, SESSION_EXEC_ALLOW_STDIN, ui->cfg->timeout, ui_on_cell_event,
			     ui, &err);
	ui_hist_add(ui, code);
	if (!id) {
		struct out_cell *c = outmodel_add(&ui->out, 0, code);
		strbuf_addstr(&err, "\n");
		outmodel_cell_append(&ui->out, c, OUT_ERROR, err.buf, err.len);
		outmodel_cell_finish(c, 0);
	} else {
		outmodel_add(&ui->out, id, code);
		ui_cell_started(ui);
	}
	ui_editor_load(ui, "");	/* a new cell: its own undo history */
	ui->outpane.follow = 1;
	free(code);
	strbuf_release(&err);
}

/* Whether a cell of the user's runs (submitted, its `done` not come yet). */
int ui_cell_running(const struct ui *ui)
{
	return ui->npending > 0;
}

/* Count a cell submitted. */
void ui_cell_started(struct ui *ui)
{
	ui->npending++;
}

/* Count a cell done. */
void ui_cell_finished(struct ui *ui)
{
	if (ui->npending)
		ui->npending--;
	if (!ui->npending)
		ui->quit_running_armed = 0;	/* the next cell asks again */
	ui_vars_stale(ui);	/* the cell may have changed the names */
}

/* Restart the kernel, showing "restarting" while it starts. */
void ui_restart_kernel(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;

	ui->restarting = 1;
	ui_draw(ui);
	if (session_restart(ui->s, &err) < 0) {
		ui_message(ui, "cannot restart the kernel: %s", err.buf);
	} else {
		struct out_cell *c = outmodel_add(&ui->out, 0, NULL);
		outmodel_cell_append(&ui->out, c, OUT_INFO, "[kernel restarted]\n", 19);
		outmodel_cell_finish(c, 0);
		ui->exec_count = 0;
		ui->kernel_cols = 0;	/* a new kernel: tell it the width again */
		ui_vars_stale(ui);	/* ... and list its (no) names */
		strcpy(ui->kernel_scheme, "Linux");	/* a fresh kernel has IPython's default */
		ui_match_kernel_colors(ui);
		if (ui->nbv)
			ui_nbview_restarted(ui);
		ui_message(ui, "kernel restarted");
		free(ui->dead_reason);
		ui->dead_reason = NULL;
	}
	ui->restarting = 0;
	ui->outpane.follow = 1;
	strbuf_release(&err);
}

/* Show a kernel death at once, with the reason and the way back. */
void ui_on_state(struct session *s, enum session_state state, const char *msg, void *data)
{
	struct ui *ui = data;
	struct out_cell *c;
	char *text;

	(void)s;
	if (state == SESSION_CLOSED && ui->s && session_named(ui->s)) {
		/* `cellbox kill` (or its idle limit) ended the named session under us. */
		static const char ended[] = "[the session was ended (cellbox kill): Ctrl-Q leaves]\n";

		c = outmodel_add(&ui->out, 0, NULL);
		outmodel_cell_append(&ui->out, c, OUT_ERROR, ended, sizeof(ended) - 1);
		outmodel_cell_finish(c, 0);
		ui->outpane.follow = 1;
		return;
	}
	if (state != SESSION_DEAD || ui->restarting)
		return;
	free(ui->dead_reason);
	ui->dead_reason = xstrdup(msg ? msg : "kernel died");
	text = xasprintf("[%s: press F6 or run ':restart' to start a new kernel; the history "
			 "stays]\n", ui->dead_reason);
	c = outmodel_add(&ui->out, 0, NULL);
	outmodel_cell_append(&ui->out, c, OUT_ERROR, text, strlen(text));
	outmodel_cell_finish(c, 0);
	if (ui->nbv)	/* the notebook shows no output pane: say it in the status line */
		ui_message(ui, "%s: F6 starts a new kernel", ui->dead_reason);
	free(text);
	ui->outpane.follow = 1;
}

/* Whether the kernel can take cells (not dead, not closed). */
int ui_session_usable(const struct ui *ui)
{
	enum session_state st = ui->s ? session_state(ui->s) : SESSION_CLOSED;
	return st != SESSION_DEAD && st != SESSION_CLOSED;
}

/*
 * Whether the kernel can take the next cell, after starting a new one if it died (as the REPL
 * and Jupyter do: the cell waits, its text stays where it was typed).
 */
int ui_session_ready(struct ui *ui)
{
	if (ui->s && session_state(ui->s) == SESSION_DEAD)
		ui_restart_kernel(ui);
	return ui_session_usable(ui);
}

/* Text the kernel sent for an editor: sanitised (tabs and newlines kept), size capped. */
char *ui_next_input_text(const char *text)
{
	struct strbuf sb = STRBUF_INIT;

	sanitize_str(text, strnlen(text, EDBUF_MAX / 2), SAN_NO_CR, &sb);
	return strbuf_detach(&sb, NULL);
}

/* Tell the kernel the width output is drawn at (COLUMNS; pandas follows), when it changed. */
void ui_kernel_set_width(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	int cols = ui->nbv ? ui->panes[P_NOTEBOOK].w - 2 : ui->panes[P_OUTPUT].w;
	char *code;

	if (!ui->s || cols < 20 || cols == ui->kernel_cols || !ui_session_usable(ui))
		return;
	code = xasprintf("import os as __cellbox_os\n__cellbox_os.environ['COLUMNS'] = '%d'\n"
			 "__cellbox_os.environ['LINES'] = '%d'\ndel __cellbox_os\n", cols,
			 LINES > 2 ? LINES - 2 : 24);
	/* cellbox's own cell: the security policy is for the user's (it imports os) */
	if (session_execute(ui->s, code, SESSION_EXEC_SILENT | SESSION_EXEC_TRUSTED, 0, ui_on_ignore,
			    NULL, &err))
		ui->kernel_cols = cols;
	free(code);
	strbuf_release(&err);
}

/* Give the kernel the theme's IPython colour scheme, unless it has it already. */
void ui_match_kernel_colors(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;

	if (!ui->s || !strcmp(ui->kernel_scheme, ui->theme.ipython))
		return;
	if (ipycolors_apply(ui->s, ui->theme.ipython, &err) == 0)
		snprintf(ui->kernel_scheme, sizeof(ui->kernel_scheme), "%s", ui->theme.ipython);
	strbuf_release(&err);
}

/* Events nobody waits for. */
void ui_on_ignore(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)ev, (void)data;
}


void ui_on_watch(struct session *s, unsigned long id, const char *code, int past,
		 const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct out_cell *c;

	(void)s;
	(void)past;
	if (code) {
		outmodel_add(&ui->out, id, code);
		ui->outpane.follow = 1;
		return;
	}
	c = outmodel_find(&ui->out, id);
	/* Another front end answers its cell's input; its %load is its own. */
	if (!c || ev->type == SESSION_EV_INPUT_REQUEST || ev->type == SESSION_EV_NEXT_INPUT)
		return;
	ui_view_event(ui, &ui->out, c, ev);
	if (ev->type == SESSION_EV_DONE) {
		outmodel_trim(&ui->out, OUT_TOTAL_MAX);
		ui_vars_stale(ui);	/* it may have changed the names */
	}
}

/*
 * :detach: leave the named session running. An unnamed one is given a generated name first,
 * its kernel handed to that session's host (named_setup_handover); the way out says the name.
 */
int ui_detach(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf err = STRBUF_INIT;
	struct session *named;
	char *name;

	(void)argc, (void)argv;
	if (!ui->s) {
		strbuf_addstr(msg, "no session to detach from");
		return -1;
	}
	if (session_named(ui->s))
		return PANE_QUIT;
	if (ui_cell_running(ui)) {
		strbuf_addstr(msg, "cannot detach: a cell is running: detach once it ends (or "
			      "interrupt it)");
		return -1;
	}
	name = named_generate();
	named = named_setup_handover(ui->cfg, ui->s, name, ui_on_state, ui, NULL, &err);
	free(name);
	if (!named) {
		strbuf_addf(msg, "cannot detach: %s", err.buf);
		strbuf_release(&err);
		return -1;
	}
	strbuf_release(&err);
	ui->s = named;
	return PANE_QUIT;
}

/* :fork [NAME]: the named session forked into a new one (named_setup_fork), said in `msg`. */
int ui_fork(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	char *made = argc > 1 ? NULL : named_generate(), *text;
	const char *name = made ? made : argv[1];
	struct strbuf err = STRBUF_INIT;
	struct named_forked f;
	int rc = -1;

	if (!ui->s || !session_named(ui->s))
		strbuf_addstr(msg, "this session has no name: only a named session can be forked "
			      "(start one with --name NAME)");
	else if (session_read_only(ui->s))
		strbuf_addstr(msg, "no fork: this front end is attached read-only");
	else if (!named_name_ok(name))
		strbuf_addf(msg, "'%s' cannot name a session (letters, digits, '.', '_', '-')", name);
	else if (named_setup_fork(ui->cfg, session_named(ui->s), name, NULL, &f, &err) < 0)
		strbuf_addf(msg, "no fork: %s", err.buf);
	else
		rc = 0;
	if (rc == 0) {
		text = named_forked_text(session_named(ui->s), name, &f);
		strbuf_addf(msg, "%s (cellbox attach %s)", text, name);
		free(text);
	}
	strbuf_release(&err);
	free(made);
	return rc;
}
