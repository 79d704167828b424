/*
 * Notebook mode's runs: cells wait in a queue (the order they were asked for) and go to the
 * kernel one at a time, so that when one fails the cells behind it are dropped, as Jupyter
 * does (the run-after-error setting keeps them). A running cell's events go to its view as
 * they come and to an nbformat collector; when it is done its outputs and execution count
 * become the cell's, and the history records it from that same collection (record_share).
 */
#include "ui.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The index of the cell running request `id`, or -1 (it was deleted meanwhile). */
static long cell_of_request(const struct nbview *v, unsigned long id)
{
	for (size_t i = 0; i < v->nb.ncells; i++)
		if (v->nb.cells[i]->req == id)
			return (long)i;
	return -1;
}

int ui_nbview_busy(const struct ui *ui)
{
	const struct nbview *v = ui->nbv;

	for (size_t i = 0; v && i < v->nb.ncells; i++)
		if (v->nb.cells[i]->req || v->nb.cells[i]->queued)
			return 1;
	return 0;
}

void ui_nbview_drop_queue(struct ui *ui)
{
	struct nbview *v = ui->nbv;

	for (size_t i = 0; v && i < v->nb.ncells; i++)
		if (v->nb.cells[i]->queued) {
			v->nb.cells[i]->queued = 0;
			v->nb.cells[i]->rows_width = 0;
		}
}

static void run_next(struct ui *ui);

/* `%load` and the like in a notebook: the text replaces the cell that ran, or goes below it. */
static void next_input(struct ui *ui, long i, const struct session_ev_next_input *ni)
{
	struct nbview *v = ui->nbv;
	char *text = ui_next_input_text(ni->text);

	if (i < 0) {
		free(text);
		return;
	}
	if (ni->replace) {
		notebook_set_source(&v->nb, (size_t)i, text);
	} else {
		notebook_insert(&v->nb, (size_t)i + 1, "code", text);
		if (v->sel > (size_t)i)
			v->sel++;
	}
	free(text);
}

/* One event of a notebook cell's run. */
static void on_nb_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct nbview *v = ui->nbv;
	long i;
	struct nb_cell *c;

	if (!v)
		return;
	i = cell_of_request(v, ev->id);
	c = i >= 0 ? v->nb.cells[i] : NULL;
	if (v->outputs_open)
		outputs_event(&v->out, ev);	/* the history's too (record_share) */
	else
		record_event(&ui->rec, s, ev);
	if (ev->type == SESSION_EV_NEXT_INPUT)
		next_input(ui, i, &ev->next_input);
	if (c && c->view) {
		ui_view_event(ui, &v->views, c->view, ev);
		c->rows_width = 0;
	}
	if (ev->type != SESSION_EV_DONE)
		return;
	if (v->outputs_open) {
		cJSON *outs = outputs_finish(&v->out);
		int count = v->out.execution_count;
		record_append(&ui->rec, v->running_code ? v->running_code : "", &v->out, outs);
		outputs_release(&v->out);
		v->outputs_open = 0;
		if (c) {
			notebook_set_outputs(&v->nb, (size_t)i, outs, count);
			free(c->ran);	/* what ran, which may not be what the cell holds now */
			c->ran = xstrdup(v->running_code ? v->running_code : "");
		} else {
			cJSON_Delete(outs);
		}
	} else {
		record_cell(&ui->rec, v->running_code ? v->running_code : "");
	}
	if (c)
		c->req = 0;
	free(v->running_code);
	v->running_code = NULL;
	ui_cell_finished(ui);
	if (ev->done.status != SESSION_STATUS_OK &&
	    (ev->done.status == SESSION_STATUS_ABORTED || !ui->cfg->run_after_error)) {
		int n = 0;
		for (size_t k = 0; k < v->nb.ncells; k++)
			n += v->nb.cells[k]->queued != 0;
		ui_nbview_drop_queue(ui);
		if (n)
			ui_message(ui, "%d queued cell%s not run: a cell failed (the run-after-error "
				   "setting runs them anyway)", n, n == 1 ? "" : "s");
	}
	run_next(ui);
}

/* Whether the text is only white space. */
static int blank(const char *s)
{
	return !s[strspn(s, " \t\r\n")];
}

/* Send the next queued cell to the kernel, when none runs. */
static void run_next(struct ui *ui)
{
	struct nbview *v = ui->nbv;
	struct strbuf err = STRBUF_INIT;
	struct nb_cell *next = NULL;
	unsigned long id;

	for (size_t i = 0; i < v->nb.ncells; i++) {
		struct nb_cell *c = v->nb.cells[i];
		if (c->req)
			return;		/* one at a time */
		if (c->queued && (!next || c->queued < next->queued))
			next = c;
	}
	if (!next || v->outputs_open)
		return;		/* (a cell deleted while it runs still runs: after it) */
	next->queued = 0;
	next->rows_width = 0;
	if (blank(next->source) || strcmp(notebook_cell_type(next), "code")) {
		run_next(ui);
		return;
	}
	if (cellcmd_is_exit(next->source)) {
		ui_message(ui, "'%s' does not run in a notebook: Ctrl-Q (or :q) quits cellbox",
			   next->source);
		ui_nbview_drop_queue(ui);
		return;
	}
	id = session_execute(ui->s, next->source, SESSION_EXEC_ALLOW_STDIN, ui->cfg->timeout,
			     on_nb_event, ui, &err);
	if (!id) {
		ui_message(ui, "cannot run the cell: %s", err.buf);
		ui_nbview_drop_queue(ui);
		strbuf_release(&err);
		return;
	}
	ui_hist_add(ui, next->source);
	free(v->running_code);
	v->running_code = xstrdup(next->source);
	next->req = id;
	ui_nbview_images_drop(ui, next->view);
	outmodel_cell_free(next->view);
	next->view = outmodel_cell_new(id, NULL);
	outputs_init(&v->out, session_channel_dir(ui->s), OUTPUTS_EMBED_PNG, NULL, 0);
	record_share(&ui->rec, &v->out);
	v->outputs_open = 1;
	ui_cell_started(ui);
	strbuf_release(&err);
}

/* Queue one cell. */
static void enqueue(struct ui *ui, size_t i)
{
	struct nbview *v = ui->nbv;
	struct nb_cell *c = v->nb.cells[i];

	if (c->req || c->queued || strcmp(notebook_cell_type(c), "code") || blank(c->source))
		return;
	c->queued = ++v->queue_seq;
	c->rows_width = 0;
}

void ui_nbview_run(struct ui *ui, enum nb_run how)
{
	struct nbview *v = ui->nbv;
	size_t i = v->sel;

	if (v->editing)
		ui_nbview_leave_edit(ui);
	if (!ui_session_ready(ui)) {
		ui_message(ui, "the kernel is not running: F6 starts a new one");
		return;
	}
	enqueue(ui, i);
	run_next(ui);
	if (how == NB_RUN_NEXT) {
		if (i + 1 >= v->nb.ncells) {	/* the last one: a new cell to write the next in */
			notebook_insert(&v->nb, i + 1, "code", "");
			ui_nbview_select(ui, i + 1);
			ui_editor_load(ui, "");
			v->editing = 1;
		} else {
			ui_nbview_select(ui, i + 1);
		}
	} else if (how == NB_RUN_INSERT) {
		notebook_insert(&v->nb, i + 1, "code", "");
		ui_nbview_select(ui, i + 1);
		ui_editor_load(ui, "");
		v->editing = 1;
	}
	ui_nbview_show_sel(ui);
}

void ui_nbview_run_range(struct ui *ui, size_t from, size_t to)
{
	struct nbview *v = ui->nbv;

	if (v->editing)
		ui_nbview_leave_edit(ui);
	for (size_t i = from; i < to && i < v->nb.ncells; i++)
		enqueue(ui, i);
	run_next(ui);
}

void ui_nbview_restarted(struct ui *ui)
{
	ui_nbview_drop_queue(ui);
	ui->kernel_cols = 0;
}

/* Check that notebook mode is on (commands that need it); -1 with `msg`. */
static int need_notebook(struct ui *ui, struct strbuf *msg)
{
	if (ui->nbv)
		return 0;
	strbuf_addstr(msg, "no notebook is open (':open FILE' opens one)");
	return -1;
}

/* :run-all */
int ui_nbcmd_run_all(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (need_notebook(ui, msg) < 0)
		return -1;
	ui_nbview_run_range(ui, 0, ui->nbv->nb.ncells);
	return 0;
}

/* :run-above: the cells before the selected one. */
int ui_nbcmd_run_above(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (need_notebook(ui, msg) < 0)
		return -1;
	ui_nbview_run_range(ui, 0, ui->nbv->sel);
	return 0;
}

/* :run-below: the selected cell and the ones after it. */
int ui_nbcmd_run_below(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (need_notebook(ui, msg) < 0)
		return -1;
	ui_nbview_run_range(ui, ui->nbv->sel, ui->nbv->nb.ncells);
	return 0;
}

/* :restart-run-all */
int ui_nbcmd_restart_run_all(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (need_notebook(ui, msg) < 0)
		return -1;
	ui_restart_kernel(ui);
	if (ui_session_usable(ui))
		ui_nbview_run_range(ui, 0, ui->nbv->nb.ncells);
	return 0;
}

/* :clear-outputs: every cell's outputs and counts (the notebook, not the kernel). */
int ui_nbcmd_clear_outputs(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (need_notebook(ui, msg) < 0)
		return -1;
	for (size_t i = 0; i < ui->nbv->nb.ncells; i++)
		if (!ui->nbv->nb.cells[i]->req)
			notebook_clear_outputs(&ui->nbv->nb, i);
	strbuf_addstr(msg, "outputs cleared");
	return 0;
}

/* :write [FILE] (:w, :w!): save the notebook. */
int ui_nbcmd_write(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	if (need_notebook(ui, msg) < 0)
		return -1;
	return ui_nbview_save(ui, argc > 1 ? argv[1] : NULL, ui->bang, msg);
}

/* :open FILE: a notebook (.ipynb, or a percent .py) in place of the console or another. */
int ui_nbcmd_open(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	int rc;

	(void)argc;
	if (ui->nbv && ui->nbv->nb.dirty && !ui->bang) {
		strbuf_addstr(msg, "this notebook has unsaved changes: ':w' saves them, ':open! FILE' "
			      "drops them");
		return -1;
	}
	if (ui->nbv && ui_nbview_busy(ui)) {
		strbuf_addstr(msg, "cells are running: interrupt them first");
		return -1;
	}
	if (ui->nbv && ui->bang)
		notebook_discard_recovery(&ui->nbv->nb);
	rc = ui_nbview_open(ui, argv[1], SIZE_MAX, msg);
	if (rc < 0)
		return -1;
	if (rc == 1)
		strbuf_addf(msg, "new notebook '%s' (made when saved)", argv[1]);
	else
		strbuf_addf(msg, "opened %zu cells from '%s'", ui->nbv->nb.ncells, argv[1]);
	ui_kernel_set_width(ui);
	return 0;
}
