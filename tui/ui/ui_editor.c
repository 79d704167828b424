/*
 * The editor pane: the cell being written, highlighted, with Enter deciding by the kernel's
 * is_complete, Tab asking for its completions (one inserted, several in the menu overlay), and
 * Up/Down walking the history of this and earlier sessions.
 */
#include "ui.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "highlight.h"

/* ---- editor pane ------------------------------------------------------------------------ */

/* Rows the editor wants: its lines and the separator, at most half the screen. */
int ui_editor_rows(const struct ui *ui, int screen_h)
{
	int want = (int)edbuf_lines(&ui->editor.ed) + 1, max = screen_h / 2;

	if (max < 2)
		max = 2;
	return want < max ? want : max;
}

/* Draw the editor pane: a separator with hints, the highlighted cell, the cursor. */
void ui_editor_draw(struct ui *ui, struct pane *p)
{
	struct look sep = ui_look_of(ui, TH_BORDER, NULL), prompt = ui_look_of(ui, TH_PROMPT_IN, NULL);
	struct look bracket = ui_look_of(ui, TH_BRACKET, NULL);
	struct look selected = ui_look_of(ui, TH_SELECTION, NULL);
	size_t cur_line = edbuf_line(&ui->editor.ed), nlines = edbuf_lines(&ui->editor.ed), first_line = 0;
	int rows = p->h - 1, state = HL_STATE_NORMAL, prompt_w = 8, cur_x = 0, cur_y = p->y + 1;
	size_t cur_col = edbuf_col(&ui->editor.ed), hscroll = 0, sel_from = 0, sel_to = 0;
	long at, match = edbuf_match_bracket(&ui->editor.ed, &at);
	const char *text = ui->editor.ed.text.buf;
	unsigned char *cls = xmalloc(ui->editor.ed.text.len + 1);
	char title[96];

	for (int x = 0; x < p->w; x++) {
		cchar_t cc;
		setcchar(&cc, L"\u2500", sep.attr, sep.pair, NULL);
		mvadd_wch(p->y, p->x + x, &cc);
	}
	snprintf(title, sizeof(title), " In [%d] \u00b7 Enter runs \u00b7 Ctrl-J newline \u00b7 "
		 "F1 help ", ui->exec_count + 1);
	ui_put_text(p->y, p->x + 2, p->w - 2, title, ui_look_of(ui, TH_TITLE, NULL));
	edbuf_selection(&ui->editor.ed, &sel_from, &sel_to);
	if (rows < 1)
		rows = 1;
	if (cur_line >= (size_t)rows)
		first_line = cur_line - (size_t)rows + 1;
	if (cur_col + (size_t)prompt_w + 1 > (size_t)p->w)
		hscroll = cur_col + (size_t)prompt_w + 1 - (size_t)p->w;
	/* Classify the whole text once, line by line, carrying the string state. */
	for (size_t ln = 0, off = 0; ln < nlines; ln++) {
		size_t end = edbuf_line_start(&ui->editor.ed, ln + 1), len;
		len = end > off && ln + 1 < nlines ? end - off - 1 : end - off;
		state = highlight_line(text + off, len, state, cls + off);
		off = end;
	}
	for (int r = 0; r < rows && first_line + (size_t)r < nlines; r++) {
		size_t ln = first_line + (size_t)r, off = edbuf_line_start(&ui->editor.ed, ln);
		size_t end = ln + 1 < nlines ? edbuf_line_start(&ui->editor.ed, ln + 1) - 1
					     : ui->editor.ed.text.len;
		int y = p->y + 1 + r, x = prompt_w;
		size_t col = 0;

		ui_put_text(y, p->x, prompt_w, ln ? "   ...: " : "In  >>: ", prompt);
		for (size_t i = off; i < end;) {
			wchar_t wc;
			size_t n = ui_decode(text + i, end - i, &wc);
			int el = cls[i] == HL_TEXT ? TH_NORMAL : TH_SYNTAX_KEYWORD + cls[i] - 1;
			int w = wc == L'\t' ? 1 : ui_char_width(&wc);
			struct look lk = ((long)i == at || (long)i == match) && match >= 0 ?
					 bracket : ui_look_of(ui, el, NULL);

			if (i >= sel_from && i < sel_to)
				lk = selected;
			if (wc == L'\t')
				wc = L' ';
			if (col >= hscroll && x + w <= p->w)
				ui_put_wc(y, p->x + x, wc, lk);
			if (col >= hscroll)
				x += w;
			if (ln == cur_line && i + n == ui->editor.ed.cur)
				cur_x = x;
			col++;
			i += n;
		}
		if (ln == cur_line) {
			cur_y = y;
			if (ui->editor.ed.cur == off)
				cur_x = prompt_w;
		}
	}
	free(cls);
	if (cur_x >= p->w)
		cur_x = p->w - 1;
	move(cur_y, p->x + cur_x);
}

/* Start the editor pane's state: an empty cell, no history. */
void ui_editor_init(struct editor_pane *e)
{
	memset(e, 0, sizeof(*e));
	edbuf_init(&e->ed);
	strbuf_init(&e->clip, 0);
	strbuf_set_max(&e->clip, EDBUF_MAX + 1);
	e->ed.kills = &e->clip;
	vi_init(&e->vi);
}

void ui_editor_load(struct ui *ui, const char *text)
{
	edbuf_load(&ui->editor.ed, text);
	vi_insert(&ui->editor.vi);
}

/* Free the editor pane's state: the cell, the history, the completions. */
void ui_editor_release(struct editor_pane *e)
{
	edbuf_release(&e->ed);
	strbuf_release(&e->clip);
	for (size_t i = 0; i < e->nhist; i++)
		free(e->hist[i]);
	free(e->hist);
	free(e->hist_saved);
	free(e->is_complete_text);
	for (size_t i = 0; i < e->nmenu; i++)
		free(e->menu[i]);
	free(e->menu);
	memset(e, 0, sizeof(*e));
}

/* ---- history ---------------------------------------------------------------------------- */

/* Remember a cell for Up/Down and Ctrl-R (not twice in a row). */
void ui_hist_add(struct ui *ui, const char *code)
{
	struct editor_pane *e = &ui->editor;

	if (e->nhist && !strcmp(e->hist[e->nhist - 1], code))
		goto out;
	if (e->nhist == HIST_MAX) {
		free(e->hist[0]);
		memmove(e->hist, e->hist + 1, (HIST_MAX - 1) * sizeof(*e->hist));
		e->nhist--;
	}
	if (e->nhist == e->hist_alloc) {
		e->hist_alloc = e->hist_alloc ? 2 * e->hist_alloc : 64;
		e->hist = xrealloc(e->hist, e->hist_alloc * sizeof(*e->hist));
	}
	e->hist[e->nhist++] = xstrdup(code);
out:
	e->hist_pos = e->nhist;
	free(e->hist_saved);
	e->hist_saved = NULL;
}

/* Step through history by `dir` (-1 older, +1 newer); 0 when there is nowhere to go. */
int ui_editor_hist_walk(struct ui *ui, int dir)
{
	struct editor_pane *e = &ui->editor;

	if (dir < 0 && e->hist_pos == 0)
		return 0;
	if (dir > 0 && e->hist_pos >= e->nhist)
		return 0;
	if (e->hist_pos == e->nhist) {
		free(e->hist_saved);
		e->hist_saved = xstrdup(e->ed.text.buf);
	}
	e->hist_pos += dir;
	edbuf_set(&e->ed, e->hist_pos == e->nhist ? (e->hist_saved ? e->hist_saved : "")
						  : e->hist[e->hist_pos]);
	if (dir < 0) {		/* older: cursor on the first line, so Up goes on walking */
		e->ed.cur = 0;
		edbuf_end(&e->ed);
	}
	return 1;
}

/* Find the newest history entry before `from` containing the search text. */
long ui_hist_search(struct ui *ui, long from)
{
	for (long i = from; i >= 0; i--)
		if (strstr(ui->editor.hist[i], ui->ovl.line.buf))
			return i;
	return -1;
}

/* ---- Enter and Tab ---------------------------------------------------------------------- */

/* A guess at whether the cell needs more lines, for when the kernel is busy. */
static int looks_incomplete(const struct edbuf *e)
{
	const char *s = e->text.buf;
	int depth = 0, state = HL_STATE_NORMAL;
	size_t nlines = edbuf_lines(e), last = edbuf_line_start(e, nlines - 1);
	unsigned char *cls = xmalloc(e->text.len + 1);
	int rc;

	for (size_t ln = 0, off = 0; ln < nlines; ln++) {
		size_t end = ln + 1 < nlines ? edbuf_line_start(e, ln + 1) - 1 : e->text.len;
		state = highlight_line(s + off, end - off, state, cls + off);
		off = end + 1;
	}
	for (size_t i = 0; i < e->text.len; i++)
		if (cls[i] != HL_STRING && cls[i] != HL_COMMENT)
			depth += (s[i] == '(' || s[i] == '[' || s[i] == '{') -
				 (s[i] == ')' || s[i] == ']' || s[i] == '}');
	{
		size_t end = e->text.len;
		while (end > last && (s[end - 1] == ' ' || s[end - 1] == '\t'))
			end--;
		rc = depth > 0 || state != HL_STATE_NORMAL ||
		     (end > last && (s[end - 1] == ':' || s[end - 1] == '\\')) ||
		     (nlines > 1 && end > last && (s[last] == ' ' || s[last] == '\t')) ||
		     (!strncmp(s, "%%", 2) && end > last);	/* a cell magic ends at a blank line */
	}
	free(cls);
	return rc;
}

/* Act on the kernel's is_complete answer: run the cell or add an indented line. */
static void on_is_complete(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	const char *status;

	(void)s;
	if (ev->type == SESSION_EV_DONE && ui->editor.is_complete_id == ev->id) {
		ui->editor.is_complete_id = 0;
		free(ui->editor.is_complete_text);
		ui->editor.is_complete_text = NULL;
	}
	if (ev->type != SESSION_EV_REPLY || ui->editor.is_complete_id != ev->id)
		return;
	/* The user typed on meanwhile: the answer is about text that is gone. */
	if (!ui->editor.is_complete_text || strcmp(ui->editor.is_complete_text, ui->editor.ed.text.buf))
		return;
	status = ev->reply.status;
	if (status && !strcmp(status, "incomplete")) {
		const char *indent = ev->reply.indent;
		char *nl;
		/* The kernel's indent: only blanks are taken. One step for undo, with the newline. */
		if (!indent || strlen(indent) > 256 || indent[strspn(indent, " \t")])
			indent = "";
		nl = xasprintf("\n%s", indent);
		edbuf_insert(&ui->editor.ed, nl, strlen(nl));
		free(nl);
	} else {
		ui_run_cell(ui);
	}
}

/* Enter: run when the kernel says the cell is complete, else a new line. */
void ui_editor_enter(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *params;

	if (ui->editor.ed.cur != ui->editor.ed.text.len) {	/* in the middle of the text: a new line */
		edbuf_newline(&ui->editor.ed, 1);
		return;
	}
	if (cellcmd_is_command(ui->editor.ed.text.buf)) {
		ui_run_cell(ui);		/* one of cellbox's commands, not Python */
		return;
	}
	if (session_state(ui->s) != SESSION_IDLE || ui_cell_running(ui) || ui->editor.is_complete_id) {
		if (looks_incomplete(&ui->editor.ed))
			edbuf_newline(&ui->editor.ed, 1);
		else
			ui_run_cell(ui);
		return;
	}
	params = cJSON_CreateObject();
	{
		/*
		 * On a blank last line the user has typed a blank line: the kernel hears of it
		 * (IPython ends a cell magic there, and would not see it in "...\n").
		 */
		const char *t = ui->editor.ed.text.buf, *nl = strrchr(t, '\n');
		int blank_last = nl && !nl[1 + strspn(nl + 1, " \t")];
		char *code = xasprintf("%s%s", t, blank_last ? "\n" : "");
		cJSON_AddStringToObject(params, "code", code);
		free(code);
	}
	ui->editor.is_complete_id = session_request(ui->s, "is_complete", params, on_is_complete, ui,
					     &err);
	cJSON_Delete(params);
	if (ui->editor.is_complete_id) {
		unsigned long id = ui->editor.is_complete_id;
		free(ui->editor.is_complete_text);
		ui->editor.is_complete_text = xstrdup(ui->editor.ed.text.buf);
		/*
		 * The kernel is idle, so the answer takes well under a millisecond: wait for it,
		 * as IPython does, so that keys typed next apply to the right text.
		 */
		while (session_pending(ui->s, id))
			if (session_wait(ui->s, id) < 0 && errno != EINTR)
				break;
	} else {
		ui_run_cell(ui);
	}
	strbuf_release(&err);
}

/* Forget the completion menu. */
void ui_menu_free(struct ui *ui)
{
	for (size_t i = 0; i < ui->editor.nmenu; i++)
		free(ui->editor.menu[i]);
	free(ui->editor.menu);
	ui->editor.menu = NULL;
	ui->editor.nmenu = ui->editor.menu_sel = 0;
}

/* Put completion `m` in place of the text it completes. */
void ui_menu_accept(struct ui *ui, const char *m)
{
	edbuf_replace(&ui->editor.ed, ui->editor.comp_from, ui->editor.comp_to, m);
	ui_menu_free(ui);
	if (ui->ovl.ov == OV_MENU)
		ui_overlay_pop(ui);
}

/* Take the kernel's completions: insert the only one, or open the menu. */
static void on_complete(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	int start, end;

	(void)s;
	if (ev->type == SESSION_EV_DONE && ev->id == ui->editor.complete_id)
		ui->editor.complete_id = 0;
	if (ev->type != SESSION_EV_REPLY || ev->id != ui->editor.complete_id)
		return;
	start = ev->reply.cursor_start;
	end = ev->reply.cursor_end;
	ui_menu_free(ui);
	for (size_t i = 0; i < ev->reply.nmatches; i++) {
		ui->editor.menu = xrealloc(ui->editor.menu, (ui->editor.nmenu + 1) * sizeof(*ui->editor.menu));
		ui->editor.menu[ui->editor.nmenu++] = xstrdup(ev->reply.matches[i]);
	}
	ui->editor.comp_from = edbuf_cp_to_byte(&ui->editor.ed, start > 0 ? (size_t)start : 0);
	ui->editor.comp_to = edbuf_cp_to_byte(&ui->editor.ed, end > 0 ? (size_t)end : 0);
	if (!ui->editor.nmenu)
		ui_message(ui, "no completions");
	else if (ui->editor.nmenu == 1)
		ui_menu_accept(ui, ui->editor.menu[0]);
	else
		ui_overlay_push(ui, OV_MENU);
}

/* Tab: indent at the start of a line, else ask the kernel for completions. */
void ui_editor_tab(struct ui *ui)
{
	struct strbuf err = STRBUF_INIT;
	size_t start = edbuf_line_start(&ui->editor.ed, edbuf_line(&ui->editor.ed)), i;
	cJSON *params;

	for (i = start; i < ui->editor.ed.cur && ui->editor.ed.text.buf[i] == ' '; i++)
		;
	if (i == ui->editor.ed.cur) {
		edbuf_insert(&ui->editor.ed, ui->editor.ed.indent, strlen(ui->editor.ed.indent));
		return;
	}
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "code", ui->editor.ed.text.buf);
	cJSON_AddNumberToObject(params, "cursor_pos", (double)edbuf_cursor_cp(&ui->editor.ed));
	ui->editor.complete_id = session_request(ui->s, "complete", params, on_complete, ui, &err);
	cJSON_Delete(params);
	if (!ui->editor.complete_id)
		ui_message(ui, "%s", err.buf);
	strbuf_release(&err);
}

/* ---- keys ------------------------------------------------------------------------------- */

int ui_vi_on(const struct ui *ui)
{
	return ui->cfg && ui->cfg->editing_mode == CONFIG_EDITING_VI &&
	       (ui->nbv ? ui->nbv->editing : ui->focus == P_EDITOR);
}

int ui_vi_key(struct ui *ui, int is_key, wint_t ch)
{
	struct editor_pane *ed = &ui->editor;
	int normal = ed->vi.mode == VI_NORMAL;
	enum vi_result r;

	if (!ui_vi_on(ui) || is_key || (ui->key_mods & (KEYMOD_ALT | KEYMOD_CTRL)) ||
	    (ch == '\r' && ui->key_mods))	/* Shift-, Alt-Enter keep their meaning */
		return 0;
	if (normal ? ch < 0x20 && ch != '\r' && ch != 27 && ch != CTRL('r') : ch != 27)
		return 0;
	if (ch == 0x7f)
		return 0;
	r = vi_key(&ed->vi, &ed->ed, &ed->clip, ch);
	if (r == VI_PASS)
		return 0;
	if (ed->vi.msg)
		ui_message(ui, "%s", ed->vi.msg);
	if (r == VI_YANKED)
		ui_clip_send(ui, ed->clip.buf, ed->clip.len);
	if (ui->nbv) {		/* the cell holds what is typed, as edit mode's keys keep it */
		notebook_set_source(&ui->nbv->nb, ui->nbv->sel, ed->ed.text.buf);
		ui_nbview_show_sel(ui);
	}
	if (r == VI_RUN && ui->nbv)
		ui_nbview_run(ui, NB_RUN_STAY);
	else if (r == VI_RUN)
		ui_run_cell(ui);
	return PANE_HANDLED | PANE_REDRAW;
}

/* The editor pane's keys: the key table's (KM_EDITOR), then a paste or a character typed. */
int ui_editor_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	int rc;

	(void)p;
	if (is_key && ch == KEYS_PASTE) {
		/* Pasted text goes in as it is: no auto-indent, and Enter inside it does not run. */
		if (edbuf_insert(&ui->editor.ed, ui->paste, strlen(ui->paste)) < 0)
			ui_message(ui, "the paste is too big for a cell");
		return PANE_HANDLED | PANE_REDRAW;
	}
	if ((rc = keytab_run(ui, KM_EDITOR, is_key, ch)))
		return rc;
	if (!is_key && ch >= 0x20 && ch != 0x7f) {
		char mb[8];
		mbstate_t st;
		size_t n;
		memset(&st, 0, sizeof(st));
		n = wcrtomb(mb, (wchar_t)ch, &st);
		if (n != (size_t)-1 && edbuf_insert(&ui->editor.ed, mb, n) < 0)
			ui_message(ui, "the cell is too big");
		return PANE_HANDLED | PANE_REDRAW;
	}
	return 0;
}
