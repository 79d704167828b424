/* --help made from a command's spec and the settings table. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Help: the left column's width and the line width. */
#define HELP_LEFT 28
#define HELP_WIDTH 92

/* Print `text` from column `col` (already reached), wrapped at HELP_WIDTH to `indent`. */
static void put_wrapped(FILE *f, int col, int indent, const char *text)
{
	const char *p = text;

	while (*p) {
		size_t word = strcspn(p, " ");

		if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, word, f);
		col += (int)word;
		p += word;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

/* One option line: the left part, then its help at HELP_LEFT. */
static void put_option(FILE *f, int indent, const char *left, const char *help)
{
	int col = fprintf(f, "%*s%s", indent, "", left);

	if (col >= HELP_LEFT - 1) {
		fprintf(f, "\n%*s", HELP_LEFT, "");
		col = HELP_LEFT;
	} else {
		col += fprintf(f, "%*s", HELP_LEFT - col, "");
	}
	put_wrapped(f, col, HELP_LEFT, help);
}

void cli_help_settings(unsigned scope, FILE *f)
{
	size_t n;
	const struct config_key *keys = config_keys(&n);

	for (size_t i = 0; i < n; i++) {
		char left[64], *help;

		if (!(keys[i].scope & scope))
			continue;
		snprintf(left, sizeof(left), "--%s%s%s%s%s", keys[i].name,
			 keys[i].flag_alias ? ", --" : "",
			 keys[i].flag_alias ? keys[i].flag_alias : "", keys[i].arg ? " " : "",
			 keys[i].arg ? keys[i].arg : "");
		help = keys[i].dflt && keys[i].arg && strcmp(keys[i].dflt, "0") ?
		       xasprintf("%s (default: %s)", keys[i].help, keys[i].dflt) :
		       xstrdup(keys[i].help);
		put_option(f, 2, left, help);
		free(help);
	}
}

/* The own options of a spec, `indent` columns in. */
static void help_options(const struct cli_spec *spec, int indent, FILE *f)
{
	size_t n = table_count(spec->options, sizeof(*spec->options));

	for (size_t i = 0; i < n; i++) {
		const struct cli_option *o = &spec->options[i];
		char left[80];
		int k = 0;

		if (o->short_name)
			k = snprintf(left, sizeof(left), "-%c, ", o->short_name);
		snprintf(left + k, sizeof(left) - (size_t)k, "--%s%s%s", o->name,
			 o->value != CLI_SWITCH ? " " : "", o->value != CLI_SWITCH ? o->arg : "");
		put_option(f, indent, left, o->help);
	}
}

void cli_help(const struct cli_command *cmd, const char *path, FILE *f)
{
	size_t nsub = table_count(cmd->subcommands, sizeof(*cmd->subcommands));
	unsigned settings = cmd->spec.settings;

	fprintf(f, "Usage: %s %s\n\n", cli_progname, cmd->usage);
	put_wrapped(f, 0, 0, cmd->summary);
	if (table_count(cmd->spec.options, sizeof(*cmd->spec.options))) {
		fprintf(f, "\nOptions:\n");
		help_options(&cmd->spec, 2, f);
	}
	if (nsub)
		fprintf(f, "\nSubcommands:\n");
	for (size_t i = 0; i < nsub; i++) {
		const struct cli_command *sub = &cmd->subcommands[i];
		put_option(f, 2, sub->usage, sub->summary);
		help_options(&sub->spec, 4, f);
		settings |= sub->spec.settings;
	}
	if (settings) {
		fprintf(f, "\nSettings (flags beat CELLBOX_* variables and the config file: see '%s "
			"config'):\n", cli_progname);
		cli_help_settings(settings, f);
	}
	put_option(f, 2, "-h, --help", "show this help");
	if (cmd->help) {
		fputc('\n', f);
		fputs(cmd->help, f);
	}
	if (cmd->exit_codes) {
		struct strbuf codes = STRBUF_INIT;

		reason_describe_exit_codes("\n  ", &codes);
		fprintf(f, "\nExit codes:\n  %s\n", codes.buf);
		strbuf_release(&codes);
	}
	(void)path;
}
