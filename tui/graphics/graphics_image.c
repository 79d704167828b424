/*
 * An image: a PNG read once (the file checked) and decoded once, and what it keeps for drawing
 * (scaled pixels, the encoded bytes of recent requests, the sixel palette and bands), under
 * one budget for all live images (see graphics.h and graphics_int.h).
 */
#include "graphics_int.h"

#include <stdlib.h>
#include <string.h>

#include "pixels.h"
#include "pngchild.h"
#include "pngdecode.h"
#include "pngfile.h"
#include "sixelpack.h"

#define PNG_MAX (64u << 20)		/* bytes of one PNG file */
#define IMAGE_MAX 8192			/* pixels across or down */

static struct graphics_image *all_images;
static int decode_in_process;		/* the fuzzer's: pngdecode_rgb() here, no child */

void graphics_decode_in_process(int on)
{
	decode_in_process = on;
}
static unsigned long budget_clock;

/* Read and decode the PNG at `path`, or from `fd` when it is >= 0 (`path` then names it). */
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
	if (decode_in_process)
		img->rgb = pngdecode_rgb(img->png.buf, img->png.len, IMAGE_MAX, &img->w, &img->h,
					 &why);
	else
		img->rgb = pngchild_decode(img->png.buf, img->png.len, IMAGE_MAX, NULL, &img->w,
					   &img->h, &why);
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
void graphics_image_trim(const struct graphics_image *keep)
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

/* ---- caches ---- */

/* Count a draw of `img`: its own clock, and the budget's. */
void graphics_image_touch(struct graphics_image *img)
{
	img->clock++;
	img->used_at = ++budget_clock;
}

/* The image's pixels at w x h (ink-keeping or box-filtered), from the cache when there. */
const unsigned char *graphics_image_scaled(struct graphics_image *img, int w, int h, int ink)
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

/* Whether two requests ask for the same bytes. */
static int request_equal(const struct graphics_request *a, const struct graphics_request *b)
{
	return a->mode == b->mode && a->flags == b->flags && a->cols == b->cols &&
	       a->rows == b->rows && a->cell_w == b->cell_w && a->cell_h == b->cell_h &&
	       a->max_w == b->max_w && a->max_h == b->max_h && a->colors == b->colors &&
	       a->truecolor == b->truecolor && a->blocks == b->blocks &&
	       a->crop_row == b->crop_row && a->crop_rows == b->crop_rows;
}

/* The bytes kept for a request equal to `rq` appended to `out`, its size in `sz`: 1; else 0. */
int graphics_image_cached(struct graphics_image *img, const struct graphics_request *rq,
			  struct strbuf *out, struct graphics_size *sz)
{
	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct cache_slot *c = &img->cache[i];
		if (c->used && request_equal(&c->rq, rq)) {
			c->stamp = img->clock;
			*sz = c->sz;
			strbuf_add(out, c->bytes.buf, c->bytes.len);
			return 1;
		}
	}
	return 0;
}

/* The slot of encoded bytes to render into: unused or least recently used, emptied. */
struct cache_slot *graphics_image_slot(struct graphics_image *img)
{
	struct cache_slot *slot = NULL;

	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct cache_slot *c = &img->cache[i];
		if (!slot || !c->used || (slot->used && c->stamp < slot->stamp))
			slot = c;
	}
	strbuf_reset(&slot->bytes);
	slot->used = 0;
	return slot;
}

/* Keep what was rendered into `slot` for requests equal to `rq`. */
void graphics_image_keep(struct graphics_image *img, struct cache_slot *slot,
			 const struct graphics_request *rq)
{
	slot->used = 1;
	slot->stamp = img->clock;
	slot->rq = *rq;
}
