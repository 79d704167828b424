#ifndef CELLBOX_PNGDECODE_H
#define CELLBOX_PNGDECODE_H

/*
 * A kernel's PNG decoded by libpng, the decoder made for hostile PNGs, in this process: the
 * same function pngchild.h runs in a child with limits, and what the fuzzer calls. From
 * memory only (never a path); at most `max_side` pixels a side (png_set_user_limits); every
 * ancillary chunk but tRNS skipped unread (no zTXt, iCCP or iTXt is inflated); libpng's own
 * allocations capped (PNGDECODE_HEAP) and the pixel buffers sized from the checked header;
 * any error (a bad CRC, a cut or overlong IDAT, a palette index out of range, ...) ends the
 * decode through setjmp. Every colour type and bit depth, interlaced or not, comes out as
 * RGB888 composited over white.
 */

#include <stddef.h>
#include "util.h"

#define PNGDECODE_HEAP (8u << 20)	/* libpng's own allocations, all together */

/* Decode `len` bytes to w x h RGB888 pixels (the caller frees); NULL with `why`. */
unsigned char *pngdecode_rgb(const void *png, size_t len, int max_side, int *w, int *h,
			     struct strbuf *why);

#endif
