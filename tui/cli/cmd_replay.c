/* cellbox replay: run the code cells of a cell file headless, in a fresh session. */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cellfile.h"
#include "nbcheck.h"
#include "history.h"
#include "junit.h"
#include "outputs.h"
#include "printer.h"
#include "record.h"
#include "replay_jobs.h"
#include "sanitize.h"

/* Transcript bytes printed per cell before the rest is cut. */
#define REPLAY_TRANSCRIPT_MAX ((size_t)1 << 20)

struct replay {
	struct session *s;
	struct printer pr;
	struct outputs out;
	struct record rec;	/* the replayed cells go to the history too */
	int progress;		/* draw the bar on stderr */
	int bar_shown;
	size_t printed;		/* transcript bytes of this cell */
	int cut;		/* this cell's transcript was cut */
	double started;
	int done_cells, total_cells;
	const char *current;	/* first line of the running cell */
	size_t transcript_max;	/* output bytes a cell may print */
};

/* Erase the progress bar. */
static void bar_clear(struct replay *r)
{
	if (r->bar_shown) {
		fputs("\r\x1b[K", stderr);
		fflush(stderr);
		r->bar_shown = 0;
	}
}

/* Draw the progress bar: cells done / total, elapsed, current cell. */
static void bar_draw(struct replay *r, int index)
{
	char bar[21];
	int fill = r->total_cells ? 20 * r->done_cells / r->total_cells : 20;
	struct strbuf line = STRBUF_INIT;

	if (!r->progress)
		return;
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[20] = '\0';
	/* The cell's line is the file's: sanitised, cut on a character. */
	fprintf(stderr, "\r\x1b[K[%s] %d/%d %.1fs cell %d: %s", bar, r->done_cells,
		r->total_cells, clock_now() - r->started, index,
		cli_first_line(r->current, 40, &line, NULL));
	fflush(stderr);
	strbuf_release(&line);
	r->bar_shown = 1;
}

/* One event: into the notebook outputs and, within the limit, the transcript. */
static void on_event(struct session *s, const struct session_event *ev, void *data)
{
	struct replay *r = data;

	(void)s;
	outputs_event(&r->out, ev);	/* the history's too (record_share) */
	if (r->bar_shown && isatty(1))
		bar_clear(r);
	if (ev->type == SESSION_EV_STREAM) {
		const char *text = ev->stream.text;
		size_t len = ev->stream.len, room;

		if (r->cut)
			return;
		room = r->transcript_max - r->printed;
		if (len > room) {
			/* Print what fits (whole characters), then say the rest is cut. */
			struct session_event part = *ev;

			while (room && ((unsigned char)text[room] & 0xc0) == 0x80)
				room--;
			part.stream.len = room;
			printer_event(&r->pr, &part);
			r->cut = 1;
			r->printed = r->transcript_max;
			if (!(r->pr.flags & PRINTER_QUIET))
				fprintf(r->pr.out, "\n[cellbox: transcript cut after %zu bytes of output; "
					"the notebook keeps up to %zu]\n", r->transcript_max,
					r->out.limit);
			return;
		}
		r->printed += len;
	}
	printer_event(&r->pr, ev);
}

/* Echo a cell's code as IPython would: "In [n]: " then "   ...: " lines (sanitised). */
static void echo_code(FILE *f, int count, const char *code)
{
	int w = snprintf(NULL, 0, "%d", count);
	struct strbuf clean = STRBUF_INIT;
	const char *p = sanitize_cstr(code, SAN_NO_CR, &clean);

	fprintf(f, "In [%d]: ", count);
	while (*p) {
		size_t l = strcspn(p, "\n");
		fwrite(p, 1, l, f);
		fputc('\n', f);
		p += l + (p[l] == '\n');
		if (*p)
			fprintf(f, "%*s...: ", w + 3, "");
	}
	fflush(f);
	strbuf_release(&clean);
}

/* ---- the command ---- */

/*
 * Name a failed cell as the transcript does (In [n], n the count it was shown with), with its
 * first line and its place in the file (the file's cells counted from 1, markdown included).
 */
static void report_failure(int rc, int shown, int index, const char *src, double timeout)
{
	struct strbuf line = STRBUF_INIT;
	const char *code = cli_first_line(src, SIZE_MAX, &line, NULL);
	size_t l = line.len;

	if (rc == EXIT_TIMEOUT)
		msg_error("In [%d] (%.*s, cell %d of the file) timed out after %g s", shown, (int)l,
			  code, index, timeout);
	else if (rc == EXIT_KERNEL_DIED)
		msg_error("In [%d] (%.*s, cell %d of the file): the kernel died", shown, (int)l,
			  code, index);
	else if (rc == EXIT_INTERRUPTED)
		msg_error("In [%d] (%.*s, cell %d of the file) was interrupted", shown, (int)l, code,
			  index);
	else if (rc == EXIT_POLICY)
		msg_error("In [%d] (%.*s, cell %d of the file) was blocked by the security policy",
			  shown, (int)l, code, index);
	else
		msg_error("In [%d] (%.*s, cell %d of the file) raised an exception", shown, (int)l,
			  code, index);
	strbuf_release(&line);
}

/*
 * The --check family into `c`: --check-ignore, --check-images and --check-lax imply --check
 * (*check set). -1 after printing what is wrong.
 */
static int check_options(const struct cli_args *args, struct nbcheck *c, int *check)
{
	struct strbuf err = STRBUF_INIT;
	const char *re;
	int rc = 0;

	if (cli_has(args, "check-lax"))
		*check = c->lax = 1;
	if (cli_has(args, "check-images")) {
		*check = 1;
		c->pixels = !strcmp(cli_value(args, "check-images"), "pixels");
	}
	for (size_t k = 0; rc == 0 && (re = cli_value_at(args, "check-ignore", k)); k++) {
		*check = 1;
		if (nbcheck_add_ignore(c, re, &err) < 0) {
			msg_error("replay: --check-ignore: %s", err.buf);
			rc = -1;
		}
	}
	strbuf_release(&err);
	return rc;
}

int cmd_replay_check_options(const struct cli_args *args)
{
	struct nbcheck chk;
	int check = 0, rc;

	nbcheck_init(&chk);
	rc = check_options(args, &chk, &check);
	nbcheck_release(&chk);
	if (rc == 0)
		rc = replay_params_check(args);
	return rc;
}

int cmd_replay_file(const struct cli_args *args, struct cellbox_config *cfg, const char *file,
		    const struct replay_file_opts *opts, struct replay_result *res)
{
	const char *out_path = opts ? opts->out_path : cli_value(args, "output");
	const char *plots_dir = opts ? opts->plots_dir : cli_value(args, "plots");
	int json = cli_has(args, "json"), check = cli_has(args, "check");
	int keep_going = cli_has(args, "keep-going");
	int no_progress = opts || cli_has(args, "no-progress");
	int rc = EXIT_USAGE, timing = !cli_has(args, "no-timing");
	struct nbcheck chk;
	int *ran_cells = NULL, *raised = NULL;	/* --check: the cells that ran, and how */
	int index = 0, ran = 0, skipped = 0, failed = 0, differ = 0, next_count = 1;
	struct strbuf err = STRBUF_INIT;
	struct replay r;
	cJSON *nb = NULL, *stored = NULL, *cell, *report = NULL, *cells_json = NULL;
	double t_open = 0, cells_wall = 0, cells_kernel = 0;
	unsigned long long max_output = cli_size(args, "max-output", OUTPUTS_LIMIT);
	int ready = 0;
	const char *junit_path = opts ? opts->junit_path : cli_value(args, "junit");
	struct junit_suite js;
	int *jcase = NULL;	/* --junit: the file's cell k is case jcase[k] (-1: none) */

	memset(&r, 0, sizeof(r));
	junit_init(&js, file);
	nbcheck_init(&chk);
	if (check_options(args, &chk, &check) < 0)
		goto out;
	nb = history_load(file, &err);
	if (!nb) {
		msg_error("%s", err.buf);
		goto out;
	}
	cli_kernel_from_file(cfg, file, nb);
	if (replay_params_inject(args, cfg->session.kernel, nb, file) < 0)
		goto out;
	if (check) {
		stored = cJSON_Duplicate(nb, 1);
		if (!strstr(file, ".ipynb"))
			msg_error("replay: --check compares with the outputs of a notebook; "
				  "'%s' has none: every cell with output will differ", file);
	}
	if (plots_dir && fsutil_mkdir_p(plots_dir) < 0) {
		msg_error("cannot create '%s': %s", plots_dir, strerror(errno));
		goto out;
	}
	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		char *src = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
		if (!strcmp(cellfile_cell_type(cell), "code") && src[strspn(src, " \t\r\n")] &&
		    !cellfile_has_tag(cell, "skip-execution") && !(nbcheck_markers(cell) & CHECK_SKIP))
			r.total_cells++;
		free(src);
	}

	cli_catch_sigint();
	t_open = clock_now();
	r.s = cli_open_session(cfg);
	if (!r.s) {
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	t_open = clock_now() - t_open;
	record_open(&r.rec, cfg, r.s);
	/* The channel goes with the session: without --plots, plots stay next to the history. */
	if (!plots_dir && r.rec.h && fsutil_mkdir_p(history_plots_dir(r.rec.h)) == 0)
		plots_dir = history_plots_dir(r.rec.h);
	{
		unsigned pflags = PRINTER_PROMPTS;
		if (json)
			pflags = PRINTER_QUIET;
		else if (opts ? opts->color : cli_want_color(1))
			pflags |= PRINTER_COLOR;
		printer_init(&r.pr, pflags, session_channel_dir(r.s), plots_dir);
		if (plots_dir)
			session_add_copies(r.s, 1);	/* the printer's copies (the quota's) */
		r.pr.err = stdout;	/* tracebacks belong to the transcript, in order */
	}
	outputs_init(&r.out, session_channel_dir(r.s), OUTPUTS_EMBED_PNG | OUTPUTS_KEEP_DISPLAYS,
		     NULL, (size_t)max_output);
	record_share(&r.rec, &r.out);	/* one collection: the notebook's and the history's */
	cellfile_set_kernel(nb, session_kernel_info(r.s));
	{
		int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nb, "cells"));
		if (check) {
			ran_cells = xcalloc((size_t)n + 1, sizeof(*ran_cells));
			raised = xcalloc((size_t)n + 1, sizeof(*raised));
		}
		jcase = xmalloc(((size_t)n + 1) * sizeof(*jcase));
		for (int k = 0; k <= n; k++)
			jcase[k] = -1;
	}
	ready = 1;
	r.transcript_max = REPLAY_TRANSCRIPT_MAX < max_output ? REPLAY_TRANSCRIPT_MAX
							       : (size_t)max_output;
	r.progress = isatty(2) && !no_progress && !json;
	r.started = clock_now();
	if (json)
		cells_json = cJSON_CreateArray();

	rc = EXIT_OK;
	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		char *src;
		unsigned long id;
		int cell_rc, may_fail, shown;
		unsigned marks;
		double t0, started;
		cJSON *outs;

		index++;
		if (strcmp(cellfile_cell_type(cell), "code"))
			continue;
		src = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
		marks = nbcheck_markers(cell);
		if (!src[strspn(src, " \t\r\n")] || cellfile_has_tag(cell, "skip-execution") ||
		    (marks & CHECK_SKIP)) {
			if (src[strspn(src, " \t\r\n")]) {
				skipped++;
				replay_junit_skip(&js, index, src, marks & CHECK_SKIP ? "NBVAL_SKIP" :
					   "tagged skip-execution");
			}
			free(src);
			continue;
		}
		may_fail = (marks & CHECK_RAISES) != 0;
		r.current = src;
		shown = next_count;	/* the In [n] the transcript gives it */
		if (!json)
			echo_code(stdout, next_count, src);
		bar_draw(&r, index);	/* after the echo: on a shared terminal it sits below it */
		r.printed = 0;
		r.cut = 0;
		printer_reset(&r.pr);
		t0 = clock_now();
		started = clock_wall();
		id = session_execute(r.s, src, 0, cfg->timeout, on_event, &r, &err);
		if (!id) {
			bar_clear(&r);
			msg_error("cell %d: %s", index, err.buf);
			replay_junit_stopped(&js, shown, index, src, err.buf);
			free(src);
			rc = EXIT_KERNEL_DIED;
			break;
		}
		if (cli_wait(r.s, id) == CLI_TERMINATED) {
			bar_clear(&r);
			replay_junit_stopped(&js, shown, index, src, "stopped by a signal");
			free(src);
			rc = cli_exit_terminated();
			break;
		}
		outs = outputs_finish(&r.out);
		record_append(&r.rec, src, &r.out, outs);
		t0 = clock_now() - t0;	/* the overhead counted includes recording */
		cells_wall += t0;
		cells_kernel += r.out.duration;
		bar_clear(&r);
		ran++;
		r.done_cells++;
		if (check) {
			ran_cells[index] = 1;
			raised[index] = strcmp(r.out.status, "ok") != 0;
		}
		if (timing) {	/* measurements, as nbclient's timings: --no-timing leaves them out */
			cellfile_set_timing(cell, started, clock_wall());
			cellfile_set_usage(cell, &r.out.usage);
		}
		if (r.out.execution_count >= 0) {
			next_count = r.out.execution_count + 1;
			cJSON_ReplaceItemInObjectCaseSensitive(cell, "execution_count",
				cJSON_CreateNumber(r.out.execution_count));
		}
		if (cells_json) {
			cJSON *c = cJSON_CreateObject();
			cJSON_AddNumberToObject(c, "index", index);
			cJSON_AddStringToObject(c, "status", r.out.status);
			if (r.out.detail)
				cJSON_AddStringToObject(c, "reason", r.out.detail);
			cJSON_AddNumberToObject(c, "duration", r.out.duration);
			cJSON_AddNumberToObject(c, "wall", t0);
			cJSON_AddItemToObject(c, "usage", usage_to_json(&r.out.usage));
			cJSON_AddItemToObject(c, "outputs", cJSON_Duplicate(outs, 1));
			cJSON_AddItemToArray(cells_json, c);
		}
		cJSON_ReplaceItemInObjectCaseSensitive(cell, "outputs", outs);
		cell_rc = reason_exit_code(r.out.reason);
		jcase[index] = (int)js.n;
		replay_junit_ran(&js, shown, index, src, t0,
			  cell_rc == EXIT_INTERRUPTED || (cell_rc != EXIT_OK && !may_fail), &r.out,
			  outs);
		if (cell_rc == EXIT_INTERRUPTED || (cell_rc != EXIT_OK && !may_fail)) {
			failed++;
			report_failure(cell_rc, shown, index, src, cfg->timeout);
			if (rc == EXIT_OK)
				rc = cell_rc;
		}
		free(src);
		r.current = NULL;
		if (rc == EXIT_INTERRUPTED || (rc != EXIT_OK && !keep_going))
			break;
		if (session_state(r.s) == SESSION_DEAD) {
			struct strbuf why = STRBUF_INIT;
			int revived;

			strbuf_reset(&err);
			revived = session_revive(r.s, &why, &err);
			if (revived < 0)
				msg_error("cannot restart the kernel (%s): %s", why.buf, err.buf);
			else
				msg_error("the kernel had ended after In [%d] (cell %d of the file: %s): "
					  "restarted it", shown, index, why.buf);
			strbuf_release(&why);
			if (revived < 0)
				break;
			next_count = 1;
		}
	}
	/* The code cells after a stop: not run. */
	for (int k = index + 1; k <= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nb, "cells")); k++) {
		cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(nb, "cells"), k - 1);
		char *src = cellfile_join(cJSON_GetObjectItemCaseSensitive(c, "source"));

		if (!strcmp(cellfile_cell_type(c), "code") && src[strspn(src, " \t\r\n")])
			replay_junit_skip(&js, k, src, nbcheck_markers(c) & CHECK_SKIP ? "NBVAL_SKIP" :
				   cellfile_has_tag(c, "skip-execution") ? "tagged skip-execution" :
				   "not run: the replay stopped before it");
		free(src);
	}
	/* After every cell ran: a display update may have changed an earlier cell's outputs. */
	for (int k = 1; check && ran_cells && k <= index; k++) {
		const cJSON *cells = cJSON_GetObjectItemCaseSensitive(nb, "cells");
		const cJSON *old = cJSON_GetArrayItem(
			cJSON_GetObjectItemCaseSensitive(stored, "cells"), k - 1);
		char *diff = NULL;
		size_t diff_len = 0;
		FILE *f;
		int d;

		if (!ran_cells[k])
			continue;
		/* The difference goes to stdout and, with --junit, into the cell's failure. */
		f = jcase[k] >= 0 ? open_memstream(&diff, &diff_len) : NULL;
		d = nbcheck_cell(&chk, old, cJSON_GetObjectItemCaseSensitive(old, "outputs"),
				 cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cells, k - 1),
								  "outputs"),
				 raised[k], k, f ? f : stdout);
		if (f) {
			fclose(f);
			fwrite(diff, 1, diff_len, stdout);
			if (d)
				junit_fail(&js.cases[jcase[k]], "the outputs differ from the notebook's",
					   diff);
			free(diff);
		}
		differ += d;
	}
	if (r.out.truncated)
		msg_error("outputs were cut at %zu bytes per cell; the notebook says so where",
			  r.out.limit);
	if (out_path) {
		strbuf_reset(&err);
		if (cellfile_save(nb, out_path, &err) < 0) {
			msg_error("%s", err.buf);
			if (rc == EXIT_OK)
				rc = EXIT_USAGE;
		}
	}
	if (check && differ && rc == EXIT_OK)
		rc = EXIT_CHECK_FAILED;
	if (json) {
		report = cJSON_CreateObject();
		cJSON_AddStringToObject(report, "file", file);
		cJSON_AddNumberToObject(report, "exit_code", rc);
		cJSON_AddNumberToObject(report, "cells_run", ran);
		cJSON_AddNumberToObject(report, "cells_failed", failed);
		cJSON_AddNumberToObject(report, "cells_skipped", skipped);
		if (check)
			cJSON_AddNumberToObject(report, "cells_differing", differ);
		cJSON_AddNumberToObject(report, "startup_seconds", t_open);
		cJSON_AddNumberToObject(report, "cells_wall_seconds", cells_wall);
		cJSON_AddNumberToObject(report, "cells_kernel_seconds", cells_kernel);
		cJSON_AddItemToObject(report, "cells", cells_json);
		cells_json = NULL;
		cli_put_json(report);
	} else if (!json) {
		fprintf(stderr, "replay: %d cell%s run, %d failed, %d skipped%s in %.2f s\n", ran,
			ran == 1 ? "" : "s", failed, skipped,
			check ? (differ ? ", outputs differ" : ", outputs match") : "",
			clock_now() - r.started + t_open);
	}
out:
	if (junit_path) {
		js.time = r.started ? clock_now() - r.started + t_open : 0;
		if (replay_junit_finish(&js, junit_path, opts != NULL, rc, ready) < 0 && rc == EXIT_OK)
			rc = EXIT_USAGE;
	}
	junit_release(&js);
	free(jcase);
	/* First: closing may still end requests through the printer; --copy-out runs here. */
	if (cli_close_session(r.s, cfg) < 0 && rc == EXIT_OK)
		rc = EXIT_CELL_ERROR;
	if (ready) {
		record_close(&r.rec);
		printer_release(&r.pr);
		outputs_release(&r.out);
	}
	nbcheck_release(&chk);
	free(ran_cells);
	free(raised);
	cJSON_Delete(nb);
	cJSON_Delete(stored);
	cJSON_Delete(report);
	cJSON_Delete(cells_json);
	strbuf_release(&err);
	if (res) {
		res->rc = rc;
		res->ran = ran;
		res->failed = failed;
		res->skipped = skipped;
		res->differ = differ;
	}
	return rc;
}

/* cellbox replay: one file as it always ran; several through replay_jobs.c. */
static int replay_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	if (args->argc > 1)
		return replay_jobs_run(args, cfg, cli_count(args, "jobs", 1));
	return cmd_replay_file(args, cfg, args->argv[0], NULL, NULL);
}

static const struct cli_option replay_options[] = {
	{ .name = "output", .short_name = 'o', .value = CLI_TEXT, .arg = "OUT.ipynb",
	  .help = "write the executed notebook with its outputs" },
	{ .name = "json", .value = CLI_SWITCH,
	  .help = "print a JSON report (per cell status, duration, outputs)" },
	{ .name = "check", .value = CLI_SWITCH,
	  .help = "compare the outputs with those stored in the notebook as nbval does "
		  "(addresses, timings, %timeit counts and cell file names normalised, streams "
		  "merged, images by size within 2 px; the NBVAL_SKIP, NBVAL_IGNORE_OUTPUT and "
		  "NBVAL_RAISES_EXCEPTION comments and nbval-* tags honoured)" },
	{ .name = "check-ignore", .value = CLI_TEXT, .arg = "REGEX", .many = 1,
	  .help = "--check: ignore text matching REGEX (repeatable)" },
	{ .name = "check-images", .value = CLI_CHOICE, .arg = "size|pixels",
	  .choices = "size|pixels",
	  .help = "--check: compare images by size (default) or by pixels too" },
	{ .name = "check-lax", .value = CLI_SWITCH,
	  .help = "--check: compare only cells marked # NBVAL_CHECK_OUTPUT" },
	{ .name = "no-timing", .value = CLI_SWITCH,
	  .help = "no metadata.execution timestamps in the notebook" },
	{ .name = "keep-going", .short_name = 'k', .value = CLI_SWITCH,
	  .help = "go on after a failing cell" },
	{ .name = "plots", .value = CLI_TEXT, .arg = "DIR",
	  .help = "save captured plots as DIR/plot-N.png" },
	{ .name = "max-output", .value = CLI_SIZE, .arg = "SIZE",
	  .help = "output a cell keeps in the notebook (default 32m; the transcript shows the "
		  "first 1 MiB of each cell)" },
	{ .name = "no-progress", .value = CLI_SWITCH,
	  .help = "no progress bar on stderr (drawn only on a terminal)" },
	{ .name = "parameters", .short_name = 'p', .value = CLI_PAIR, .arg = "NAME VALUE",
	  .many = 1,
	  .help = "as papermill -p: set parameter NAME in a cell injected after the cell tagged "
		  "parameters (VALUE typed as papermill types it: True, False, None, ints, "
		  "floats, else text; repeatable)" },
	{ .name = "parameters-raw", .short_name = 'r', .value = CLI_PAIR, .arg = "NAME VALUE",
	  .many = 1, .help = "as papermill -r: a parameter whose VALUE stays text" },
	{ .name = "parameters-file", .short_name = 'f', .value = CLI_TEXT, .arg = "FILE.yaml",
	  .many = 1,
	  .help = "as papermill -f: the parameters of a YAML mapping (before -p and -r)" },
	{ .name = "junit", .value = CLI_TEXT, .arg = "FILE.xml",
	  .help = "write a JUnit XML report: a test case per code cell (failed: it raised, or "
		  "its outputs differ under --check; skipped: not run), a test suite per file" },
	{ .name = "jobs", .short_name = 'j', .value = CLI_COUNT, .arg = "N",
	  .help = "with several files: replay N at a time, each in a process and session of "
		  "its own (default 1; 0 = one per CPU)" },
	{ NULL },
};

const struct cli_command cmd_replay_entry = {
	.name = "replay",
	.run = replay_exec,
	.spec = { .options = replay_options, .min_args = 1, .max_args = -1,
		  .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS | CONFIG_FOR_POOL },
	.usage = "replay [OPTIONS] FILE.py|FILE.R|FILE.ipynb|SESSION...",
	.summary = "Run the code cells of a cell file headless in a fresh session.",
	.help = "FILE is a percent-format script (# %% cells), a notebook, or a recorded session\n"
		"(its history.jsonl or its id from 'history list'). A .R file, an R notebook\n"
		"(kernelspec ir) or an R session runs on the R kernel. Cells tagged raises-exception\n"
		"may fail; skip-execution cells are skipped. When --check finds a difference, the\n"
		"exit code is 6.\n"
		"\n"
		"Several FILEs: each is replayed in a process and session of its own (a fresh\n"
		"kernel, or one leased from the pool with --pool), --jobs at a time. What each\n"
		"file's replay prints comes out whole, in the order of the arguments (stdout: the\n"
		"transcripts, as separate replays print them; stderr: '==> FILE <==', the file's\n"
		"messages). -o and --plots then name directories: DIR/NAME.ipynb and DIR/NAME/\n"
		"for FILE NAME.py (two files of one NAME are refused). A table follows on stderr:\n"
		"cells run, status (ok, failed, error, interrupted, stopped, not run), exit code\n"
		"and seconds per file; the exit code is the worst of the files': 128+N (a signal)\n"
		"> 130 > 2 > 5 > 4 > 7 > 3 > 1 > 6 > 0. Progress (files done / total) on stderr\n"
		"when it is a terminal. Ctrl-C interrupts every running file (a second stops\n"
		"them); SIGTERM stops them all, kernels and all.\n",
	.exit_codes = 1,
};
