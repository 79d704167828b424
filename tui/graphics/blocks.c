/* Pictures made of block characters: half-blocks, quadrants and sextants in two colours. */
#include "blocks.h"

#include <string.h>

static const struct {
	const char *name;
	enum blocks_kind kind;
} kind_names[] = {
	{ "auto", BLOCKS_AUTO },
	{ "half", BLOCKS_HALF },
	{ "quadrant", BLOCKS_QUADRANT },
	{ "sextant", BLOCKS_SEXTANT },
};

/* The quadrant characters by pattern: bit 0 top left, 1 top right, 2 bottom left, 3 ... */
static const unsigned quadrant_chars[16] = {
	' ', 0x2598, 0x259d, 0x2580, 0x2596, 0x258c, 0x259e, 0x259b,
	0x2597, 0x259a, 0x2590, 0x259c, 0x2584, 0x2599, 0x259f, 0x2588,
};

int blocks_kind_parse(const char *s, enum blocks_kind *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
		if (s && !strcmp(s, kind_names[i].name)) {
			*kind = kind_names[i].kind;
			return 0;
		}
	return -1;
}

const char *blocks_kind_name(enum blocks_kind kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
		if (kind_names[i].kind == kind)
			return kind_names[i].name;
	return "?";
}

void blocks_cell_pixels(enum blocks_kind kind, int *sx, int *sy)
{
	*sx = kind == BLOCKS_HALF ? 1 : 2;
	*sy = kind == BLOCKS_SEXTANT ? 3 : 2;
}

/*
 * The sextant character of a pattern (bit 0 top left, 1 top right, 2 middle left, ...):
 * U+1FB00.. in pattern order, without the four that exist elsewhere (empty, full, the
 * left and the right half).
 */
static unsigned sextant_char(unsigned p)
{
	if (p == 0)
		return ' ';
	if (p == 63)
		return 0x2588;
	if (p == 21)
		return 0x258c;
	if (p == 42)
		return 0x2590;
	return 0x1fb00 + p - 1 - (p > 21) - (p > 42);
}

/* Append a code point as UTF-8. */
static void add_utf8(struct strbuf *out, unsigned c)
{
	char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (char)c, n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f)), n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), n = 4;
	}
	strbuf_add(out, b, n);
}

int blocks_color256(const unsigned char c[3])
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

/* A colour as the terminal will get it: 24-bit (with a marker bit) or a 256-colour index. */
static int color_code(const unsigned char *c, int truecolor)
{
	return truecolor ? 1 << 24 | c[0] << 16 | c[1] << 8 | c[2] : blocks_color256(c);
}

/* Append one colour as SGR parameters (38 = foreground, 48 = background). */
static void add_color(struct strbuf *out, int which, int code)
{
	if (code >> 24)
		strbuf_addf(out, "%d;2;%d;%d;%d", which, code >> 16 & 255, code >> 8 & 255,
			    code & 255);
	else
		strbuf_addf(out, "%d;5;%d", which, code);
}

/*
 * Split a cell's n sub-pixels into two groups: `fg` the mean of the pattern's pixels, `bg`
 * of the others. Returns the pattern (0 = one colour, all in bg).
 */
static unsigned split_cell(const unsigned char *const *p, int n, unsigned char fg[3],
			   unsigned char bg[3])
{
	unsigned best = 0, full = (1u << n) - 1;
	double best_score = -1;

	/* Pixel 0 is always in the background group: half of the 2^n masks cover all splits. */
	for (unsigned mask = 0; mask < full; mask += 2) {
		long sa[3] = { 0 }, sb[3] = { 0 };
		int na = 0, nb = 0;
		double score = 0;

		for (int i = 0; i < n; i++) {
			long *s = mask >> i & 1 ? sa : sb;
			s[0] += p[i][0], s[1] += p[i][1], s[2] += p[i][2];
			if (mask >> i & 1)
				na++;
			else
				nb++;
		}
		/* Least squared error = most of sum(group)^2 / |group| over both groups. */
		for (int k = 0; k < 3; k++)
			score += (na ? (double)sa[k] * sa[k] / na : 0) + (double)sb[k] * sb[k] / nb;
		if (score > best_score + 1e-9) {
			best_score = score;
			best = mask;
		}
	}
	{
		long sa[3] = { 0 }, sb[3] = { 0 };
		int na = 0, nb = 0;

		for (int i = 0; i < n; i++) {
			long *s = best >> i & 1 ? sa : sb;
			s[0] += p[i][0], s[1] += p[i][1], s[2] += p[i][2];
			if (best >> i & 1)
				na++;
			else
				nb++;
		}
		for (int k = 0; k < 3; k++) {
			bg[k] = (unsigned char)((sb[k] + nb / 2) / nb);
			fg[k] = na ? (unsigned char)((sa[k] + na / 2) / na) : bg[k];
		}
	}
	return best;
}

void blocks_encode(const unsigned char *px, int cols, int rows, enum blocks_kind kind,
		   int row0, int nrows, int truecolor, int newlines, struct strbuf *out)
{
	int sx, sy, w;

	blocks_cell_pixels(kind, &sx, &sy);
	w = cols * sx;
	for (int r = row0; r < row0 + nrows && r < rows; r++) {
		int last_fg = -1, last_bg = -1;

		for (int x = 0; x < cols; x++) {
			const unsigned char *p[6];
			unsigned char fgc[3], bgc[3];
			unsigned pattern, ch;
			int fg, bg, n = sx * sy;

			for (int j = 0; j < sy; j++)
				for (int i = 0; i < sx; i++)
					p[j * sx + i] = px + 3 * ((size_t)(r * sy + j) * w + x * sx + i);
			if (kind == BLOCKS_HALF) {
				fg = color_code(p[0], truecolor);
				bg = color_code(p[1], truecolor);
				ch = 0x2580;
			} else {
				pattern = split_cell(p, n, fgc, bgc);
				if (__builtin_popcount(pattern) * 2 > n) {
					unsigned char t[3];	/* the minority in the foreground */
					memcpy(t, fgc, 3), memcpy(fgc, bgc, 3), memcpy(bgc, t, 3);
					pattern ^= (1u << n) - 1;
				}
				fg = color_code(fgc, truecolor);
				bg = color_code(bgc, truecolor);
				if (fg == bg)
					pattern = 0;	/* the same colour on the terminal */
				if (!pattern) {
					fg = last_fg;	/* a space: the foreground does not show */
				} else if (bg != last_bg && (fg == last_bg || bg == last_fg)) {
					int t = fg;	/* the other way round changes less */
					fg = bg, bg = t;
					pattern ^= (1u << n) - 1;
				}
				ch = kind == BLOCKS_SEXTANT ? sextant_char(pattern)
							    : quadrant_chars[pattern];
			}
			if (fg != last_fg || bg != last_bg) {
				strbuf_addstr(out, "\x1b[");
				if (fg != last_fg)
					add_color(out, 38, fg);
				if (fg != last_fg && bg != last_bg)
					strbuf_addch(out, ';');
				if (bg != last_bg)
					add_color(out, 48, bg);
				strbuf_addch(out, 'm');
			}
			add_utf8(out, ch);
			last_fg = fg;
			last_bg = bg;
		}
		strbuf_addstr(out, "\x1b[0m");
		if (newlines)
			strbuf_addstr(out, "\r\n");
		else if (r + 1 < row0 + nrows && r + 1 < rows)
			strbuf_addf(out, "\x1b[%dD\x1b[B", cols);
	}
}
