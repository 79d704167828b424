/*
 * The side pane (F3) and the status line. The pane has tabs (F8 goes to the next): the history
 * of this and earlier sessions with the newest plots under it, the plots, the variables
 * (ui_vars.c). The variables tab takes the keys when it is chosen (Up/Down, Enter: the key
 * table's KM_SIDE rows); Esc, any other key (it goes on to the editor), another tab or hiding
 * the pane gives them back.
 */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDE_WIDE 44		/* the variables tab's width on a screen of ... */
#define SIDE_WIDE_COLS 100	/* ... at least this many columns */

static const char *const tab_names[SIDE_TABS] = { "History", "Plots", "Vars" };

int ui_side_width(const struct ui *ui)
{
	if (!ui->panes[P_SIDE].visible || COLS < 60)
		return 0;
	return ui->side.tab == SIDE_VARS && COLS >= SIDE_WIDE_COLS ? SIDE_WIDE : SIDE_WIDTH;
}

/* Give the keys back to the pane that had them. */
static void side_unfocus(struct ui *ui)
{
	if (ui->focus == P_SIDE)
		ui->focus = ui->side.back_focus;
}

void ui_side_show(struct ui *ui, int on)
{
	ui->panes[P_SIDE].visible = on;
	if (!on)
		side_unfocus(ui);
	else if (ui->side.tab == SIDE_VARS)
		ui_side_tab(ui, SIDE_VARS);
}

void ui_side_tab(struct ui *ui, enum side_tab tab)
{
	ui->side.tab = tab;
	ui->panes[P_SIDE].visible = 1;
	if (tab != SIDE_VARS) {
		side_unfocus(ui);
	} else if (ui->focus != P_SIDE) {
		ui->side.back_focus = ui->focus;
		ui->focus = P_SIDE;
	}
}

/*
 * The variables tab's keys; any other key gives the keys back to the pane that had them and
 * goes there (typing the next cell leaves the list).
 */
int ui_side_key(struct ui *ui, struct pane *p, int is_key, wint_t ch)
{
	struct pane *back;
	int rc;

	(void)p;
	if (ui->focus != P_SIDE)
		return 0;
	rc = keytab_run(ui, KM_SIDE, is_key, ch);
	if (rc & PANE_HANDLED)
		return rc;
	side_unfocus(ui);
	back = &ui->panes[ui->focus];
	return PANE_REDRAW | (back->key && back->visible ? back->key(ui, back, is_key, ch) : 0);
}

/* The tabs' names over the pane, the one shown marked. */
static void draw_tabs(struct ui *ui, struct pane *p)
{
	struct look title = ui_look_of(ui, TH_TITLE, NULL);
	struct look on = ui_look_of(ui, TH_MENU_SELECTED, NULL);
	int x = p->x + 2;

	for (int t = 0; t < SIDE_TABS && x < p->x + p->w; t++) {
		char buf[16];
		snprintf(buf, sizeof(buf), " %s ", tab_names[t]);
		x += ui_put_text(p->y, x, p->x + p->w - x, buf, t == (int)ui->side.tab ? on : title);
	}
}

/* The plots, newest first, in rows y..end-1 (the selected one marked). */
static void draw_plots(struct ui *ui, struct pane *p, int y, int end)
{
	struct look text = ui_look_of(ui, TH_SIDE, NULL);

	for (size_t i = ui->nplots; i-- > 0 && y < end;) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s %d  %dx%d", ui->plots[i].index < 0 ? "image" :
			 "plot", abs(ui->plots[i].index), ui->plots[i].w, ui->plots[i].h);
		ui_put_text(y++, p->x + 2, p->w - 2, buf, i == ui->side.plot_sel ?
			 ui_look_of(ui, TH_MENU_SELECTED, NULL) : text);
	}
}

/* Draw the side pane: its tabs, then the history (newest first) and plots, or the plots, or
 * the variables. */
void ui_side_draw(struct ui *ui, struct pane *p)
{
	struct look title = ui_look_of(ui, TH_TITLE, NULL), text = ui_look_of(ui, TH_SIDE, NULL);
	struct look border = ui_look_of(ui, TH_BORDER, NULL);
	int y = p->y + 1, plots_h = ui->nplots ? (int)(ui->nplots < 6 ? ui->nplots : 6) + 1 : 0;
	int hist_end = p->y + p->h - plots_h;

	if (p->w <= 2 || p->h <= 1)
		return;
	for (int r = 0; r < p->h; r++) {
		cchar_t cc;
		setcchar(&cc, L"\u2502", border.attr, border.pair, NULL);
		mvadd_wch(p->y + r, p->x, &cc);
	}
	draw_tabs(ui, p);
	if (ui->side.tab == SIDE_PLOTS) {
		if (!ui->nplots)
			ui_put_text(y, p->x + 2, p->w - 2, "no plots yet", text);
		draw_plots(ui, p, y, p->y + p->h);
		return;
	}
	if (ui->side.tab == SIDE_VARS) {
		ui_vars_draw(ui, p, y);
		return;
	}
	for (size_t i = ui->editor.nhist; i-- > 0 && y < hist_end;) {
		/* The first line, and an ellipsis when there are more. */
		const char *code = ui->editor.hist[i], *nl = strchr(code, '\n');
		char *first = nl ? xasprintf("%.*s \u2026", (int)(nl - code), code) : xstrdup(code);

		ui_put_text(y++, p->x + 2, p->w - 2, first, text);
		free(first);
	}
	if (plots_h && hist_end > p->y + 1) {
		y = hist_end;
		ui_put_text(y++, p->x + 2, p->w - 2, "Plots", title);
		draw_plots(ui, p, y, p->y + p->h);
	}
}

/*
 * " 1.2 ms": the round trip to the sandbox where it is measured (a channel over a stream, to
 * a remote engine), else "".
 */
static const char *latency(struct ui *ui, char *buf, size_t size)
{
	double ms = ui->s ? session_latency(ui->s) : -1;

	if (ms < 0)
		return "";
	snprintf(buf, size, " %.1f ms", ms);
	return buf;
}

#define USAGE_LOOK_EVERY 0.5	/* seconds between looks at a running cell's sandbox */

int ui_status_sample(struct ui *ui, int busy)
{
	struct status_line *st = &ui->status;
	struct usage_sample now;
	double pct = -1;

	if (!busy || !ui->s) {
		int had = st->live.at > 0;

		usage_sample_clear(&st->live);
		st->cpu_pct = -1;
		st->memory = -1;
		return had;
	}
	if (st->live.at > 0 && clock_now() - st->live.at < USAGE_LOOK_EVERY)
		return 0;
	if (session_usage(ui->s, &now) < 0) {
		usage_sample_clear(&st->live);
		st->live.at = clock_now();	/* not measured here: look again later */
		return 0;
	}
	if (st->live.at > 0 && st->live.cpu_ns >= 0 && now.cpu_ns >= st->live.cpu_ns &&
	    now.at > st->live.at)
		pct = (double)(now.cpu_ns - st->live.cpu_ns) / 1e7 / (now.at - st->live.at);
	st->cpu_pct = pct;
	st->memory = now.memory;
	st->live = now;
	return 1;
}

/*
 * What the sandbox uses for the status line, after " │ ": while a cell runs, "CPU 99%
 * 343 MiB" (live); after, the last cell's "1.00 s CPU, 343 MiB peak"; "" when not measured.
 */
static const char *usage_text(struct ui *ui, int busy, char *buf, size_t size)
{
	const struct status_line *st = &ui->status;
	char used[96] = "", mem[32];

	if (busy && (st->cpu_pct >= 0 || st->memory >= 0)) {
		if (st->memory >= 0)
			usage_format_bytes(st->memory, mem, sizeof(mem));
		if (st->cpu_pct >= 0)
			snprintf(used, sizeof(used), "CPU %.0f%%%s%s", st->cpu_pct,
				 st->memory >= 0 ? " " : "", st->memory >= 0 ? mem : "");
		else
			snprintf(used, sizeof(used), "%s", mem);
	} else if (!busy && st->has_last) {
		usage_format(&st->last, used, sizeof(used));
	}
	snprintf(buf, size, "%s%s", *used ? " \u2502 " : "", used);
	return buf;
}

/*
 * "NAME: " of a named session ("NAME (read-only): " when watching), with the current
 * context's name ("python-1: "), else "".
 */
static const char *session_label(struct ui *ui, char *buf, size_t size)
{
	const char *name = ui->s ? session_named(ui->s) : NULL;
	const char *ctx = ui_context_name(ui);

	if (!name && !ctx)
		return "";
	snprintf(buf, size, "%s%s%s%s: ", name ? name : "", session_read_only(ui->s) ?
		 " (read-only)" : "", name && ctx ? " " : "", ctx ? ctx : "");
	return buf;
}

/* Draw the status line: kernel state, backend (and its latency), count, duration, theme. */
void ui_status_draw(struct ui *ui, struct pane *p)
{
	static const char spin[] = "|/-\\";
	enum session_state st = ui->s ? session_state(ui->s) : SESSION_STARTING;
	const char *state = "idle";
	int el = TH_STATUS;
	char buf[512], lat[32], label[96], used[128];
	int busy = 0;

	if (ui->restarting) {
		state = "restarting", el = TH_STATUS_BUSY;
	} else if (st == SESSION_DEAD) {
		state = "dead", el = TH_STATUS_DEAD;
	} else if (ui_cell_running(ui) || st == SESSION_BUSY) {
		state = "busy", el = TH_STATUS_BUSY;
		busy = ui_cell_running(ui);
	} else if (st == SESSION_STARTING) {
		state = "starting", el = TH_STATUS_BUSY;
	}
	ui_fill_row(p->y, p->x, p->w, ui_look_of(ui, TH_STATUS, NULL));
	snprintf(buf, sizeof(buf), " %c %s ", !strcmp(state, "busy") ? spin[ui->status.spinner % 4] : ' ',
		 state);
	{
		int x = ui_put_text(p->y, p->x, p->w, buf, ui_look_of(ui, el, NULL));
		struct strbuf nb = STRBUF_INIT;
		if (ui_vi_on(ui)) {	/* vi mode's mode, and a command half typed */
			char keys[48];
			struct sgr_attr bold;
			sgr_reset(&bold);
			bold.flags |= SGR_BOLD;
			vi_pending(&ui->editor.vi, keys, sizeof(keys));
			snprintf(buf, sizeof(buf), " -- %s --%s%s ", ui->editor.vi.mode == VI_NORMAL ?
				 "NORMAL" : "INSERT", *keys ? " " : "", keys);
			x += ui_put_text(p->y, p->x + x, p->w - x, buf, ui_look_of(ui, TH_STATUS, &bold));
		}
		if (ui->nbv) {
			ui_nbview_status(ui, &nb);
			strbuf_addstr(&nb, " \u2502 ");
		}
		/* What the sandbox uses goes first when the row is short: F1's hint stays. */
		usage_text(ui, busy, used, sizeof(used));
		for (int pass = 0; pass < 2; pass++) {
			if (ui->status.message)
				snprintf(buf, sizeof(buf), " %s", ui->status.message);
			else if (!ui->s)
				snprintf(buf, sizeof(buf), " %sstarting the kernel...", nb.buf);
			else if (ui->nbv)	/* less room: the notebook's part comes first */
				snprintf(buf, sizeof(buf), " %s%s%s%s \u2502 [%d] \u2502 %.3f s%s "
					 "\u2502 F1 help  Ctrl-Q quit", nb.buf,
					 session_label(ui, label, sizeof(label)),
					 session_backend_name(ui->s), latency(ui, lat, sizeof(lat)),
					 ui->exec_count, ui->last_duration, used);
			else
				snprintf(buf, sizeof(buf), " %s%s%s \u2502 [%d] \u2502 %.3f s%s \u2502 %s "
					 "\u2502 F1 help  Ctrl-O command  Ctrl-Q quit",
					 session_label(ui, label, sizeof(label)),
					 session_backend_name(ui->s), latency(ui, lat, sizeof(lat)),
					 ui->exec_count, ui->last_duration, used,
					 ui->theme.name ? ui->theme.name : "");
			if (!*used || utf8_columns(buf, strlen(buf)) <= p->w - x)
				break;
			*used = 0;
		}
		strbuf_release(&nb);
		ui_put_text(p->y, p->x + x, p->w - x, buf, ui_look_of(ui, TH_STATUS, NULL));
	}
}
