/*
 * cellbox's own commands (Ctrl-O, F2): a table of designated initialisers in the style of
 * tmux's cmd_entry, each with its usage, help line and how many words it takes; the handler
 * never counts its arguments. The help pager (F1) is made from this table and the key table
 * (keytab.c), and so is the manual page's list (ui_help_rows()).
 */
#include "ui.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellfile.h"
#include "files.h"

struct tui_command {
	const char *name;	/* first: table_find() looks names up */
	const char *usage;
	const char *help;
	int min, max;		/* the words it takes after its name (tmux's args counts) */
	/* Run with argv[0] the name: PANE_* flags (0: nothing special), or -1 with `msg`. */
	int (*fn)(struct ui *ui, int argc, char **argv, struct strbuf *msg);
};

static int tc_restart(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_interrupt(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_clear(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_clear_plots(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_save(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_load(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_copy_in(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_copy_out(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_theme(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_side(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_vars(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_help(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_redraw(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_save_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_quit(struct ui *ui, int argc, char **argv, struct strbuf *msg);
static int tc_output(struct ui *ui, int argc, char **argv, struct strbuf *msg);

static const struct tui_command tui_commands[] = {
	{ .name = "restart", .usage = "restart", .fn = tc_restart,
	  .help = "kill the kernel and start a fresh one (F6)" },
	{ .name = "interrupt", .usage = "interrupt", .fn = tc_interrupt,
	  .help = "interrupt the running cell (Ctrl-C)" },
	{ .name = "clear", .usage = "clear", .fn = tc_clear,
	  .help = "clear the output pane (the kernel and history stay)" },
	{ .name = "clear-plots", .usage = "clear-plots", .fn = tc_clear_plots,
	  .help = "forget the kernel's captured plots" },
	{ .name = "save", .usage = "save [FILE.py|FILE.ipynb]", .fn = tc_save, .max = 1,
	  .help = "save this session's cells as a percent-format .py or an .ipynb (in a "
		  "notebook: the notebook, as 'write')" },
	{ .name = "write", .usage = "write [FILE] (:w, :w!)", .fn = ui_nbcmd_write, .max = 1,
	  .help = "save the notebook (Ctrl-S) in its format; FILE: save as; '!': over a file "
		  "changed on disk" },
	{ .name = "open", .usage = "open FILE (:open!)", .fn = ui_nbcmd_open, .min = 1, .max = 1,
	  .help = "open FILE.ipynb or a percent FILE.py as a notebook (a new file is made when "
		  "saved); '!': drop unsaved changes" },
	{ .name = "run-all", .usage = "run-all", .fn = ui_nbcmd_run_all,
	  .help = "notebook: run every code cell, in order" },
	{ .name = "run-above", .usage = "run-above", .fn = ui_nbcmd_run_above,
	  .help = "notebook: run the cells above the selected one" },
	{ .name = "run-below", .usage = "run-below", .fn = ui_nbcmd_run_below,
	  .help = "notebook: run the selected cell and those below it" },
	{ .name = "restart-run-all", .usage = "restart-run-all", .fn = ui_nbcmd_restart_run_all,
	  .help = "notebook: restart the kernel, then run every cell" },
	{ .name = "clear-outputs", .usage = "clear-outputs", .fn = ui_nbcmd_clear_outputs,
	  .help = "notebook: clear every cell's outputs and counts" },
	{ .name = "load", .usage = "load FILE [run]", .fn = tc_load, .min = 1, .max = 2,
	  .help = "load a .py (percent cells), an .ipynb or a recorded session (its id) into "
		  "the editor, or run all its cells" },
	{ .name = "copy-in", .usage = "copy-in SRC [DST]", .fn = tc_copy_in, .min = 1, .max = 2,
	  .help = "copy a host file into the sandbox (DST relative to the kernel's directory)" },
	{ .name = "copy-out", .usage = "copy-out SRC [DST]", .fn = tc_copy_out, .min = 1, .max = 2,
	  .help = "copy a file of the sandbox to the host" },
	{ .name = "theme", .usage = "theme [NAME]", .fn = tc_theme, .max = 1,
	  .help = "switch theme (dark, light, high-contrast, monochrome); none: list them" },
	{ .name = "side", .usage = "side [history|plots|vars]", .fn = tc_side, .max = 1,
	  .help = "show or hide the side pane (F3); a tab: show that one (F8: the next)" },
	{ .name = "vars", .usage = "vars [NAME]", .fn = tc_vars, .max = 1,
	  .help = "the variables: names, types, shapes, sizes (Up/Down, Enter: the value, Esc: "
		  "back); NAME: its value in the pager" },
	{ .name = "redraw", .usage = "redraw [N [scroll]]", .fn = tc_redraw, .max = 2,
	  .help = "repaint the whole screen (Ctrl-L); N times: report the time per frame; "
		  "scroll: N frames scrolling the output one row each" },
	{ .name = "plot", .usage = "plot [N]", .fn = tc_plot, .max = 1,
	  .help = "show plot N (else the newest) on the whole screen (F4)" },
	{ .name = "save-plot", .usage = "save-plot N FILE", .fn = tc_save_plot, .min = 2, .max = 2,
	  .help = "copy plot N's PNG to FILE (s in the plot view)" },
	{ .name = "output", .usage = "output [N]", .fn = tc_output, .max = 1,
	  .help = "the whole output of In [N] (else of the last cell cut at the pane's 256 KiB, "
		  "else the last cell) in a pager, read from the history store (F9)" },
	{ .name = "help", .usage = "help", .fn = tc_help,
	  .help = "keys and commands (F1)" },
	{ .name = "stats", .usage = "stats", .fn = ui_nbcmd_stats,
	  .help = "how long the first frame took, the cells, the memory in use" },
	{ .name = "detach", .usage = "detach", .fn = ui_detach,
	  .help = "leave the session running, an unnamed one given a name (cellbox attach "
		  "NAME comes back to it)" },
	{ .name = "fork", .usage = "fork [NAME]", .fn = ui_fork, .max = 1,
	  .help = "copy a named session's kernel (its variables, imports, memory) into a new "
		  "named session NAME (else a generated name), independent from then on" },
	{ .name = "context", .usage = "context [NAME|new [python|r]|rm NAME]", .fn = ui_context,
	  .max = 2, .help = "another kernel in this sandbox (its files shared, its variables its "
		  "own): new starts one and goes there, NAME goes to one (main: the session's), "
		  "rm ends one; none: list them" },
	{ .name = "quit", .usage = "quit (:q, :q!)", .fn = tc_quit,
	  .help = "leave cellbox (Ctrl-Q; Ctrl-D on an empty cell); '!': without saving" },
};

/*
 * :output [N]: cell In [N] of the output pane, else the newest one whose output was cut,
 * else the newest one, in the output pager (ui_outpager.c).
 */
static int tc_output(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	const struct out_cell *c = NULL;
	long n = -1;
	char *end = NULL;

	if (argc > 1)
		n = strtol(argv[1], &end, 10);
	if (argc > 1 && (*end || end == argv[1] || n < 1 || n > 1000000000L)) {
		strbuf_addf(msg, "output: '%s' is not a cell number", argv[1]);
		return -1;
	}
	for (size_t i = ui->out.ncells; i-- > 0 && !c;) {
		const struct out_cell *k = ui->out.cells[i];
		if (n > 0 ? k->count == n : k->dropped > 0)
			c = k;
	}
	if (!c && n < 0 && ui->out.ncells)
		c = ui->out.cells[ui->out.ncells - 1];
	if (!c) {
		if (n > 0)
			strbuf_addf(msg, "output: no cell In [%ld] in the output pane", n);
		else
			strbuf_addstr(msg, "output: no cell has run yet");
		return -1;
	}
	return ui_outpager_open(ui, c, msg);
}

/* :restart */
static int tc_restart(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	ui_restart_kernel(ui);
	return 0;
}

/* :interrupt */
static int tc_interrupt(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (!ui_cell_running(ui)) {
		strbuf_addstr(msg, "no cell is running");
		return -1;
	}
	session_interrupt(ui->s);
	return 0;
}

/* :clear: drop the finished cells from the output pane. */
static int tc_clear(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	if (ui->nbv)		/* a notebook has no output pane: its outputs */
		return ui_nbcmd_clear_outputs(ui, argc, argv, msg);
	/* Running cells stay, so their events still have somewhere to go. */
	for (size_t i = 0; i < ui->out.ncells;) {
		struct out_cell *c = ui->out.cells[i];
		if (c->done) {
			struct outmodel one = { .cells = &c, .ncells = 1 };
			outmodel_clear(&one);
			memmove(ui->out.cells + i, ui->out.cells + i + 1,
				(ui->out.ncells - i - 1) * sizeof(*ui->out.cells));
			ui->out.ncells--;
		} else {
			i++;
		}
	}
	ui->outpane.scroll = 0;
	return 0;
}

/* :clear-plots */
static int tc_clear_plots(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv;
	if (!session_request(ui->s, "clear_plots", NULL, ui_on_ignore, NULL, msg))
		return -1;
	ui_plots_forget(ui);
	return 0;
}

/* :save FILE: this session's cells (.ipynb with their outputs, from the history store). */
static int tc_save(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	cJSON *nb;
	size_t n = 0;
	int rc;

	if (ui->nbv)
		return ui_nbview_save(ui, argc > 1 ? argv[1] : NULL, ui->bang, msg);
	if (argc < 2) {
		strbuf_addstr(msg, "save FILE.py or FILE.ipynb (the console has no file of its own)");
		return -1;
	}
	if (ui->rec.h) {
		nb = history_session_notebook(history_session_id(ui->rec.h), msg);
		if (!nb)
			return -1;
		cellfile_set_kernel(nb, session_kernel_info(ui->s));
		rc = cellfile_save(nb, argv[1], msg);
		cJSON_Delete(nb);
		if (rc == 0)
			strbuf_addf(msg, "saved this session to '%s'", argv[1]);
		return rc;
	}
	/* Not recording (history-size = 0): the code of the output pane's cells. */
	nb = cellfile_new_notebook();
	cellfile_set_kernel(nb, session_kernel_info(ui->s));
	for (size_t i = 0; i < ui->out.ncells; i++)
		if (ui->out.cells[i]->code && ++n)
			cellfile_add_cell(nb, "code", ui->out.cells[i]->code);
	rc = cellfile_save(nb, argv[1], msg);
	cJSON_Delete(nb);
	if (rc == 0)
		strbuf_addf(msg, "saved %zu cells to '%s'", n, argv[1]);
	return rc;
}

/* Copy a file between the host and the sandbox, in either direction. */
static int copy_file_cmd(struct ui *ui, int in, int argc, char **argv, struct strbuf *msg)
{
	const char *dst = argc == 3 ? argv[2] : NULL;
	int rc;

	/* Waiting behind a cell of the user's would hang the screen (cellbox's own are quick). */
	if (ui_cell_running(ui) || !ui_session_usable(ui)) {
		strbuf_addstr(msg, ui_cell_running(ui) ? "the kernel is busy: copy when it is idle"
						: "the kernel is not running: F6 starts a new one");
		return -1;
	}
	rc = in ? files_copy_in(ui->s, argv[1], dst, msg) : files_copy_out(ui->s, argv[1], dst, msg);
	if (rc == 0)
		strbuf_addf(msg, "copied '%s' %s the sandbox", argv[1], in ? "into" : "out of");
	return rc;
}

/* :copy-in SRC [DST]: a host file into the sandbox. */
static int tc_copy_in(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	return copy_file_cmd(ui, 1, argc, argv, msg);
}

/* :copy-out SRC [DST]: a sandbox file to the host. */
static int tc_copy_out(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	return copy_file_cmd(ui, 0, argc, argv, msg);
}

/* :load FILE [run]: the code cells of a .py or .ipynb into the editor, or run them all. */
static int tc_load(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf all = STRBUF_INIT;
	const cJSON *cell;
	cJSON *nb;
	size_t n = 0;

	if (argc == 3 && strcmp(argv[2], "run")) {
		strbuf_addstr(msg, "usage: load FILE [run]");
		return -1;
	}
	if (ui->nbv) {
		strbuf_addstr(msg, "this loads into the console's editor: in a notebook, ':open FILE' "
			      "opens another");
		return -1;
	}
	nb = history_load(argv[1], msg);
	if (!nb)
		return -1;
	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		char *code;

		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "cell_type"))
			   ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "cell_type"))
			   : "", "code"))
			continue;
		code = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
		if (argc == 3) {
			edbuf_set(&ui->editor.ed, code);
			ui_run_cell(ui);
		} else {
			strbuf_addf(&all, "%s%s", n ? "\n\n" : "", code);
		}
		free(code);
		n++;
	}
	if (argc == 3) {
		strbuf_addf(msg, "running %zu cells from '%s'", n, argv[1]);
	} else {
		edbuf_set(&ui->editor.ed, all.buf);
		strbuf_addf(msg, "loaded %zu cells from '%s' into the editor", n, argv[1]);
	}
	strbuf_release(&all);
	cJSON_Delete(nb);
	return 0;
}

/* :theme [NAME] */
static int tc_theme(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	if (argc == 1) {
		strbuf_addf(msg, "theme %s; others: dark light high-contrast monochrome",
			    ui->theme.name);
		return 0;
	}
	if (ui_set_theme(ui, argv[1], msg) < 0)
		return -1;
	strbuf_addf(msg, "theme %s", ui->theme.name);
	return 0;
}

/* :side [TAB] */
static int tc_side(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	static const char *const tabs[SIDE_TABS] = { "history", "plots", "vars" };

	if (argc == 1) {
		ui_side_show(ui, !ui->panes[P_SIDE].visible);
		return 0;
	}
	for (int t = 0; t < SIDE_TABS; t++)
		if (!strcmp(argv[1], tabs[t])) {
			ui_side_tab(ui, (enum side_tab)t);
			return 0;
		}
	strbuf_addf(msg, "no tab '%s' (history, plots, vars)", argv[1]);
	return -1;
}

/* :vars [NAME]: the variables tab, or NAME's value. */
static int tc_vars(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct side_pane *sp = &ui->side;

	ui_side_tab(ui, SIDE_VARS);
	if (argc == 1)
		return 0;
	for (size_t i = 0; i < sp->vars.n; i++)
		if (sp->vars.v[i].raw && !strcmp(sp->vars.v[i].raw, argv[1])) {
			sp->var_sel = i;
			ui_vars_show_value(ui);
			return 0;
		}
	strbuf_addf(msg, "no variable '%s' in the listing", argv[1]);
	return -1;
}

/* Compare two doubles for qsort. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The position in ui->plots of kernel plot `arg` (NULL: the newest); -1 with a message. */
static long plot_arg(struct ui *ui, const char *arg, struct strbuf *msg)
{
	char *end;
	long n;

	if (!ui->nplots) {
		strbuf_addstr(msg, "no plots yet");
		return -1;
	}
	if (!arg)
		return (long)ui->nplots - 1;
	n = strtol(arg, &end, 10);
	for (size_t i = 0; !*end && i < ui->nplots; i++)
		if (ui->plots[i].index == n)
			return (long)i;
	strbuf_addf(msg, "no plot '%s'", arg);
	return -1;
}

/* :plot [N]: the plot viewer. */
static int tc_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	long i = plot_arg(ui, argc > 1 ? argv[1] : NULL, msg);

	if (i < 0)
		return -1;
	ui->side.plot_sel = (size_t)i;
	ui_overlay_push(ui, OV_PLOT);
	return 0;
}

/* :save-plot N FILE: copy a plot's PNG. */
static int tc_save_plot(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	long i = plot_arg(ui, argv[1], msg);

	(void)argc;
	if (i < 0)
		return -1;
	if (!ui->plots[i].rel) {
		strbuf_addf(msg, "cannot copy plot %s to '%s': no file", argv[1], argv[2]);
		return -1;
	}
	strbuf_addf(msg, "cannot copy plot %s to '%s': ", argv[1], argv[2]);
	if (outputs_copy_file(ui->plots[i].dir, ui->plots[i].rel, argv[2], msg) < 0)
		return -1;
	strbuf_reset(msg);
	strbuf_addf(msg, "plot %d saved to %s", ui->plots[i].index, argv[2]);
	return 0;
}

/* :redraw in a notebook: N frames of its cells laid out again, or scrolling one row each. */
static int nb_redraw(struct ui *ui, int n, int scroll, struct strbuf *msg)
{
	struct nbview *v = ui->nbv;
	size_t top = v->top, sel = v->sel, rows = 0;
	int top_row = v->top_row;
	double *t = xmalloc((size_t)n * sizeof(*t));

	if (scroll)
		v->top = 0, v->top_row = 0;
	for (int i = 0; i < n; i++) {
		double t0 = clock_now();
		if (scroll) {	/* one row down (back to the top at the end) */
			size_t was = v->top;
			int was_row = v->top_row;
			ui_nbview_scroll(ui, 1);
			if (v->top == was && v->top_row == was_row)
				v->top = 0, v->top_row = 0;
			else
				rows++;
			v->sel = v->top;	/* the selection goes along, as a user's would */
		} else {
			clearok(curscr, TRUE);
			for (size_t k = 0; k < v->nb.ncells; k++)
				v->nb.cells[k]->rows_width = 0;	/* the cells that show, again */
		}
		ui_draw(ui);
		t[i] = clock_now() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	strbuf_addf(msg, "redraw: %d %s frames%s, median %.3f ms, p90 %.3f ms", n,
		    scroll ? "scrolling" : "full", scroll ? " of the notebook" : "",
		    t[n / 2] * 1e3, t[n * 9 / 10] * 1e3);
	if (scroll)
		strbuf_addf(msg, ", %zu rows", rows);
	free(t);
	v->top = top, v->top_row = top_row, v->sel = sel;
	clearok(curscr, TRUE);
	return 0;
}

/* :redraw [N [scroll]]: repaint everything, N times with the time per frame. */
static int tc_redraw(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	int n = argc > 1 ? atoi(argv[1]) : 1, scroll = argc > 2 && !strcmp(argv[2], "scroll");
	int max_scroll = 0, follow = ui->outpane.follow, was = ui->outpane.scroll;
	size_t bytes = ui->gfx.gbytes;
	double *t;

	if (n < 1 || n > 100000 || (argc > 2 && !scroll)) {
		strbuf_addstr(msg, "usage: redraw [N [scroll]] (N from 1 to 100000)");
		return -1;
	}
	if (argc == 1) {	/* Ctrl-L: the next frame repaints the whole screen */
		clearok(curscr, TRUE);
		return 0;
	}
	if (ui->nbv)
		return nb_redraw(ui, n, scroll, msg);
	if (scroll) {	/* from the top of the output down, one row a frame, again and again */
		ui->outpane.follow = 0;
		ui->outpane.scroll = INT_MAX / 2;
		ui_draw(ui);
		max_scroll = ui->outpane.scroll;
		bytes = ui->gfx.gbytes;
	}
	t = xmalloc((size_t)n * sizeof(*t));
	for (int i = 0; i < n; i++) {
		double t0 = clock_now();
		if (scroll) {
			ui->outpane.scroll = max_scroll ? max_scroll - i % (max_scroll + 1) : 0;
		} else {
			clearok(curscr, TRUE);
			for (size_t k = 0; k < ui->out.ncells; k++)
				ui->out.cells[k]->rows_width = 0;	/* lay out every cell again */
		}
		ui_draw(ui);
		t[i] = clock_now() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	if (scroll)
		strbuf_addf(msg, "redraw: %d scrolling frames, %d rows, median %.3f ms, "
			    "p90 %.3f ms, %zu B/frame", n, max_scroll,
			    t[n / 2] * 1e3, t[n * 9 / 10] * 1e3, (ui->gfx.gbytes - bytes) / (size_t)n);
	else if (n > 1)
		strbuf_addf(msg, "redraw: %d full frames, median %.3f ms, p90 %.3f ms", n,
			    t[n / 2] * 1e3, t[n * 9 / 10] * 1e3);
	free(t);
	if (scroll) {
		ui->outpane.follow = follow;
		ui->outpane.scroll = was;
	}
	clearok(curscr, TRUE);
	return 0;
}

/* A line of the notebook's keys in the help pager (a heading when `keys` is ""). */
static void help_nb_row(void *data, const char *keys, const char *what)
{
	if (*keys)
		strbuf_addf(data, "  %-24s %s\n", keys, what);
	else
		strbuf_addf(data, "\n%s\n\n", what);
}

/* A line of the console's keys in the help pager. */
static void help_row(void *data, const char *keys, const char *what)
{
	strbuf_addf(data, "  %-20s %s\n", keys, what);
}

/* :help: keys and commands in the pager. */
static int tc_help(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf sb = STRBUF_INIT;
	int wide = 0;

	(void)argc, (void)argv, (void)msg;
	if (ui->nbv) {
		strbuf_addf(&sb, "Notebook %s\n\nSelect a cell with Up/Down, press Enter to edit "
			    "it, Esc when done, then Shift-Enter\n(or F5, or Ctrl-R: terminals often "
			    "send Shift-Enter as Enter) to run it. Ctrl-S saves.\n"
			    "A dot beside a cell: its source changed since it ran. [+]: unsaved "
			    "changes.\n", ui->nbv->nb.path);
		keytab_rows(1, help_nb_row, &sb);
		strbuf_addstr(&sb, "\nThe console (without a notebook: ':open FILE' opens one)\n\n");
	} else {
		strbuf_addstr(&sb, "Keys (':open FILE.ipynb' edits a notebook; F1 there lists its "
			      "keys)\n\n");
	}
	keytab_rows(0, help_row, &sb);
	if (ui->cfg->editing_mode == CONFIG_EDITING_VI) {
		strbuf_addstr(&sb, "\nvi mode's normal mode (editing-mode = vi; Esc from insert mode)"
			      "\n\n");
		vi_rows(help_row, &sb);
	}
	strbuf_addstr(&sb, "\nCommands (Ctrl-O, then the command and Enter)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++)
		if ((int)strlen(tui_commands[i].usage) > wide)
			wide = (int)strlen(tui_commands[i].usage);
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++)
		strbuf_addf(&sb, "  %-*s  %s\n", wide, tui_commands[i].usage, tui_commands[i].help);
	strbuf_addstr(&sb, "\nIPython magics (%timeit, %%bash ...) and !shell lines go to the "
			   "kernel as they are.\n");
	ui_pager_open(ui, "cellbox help", sb.buf);
	strbuf_release(&sb);
	return 0;
}

/* The help's rows, for the manual page: the console's keys, notebook mode's, the commands. */
void ui_help_rows(void (*row)(void *data, const char *left, const char *right), void *data)
{
	row(data, "", "The console: an output pane, an editor for the next cell");
	keytab_rows(0, row, data);
	row(data, "", "Notebook mode (cellbox FILE.ipynb, cellbox FILE.py, :open FILE)");
	keytab_rows(1, row, data);
	row(data, "", "vi mode's normal mode (editing-mode = vi; Esc from insert mode)");
	vi_rows(row, data);
	row(data, "", "Commands (Ctrl-O, F2, or ':' in notebook command mode)");
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++)
		row(data, tui_commands[i].usage, tui_commands[i].help);
}

/*
 * Whether to leave now: with a cell running (it would be lost) or unsaved changes, the first
 * ask only says so, the next one leaves; ':q!' leaves at once.
 */
int ui_may_quit(struct ui *ui)
{
	if (ui->bang) {
		if (ui->nbv)
			ui->nbv->quit_armed = 1;
		return 1;
	}
	/* A named session's cell runs on without us: nothing to confirm. */
	if (ui_cell_running(ui) && !ui->quit_running_armed && !session_named(ui->s)) {
		ui->quit_running_armed = 1;
		ui_message(ui, "a cell is running: Ctrl-Q again quits (:q! at once)");
		return 0;
	}
	return ui_nbview_may_quit(ui);
}

/* :quit */
static int tc_quit(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	(void)argc, (void)argv, (void)msg;
	return ui_may_quit(ui) ? PANE_QUIT : 0;
}

/* Whether `name` is one of the commands (exactly: a key names it as it is spelled). */
int ui_command_exists(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(tui_commands); i++)
		if (!strcmp(tui_commands[i].name, name))
			return 1;
	return 0;
}

/* Split a command line into words and run it; the command's PANE_* flags. */
int ui_run_command(struct ui *ui, const char *line)
{
	char *copy = xstrdup(line), *argv[8], *save = NULL;
	int argc = 0, i, flags = 0;
	struct strbuf msg = STRBUF_INIT;
	const struct tui_command *cmd = NULL;

	for (char *w = strtok_r(copy, " \t", &save); w && argc < 8; w = strtok_r(NULL, " \t", &save))
		argv[argc++] = w;
	if (!argc)
		goto out;
	/* ':w!', ':q!': the command, with a '!' for it to see */
	ui->bang = strlen(argv[0]) > 1 && argv[0][strlen(argv[0]) - 1] == '!';
	if (ui->bang)
		argv[0][strlen(argv[0]) - 1] = '\0';
	i = table_find(argv[0], tui_commands, ARRAY_SIZE(tui_commands), sizeof(tui_commands[0]),
		     "command", &msg);
	if (i < 0) {
		ui_message(ui, "%s (F1 lists them)", msg.buf);
		goto out;
	}
	cmd = &tui_commands[i];
	if (argc - 1 < cmd->min || argc - 1 > cmd->max)
		ui_message(ui, "usage: %s", cmd->usage);
	else if ((flags = cmd->fn(ui, argc, argv, &msg)) < 0)
		ui_message(ui, "%s: %s", cmd->name, msg.buf);
	else if (msg.len)
		ui_message(ui, "%s", msg.buf);
out:
	ui->bang = 0;
	strbuf_release(&msg);
	free(copy);
	return flags < 0 ? 0 : flags;
}
