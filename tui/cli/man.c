/*
 * cellbox.1: the manual page, written (as roff) from the tables --help is made from: the
 * command table with each command's options and notes, the settings table, the reason
 * table's exit codes, and the full-screen UI's keys and commands. meson runs
 * `cellbox --man` at build time and installs what it prints.
 */
#include "man.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "reason.h"
#include "tui.h"

/* Write text for roff: backslashes and hyphens escaped, a leading '.' or '\'' kept as text. */
static void roff(FILE *f, const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
		bol = *s == '\n';
	}
}

/* Notes (--help wraps them at its width): one flowing paragraph, lines joined. */
static void notes(FILE *f, const char *text)
{
	char *flow = xstrdup(text);
	size_t n = strlen(flow);

	for (char *p = flow; *p; p++)
		if (*p == '\n')
			*p = ' ';
	while (n && flow[n - 1] == ' ')
		flow[--n] = '\0';
	roff(f, flow);
	fputc('\n', f);
	free(flow);
}

/* One option: its flag in bold, its help indented under it. */
static void option(FILE *f, const struct cli_option *o)
{
	fputs(".TP\n\\fB", f);
	if (o->short_name)
		fprintf(f, "\\-%c\\fR, \\fB", o->short_name);
	fputs("\\-\\-", f);
	roff(f, o->name);
	fputs("\\fR", f);
	if (o->value != CLI_SWITCH) {
		fputs(" \\fI", f);
		roff(f, o->arg);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	roff(f, o->help);
	fputc('\n', f);
}

/* One command (or subcommand): its usage, summary, options and notes. */
static void command(FILE *f, const struct cli_command *c)
{
	size_t n = table_count(c->spec.options, sizeof(*c->spec.options));
	size_t nsub = table_count(c->subcommands, sizeof(*c->subcommands));

	fputs(".TP\n\\fBcellbox ", f);
	roff(f, c->usage);
	fputs("\\fR\n", f);
	roff(f, c->summary);
	fputc('\n', f);
	if (n || nsub || c->help)
		fputs(".RS\n", f);
	for (size_t i = 0; i < n; i++)
		option(f, &c->spec.options[i]);
	for (size_t i = 0; i < nsub; i++)
		command(f, &c->subcommands[i]);
	if (c->help) {
		fputs(".PP\n", f);
		notes(f, c->help);
	}
	if (n || nsub || c->help)
		fputs(".RE\n", f);
}

/* The settings table: key, flag, environment, default, meaning. */
static void settings(FILE *f)
{
	size_t n;
	const struct config_key *keys = config_keys(&n);

	for (size_t i = 0; i < n; i++) {
		const struct config_key *k = &keys[i];

		fputs(".TP\n\\fB", f);
		roff(f, k->name);
		fputs("\\fR", f);
		if (k->scope) {
			fputs(" (\\fB\\-\\-", f);
			roff(f, k->name);
			fputs("\\fR", f);
			if (k->arg) {
				fputs(" \\fI", f);
				roff(f, k->arg);
				fputs("\\fR", f);
			}
			fputs(")", f);
		}
		if (k->env) {
			fputs(", \\fB", f);
			roff(f, k->env);
			fputs("\\fR", f);
		}
		fputc('\n', f);
		roff(f, k->help);
		if (k->dflt) {
			fputs(" Default: ", f);
			roff(f, k->dflt);
			fputc('.', f);
		}
		fputc('\n', f);
	}
}

/* A row of the UI's help: a key or command, what it does (a heading when `left` is empty). */
static void ui_row(void *data, const char *left, const char *right)
{
	FILE *f = data;

	if (!*left) {
		fputs(".PP\n\\fI", f);
		roff(f, right);
		fputs("\\fR\n", f);
		return;
	}
	fputs(".TP\n\\fB", f);
	roff(f, left);
	fputs("\\fR\n", f);
	roff(f, right);
	fputc('\n', f);
}

void man_write(const struct cli_command *const *cmds, size_t n, FILE *f)
{
	struct strbuf codes = STRBUF_INIT;

	fprintf(f, ".\\\" The manual page of cellbox %s, made by 'cellbox --man' from the tables of "
		"--help.\n", CELLBOX_VERSION);
	fprintf(f, ".TH CELLBOX 1 \"\" \"cellbox %s\" \"User Commands\"\n", CELLBOX_VERSION);
	fputs(".SH NAME\ncellbox \\- a terminal front end for persistent, sandboxed IPython "
	      "sessions\n", f);
	fputs(".SH SYNOPSIS\n\\fBcellbox\\fR [\\fICOMMAND\\fR] [\\fIOPTIONS\\fR]\n.br\n"
	      "\\fBcellbox\\fR \\fIFILE.ipynb\\fR|\\fIFILE.py\\fR [\\fIOPTIONS\\fR]\n", f);
	fputs(".SH DESCRIPTION\nAn IPython kernel kept alive in a sandbox (a local child process, "
	      "or a Docker or Podman container), reached through a file-based command and result "
	      "queue, and driven from a full-screen notebook and console, a readline REPL, "
	      "one-shot runs, headless replay of cell files, or a pool of warm kernels. Without a "
	      "command, \\fBcellbox\\fR starts the full-screen UI on a terminal (the REPL when "
	      "not on one); with a file, the full-screen UI on it as a notebook. A unique prefix "
	      "of a command's name will do.\n", f);
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < n; i++)
		command(f, cmds[i]);
	fputs(".SH SETTINGS\nFlags beat \\fBCELLBOX_*\\fR environment variables, which beat the "
	      "config file (\\fB$CELLBOX_CONFIG\\fR, else "
	      "\\fB$XDG_CONFIG_HOME/cellbox/config\\fR: \\fIkey = value\\fR lines). Each command "
	      "takes the flags that apply to it (its \\fB\\-\\-help\\fR lists them); "
	      "\\fBcellbox config\\fR shows the values in force.\n", f);
	settings(f);
	fputs(".SH \"THE FULL-SCREEN UI\"\nF1 shows these in the UI.\n", f);
	ui_help_rows(ui_row, f);
	fputs(".SH \"EXIT STATUS\"\n", f);
	reason_describe_exit_codes("\n", &codes);
	for (const char *p = codes.buf; *p;) {
		size_t len = strcspn(p, "\n");
		char *line = xstrndup(p, len);
		roff(f, line);
		fputs("\n.br\n", f);
		free(line);
		p += len + (p[len] == '\n');
	}
	fputs("6 replay \\-\\-check found a difference\n", f);
	fputs(".SH ENVIRONMENT\n.TP\n\\fBNO_COLOR\\fR\nno colours in the full-screen UI "
	      "(attributes only)\n.TP\n\\fBXDG_CONFIG_HOME\\fR\nthe config file and "
	      "\\fIcellbox/themes\\fR\n.TP\n\\fBXDG_STATE_HOME\\fR\nthe history store, "
	      "\\fIcellbox/sessions\\fR\n.TP\n\\fBXDG_RUNTIME_DIR\\fR\nsession channels "
	      "(\\fIcellbox\\fR; unset: \\fI/dev/shm/cellbox-UID\\fR when /dev/shm is a tmpfs, "
	      "else \\fI/tmp/cellbox-UID\\fR)\n", f);
	fputs(".SH FILES\n.TP\n\\fI$XDG_CONFIG_HOME/cellbox/config\\fR\nsettings\n.TP\n"
	      "\\fI$XDG_STATE_HOME/cellbox/sessions/ID/history.jsonl\\fR\nevery recorded cell "
	      "with its outputs; plots beside it in \\fIplots/\\fR\n.TP\n"
	      "\\fI.NAME.cellbox\\-recover\\fR\nbeside a notebook open in the UI: its unsaved "
	      "state, offered when it is opened after a crash\n", f);
	strbuf_release(&codes);
}
