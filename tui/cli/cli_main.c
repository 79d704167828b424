/* cellbox: the command table and cli_main(): find the command, parse its arguments, run it. */
#include "cli.h"
#include "named.h"
#include "backend.h"
#include "libraries.h"
#include "man.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmd_config(const struct cli_args *args, struct cellbox_config *cfg);
static int cmd_version(const struct cli_args *args, struct cellbox_config *cfg);
static int cmd_gc(const struct cli_args *args, struct cellbox_config *cfg);

static const struct cli_command cmd_config_entry = {
	.name = "config",
	.run = cmd_config,
	.spec = { .settings = CONFIG_FOR_ALL, .max_args = 0 },
	.usage = "config [OPTIONS]",
	.summary = "Show the settings in force (flags given here included) and where they can be "
		   "set.",
};

static const struct cli_option gc_options[] = {
	{ .name = "images", .value = CLI_SWITCH,
	  .help = "also remove the images --libraries made that no container uses" },
	{ 0 },
};

static const struct cli_command cmd_gc_entry = {
	.name = "gc",
	.run = cmd_gc,
	.spec = { .options = gc_options, .settings = CONFIG_FOR_ENGINE, .max_args = 0 },
	.usage = "gc [--backend docker|podman] [--images]",
	.summary = "Remove the containers and channels of cellbox sessions whose process died.",
	.help = "Every container cellbox starts is labelled with the pid of its cellbox; gc removes\n"
		"those whose process is gone (and their channel directories), then every channel\n"
		"in the runtime directory whose process is gone (a local kernel died with it), and\n"
		"what named sessions whose host is gone left (cellbox ls: 'gone'). A session does\n"
		"the same for channels once when it starts.\n",
};

static const struct cli_command cmd_version_entry = {
	.name = "version",
	.run = cmd_version,
	.spec = { .max_args = 0 },
	.usage = "version",
	.summary = "Print the version.",
};

/* Every command, in the order --help lists them. */
static const struct cli_command *const commands[] = {
	&cmd_tui_entry, &cmd_repl_entry, &cmd_run_entry, &cmd_check_entry, &cmd_pool_entry,
	&cmd_replay_entry, &cmd_history_entry, &cmd_mcp_entry, &cmd_kernel_entry, &cmd_ls_entry,
	&cmd_attach_entry, &cmd_kill_entry, &cmd_fork_entry, &cmd_checkpoint_entry, &cmd_restore_entry,
	&cmd_config_entry, &cmd_gc_entry,
	&cmd_version_entry,
};

/* The command called `word` (or a unique prefix of it); NULL after saying why not. */
static const struct cli_command *find_command(const char *word)
{
	const char *names[ARRAY_SIZE(commands)];
	struct strbuf err = STRBUF_INIT;
	int i;

	for (size_t k = 0; k < ARRAY_SIZE(commands); k++)
		names[k] = commands[k]->name;
	i = table_find(word, names, ARRAY_SIZE(names), sizeof(names[0]), "command", &err);
	if (i < 0)
		msg_error("%s (see '%s --help')", err.buf, cli_progname);
	strbuf_release(&err);
	return i < 0 ? NULL : commands[i];
}

/* Print the program's help. */
static void usage(FILE *f)
{
	fprintf(f, "Usage: %s [COMMAND] [OPTIONS]\n   or: %s FILE.ipynb|FILE.py [OPTIONS]\n\n"
		"A terminal front end for persistent, sandboxed IPython and R sessions.\n"
		"Without a command, %s starts the full-screen UI (the REPL when not on a terminal);\n"
		"with a file, the full-screen UI on it as a notebook.\n"
		"\nCommands (a unique prefix will do):\n", cli_progname, cli_progname, cli_progname);
	for (size_t k = 0; k < ARRAY_SIZE(commands); k++)
		fprintf(f, "  %-9s %s\n", commands[k]->name, commands[k]->summary);
	fprintf(f, "\nSettings flags (each command takes those that apply to it):\n");
	cli_help_settings(CONFIG_FOR_ALL, f);
	fprintf(f, "  %-25s %s\n  %-25s %s\n  %-25s %s\n\n", "-h, --help", "show help",
		"--version", "print the version", "--man", "print the manual page (roff; man 1 cellbox)");
	fprintf(f, "Settings also come from CELLBOX_* variables and $XDG_CONFIG_HOME/cellbox/config\n"
		"(see '%s config'). '%s COMMAND --help' tells more.\n", cli_progname, cli_progname);
}

static int cmd_version(const struct cli_args *args, struct cellbox_config *cfg)
{
	(void)args, (void)cfg;
	printf("cellbox %s\n", CELLBOX_VERSION);
	return EXIT_OK;
}

static int cmd_gc(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	const char *host = cfg->session.sandbox.host, *engine;
	char *root = session_runtime_dir(cfg->session.runtime_dir);
	int n, channels, named, rc = EXIT_NO_KERNEL;

	n = backend_gc(cfg->session.backend, host, root, &out, &err);
	free(root);
	/* Then the channels left by dead processes (the containers' went with them above). */
	channels = session_gc(cfg->session.runtime_dir, &out);
	root = session_runtime_dir(cfg->session.runtime_dir);
	named = root ? named_gc(root, &out) : 0;
	free(root);
	cli_put_text(stdout, out.buf);	/* names of containers and directories */
	if (n < 0)
		goto out;
	printf("%d container%s removed, %d channel%s, %d named session%s\n", n, n == 1 ? "" : "s",
	       channels, channels == 1 ? "" : "s", named, named == 1 ? "" : "s");
	if (cli_has(args, "images")) {
		/* After the containers: an image a dead session's container held is free now. */
		strbuf_reset(&out);
		engine = backend_engine_name(cfg->session.backend, &err);
		n = engine ? libraries_gc_images(engine, host, &out, &err) : -1;
		if (n < 0)
			goto out;
		cli_put_text(stdout, out.buf);
		printf("%d image%s removed\n", n, n == 1 ? "" : "s");
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK)
		msg_error("gc: %s", err.buf);
	strbuf_release(&out);
	strbuf_release(&err);
	return rc;
}

static int cmd_config(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf out = STRBUF_INIT;

	(void)args;
	cli_printf(stdout, "config file: %s\n\n  %-16s %-20s %-24s %s\n",
		   cfg->source ? cfg->source : "(none)", "KEY", "VALUE", "ENVIRONMENT", "MEANING");
	config_describe(cfg, &out);
	cli_put_text(stdout, out.buf);
	strbuf_release(&out);
	return EXIT_OK;
}

/* Whether argv[from..] asks for help (before a "--"). */
static int wants_help(int argc, char **argv, int from)
{
	for (int i = from; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

int cli_main(int argc, char **argv)
{
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT;
	const struct cli_command *cmd;
	struct cli_args args;
	char path[64];
	int first = 1, rc;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			 !strcmp(argv[1], "help"))) {
		cmd = argc > 2 && !strcmp(argv[1], "help") ? find_command(argv[2]) : NULL;
		if (cmd)
			cli_help(cmd, cmd->name, stdout);
		else
			usage(stdout);
		return EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--version"))
		return cmd_version(NULL, NULL);
	if (argc > 1 && !strcmp(argv[1], "--man")) {	/* cellbox.1, from these tables */
		man_write(commands, ARRAY_SIZE(commands), stdout);
		return EXIT_OK;
	}
	if (argc > 1 && argv[1][0] != '-' && (strchr(argv[1], '.') || strchr(argv[1], '/'))) {
		/* `cellbox notes.ipynb`: no command has a dot or a slash, a file does */
		cmd = find_command("tui");
	} else if (argc > 1 && argv[1][0] != '-') {
		cmd = find_command(argv[1]);
		if (!cmd)
			return EXIT_USAGE;
		first = 2;
	} else {
		/* The full-screen UI on a terminal, else the REPL (pipe mode). */
		cmd = find_command(isatty(0) && isatty(1) ? "tui" : "repl");
	}
	snprintf(path, sizeof(path), "%s", cmd->name);
	/* (a command with subcommands and a run of its own runs itself without a subcommand) */
	if (cmd->subcommands && !cmd->run && !(first < argc && argv[first][0] != '-')) {
		if (wants_help(argc, argv, first)) {
			cli_help(cmd, path, stdout);
			return EXIT_OK;
		}
		msg_error("%s: say which: %s (see '%s %s --help')", path, cmd->usage, cli_progname,
			  path);
		return EXIT_USAGE;
	}
	if (cmd->subcommands && first < argc && argv[first][0] != '-') {
		size_t n = table_count(cmd->subcommands, sizeof(*cmd->subcommands));
		int k = table_find(argv[first], cmd->subcommands, n, sizeof(*cmd->subcommands),
				 "subcommand", &err);

		if (k < 0) {
			msg_error("%s: %s (see '%s %s --help')", path, err.buf, cli_progname, path);
			strbuf_release(&err);
			return EXIT_USAGE;
		}
		cmd = &cmd->subcommands[k];
		snprintf(path + strlen(path), sizeof(path) - strlen(path), " %s", cmd->name);
		first++;
	}
	if (wants_help(argc, argv, first)) {
		cli_help(cmd, path, stdout);
		return EXIT_OK;
	}
	if (config_load(&cfg, &err) < 0) {
		msg_error("%s", err.buf);
		strbuf_release(&err);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	strbuf_release(&err);
	if (cli_parse(&cmd->spec, path, argc - first, argv + first, &cfg, &args) < 0 ||
	    cli_check_settings(&cmd->spec, &cfg) < 0) {
		config_release(&cfg);
		return EXIT_USAGE;
	}
	rc = cmd->run(&args, &cfg);
	config_release(&cfg);
	return rc;
}
