/* Scaling RGB888 pixels for the terminal encoders: a box filter and an ink-keeping one. */
#include "pixels.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define INK_DIST 64		/* |dr| + |dg| + |db| from the background: ink */
#define INK_GAIN 4		/* a quarter of an output pixel in ink is all ink */

/* The source span [lo[i], hi[i]) that output index i covers, n outputs over `size` inputs. */
static void spans(int n, int size, int *lo, int *hi)
{
	for (int i = 0; i < n; i++) {
		lo[i] = (int)((long long)i * size / n);
		hi[i] = (int)((long long)(i + 1) * size / n);
		if (hi[i] <= lo[i])
			hi[i] = lo[i] + 1;
		if (hi[i] > size)
			hi[i] = size, lo[i] = size - 1;
	}
}

/* Scale by boxes: with `bg`, keeping the ink (pixels_scale_ink), else averaging. */
static unsigned char *scale(const unsigned char *src, int sw, int sh, int w, int h,
			    const unsigned char *bg)
{
	unsigned char *dst = xmalloc((size_t)w * h * 3);
	int *xlo = xmalloc(sizeof(int) * (size_t)w), *xhi = xmalloc(sizeof(int) * (size_t)w);
	int *ylo = xmalloc(sizeof(int) * (size_t)h), *yhi = xmalloc(sizeof(int) * (size_t)h);

	if (w == sw && h == sh) {
		memcpy(dst, src, (size_t)w * h * 3);
		goto out;
	}
	spans(w, sw, xlo, xhi);
	spans(h, sh, ylo, yhi);
	for (int y = 0; y < h; y++) {
		for (int x = 0; x < w; x++) {
			unsigned long all[3] = { 0 }, ink[3] = { 0 };
			unsigned long n = 0, nink = 0;
			unsigned char *o = dst + 3 * ((size_t)y * w + x);

			for (int sy = ylo[y]; sy < yhi[y]; sy++) {
				const unsigned char *p = src + 3 * ((size_t)sy * sw + xlo[x]);
				for (int sx = xlo[x]; sx < xhi[x]; sx++, p += 3) {
					int d = bg ? abs(p[0] - bg[0]) + abs(p[1] - bg[1]) +
						     abs(p[2] - bg[2]) : 0;
					if (d > INK_DIST) {
						ink[0] += p[0], ink[1] += p[1], ink[2] += p[2];
						nink++;
					} else {
						all[0] += p[0], all[1] += p[1], all[2] += p[2];
					}
					n++;
				}
			}
			if (!bg || !nink) {
				for (int k = 0; k < 3; k++)
					o[k] = (unsigned char)((all[k] + ink[k] + n / 2) / n);
				continue;
			}
			/* Blend the ink's mean over the rest's mean by the ink's weight. */
			{
				unsigned long rest = n - nink, t = INK_GAIN * nink;	/* t / n */

				if (t > n)
					t = n;
				for (int k = 0; k < 3; k++) {
					unsigned long im = (ink[k] + nink / 2) / nink;
					unsigned long rm = rest ? (all[k] + rest / 2) / rest : im;
					o[k] = (unsigned char)((im * t + rm * (n - t) + n / 2) / n);
				}
			}
		}
	}
out:
	free(xlo);
	free(xhi);
	free(ylo);
	free(yhi);
	return dst;
}

unsigned char *pixels_scale_box(const unsigned char *src, int sw, int sh, int w, int h)
{
	return scale(src, sw, sh, w, h, NULL);
}

unsigned char *pixels_scale_ink(const unsigned char *src, int sw, int sh, int w, int h,
				const unsigned char bg[3])
{
	return scale(src, sw, sh, w, h, bg);
}

void pixels_background(const unsigned char *src, int w, int h, unsigned char bg[3])
{
	/* 12-bit bins over a sample of at most ~64k pixels; the mean of the fullest bin. */
	unsigned *count = xcalloc(4096, sizeof(*count));
	unsigned long *sum = xcalloc(4096 * 3, sizeof(*sum));
	size_t n = (size_t)w * h, step = n / 65536 + 1, best = 0;

	for (size_t i = 0; i < n; i += step) {
		const unsigned char *p = src + 3 * i;
		size_t b = (size_t)(p[0] >> 4) << 8 | (size_t)(p[1] >> 4) << 4 | (p[2] >> 4);

		count[b]++;
		sum[3 * b] += p[0], sum[3 * b + 1] += p[1], sum[3 * b + 2] += p[2];
		if (count[b] > count[best])
			best = b;
	}
	for (int k = 0; k < 3; k++)
		bg[k] = count[best] ? (unsigned char)(sum[3 * best + k] / count[best]) : 255;
	free(count);
	free(sum);
}
