/* A kernel's PNG decoded by libpng from memory, under limits, to RGB888 over white. */
#include "pngdecode.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <png.h>	/* libpng's: meson.build keeps this folder off the <> search path */

struct reader {
	const unsigned char *p;
	size_t len, at;
	size_t heap;			/* bytes libpng holds now */
	struct strbuf *why;
	size_t why_had;			/* its length before: libpng's first error goes after */
	char warning[96];		/* libpng's first warning, said with the error */
};

/* libpng's allocations go through a header that remembers their size, under one cap. */
struct block {
	size_t size;
	max_align_t align[];
};

static png_voidp heap_alloc(png_structp png, png_alloc_size_t size)
{
	struct reader *r = png_get_mem_ptr(png);
	struct block *b;

	if (size > PNGDECODE_HEAP || r->heap + size > PNGDECODE_HEAP)
		return NULL;		/* libpng reports "out of memory" through its error path */
	b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->size = size;
	r->heap += size;
	return b->align;
}

static void heap_free(png_structp png, png_voidp ptr)
{
	struct reader *r = png_get_mem_ptr(png);
	struct block *b;

	if (!ptr)
		return;
	b = (struct block *)((char *)ptr - offsetof(struct block, align));
	r->heap -= b->size;
	free(b);
}

static void read_mem(png_structp png, png_bytep out, size_t n)
{
	struct reader *r = png_get_io_ptr(png);

	if (n > r->len - r->at)
		png_error(png, "the file ends early");
	memcpy(out, r->p + r->at, n);
	r->at += n;
}

static void on_error(png_structp png, png_const_charp msg)
{
	struct reader *r = png_get_error_ptr(png);

	/* libpng's messages are its own words; a chunk name's odd bytes come escaped */
	if (r->why->len == r->why_had) {
		strbuf_addstr(r->why, msg);
		if (r->warning[0])
			strbuf_addf(r->why, " (%s)", r->warning);
	}
	png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
	struct reader *r = png_get_error_ptr(png);

	if (!r->warning[0])
		snprintf(r->warning, sizeof(r->warning), "%s", msg);
}

/* Composite `n` RGBA pixels over white into RGB. */
static void over_white(const unsigned char *rgba, unsigned char *rgb, size_t n)
{
	for (size_t i = 0; i < n; i++, rgba += 4, rgb += 3) {
		unsigned a = rgba[3];
		if (a == 255) {		/* most pixels of most plots */
			memcpy(rgb, rgba, 3);
			continue;
		}
		for (int c = 0; c < 3; c++)
			rgb[c] = (unsigned char)((rgba[c] * a + 255 * (255 - a) + 127) / 255);
	}
}

/* Set the transforms that make every PNG 8-bit RGBA. */
static void to_rgba(png_structp png, png_infop info)
{
	int type = png_get_color_type(png, info);

	png_set_expand(png);		/* palette to RGB, gray below 8 bits to 8, tRNS to alpha */
	png_set_scale_16(png);
	if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA)
		png_set_gray_to_rgb(png);
	png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);	/* where there is none */
}

/* The decode proper; everything it allocates for the pixels is in *rgba and *rgb. */
static int decode(png_structp png, png_infop info, int max_side, unsigned char *volatile *rgba,
		  unsigned char *volatile *rgb, int *w, int *h)
{
	png_uint_32 pw, ph;
	int passes;
	size_t n;

	if (setjmp(png_jmpbuf(png)))
		return -1;
	png_set_user_limits(png, (png_uint_32)max_side, (png_uint_32)max_side);
	png_set_chunk_cache_max(png, 64);
	png_set_chunk_malloc_max(png, 1u << 20);
	png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, NULL, -1);
	png_read_info(png, info);
	pw = png_get_image_width(png, info);
	ph = png_get_image_height(png, info);
	if (!pw || !ph || pw > (png_uint_32)max_side || ph > (png_uint_32)max_side)
		png_error(png, "image size out of range");
	to_rgba(png, info);
	passes = png_set_interlace_handling(png);
	png_read_update_info(png, info);
	if (png_get_rowbytes(png, info) != (size_t)pw * 4)
		png_error(png, "unexpected row size");
	n = (size_t)pw * ph;
	*rgb = malloc(n * 3);
	/* Interlaced: the passes fill whole rows again and again, so all rows are kept. */
	*rgba = malloc(passes > 1 ? n * 4 : (size_t)pw * 4);
	if (!*rgb || !*rgba)
		png_error(png, "out of memory for the pixels");
	if (passes > 1) {
		for (int p = 0; p < passes; p++)
			for (png_uint_32 y = 0; y < ph; y++)
				png_read_row(png, *rgba + (size_t)y * pw * 4, NULL);
		over_white(*rgba, *rgb, n);
	} else {
		for (png_uint_32 y = 0; y < ph; y++) {
			png_read_row(png, *rgba, NULL);
			over_white(*rgba, *rgb + (size_t)y * pw * 3, pw);
		}
	}
	*w = (int)pw;
	*h = (int)ph;
	return 0;
}

unsigned char *pngdecode_rgb(const void *data, size_t len, int max_side, int *w, int *h,
			     struct strbuf *why)
{
	struct reader r = { data, len, 0, 0, why, why->len, "" };
	unsigned char *volatile rgba = NULL, *volatile rgb = NULL;
	png_structp png;
	png_infop info = NULL;
	int rc = -1;

	*w = *h = 0;
	if (len < 8 || png_sig_cmp(data, 0, 8)) {
		strbuf_addstr(why, "not a PNG");
		return NULL;
	}
	png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, &r, on_error, on_warning, &r,
				       heap_alloc, heap_free);
	if (png)
		info = png_create_info_struct(png);
	if (png && info) {
		png_set_read_fn(png, &r, read_mem);
		rc = decode(png, info, max_side, &rgba, &rgb, w, h);
	}
	png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
	free(rgba);
	if (rc < 0) {
		if (why->len == r.why_had)
			strbuf_addstr(why, "libpng could not decode it");
		free(rgb);
		*w = *h = 0;
		return NULL;
	}
	return rgb;
}
