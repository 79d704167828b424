/*
 * Notebook mode's keys, in Jupyter's two modes so that habits carry over. Command mode: move
 * (Up/Down, j/k), edit (Enter), insert (a/b), delete (d d), undo a delete (z), change the type
 * (m/y/r), copy/cut/paste (c/x/v/V), move cells (Shift-Up/Down, K/J), hide outputs (o),
 * restart (0 0), interrupt (i i), find (/, n, N). Edit mode: the editor's keys on the cell,
 * Esc back. In both: Shift-Enter (F5, Ctrl-R) runs and moves on, Ctrl-Enter (F7) runs in
 * place, Alt-Enter runs and inserts a cell below, Ctrl-S saves. Terminals that send
 * Shift-Enter and Ctrl-Enter as Enter have the F-keys and Ctrl-R.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

/* Start editing the selected cell, the cursor at the end (or at the start). */
static void enter_edit(struct ui *ui, int at_start)
{
	struct nbview *v = ui->nbv;

	edbuf_set(&ui->ed, v->nb.cells[v->sel]->source);
	if (at_start)
		ui->ed.cur = 0;
	v->editing = 1;
	v->nb.cells[v->sel]->rows_width = 0;
	nbview_show_sel(ui);
}

void nbview_leave_edit(struct ui *ui)
{
	struct nbview *v = ui->nbv;

	if (!v->editing)
		return;
	if (v->sel < v->nb.ncells) {
		notebook_set_source(&v->nb, v->sel, ui->ed.text.buf);
		v->nb.cells[v->sel]->rows_width = 0;
	}
	v->editing = 0;
	if (ui->ov == OV_MENU) {
		menu_free(ui);
		overlay_pop(ui);
	}
}

void nbview_find_next(struct ui *ui, int dir)
{
	struct nbview *v = ui->nbv;
	long i;

	if (!v->find || !*v->find) {
		ui_message(ui, "nothing to find: '/' asks what");
		return;
	}
	i = notebook_find(&v->nb, v->sel, dir, v->find);
	if (i < 0) {
		ui_message(ui, "not found: %s", v->find);
		return;
	}
	if ((dir > 0 && (size_t)i <= v->sel) || (dir < 0 && (size_t)i >= v->sel))
		ui_message(ui, "search went round: %s", v->find);
	nbview_select(ui, (size_t)i);
}

/* Insert a code cell at `at` and select it. */
static void insert_cell(struct ui *ui, size_t at)
{
	notebook_insert(&ui->nbv->nb, at, "code", "");
	nbview_select(ui, at);
}

/* Two-key commands (d d, 0 0, i i): the first key waits; 1 when `ch` completed one. */
static int second_key(struct ui *ui, wint_t ch)
{
	struct nbview *v = ui->nbv;
	wint_t first = v->prefix;

	v->prefix = 0;
	if (first == ch && ch == 'd') {
		nbview_images_drop(ui, v->nb.cells[v->sel]->view);
		notebook_delete(&v->nb, v->sel);
		ui_message(ui, "cell deleted (z brings it back)");
		nbview_select(ui, v->sel);
		return 1;
	}
	if (first == ch && ch == '0') {
		restart_kernel(ui);
		return 1;
	}
	if (first == ch && ch == 'i') {
		if (ui_cell_running(ui))
			session_interrupt(ui->s);
		else
			ui_message(ui, "no cell is running");
		return 1;
	}
	if (ch == 'd' || ch == '0' || ch == 'i') {
		v->prefix = ch;
		return 1;
	}
	return 0;
}

/* Command mode's keys. */
static int command_key(struct ui *ui, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	struct nb_cell *c = v->nb.cells[v->sel];
	int page = ui->panes[P_NOTEBOOK].h > 3 ? ui->panes[P_NOTEBOOK].h - 2 : 1;
	long at;

	if (is_key) {
		v->prefix = 0;
		switch (ch) {
		case KEY_UP: nbview_select(ui, v->sel ? v->sel - 1 : 0); break;
		case KEY_DOWN: nbview_select(ui, v->sel + 1); break;
		case KEY_HOME: nbview_select(ui, 0); break;
		case KEY_END: nbview_select(ui, v->nb.ncells - 1); break;
		case KEY_SR: nbview_select(ui, notebook_move(&v->nb, v->sel, -1)); break;
		case KEY_SF: nbview_select(ui, notebook_move(&v->nb, v->sel, +1)); break;
		case KEY_NPAGE:
		case KEY_PPAGE:
			nbview_scroll(ui, ch == KEY_NPAGE ? page : -page);
			/* the selection follows to the first cell that starts in view */
			v->sel = v->top + (v->top_row > 0 && v->top + 1 < v->nb.ncells);
			break;
		case KEY_ENTER: enter_edit(ui, 0); break;
		case KEYS_PASTE:	/* text pasted in command mode: a new cell of it below */
			nbview_select(ui, notebook_insert(&v->nb, v->sel + 1, "code", ui->paste));
			break;
		default: return 0;
		}
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (second_key(ui, ch))
		return PANE_HANDLED | PANE_REDRAW;
	switch (ch) {
	case 'k': nbview_select(ui, v->sel ? v->sel - 1 : 0); break;
	case 'j': nbview_select(ui, v->sel + 1); break;
	case 'K': nbview_select(ui, notebook_move(&v->nb, v->sel, -1)); break;
	case 'J': nbview_select(ui, notebook_move(&v->nb, v->sel, +1)); break;
	case '\r': enter_edit(ui, 0); break;
	case 'a': insert_cell(ui, v->sel); break;
	case 'b': insert_cell(ui, v->sel + 1); break;
	case 'z':
		at = notebook_undelete(&v->nb);
		if (at < 0)
			ui_message(ui, "no deleted cell to bring back");
		else
			nbview_select(ui, (size_t)at);
		break;
	case 'm': notebook_set_type(&v->nb, v->sel, "markdown"); break;
	case 'y': notebook_set_type(&v->nb, v->sel, "code"); break;
	case 'r': notebook_set_type(&v->nb, v->sel, "raw"); break;
	case 'c':
		notebook_copy(&v->nb, v->sel, 0);
		ui_message(ui, "cell copied (v pastes it below, V above)");
		break;
	case 'x':
		nbview_images_drop(ui, c->view);
		notebook_copy(&v->nb, v->sel, 1);
		nbview_select(ui, v->sel);
		break;
	case 'v':
		if (notebook_paste(&v->nb, v->sel + 1))
			nbview_select(ui, v->sel + 1);
		else
			ui_message(ui, "nothing to paste (c copies a cell, x cuts it)");
		break;
	case 'V':
		if (!notebook_paste(&v->nb, v->sel))
			ui_message(ui, "nothing to paste (c copies a cell, x cuts it)");
		break;
	case 'o':
		c->collapsed = !c->collapsed;
		c->rows_width = 0;
		break;
	case '/':
		strbuf_reset(&ui->line);
		overlay_push(ui, OV_FIND);
		break;
	case 'n': nbview_find_next(ui, +1); break;
	case 'N': nbview_find_next(ui, -1); break;
	case ':':
		strbuf_reset(&ui->line);
		overlay_push(ui, OV_PROMPT);
		break;
	case 's': {
		struct strbuf msg = STRBUF_INIT;
		nbview_save(ui, NULL, 0, &msg);
		ui_message(ui, "%s", msg.buf);
		strbuf_release(&msg);
		break;
	}
	case 'h': ui_help(ui); break;
	case 27:	/* Esc: the find marks go */
		free(v->find);
		v->find = NULL;
		for (size_t i = 0; i < v->nb.ncells; i++)
			v->nb.cells[i]->rows_width = 0;
		break;
	default:
		return 0;
	}
	return PANE_HANDLED | PANE_REDRAW;
}

/* Edit mode's keys: the editor's, but Enter is a new line and Esc leaves. */
static int edit_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	int code = !strcmp(notebook_cell_type(v->nb.cells[v->sel]), "code"), rc;

	if (!is_key && ch == 27 && !ui->key_mods) {
		nbview_leave_edit(ui);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if ((!is_key && (ch == '\r' || ch == '\n')) || (is_key && ch == KEY_ENTER)) {
		edbuf_newline(&ui->ed, code);
		rc = PANE_HANDLED | PANE_REDRAW;
	} else if (is_key && ch == KEY_UP && edbuf_line(&ui->ed) == 0 && v->sel > 0) {
		nbview_leave_edit(ui);	/* off the top: the cell above, at its end */
		nbview_select(ui, v->sel - 1);
		enter_edit(ui, 0);
		return PANE_HANDLED | PANE_REDRAW;
	} else if (is_key && ch == KEY_DOWN && edbuf_line(&ui->ed) + 1 >= edbuf_lines(&ui->ed) &&
		   v->sel + 1 < v->nb.ncells) {
		nbview_leave_edit(ui);
		nbview_select(ui, v->sel + 1);
		enter_edit(ui, 1);
		return PANE_HANDLED | PANE_REDRAW;
	} else if (is_key && (ch == KEY_UP || ch == KEY_DOWN)) {
		if (ch == KEY_UP)
			edbuf_up(&ui->ed);
		else
			edbuf_down(&ui->ed);
		rc = PANE_HANDLED | PANE_REDRAW;
	} else {
		rc = editor_key(ui, p, is_key, ch);
	}
	/* The cell holds what is typed, so that autosave and the view see it. */
	notebook_set_source(&v->nb, v->sel, ui->ed.text.buf);
	nbview_show_sel(ui);
	return rc;
}

int nbview_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	unsigned mods = ui->key_mods;

	if (!v || !v->nb.ncells)
		return 0;
	/* Running, in both modes. */
	if ((!is_key && ch == '\r' && (mods & KEYMOD_SHIFT)) || (is_key && ch == KEY_F(5)) ||
	    (!is_key && ch == CTRL('r'))) {
		nbview_run(ui, NB_RUN_NEXT);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if ((!is_key && ch == '\r' && (mods & KEYMOD_CTRL)) || (is_key && ch == KEY_F(7))) {
		nbview_run(ui, NB_RUN_STAY);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && ch == '\r' && (mods & KEYMOD_ALT)) {
		nbview_run(ui, NB_RUN_INSERT);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && ch == CTRL('s')) {
		struct strbuf msg = STRBUF_INIT;
		nbview_save(ui, NULL, 0, &msg);
		ui_message(ui, "%s", msg.buf);
		strbuf_release(&msg);
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && ch == CTRL('c')) {
		if (ui_cell_running(ui))
			session_interrupt(ui->s);
		else if (v->editing)
			ui_message(ui, "no cell is running (Esc leaves edit mode)");
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (v->editing)
		return edit_key(ui, p, is_key, ch);
	return command_key(ui, is_key, ch);
}
