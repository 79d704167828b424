/*
 * Plot placement in the frame: the rows a plot reserves under its line, the images placed and
 * cropped to the rows that show, hidden under overlays, and written once a frame after curses'
 * update (only when they moved; curses forgets the cells under the old ones). Also the
 * captured plots' list (decoded once) and the plot viewer's image.
 */
#include "ui.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The captured plot with kernel index `index`, or NULL. */
struct ui_plot *ui_plot_find(struct ui *ui, int index)
{
	for (size_t i = ui->nplots; i-- > 0;)
		if (ui->plots[i].index == index)
			return &ui->plots[i];
	return NULL;
}

/* The request that fits a plot in `cols` x `rows` cells in this terminal's graphics mode. */
void ui_plot_request(const struct ui *ui, int cols, int rows, struct graphics_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->mode = ui->gfx.gmode;
	rq->cols = cols;
	rq->rows = rows;
	rq->cell_w = ui->gfx.tc.cell_w;
	rq->cell_h = ui->gfx.tc.cell_h;
	rq->truecolor = ui->gfx.tc.truecolor;
	rq->blocks = ui->gfx.blocks;
	if (ui->gfx.gmode == GRAPHICS_SIXEL) {
		rq->max_w = ui->gfx.tc.r.sixel_max_w;
		rq->max_h = ui->gfx.tc.r.sixel_max_h;
		rq->colors = ui->gfx.tc.r.color_registers;
		if (ui->gfx.tc.tmux && !ui->gfx.tc.r.sixel)
			rq->flags |= GRAPHICS_TMUX_PASSTHROUGH;
	} else if (ui->gfx.gmode != GRAPHICS_BLOCKS && ui->gfx.tc.tmux) {
		rq->flags |= GRAPHICS_TMUX_PASSTHROUGH;	/* kitty, iTerm2: tmux has neither */
	}
}

/* Whether plots are drawn at all. */
int ui_plots_drawn(const struct ui *ui)
{
	return ui->gfx.gmode != GRAPHICS_NONE && ui->gfx.gmode != GRAPHICS_AUTO;
}

/*
 * The most rows a plot takes in the output pane: half the screen for the pixel protocols;
 * block characters, coarse as they are, get the pane (the screen but the status line and
 * a two-row editor) less six rows, so the plot's line, the text around it and the cell's
 * first row still show with it.
 */
int ui_plot_cap_rows(const struct ui *ui)
{
	if (ui->gfx.gmode == GRAPHICS_BLOCKS)
		return LINES > 15 ? LINES - 9 : 6;
	return LINES > 12 ? LINES / 2 : 6;
}

/* Rows of the image of plot `ch` in the output pane at `width`; 0 when it is not drawn. */
int ui_plot_rows(struct ui *ui, const struct out_chunk *ch, int width)
{
	struct ui_plot *pl;
	struct graphics_request rq;
	struct graphics_size sz;

	if (!ui_plots_drawn(ui))
		return 0;
	pl = ui_plot_find(ui, ch->plot_index);
	if (!pl || width < 4)
		return 0;
	ui_plot_request(ui, width, ui_plot_cap_rows(ui), &rq);
	if (pl->img)
		graphics_fit(pl->img, &rq, &sz);
	else if (pl->index < 0 && pl->w > 0 && pl->h > 0)	/* a file's, let go: its size stays */
		graphics_fit_size(pl->w, pl->h, &rq, &sz);
	else
		return 0;
	return sz.rows;
}

/*
 * Add a plot to the frame: fitted to cols x rows cells, its `height` rows starting at screen
 * row y, drawn where they fall inside screen rows top..bottom-1.
 */
void ui_plot_place(struct ui *ui, struct graphics_image *img, int y, int x, int cols,
		       int rows, int height, int top, int bottom)
{
	struct ui_plot_place *pp;
	int first = y > top ? y : top, end = y + height < bottom ? y + height : bottom;

	if (end <= first || ui->gfx.nplaced >= PLACES_MAX)
		return;
	pp = &ui->gfx.placed[ui->gfx.nplaced++];
	pp->img = img;
	pp->y = first;
	pp->x = x;
	pp->cols = cols;
	pp->rows = rows;
	pp->crop_row = first - y;
	pp->crop_rows = end - first;
}

/* Draw the plot viewer: the gallery's plot on the whole screen but the status line. */
void ui_plot_view_draw(struct ui *ui)
{
	struct ui_plot *pl = ui->side.plot_sel < ui->nplots ? &ui->plots[ui->side.plot_sel] : NULL;
	struct graphics_request rq;
	struct graphics_size sz;
	int h = LINES - 1, w = COLS;
	char title[192];

	if (!pl || h < 4 || w < 10) {
		ui_overlay_pop(ui);
		return;
	}
	snprintf(title, sizeof(title), " plot %d \u00b7 %dx%d \u00b7 %zu of %zu \u00b7 Left/Right: "
		 "other plots \u00b7 s: save as \u00b7 q or Esc closes ", pl->index, pl->w, pl->h,
		 ui->side.plot_sel + 1, ui->nplots);
	ui_draw_box(ui, 0, 0, h, w, title);
	if (!pl->img) {
		char *line = xasprintf("no inline graphics here (--graphics %s); the PNG is %s",
				       graphics_mode_name(ui->gfx.gmode), pl->path ? pl->path : "gone");
		ui_put_text(2, 2, w - 4, line, ui_look_of(ui, TH_OVERLAY, NULL));
		free(line);
		return;
	}
	ui_plot_request(ui, w - 2, h - 2, &rq);
	graphics_fit(pl->img, &rq, &sz);
	ui_plot_place(ui, pl->img, 1, 1 + (w - 2 - sz.cols) / 2, w - 2, h - 2, sz.rows, 1, h - 1);
}

/* Whether two frames draw a plot the same way. */
static int place_equal(const struct ui_plot_place *a, const struct ui_plot_place *b)
{
	return a->img == b->img && a->y == b->y && a->x == b->x && a->cols == b->cols &&
	       a->rows == b->rows && a->crop_row == b->crop_row && a->crop_rows == b->crop_rows;
}

/* Drop the plots an overlay covers: all under the pager, those beside the completion menu. */
void ui_plots_hide(struct ui *ui)
{
	if (ui->ovl.ov == OV_PAGER) {
		ui->gfx.nplaced = 0;
	} else if (ui->ovl.ov == OV_MENU) {
		int h = (int)(ui->editor.nmenu < 10 ? ui->editor.nmenu : 10), top = ui->panes[P_EDITOR].y - h;
		int k = 0;
		for (int i = 0; i < ui->gfx.nplaced; i++)
			if (ui->gfx.placed[i].y + ui->gfx.placed[i].crop_rows <= top)
				ui->gfx.placed[k++] = ui->gfx.placed[i];
		ui->gfx.nplaced = k;
	}
}

/*
 * Before curses' update: when the plots on the terminal are not the ones this frame draws,
 * make curses forget the cells under them (wredrawln), so it rewrites those rows and the
 * old pixels go (kitty placements are not in the cells: plots_write deletes them). Returns
 * whether the plots must be written after the update; sets *cleared when the screen is
 * wiped, which takes kitty's placements with it.
 */
int ui_plots_prepare(struct ui *ui, int *cleared)
{
	int same = ui->gfx.nplaced == ui->gfx.nshown;

	*cleared = is_cleared(curscr) || is_cleared(stdscr);
	for (int i = 0; same && i < ui->gfx.nplaced; i++)
		same = place_equal(&ui->gfx.placed[i], &ui->gfx.shown[i]);
	if (same && !*cleared)
		return 0;
	for (int i = 0; i < ui->gfx.nshown && graphics_mode_in_cells(ui->gfx.gmode); i++)
		wredrawln(stdscr, ui->gfx.shown[i].y, ui->gfx.shown[i].crop_rows);
	return 1;
}

/* The plot this frame places where `old` was shown (the same image), or NULL. */
static const struct ui_plot_place *placed_again(const struct ui *ui, const struct ui_plot_place *old)
{
	for (int i = 0; i < ui->gfx.nplaced; i++)
		if (ui->gfx.placed[i].img == old->img)
			return &ui->gfx.placed[i];
	return NULL;
}

/*
 * After curses' update: write the frame's plots at once, the cursor saved around them.
 * Images in the cells are all drawn again (curses has just rewritten the old ones away);
 * kitty placements that went are deleted, and only those that moved are placed again.
 */
void ui_plots_write(struct ui *ui, int cleared)
{
	int layer = !graphics_mode_in_cells(ui->gfx.gmode);

	strbuf_reset(&ui->gfx.gbuf);
	strbuf_addstr(&ui->gfx.gbuf, "\x1b" "7");	/* DECSC ... DECRC: curses' cursor and colours */
	for (int i = 0; layer && !cleared && i < ui->gfx.nshown; i++) {
		struct graphics_request rq;

		if (!ui->gfx.shown[i].img || placed_again(ui, &ui->gfx.shown[i]))
			continue;
		ui_plot_request(ui, ui->gfx.shown[i].cols, ui->gfx.shown[i].rows, &rq);
		graphics_unplace(ui->gfx.shown[i].img, &rq, &ui->gfx.gbuf);
	}
	for (int i = 0; i < ui->gfx.nplaced; i++) {
		struct ui_plot_place *pp = &ui->gfx.placed[i];
		struct graphics_request rq;

		if (layer && !cleared) {
			int k = 0;
			while (k < ui->gfx.nshown && ui->gfx.shown[k].img != pp->img)
				k++;
			if (k < ui->gfx.nshown && place_equal(pp, &ui->gfx.shown[k]))
				continue;	/* a placement that did not move stays */
		}
		ui_plot_request(ui, pp->cols, pp->rows, &rq);
		rq.crop_row = pp->crop_row;
		rq.crop_rows = pp->crop_rows;
		strbuf_addf(&ui->gfx.gbuf, "\x1b[%d;%dH", pp->y + 1, pp->x + 1);
		graphics_render(pp->img, &rq, &ui->gfx.gbuf, NULL, NULL);
	}
	if (ui->gfx.gbuf.len > 2) {
		strbuf_addstr(&ui->gfx.gbuf, "\x1b" "8");
		fsutil_write_all(1, ui->gfx.gbuf.buf, ui->gfx.gbuf.len);
		ui->gfx.gbytes += ui->gfx.gbuf.len;
	}
	memcpy(ui->gfx.shown, ui->gfx.placed, (size_t)ui->gfx.nplaced * sizeof(*ui->gfx.placed));
	ui->gfx.nshown = ui->gfx.nplaced;
}

/* Make the terminal drop every plot image it holds (kitty), written at once. */
void ui_plots_drop(struct ui *ui)
{
	struct graphics_request rq;

	ui_plot_request(ui, 1, 1, &rq);
	strbuf_reset(&ui->gfx.gbuf);
	for (size_t i = 0; i < ui->nplots; i++)
		if (ui->plots[i].img)
			graphics_forget(ui->plots[i].img, &rq, &ui->gfx.gbuf);
	if (ui->gfx.gbuf.len) {
		fsutil_write_all(1, ui->gfx.gbuf.buf, ui->gfx.gbuf.len);
		ui->gfx.gbytes += ui->gfx.gbuf.len;
	}
}

/* Free a plot's image, making the terminal drop it too (kitty) and the next frame differ. */
void ui_plot_image_free(struct ui *ui, struct graphics_image *img)
{
	struct graphics_request rq;
	struct strbuf sb = STRBUF_INIT;

	if (!img)
		return;
	ui_plot_request(ui, 1, 1, &rq);
	graphics_forget(img, &rq, &sb);
	if (sb.len) {
		fsutil_write_all(1, sb.buf, sb.len);
		ui->gfx.gbytes += sb.len;
	}
	strbuf_release(&sb);
	for (int i = 0; i < ui->gfx.nshown; i++)
		if (ui->gfx.shown[i].img == img)
			ui->gfx.shown[i].img = NULL;	/* freed: the next frame differs */
	graphics_free(img);
}

/*
 * Fill in a captured plot from its event: the session's checked copy (event.h), decoded from
 * the bytes the session read when drawn; nothing is read or checked again here.
 */
void ui_plot_add(struct ui *ui, struct ui_plot *pl, const struct session_plot *plot, int index)
{
	pl->index = index;
	pl->w = plot->width;
	pl->h = plot->height;
	pl->path = xasprintf("%s/%s", session_channel_dir(ui->s), plot->path);
	pl->rel = xstrdup(plot->path);
	pl->dir = xstrdup(session_channel_dir(ui->s));
	pl->img = NULL;
	if (ui_plots_drawn(ui)) {
		struct strbuf err = STRBUF_INIT;

		pl->img = graphics_load_mem(plot->data, plot->len, plot->path, &err);
		if (!pl->img)
			ui_message(ui, "plot %d could not be decoded: %s", index, err.buf);
		strbuf_release(&err);
	}
	ui->side.plot_sel = (size_t)(pl - ui->plots);
}

void ui_plot_names_free(struct ui_plot *pl)
{
	free(pl->path);
	free(pl->rel);
	free(pl->dir);
	pl->path = pl->rel = pl->dir = NULL;
}

/* Forget the captured plots; the output pane keeps their text lines. */
void ui_plots_forget(struct ui *ui)
{
	ui_plots_drop(ui);
	for (size_t i = 0; i < ui->nplots; i++) {
		graphics_free(ui->plots[i].img);
		ui_plot_names_free(&ui->plots[i]);
	}
	ui->nplots = 0;
	ui->side.plot_sel = 0;
	ui->gfx.nplaced = 0;
	for (int i = 0; i < ui->gfx.nshown; i++)
		ui->gfx.shown[i].img = NULL;	/* freed: the next frame differs, whatever it draws */
	for (size_t i = 0; i < ui->out.ncells; i++) {
		struct out_cell *c = ui->out.cells[i];
		for (size_t k = 0; k < c->nchunks; k++)
			if (c->chunks[k].kind == OUT_PLOT)
				c->chunks[k].plot_index = 0;	/* the kernel counts from 1 again */
		c->rows_width = 0;
	}
}
