/*
 * Notebook mode's keys, in Jupyter's two modes so that habits carry over. Command mode: move
 * (Up/Down, j/k), edit (Enter), insert (a/b), delete (d d), undo a delete (z), change the type
 * (m/y/r), copy/cut/paste (c/x/v/V), move cells (Shift-Up/Down, K/J), hide outputs (o),
 * restart (0 0), interrupt (i i), find (/, n, N). Edit mode: the editor's keys on the cell,
 * Esc back. In both: Shift-Enter (F5) runs and moves on, Ctrl-Enter (F7) runs in
 * place, Alt-Enter runs and inserts a cell below, Ctrl-S saves, Ctrl-R searches the history
 * (as in the console). Terminals that send Shift-Enter and Ctrl-Enter as Enter have the
 * F-keys. The keys are rows of the key table (keytab.c, modes KM_NB, KM_NB_COMMAND,
 * KM_NB_EDIT); what they do is here.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

/* Start editing the selected cell, the cursor at the end (or at the start). */
static void enter_edit(struct ui *ui, int at_start)
{
	struct nbview *v = ui->nbv;

	ui_editor_load(ui, v->nb.cells[v->sel]->source);	/* its own undo */
	if (at_start)
		ui->editor.ed.cur = 0;
	v->editing = 1;
	v->nb.cells[v->sel]->rows_width = 0;
	ui_nbview_show_sel(ui);
}

void ui_nbview_leave_edit(struct ui *ui)
{
	struct nbview *v = ui->nbv;

	if (!v->editing)
		return;
	if (v->sel < v->nb.ncells) {
		notebook_set_source(&v->nb, v->sel, ui->editor.ed.text.buf);
		v->nb.cells[v->sel]->rows_width = 0;
	}
	v->editing = 0;
	if (ui->ovl.ov == OV_MENU) {
		ui_menu_free(ui);
		ui_overlay_pop(ui);
	}
}

void ui_nbview_find_next(struct ui *ui, int dir)
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
	ui_nbview_select(ui, (size_t)i);
}

/* Insert a code cell at `at` and select it. */
static void insert_cell(struct ui *ui, size_t at)
{
	notebook_insert(&ui->nbv->nb, at, "code", "");
	ui_nbview_select(ui, at);
}

/* Move the cursor up (`dir` -1) or down in edit mode, into the next cell past the edge. */
static void edit_updown(struct ui *ui, int dir)
{
	struct nbview *v = ui->nbv;

	if (dir < 0 && edbuf_line(&ui->editor.ed) == 0 && v->sel > 0) {
		ui_nbview_leave_edit(ui);	/* off the top: the cell above, at its end */
		ui_nbview_select(ui, v->sel - 1);
		enter_edit(ui, 0);
	} else if (dir > 0 && edbuf_line(&ui->editor.ed) + 1 >= edbuf_lines(&ui->editor.ed) &&
		   v->sel + 1 < v->nb.ncells) {
		ui_nbview_leave_edit(ui);
		ui_nbview_select(ui, v->sel + 1);
		enter_edit(ui, 1);
	} else if (dir < 0) {
		edbuf_up(&ui->editor.ed);
	} else {
		edbuf_down(&ui->editor.ed);
	}
}

void ui_nbview_act(struct ui *ui, enum nb_act act)
{
	struct nbview *v = ui->nbv;
	struct nb_cell *c = v->nb.cells[v->sel];
	int page = ui->panes[P_NOTEBOOK].h > 3 ? ui->panes[P_NOTEBOOK].h - 2 : 1;
	long at;

	switch (act) {
	case NB_UP: ui_nbview_select(ui, v->sel ? v->sel - 1 : 0); break;
	case NB_DOWN: ui_nbview_select(ui, v->sel + 1); break;
	case NB_FIRST: ui_nbview_select(ui, 0); break;
	case NB_LAST: ui_nbview_select(ui, v->nb.ncells - 1); break;
	case NB_PAGE_UP:
	case NB_PAGE_DOWN:
		ui_nbview_scroll(ui, act == NB_PAGE_DOWN ? page : -page);
		/* the selection follows to the first cell that starts in view; the view stays */
		v->sel = v->top + (v->top_row > 0 && v->top + 1 < v->nb.ncells);
		v->follow = 0;
		break;
	case NB_EDIT: enter_edit(ui, 0); break;
	case NB_INSERT_ABOVE: insert_cell(ui, v->sel); break;
	case NB_INSERT_BELOW: insert_cell(ui, v->sel + 1); break;
	case NB_DELETE:
		ui_nbview_images_drop(ui, c->view);
		notebook_delete(&v->nb, v->sel);
		ui_message(ui, "cell deleted (z brings it back)");
		ui_nbview_select(ui, v->sel);
		break;
	case NB_UNDELETE:
		at = notebook_undelete(&v->nb);
		if (at < 0)
			ui_message(ui, "no deleted cell to bring back");
		else
			ui_nbview_select(ui, (size_t)at);
		break;
	case NB_MARKDOWN: notebook_set_type(&v->nb, v->sel, "markdown"); break;
	case NB_CODE: notebook_set_type(&v->nb, v->sel, "code"); break;
	case NB_RAW: notebook_set_type(&v->nb, v->sel, "raw"); break;
	case NB_COPY:
		notebook_copy(&v->nb, v->sel, 0);
		ui_message(ui, "cell copied (v pastes it below, V above)");
		break;
	case NB_CUT:
		ui_nbview_images_drop(ui, c->view);
		notebook_copy(&v->nb, v->sel, 1);
		ui_nbview_select(ui, v->sel);
		break;
	case NB_PASTE_BELOW:
		if (notebook_paste(&v->nb, v->sel + 1))
			ui_nbview_select(ui, v->sel + 1);
		else
			ui_message(ui, "nothing to paste (c copies a cell, x cuts it)");
		break;
	case NB_PASTE_ABOVE:
		if (!notebook_paste(&v->nb, v->sel))
			ui_message(ui, "nothing to paste (c copies a cell, x cuts it)");
		break;
	case NB_MOVE_UP: ui_nbview_select(ui, notebook_move(&v->nb, v->sel, -1)); break;
	case NB_MOVE_DOWN: ui_nbview_select(ui, notebook_move(&v->nb, v->sel, +1)); break;
	case NB_COLLAPSE:
		c->collapsed = !c->collapsed;
		c->rows_width = 0;
		break;
	case NB_FIND:
		strbuf_reset(&ui->ovl.line);
		ui_overlay_push(ui, OV_FIND);
		break;
	case NB_FIND_NEXT: ui_nbview_find_next(ui, +1); break;
	case NB_FIND_BACK: ui_nbview_find_next(ui, -1); break;
	case NB_FIND_CLEAR:	/* Esc: the find marks go */
		free(v->find);
		v->find = NULL;
		for (size_t i = 0; i < v->nb.ncells; i++)
			v->nb.cells[i]->rows_width = 0;
		break;
	case NB_LEAVE_EDIT: ui_nbview_leave_edit(ui); break;
	case NB_NEWLINE:
		edbuf_newline(&ui->editor.ed, !strcmp(notebook_cell_type(c), "code"));
		break;
	case NB_EDIT_UP: edit_updown(ui, -1); break;
	case NB_EDIT_DOWN: edit_updown(ui, +1); break;
	}
}

/* Command mode's keys: the table's, a key pressed twice (d d, 0 0, i i), a paste. */
static int command_key(struct ui *ui, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	const struct key_binding *kb = keytab_find(KM_NB_COMMAND, is_key, ch, ui->key_mods);
	wint_t first = v->prefix;

	v->prefix = 0;
	if (kb && kb->twice && (is_key || first != ch)) {
		v->prefix = ch;	/* the first of the two: wait for the second */
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (kb)
		return keytab_do(ui, kb);
	if (is_key && ch == KEYS_PASTE) {	/* text pasted in command mode: a new cell of it below */
		ui_nbview_select(ui, notebook_insert(&v->nb, v->sel + 1, "code", ui->paste));
		return PANE_HANDLED | PANE_REDRAW;
	}
	return 0;
}

/* Edit mode's keys: the table's (Enter is a new line, Esc leaves), then the editor's. */
static int edit_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	size_t sel = v->sel;
	int rc = keytab_run(ui, KM_NB_EDIT, is_key, ch);

	if (!rc)
		rc = ui_editor_key(ui, p, is_key, ch);
	else if (!v->editing || v->sel != sel)
		return rc;	/* left edit mode, or went on into another cell */
	/* The cell holds what is typed, so that autosave and the view see it. */
	notebook_set_source(&v->nb, v->sel, ui->editor.ed.text.buf);
	ui_nbview_show_sel(ui);
	return rc;
}

int ui_nbview_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	struct nbview *v = ui->nbv;
	int rc;

	if (!v || !v->nb.ncells)
		return 0;
	/* Running, saving, interrupting: in both modes. */
	if ((rc = keytab_run(ui, KM_NB, is_key, ch)))
		return rc;
	if (v->editing)
		return edit_key(ui, p, is_key, ch);
	return command_key(ui, is_key, ch);
}
