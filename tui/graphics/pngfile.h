#ifndef CELLBOX_PNGFILE_H
#define CELLBOX_PNGFILE_H

/*
 * PNG files from the kernel's side of the channel, read as hostile input: opened without
 * following a symbolic link, without blocking, only a regular file, at most `max_bytes`,
 * with a PNG signature and an IHDR of at most `max_side` pixels a side, all checked before
 * anything decodes it. Decoding is pngchild.h's (libpng in a child under limits), from
 * exactly the bytes that were read, so what is drawn from the pixels is what a terminal that
 * gets the PNG itself (kitty, iTerm2) would draw.
 */

#include <stddef.h>
#include "util.h"

/* Read the file at `path` into `png` (appended); 0, or -1 with `why`. */
int pngfile_read(const char *path, size_t max_bytes, int max_side, struct strbuf *png,
		 struct strbuf *why);
/* Check `len` bytes already in memory (a session event's checked plot) the same way: at most
 * `max_bytes`, a PNG of at most `max_side`. 0, or -1 with `why`. */
int pngfile_check(const char *png, size_t len, size_t max_bytes, int max_side,
		  struct strbuf *why);

#endif
