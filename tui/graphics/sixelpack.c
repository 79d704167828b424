/* Sixel data packed band by band from an image quantised once, the bands cached. */
#include "sixelpack.h"

#include <stdlib.h>
#include <string.h>
#include <sixel.h>

#define PACK_CACHE_MAX (8u << 20)	/* cached band bytes per image and size */
#define MAP_SLOTS (1u << 16)		/* the nearest-colour cache */
#define SEG_GAP 6			/* blank sixels that end a colour's segment */

/* A run of one colour's sixels in a band, from x0 to x1 (x0 < 0: already written). */
struct seg {
	int x0, x1, c;
};

struct sixelpack {
	int w, h, ncolors;
	unsigned char pal[256 * 3];
	unsigned char *idx;		/* w * h palette indices */
	struct strbuf head;		/* the palette as colour definitions, one after another */
	size_t def_at[257];		/* where colour i's definition starts in head */
	char **band;			/* per first row: the full band's sixel data, or NULL */
	size_t *band_len;
	unsigned char (*band_used)[32];	/* per first row: the colours its band uses (bits) */
	size_t cached;			/* bytes in band[] */
	struct strbuf body;		/* a frame's bands, before its header */
	/* Scratch for packing one band. */
	unsigned char *bits;		/* 256 rows of w: the sixel value of each colour */
	int minx[256], maxx[256];
	unsigned char used[256];
	struct seg *segs;
	size_t segs_alloc;
};

/* The image's own colours when there are at most `max`; returns their number or -1. */
static int exact_palette(const unsigned char *rgb, size_t n, int max, unsigned char *pal)
{
	unsigned *seen = xcalloc(1024, sizeof(*seen));	/* open addressing, 0 = empty */
	int count = 0;

	for (size_t i = 0; i < n && count >= 0; i++) {
		unsigned c = 1u << 24 | rgb[3 * i] << 16 | rgb[3 * i + 1] << 8 | rgb[3 * i + 2];
		unsigned h = (c * 2654435761u) >> 22;

		while (seen[h] && seen[h] != c)
			h = (h + 1) & 1023;
		if (seen[h])
			continue;
		if (count == max) {
			count = -1;
			break;
		}
		seen[h] = c;
		memcpy(pal + 3 * count++, rgb + 3 * i, 3);
	}
	free(seen);
	return count;
}

/* libsixel's median-cut palette of `rgb`; its number of colours, or -1 with `err`. */
static int median_palette(const unsigned char *rgb, int w, int h, int colors,
			  unsigned char *pal, struct strbuf *err)
{
	sixel_dither_t *dither = NULL;
	unsigned char *copy = xmalloc((size_t)w * h * 3), *p;
	SIXELSTATUS st;
	int n = -1;

	memcpy(copy, rgb, (size_t)w * h * 3);
	st = sixel_dither_new(&dither, colors, NULL);
	if (SIXEL_SUCCEEDED(st))
		st = sixel_dither_initialize(dither, copy, w, h, SIXEL_PIXELFORMAT_RGB888,
					     SIXEL_LARGE_NORM, SIXEL_REP_AVERAGE_PIXELS,
					     SIXEL_QUALITY_HIGH);
	if (SIXEL_FAILED(st)) {
		strbuf_addf(err, "sixel palette: %s", sixel_helper_format_error(st));
		goto out;
	}
	p = sixel_dither_get_palette(dither);
	n = sixel_dither_get_num_of_palette_colors(dither);
	if (!p || n < 1 || n > 256) {
		strbuf_addstr(err, "sixel palette: no colours");
		n = -1;
		goto out;
	}
	/* The entries come in 5 bits a channel (white as 248): widen them back to 8. */
	for (int i = 0; i < 3 * n; i++)
		pal[i] = (p[i] & 7) == 0 ? (unsigned char)(p[i] | p[i] >> 5) : p[i];
out:
	if (dither)
		sixel_dither_unref(dither);
	free(copy);
	return n;
}

/* Map every pixel to its nearest palette colour (a direct-mapped cache of answers). */
static void map_pixels(struct sixelpack *sp, const unsigned char *rgb)
{
	unsigned *key = xcalloc(MAP_SLOTS, sizeof(*key));
	unsigned char *val = xmalloc(MAP_SLOTS);
	size_t n = (size_t)sp->w * sp->h;

	for (size_t i = 0; i < n; i++) {
		const unsigned char *c = rgb + 3 * i;
		unsigned k = 1u << 24 | c[0] << 16 | c[1] << 8 | c[2];
		unsigned slot = (k * 2654435761u) >> 16;
		int best = 0;
		long best_d = -1;

		if (key[slot] == k) {
			sp->idx[i] = val[slot];
			continue;
		}
		for (int j = 0; j < sp->ncolors; j++) {
			const unsigned char *q = sp->pal + 3 * j;
			long dr = c[0] - q[0], dg = c[1] - q[1], db = c[2] - q[2];
			long d = 3 * dr * dr + 4 * dg * dg + 2 * db * db;

			if (best_d < 0 || d < best_d) {
				best_d = d;
				best = j;
			}
		}
		key[slot] = k;
		val[slot] = (unsigned char)best;
		sp->idx[i] = (unsigned char)best;
	}
	free(key);
	free(val);
}

struct sixelpack *sixelpack_new(const unsigned char *rgb, int w, int h, int colors,
				struct strbuf *err)
{
	struct sixelpack *sp = xcalloc(1, sizeof(*sp));

	if (colors <= 0 || colors > 256)
		colors = 256;
	if (colors < 2)
		colors = 2;
	sp->w = w;
	sp->h = h;
	sp->ncolors = exact_palette(rgb, (size_t)w * h, colors, sp->pal);
	if (sp->ncolors < 0)
		sp->ncolors = median_palette(rgb, w, h, colors, sp->pal, err);
	if (sp->ncolors < 0) {
		free(sp);
		return NULL;
	}
	sp->idx = xmalloc((size_t)w * h);
	map_pixels(sp, rgb);
	strbuf_init(&sp->head, 0);
	strbuf_init(&sp->body, 0);
	for (int i = 0; i < sp->ncolors; i++) {
		const unsigned char *q = sp->pal + 3 * i;
		sp->def_at[i] = sp->head.len;
		strbuf_addf(&sp->head, "#%d;2;%d;%d;%d", i, (q[0] * 100 + 127) / 255,
			    (q[1] * 100 + 127) / 255, (q[2] * 100 + 127) / 255);
	}
	sp->def_at[sp->ncolors] = sp->head.len;
	sp->band = xcalloc((size_t)h, sizeof(*sp->band));
	sp->band_len = xcalloc((size_t)h, sizeof(*sp->band_len));
	sp->band_used = xcalloc((size_t)h, sizeof(*sp->band_used));
	sp->bits = xcalloc(256, (size_t)w);
	return sp;
}

void sixelpack_free(struct sixelpack *sp)
{
	if (!sp)
		return;
	for (int y = 0; y < sp->h; y++)
		free(sp->band[y]);
	free(sp->band);
	free(sp->band_len);
	free(sp->band_used);
	free(sp->segs);
	strbuf_release(&sp->body);
	free(sp->bits);
	free(sp->idx);
	strbuf_release(&sp->head);
	free(sp);
}

size_t sixelpack_bytes(const struct sixelpack *sp)
{
	return sizeof(*sp) + (size_t)sp->w * sp->h + sp->head.alloc + sp->body.alloc +
	       256 * (size_t)sp->w + (size_t)sp->h * (sizeof(*sp->band) + sizeof(*sp->band_len) +
						     sizeof(*sp->band_used)) + sp->cached;
}

/* Append a run of `n` sixels of value `v` (0..63). */
static void add_run(struct strbuf *out, int v, int n)
{
	if (n > 3) {
		strbuf_addf(out, "!%d%c", n, 63 + v);
		return;
	}
	while (n-- > 0)
		strbuf_addch(out, 63 + v);
}

/* Order segments by where they start. */
static int seg_cmp(const void *a, const void *b)
{
	const struct seg *p = a, *q = b;

	return p->x0 != q->x0 ? (p->x0 < q->x0 ? -1 : 1) : p->c - q->c;
}

/* Cut colour c's sixels in [minx, maxx] into segments at gaps longer than SEG_GAP. */
static size_t add_segments(struct sixelpack *sp, size_t n, int c)
{
	const unsigned char *b = sp->bits + (size_t)c * sp->w;

	for (int x = sp->minx[c]; x <= sp->maxx[c];) {
		int x0, last;

		while (x <= sp->maxx[c] && !b[x])
			x++;
		if (x > sp->maxx[c])
			break;
		x0 = last = x;
		for (; x <= sp->maxx[c] && x - last <= SEG_GAP; x++)
			if (b[x])
				last = x;
		if (n == sp->segs_alloc) {
			sp->segs_alloc = sp->segs_alloc ? 2 * sp->segs_alloc : 256;
			sp->segs = xrealloc(sp->segs, sp->segs_alloc * sizeof(*sp->segs));
		}
		sp->segs[n++] = (struct seg){ x0, last, c };
		x = last + 1;
	}
	return n;
}

/*
 * Pack pixel rows y .. y + k - 1 (k <= 6) as one band. Each colour's sixels are cut into
 * segments, and each pass from the left edge ('$' between passes) writes as many segments
 * as fit one after another, of whatever colour, so a band takes few passes. The colours it
 * uses are set in `used` (32 bytes of bits).
 */
static void pack_band(struct sixelpack *sp, int y, int k, struct strbuf *out,
		      unsigned char *used)
{
	unsigned char list[256];
	int n = 0, w = sp->w;

	for (int r = 0; r < k; r++) {
		const unsigned char *row = sp->idx + (size_t)(y + r) * w;
		for (int x = 0; x < w; x++) {
			int c = row[x];
			if (!sp->used[c]) {
				sp->used[c] = 1;
				list[n++] = (unsigned char)c;
				sp->minx[c] = x;
				sp->maxx[c] = x;
			} else if (x < sp->minx[c]) {
				sp->minx[c] = x;
			} else if (x > sp->maxx[c]) {
				sp->maxx[c] = x;
			}
			sp->bits[(size_t)c * w + x] |= (unsigned char)(1 << r);
		}
	}
	size_t nseg = 0, left;

	for (int i = 0; i < n; i++) {
		used[list[i] >> 3] |= (unsigned char)(1 << (list[i] & 7));
		nseg = add_segments(sp, nseg, list[i]);
	}
	qsort(sp->segs, nseg, sizeof(*sp->segs), seg_cmp);
	left = nseg;
	for (int pass = 0; left; pass++) {
		int cursor = 0, cur = -1;

		if (pass)
			strbuf_addch(out, '$');	/* back to the left edge */

		for (size_t i = 0; i < nseg; i++) {
			struct seg *g = &sp->segs[i];
			const unsigned char *b = sp->bits + (size_t)g->c * w;
			int run_v = 0, run_n = 0;

			if (g->x0 < cursor)
				continue;	/* written already (x0 < 0), or overlaps this pass */
			if (g->c != cur)
				strbuf_addf(out, "#%d", g->c);
			cur = g->c;
			add_run(out, 0, g->x0 - cursor);
			for (int x = g->x0; x <= g->x1; x++) {
				if (b[x] == run_v) {
					run_n++;
					continue;
				}
				add_run(out, run_v, run_n);
				run_v = b[x];
				run_n = 1;
			}
			add_run(out, run_v, run_n);
			cursor = g->x1 + 1;
			g->x0 = -1;
			left--;
		}
	}
	for (int i = 0; i < n; i++) {
		int c = list[i];
		memset(sp->bits + (size_t)c * w + sp->minx[c], 0,
		       (size_t)(sp->maxx[c] - sp->minx[c] + 1));
		sp->used[c] = 0;
	}
}

void sixelpack_draw(struct sixelpack *sp, int y0, int y1, struct strbuf *out)
{
	unsigned char used[32] = { 0 };
	struct strbuf *body = &sp->body;

	if (y0 < 0)
		y0 = 0;
	if (y1 > sp->h)
		y1 = sp->h;
	if (y1 <= y0)
		return;
	strbuf_reset(body);
	for (int y = y0; y < y1; y += 6) {
		int k = y1 - y < 6 ? y1 - y : 6, full = sp->h - y < 6 ? sp->h - y : 6;

		if (y > y0)
			strbuf_addch(body, '-');
		if (k < full) {
			pack_band(sp, y, k, body, used);	/* cut short by the crop: not cached */
			continue;
		}
		if (!sp->band[y] && sp->cached < PACK_CACHE_MAX) {
			struct strbuf b = STRBUF_INIT;

			pack_band(sp, y, k, &b, sp->band_used[y]);
			sp->cached += b.alloc;
			sp->band[y] = strbuf_detach(&b, &sp->band_len[y]);
		}
		if (sp->band[y]) {
			strbuf_add(body, sp->band[y], sp->band_len[y]);
			for (int i = 0; i < 32; i++)
				used[i] |= sp->band_used[y][i];
		} else {
			pack_band(sp, y, k, body, used);
		}
	}
	/* The header defines only the colours these bands use. */
	strbuf_addf(out, "\x1bPq\"1;1;%d;%d", sp->w, y1 - y0);
	for (int c = 0; c < sp->ncolors; c++)
		if (used[c >> 3] >> (c & 7) & 1)
			strbuf_add(out, sp->head.buf + sp->def_at[c], sp->def_at[c + 1] - sp->def_at[c]);
	strbuf_add(out, body->buf, body->len);
	strbuf_addstr(out, "\x1b\\");
}
