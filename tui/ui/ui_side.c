/* The side pane (this and earlier sessions' history, the plots) and the status line. */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Draw the side pane: this session's history, newest first, and the plots. */
void ui_side_draw(struct ui *ui, struct pane *p)
{
	struct look title = ui_look_of(ui, TH_TITLE, NULL), text = ui_look_of(ui, TH_SIDE, NULL);
	struct look border = ui_look_of(ui, TH_BORDER, NULL);
	int y = p->y, plots_h = ui->nplots ? (int)(ui->nplots < 6 ? ui->nplots : 6) + 1 : 0;
	int hist_end = p->y + p->h - plots_h;

	for (int r = 0; r < p->h; r++) {
		cchar_t cc;
		setcchar(&cc, L"\u2502", border.attr, border.pair, NULL);
		mvadd_wch(p->y + r, p->x, &cc);
	}
	ui_put_text(y++, p->x + 2, p->w - 2, "History", title);
	for (size_t i = ui->editor.nhist; i-- > 0 && y < hist_end;) {
		/* The first line, and an ellipsis when there are more. */
		const char *code = ui->editor.hist[i], *nl = strchr(code, '\n');
		char *first = nl ? xasprintf("%.*s \u2026", (int)(nl - code), code) : xstrdup(code);

		ui_put_text(y++, p->x + 2, p->w - 2, first, text);
		free(first);
	}
	if (plots_h) {
		y = hist_end;
		ui_put_text(y++, p->x + 2, p->w - 2, "Plots", title);
		for (size_t i = ui->nplots; i-- > 0 && y < p->y + p->h;) {
			char buf[64];
			snprintf(buf, sizeof(buf), "%s %d  %dx%d", ui->plots[i].index < 0 ? "image" :
				 "plot", abs(ui->plots[i].index), ui->plots[i].w, ui->plots[i].h);
			ui_put_text(y++, p->x + 2, p->w - 2, buf, i == ui->side.plot_sel ?
				 ui_look_of(ui, TH_MENU_SELECTED, NULL) : text);
		}
	}
}

/* Draw the status line: kernel state, backend, count, duration, theme or a message. */
void ui_status_draw(struct ui *ui, struct pane *p)
{
	static const char spin[] = "|/-\\";
	enum session_state st = ui->s ? session_state(ui->s) : SESSION_STARTING;
	const char *state = "idle";
	int el = TH_STATUS;
	char buf[256];

	if (ui->restarting) {
		state = "restarting", el = TH_STATUS_BUSY;
	} else if (st == SESSION_DEAD) {
		state = "dead", el = TH_STATUS_DEAD;
	} else if (ui_cell_running(ui) || st == SESSION_BUSY) {
		state = "busy", el = TH_STATUS_BUSY;
	} else if (st == SESSION_STARTING) {
		state = "starting", el = TH_STATUS_BUSY;
	}
	ui_fill_row(p->y, p->x, p->w, ui_look_of(ui, TH_STATUS, NULL));
	snprintf(buf, sizeof(buf), " %c %s ", !strcmp(state, "busy") ? spin[ui->status.spinner % 4] : ' ',
		 state);
	{
		int x = ui_put_text(p->y, p->x, p->w, buf, ui_look_of(ui, el, NULL));
		struct strbuf nb = STRBUF_INIT;
		if (ui->nbv) {
			ui_nbview_status(ui, &nb);
			strbuf_addstr(&nb, " \u2502 ");
		}
		if (ui->status.message)
			snprintf(buf, sizeof(buf), " %s", ui->status.message);
		else if (!ui->s)
			snprintf(buf, sizeof(buf), " %sstarting the kernel...", nb.buf);
		else if (ui->nbv)	/* less room: the notebook's part comes first */
			snprintf(buf, sizeof(buf), " %s%s \u2502 [%d] \u2502 %.3f s \u2502 "
				 "F1 help  Ctrl-Q quit", nb.buf, session_backend_name(ui->s),
				 ui->exec_count, ui->last_duration);
		else
			snprintf(buf, sizeof(buf), " %s \u2502 [%d] \u2502 %.3f s \u2502 %s \u2502 "
				 "F1 help  Ctrl-O command  Ctrl-Q quit", session_backend_name(ui->s),
				 ui->exec_count, ui->last_duration, ui->theme.name ? ui->theme.name : "");
		strbuf_release(&nb);
		ui_put_text(p->y, p->x + x, p->w - x, buf, ui_look_of(ui, TH_STATUS, NULL));
	}
}
