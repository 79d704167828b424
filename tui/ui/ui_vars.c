/*
 * The side pane's variables: the names of the user's namespace with their type, shape and
 * size, as Jupyter's variable inspector shows them. The listing is a silent cell of the
 * kernel's language (kernel.h: vars_list) queued after each cell of the user's while the tab
 * shows and the kernel is idle; the UI never waits for it. It is sent as the user's cells are
 * (not trusted): the security policy reads it, and a policy that refuses it is said in the
 * pane. What comes back is the kernel's, read by varlist.c as hostile. Enter asks for one
 * value (vars_value), which the pager shows sanitised.
 */
#include "ui.h"
#include "sanitize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VARS_TIMEOUT 10.0		/* seconds a listing or a value may take */
#define VALUE_MAX (80u << 10)		/* bytes of a value's text kept */
#define DETAIL_ROWS 5			/* the selected variable's lines under the list */

void ui_vars_stale(struct ui *ui)
{
	ui->side.vars_current = 0;
}

/* Replace the note the pane shows instead of (or over) the listing. */
static void set_note(struct side_pane *sp, const char *note)
{
	free(sp->vars_note);
	sp->vars_note = note ? xstrdup(note) : NULL;
}

/* Keep the output of a helper cell (stdout, up to `max` + 1 bytes) and its first error. */
static void collect(struct strbuf *out, size_t max, char **error, const struct session_event *ev)
{
	if (ev->type == SESSION_EV_STREAM && ev->stream.stream == SESSION_STDOUT &&
	    out->len <= max)
		strbuf_add(out, ev->stream.text, ev->stream.len < max + 1 - out->len ? ev->stream.len
										  : max + 1 - out->len);
	else if (ev->type == SESSION_EV_ERROR && !*error)
		*error = xasprintf("%s%s%s", ev->error.ename ? ev->error.ename : "error",
				   ev->error.evalue ? ": " : "", ev->error.evalue ? ev->error.evalue : "");
}

/* The listing's events: its output, then at its done the list (or why there is none). */
static void on_vars_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct side_pane *sp = &ui->side;
	struct strbuf err = STRBUF_INIT;

	(void)s;
	if (ev->id != sp->vars_req)
		return;
	collect(&sp->vars_out, VARLIST_TEXT_MAX, &sp->vars_error, ev);
	if (ev->type != SESSION_EV_DONE)
		return;
	sp->vars_req = 0;
	sp->vars_asked = 1;
	if (ev->done.reason == REASON_BLOCKED) {
		char *why = xasprintf("no listing: %s (the listing is a cell the policy reads)",
				      ev->done.detail ? ev->done.detail : "blocked by the policy");
		set_note(sp, why);
		free(why);
		varlist_release(&sp->vars);
	} else if (ev->done.detail || ev->done.status != SESSION_STATUS_OK) {
		char *why = xasprintf("no listing: %s", ev->done.detail ? ev->done.detail :
				      sp->vars_error ? sp->vars_error : "the kernel failed it");
		set_note(sp, why);
		free(why);
	} else if (varlist_parse(&sp->vars, sp->vars_out.buf, sp->vars_out.len, &err) < 0) {
		char *why = xasprintf("no listing: %s", err.buf);
		set_note(sp, why);
		free(why);
	} else {
		set_note(sp, NULL);
		if (sp->var_sel >= sp->vars.n)
			sp->var_sel = sp->vars.n ? sp->vars.n - 1 : 0;
	}
	strbuf_reset(&sp->vars_out);
	free(sp->vars_error);
	sp->vars_error = NULL;
	strbuf_release(&err);
}

void ui_vars_refresh(struct ui *ui)
{
	struct side_pane *sp = &ui->side;
	struct strbuf err = STRBUF_INIT;
	const struct kernel_def *k;

	if (sp->vars_current || sp->vars_req || !ui->panes[P_SIDE].visible ||
	    sp->tab != SIDE_VARS || !ui->s || !ui_session_usable(ui) || ui_cell_running(ui) ||
	    (ui->nbv && ui_nbview_busy(ui)))
		return;
	k = session_kernel(ui->s);
	if (!k->vars_list) {
		set_note(sp, "this kernel has no listing of its variables");
		sp->vars_current = 1;
		return;
	}
	strbuf_reset(&sp->vars_out);
	/* Silent, not trusted: the policy checks it as it checks the user's cells. */
	sp->vars_req = session_execute(ui->s, k->vars_list, SESSION_EXEC_SILENT, VARS_TIMEOUT,
				       on_vars_event, ui, &err);
	if (!sp->vars_req) {
		char *why = xasprintf("no listing: %s", err.buf);
		set_note(sp, why);
		free(why);
	}
	sp->vars_current = 1;
	strbuf_release(&err);
}

/* The value's events: its text, then at its done the pager. */
static void on_value_event(struct session *s, const struct session_event *ev, void *data)
{
	struct ui *ui = data;
	struct side_pane *sp = &ui->side;
	char *title;

	(void)s;
	if (ev->id != sp->value_req)
		return;
	collect(&sp->value_out, VALUE_MAX, &sp->value_error, ev);
	if (ev->type != SESSION_EV_DONE)
		return;
	sp->value_req = 0;
	if (sp->value_out.len > VALUE_MAX) {
		sp->value_out.len = VALUE_MAX;
		strbuf_addstr(&sp->value_out, "\n[... cut at 80 KiB]\n");
	}
	if (ev->done.reason == REASON_BLOCKED || sp->value_error || ev->done.detail) {
		strbuf_addf(&sp->value_out, "%s[%s]\n", sp->value_out.len ? "\n" : "",
			    ev->done.detail ? ev->done.detail : sp->value_error);
		if (ev->done.detail && sp->value_error)
			strbuf_addf(&sp->value_out, "%s\n", sp->value_error);
	}
	title = xasprintf("%s", sp->value_name ? sp->value_name : "value");
	ui_pager_open(ui, title, sp->value_out.buf ? sp->value_out.buf : "");	/* sanitised there */
	free(title);
	strbuf_reset(&sp->value_out);
	free(sp->value_error);
	sp->value_error = NULL;
}

void ui_vars_show_value(struct ui *ui)
{
	struct side_pane *sp = &ui->side;
	const struct var_entry *e = sp->var_sel < sp->vars.n ? &sp->vars.v[sp->var_sel] : NULL;
	struct strbuf err = STRBUF_INIT;
	const struct kernel_def *k;
	char *code;

	if (!e) {
		ui_message(ui, "no variable selected");
		return;
	}
	if (!e->raw) {
		ui_message(ui, "that name cannot be asked for (not UTF-8, or too long)");
		return;
	}
	if (sp->value_req) {
		ui_message(ui, "the kernel is still sending a value");
		return;
	}
	if (!ui_session_usable(ui)) {
		ui_message(ui, "the kernel is not running: F6 starts a new one");
		return;
	}
	k = session_kernel(ui->s);
	if (!k->vars_value) {
		ui_message(ui, "this kernel cannot show a value");
		return;
	}
	code = k->vars_value(e->raw);
	strbuf_reset(&sp->value_out);
	sp->value_req = session_execute(ui->s, code, SESSION_EXEC_SILENT, VARS_TIMEOUT,
					on_value_event, ui, &err);
	if (!sp->value_req) {
		ui_message(ui, "cannot ask for the value: %s", err.buf);
	} else {
		free(sp->value_name);
		sp->value_name = xstrdup(e->name);
		if (ui_cell_running(ui))
			ui_message(ui, "the value comes when the running cell is done");
	}
	free(code);
	strbuf_release(&err);
}

void ui_vars_move(struct ui *ui, int by)
{
	struct side_pane *sp = &ui->side;
	int page = ui->panes[P_SIDE].h - 3 - DETAIL_ROWS;
	long sel = (long)sp->var_sel + (by == 2 ? page : by == -2 ? -page : by);

	if (page < 1)
		page = 1;
	if (sel >= (long)sp->vars.n)
		sel = (long)sp->vars.n - 1;
	if (sel < 0)
		sel = 0;
	sp->var_sel = (size_t)sel;
}

/* Text wrapped at the pane's width into rows y..end-1 (sanitised here); the next row. */
static int note_lines(struct ui *ui, struct pane *p, int y, int end, const char *note)
{
	struct look text = ui_look_of(ui, TH_SIDE, NULL);
	struct strbuf clean = STRBUF_INIT;
	size_t from = 0, at = 0;
	int col = 0;

	sanitize_str(note, strlen(note), SAN_NO_CR, &clean);
	while (at <= clean.len && y < end) {
		wchar_t wc = L' ';
		size_t n = at < clean.len ? ui_decode(clean.buf + at, clean.len - at, &wc) : 0;
		int cw = at < clean.len ? ui_char_width(&wc) : 0;

		if (at == clean.len || wc == L'\n' || col + cw > p->w - 2) {
			char *line = xstrndup(clean.buf + from, at - from);
			ui_put_text(y++, p->x + 2, p->w - 2, line, text);
			free(line);
			if (at == clean.len)
				break;
			if (wc == L'\n')
				at += n;
			from = at, col = 0;
			continue;
		}
		at += n ? n : 1, col += cw;
	}
	strbuf_release(&clean);
	return y;
}

/* A line of the selected variable's details, "label  text" (the text sanitised already). */
static void detail(struct ui *ui, struct pane *p, int y, const char *label, const char *text)
{
	struct look title = ui_look_of(ui, TH_TITLE, NULL), plain = ui_look_of(ui, TH_SIDE, NULL);
	int x = ui_put_text(y, p->x + 2, p->w - 2, label, title);

	ui_put_text(y, p->x + 2 + x, p->w - 2 - x, text, plain);
}

void ui_vars_draw(struct ui *ui, struct pane *p, int y)
{
	struct side_pane *sp = &ui->side;
	struct look title = ui_look_of(ui, TH_TITLE, NULL), text = ui_look_of(ui, TH_SIDE, NULL);
	struct look sel = ui_look_of(ui, TH_MENU_SELECTED, NULL);
	int w = p->w - 2, sizew = 8, shapew = 10, typew, namew, end = p->y + p->h;
	int detail_y = end - DETAIL_ROWS, rows, cur_y = p->y;
	char buf[64];

	if (w < 10)
		goto cursor;
	typew = (w - sizew - shapew - 3 + 1) / 2;
	namew = w - sizew - shapew - typew - 3;
	if (detail_y - y < 4)
		detail_y = end;		/* no room for the details */
	if (!sp->vars_asked)	/* no listing yet: not "0 names" */
		snprintf(buf, sizeof(buf), "%s", sp->vars_req || !ui_cell_running(ui) ?
			 "asking the kernel..." : "listed when the cell is done");
	else if (sp->vars.count > (long long)sp->vars.n)
		snprintf(buf, sizeof(buf), "%zu of %lld names", sp->vars.n, sp->vars.count);
	else
		snprintf(buf, sizeof(buf), "%zu name%s%s", sp->vars.n, sp->vars.n == 1 ? "" : "s",
			 sp->vars_req ? " ..." : "");
	ui_put_text(y++, p->x + 2, w, buf, title);
	if (sp->vars_note)
		y = note_lines(ui, p, y, detail_y < y + 4 ? detail_y : y + 4, sp->vars_note);
	if (y >= detail_y)
		goto cursor;
	ui_put_text(y, p->x + 2, namew, "name", title);
	ui_put_text(y, p->x + 3 + namew, typew, "type", title);
	ui_put_text(y, p->x + 4 + namew + typew, shapew, "shape", title);
	ui_put_text(y++, p->x + 5 + namew + typew + shapew, sizew, "    size", title);
	rows = detail_y - y;
	if (rows < 1)
		goto cursor;
	if (sp->var_sel < sp->var_top)
		sp->var_top = sp->var_sel;
	if (sp->var_sel >= sp->var_top + (size_t)rows)
		sp->var_top = sp->var_sel - (size_t)rows + 1;
	for (size_t i = sp->var_top; i < sp->vars.n && y < detail_y; i++, y++) {
		const struct var_entry *e = &sp->vars.v[i];
		int focused = ui->focus == P_SIDE && i == sp->var_sel;

		if (i == sp->var_sel)
			cur_y = y;
		struct look l = focused ? sel : text;
		char size[32];

		if (focused)
			ui_fill_row(y, p->x + 1, p->w - 1, sel);
		varlist_size_text(e->size, size, sizeof(size));
		ui_put_text(y, p->x + 2, namew, e->name, l);
		ui_put_text(y, p->x + 3 + namew, typew, e->type, l);
		ui_put_text(y, p->x + 4 + namew + typew, shapew, e->shape, l);
		snprintf(buf, sizeof(buf), "%*s", sizew, size);
		ui_put_text(y, p->x + 5 + namew + typew + shapew, sizew, buf, l);
	}
	if (detail_y < end && sp->var_sel < sp->vars.n) {
		const struct var_entry *e = &sp->vars.v[sp->var_sel];
		char size[32];

		varlist_size_text(e->size, size, sizeof(size));
		y = detail_y;
		detail(ui, p, y++, "", ui->focus == P_SIDE ? "Enter: its value  Esc: back" :
						  ":vars or F8 to select");
		detail(ui, p, y++, "name  ", e->name);
		detail(ui, p, y++, "type  ", e->type);
		detail(ui, p, y++, "shape ", e->shape[0] ? e->shape : "-");
		detail(ui, p, y++, "size  ", size);
	}
cursor:
	if (ui->focus == P_SIDE)	/* the focused pane draws last: the cursor is its */
		move(cur_y, p->x + 1);
}

void ui_vars_release(struct side_pane *sp)
{
	varlist_release(&sp->vars);
	strbuf_release(&sp->vars_out);
	strbuf_release(&sp->value_out);
	free(sp->vars_note);
	free(sp->value_name);
	free(sp->vars_error);
	free(sp->value_error);
	sp->vars_note = sp->value_name = sp->vars_error = sp->value_error = NULL;
}
