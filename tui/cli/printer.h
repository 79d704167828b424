#ifndef CELLBOX_PRINTER_H
#define CELLBOX_PRINTER_H

/*
 * Turns a cell's events into terminal text for the line front ends (`run`, `repl`, and the
 * headless replay later): streams as they arrive, Out[n], tracebacks, displays and plot lines.
 * Everything the kernel sends goes through the sanitiser first. It can also collect what it
 * printed, for `run --json`.
 */

#include <stdio.h>
#include "sanitize.h"
#include "session.h"

/* Bytes of stdout (and of stderr) a collecting printer keeps unless told (collect_max). */
#define PRINTER_COLLECT_MAX ((size_t)32 << 20)

enum {
	PRINTER_COLOR = 1 << 0,		/* keep SGR colours (a terminal without NO_COLOR) */
	PRINTER_PROMPTS = 1 << 1,	/* "Out[n]: " before results */
	PRINTER_COLLECT = 1 << 2,	/* keep stdout/stderr/plots for printer_json() */
	PRINTER_QUIET = 1 << 3,		/* collect only, print nothing */
	PRINTER_PLOTS_KEPT = 1 << 4,	/* plots_dir keeps plots for the history, not asked for:
					   a plot drawn inline needs no line */
};

struct printer_plot {
	int index;
	int width, height;
	char *path;		/* where the file is now (the copy in plots_dir if one was made) */
	char *base64;		/* its bytes as the session checked them (PRINTER_COLLECT) */
	char format[8];		/* "png"; an artifact's format: "png", "jpeg", "svg", "html", ... */
};

struct printer {
	unsigned flags;
	FILE *out, *err;
	const char *channel_dir;	/* plot paths in events are relative to it */
	const char *plots_dir;		/* copy each plot here; NULL = leave it in the channel */
	struct sanitizer san_out, san_err;
	struct sanitizer san_keep;	/* stderr as collected (PRINTER_COLLECT): no SGR */
	int out_at_bol;			/* stdout is at the beginning of a line */
	/* What the cell produced (PRINTER_COLLECT), each up to collect_max bytes. */
	struct strbuf stdout_text, stderr_text;
	size_t collect_max;		/* PRINTER_COLLECT_MAX unless set before the first event */
	int collect_cut;		/* some was not kept: the JSON says "truncated" */
	unsigned long long stdout_bytes, stderr_bytes;	/* what the cell printed, all of it */
	FILE *stdout_copy, *stderr_copy;	/* every byte of each stream as it came, or NULL */
	struct strbuf clean;		/* scratch for sanitised text, reused per event */
	struct printer_plot *plots;
	size_t nplots, plots_alloc;
	cJSON *error;			/* the last error: {ename, evalue, traceback} */
	/* The done event, once it came (done_seen); detail is the printer's copy. */
	int done_seen;
	struct session_ev_done done;
	/*
	 * Draws a plot inline after the output (lineplot_show): 0 when it drew it, else
	 * the plot's text line is printed (and when it returns -1, a note with `why` on the
	 * error stream). NULL = text lines only. `png` is the plot's `len` bytes as the session
	 * checked them (event.h); `path` names it.
	 */
	int (*plot_hook)(void *data, const void *png, size_t len, const char *path, FILE *out,
			 struct strbuf *why);
	void *plot_data;
};

void printer_init(struct printer *p, unsigned flags, const char *channel_dir,
		  const char *plots_dir);
void printer_release(struct printer *p);
/* Print (and collect) one event. */
void printer_event(struct printer *p, const struct session_event *ev);
/* Forget what was collected (before the next cell). */
void printer_reset(struct printer *p);
/*
 * The collected outcome shaped like llm-sandbox's ExecutionResult: exit_code, stdout, stderr,
 * plots [{format, path, width, height, content_base64}] (shown plots, then saved files and
 * plotly HTML as llm-sandbox reports them), status, execution_count, duration,
 * error {ename, evalue, traceback}, outcome (the reason's name: "ok", "error", "timeout", ...)
 * and reason (its words when the session stopped the cell, else null), as MCP's. stderr and
 * the error are kept sanitised without colours (a traceback comes with SGR); stdout as printed.
 */
cJSON *printer_json(const struct printer *p, int exit_code);

#endif
