/*
 * A notebook cell's outputs as the output pane draws them: its nbformat outputs (streams,
 * results, errors, displays) turned into the chunks of an out_cell, sanitised on the way in
 * as kernel output is. Images in the file are decoded (from memory) into entries of the plot
 * list with indexes below zero, so that they are placed as a kernel's plots are; only so many
 * are kept decoded, the cells that show decode theirs again.
 */
#include "ui.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NB_IMAGES_MAX 12	/* images of the file kept decoded at once */

/* Forget the images read from the notebook's file (their plot entries go too). */
void ui_nbview_images_forget(struct ui *ui)
{
	size_t k = 0;

	for (size_t i = 0; i < ui->nplots; i++) {
		if (ui->plots[i].index < 0) {
			ui_plot_image_free(ui, ui->plots[i].img);
			ui_plot_names_free(&ui->plots[i]);
			continue;
		}
		ui->plots[k++] = ui->plots[i];
	}
	ui->nplots = k;
	ui->side.plot_sel = k ? k - 1 : 0;
	ui->gfx.nplaced = 0;
	for (int i = 0; i < ui->gfx.nshown; i++)
		ui->gfx.shown[i].img = NULL;	/* the next frame differs */
}

/* A PNG's size from its header; 0 when it is not one. */
static int png_size(const unsigned char *p, size_t n, int *w, int *h)
{
	if (n < 24 || memcmp(p, "\x89PNG\r\n\x1a\n", 8))
		return 0;
	*w = (int)((unsigned)p[16] << 24 | (unsigned)p[17] << 16 | (unsigned)p[18] << 8 | p[19]);
	*h = (int)((unsigned)p[20] << 24 | (unsigned)p[21] << 16 | (unsigned)p[22] << 8 | p[23]);
	return *w > 0 && *h > 0;
}

/* The text of an nbformat string or list of lines, joined (the caller frees it). */
static char *joined(const cJSON *v)
{
	return cellfile_join(v);
}

/* Decode base64 (whitespace allowed); -1 on a bad character. */
static int unbase64(const char *s, struct strbuf *out)
{
	unsigned acc = 0;
	int bits = 0;

	for (; *s; s++) {
		const char *digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		const char *d;

		if (*s == '=' || *s == '\n' || *s == '\r' || *s == ' ')
			continue;
		d = strchr(digits, *s);
		if (!d)
			return -1;
		acc = acc << 6 | (unsigned)(d - digits);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (strbuf_addch(out, (int)((acc >> bits) & 0xff)) < 0)
				return -1;
		}
	}
	return 0;
}

/* Decode a PNG held in memory. */
static struct graphics_image *image_of_png(const struct strbuf *png, struct strbuf *err)
{
	return graphics_load_mem(png->buf, png->len, "the notebook's image", err);
}

/* Keep at most NB_IMAGES_MAX images of the file decoded: the oldest others go. */
static void images_trim(struct ui *ui)
{
	int n = 0;

	for (size_t i = ui->nplots; i-- > 0;)
		if (ui->plots[i].index < 0 && ui->plots[i].img && ++n > NB_IMAGES_MAX) {
			ui_plot_image_free(ui, ui->plots[i].img);
			ui->plots[i].img = NULL;
		}
}

/* A plot entry for an image of the file (decoded when inline graphics draw it). */
static int image_add(struct ui *ui, const char *b64, int *w, int *h)
{
	struct strbuf png = STRBUF_INIT, err = STRBUF_INIT;
	struct ui_plot *pl;
	int index = 0;

	strbuf_set_max(&png, 64u << 20);
	if (unbase64(b64, &png) < 0 || !png_size((const unsigned char *)png.buf, png.len, w, h))
		goto out;
	if (ui->nplots == ui->plots_alloc) {
		ui->plots_alloc = ui->plots_alloc ? 2 * ui->plots_alloc : 8;
		ui->plots = xrealloc(ui->plots, ui->plots_alloc * sizeof(*ui->plots));
	}
	pl = &ui->plots[ui->nplots++];
	memset(pl, 0, sizeof(*pl));
	index = pl->index = ui->nbv->next_image--;
	pl->w = *w;
	pl->h = *h;
	if (ui_plots_drawn(ui)) {
		pl->img = image_of_png(&png, &err);
		if (!pl->img) {
			ui_message(ui, "image: %s", err.buf);
			pl->w = pl->h = 0;	/* no rows kept for what cannot be drawn */
		}
		images_trim(ui);
	}
out:
	strbuf_release(&png);
	strbuf_release(&err);
	return index;
}

/* The cell's outputs (nbformat) as the output pane shows them. */
void ui_nbview_view_build(struct ui *ui, struct nb_cell *c)
{
	struct outmodel *m = &ui->nbv->views;
	const cJSON *o;
	struct out_cell *v = outmodel_cell_new(0, NULL);

	v->count = notebook_cell_count(c);
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(c->json, "outputs")) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
									"output_type"));
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
		const char *png = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data,
									"image/png"));
		char *text = NULL;

		if (!type)
			continue;
		if (!strcmp(type, "stream")) {
			const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
								       o, "name"));
			text = joined(cJSON_GetObjectItemCaseSensitive(o, "text"));
			outmodel_cell_append(m, v, name && !strcmp(name, "stderr") ? OUT_STDERR : OUT_STDOUT,
					text, strlen(text));
		} else if (!strcmp(type, "error")) {
			struct strbuf sb = STRBUF_INIT;
			const cJSON *l;
			cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(o, "traceback"))
				if (cJSON_IsString(l))
					strbuf_addf(&sb, "%s\n", l->valuestring);
			outmodel_cell_append(m, v, OUT_ERROR, sb.buf, sb.len);
			strbuf_release(&sb);
		} else if (png) {
			int w = 0, h = 0, index = image_add(ui, png, &w, &h);
			if (index)
				outmodel_cell_plot(m, v, index, w, h);
		} else {
			const cJSON *plain = cJSON_GetObjectItemCaseSensitive(data, "text/plain");
			char *line;
			text = plain ? joined(plain) : NULL;
			line = ui_rich_bundle(ui, data, text && *text ? text : NULL);
			if (line) {
				outmodel_cell_append(m, v, strcmp(type, "execute_result") ? OUT_STDOUT
										: OUT_RESULT,
						line, strlen(line));
				free(line);
			}
		}
		free(text);
	}
	outmodel_cell_finish(v, 0);
	c->view = v;
}

/* Drop the plot entries of the images a cell's view shows (the view is going). */
void ui_nbview_images_drop(struct ui *ui, const struct out_cell *view)
{
	for (size_t i = 0; view && i < view->nchunks; i++) {
		int index = view->chunks[i].plot_index;
		size_t k = 0;

		if (view->chunks[i].kind != OUT_PLOT || index >= 0)
			continue;
		for (size_t j = 0; j < ui->nplots; j++) {
			if (ui->plots[j].index != index) {
				ui->plots[k++] = ui->plots[j];
				continue;
			}
			ui_plot_image_free(ui, ui->plots[j].img);	/* the next frame differs */
			ui_plot_names_free(&ui->plots[j]);
		}
		ui->nplots = k;
	}
	if (ui->side.plot_sel >= ui->nplots)
		ui->side.plot_sel = ui->nplots ? ui->nplots - 1 : 0;
}

/* Decode again the images of a cell that shows whose decoded image was let go. */
void ui_nbview_view_images(struct ui *ui, struct nb_cell *c)
{
	int missing = 0;

	for (size_t i = 0; c->view && i < c->view->nchunks; i++) {
		const struct out_chunk *ch = &c->view->chunks[i];
		const struct ui_plot *pl;
		if (ch->kind != OUT_PLOT || ch->plot_index >= 0)
			continue;
		pl = ui_plot_find(ui, ch->plot_index);
		missing |= !pl || (!pl->img && ui_plots_drawn(ui));
	}
	if (missing && !c->req) {
		ui_nbview_images_drop(ui, c->view);
		outmodel_cell_free(c->view);
		c->view = NULL;
		ui_nbview_view_build(ui, c);
		c->rows_width = 0;
	}
}

