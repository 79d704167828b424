/* Notebook mode: saving, quitting with unsaved changes, autosave and recovery, :stats. */
#include "ui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ui_nbview_save(struct ui *ui, const char *path, int force, struct strbuf *msg)
{
	struct nbview *v = ui->nbv;
	int rc;

	if (v->editing)
		notebook_set_source(&v->nb, v->sel, ui->editor.ed.text.buf);
	rc = notebook_save(&v->nb, path, force, msg);
	if (rc < 0)
		return -1;
	strbuf_addf(msg, "saved %zu cells to '%s'", v->nb.ncells, v->nb.path);
	v->quit_armed = 0;
	return 0;
}

int ui_nbview_may_quit(struct ui *ui)
{
	struct nbview *v = ui->nbv;

	if (!v || !v->nb.dirty || v->quit_armed)
		return 1;
	v->quit_armed = 1;
	ui_message(ui, "unsaved changes: Ctrl-S saves them; Ctrl-Q again (or :q!) quits without");
	return 0;
}

int ui_nbview_autosave(struct ui *ui)
{
	struct nbview *v = ui->nbv;
	struct strbuf err = STRBUF_INIT;
	double now = clock_now(), due;

	if (!v || !v->nb.dirty || v->nb.autosaved_at > v->nb.changed_at)
		return -1;
	/* 2 s after the last change, or 10 s after the last autosave while changes go on */
	due = v->nb.changed_at + 2;
	if (v->nb.autosaved_at && v->nb.autosaved_at + 10 < due)
		due = v->nb.autosaved_at + 10;
	if (now < due)
		return (int)((due - now) * 1000) + 1;
	if (v->editing)
		notebook_set_source(&v->nb, v->sel, ui->editor.ed.text.buf);
	if (notebook_autosave(&v->nb, &err) < 0) {
		ui_message(ui, "autosave: %s", err.buf);
		v->nb.autosaved_at = now;	/* not again at once */
	}
	strbuf_release(&err);
	return -1;
}

/* Write the recovery file now (leaving after a signal: what is unsaved stays beside it). */
void ui_nbview_autosave_now(struct ui *ui)
{
	struct nbview *v = ui->nbv;
	struct strbuf err = STRBUF_INIT;

	if (!v || !v->nb.dirty)
		return;
	if (v->editing)
		notebook_set_source(&v->nb, v->sel, ui->editor.ed.text.buf);
	notebook_autosave(&v->nb, &err);
	strbuf_release(&err);
}

/* Draw the question about a recovery file. */
void ui_nbview_draw_recover(struct ui *ui)
{
	int h = 7, w = COLS > 72 ? 72 : COLS - 2, y = (LINES - h) / 2, x = (COLS - w) / 2;
	struct look lk = ui_look_of(ui, TH_OVERLAY, NULL);
	char *rec = ui->nbv ? notebook_recovery_path(&ui->nbv->nb) : NULL;

	if (!rec || w < 20 || LINES < h + 1)
		goto out;
	ui_draw_box(ui, y, x, h, w, " unsaved changes were found ");
	ui_put_text(y + 2, x + 2, w - 4, "cellbox did not close this notebook cleanly; its last", lk);
	ui_put_text(y + 3, x + 2, w - 4, "unsaved state is kept beside it.", lk);
	ui_put_text(y + 5, x + 2, w - 4, "r: recover it   d: discard it   Esc: decide later", lk);
out:
	free(rec);
}

/* The recovery question's keys. */
int ui_nbview_recover_key(struct ui *ui, int is_key, wint_t ch)
{
	struct strbuf err = STRBUF_INIT;
	struct nbview *v = ui->nbv;

	if (is_key || !v)
		return PANE_HANDLED;
	if (ch == 'r') {
		if (notebook_recover(&v->nb, &err) < 0) {
			ui_message(ui, "cannot recover: %s", err.buf);
		} else {
			ui_nbview_images_forget(ui);
			v->sel = v->top = 0;
			v->top_row = 0;
			ui_message(ui, "recovered %zu cells (not saved yet: Ctrl-S saves them)",
				   v->nb.ncells);
		}
		ui_overlay_pop(ui);
	} else if (ch == 'd') {
		notebook_discard_recovery(&v->nb);
		ui_message(ui, "the recovery file is gone");
		ui_overlay_pop(ui);
	} else if (ch == 27 || ch == 'q') {
		ui_overlay_pop(ui);
	}
	strbuf_release(&err);
	return PANE_HANDLED | PANE_REDRAW;
}

/* :stats: how fast the first frame came, the notebook's size, memory. */
int ui_nbcmd_stats(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	struct strbuf status = STRBUF_INIT;
	const char *rss = NULL;

	(void)argc, (void)argv;
	if (strbuf_read_file(&status, "/proc/self/status", 1 << 16) == 0)
		rss = strstr(status.buf, "VmRSS:");
	strbuf_addf(msg, "first frame %.1f ms after start", (ui->t_first_frame - ui->t_start) * 1e3);
	if (ui->nbv)
		strbuf_addf(msg, "; %zu cells", ui->nbv->nb.ncells);
	if (rss)
		strbuf_addf(msg, "; resident %ld kB", strtol(rss + 6, NULL, 10));
	strbuf_release(&status);
	return 0;
}
