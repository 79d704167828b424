/*
 * bench_sixel: how long cellbox takes to turn a PNG into sixel, in process.
 *
 *   bench_sixel [-n N] [-w WIDTH] FILE.png     N times decode + encode; prints one JSON line
 *   bench_sixel --emit [-w WIDTH] FILE.png     write the sixel once to stdout (for timing
 *                                              the whole process next to img2sixel)
 *
 * "encode" is graphics_render() on an image already decoded (what the TUI pays when a plot
 * first appears at a size; later frames hit the cache), "decode" is graphics_load().
 * WIDTH = 0 (the default) keeps the image's own size, as img2sixel does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphics.h"
#include "stats.h"
#include "util.h"

/* The request that draws `img` at `width` pixels (0 = its own width), cells of 10x20. */
static void request_for(const struct graphics_image *img, int width,
			struct graphics_request *rq)
{
	int w, h;

	graphics_image_size(img, &w, &h);
	memset(rq, 0, sizeof(*rq));
	rq->mode = GRAPHICS_SIXEL;
	rq->cell_w = 10;
	rq->cell_h = 20;
	rq->cols = ((width > 0 ? width : w) + 9) / 10;
	if (width <= 0)
		rq->cell_w = 1, rq->cols = w;	/* exactly its own width */
}

int main(int argc, char **argv)
{
	const char *file = NULL;
	int n = 50, width = 0, emit = 0, rc = 1;
	double *dec, *enc;
	size_t bytes = 0;
	struct graphics_size sz = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-w") && i + 1 < argc)
			width = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--emit"))
			emit = 1;
		else
			file = argv[i];
	}
	if (!file || n < 1) {
		fprintf(stderr, "usage: bench_sixel [-n N] [-w WIDTH] [--emit] FILE.png\n");
		return 2;
	}
	if (emit)
		n = 1;
	dec = xcalloc((size_t)n, sizeof(*dec));
	enc = xcalloc((size_t)n, sizeof(*enc));
	for (int i = 0; i < n; i++) {
		struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
		struct graphics_request rq;
		struct graphics_image *img;
		double t0 = clock_now(), t1;

		img = graphics_load(file, &err);
		if (!img) {
			fprintf(stderr, "bench_sixel: %s\n", err.buf);
			strbuf_release(&err);
			goto out;
		}
		t1 = clock_now();
		request_for(img, width, &rq);
		if (graphics_render(img, &rq, &out, &sz, &err) < 0) {
			fprintf(stderr, "bench_sixel: %s\n", err.buf);
			graphics_free(img);
			strbuf_release(&err);
			strbuf_release(&out);
			goto out;
		}
		enc[i] = (clock_now() - t1) * 1e3;
		dec[i] = (t1 - t0) * 1e3;
		bytes = out.len;
		if (emit)
			fwrite(out.buf, 1, out.len, stdout);
		graphics_free(img);
		strbuf_release(&err);
		strbuf_release(&out);
	}
	if (!emit) {
		stats_sort(dec, n);
		stats_sort(enc, n);
		printf("{\"file\": \"%s\", \"n\": %d, \"px_w\": %d, \"px_h\": %d, \"bytes\": %zu, "
		       "\"decode_median_ms\": %.3f, \"encode_median_ms\": %.3f, "
		       "\"encode_p90_ms\": %.3f}\n", file, n, sz.px_w, sz.px_h, bytes,
		       dec[n / 2], enc[n / 2], enc[n * 9 / 10]);
	}
	rc = 0;
out:
	free(dec);
	free(enc);
	return rc;
}
