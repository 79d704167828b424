/* cellbox run: one-shot mode. A fresh kernel, one cell, the kernel torn down. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lineplot.h"
#include "printer.h"
#include "record.h"

struct run_ctx {
	struct printer *pr;
	struct record rec;
};

/* Hand the event to the printer and the history. */
static void on_event(struct session *s, const struct session_event *ev, void *data)
{
	struct run_ctx *ctx = data;

	printer_event(ctx->pr, ev);
	record_event(&ctx->rec, s, ev);
}

/* cellbox run */
static int run_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	const char *file = args->argc ? args->argv[0] : NULL;
	const char *code_arg = cli_value(args, "code"), *plots_dir = cli_value(args, "plots");
	const char *copies[2] = { cli_value(args, "stdout"), cli_value(args, "stderr") };
	FILE *copy[2] = { NULL, NULL };
	struct strbuf code = STRBUF_INIT, err = STRBUF_INIT;
	struct session *s = NULL;
	struct printer pr;
	struct lineplot gl;
	struct run_ctx ctx = { &pr, { NULL } };
	int json = cli_has(args, "json"), rc = EXIT_USAGE, printer_ready = 0;
	unsigned flags;
	unsigned long id;

	if (!file && !code_arg) {
		msg_error("run: nothing to run: give a FILE, - for stdin, or -c CODE");
		goto out;
	}
	if (file && code_arg) {
		msg_error("run: one FILE or -c CODE, not both");
		goto out;
	}
	if (code_arg) {
		strbuf_addstr(&code, code_arg);
		if (!utf8_valid(code.buf, code.len, NULL)) {
			msg_error("run: the code is not valid UTF-8");
			goto out;
		}
	} else if (cli_read_code(file, &code) < 0) {
		goto out;
	} else {
		cli_kernel_from_file(cfg, file, NULL);	/* run analysis.R: the R kernel */
	}
	if (plots_dir && fsutil_mkdir_p(plots_dir) < 0) {
		msg_error("cannot create '%s': %s", plots_dir, strerror(errno));
		goto out;
	}
	for (int i = 0; i < 2; i++)
		if (copies[i] && !(copy[i] = fopen(copies[i], "w"))) {
			msg_error("cannot write '%s': %s", copies[i], strerror(errno));
			goto out;
		}

	cli_catch_sigint();
	s = cli_open_session(cfg);
	if (!s) {
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	/* Only --json keeps the output: printed output streams through in bounded memory. */
	flags = 0;
	if (json)
		flags = PRINTER_COLLECT | PRINTER_QUIET;
	else if (cli_want_color(1) && cli_want_color(2))
		flags |= PRINTER_COLOR;
	record_open(&ctx.rec, cfg, s);
	/* The channel goes with the run: without --plots, plots stay next to the history. */
	if (!plots_dir && ctx.rec.h && fsutil_mkdir_p(history_plots_dir(ctx.rec.h)) == 0) {
		plots_dir = history_plots_dir(ctx.rec.h);
		flags |= PRINTER_PLOTS_KEPT;
	}
	printer_init(&pr, flags, session_channel_dir(s), plots_dir);
	if (plots_dir)
		session_add_copies(s, 1);	/* the printer's copy of each plot (the quota's) */
	printer_ready = 1;
	/* --json keeps the first --max-output bytes of each stream; --stdout/--stderr all. */
	pr.collect_max = (size_t)cli_size(args, "max-output", PRINTER_COLLECT_MAX);
	pr.stdout_copy = copy[0];
	pr.stderr_copy = copy[1];
	if (!json)
		cli_setup_graphics(cfg, s, &pr, &gl);
	/* A kernel that died since it started (after --copy-in, say) is started again first. */
	{
		struct strbuf why = STRBUF_INIT;

		if (session_revive(s, &why, &err) > 0)
			msg_error("the kernel had ended (%s): restarted it", why.buf);
		strbuf_release(&why);
		strbuf_reset(&err);
	}
	id = session_execute(s, code.buf, 0, cfg->timeout, on_event, &ctx, &err);
	if (!id) {
		msg_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	if (cli_wait(s, id) == CLI_TERMINATED) {
		rc = cli_exit_terminated();	/* closing below stops the kernel */
		goto out;
	}
	record_cell(&ctx.rec, code.buf);
	rc = reason_exit_code(pr.done_seen ? pr.done.reason : REASON_CLOSED);
	if (json) {
		cJSON *o = printer_json(&pr, rc);
		cli_put_json(o);
		cJSON_Delete(o);
	} else if (pr.done.reason == REASON_TIMEOUT) {
		msg_error("the cell timed out after %g s and was interrupted", cfg->timeout);
	} else if (pr.done.reason == REASON_TIMEOUT_KILLED) {
		msg_error("the cell timed out after %g s and ignored the interrupt: "
			  "the kernel was killed", cfg->timeout);
	} else if (rc == EXIT_KERNEL_DIED && pr.done.detail) {
		msg_error("%s", pr.done.detail);
	}
out:
	record_close(&ctx.rec);
	/* First: closing may still end requests through the printer. */
	if (cli_close_session(s, cfg) < 0 && rc == EXIT_OK)
		rc = EXIT_CELL_ERROR;
	if (printer_ready)
		printer_release(&pr);
	for (int i = 0; i < 2; i++)
		if (copy[i] && fclose(copy[i]) != 0 && rc == EXIT_OK) {
			msg_error("cannot write '%s': %s", copies[i], strerror(errno));
			rc = EXIT_CELL_ERROR;
		}
	strbuf_release(&code);
	strbuf_release(&err);
	return rc;
}

static const struct cli_option run_options[] = {
	{ .name = "code", .short_name = 'c', .value = CLI_TEXT, .arg = "CODE",
	  .help = "run CODE instead of a file" },
	{ .name = "json", .value = CLI_SWITCH,
	  .help = "print one JSON object (exit_code, stdout, stderr, plots with base64 content, "
		  "status, error, outcome, reason) instead of the output; stderr and error "
		  "without colours" },
	{ .name = "plots", .value = CLI_TEXT, .arg = "DIR",
	  .help = "save captured plots as DIR/plot-N.png" },
	{ .name = "max-output", .value = CLI_SIZE, .arg = "SIZE",
	  .help = "what --json keeps of stdout and of stderr each (default 32m); past it the JSON "
		  "says truncated, with the sizes printed" },
	{ .name = "stdout", .value = CLI_TEXT, .arg = "FILE",
	  .help = "write all of the cell's stdout to FILE as it comes (bounded memory, any size)" },
	{ .name = "stderr", .value = CLI_TEXT, .arg = "FILE",
	  .help = "write all of the cell's stderr to FILE as it comes" },
	{ NULL },
};

const struct cli_command cmd_run_entry = {
	.name = "run",
	.run = run_exec,
	.spec = { .options = run_options, .max_args = 1,
		  .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS | CONFIG_FOR_POOL |
			      CONFIG_FOR_PLOTS },
	.usage = "run [OPTIONS] FILE | -c CODE",
	.summary = "One-shot: a fresh kernel runs FILE (or CODE, or - for stdin), then goes.",
	.exit_codes = 1,
};
