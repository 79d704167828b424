/* cellbox run: one-shot mode. A fresh kernel, one cell, the kernel torn down. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graphics.h"
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

/* The exit code a finished cell stands for. */
static int exit_code_of(const struct printer *p)
{
	const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p->done, "status"));
	const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p->done, "reason"));

	if (status && !strcmp(status, "ok"))
		return EXIT_OK;
	if (reason && !strncmp(reason, "timeout", 7))
		return EXIT_TIMEOUT;
	if (reason && !strncmp(reason, "kernel died", 11))
		return EXIT_KERNEL_DIED;
	if (reason && !strncmp(reason, "interrupt", 9))
		return EXIT_INTERRUPTED;
	return EXIT_CELL_ERROR;
}

int cmd_run(int argc, char **argv, struct cellbox_config *cfg)
{
	const char *file = NULL, *code_arg = NULL, *plots_dir = NULL;
	struct strbuf code = STRBUF_INIT, err = STRBUF_INIT;
	struct session *s = NULL;
	struct printer pr;
	struct graphics_line gl;
	struct run_ctx ctx = { &pr, { NULL } };
	int json = 0, rc = EXIT_USAGE, printer_ready = 0;
	unsigned flags;
	unsigned long id;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int taken = cli_common_option(argc, argv, &i, cfg);

		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "-c") || !strcmp(a, "--code")) {
			if (i + 1 >= argc) {
				cli_error("%s needs the code to run", a);
				goto out;
			}
			code_arg = argv[++i];
		} else if (!strcmp(a, "--plots")) {
			if (i + 1 >= argc) {
				cli_error("--plots needs a directory");
				goto out;
			}
			plots_dir = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			cli_error("run: unknown option '%s' (see '%s run --help')", a, cli_progname);
			goto out;
		} else if (file || code_arg) {
			cli_error("run: one FILE or -c CODE, not both or more");
			goto out;
		} else {
			file = a;
		}
	}
	if (!file && !code_arg) {
		cli_error("run: nothing to run: give a FILE, - for stdin, or -c CODE");
		goto out;
	}
	if (file && code_arg) {
		cli_error("run: one FILE or -c CODE, not both");
		goto out;
	}
	if (code_arg) {
		strbuf_addstr(&code, code_arg);
		if (!utf8_valid(code.buf, code.len, NULL)) {
			cli_error("run: the code is not valid UTF-8");
			goto out;
		}
	} else if (cli_read_code(file, &code) < 0) {
		goto out;
	} else {
		cli_kernel_from_file(cfg, file, NULL);	/* run analysis.R: the R kernel */
	}
	if (plots_dir && mkdir_p(plots_dir) < 0) {
		cli_error("cannot create '%s': %s", plots_dir, strerror(errno));
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
	printer_init(&pr, flags, session_channel_dir(s), plots_dir);
	printer_ready = 1;
	if (!json)
		cli_setup_graphics(cfg, &pr, &gl);
	record_open(&ctx.rec, cfg, s);
	id = session_execute(s, code.buf, 0, cfg->timeout, on_event, &ctx, &err);
	if (!id) {
		cli_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	cli_wait(s, id);
	record_cell(&ctx.rec, code.buf);
	rc = exit_code_of(&pr);
	if (json) {
		cJSON *o = printer_json(&pr, rc);
		char *text = cJSON_Print(o);
		puts(text);
		cJSON_free(text);
		cJSON_Delete(o);
	} else if (rc == EXIT_TIMEOUT || rc == EXIT_KERNEL_DIED) {
		const char *reason =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pr.done, "reason"));
		if (rc == EXIT_TIMEOUT && !strcmp(reason, "timeout"))
			cli_error("the cell timed out after %g s and was interrupted", cfg->timeout);
		else if (rc == EXIT_TIMEOUT)
			cli_error("the cell timed out after %g s and ignored the interrupt: "
				  "the kernel was killed", cfg->timeout);
		else
			cli_error("%s", reason);
	}
out:
	record_close(&ctx.rec);
	/* First: closing may still end requests through the printer. */
	if (cli_close_session(s) < 0 && rc == EXIT_OK)
		rc = EXIT_CELL_ERROR;
	if (printer_ready)
		printer_release(&pr);
	strbuf_release(&code);
	strbuf_release(&err);
	return rc;
}
