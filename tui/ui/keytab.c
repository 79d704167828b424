/*
 * The key table: one row a key (its mode, the command or action it runs, its line of help),
 * read by the dispatch (the panes' key handlers ask it for their mode) and by F1 and the
 * manual page, as tmux's key bindings serve both `bind` and `list-keys -N`. A key whose action
 * is one of the UI's commands (ui_commands.c) names that command; the others name a small
 * action here. Keys that type text (the editor's characters, a paste) are not bindings: the
 * pane takes what the table leaves.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>

#define KB_KEY(k) .is_key = 1, .ch = (k)
#define KB_CH(c) .ch = (c)
#define KB_NOTE(m, k, h) { .mode = (m), .keys = (k), .help = (h) }
/* A Shift-motion of the editor: it extends the selection (act_editor_edit's ED_SELECT). */
#define KB_SELECT(k, m, a) { .mode = KM_EDITOR, KB_KEY(k), .mods = (m), .fn = act_editor_edit, \
			     .arg = (a) | ED_SELECT }

/* ---- actions that work everywhere ------------------------------------------------------- */

/* F2, Ctrl-O, ':' in notebook command mode: the command prompt. */
static int act_prompt(struct ui *ui, int arg)
{
	(void)arg;
	strbuf_reset(&ui->ovl.line);
	ui_overlay_push(ui, OV_PROMPT);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-R in the console: search the history. */
static int act_search(struct ui *ui, int arg)
{
	(void)arg;
	strbuf_reset(&ui->ovl.line);
	ui->ovl.search_hit = ui->editor.nhist ? (long)ui->editor.nhist - 1 : -1;
	ui_overlay_push(ui, OV_SEARCH);
	return PANE_HANDLED | PANE_REDRAW;
}

/* F4: the plot viewer on the gallery's plot. */
static int act_plot_view(struct ui *ui, int arg)
{
	(void)arg;
	if (ui->side.plot_sel < ui->nplots)
		ui_overlay_push(ui, OV_PLOT);
	else
		ui_message(ui, "no plots yet");
	return PANE_HANDLED | PANE_REDRAW;
}

/* F8: the side pane's next tab (it shows when hidden). */
static int act_side_tab(struct ui *ui, int arg)
{
	(void)arg;
	if (!ui->panes[P_SIDE].visible)
		ui_side_show(ui, 1);
	else
		ui_side_tab(ui, (enum side_tab)((ui->side.tab + 1) % SIDE_TABS));
	return PANE_HANDLED | PANE_REDRAW;
}

/* The variables tab's keys: move by `arg` rows (pages: +-2), its value, leave. */
enum { VARS_VALUE = 100, VARS_LEAVE };
static int act_vars(struct ui *ui, int arg)
{
	if (arg == VARS_VALUE)
		ui_vars_show_value(ui);
	else if (arg == VARS_LEAVE)
		ui->focus = ui->side.back_focus;
	else
		ui_vars_move(ui, arg);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-C in the console: interrupt the running cell, else clear the editor. */
static int act_interrupt_or_clear(struct ui *ui, int arg)
{
	(void)arg;
	if (ui_cell_running(ui))
		session_interrupt(ui->s);
	else
		edbuf_set(&ui->editor.ed, "");
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-D in the console: quit on an empty cell, else delete a character. */
static int act_quit_or_delete(struct ui *ui, int arg)
{
	(void)arg;
	if (!ui->editor.ed.text.len)
		return PANE_HANDLED | PANE_REDRAW | (ui_may_quit(ui) ? PANE_QUIT : 0);
	edbuf_delete(&ui->editor.ed);
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the output pane -------------------------------------------------------------------- */

/* Scroll the output by `arg` rows, or pages when `arg` is +-2 (back is up). */
static int act_output_scroll(struct ui *ui, int arg)
{
	int h = ui->panes[P_OUTPUT].h, page = h > 2 ? h - 1 : 1;

	ui->outpane.scroll += arg == 2 ? page : arg == -2 ? -page : arg;
	if (ui->outpane.scroll < 0)
		ui->outpane.scroll = 0;
	ui->outpane.follow = ui->outpane.scroll == 0;
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the editor ------------------------------------------------------------------------- */

/* Enter: run the cell when complete (`arg` 0), or as it is (1). */
static int act_editor_run(struct ui *ui, int arg)
{
	if (arg)
		ui_run_cell(ui);
	else
		ui_editor_enter(ui);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Up/Down (`arg` -1/+1): a line, or the history past the first/last. */
static int act_editor_updown(struct ui *ui, int arg)
{
	edbuf_unmark(&ui->editor.ed);
	if (!(arg < 0 ? edbuf_up(&ui->editor.ed) : edbuf_down(&ui->editor.ed)))
		ui_editor_hist_walk(ui, arg);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Tab: indent or complete. */
static int act_editor_tab(struct ui *ui, int arg)
{
	(void)arg;
	ui_editor_tab(ui);
	return PANE_HANDLED | PANE_REDRAW;
}

/*
 * The editing keys of the line: `arg` names the edbuf call; a motion with ED_SELECT (Shift)
 * extends the selection from its anchor, without it ends the selection.
 */
enum { ED_NEWLINE, ED_HOME, ED_END, ED_LEFT, ED_RIGHT, ED_BACKSPACE, ED_DELETE, ED_KILL_RIGHT,
       ED_KILL_LEFT, ED_ESC, ED_UNDO, ED_REDO, ED_WORD_LEFT, ED_WORD_RIGHT, ED_KILL_WORD_LEFT,
       ED_KILL_BIGWORD_LEFT, ED_KILL_WORD_RIGHT, ED_UP, ED_DOWN, ED_COPY, ED_CUT, ED_PASTE,
       ED_SELECT = 0x100 };

/* Move or delete in the editor's text. */
static int act_editor_edit(struct ui *ui, int arg)
{
	struct edbuf *e = &ui->editor.ed;
	size_t from, to;

	if (arg & ED_SELECT)
		edbuf_mark(e);
	else if (arg == ED_HOME || arg == ED_END || arg == ED_LEFT || arg == ED_RIGHT ||
		 arg == ED_WORD_LEFT || arg == ED_WORD_RIGHT)
		edbuf_unmark(e);
	switch (arg & ~ED_SELECT) {
	case ED_NEWLINE: edbuf_newline(e, 1); break;
	case ED_HOME: edbuf_home(e); break;
	case ED_END: edbuf_end(e); break;
	case ED_LEFT: edbuf_left(e); break;
	case ED_RIGHT: edbuf_right(e); break;
	case ED_BACKSPACE: edbuf_backspace(e); break;
	case ED_DELETE: edbuf_delete(e); break;
	case ED_KILL_RIGHT: edbuf_kill_right(e); break;
	case ED_KILL_LEFT: edbuf_kill_left(e); break;
	case ED_ESC: edbuf_unmark(e); break;	/* a lone Esc: the selection goes */
	case ED_UNDO:
		if (!edbuf_undo(e))
			ui_message(ui, "nothing to undo");
		break;
	case ED_REDO:
		if (!edbuf_redo(e))
			ui_message(ui, "nothing to redo");
		break;
	case ED_WORD_LEFT: edbuf_word_left(e); break;
	case ED_WORD_RIGHT: edbuf_word_right(e); break;
	case ED_KILL_WORD_LEFT: edbuf_kill_word_left(e, 0); break;
	case ED_KILL_BIGWORD_LEFT:	/* Ctrl-W at a selection cuts it, as Emacs's C-w */
		if (edbuf_selection(e, &from, &to))
			ui_clip_copy(ui, 1);
		else
			edbuf_kill_word_left(e, 1);
		break;
	case ED_KILL_WORD_RIGHT: edbuf_kill_word_right(e); break;
	case ED_UP:		/* Shift-Up on the first line: to the start */
		if (!edbuf_up(e))
			e->cur = 0;
		break;
	case ED_DOWN:
		if (!edbuf_down(e))
			e->cur = e->text.len;
		break;
	case ED_COPY: ui_clip_copy(ui, 0); break;
	case ED_CUT: ui_clip_copy(ui, 1); break;
	case ED_PASTE: ui_clip_paste(ui); break;
	}
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- notebook mode ---------------------------------------------------------------------- */

/* Run the selected cell; `arg` is what to select after (enum nb_run). */
static int act_nb_run(struct ui *ui, int arg)
{
	ui_nbview_run(ui, (enum nb_run)arg);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-S, s: save the notebook. */
static int act_nb_save(struct ui *ui, int arg)
{
	struct strbuf msg = STRBUF_INIT;

	(void)arg;
	ui_nbview_save(ui, NULL, 0, &msg);
	ui_message(ui, "%s", msg.buf);
	strbuf_release(&msg);
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-C in a notebook, i i: interrupt the running cell (`arg` 1: i i's message). */
static int act_nb_interrupt(struct ui *ui, int arg)
{
	if (ui_cell_running(ui))
		session_interrupt(ui->s);
	else if (arg)
		ui_message(ui, "no cell is running");
	else if (ui->nbv->editing)
		ui_message(ui, "no cell is running (Esc leaves edit mode)");
	return PANE_HANDLED | PANE_REDRAW;
}

/* Ctrl-R in a notebook: edit the selected cell and search the history, as the console does. */
static int act_nb_search(struct ui *ui, int arg)
{
	if (!ui->nbv->editing)
		ui_nbview_act(ui, NB_EDIT);
	return act_search(ui, arg);
}

/* Select a cell, move one, change it, edit it; `arg` says which (enum nb_act). */
static int act_nb(struct ui *ui, int arg)
{
	ui_nbview_act(ui, arg);
	return PANE_HANDLED | PANE_REDRAW;
}

/* ---- the table -------------------------------------------------------------------------- */

/*
 * In the order F1 shows them, each section (the console's, the notebook's) on its own. A row
 * with `keys` is a line of help (its keys as written, what they do); a row without continues
 * the line above it (another key for the same thing). KM_NOTE rows are help without a key of
 * their own (headings when `keys` is "").
 */
static const struct key_binding key_table[] = {
	/* The console. */
	{ .mode = KM_EDITOR, KB_CH('\r'), .mods = KB_PLAIN, .fn = act_editor_run, .arg = 0,
	  .keys = "Enter", .help = "run the cell when it is complete, else a new line" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_ENTER), .fn = act_editor_run, .arg = 0 },
	{ .mode = KM_EDITOR, KB_CH('\r'), .mods = KEYMOD_ALT | KEYMOD_SHIFT | KEYMOD_CTRL,
	  .fn = act_editor_run, .arg = 1, .keys = "Alt-Enter, F5",
	  .help = "run the cell as it is (Shift-/Ctrl-Enter too, where they differ)" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_F(5)), .fn = act_editor_run, .arg = 1 },
	{ .mode = KM_EDITOR, KB_CH('\n'), .fn = act_editor_edit, .arg = ED_NEWLINE,
	  .keys = "Ctrl-J", .help = "a new line, always" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_UP), .fn = act_editor_updown, .arg = -1,
	  .keys = "Up / Down", .help = "move; on the first / last line: walk the history" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_DOWN), .fn = act_editor_updown, .arg = +1 },
	{ .mode = KM_CONSOLE, KB_CH(CTRL('r')), .fn = act_search,
	  .keys = "Ctrl-R", .help = "search the history (Ctrl-R again: older; Enter takes it)" },
	{ .mode = KM_EDITOR, KB_CH('\t'), .fn = act_editor_tab,
	  .keys = "Tab", .help = "complete (the kernel's completions) or indent" },
	KB_NOTE(KM_NOTE, "obj?  obj??", "help on obj in this pager"),
	{ .mode = KM_CONSOLE, KB_CH(CTRL('c')), .fn = act_interrupt_or_clear,
	  .keys = "Ctrl-C", .help = "interrupt the running cell; when idle, clear the cell" },
	{ .mode = KM_OUTPUT, KB_KEY(KEY_PPAGE), .fn = act_output_scroll, .arg = 2,
	  .keys = "PgUp / PgDn", .help = "scroll the output (Ctrl-Up/Down: one row)" },
	{ .mode = KM_OUTPUT, KB_KEY(KEY_NPAGE), .fn = act_output_scroll, .arg = -2 },
	{ .mode = KM_CONSOLE, KB_KEY(KEY_UP), .mods = KEYMOD_CTRL, .fn = act_output_scroll,
	  .arg = 1 },
	{ .mode = KM_CONSOLE, KB_KEY(KEY_DOWN), .mods = KEYMOD_CTRL, .fn = act_output_scroll,
	  .arg = -1 },
	{ .mode = KM_EDITOR, KB_CH(CTRL('y')), .fn = act_editor_edit, .arg = ED_REDO,
	  .keys = "Ctrl-Z/Ctrl-Y",
	  .help = "undo / redo (Ctrl-_ / Ctrl-Shift-Z too; a run of typing is one step)" },
	{ .mode = KM_EDITOR, KB_CH(CTRL('z')), .mods = KEYMOD_SHIFT, .fn = act_editor_edit,
	  .arg = ED_REDO },
	{ .mode = KM_EDITOR, KB_CH(CTRL('z')), .fn = act_editor_edit, .arg = ED_UNDO },
	{ .mode = KM_EDITOR, KB_CH(CTRL('_')), .mods = KEYMOD_ALT, .fn = act_editor_edit,
	  .arg = ED_REDO },
	{ .mode = KM_EDITOR, KB_CH(CTRL('_')), .fn = act_editor_edit, .arg = ED_UNDO },
	{ .mode = KM_EDITOR, KB_KEY(KEY_LEFT), .mods = KEYMOD_SHIFT | KEYMOD_CTRL | KB_ALL,
	  .fn = act_editor_edit, .arg = ED_WORD_LEFT | ED_SELECT,
	  .keys = "Shift-arrows",
	  .help = "select; Shift-Home/End, Ctrl-Shift-Left/Right too; typing replaces it" },
	KB_SELECT(KEY_RIGHT, KEYMOD_SHIFT | KEYMOD_CTRL | KB_ALL, ED_WORD_RIGHT),
	KB_SELECT(KEY_LEFT, KEYMOD_SHIFT, ED_LEFT),
	KB_SELECT(KEY_SLEFT, 0, ED_LEFT),	/* curses' own codes of Shift-keys */
	KB_SELECT(KEY_RIGHT, KEYMOD_SHIFT, ED_RIGHT),
	KB_SELECT(KEY_SRIGHT, 0, ED_RIGHT),
	KB_SELECT(KEY_SR, 0, ED_UP),
	KB_SELECT(KEY_SF, 0, ED_DOWN),
	KB_SELECT(KEY_HOME, KEYMOD_SHIFT, ED_HOME),
	KB_SELECT(KEY_SHOME, 0, ED_HOME),
	KB_SELECT(KEY_END, KEYMOD_SHIFT, ED_END),
	KB_SELECT(KEY_SEND, 0, ED_END),
	{ .mode = KM_EDITOR, KB_CH('w'), .mods = KEYMOD_ALT, .fn = act_editor_edit, .arg = ED_COPY,
	  .keys = "Alt-W/Ctrl-X/Ctrl-V",
	  .help = "copy / cut the selection (the terminal's clipboard too) / paste, kills too" },
	{ .mode = KM_EDITOR, KB_CH(CTRL('x')), .fn = act_editor_edit, .arg = ED_CUT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('v')), .fn = act_editor_edit, .arg = ED_PASTE },
	{ .mode = KM_EDITOR, KB_KEY(KEY_LEFT), .mods = KEYMOD_CTRL | KEYMOD_ALT,
	  .fn = act_editor_edit, .arg = ED_WORD_LEFT, .keys = "Alt-B / Alt-F",
	  .help = "a word back / on (Ctrl-Left / Ctrl-Right too)" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_RIGHT), .mods = KEYMOD_CTRL | KEYMOD_ALT,
	  .fn = act_editor_edit, .arg = ED_WORD_RIGHT },
	{ .mode = KM_EDITOR, KB_CH('b'), .mods = KEYMOD_ALT, .fn = act_editor_edit,
	  .arg = ED_WORD_LEFT },
	{ .mode = KM_EDITOR, KB_CH('f'), .mods = KEYMOD_ALT, .fn = act_editor_edit,
	  .arg = ED_WORD_RIGHT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('w')), .fn = act_editor_edit, .arg = ED_KILL_BIGWORD_LEFT,
	  .keys = "Ctrl-W / Alt-D",
	  .help = "delete a word back (to a blank) / on; Ctrl-Backspace: a word back" },
	{ .mode = KM_EDITOR, KB_CH('d'), .mods = KEYMOD_ALT, .fn = act_editor_edit,
	  .arg = ED_KILL_WORD_RIGHT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_DC), .mods = KEYMOD_CTRL | KEYMOD_ALT,
	  .fn = act_editor_edit, .arg = ED_KILL_WORD_RIGHT },
	{ .mode = KM_EDITOR, KB_CH(127), .mods = KEYMOD_CTRL | KEYMOD_ALT, .fn = act_editor_edit,
	  .arg = ED_KILL_WORD_LEFT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_BACKSPACE), .mods = KEYMOD_CTRL | KEYMOD_ALT,
	  .fn = act_editor_edit, .arg = ED_KILL_WORD_LEFT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('h')), .mods = KEYMOD_CTRL | KEYMOD_ALT,
	  .fn = act_editor_edit, .arg = ED_KILL_WORD_LEFT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_HOME), .fn = act_editor_edit, .arg = ED_HOME,
	  .keys = "Home/End, Ctrl-A/E", .help = "start / end of the line; Ctrl-K, Ctrl-U delete" },
	{ .mode = KM_EDITOR, KB_KEY(KEY_END), .fn = act_editor_edit, .arg = ED_END },
	{ .mode = KM_EDITOR, KB_CH(CTRL('a')), .fn = act_editor_edit, .arg = ED_HOME },
	{ .mode = KM_EDITOR, KB_CH(CTRL('e')), .fn = act_editor_edit, .arg = ED_END },
	{ .mode = KM_EDITOR, KB_CH(CTRL('k')), .fn = act_editor_edit, .arg = ED_KILL_RIGHT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('u')), .fn = act_editor_edit, .arg = ED_KILL_LEFT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_LEFT), .fn = act_editor_edit, .arg = ED_LEFT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_RIGHT), .fn = act_editor_edit, .arg = ED_RIGHT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('b')), .fn = act_editor_edit, .arg = ED_LEFT },
	{ .mode = KM_EDITOR, KB_CH(CTRL('f')), .fn = act_editor_edit, .arg = ED_RIGHT },
	{ .mode = KM_EDITOR, KB_KEY(KEY_BACKSPACE), .fn = act_editor_edit, .arg = ED_BACKSPACE },
	{ .mode = KM_EDITOR, KB_CH(127), .fn = act_editor_edit, .arg = ED_BACKSPACE },
	{ .mode = KM_EDITOR, KB_CH(CTRL('h')), .fn = act_editor_edit, .arg = ED_BACKSPACE },
	{ .mode = KM_EDITOR, KB_KEY(KEY_DC), .fn = act_editor_edit, .arg = ED_DELETE },
	{ .mode = KM_EDITOR, KB_CH(27), .fn = act_editor_edit, .arg = ED_ESC },
	{ .mode = KM_GLOBAL, KB_CH(CTRL('l')), .command = "redraw",
	  .keys = "Ctrl-L", .help = "repaint the screen" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(1)), .command = "help",
	  .keys = "F1", .help = "this help" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(3)), .command = "side",
	  .keys = "F3", .help = "show or hide the side pane (history, plots, variables)" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(8)), .fn = act_side_tab,
	  .keys = "F8", .help = "the side pane's next tab: history, plots, variables" },
	{ .mode = KM_SIDE, KB_KEY(KEY_UP), .fn = act_vars, .arg = -1, .keys = "Up/Down, Enter",
	  .help = "variables tab (:vars): select; Enter: its value; Esc or typing: the editor" },
	{ .mode = KM_SIDE, KB_KEY(KEY_DOWN), .fn = act_vars, .arg = 1 },
	{ .mode = KM_SIDE, KB_KEY(KEY_PPAGE), .fn = act_vars, .arg = -2 },
	{ .mode = KM_SIDE, KB_KEY(KEY_NPAGE), .fn = act_vars, .arg = 2 },
	{ .mode = KM_SIDE, KB_CH('\r'), .fn = act_vars, .arg = VARS_VALUE },
	{ .mode = KM_SIDE, KB_KEY(KEY_ENTER), .fn = act_vars, .arg = VARS_VALUE },
	{ .mode = KM_SIDE, KB_CH(27), .fn = act_vars, .arg = VARS_LEAVE },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(4)), .fn = act_plot_view,
	  .keys = "F4", .help = "the plot viewer: Left/Right other plots, s save as" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(6)), .command = "restart",
	  .keys = "F6", .help = "restart the kernel" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(9)), .command = "output",
	  .keys = "F9", .help = "the last cell's whole output (past the pane's cap too), from the "
				"history, in a pager: Up/Down/PgUp/PgDn/Home/End, / finds, q closes" },
	{ .mode = KM_GLOBAL, KB_CH(CTRL('o')), .fn = act_prompt, .keys = "Ctrl-O, F2",
	  .help = "a cellbox command (below); a cell of one line starting with ':' too" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(2)), .fn = act_prompt },
	{ .mode = KM_GLOBAL, KB_CH(CTRL('q')), .command = "quit",
	  .keys = "Ctrl-Q, Ctrl-D", .help = "quit (Ctrl-D on an empty cell)" },
	{ .mode = KM_CONSOLE, KB_CH(CTRL('d')), .fn = act_quit_or_delete },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(10)), .command = "quit" },
	{ .mode = KM_GLOBAL, KB_KEY(KEY_F(12)), .command = "detach",
	  .keys = "F12",
	  .help = "leave the session running, an unnamed one under a new name (:detach)" },

	/* Notebook mode. */
	KB_NOTE(KM_NB_NOTE, "", "Command mode (the bar beside the selected cell; Esc comes here)"),
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_UP), .fn = act_nb, .arg = NB_UP,
	  .keys = "Up/Down, k/j", .help = "select the cell above / below (Home, End, PgUp, PgDn)" },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_DOWN), .fn = act_nb, .arg = NB_DOWN },
	{ .mode = KM_NB_COMMAND, KB_CH('k'), .fn = act_nb, .arg = NB_UP },
	{ .mode = KM_NB_COMMAND, KB_CH('j'), .fn = act_nb, .arg = NB_DOWN },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_HOME), .fn = act_nb, .arg = NB_FIRST },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_END), .fn = act_nb, .arg = NB_LAST },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_PPAGE), .fn = act_nb, .arg = NB_PAGE_UP },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_NPAGE), .fn = act_nb, .arg = NB_PAGE_DOWN },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_ENTER), .fn = act_nb, .arg = NB_EDIT,
	  .keys = "Enter", .help = "edit the selected cell" },
	{ .mode = KM_NB_COMMAND, KB_CH('\r'), .fn = act_nb, .arg = NB_EDIT },
	{ .mode = KM_NB, KB_CH('\r'), .mods = KEYMOD_SHIFT, .fn = act_nb_run, .arg = NB_RUN_NEXT,
	  .keys = "Shift-Enter, F5",
	  .help = "run the cell and select the next (a new one at the end)" },
	{ .mode = KM_NB, KB_KEY(KEY_F(5)), .fn = act_nb_run, .arg = NB_RUN_NEXT },
	{ .mode = KM_NB, KB_CH('\r'), .mods = KEYMOD_CTRL, .fn = act_nb_run, .arg = NB_RUN_STAY,
	  .keys = "Ctrl-Enter, F7", .help = "run the cell, stay on it" },
	{ .mode = KM_NB, KB_KEY(KEY_F(7)), .fn = act_nb_run, .arg = NB_RUN_STAY },
	{ .mode = KM_NB, KB_CH('\r'), .mods = KEYMOD_ALT, .fn = act_nb_run, .arg = NB_RUN_INSERT,
	  .keys = "Alt-Enter", .help = "run the cell and insert a new one below, in edit mode" },
	{ .mode = KM_NB_COMMAND, KB_CH('a'), .fn = act_nb, .arg = NB_INSERT_ABOVE,
	  .keys = "a / b", .help = "insert a cell above / below" },
	{ .mode = KM_NB_COMMAND, KB_CH('b'), .fn = act_nb, .arg = NB_INSERT_BELOW },
	{ .mode = KM_NB_COMMAND, KB_CH('d'), .twice = 1, .fn = act_nb, .arg = NB_DELETE,
	  .keys = "d d", .help = "delete the cell (z brings it back)" },
	{ .mode = KM_NB_COMMAND, KB_CH('z'), .fn = act_nb, .arg = NB_UNDELETE },
	{ .mode = KM_NB_COMMAND, KB_CH('m'), .fn = act_nb, .arg = NB_MARKDOWN,
	  .keys = "m / y / r", .help = "make it markdown / code / raw" },
	{ .mode = KM_NB_COMMAND, KB_CH('y'), .fn = act_nb, .arg = NB_CODE },
	{ .mode = KM_NB_COMMAND, KB_CH('r'), .fn = act_nb, .arg = NB_RAW },
	{ .mode = KM_NB_COMMAND, KB_CH('c'), .fn = act_nb, .arg = NB_COPY,
	  .keys = "c / x / v / V", .help = "copy / cut / paste below / paste above" },
	{ .mode = KM_NB_COMMAND, KB_CH('x'), .fn = act_nb, .arg = NB_CUT },
	{ .mode = KM_NB_COMMAND, KB_CH('v'), .fn = act_nb, .arg = NB_PASTE_BELOW },
	{ .mode = KM_NB_COMMAND, KB_CH('V'), .fn = act_nb, .arg = NB_PASTE_ABOVE },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_SR), .fn = act_nb, .arg = NB_MOVE_UP,
	  .keys = "Shift-Up/Down, K/J", .help = "move the cell up / down" },
	{ .mode = KM_NB_COMMAND, KB_KEY(KEY_SF), .fn = act_nb, .arg = NB_MOVE_DOWN },
	{ .mode = KM_NB_COMMAND, KB_CH('K'), .fn = act_nb, .arg = NB_MOVE_UP },
	{ .mode = KM_NB_COMMAND, KB_CH('J'), .fn = act_nb, .arg = NB_MOVE_DOWN },
	{ .mode = KM_NB_COMMAND, KB_CH('o'), .fn = act_nb, .arg = NB_COLLAPSE,
	  .keys = "o", .help = "hide or show the cell's outputs" },
	{ .mode = KM_NB_COMMAND, KB_CH('/'), .fn = act_nb, .arg = NB_FIND,
	  .keys = "/ n N", .help = "find text in the cells (n next, N back; Esc clears)" },
	{ .mode = KM_NB_COMMAND, KB_CH('n'), .fn = act_nb, .arg = NB_FIND_NEXT },
	{ .mode = KM_NB_COMMAND, KB_CH('N'), .fn = act_nb, .arg = NB_FIND_BACK },
	{ .mode = KM_NB_COMMAND, KB_CH(27), .fn = act_nb, .arg = NB_FIND_CLEAR },
	{ .mode = KM_NB_COMMAND, KB_CH('0'), .twice = 1, .command = "restart",
	  .keys = "0 0 / i i", .help = "restart the kernel / interrupt the running cell" },
	{ .mode = KM_NB_COMMAND, KB_CH('i'), .twice = 1, .fn = act_nb_interrupt, .arg = 1 },
	{ .mode = KM_NB, KB_CH(CTRL('s')), .fn = act_nb_save,
	  .keys = "Ctrl-S, s", .help = "save the notebook (its format: .ipynb, or percent .py)" },
	{ .mode = KM_NB_COMMAND, KB_CH('s'), .fn = act_nb_save },
	{ .mode = KM_NB_COMMAND, KB_CH(':'), .fn = act_prompt, .keys = ": or Ctrl-O",
	  .help = "a command (below): run-all, run-above, run-below, write..." },
	{ .mode = KM_NB_COMMAND, KB_CH('h'), .command = "help" },
	KB_NOTE(KM_NB_NOTE, "", "Edit mode (the bar changes colour; the cell's text has the cursor)"),
	{ .mode = KM_NB_EDIT, KB_CH(27), .mods = KB_PLAIN, .fn = act_nb, .arg = NB_LEAVE_EDIT,
	  .keys = "Esc", .help = "back to command mode (the text stays in the cell)" },
	{ .mode = KM_NB_EDIT, KB_CH('\r'), .fn = act_nb, .arg = NB_NEWLINE, .keys = "Enter",
	  .help = "a new line (indented); Tab completes; Up/Down past the edge: next cell" },
	{ .mode = KM_NB_EDIT, KB_CH('\n'), .fn = act_nb, .arg = NB_NEWLINE },
	{ .mode = KM_NB_EDIT, KB_KEY(KEY_ENTER), .fn = act_nb, .arg = NB_NEWLINE },
	{ .mode = KM_NB_EDIT, KB_KEY(KEY_UP), .fn = act_nb, .arg = NB_EDIT_UP },
	{ .mode = KM_NB_EDIT, KB_KEY(KEY_DOWN), .fn = act_nb, .arg = NB_EDIT_DOWN },
	{ .mode = KM_NB, KB_CH(CTRL('r')), .fn = act_nb_search, .keys = "Ctrl-R",
	  .help = "search the history, as in the console: Enter puts it in the cell" },
	{ .mode = KM_NB, KB_CH(CTRL('c')), .fn = act_nb_interrupt, .arg = 0,
	  .keys = "Shift-Enter ...", .help = "run, as in command mode; Ctrl-C interrupts" },
	KB_NOTE(KM_NB_NOTE, "", "Everywhere"),
	KB_NOTE(KM_NB_NOTE, "F1 / F3 / F4 / F6",
		"this help / side pane / plot viewer / restart the kernel"),
	KB_NOTE(KM_NB_NOTE, "F8, :vars",
		"the side pane's next tab / the variables (Up/Down, Enter: a value, Esc: back)"),
	KB_NOTE(KM_NB_NOTE, "Ctrl-Q, :q",
		"quit (asks again when there are unsaved changes; :q! does not)"),
};

/* Whether row `kb` is key (is_key, ch) with modifiers `mods`. */
static int keytab_matches(const struct key_binding *kb, int is_key, wint_t ch, unsigned mods)
{
	unsigned held = mods & (KEYMOD_SHIFT | KEYMOD_ALT | KEYMOD_CTRL);
	unsigned want = kb->mods & (KEYMOD_SHIFT | KEYMOD_ALT | KEYMOD_CTRL);

	if (kb->mode & (KM_NOTE | KM_NB_NOTE) || kb->is_key != !!is_key || kb->ch != ch)
		return 0;
	if (kb->mods & KB_PLAIN)
		return !held;
	if (kb->mods & KB_ALL)
		return (held & want) == want;
	return !want || (held & want);
}

const struct key_binding *keytab_find(unsigned modes, int is_key, wint_t ch, unsigned mods)
{
	for (size_t i = 0; i < ARRAY_SIZE(key_table); i++)
		if ((key_table[i].mode & modes) && keytab_matches(&key_table[i], is_key, ch, mods))
			return &key_table[i];
	return NULL;
}

int keytab_do(struct ui *ui, const struct key_binding *kb)
{
	if (kb->command)
		return PANE_HANDLED | PANE_REDRAW | ui_run_command(ui, kb->command);
	return kb->fn(ui, kb->arg);
}

int keytab_run(struct ui *ui, unsigned modes, int is_key, wint_t ch)
{
	const struct key_binding *kb = keytab_find(modes, is_key, ch, ui->key_mods);

	return kb ? keytab_do(ui, kb) : 0;
}

int keytab_alt_bound(const struct ui *ui, int is_key, wint_t ch)
{
	unsigned modes = KM_GLOBAL | KM_CONSOLE | KM_EDITOR | KM_OUTPUT;

	if (ui->ovl.ov != OV_NONE && ui->ovl.ov != OV_MENU)
		return 0;
	if (ui->nbv)
		modes = KM_GLOBAL | KM_NB | (ui->nbv->editing ? KM_NB_EDIT | KM_EDITOR : KM_NB_COMMAND);
	for (size_t i = 0; i < ARRAY_SIZE(key_table); i++) {
		const struct key_binding *kb = &key_table[i];
		/* vi mode: Esc then a key is vi's Esc (ESC b is not Alt-B), but Alt-Enter runs */
		if (kb->mode == KM_EDITOR && ch != '\r' && ui_vi_on(ui))
			continue;
		if ((kb->mode & modes) && !(kb->mods & KB_PLAIN) && (kb->mods & KEYMOD_ALT) &&
		    keytab_matches(kb, is_key, ch, KEYMOD_ALT))
			return 1;
	}
	return 0;
}

/* Whether row `kb` is in notebook mode's part of the help. */
static int keytab_in_notebook(const struct key_binding *kb)
{
	return (kb->mode & (KM_NB | KM_NB_COMMAND | KM_NB_EDIT | KM_NB_NOTE)) != 0;
}

void keytab_rows(int notebook, void (*row)(void *data, const char *left, const char *right),
		 void *data)
{
	for (size_t i = 0; i < ARRAY_SIZE(key_table); i++)
		if (key_table[i].keys && keytab_in_notebook(&key_table[i]) == !!notebook)
			row(data, key_table[i].keys, key_table[i].help);
}

/*
 * The order the keys go through, mode by mode, in the console and in notebook mode's two
 * modes (tui.c's ui_key: the keys of everywhere, then the focused pane's, then the others').
 */
static const unsigned keytab_chains[][5] = {
	{ KM_GLOBAL | KM_CONSOLE, KM_EDITOR, KM_OUTPUT },
	{ KM_GLOBAL, KM_NB, KM_NB_COMMAND },
	{ KM_GLOBAL, KM_NB, KM_NB_EDIT, KM_EDITOR },
	{ KM_GLOBAL | KM_CONSOLE, KM_SIDE },
};

int keytab_check(struct strbuf *err)
{
	int bad = 0;

	for (size_t i = 0; i < ARRAY_SIZE(key_table); i++) {
		const struct key_binding *kb = &key_table[i], *got = NULL;
		int shown = 0;

		if (kb->mode & (KM_NOTE | KM_NB_NOTE)) {
			if (!kb->keys || !kb->help || kb->fn || kb->command) {
				strbuf_addf(err, "row %zu: a note without its text, or with an "
					    "action\n", i);
				bad++;
			}
			continue;
		}
		if (!kb->fn == !kb->command) {
			strbuf_addf(err, "row %zu: neither a command nor an action (or both)\n", i);
			bad++;
		}
		if (kb->command && !ui_command_exists(kb->command)) {
			strbuf_addf(err, "row %zu: no command '%s'\n", i, kb->command);
			bad++;
		}
		/* Reachable: the first row the dispatch finds for its key, in some chain. */
		for (size_t c = 0; c < ARRAY_SIZE(keytab_chains) && got != kb; c++) {
			int applies = 0;
			for (int m = 0; keytab_chains[c][m]; m++)
				applies |= (keytab_chains[c][m] & kb->mode) != 0;
			if (!applies)
				continue;
			got = NULL;
			for (int m = 0; keytab_chains[c][m] && !got; m++)
				got = keytab_find(keytab_chains[c][m], kb->is_key, kb->ch,
						  kb->mods & KB_PLAIN ? 0 : kb->mods & ~KB_ALL);
		}
		if (got != kb) {
			strbuf_addf(err, "row %zu (%s): the dispatch never reaches it\n", i,
				    kb->keys ? kb->keys : "a key without help of its own");
			bad++;
		}
		/* Shown: a line of help, or one of the keys of the line above it. */
		for (size_t j = i + 1; j-- > 0;) {
			const struct key_binding *up = &key_table[j];
			if (keytab_in_notebook(up) != keytab_in_notebook(kb))
				break;
			if (up->keys) {
				shown = *up->keys && !(up->mode & (KM_NOTE | KM_NB_NOTE));
				break;
			}
		}
		if (!shown) {
			strbuf_addf(err, "row %zu: F1 does not show it\n", i);
			bad++;
		}
	}
	return bad ? -1 : 0;
}
