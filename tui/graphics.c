#include "graphics.h"

#include <stdlib.h>
#include <string.h>
#include <sixel.h>

#define CACHE_SLOTS 4
#define QUERY_TIMEOUT_MS 500
#define BLOCKS_MAX_COLS 120

struct cache_slot {
	int used;
	unsigned long stamp;
	struct graphics_request rq;
	struct graphics_size sz;
	struct strbuf bytes;
};

struct graphics_image {
	int w, h;
	unsigned char *rgb;		/* w * h * 3 bytes, RGB888 */
	struct cache_slot cache[CACHE_SLOTS];
	unsigned long clock;
};

static const struct {
	const char *name;
	enum graphics_mode mode;
} mode_names[] = {
	{ "auto", GRAPHICS_AUTO },
	{ "none", GRAPHICS_NONE },
	{ "blocks", GRAPHICS_BLOCKS },
	{ "sixel", GRAPHICS_SIXEL },
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
	if (tc->r.sixel)
		return GRAPHICS_SIXEL;
	if (tc->r.da1 && color)
		return GRAPHICS_BLOCKS;
	return GRAPHICS_NONE;
}

struct load_ctx {
	struct graphics_image *img;
	struct strbuf *err;
};

/* Take the first frame libsixel decoded, as RGB888. */
static SIXELSTATUS on_frame(sixel_frame_t *frame, void *data)
{
	struct load_ctx *c = data;
	int w = sixel_frame_get_width(frame), h = sixel_frame_get_height(frame);
	int fmt = sixel_frame_get_pixelformat(frame);
	unsigned char *px = sixel_frame_get_pixels(frame);
	unsigned char *pal = sixel_frame_get_palette(frame);
	size_t n;

	if (c->img->rgb)
		return SIXEL_OK;
	if (w <= 0 || h <= 0 || w > 16384 || h > 16384) {
		strbuf_addf(c->err, "image size %dx%d is out of range", w, h);
		return SIXEL_BAD_INPUT;
	}
	n = (size_t)w * h;
	c->img->rgb = xmalloc(n * 3);
	if (fmt == SIXEL_PIXELFORMAT_PAL8 && pal) {
		int ncolors = sixel_frame_get_ncolors(frame);
		for (size_t i = 0; i < n; i++) {
			int k = px[i] < ncolors ? px[i] : 0;
			memcpy(c->img->rgb + 3 * i, pal + 3 * k, 3);
		}
	} else if (fmt == SIXEL_PIXELFORMAT_RGB888) {
		memcpy(c->img->rgb, px, n * 3);
	} else {
		int out_fmt = 0;
		if (SIXEL_FAILED(sixel_helper_normalize_pixelformat(c->img->rgb, &out_fmt, px, fmt,
								     w, h)) ||
		    out_fmt != SIXEL_PIXELFORMAT_RGB888) {
			strbuf_addf(c->err, "unsupported pixel format 0x%x", fmt);
			free(c->img->rgb);
			c->img->rgb = NULL;
			return SIXEL_BAD_INPUT;
		}
	}
	c->img->w = w;
	c->img->h = h;
	return SIXEL_OK;
}

struct graphics_image *graphics_load(const char *path, struct strbuf *err)
{
	struct graphics_image *img = xcalloc(1, sizeof(*img));
	struct strbuf why = STRBUF_INIT;
	struct load_ctx c = { img, &why };
	unsigned char white[3] = { 255, 255, 255 };
	sixel_allocator_t *alloc = NULL;
	SIXELSTATUS st;

	for (int i = 0; i < CACHE_SLOTS; i++)
		strbuf_init(&img->cache[i].bytes, 0);
	/* libsixel reads stdin for "-" and fetches URLs: only plain file paths come here. */
	if (!path || !*path || !strcmp(path, "-") || strstr(path, "://")) {
		strbuf_addf(&why, "not a file path");
		goto fail;
	}
	st = sixel_allocator_new(&alloc, NULL, NULL, NULL, NULL);
	if (SIXEL_FAILED(st)) {
		strbuf_addstr(&why, sixel_helper_format_error(st));
		goto fail;
	}
	st = sixel_helper_load_image_file(path, 1, 0, 256, white, SIXEL_LOOP_DISABLE, on_frame, 0,
					  NULL, &c, alloc);
	sixel_allocator_unref(alloc);
	if (SIXEL_FAILED(st) || !img->rgb) {
		if (!why.len)
			strbuf_addstr(&why, sixel_helper_format_error(st));
		goto fail;
	}
	strbuf_release(&why);
	return img;
fail:
	if (err)
		strbuf_addf(err, "cannot decode '%s': %s", path ? path : "", why.buf);
	strbuf_release(&why);
	graphics_free(img);
	return NULL;
}

void graphics_free(struct graphics_image *img)
{
	if (!img)
		return;
	for (int i = 0; i < CACHE_SLOTS; i++)
		strbuf_release(&img->cache[i].bytes);
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

void graphics_fit(const struct graphics_image *img, const struct graphics_request *rq,
		  struct graphics_size *sz)
{
	int sixel = rq->mode == GRAPHICS_SIXEL;
	int cw = sixel ? (rq->cell_w > 0 ? rq->cell_w : 10) : 1;
	int ch = sixel ? (rq->cell_h > 0 ? rq->cell_h : 20) : 2;
	double box_w = (double)(rq->cols > 0 ? rq->cols : 80) * cw;
	double box_h = rq->rows > 0 ? (double)rq->rows * ch : 1e9;
	double scale = 1.0;

	if (sixel && rq->max_w > 0 && rq->max_w < box_w)
		box_w = rq->max_w;
	if (sixel && rq->max_h > 0 && rq->max_h < box_h)
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

/* Whether two requests ask for the same bytes. */
static int request_equal(const struct graphics_request *a, const struct graphics_request *b)
{
	return a->mode == b->mode && a->flags == b->flags && a->cols == b->cols &&
	       a->rows == b->rows && a->cell_w == b->cell_w && a->cell_h == b->cell_h &&
	       a->max_w == b->max_w && a->max_h == b->max_h && a->colors == b->colors &&
	       a->truecolor == b->truecolor && a->crop_row == b->crop_row &&
	       a->crop_rows == b->crop_rows;
}

/*
 * The image's pixels at w x h, no larger than the image: each output pixel is the average
 * of the source pixels it covers (a box filter: thin plot lines fade rather than vanish,
 * and it reads every source pixel once). A fresh copy, as libsixel dithers in place.
 */
static unsigned char *scaled_pixels(const struct graphics_image *img, int w, int h)
{
	unsigned char *dst = xmalloc((size_t)w * h * 3);
	unsigned *acc, *cnt;

	if (w == img->w && h == img->h) {
		memcpy(dst, img->rgb, (size_t)w * h * 3);
		return dst;
	}
	acc = xcalloc((size_t)w * 3, sizeof(*acc));
	cnt = xcalloc((size_t)w, sizeof(*cnt));
	for (int y = 0, sy = 0; y < h; y++) {
		int sy_end = (int)((long long)(y + 1) * img->h / h);

		if (sy_end <= sy)
			sy_end = sy + 1;
		memset(acc, 0, (size_t)w * 3 * sizeof(*acc));
		memset(cnt, 0, (size_t)w * sizeof(*cnt));
		for (; sy < sy_end && sy < img->h; sy++) {
			const unsigned char *row = img->rgb + (size_t)sy * img->w * 3;
			for (int sx = 0; sx < img->w; sx++) {
				int x = (int)((long long)sx * w / img->w);
				acc[3 * x] += row[3 * sx];
				acc[3 * x + 1] += row[3 * sx + 1];
				acc[3 * x + 2] += row[3 * sx + 2];
				cnt[x]++;
			}
		}
		for (int x = 0; x < w; x++) {
			unsigned n = cnt[x] ? cnt[x] : 1;
			for (int k = 0; k < 3; k++)
				dst[3 * ((size_t)y * w + x) + k] =
					(unsigned char)((acc[3 * x + k] + n / 2) / n);
		}
	}
	free(acc);
	free(cnt);
	return dst;
}

/* libsixel's output callback: append to a strbuf. */
static int sixel_write(char *data, int size, void *priv)
{
	strbuf_add(priv, data, (size_t)size);
	return size;
}

/* Encode w x h RGB pixels (modified: dithered in place) as one sixel DCS. */
static int encode_sixel(unsigned char *px, int w, int h, int colors, struct strbuf *out,
			struct strbuf *err)
{
	sixel_dither_t *dither = NULL;
	sixel_output_t *output = NULL;
	SIXELSTATUS st;
	int rc = -1;

	if (colors <= 0 || colors > 256)
		colors = 256;
	if (colors < 2)
		colors = 2;
	st = sixel_dither_new(&dither, colors, NULL);
	if (SIXEL_FAILED(st))
		goto fail;
	/*
	 * Plots are mostly flat colours with anti-aliased edges: a histogram-exact palette
	 * when it fits (no dithering noise on the white background), else error diffusion.
	 */
	st = sixel_dither_initialize(dither, px, w, h, SIXEL_PIXELFORMAT_RGB888,
				     SIXEL_LARGE_NORM, SIXEL_REP_AVERAGE_PIXELS, SIXEL_QUALITY_HIGH);
	if (SIXEL_FAILED(st))
		goto fail;
	/*
	 * The palette comes out in 5 bits a channel (white as 248, a grey next to the
	 * terminal's white): widen each entry back to 8 bits as 5-to-8 expansion does.
	 */
	{
		unsigned char *pal = sixel_dither_get_palette(dither);
		int n = sixel_dither_get_num_of_palette_colors(dither);

		for (int i = 0; pal && i < 3 * n; i++)
			if ((pal[i] & 7) == 0)
				pal[i] |= pal[i] >> 5;
	}
	sixel_dither_set_diffusion_type(dither,
					sixel_dither_get_num_of_histogram_colors(dither) <= colors
					? SIXEL_DIFFUSE_NONE : SIXEL_DIFFUSE_ATKINSON);
	st = sixel_output_new(&output, sixel_write, out, NULL);
	if (SIXEL_FAILED(st))
		goto fail;
	sixel_output_set_8bit_availability(output, 0);
	sixel_output_set_encode_policy(output, SIXEL_ENCODEPOLICY_FAST);
	st = sixel_encode(px, w, h, 3, dither, output);
	if (SIXEL_FAILED(st))
		goto fail;
	rc = 0;
	goto out;
fail:
	if (err)
		strbuf_addf(err, "sixel encoding failed: %s", sixel_helper_format_error(st));
out:
	if (output)
		sixel_output_unref(output);
	if (dither)
		sixel_dither_unref(dither);
	return rc;
}

/* Wrap a DCS sequence in tmux's passthrough: ESC Ptmux; with every ESC doubled, ESC \. */
static void wrap_tmux(const char *s, size_t len, struct strbuf *out)
{
	strbuf_addstr(out, "\x1bPtmux;");
	for (size_t i = 0; i < len; i++) {
		if (s[i] == 0x1b)
			strbuf_addch(out, 0x1b);
		strbuf_addch(out, s[i]);
	}
	strbuf_addstr(out, "\x1b\\");
}

/* The nearest colour of the xterm 256-colour cube or grey ramp. */
static int color256(const unsigned char *c)
{
	static const int level[6] = { 0, 95, 135, 175, 215, 255 };
	int idx[3], best, best_d, grey, gi, d = 0;

	for (int k = 0; k < 3; k++) {
		int v = c[k], i = v < 48 ? 0 : v < 115 ? 1 : (v - 35) / 40;
		idx[k] = i;
		d += (v - level[i]) * (v - level[i]);
	}
	best = 16 + 36 * idx[0] + 6 * idx[1] + idx[2];
	best_d = d;
	grey = (c[0] + c[1] + c[2]) / 3;
	gi = grey < 8 ? 0 : grey > 238 ? 23 : (grey - 3) / 10;
	if (gi > 23)
		gi = 23;
	d = 0;
	for (int k = 0; k < 3; k++)
		d += (c[k] - (8 + 10 * gi)) * (c[k] - (8 + 10 * gi));
	if (d < best_d)
		best = 232 + gi;
	return best;
}

/* Append one colour as SGR parameters (38 = foreground, 48 = background). */
static void add_color(struct strbuf *out, int which, const unsigned char *c, int truecolor)
{
	if (truecolor)
		strbuf_addf(out, "%d;2;%d;%d;%d", which, c[0], c[1], c[2]);
	else
		strbuf_addf(out, "%d;5;%d", which, color256(c));
}

/* Half-blocks: each cell's top pixel as the foreground of U+2580, the bottom as background. */
static void encode_blocks(const unsigned char *px, int w, int h, int row0, int nrows,
			  const struct graphics_request *rq, struct strbuf *out)
{
	static const unsigned char white[3] = { 255, 255, 255 };

	for (int r = row0; r < row0 + nrows; r++) {
		const unsigned char *last_top = NULL, *last_bot = NULL;

		for (int x = 0; x < w; x++) {
			const unsigned char *top = px + 3 * ((size_t)(2 * r) * w + x);
			const unsigned char *bot = 2 * r + 1 < h ?
				px + 3 * ((size_t)(2 * r + 1) * w + x) : white;
			int same_top = last_top && !memcmp(top, last_top, 3);
			int same_bot = last_bot && !memcmp(bot, last_bot, 3);

			if (!same_top || !same_bot) {
				strbuf_addstr(out, "\x1b[");
				if (!same_top)
					add_color(out, 38, top, rq->truecolor);
				if (!same_top && !same_bot)
					strbuf_addch(out, ';');
				if (!same_bot)
					add_color(out, 48, bot, rq->truecolor);
				strbuf_addch(out, 'm');
			}
			strbuf_addstr(out, "\xe2\x96\x80");	/* U+2580 UPPER HALF BLOCK */
			last_top = top;
			last_bot = bot;
		}
		strbuf_addstr(out, "\x1b[0m");
		if (rq->flags & GRAPHICS_NEWLINES)
			strbuf_addstr(out, "\r\n");
		else if (r + 1 < row0 + nrows)
			strbuf_addf(out, "\x1b[%dD\x1b[B", w);
	}
}

/* Render without the cache. */
static int render(const struct graphics_image *img, const struct graphics_request *rq,
		  struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	unsigned char *px;
	int row0 = 0, nrows, rc = 0;

	graphics_fit(img, rq, sz);
	nrows = sz->rows;
	if (rq->crop_rows > 0) {
		row0 = rq->crop_row < 0 ? 0 : rq->crop_row;
		if (row0 >= sz->rows)
			return 0;
		nrows = rq->crop_rows < sz->rows - row0 ? rq->crop_rows : sz->rows - row0;
	}
	px = scaled_pixels(img, sz->px_w, sz->px_h);
	if (rq->mode == GRAPHICS_BLOCKS) {
		encode_blocks(px, sz->px_w, sz->px_h, row0, nrows, rq, out);
	} else if (rq->mode == GRAPHICS_SIXEL) {
		int ch = rq->cell_h > 0 ? rq->cell_h : 20;
		int y0 = row0 * ch, y1 = (row0 + nrows) * ch;
		struct strbuf dcs = STRBUF_INIT;

		if (y1 > sz->px_h)
			y1 = sz->px_h;
		rc = encode_sixel(px + (size_t)y0 * sz->px_w * 3, sz->px_w, y1 - y0, rq->colors,
				  &dcs, err);
		if (rc == 0 && (rq->flags & GRAPHICS_TMUX_PASSTHROUGH))
			wrap_tmux(dcs.buf, dcs.len, out);
		else if (rc == 0)
			strbuf_add(out, dcs.buf, dcs.len);
		strbuf_release(&dcs);
	} else {
		if (err)
			strbuf_addf(err, "graphics mode '%s' draws nothing",
				    graphics_mode_name(rq->mode));
		rc = -1;
	}
	free(px);
	return rc;
}

int graphics_render(struct graphics_image *img, const struct graphics_request *rq,
		    struct strbuf *out, struct graphics_size *sz, struct strbuf *err)
{
	struct cache_slot *slot = NULL;
	struct graphics_size local;

	if (!sz)
		sz = &local;
	img->clock++;
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
	if (render(img, rq, &slot->bytes, &slot->sz, err) < 0)
		return -1;
	slot->used = 1;
	slot->stamp = img->clock;
	slot->rq = *rq;
	*sz = slot->sz;
	strbuf_add(out, slot->bytes.buf, slot->bytes.len);
	return 0;
}

void graphics_line_init(struct graphics_line *g, enum graphics_mode want, int fd, int color)
{
	memset(g, 0, sizeof(*g));
	if (want == GRAPHICS_NONE) {
		termcap_fill(&g->tc, NULL, fd);
		g->mode = GRAPHICS_NONE;
		return;
	}
	termcap_query(&g->tc, fd, QUERY_TIMEOUT_MS);
	g->mode = graphics_choose(want, &g->tc, color);
}

int graphics_line_plot(void *data, const char *path, FILE *out)
{
	struct graphics_line *g = data;
	struct strbuf err = STRBUF_INIT, buf = STRBUF_INIT;
	struct graphics_request rq = { 0 };
	struct graphics_image *img;
	struct graphics_size sz;
	int rc = -1;

	if (g->mode != GRAPHICS_SIXEL && g->mode != GRAPHICS_BLOCKS)
		return 1;
	img = graphics_load(path, &err);
	if (!img)
		goto out;
	rq.mode = g->mode;
	rq.cell_w = g->tc.cell_w;
	rq.cell_h = g->tc.cell_h;
	rq.rows = g->tc.rows > 4 ? g->tc.rows - 2 : g->tc.rows;	/* fits on one screen */
	rq.truecolor = g->tc.truecolor;
	if (g->mode == GRAPHICS_SIXEL) {
		rq.cols = g->tc.cols;
		rq.max_w = g->tc.r.sixel_max_w;
		rq.max_h = g->tc.r.sixel_max_h;
		rq.colors = g->tc.r.color_registers;
		if (g->tc.tmux && !g->tc.r.sixel)
			rq.flags |= GRAPHICS_TMUX_PASSTHROUGH;
	} else {
		rq.cols = g->tc.cols < BLOCKS_MAX_COLS ? g->tc.cols : BLOCKS_MAX_COLS;
		rq.flags |= GRAPHICS_NEWLINES;
	}
	if (graphics_render(img, &rq, &buf, &sz, &err) < 0)
		goto out;
	/* Sixel leaves the cursor on the image's last text row: go below it. */
	if (g->mode == GRAPHICS_SIXEL)
		strbuf_addstr(&buf, "\r\n");
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
