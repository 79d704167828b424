#ifndef CELLBOX_GRAPHICS_INT_H
#define CELLBOX_GRAPHICS_INT_H

/*
 * What the files of graphics share. Internal: included by graphics.c and graphics_image.c.
 * graphics.c is the table of protocols (draw, take off the screen, forget), the choice of one,
 * fitting and rendering through the table. graphics_image.c is the image: read and decoded
 * once, and what it keeps for drawing (scaled pixels, encoded bytes of recent requests, the
 * sixel palette and bands) under one budget for all images.
 */

#include "graphics.h"

#define CACHE_SLOTS 4			/* encoded bytes of recent requests (blocks, iTerm2) */
#define SCALED_SLOTS 2			/* scaled pixels of recent sizes */

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

/* Count a draw of `img`: its own clock, and the budget's (the least recently drawn give up
   their caches first). */
void graphics_image_touch(struct graphics_image *img);
/* The image's pixels at w x h (ink-keeping or box-filtered), from the cache when there. */
const unsigned char *graphics_image_scaled(struct graphics_image *img, int w, int h, int ink);
/* The bytes kept for a request equal to `rq` appended to `out`, its size in `sz`: 1; else 0. */
int graphics_image_cached(struct graphics_image *img, const struct graphics_request *rq,
			  struct strbuf *out, struct graphics_size *sz);
/* The slot of encoded bytes to render into: unused or least recently used, emptied. */
struct cache_slot *graphics_image_slot(struct graphics_image *img);
/* Keep what was rendered into `slot` for requests equal to `rq`. */
void graphics_image_keep(struct graphics_image *img, struct cache_slot *slot,
			 const struct graphics_request *rq);
/* Keep all caches under the budget: the images drawn longest ago give theirs up. */
void graphics_image_trim(const struct graphics_image *keep);

#endif
