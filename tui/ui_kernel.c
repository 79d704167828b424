/*
 * Kernel events into the output model: a cell's streams, results, errors, plots and input
 * requests as they arrive, its end; submitting the editor's cell; restarting the kernel and
 * showing its death at once.
 */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Take the code of one recorded cell of an earlier session into the history list. */
int load_hist_entry(const cJSON *entry, void *data)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "code"));

	if (code && *code)
		hist_add(data, code);
	return 0;
}

/* Put one event of a running cell into the output model. */
void on_cell_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct out_cell *c = outmodel_find(&ui->out, ev->id);

	if (!c)
		return;
	record_event(&ui->rec, s, ev);	/* the full output goes to the history store */
	switch (ev->type) {
	case SESSION_EV_STREAM:
		out_cell_append(&ui->out, c, ev->stream.stream == SESSION_STDERR ? OUT_STDERR
										 : OUT_STDOUT,
				ev->stream.text, ev->stream.len);
		break;
	case SESSION_EV_DISPLAY: {
		const struct session_plot *plot = ev->display.plot;
		const char *text = ev->display.text;
		if (plot) {
			out_cell_plot(&ui->out, c, plot->index, plot->width, plot->height);
			if (ui->nplots == ui->plots_alloc) {
				ui->plots_alloc = ui->plots_alloc ? 2 * ui->plots_alloc : 8;
				ui->plots = xrealloc(ui->plots, ui->plots_alloc * sizeof(*ui->plots));
			}
			plot_add(ui, &ui->plots[ui->nplots++], plot->index, plot->width,
				 plot->height, plot->path);
		} else if (ev->display.pager && text) {
			pager_open(ui, "help", text);
		} else if (text) {
			char *line = xasprintf("%s\n", text);
			out_cell_append(&ui->out, c, OUT_STDOUT, line, strlen(line));
			free(line);
		}
		break;
	}
	case SESSION_EV_RESULT: {
		const char *text = ev->result.text;
		if (ev->result.execution_count >= 0)
			c->count = ev->result.execution_count;
		if (text) {
			char *line = xasprintf("%s\n", text);
			out_cell_append(&ui->out, c, OUT_RESULT, line, strlen(line));
			free(line);
		}
		break;
	}
	case SESSION_EV_ERROR: {
		struct strbuf sb = STRBUF_INIT;
		for (size_t i = 0; i < ev->error.ntraceback; i++)
			strbuf_addf(&sb, "%s\n", ev->error.traceback[i]);
		if (!sb.len)
			strbuf_addf(&sb, "%s: %s\n", ev->error.ename ? ev->error.ename : "Error",
				    ev->error.evalue ? ev->error.evalue : "");
		out_cell_append(&ui->out, c, OUT_ERROR, sb.buf, sb.len);
		strbuf_release(&sb);
		break;
	}
	case SESSION_EV_INPUT_REQUEST: {
		if (ui->ov == OV_MENU) {
			menu_free(ui);
			overlay_pop(ui);
		}
		free(ui->input_prompt);
		ui->input_prompt = xstrdup(ev->input.prompt);
		ui->input_id = ev->id;
		strbuf_reset(&ui->line);
		/* The one-line overlays share the line being typed: the question takes its place. */
		if (ui->ov == OV_SEARCH || ui->ov == OV_PROMPT)
			overlay_replace(ui, OV_INPUT);
		else
			overlay_push(ui, OV_INPUT);
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
			out_cell_append(&ui->out, c, OUT_INFO, msg, strlen(msg));
			free(msg);
		} else if (d->status == SESSION_STATUS_ABORTED) {
			out_cell_append(&ui->out, c, OUT_INFO, "[interrupted]\n", 14);
		}
		ui->last_duration = d->duration;
		record_cell(&ui->rec, c->code);
		out_cell_finish(c, ui->last_duration);
		outmodel_trim(&ui->out, OUT_TOTAL_MAX);
		if (ui->npending)
			ui->npending--;
		if (ui->input_id == ev->id)
			overlay_close(ui, OV_INPUT);	/* interrupted while asking */
		break;
	}
	default:
		break;
	}
}

/* Submit the editor's text as a cell. */
void run_cell(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	char *code = xstrdup(ui->ed.text.buf);
	size_t len = strlen(code);
	unsigned long id;

	while (len && (code[len - 1] == '\n' || code[len - 1] == ' '))
		code[--len] = '\0';
	if (!len) {
		free(code);
		return;
	}
	id = session_execute(ui->s, code, SESSION_EXEC_ALLOW_STDIN, ui->cfg->timeout, on_cell_event,
			     ui, &err);
	hist_add(ui, code);
	if (!id) {
		struct out_cell *c = outmodel_add(&ui->out, 0, code);
		strbuf_addstr(&err, "\n");
		out_cell_append(&ui->out, c, OUT_ERROR, err.buf, err.len);
		out_cell_finish(c, 0);
	} else {
		outmodel_add(&ui->out, id, code);
		ui->npending++;
	}
	edbuf_set(&ui->ed, "");
	ui->follow = 1;
	free(code);
	strbuf_release(&err);
}

/* Restart the kernel, showing "restarting" while it starts. */
void restart_kernel(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;

	ui->restarting = 1;
	ui_draw(ui);
	if (session_restart(ui->s, &err) < 0) {
		ui_message(ui, "cannot restart the kernel: %s", err.buf);
	} else {
		struct out_cell *c = outmodel_add(&ui->out, 0, NULL);
		out_cell_append(&ui->out, c, OUT_INFO, "[kernel restarted]\n", 19);
		out_cell_finish(c, 0);
		ui->exec_count = 0;
		ui_message(ui, "kernel restarted");
		free(ui->dead_reason);
		ui->dead_reason = NULL;
	}
	ui->restarting = 0;
	ui->follow = 1;
	strbuf_release(&err);
}

/* Show a kernel death at once, with the reason and the way back. */
void on_state(struct session *s, enum session_state state, const char *msg, void *data)
{
	struct ui *ui = data;
	struct out_cell *c;
	char *text;

	(void)s;
	if (state != SESSION_DEAD || ui->restarting)
		return;
	free(ui->dead_reason);
	ui->dead_reason = xstrdup(msg ? msg : "kernel died");
	text = xasprintf("[%s: press F6 or run ':restart' to start a new kernel; the history "
			 "stays]\n", ui->dead_reason);
	c = outmodel_add(&ui->out, 0, NULL);
	out_cell_append(&ui->out, c, OUT_ERROR, text, strlen(text));
	out_cell_finish(c, 0);
	free(text);
	ui->follow = 1;
}

/* Events nobody waits for. */
void on_ignore(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)ev, (void)data;
}

