/* What the commands share beyond parsing, help, signals and sessions: kernels from files, colours, graphics, code read from files. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "graphics.h"
#include "ipycolors.h"
#include "lastclose.h"
#include "lineplot.h"
#include "printer.h"

const char *cli_progname = "cellbox";

void cli_kernel_from_file(struct cellbox_config *cfg, const char *path, const cJSON *nb)
{
	const struct kernel_def *k;

	if (cfg->session.kernel)
		return;
	k = kernel_for_file(path, nb);
	if (k)
		cfg->session.kernel = xstrdup(k->name);
}

int cli_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	return isatty(fd) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

void cli_setup_graphics(const struct cellbox_config *cfg, struct session *s,
			struct printer *pr, struct lineplot *gl)
{
	enum graphics_mode want = GRAPHICS_AUTO;
	enum blocks_kind blocks = BLOCKS_AUTO;
	struct strbuf err = STRBUF_INIT;

	graphics_mode_parse(cfg->graphics, &want);
	blocks_kind_parse(cfg->blocks, &blocks);
	if (want == GRAPHICS_NONE || (want == GRAPHICS_AUTO && !isatty(1))) {
		lineplot_init(gl, GRAPHICS_NONE, blocks, 1, 0);	/* the environment's hints */
	} else {
		lineplot_init(gl, want, blocks, -1, cli_want_color(1));
		pr->plot_hook = lineplot_show;
		pr->plot_data = gl;
	}
	if ((pr->flags & PRINTER_COLOR) && gl->tc.light == 1 &&
	    ipycolors_apply(s, ipycolors_for_background(1), &err) < 0)
		msg_error("cannot set IPython's colours: %s", err.buf);
	strbuf_release(&err);
}

int cli_read_code(const char *path, struct strbuf *code)
{
	struct strbuf err = STRBUF_INIT;
	size_t nonblank = 0;
	const char *shown = strcmp(path, "-") ? path : "standard input";
	int rc;

	if (!strcmp(path, "-"))
		rc = strbuf_read_fd(code, 0, 256u << 20);
	else
		rc = strbuf_read_file(code, path, 256u << 20);
	if (rc < 0) {
		msg_error("cannot read '%s': %s", shown, strerror(errno));
		return -1;
	}
	if (utf8_check_text(code->buf, code->len, shown, &err) < 0) {
		msg_error("%s", err.buf);
		strbuf_release(&err);
		return -1;
	}
	for (size_t k = 0; k < code->len; k++)
		if (!strchr(" \t\r\n\f\v", code->buf[k]))
			nonblank++;
	if (!nonblank) {
		msg_error("'%s' is empty: nothing to run", shown);
		return -1;
	}
	return 0;
}
