#ifndef CELLBOX_SGR_H
#define CELLBOX_SGR_H

/*
 * SGR (ESC [ ... m) colour sequences in sanitised kernel output, turned into attributes the
 * screen can draw: a foreground and background colour (an xterm-256 index, or SGR_DEFAULT) and
 * flags. 24-bit colours are mapped to the nearest 256-colour entry; sgr_to_8() degrades
 * further for 8-colour terminals. No terminal code.
 */

#include <stddef.h>

#define SGR_DEFAULT (-1)

enum {
	SGR_BOLD = 1 << 0,
	SGR_DIM = 1 << 1,
	SGR_ITALIC = 1 << 2,
	SGR_UNDERLINE = 1 << 3,
	SGR_REVERSE = 1 << 4,
};

struct sgr_attr {
	int fg, bg;		/* 0..255 or SGR_DEFAULT */
	unsigned flags;
};

/* Back to the default attributes (SGR 0). */
void sgr_reset(struct sgr_attr *a);
/* Apply the parameters of one sequence ("1;31", "38;5;208", "" = reset). */
void sgr_apply(struct sgr_attr *a, const char *params, size_t len);
/*
 * When s[0..len) starts with a complete SGR sequence, apply it and return its length;
 * otherwise return 0 and leave `a` alone.
 */
size_t sgr_take(const char *s, size_t len, struct sgr_attr *a);
/* The 256-colour index nearest to an RGB colour. */
int sgr_rgb_to_256(int r, int g, int b);
/* The RGB value of a 256-colour index. */
void sgr_256_to_rgb(int c, int *r, int *g, int *b);
/* The nearest of the 8 basic colours (0..7) to a 256-colour index; SGR_DEFAULT stays. */
int sgr_to_8(int c);
/* The nearest of the 16 basic and bright colours (0..15); SGR_DEFAULT stays. */
int sgr_to_16(int c);

#endif
