/* `cellbox tui`: the full-screen UI's command (the UI itself is tui/ui/). */
#include "cli.h"
#include "tui.h"

#include <unistd.h>

/* Check that the UI can run here, then run it on FILE (or none). */
static int cmd_tui(const struct cli_args *args, struct cellbox_config *cfg)
{
	const char *file = args && args->argc ? args->argv[0] : NULL;
	struct tui_named named = { 0 };

	if (!isatty(0) || !isatty(1)) {
		msg_error("tui: standard input and output must be a terminal (try 'cellbox repl'%s)",
			  file ? ", or 'cellbox replay FILE'" : "");
		return EXIT_USAGE;
	}
	if (args && cli_existing(cfg, cli_value(args, "existing")) < 0)
		return EXIT_USAGE;
	if (args) {
		named.name = cli_value(args, "name");
		named.attach = cli_value(args, "attach");
		if (cli_named_idle(args, &named.idle) < 0)
			return EXIT_USAGE;
	}
	if (named.name && named.attach) {
		msg_error("--name starts a session, --attach joins one: not both");
		return EXIT_USAGE;
	}
	return tui_run(cfg, file, &named);
}

static const struct cli_option tui_options[] = {
	CLI_NAMED_OPTIONS,
	CLI_EXISTING_OPTION,
	{ NULL },
};

const struct cli_command cmd_tui_entry = {
	.name = "tui",
	.run = cmd_tui,
	.spec = { .options = tui_options, .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS | CONFIG_FOR_POOL |
			      CONFIG_FOR_PLOTS | CONFIG_FOR_TUI, .max_args = 1 },
	.usage = "tui [OPTIONS] [FILE.ipynb|FILE.py]",
	.summary = "The full-screen notebook/REPL (the default on a terminal).",
	.help = "Enter runs a complete cell, Ctrl-J adds a line, Ctrl-C interrupts, F1 lists keys\n"
		"and commands, Ctrl-Q quits. NO_COLOR turns colours off.\n"
		"With FILE (also as 'cellbox FILE'): the notebook or percent-format script opened\n"
		"as a notebook, its cells edited, run and saved in place (a new file is made on the\n"
		"first save). Enter edits a cell, Esc stops, Shift-Enter or F5 runs, Ctrl-S saves.\n"
		"With --name, the session runs on when the UI leaves (Ctrl-Q, :detach, the\n"
		"terminal closed); cellbox attach NAME comes back to it. Without, :detach (F12)\n"
		"gives it a name, printed as the UI leaves, and leaves it running (between cells).\n",
};
