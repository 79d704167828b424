/* SGR sequences to drawing attributes, and colour degradation. */
#include "sgr.h"

#include <stdlib.h>
#include <string.h>

void sgr_reset(struct sgr_attr *a)
{
	a->fg = a->bg = SGR_DEFAULT;
	a->flags = 0;
}

/* Read the next number of a parameter list (missing = 0); advance *p past a ';' or ':'. */
static int next_param(const char **p, const char *end)
{
	int v = 0;

	while (*p < end && **p >= '0' && **p <= '9') {
		if (v < 100000)
			v = v * 10 + (**p - '0');
		(*p)++;
	}
	if (*p < end && (**p == ';' || **p == ':'))
		(*p)++;
	return v;
}

/* Read an extended colour (after 38 / 48): 5;n or 2;r;g;b. Returns -2 when malformed. */
static int extended(const char **p, const char *end)
{
	int kind = *p < end ? next_param(p, end) : -1;

	if (kind == 5 && *p <= end) {
		int n = next_param(p, end);
		return n <= 255 ? n : -2;
	}
	if (kind == 2) {
		int r = next_param(p, end), g = next_param(p, end), b = next_param(p, end);
		if (r > 255 || g > 255 || b > 255)
			return -2;
		return sgr_rgb_to_256(r, g, b);
	}
	return -2;
}

void sgr_apply(struct sgr_attr *a, const char *params, size_t len)
{
	const char *p = params, *end = params + len;

	if (!len) {
		sgr_reset(a);
		return;
	}
	while (p < end) {
		int v = next_param(&p, end), c;

		switch (v) {
		case 0: sgr_reset(a); break;
		case 1: a->flags |= SGR_BOLD; break;
		case 2: a->flags |= SGR_DIM; break;
		case 3: a->flags |= SGR_ITALIC; break;
		case 4: a->flags |= SGR_UNDERLINE; break;
		case 7: a->flags |= SGR_REVERSE; break;
		case 22: a->flags &= ~(unsigned)(SGR_BOLD | SGR_DIM); break;
		case 23: a->flags &= ~(unsigned)SGR_ITALIC; break;
		case 24: a->flags &= ~(unsigned)SGR_UNDERLINE; break;
		case 27: a->flags &= ~(unsigned)SGR_REVERSE; break;
		case 39: a->fg = SGR_DEFAULT; break;
		case 49: a->bg = SGR_DEFAULT; break;
		case 38:
		case 48:
			c = extended(&p, end);
			if (c >= 0)
				*(v == 38 ? &a->fg : &a->bg) = c;
			break;
		default:
			if (v >= 30 && v <= 37)
				a->fg = v - 30;
			else if (v >= 40 && v <= 47)
				a->bg = v - 40;
			else if (v >= 90 && v <= 97)
				a->fg = v - 90 + 8;
			else if (v >= 100 && v <= 107)
				a->bg = v - 100 + 8;
			break;
		}
	}
}

size_t sgr_take(const char *s, size_t len, struct sgr_attr *a)
{
	size_t i = 2;

	if (len < 3 || s[0] != '\x1b' || s[1] != '[')
		return 0;
	while (i < len && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';' || s[i] == ':'))
		i++;
	if (i >= len || s[i] != 'm')
		return 0;
	sgr_apply(a, s + 2, i - 2);
	return i + 1;
}

static const int basic_rgb[16][3] = {
	{ 0, 0, 0 }, { 205, 0, 0 }, { 0, 205, 0 }, { 205, 205, 0 },
	{ 0, 0, 238 }, { 205, 0, 205 }, { 0, 205, 205 }, { 229, 229, 229 },
	{ 127, 127, 127 }, { 255, 0, 0 }, { 0, 255, 0 }, { 255, 255, 0 },
	{ 92, 92, 255 }, { 255, 0, 255 }, { 0, 255, 255 }, { 255, 255, 255 },
};

static const int cube[6] = { 0, 95, 135, 175, 215, 255 };

void sgr_256_to_rgb(int c, int *r, int *g, int *b)
{
	if (c < 16) {
		*r = basic_rgb[c][0], *g = basic_rgb[c][1], *b = basic_rgb[c][2];
	} else if (c < 232) {
		c -= 16;
		*r = cube[c / 36], *g = cube[c / 6 % 6], *b = cube[c % 6];
	} else {
		*r = *g = *b = 8 + (c - 232) * 10;
	}
}

/* Squared distance between two colours. */
static int dist(int r1, int g1, int b1, int r2, int g2, int b2)
{
	return (r1 - r2) * (r1 - r2) + (g1 - g2) * (g1 - g2) + (b1 - b2) * (b1 - b2);
}

/* The index of the cube level nearest to v. */
static int cube_index(int v)
{
	int best = 0;

	for (int i = 1; i < 6; i++)
		if (abs(cube[i] - v) < abs(cube[best] - v))
			best = i;
	return best;
}

int sgr_rgb_to_256(int r, int g, int b)
{
	int ri = cube_index(r), gi = cube_index(g), bi = cube_index(b);
	int c = 16 + 36 * ri + 6 * gi + bi;
	int grey = (r + g + b) / 3, gi2 = grey < 8 ? 0 : (grey - 8) / 10;

	if (gi2 > 23)
		gi2 = 23;
	if (dist(r, g, b, 8 + gi2 * 10, 8 + gi2 * 10, 8 + gi2 * 10) <
	    dist(r, g, b, cube[ri], cube[gi], cube[bi]))
		c = 232 + gi2;
	return c;
}

/* The nearest of the first n basic colours. */
static int nearest_basic(int c, int n)
{
	int r, g, b, best = 0, bestd = -1;

	if (c == SGR_DEFAULT || c < n)
		return c;
	sgr_256_to_rgb(c, &r, &g, &b);
	for (int i = 0; i < n; i++) {
		int d = dist(r, g, b, basic_rgb[i][0], basic_rgb[i][1], basic_rgb[i][2]);
		if (bestd < 0 || d < bestd)
			best = i, bestd = d;
	}
	return best;
}

int sgr_to_8(int c)
{
	if (c >= 8 && c < 16)
		return c - 8;	/* bright colours: their base colour (bold makes them bright) */
	return nearest_basic(c, 8);
}

int sgr_to_16(int c)
{
	return nearest_basic(c, 16);
}
