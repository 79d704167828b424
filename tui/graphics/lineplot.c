/*
 * Plots in scrolling output, for the line front ends (`repl`, `run`): a layer on graphics.h,
 * which it uses as any caller does (see lineplot.h).
 */
#include "lineplot.h"

#include <string.h>

#define QUERY_TIMEOUT_MS 500
#define BLOCKS_MAX_COLS 160

void lineplot_init(struct lineplot *g, enum graphics_mode want, enum blocks_kind blocks, int fd,
		   int color)
{
	memset(g, 0, sizeof(*g));
	if (want == GRAPHICS_NONE) {
		termcap_fill(&g->tc, NULL, fd);
		g->mode = GRAPHICS_NONE;
		return;
	}
	termcap_query(&g->tc, fd, QUERY_TIMEOUT_MS);
	g->mode = graphics_choose(want, &g->tc, color);
	g->blocks = graphics_blocks_choose(blocks, &g->tc);
}

int lineplot_show(void *data, const void *png, size_t len, const char *path, FILE *out,
		  struct strbuf *why)
{
	struct lineplot *g = data;
	struct strbuf err = STRBUF_INIT, buf = STRBUF_INIT;
	struct graphics_request rq = { 0 };
	struct graphics_image *img;
	struct graphics_size sz;
	int rc = -1;

	if (g->mode == GRAPHICS_NONE || g->mode == GRAPHICS_AUTO)
		return 1;
	img = png ? graphics_load_mem(png, len, path, &err) : graphics_load(path, &err);
	if (!img)
		goto out;
	rq.mode = g->mode;
	rq.flags = GRAPHICS_NEWLINES;
	rq.cell_w = g->tc.cell_w;
	rq.cell_h = g->tc.cell_h;
	rq.rows = g->tc.rows > 4 ? g->tc.rows - 2 : g->tc.rows;	/* fits on one screen */
	rq.cols = g->tc.cols;
	rq.truecolor = g->tc.truecolor;
	rq.blocks = g->blocks;
	if (g->mode == GRAPHICS_SIXEL) {
		rq.max_w = g->tc.r.sixel_max_w;
		rq.max_h = g->tc.r.sixel_max_h;
		rq.colors = g->tc.r.color_registers;
		if (g->tc.tmux && !g->tc.r.sixel)
			rq.flags |= GRAPHICS_TMUX_PASSTHROUGH;
	} else if (g->mode == GRAPHICS_BLOCKS) {
		rq.cols = g->tc.cols < BLOCKS_MAX_COLS ? g->tc.cols : BLOCKS_MAX_COLS;
	} else if (g->tc.tmux) {
		rq.flags |= GRAPHICS_TMUX_PASSTHROUGH;	/* kitty and iTerm2: tmux has neither */
	}
	if (graphics_render(img, &rq, &buf, &sz, &err) < 0)
		goto out;
	fflush(out);
	fwrite(buf.buf, 1, buf.len, out);
	fflush(out);
	rc = 0;
out:
	if (rc < 0 && why)
		strbuf_add(why, err.buf, err.len);
	graphics_free(img);
	strbuf_release(&buf);
	strbuf_release(&err);
	return rc;
}
