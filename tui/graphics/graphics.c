/*
 * Plots in the terminal (graphics.h): the table of protocols and the choice of one, fitting an
 * image to its box, and rendering through the table. The image and its caches are
 * graphics_image.c (graphics_int.h); the encoders kitty.c, iterm.c, sixelpack.c, blocks.c.
 */
#include "graphics_int.h"

#include <stdio.h>
#include <string.h>

#include "iterm.h"
#include "kitty.h"
#include "png.h"
#include "sixelpack.h"

/* ---- drawing, one function per protocol ------------------------------------------------- */

/* Append the sixel DCS of pixel rows y0..y1-1 of the image fitted to w x h. */
static int sixel_dcs(struct graphics_image *img, const struct graphics_request *rq,
		     int w, int h, int y0, int y1, struct strbuf *out, struct strbuf *err)
{
	struct strbuf dcs = STRBUF_INIT, why = STRBUF_INIT;

	if (!img->six || img->six_w != w || img->six_h != h || img->six_colors != rq->colors) {
		sixelpack_free(img->six);
		img->six = sixelpack_new(graphics_image_scaled(img, w, h, 0), w, h, rq->colors, &why);
		img->six_w = w, img->six_h = h, img->six_colors = rq->colors;
		if (!img->six) {
			if (err)
				strbuf_addf(err, "sixel encoding failed: %s", why.buf);
			strbuf_release(&why);
			return -1;
		}
	}
	sixelpack_draw(img->six, y0, y1, &dcs);
	if (rq->flags & GRAPHICS_TMUX_PASSTHROUGH)
		graphics_wrap_tmux(dcs.buf, dcs.len, out);
	else
		strbuf_add(out, dcs.buf, dcs.len);
	strbuf_release(&dcs);
	strbuf_release(&why);
	return 0;
}

/* kitty: send the PNG once, then place the crop by a source rectangle. */
static int draw_kitty(struct graphics_image *img, const struct graphics_request *rq,
		      const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
		      struct strbuf *err)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);
	int y0 = (int)((long long)img->h * row0 / sz->rows);
	int y1 = (int)((long long)img->h * (row0 + nrows) / sz->rows);
	char keys[96];

	(void)err;
	if (rq->flags & GRAPHICS_NEWLINES) {	/* scrolling output: draw at the cursor */
		snprintf(keys, sizeof(keys), "a=T,f=100,q=2,c=%d,r=%d", sz->cols, sz->rows);
		kitty_transmit(out, tmux, img->png.buf, img->png.len, keys);
		strbuf_addstr(out, "\r\n");
		return 0;
	}
	if (!img->kitty_id)
		img->kitty_id = kitty_image_id();
	if (!img->kitty_sent) {
		snprintf(keys, sizeof(keys), "a=t,f=100,i=%u,q=2", img->kitty_id);
		kitty_transmit(out, tmux, img->png.buf, img->png.len, keys);
		img->kitty_sent = 1;
	}
	kitty_command(out, tmux, "a=p,i=%u,p=1,x=0,y=%d,w=%d,h=%d,c=%d,r=%d,C=1,q=2",
		      img->kitty_id, y0, img->w, y1 - y0, sz->cols, nrows);
	return 0;
}

/* kitty-unicode: the PNG and its virtual placement once, then placeholder text. */
static int draw_placeholders(struct graphics_image *img, const struct graphics_request *rq,
			     const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
			     struct strbuf *err)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);

	(void)err;
	if (!img->kitty_id)
		img->kitty_id = kitty_image_id();
	if (!img->kitty_sent) {
		char keys[96];
		snprintf(keys, sizeof(keys), "a=T,U=1,f=100,i=%u,c=%d,r=%d,q=2", img->kitty_id,
			 sz->cols, sz->rows);
		kitty_transmit(out, tmux, img->png.buf, img->png.len, keys);
		img->kitty_sent = 1;
	} else if (img->kitty_cols != sz->cols || img->kitty_rows != sz->rows) {
		kitty_command(out, tmux, "a=p,U=1,i=%u,c=%d,r=%d,q=2", img->kitty_id, sz->cols,
			      sz->rows);
	}
	img->kitty_cols = sz->cols;
	img->kitty_rows = sz->rows;
	kitty_placeholders(out, img->kitty_id, row0, nrows, sz->cols,
			   !!(rq->flags & GRAPHICS_NEWLINES));
	return 0;
}

/* iTerm2: the file itself when whole, else a PNG of the visible rows. */
static int draw_iterm(struct graphics_image *img, const struct graphics_request *rq,
		      const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
		      struct strbuf *err)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);
	int cw = rq->cell_w > 0 ? rq->cell_w : 10, ch = rq->cell_h > 0 ? rq->cell_h : 20;

	(void)err;
	if (row0 == 0 && nrows == sz->rows) {
		iterm_image(out, tmux, img->png.buf, img->png.len, sz->cols, sz->rows);
	} else {
		int w = sz->cols * cw, h = sz->rows * ch;
		const unsigned char *px = graphics_image_scaled(img, w, h, 0);
		struct strbuf part = STRBUF_INIT;

		png_encode_rgb(px + (size_t)row0 * ch * w * 3, w, nrows * ch, &part);
		iterm_image(out, tmux, part.buf, part.len, sz->cols, nrows);
		strbuf_release(&part);
	}
	if (rq->flags & GRAPHICS_NEWLINES)
		strbuf_addstr(out, "\r\n");
	return 0;
}

/* Block characters: two colours a cell, from a downscale that keeps lines and text. */
static int draw_blocks(struct graphics_image *img, const struct graphics_request *rq,
		       const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
		       struct strbuf *err)
{
	(void)err;
	blocks_encode(graphics_image_scaled(img, sz->px_w, sz->px_h, 1), sz->cols, sz->rows,
		      rq->blocks ? rq->blocks : BLOCKS_QUADRANT, row0, nrows,
		      rq->truecolor, !!(rq->flags & GRAPHICS_NEWLINES), out);
	return 0;
}

/* Sixel: the bands of the visible rows, from the palette and bands kept for the size. */
static int draw_sixel(struct graphics_image *img, const struct graphics_request *rq,
		      const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
		      struct strbuf *err)
{
	int ch = rq->cell_h > 0 ? rq->cell_h : 20;
	int y1 = (row0 + nrows) * ch < sz->px_h ? (row0 + nrows) * ch : sz->px_h;
	int rc = sixel_dcs(img, rq, sz->px_w, sz->px_h, row0 * ch, y1, out, err);

	if (rc == 0 && (rq->flags & GRAPHICS_NEWLINES))
		strbuf_addstr(out, "\r\n");	/* from the image's last text row */
	return rc;
}

/* kitty: take the placement off the screen (the terminal keeps the image). */
static void unplace_kitty(struct graphics_image *img, const struct graphics_request *rq,
			  struct strbuf *out)
{
	if (img->kitty_sent)
		kitty_command(out, !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH),
			      "a=d,d=i,i=%u,p=1,q=2", img->kitty_id);
}

/* kitty, both ways: make the terminal drop the image and its data. */
static void forget_kitty(struct graphics_image *img, const struct graphics_request *rq,
			 struct strbuf *out)
{
	if (img->kitty_sent)
		kitty_command(out, !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH),
			      "a=d,d=I,i=%u,q=2", img->kitty_id);
}

/* ---- the protocols ---------------------------------------------------------------------- */

/*
 * One row per mode: what draws an image (at the cursor, rows row0.. of the fitted image), what
 * takes it off the screen and what makes the terminal drop it (NULL: nothing to do), as
 * notcurses' termdesc holds its pixel functions. A mode is chosen once (graphics_choose) and
 * every request names it, so each call is a look-up, never a test of modes.
 */
typedef int draw_fn(struct graphics_image *img, const struct graphics_request *rq,
		    const struct graphics_size *sz, int row0, int nrows, struct strbuf *out,
		    struct strbuf *err);
typedef void remove_fn(struct graphics_image *img, const struct graphics_request *rq,
		       struct strbuf *out);

enum {
	IN_CELLS = 1 << 0,	/* the image is the content of its cells (graphics_mode_in_cells) */
	CACHED = 1 << 1,	/* the bytes of a request depend on it alone: kept per request */
};

static const struct protocol {
	const char *name;
	draw_fn *draw;		/* NULL: the mode draws nothing */
	remove_fn *unplace;
	remove_fn *forget;
	unsigned flags;
} protocols[] = {
	[GRAPHICS_AUTO] = { "auto", NULL, NULL, NULL, IN_CELLS },
	[GRAPHICS_NONE] = { "none", NULL, NULL, NULL, IN_CELLS },
	[GRAPHICS_BLOCKS] = { "blocks", draw_blocks, NULL, NULL, IN_CELLS | CACHED },
	/* sixel is assembled from its bands; kitty depends on what the terminal has */
	[GRAPHICS_SIXEL] = { "sixel", draw_sixel, NULL, NULL, IN_CELLS },
	[GRAPHICS_KITTY] = { "kitty", draw_kitty, unplace_kitty, forget_kitty, 0 },
	[GRAPHICS_KITTY_UNICODE] = { "kitty-unicode", draw_placeholders, NULL, forget_kitty,
				     IN_CELLS },
	[GRAPHICS_ITERM] = { "iterm", draw_iterm, NULL, NULL, IN_CELLS | CACHED },
}, unknown = { "?", NULL, NULL, NULL, IN_CELLS };

/* The row of `mode`. */
static const struct protocol *protocol_of(enum graphics_mode mode)
{
	return (unsigned)mode < ARRAY_SIZE(protocols) ? &protocols[mode] : &unknown;
}

int graphics_mode_parse(const char *s, enum graphics_mode *mode)
{
	for (size_t i = 0; i < ARRAY_SIZE(protocols); i++)
		if (s && !strcmp(s, protocols[i].name)) {
			*mode = (enum graphics_mode)i;
			return 0;
		}
	return -1;
}

const char *graphics_mode_name(enum graphics_mode mode)
{
	return protocol_of(mode)->name;
}

enum graphics_mode graphics_choose(enum graphics_mode want, const struct termcap *tc, int color)
{
	if (want != GRAPHICS_AUTO)
		return want;
	if (tc->r.kitty)
		return GRAPHICS_KITTY;
	if (tc->iterm)
		return GRAPHICS_ITERM;
	if (tc->r.sixel)
		return GRAPHICS_SIXEL;
	if (tc->r.da1 && color)
		return GRAPHICS_BLOCKS;
	return GRAPHICS_NONE;
}

enum blocks_kind graphics_blocks_choose(enum blocks_kind want, const struct termcap *tc)
{
	if (want != BLOCKS_AUTO)
		return want;
	return tc->sextants ? BLOCKS_SEXTANT : BLOCKS_QUADRANT;
}

int graphics_mode_in_cells(enum graphics_mode mode)
{
	return !!(protocol_of(mode)->flags & IN_CELLS);
}

/* ---- fitting ---------------------------------------------------------------------------- */

void graphics_fit(const struct graphics_image *img, const struct graphics_request *rq,
		  struct graphics_size *sz)
{
	graphics_fit_size(img->w, img->h, rq, sz);
}

void graphics_fit_size(int w, int h, const struct graphics_request *rq, struct graphics_size *sz)
{
	int cw = rq->cell_w > 0 ? rq->cell_w : 10, ch = rq->cell_h > 0 ? rq->cell_h : 20;
	int cols = rq->cols > 0 ? rq->cols : 80, rows = rq->rows;
	double box_w, box_h, scale = 1.0;

	if (rq->mode == GRAPHICS_KITTY_UNICODE) {
		cols = cols < KITTY_MAX_CELLS ? cols : KITTY_MAX_CELLS;
		rows = rows > 0 && rows < KITTY_MAX_CELLS ? rows : KITTY_MAX_CELLS;
	}
	box_w = (double)cols * cw;
	box_h = rows > 0 ? (double)rows * ch : 1e9;
	if (rq->mode == GRAPHICS_BLOCKS) {
		int sx, sy;

		/* Fill whole cells at the cell's aspect; no more sub-pixels than pixels. */
		blocks_cell_pixels(rq->blocks, &sx, &sy);
		scale = box_w / w;
		if (box_h / h < scale)
			scale = box_h / h;
		if ((double)cw / sx < scale)
			scale = (double)cw / sx;
		if ((double)ch / sy < scale)
			scale = (double)ch / sy;
		sz->cols = (int)(w * scale / cw + 0.5);
		sz->rows = (int)(h * scale / ch + 0.5);
		sz->cols = sz->cols < 1 ? 1 : sz->cols > cols ? cols : sz->cols;
		sz->rows = sz->rows < 1 ? 1 : rows > 0 && sz->rows > rows ? rows : sz->rows;
		sz->px_w = sz->cols * sx;
		sz->px_h = sz->rows * sy;
		return;
	}
	if (rq->mode == GRAPHICS_SIXEL && rq->max_w > 0 && rq->max_w < box_w)
		box_w = rq->max_w;
	if (rq->mode == GRAPHICS_SIXEL && rq->max_h > 0 && rq->max_h < box_h)
		box_h = rq->max_h;
	if (w > box_w)
		scale = box_w / w;
	if (h * scale > box_h)
		scale = box_h / h;
	sz->px_w = (int)(w * scale);
	sz->px_h = (int)(h * scale);
	if (sz->px_w < 1)
		sz->px_w = 1;
	if (sz->px_h < 1)
		sz->px_h = 1;
	sz->cols = (sz->px_w + cw - 1) / cw;
	sz->rows = (sz->px_h + ch - 1) / ch;
}

/* ---- rendering -------------------------------------------------------------------------- */

/* Render without the request cache. */
static int render(struct graphics_image *img, const struct graphics_request *rq,
		  struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	const struct protocol *p = protocol_of(rq->mode);
	int row0 = 0, nrows;

	graphics_fit(img, rq, sz);
	nrows = sz->rows;
	if (rq->crop_rows > 0) {
		row0 = rq->crop_row < 0 ? 0 : rq->crop_row;
		if (row0 >= sz->rows)
			return 0;
		nrows = rq->crop_rows < sz->rows - row0 ? rq->crop_rows : sz->rows - row0;
	}
	if (!p->draw) {
		if (err)
			strbuf_addf(err, "graphics mode '%s' draws nothing",
				    graphics_mode_name(rq->mode));
		return -1;
	}
	return p->draw(img, rq, sz, row0, nrows, out, err);
}

int graphics_render(struct graphics_image *img, const struct graphics_request *rq,
		    struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	struct cache_slot *slot;
	struct graphics_size local;
	int rc;

	if (!sz)
		sz = &local;
	graphics_image_touch(img);
	if (!(protocol_of(rq->mode)->flags & CACHED)) {
		rc = render(img, rq, out, sz, err);
		goto out;
	}
	if (graphics_image_cached(img, rq, out, sz))
		return 0;
	slot = graphics_image_slot(img);
	rc = render(img, rq, &slot->bytes, &slot->sz, err);
	if (rc == 0) {
		graphics_image_keep(img, slot, rq);
		*sz = slot->sz;
		strbuf_add(out, slot->bytes.buf, slot->bytes.len);
	}
out:
	graphics_image_trim(img);
	return rc;
}

void graphics_unplace(struct graphics_image *img, const struct graphics_request *rq,
		      struct strbuf *out)
{
	const struct protocol *p = protocol_of(rq->mode);

	if (p->unplace)
		p->unplace(img, rq, out);
}

void graphics_forget(struct graphics_image *img, const struct graphics_request *rq,
		     struct strbuf *out)
{
	const struct protocol *p = protocol_of(rq->mode);

	if (p->forget)
		p->forget(img, rq, out);
	img->kitty_sent = 0;	/* whatever the terminal had of it is sent again */
}

void graphics_wrap_tmux(const char *s, size_t len, struct strbuf *out)
{
	strbuf_addstr(out, "\x1bPtmux;");
	for (size_t i = 0; i < len; i++) {
		if (s[i] == 0x1b)
			strbuf_addch(out, 0x1b);
		strbuf_addch(out, s[i]);
	}
	strbuf_addstr(out, "\x1b\\");
}
