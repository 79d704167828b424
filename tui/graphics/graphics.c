#include "graphics.h"

#include <stdlib.h>
#include <string.h>

#include "iterm.h"
#include "kitty.h"
#include "pixels.h"
#include "pngfile.h"
#include "png.h"
#include "sixelpack.h"

#define CACHE_SLOTS 4			/* encoded bytes of recent requests (blocks, iTerm2) */
#define SCALED_SLOTS 2			/* scaled pixels of recent sizes */
#define QUERY_TIMEOUT_MS 500
#define BLOCKS_MAX_COLS 160
#define PNG_MAX (64u << 20)		/* bytes of one PNG file */
#define IMAGE_MAX 8192			/* pixels across or down */

struct cache_slot {
	int used;
	unsigned long stamp;
	struct graphics_request rq;
	struct graphics_size sz;
	struct strbuf bytes;
};

struct scaled {
	int w, h, ink;
	unsigned long stamp;
	unsigned char *rgb;		/* NULL = free slot */
};

struct graphics_image {
	int w, h;
	unsigned char *rgb;		/* w * h * 3 bytes, RGB888 */
	struct strbuf png;		/* the file, for kitty and iTerm2 */
	unsigned char bg[3];		/* the most common colour (blocks' ink filter) */
	unsigned long clock;
	struct cache_slot cache[CACHE_SLOTS];
	struct scaled scaled[SCALED_SLOTS];
	struct sixelpack *six;		/* the sixel palette and bands of one size */
	int six_w, six_h, six_colors;
	unsigned kitty_id;		/* 0 until first drawn with kitty */
	int kitty_sent;			/* the terminal has the PNG */
	int kitty_cols, kitty_rows;	/* of the virtual placement (kitty-unicode) */
	unsigned long used_at;		/* the budget's clock when last drawn */
	struct graphics_image *prev, *next;	/* every live image, for the budget */
};

static struct graphics_image *all_images;
static unsigned long budget_clock;

static const struct {
	const char *name;
	enum graphics_mode mode;
} mode_names[] = {
	{ "auto", GRAPHICS_AUTO },
	{ "none", GRAPHICS_NONE },
	{ "blocks", GRAPHICS_BLOCKS },
	{ "sixel", GRAPHICS_SIXEL },
	{ "kitty", GRAPHICS_KITTY },
	{ "kitty-unicode", GRAPHICS_KITTY_UNICODE },
	{ "iterm", GRAPHICS_ITERM },
};

int graphics_mode_parse(const char *s, enum graphics_mode *mode)
{
	for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
		if (s && !strcmp(s, mode_names[i].name)) {
			*mode = mode_names[i].mode;
			return 0;
		}
	return -1;
}

const char *graphics_mode_name(enum graphics_mode mode)
{
	for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
		if (mode_names[i].mode == mode)
			return mode_names[i].name;
	return "?";
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
	return mode != GRAPHICS_KITTY;
}

/* Read and decode the PNG at `path`, or the `len` bytes at `data` (`path` then names it). */
static struct graphics_image *load(const char *path, const void *data, size_t len,
				   struct strbuf *err)
{
	struct graphics_image *img = xcalloc(1, sizeof(*img));
	struct strbuf why = STRBUF_INIT;

	strbuf_init(&img->png, 0);
	for (int i = 0; i < CACHE_SLOTS; i++)
		strbuf_init(&img->cache[i].bytes, 0);
	if (data) {
		if (pngfile_check(data, len, PNG_MAX, IMAGE_MAX, &why) < 0)
			goto fail;
		strbuf_add(&img->png, data, len);
	} else if (!path || !*path) {
		strbuf_addstr(&why, "no path");
		goto fail;
	} else if (pngfile_read(path, PNG_MAX, IMAGE_MAX, &img->png, &why) < 0) {
		goto fail;
	}
	img->rgb = pngfile_decode(img->png.buf, img->png.len, IMAGE_MAX, &img->w, &img->h, &why);
	if (!img->rgb)
		goto fail;
	pixels_background(img->rgb, img->w, img->h, img->bg);
	img->next = all_images;
	if (all_images)
		all_images->prev = img;
	all_images = img;
	strbuf_release(&why);
	return img;
fail:
	if (err)
		strbuf_addf(err, "cannot decode '%s': %s", path ? path : "", why.buf);
	strbuf_release(&why);
	graphics_free(img);
	return NULL;
}

struct graphics_image *graphics_load(const char *path, struct strbuf *err)
{
	return load(path, NULL, 0, err);
}

struct graphics_image *graphics_load_mem(const void *png, size_t len, const char *name,
					 struct strbuf *err)
{
	return load(name, png ? png : "", len, err);
}

/* Drop everything the image keeps for drawing; returns the bytes freed. */
static size_t drop_caches(struct graphics_image *img)
{
	size_t n = 0;

	for (int i = 0; i < CACHE_SLOTS; i++) {
		n += img->cache[i].bytes.alloc;
		strbuf_release(&img->cache[i].bytes);
		img->cache[i].used = 0;
	}
	for (int i = 0; i < SCALED_SLOTS; i++) {
		if (img->scaled[i].rgb)
			n += (size_t)img->scaled[i].w * img->scaled[i].h * 3;
		free(img->scaled[i].rgb);
		img->scaled[i].rgb = NULL;
	}
	if (img->six)
		n += sixelpack_bytes(img->six);
	sixelpack_free(img->six);
	img->six = NULL;
	return n;
}

/* Bytes held by an image's caches. */
static size_t cache_bytes(const struct graphics_image *img)
{
	size_t n = img->six ? sixelpack_bytes(img->six) : 0;

	for (int i = 0; i < CACHE_SLOTS; i++)
		n += img->cache[i].bytes.alloc;
	for (int i = 0; i < SCALED_SLOTS; i++)
		if (img->scaled[i].rgb)
			n += (size_t)img->scaled[i].w * img->scaled[i].h * 3;
	return n;
}

size_t graphics_cache_bytes(void)
{
	size_t total = 0;

	for (struct graphics_image *i = all_images; i; i = i->next)
		total += cache_bytes(i);
	return total;
}

/* Keep all caches under the budget: the images drawn longest ago give theirs up. */
static void budget_trim(const struct graphics_image *keep)
{
	size_t total = graphics_cache_bytes();

	while (total > GRAPHICS_CACHE_BUDGET) {
		struct graphics_image *old = NULL;

		for (struct graphics_image *i = all_images; i; i = i->next)
			if (i != keep && cache_bytes(i) && (!old || i->used_at < old->used_at))
				old = i;
		if (!old)
			break;
		total -= drop_caches(old);
	}
}

void graphics_free(struct graphics_image *img)
{
	if (!img)
		return;
	if (img->prev)
		img->prev->next = img->next;
	else if (all_images == img)
		all_images = img->next;
	if (img->next)
		img->next->prev = img->prev;
	drop_caches(img);
	strbuf_release(&img->png);
	free(img->rgb);
	free(img);
}

void graphics_image_size(const struct graphics_image *img, int *w, int *h)
{
	*w = img->w;
	*h = img->h;
}

const unsigned char *graphics_image_rgb(const struct graphics_image *img)
{
	return img->rgb;
}

/* ---- fitting ---------------------------------------------------------------------------- */

void graphics_fit(const struct graphics_image *img, const struct graphics_request *rq,
		  struct graphics_size *sz)
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
		scale = box_w / img->w;
		if (box_h / img->h < scale)
			scale = box_h / img->h;
		if ((double)cw / sx < scale)
			scale = (double)cw / sx;
		if ((double)ch / sy < scale)
			scale = (double)ch / sy;
		sz->cols = (int)(img->w * scale / cw + 0.5);
		sz->rows = (int)(img->h * scale / ch + 0.5);
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
	if (img->w > box_w)
		scale = box_w / img->w;
	if (img->h * scale > box_h)
		scale = box_h / img->h;
	sz->px_w = (int)(img->w * scale);
	sz->px_h = (int)(img->h * scale);
	if (sz->px_w < 1)
		sz->px_w = 1;
	if (sz->px_h < 1)
		sz->px_h = 1;
	sz->cols = (sz->px_w + cw - 1) / cw;
	sz->rows = (sz->px_h + ch - 1) / ch;
}

/* ---- rendering -------------------------------------------------------------------------- */

/* The image's pixels at w x h (ink-keeping or box-filtered), from the cache when there. */
static const unsigned char *scaled(struct graphics_image *img, int w, int h, int ink)
{
	struct scaled *slot = NULL;

	for (int i = 0; i < SCALED_SLOTS; i++) {
		struct scaled *s = &img->scaled[i];
		if (s->rgb && s->w == w && s->h == h && s->ink == ink) {
			s->stamp = img->clock;
			return s->rgb;
		}
		if (!slot || !s->rgb || (slot->rgb && s->stamp < slot->stamp))
			slot = s;
	}
	free(slot->rgb);
	slot->rgb = ink ? pixels_scale_ink(img->rgb, img->w, img->h, w, h, img->bg)
			: pixels_scale_box(img->rgb, img->w, img->h, w, h);
	slot->w = w;
	slot->h = h;
	slot->ink = ink;
	slot->stamp = img->clock;
	return slot->rgb;
}

/* Append the sixel DCS of pixel rows y0..y1-1 of the image fitted to w x h. */
static int render_sixel(struct graphics_image *img, const struct graphics_request *rq,
			int w, int h, int y0, int y1, struct strbuf *out, struct strbuf *err)
{
	struct strbuf dcs = STRBUF_INIT, why = STRBUF_INIT;

	if (!img->six || img->six_w != w || img->six_h != h || img->six_colors != rq->colors) {
		sixelpack_free(img->six);
		img->six = sixelpack_new(scaled(img, w, h, 0), w, h, rq->colors, &why);
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
static void render_kitty(struct graphics_image *img, const struct graphics_request *rq,
			 const struct graphics_size *sz, int row0, int nrows, struct strbuf *out)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);
	int y0 = (int)((long long)img->h * row0 / sz->rows);
	int y1 = (int)((long long)img->h * (row0 + nrows) / sz->rows);
	char keys[96];

	if (rq->flags & GRAPHICS_NEWLINES) {	/* scrolling output: draw at the cursor */
		snprintf(keys, sizeof(keys), "a=T,f=100,q=2,c=%d,r=%d", sz->cols, sz->rows);
		kitty_transmit(out, tmux, img->png.buf, img->png.len, keys);
		strbuf_addstr(out, "\r\n");
		return;
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
}

/* kitty-unicode: the PNG and its virtual placement once, then placeholder text. */
static void render_placeholders(struct graphics_image *img, const struct graphics_request *rq,
				const struct graphics_size *sz, int row0, int nrows,
				struct strbuf *out)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);

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
}

/* iTerm2: the file itself when whole, else a PNG of the visible rows. */
static void render_iterm(struct graphics_image *img, const struct graphics_request *rq,
			 const struct graphics_size *sz, int row0, int nrows, struct strbuf *out)
{
	int tmux = !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH);
	int cw = rq->cell_w > 0 ? rq->cell_w : 10, ch = rq->cell_h > 0 ? rq->cell_h : 20;

	if (row0 == 0 && nrows == sz->rows) {
		iterm_image(out, tmux, img->png.buf, img->png.len, sz->cols, sz->rows);
	} else {
		int w = sz->cols * cw, h = sz->rows * ch;
		const unsigned char *px = scaled(img, w, h, 0);
		struct strbuf part = STRBUF_INIT;

		png_encode_rgb(px + (size_t)row0 * ch * w * 3, w, nrows * ch, &part);
		iterm_image(out, tmux, part.buf, part.len, sz->cols, nrows);
		strbuf_release(&part);
	}
}

/* Render without the request cache. */
static int render(struct graphics_image *img, const struct graphics_request *rq,
		  struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	int row0 = 0, nrows, rc = 0, nl = !!(rq->flags & GRAPHICS_NEWLINES);

	graphics_fit(img, rq, sz);
	nrows = sz->rows;
	if (rq->crop_rows > 0) {
		row0 = rq->crop_row < 0 ? 0 : rq->crop_row;
		if (row0 >= sz->rows)
			return 0;
		nrows = rq->crop_rows < sz->rows - row0 ? rq->crop_rows : sz->rows - row0;
	}
	switch (rq->mode) {
	case GRAPHICS_BLOCKS:
		blocks_encode(scaled(img, sz->px_w, sz->px_h, 1), sz->cols, sz->rows,
			      rq->blocks ? rq->blocks : BLOCKS_QUADRANT, row0, nrows,
			      rq->truecolor, nl, out);
		break;
	case GRAPHICS_SIXEL: {
		int ch = rq->cell_h > 0 ? rq->cell_h : 20;
		int y1 = (row0 + nrows) * ch < sz->px_h ? (row0 + nrows) * ch : sz->px_h;

		rc = render_sixel(img, rq, sz->px_w, sz->px_h, row0 * ch, y1, out, err);
		if (rc == 0 && nl)
			strbuf_addstr(out, "\r\n");	/* from the image's last text row */
		break;
	}
	case GRAPHICS_KITTY:
		render_kitty(img, rq, sz, row0, nrows, out);
		break;
	case GRAPHICS_KITTY_UNICODE:
		render_placeholders(img, rq, sz, row0, nrows, out);
		break;
	case GRAPHICS_ITERM:
		render_iterm(img, rq, sz, row0, nrows, out);
		if (nl)
			strbuf_addstr(out, "\r\n");
		break;
	default:
		if (err)
			strbuf_addf(err, "graphics mode '%s' draws nothing",
				    graphics_mode_name(rq->mode));
		rc = -1;
	}
	return rc;
}

/* Whether two requests ask for the same bytes. */
static int request_equal(const struct graphics_request *a, const struct graphics_request *b)
{
	return a->mode == b->mode && a->flags == b->flags && a->cols == b->cols &&
	       a->rows == b->rows && a->cell_w == b->cell_w && a->cell_h == b->cell_h &&
	       a->max_w == b->max_w && a->max_h == b->max_h && a->colors == b->colors &&
	       a->truecolor == b->truecolor && a->blocks == b->blocks &&
	       a->crop_row == b->crop_row && a->crop_rows == b->crop_rows;
}

int graphics_render(struct graphics_image *img, const struct graphics_request *rq,
		    struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	struct cache_slot *slot = NULL;
	struct graphics_size local;
	int rc;

	if (!sz)
		sz = &local;
	img->clock++;
	img->used_at = ++budget_clock;
	if (rq->mode != GRAPHICS_BLOCKS && rq->mode != GRAPHICS_ITERM) {
		/* kitty depends on what the terminal has; sixel is assembled from its bands. */
		rc = render(img, rq, out, sz, err);
		goto out;
	}
	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct cache_slot *c = &img->cache[i];
		if (c->used && request_equal(&c->rq, rq)) {
			c->stamp = img->clock;
			*sz = c->sz;
			strbuf_add(out, c->bytes.buf, c->bytes.len);
			return 0;
		}
		if (!slot || !c->used || (slot->used && c->stamp < slot->stamp))
			slot = c;
	}
	strbuf_reset(&slot->bytes);
	slot->used = 0;
	rc = render(img, rq, &slot->bytes, &slot->sz, err);
	if (rc == 0) {
		slot->used = 1;
		slot->stamp = img->clock;
		slot->rq = *rq;
		*sz = slot->sz;
		strbuf_add(out, slot->bytes.buf, slot->bytes.len);
	}
out:
	budget_trim(img);
	return rc;
}

void graphics_unplace(struct graphics_image *img, const struct graphics_request *rq,
		      struct strbuf *out)
{
	if (rq->mode == GRAPHICS_KITTY && img->kitty_sent)
		kitty_command(out, !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH),
			      "a=d,d=i,i=%u,p=1,q=2", img->kitty_id);
}

void graphics_forget(struct graphics_image *img, const struct graphics_request *rq,
		     struct strbuf *out)
{
	if ((rq->mode == GRAPHICS_KITTY || rq->mode == GRAPHICS_KITTY_UNICODE) &&
	    img->kitty_sent)
		kitty_command(out, !!(rq->flags & GRAPHICS_TMUX_PASSTHROUGH),
			      "a=d,d=I,i=%u,q=2", img->kitty_id);
	img->kitty_sent = 0;
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

/* ---- the line front ends ---------------------------------------------------------------- */

void graphics_line_init(struct graphics_line *g, enum graphics_mode want,
			enum blocks_kind blocks, int fd, int color)
{
	memset(g, 0, sizeof(*g));
	if (want == GRAPHICS_NONE) {
		termcap_fill(&g->tc, NULL, fd);
		g->mode = GRAPHICS_NONE;
		return;
	}
	termcap_query(&g->tc, fd, QUERY_TIMEOUT_MS);
	g->mode = graphics_choose(want, &g->tc, color);
	g->blocks = graphics_blocks_choose(blocks, &g->tc);
}

int graphics_line_plot(void *data, const void *png, size_t len, const char *path, FILE *out)
{
	struct graphics_line *g = data;
	struct strbuf err = STRBUF_INIT, buf = STRBUF_INIT;
	struct graphics_request rq = { 0 };
	struct graphics_image *img;
	struct graphics_size sz;
	int rc = -1;

	if (g->mode == GRAPHICS_NONE || g->mode == GRAPHICS_AUTO)
		return 1;
	img = png ? graphics_load_mem(png, len, path, &err) : graphics_load(path, &err);
	if (!img)
		goto out;
	rq.mode = g->mode;
	rq.flags = GRAPHICS_NEWLINES;
	rq.cell_w = g->tc.cell_w;
	rq.cell_h = g->tc.cell_h;
	rq.rows = g->tc.rows > 4 ? g->tc.rows - 2 : g->tc.rows;	/* fits on one screen */
	rq.cols = g->tc.cols;
	rq.truecolor = g->tc.truecolor;
	rq.blocks = g->blocks;
	if (g->mode == GRAPHICS_SIXEL) {
		rq.max_w = g->tc.r.sixel_max_w;
		rq.max_h = g->tc.r.sixel_max_h;
		rq.colors = g->tc.r.color_registers;
		if (g->tc.tmux && !g->tc.r.sixel)
			rq.flags |= GRAPHICS_TMUX_PASSTHROUGH;
	} else if (g->mode == GRAPHICS_BLOCKS) {
		rq.cols = g->tc.cols < BLOCKS_MAX_COLS ? g->tc.cols : BLOCKS_MAX_COLS;
	} else if (g->tc.tmux) {
		rq.flags |= GRAPHICS_TMUX_PASSTHROUGH;	/* kitty and iTerm2: tmux has neither */
	}
	if (graphics_render(img, &rq, &buf, &sz, &err) < 0)
		goto out;
	fflush(out);
	fwrite(buf.buf, 1, buf.len, out);
	fflush(out);
	rc = 0;
out:
	graphics_free(img);
	strbuf_release(&buf);
	strbuf_release(&err);
	return rc;
}
