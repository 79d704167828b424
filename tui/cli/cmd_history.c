/* cellbox history: list, show, search and export the recorded cells. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "cellfile.h"
#include "history.h"
#include "numconv.h"
#include "sanitize.h"

struct walk {
	int n;			/* number of the current entry, from 1 over all sessions */
	int want;		/* show: the entry to print */
	int found;
	pcre2_code *re;		/* search */
	pcre2_match_data *md;
};

/*
 * Print one entry as a list line: N, session, [count], status, duration, first line. The
 * recorded code is outside text (a replayed file's, say): every field goes out sanitised.
 */
static void list_line(int n, const cJSON *e)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
	const char *session = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "session"));
	const char *status = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "status"));
	const cJSON *count = cJSON_GetObjectItemCaseSensitive(e, "execution_count");
	const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "duration");
	struct strbuf first = STRBUF_INIT;
	int more = 0;
	char cnt[16] = "-";

	cli_first_line(code, 60, &first, &more);
	if (cJSON_IsNumber(count))
		snprintf(cnt, sizeof(cnt), "%d", count->valueint);
	cli_printf(stdout, "%5d  %-24s %4s  %-7s %8.3fs  %s%s\n", n, session ? session : "?", cnt,
		   status ? status : "?", cJSON_IsNumber(dur) ? dur->valuedouble : 0, first.buf,
		   more ? " ..." : "");
	strbuf_release(&first);
}

static int on_list(const cJSON *e, void *data)
{
	struct walk *w = data;

	list_line(++w->n, e);
	return 0;
}

static int on_search(const cJSON *e, void *data)
{
	struct walk *w = data;
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));

	w->n++;
	if (code && pcre2_match(w->re, (PCRE2_SPTR)code, strlen(code), 0, 0, w->md, NULL) >= 0) {
		list_line(w->n, e);
		w->found++;
	}
	return 0;
}

/* "ename: evalue" of an error output; the caller frees it. */
static char *error_text(const cJSON *o)
{
	const char *ename = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "ename"));
	const char *evalue = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "evalue"));

	return xasprintf("%s: %s\n", ename ? ename : "Error", evalue ? evalue : "");
}

/* Print an entry in full: header, code, outputs as text. */
static int on_show(const cJSON *e, void *data)
{
	struct walk *w = data;
	const cJSON *o, *t = cJSON_GetObjectItemCaseSensitive(e, "time");
	time_t when;
	char stamp[32] = "";

	if (++w->n != w->want)
		return 0;
	w->found = 1;
	when = cJSON_IsNumber(t) ? (time_t)seconds_clamp(t->valuedouble) : 0;
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", localtime(&when));
	{
		const char *session =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "session"));
		const char *status =
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "status"));
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "execution_count");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "duration");

		cli_printf(stdout, "# %d: session %s, In [%d], %s, %.3f s, %s\n", w->n,
			   session ? session : "?", cJSON_IsNumber(n) ? n->valueint : 0,
			   status ? status : "?", cJSON_IsNumber(d) ? d->valuedouble : 0, stamp);
	}
	cli_put_text(stdout, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code")));
	putchar('\n');
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(e, "outputs")) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "output_type"));
		const cJSON *data_ = cJSON_GetObjectItemCaseSensitive(o, "data");
		const cJSON *cb = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(o, "metadata"), "cellbox");
		const char *plot = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cb, "plot"));
		char *text = NULL, *note = NULL;

		if (!type)
			continue;
		if (!strcmp(type, "stream"))
			text = cellfile_join(cJSON_GetObjectItemCaseSensitive(o, "text"));
		else if (!strcmp(type, "error"))
			text = error_text(o);
		else if (plot && (note = history_plot_dropped(plot)))
			text = xasprintf("[plot dropped: %s]\n", note);
		else if (plot)
			text = xasprintf("[plot: %s]\n", plot);
		else
			text = cellfile_join(cJSON_GetObjectItemCaseSensitive(data_, "text/plain"));
		if (text && *text) {
			/* Recorded output is kernel output: print it sanitised. */
			struct sanitizer san;
			struct strbuf clean = STRBUF_INIT;
			sanitize_init(&san, 0);
			sanitize_feed(&san, text, strlen(text), &clean);
			fputs(clean.buf, stdout);
			if (clean.len && clean.buf[clean.len - 1] != '\n')
				fputc('\n', stdout);
			strbuf_release(&clean);
			sanitize_release(&san);
		}
		free(text);
		free(note);
	}
	return 1;
}

/* Print the store's warnings (torn or corrupt lines). */
static void warn_done(struct strbuf *warn)
{
	if (warn->len) {
		fputs("cellbox: warning: ", stderr);
		cli_put_text(stderr, warn->buf);
	}
	strbuf_release(warn);
}

/*
 * A --session that names no recorded session is an error (exit 2), not an empty answer.
 * Returns 0 when none was given or it is there.
 */
static int check_session(const struct cli_args *args, const char *sub)
{
	const char *want = cli_value(args, "session");
	char **list;
	int found = 0;

	if (!want)
		return 0;
	list = history_sessions();
	for (size_t i = 0; list[i] && !found; i++)
		found = !strcmp(list[i], want);
	history_free_list(list);
	if (!found) {
		struct strbuf clean = STRBUF_INIT;
		msg_error("history %s: no recorded session '%s' (see 'history list')", sub,
			  sanitize_cstr(want, SAN_NO_CR, &clean));
		strbuf_release(&clean);
	}
	return found ? 0 : -1;
}

/* history list */
static int history_list(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct walk w = { 0 };
	struct strbuf warn = STRBUF_INIT;

	(void)cfg;
	if (check_session(args, "list") < 0)
		return EXIT_USAGE;
	history_iter(cli_value(args, "session"), on_list, &w, &warn);
	if (!w.n)
		fprintf(stderr, "history: no recorded cells\n");
	warn_done(&warn);
	return EXIT_OK;
}

/* history show N */
static int history_show(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct walk w = { 0 };
	struct strbuf warn = STRBUF_INIT;
	char *end = NULL;

	(void)cfg;
	w.want = (int)strtol(args->argv[0], &end, 10);
	if (*end || w.want <= 0) {
		msg_error("history show: give the number of a cell (see 'history list')");
		return EXIT_USAGE;
	}
	if (check_session(args, "show") < 0)
		return EXIT_USAGE;
	history_iter(cli_value(args, "session"), on_show, &w, &warn);
	if (!w.found)
		msg_error("history show: no cell %d (there are %d)", w.want, w.n);
	warn_done(&warn);
	return w.found ? EXIT_OK : EXIT_USAGE;
}

/* history search REGEX */
static int history_search(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct walk w = { 0 };
	struct strbuf warn = STRBUF_INIT;
	PCRE2_SIZE off;
	int e;

	(void)cfg;
	if (check_session(args, "search") < 0)
		return EXIT_USAGE;
	w.re = pcre2_compile((PCRE2_SPTR)args->argv[0], PCRE2_ZERO_TERMINATED, PCRE2_UTF, &e,
			     &off, NULL);
	if (!w.re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(e, msg, sizeof(msg));
		msg_error("history search: bad regular expression at %zu: %s", (size_t)off,
			  (char *)msg);
		return EXIT_USAGE;
	}
	w.md = pcre2_match_data_create_from_pattern(w.re, NULL);
	history_iter(cli_value(args, "session"), on_search, &w, &warn);
	pcre2_match_data_free(w.md);
	pcre2_code_free(w.re);
	warn_done(&warn);
	return w.found ? EXIT_OK : EXIT_CELL_ERROR;	/* as grep: 1 when nothing matched */
}

/* history export FILE */
static int history_export_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = EXIT_OK;

	(void)cfg;
	if (history_export(cli_value(args, "session"), args->argv[0], &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_USAGE;
	}
	strbuf_release(&err);
	return rc;
}

static const struct cli_option session_option[] = {
	{ .name = "session", .value = CLI_TEXT, .arg = "ID",
	  .help = "only this recorded session (export: the newest by default)" },
	{ NULL },
};

static const struct cli_command history_subcommands[] = {
	{ .name = "list", .run = history_list, .usage = "history list [--session ID]",
	  .summary = "Every recorded cell: number, session, count, status, duration, first line.",
	  .spec = { .options = session_option, .max_args = 0 } },
	{ .name = "show", .run = history_show, .usage = "history show N [--session ID]",
	  .summary = "Cell N in full: its code and outputs.",
	  .spec = { .options = session_option, .min_args = 1, .max_args = 1 } },
	{ .name = "search", .run = history_search, .usage = "history search REGEX [--session ID]",
	  .summary = "The cells whose code matches REGEX (PCRE2); exit 1 when none does.",
	  .spec = { .options = session_option, .min_args = 1, .max_args = 1 } },
	{ .name = "export", .run = history_export_cmd, .usage = "history export FILE [--session ID]",
	  .summary = "A session as FILE.ipynb (outputs and plots kept) or FILE.py / FILE.R.",
	  .spec = { .options = session_option, .min_args = 1, .max_args = 1 } },
	{ NULL },
};

const struct cli_command cmd_history_entry = {
	.name = "history",
	.usage = "history list | show N | search REGEX | export FILE [--session ID]",
	.summary = "The recorded cells of every session: list, show, search, export.",
	.help = "Every cell run by 'run', 'repl', 'replay' and the UI is recorded under\n"
		"$XDG_STATE_HOME/cellbox/sessions/<id>/ (history-size cells are kept). In the REPL,\n"
		"':export FILE' exports the session.\n",
	.subcommands = history_subcommands,
};
