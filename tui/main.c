/* cellbox: command-line dispatch. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_progname = "cellbox";
volatile sig_atomic_t cli_sigint;

static int cmd_config(int argc, char **argv, struct cellbox_config *cfg);
static int cmd_version(int argc, char **argv, struct cellbox_config *cfg);

static const struct cli_command commands[] = {
	{
		.name = "tui",
		.run = cmd_tui,
		.usage = "tui [OPTIONS] [--theme NAME]",
		.summary = "the full-screen notebook/REPL (the default on a terminal)",
		.help = "  --theme NAME      dark (default), light, high-contrast, monochrome, or a\n"
			"                    NAME.theme in $XDG_CONFIG_HOME/cellbox/themes\n"
			"  Enter runs a complete cell, Ctrl-J adds a line, Ctrl-C interrupts,\n"
			"  F1 lists keys and commands, Ctrl-Q quits. NO_COLOR turns colours off.\n",
	},
	{
		.name = "repl",
		.run = cmd_repl,
		.usage = "repl [OPTIONS]",
		.summary = "a line REPL on one persistent session (readline; reads cells from a pipe)",
		.help = "  Prompts In [n]: / Out[n]:, multi-line cells decided by the kernel, Tab\n"
			"  completion from the kernel, Ctrl-C interrupts a cell or clears the line,\n"
			"  Ctrl-D exits. History is kept in $XDG_STATE_HOME/cellbox/history.\n"
			"  With stdin not a terminal, cells are read from it (a blank line or a\n"
			"  complete statement ends a cell) and printed plainly; the exit code is 1\n"
			"  when a cell failed.\n",
	},
	{
		.name = "run",
		.run = cmd_run,
		.usage = "run [OPTIONS] FILE | -c CODE",
		.summary = "one-shot: a fresh kernel runs FILE (or CODE, or - for stdin), then goes",
		.help = "  -c, --code CODE   run CODE instead of a file\n"
			"  --json            print one JSON object (exit_code, stdout, stderr, plots\n"
			"                    with base64 content, status, error) instead of the output\n"
			"  --plots DIR       save captured plots as DIR/plot-N.png\n"
			"\n"
			"Exit codes: 0 ok, 1 the code raised, 2 bad arguments or input, 3 timeout,\n"
			"4 the kernel died, 5 the kernel could not start, 130 interrupted.\n",
	},
	{
		.name = "config",
		.run = cmd_config,
		.usage = "config",
		.summary = "show the settings in force and where they can be set",
		.help = "",
	},
	{
		.name = "version",
		.run = cmd_version,
		.usage = "version",
		.summary = "print the version",
		.help = "",
	},
};

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Record a Ctrl-C for the command to act on. */
static void on_sigint(int sig)
{
	(void)sig;
	cli_sigint = 1;
}

static sigset_t wait_mask;

void cli_catch_sigint(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: waits return EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &wait_mask);
	/* A parent may hand us SIGINT blocked (test runners do): let it in while we wait. */
	sigdelset(&wait_mask, SIGINT);
}

const sigset_t *cli_wait_mask(void)
{
	return &wait_mask;
}

struct session *cli_open_session(const struct cellbox_config *cfg)
{
	struct session_opts so;
	struct strbuf err = STRBUF_INIT;
	struct session *s;

	cli_session_opts(cfg, &so);
	s = session_open(&so, &err);
	if (!s)
		cli_error("cannot start the kernel: %s", err.buf);
	else
		session_set_sigmask(s, &wait_mask);
	strbuf_release(&err);
	return s;
}

int cli_wait(struct session *s, unsigned long id)
{
	int interrupted = 0;

	for (;;) {
		if (cli_sigint) {
			cli_sigint = 0;
			interrupted = 1;
			session_interrupt(s);
		}
		if (session_wait(s, id) == 0)
			return interrupted;
	}
}

int cli_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	return isatty(fd) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

static const struct {
	const char *flag;
	const char *key;
	const char *arg;
	const char *help;
} common_options[] = {
	{ "--backend", "backend", "NAME", "where the kernel runs: local (default)" },
	{ "--python", "python", "PATH", "interpreter of the local backend" },
	{ "--timeout", "timeout", "S", "interrupt a cell after S seconds (0 = never)" },
	{ "--memory", "memory", "SIZE", "memory limit of the kernel (512m, 1g; 0 = none)" },
	{ "--startup-timeout", "startup-timeout", "S", "wait at most S seconds for the kernel" },
	{ "--runtime-dir", "runtime-dir", "DIR", "where session channels live" },
};

int cli_common_option(int argc, char **argv, int *i, struct cellbox_config *cfg)
{
	const char *arg = argv[*i];

	for (size_t k = 0; k < ARRAY_SIZE(common_options); k++) {
		size_t n = strlen(common_options[k].flag);
		const char *value;
		struct strbuf err = STRBUF_INIT;
		int rc;

		if (strncmp(arg, common_options[k].flag, n) || (arg[n] && arg[n] != '='))
			continue;
		if (arg[n] == '=') {
			value = arg + n + 1;
		} else if (*i + 1 < argc) {
			value = argv[++*i];
		} else {
			cli_error("%s needs a value (%s)", common_options[k].flag,
				  common_options[k].arg);
			return -1;
		}
		rc = config_set(cfg, common_options[k].key, value, &err);
		if (rc < 0)
			cli_error("%s: %s", common_options[k].flag, err.buf);
		strbuf_release(&err);
		return rc < 0 ? -1 : 1;
	}
	return 0;
}

void cli_common_help(FILE *f)
{
	fprintf(f, "Options of every command:\n");
	for (size_t k = 0; k < ARRAY_SIZE(common_options); k++) {
		char left[64];
		snprintf(left, sizeof(left), "%s %s", common_options[k].flag, common_options[k].arg);
		fprintf(f, "  %-26s %s\n", left, common_options[k].help);
	}
	fprintf(f, "  %-26s %s\n", "-h, --help", "show help");
}

void cli_session_opts(const struct cellbox_config *cfg, struct session_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->backend = cfg->backend;
	o->python = cfg->python;
	o->runtime_dir = cfg->runtime_dir;
	o->startup_timeout = cfg->startup_timeout;
	o->interrupt_grace = cfg->interrupt_grace;
	o->memory = cfg->memory;
}

int cli_read_code(const char *path, struct strbuf *code)
{
	size_t bad, nonblank = 0;
	const char *shown = strcmp(path, "-") ? path : "standard input";
	int rc;

	if (!strcmp(path, "-"))
		rc = strbuf_read_fd(code, 0, 256u << 20);
	else
		rc = strbuf_read_file(code, path, 256u << 20);
	if (rc < 0) {
		cli_error("cannot read '%s': %s", shown, strerror(errno));
		return -1;
	}
	if (memchr(code->buf, '\0', code->len)) {
		cli_error("'%s' is not a text file (it contains NUL bytes)", shown);
		return -1;
	}
	if (!utf8_valid(code->buf, code->len, &bad)) {
		cli_error("'%s' is not valid UTF-8 (byte 0x%02x at offset %zu)", shown,
			  (unsigned char)code->buf[bad], bad);
		return -1;
	}
	for (size_t k = 0; k < code->len; k++)
		if (!strchr(" \t\r\n\f\v", code->buf[k]))
			nonblank++;
	if (!nonblank) {
		cli_error("'%s' is empty: nothing to run", shown);
		return -1;
	}
	return 0;
}

/* Print the program's help. */
static void usage(FILE *f)
{
	fprintf(f, "Usage: %s [COMMAND] [OPTIONS]\n\n"
		"A terminal front end for persistent, sandboxed IPython sessions.\n"
		"Without a command, %s starts the full-screen UI (the REPL when not on a terminal).\n\nCommands:\n", cli_progname, cli_progname);
	for (size_t k = 0; k < ARRAY_SIZE(commands); k++)
		fprintf(f, "  %-9s %s\n", commands[k].name, commands[k].summary);
	fputc('\n', f);
	cli_common_help(f);
	fprintf(f, "  %-26s %s\n\n", "--version", "print the version");
	fprintf(f, "Settings also come from CELLBOX_* variables and $XDG_CONFIG_HOME/cellbox/config\n"
		"(see '%s config'). '%s COMMAND --help' tells more.\n", cli_progname, cli_progname);
}

/* Print one command's help. */
static void command_usage(const struct cli_command *c, FILE *f)
{
	fprintf(f, "Usage: %s %s\n\n%s.\n\n", cli_progname, c->usage, c->summary);
	if (*c->help)
		fprintf(f, "%s\n", c->help);
	cli_common_help(f);
}

static int cmd_version(int argc, char **argv, struct cellbox_config *cfg)
{
	(void)argc, (void)argv, (void)cfg;
	printf("cellbox %s\n", CELLBOX_VERSION);
	return EXIT_OK;
}

static int cmd_config(int argc, char **argv, struct cellbox_config *cfg)
{
	struct strbuf out = STRBUF_INIT;

	for (int i = 1; i < argc; i++) {
		int rc = cli_common_option(argc, argv, &i, cfg);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0) {
			cli_error("config: unknown argument '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	printf("config file: %s\n\n  %-16s %-20s %-24s %s\n", cfg->source ? cfg->source : "(none)",
	       "KEY", "VALUE", "ENVIRONMENT", "MEANING");
	config_describe(cfg, &out);
	fputs(out.buf, stdout);
	strbuf_release(&out);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT;
	/* The full-screen UI on a terminal, else the REPL (pipe mode). */
	const struct cli_command *cmd = isatty(0) && isatty(1) ? &commands[0] : &commands[1];
	int first = 1, rc;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			 !strcmp(argv[1], "help"))) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			for (size_t k = 0; k < ARRAY_SIZE(commands); k++)
				if (!strcmp(argv[2], commands[k].name)) {
					command_usage(&commands[k], stdout);
					return EXIT_OK;
				}
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--version"))
		return cmd_version(0, NULL, NULL);
	if (argc > 1 && argv[1][0] != '-') {
		cmd = NULL;
		for (size_t k = 0; k < ARRAY_SIZE(commands); k++)
			if (!strcmp(argv[1], commands[k].name))
				cmd = &commands[k];
		if (!cmd) {
			cli_error("unknown command '%s' (see '%s --help')", argv[1], cli_progname);
			return EXIT_USAGE;
		}
		first = 2;
	}
	for (int i = first; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			command_usage(cmd, stdout);
			return EXIT_OK;
		} else if (!strcmp(argv[i], "--")) {
			break;
		}
	if (config_load(&cfg, &err) < 0) {
		cli_error("%s", err.buf);
		strbuf_release(&err);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	strbuf_release(&err);
	/* Commands parse argv[1..]: shift so argv[0] is the command name. */
	rc = cmd->run(argc - first + 1, argv + first - 1, &cfg);
	config_release(&cfg);
	return rc;
}
