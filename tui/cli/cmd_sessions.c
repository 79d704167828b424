/* cellbox ls, attach and kill: the named sessions (named.h, docs/sessions.md). */
#include "cli.h"
#include "usage.h"
#include "named.h"
#include "named_setup.h"
#include "tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* "12s", "5m", "3h", "2d": how long ago `t` (wall-clock seconds) was. */
static void ago(double t, char *buf, size_t len)
{
	double d = clock_wall() - t;

	if (t <= 0 || d < 0)
		snprintf(buf, len, "-");
	else if (d < 120)
		snprintf(buf, len, "%.0fs", d);
	else if (d < 7200)
		snprintf(buf, len, "%.0fm", d / 60);
	else if (d < 172800)
		snprintf(buf, len, "%.0fh", d / 3600);
	else
		snprintf(buf, len, "%.0fd", d / 86400);
}

static int ls_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	struct named_info *v = NULL;
	size_t n = runtime ? named_list(runtime, &v) : 0;

	(void)args;
	if (!n) {
		cli_printf(stderr, "no named sessions (start one with cellbox --name NAME or "
			   "cellbox repl --name NAME)\n");
	} else {
		cli_printf(stdout, "%-20s %-8s %-7s %-8s %-6s %-8s %-5s %-9s  %s\n", "NAME",
			   "BACKEND", "KERNEL", "STATE", "IDLE", "ATTACHED", "TTL", "MEMORY", "RUNNING");
	}
	for (size_t i = 0; i < n; i++) {
		struct strbuf first = STRBUF_INIT;
		char idle[16], ttl[16], mem[24] = "-";
		int more = 0;
		const char *run = v[i].running ? cli_first_line(v[i].running, 40, &first, &more) : "";

		if (v[i].running || strcmp(v[i].state, "idle"))
			snprintf(idle, sizeof(idle), "-");
		else
			ago(v[i].idle_since, idle, sizeof(idle));
		if (v[i].ttl > 0)
			snprintf(ttl, sizeof(ttl), "%.0fs", v[i].ttl);
		else
			snprintf(ttl, sizeof(ttl), "-");
		if (v[i].memory) {	/* "243MiB": one word, as docker stats shows it */
			char *sp;

			usage_format_bytes((long long)v[i].memory, mem, sizeof(mem));
			if ((sp = strchr(mem, ' ')))
				memmove(sp, sp + 1, strlen(sp));
		}
		cli_printf(stdout, "%-20s %-8s %-7s %-8s %-6s %-8d %-5s %-9s  %s%s\n", v[i].name,
			   v[i].backend ? v[i].backend : "-", v[i].kernel ? v[i].kernel : "-",
			   v[i].state, idle, v[i].attached, ttl, mem, run, more ? " ..." : "");
		strbuf_release(&first);
	}
	named_info_free(v, n);
	free(runtime);
	return EXIT_OK;
}

const struct cli_command cmd_ls_entry = {
	.name = "ls",
	.run = ls_exec,
	.spec = { .settings = CONFIG_FOR_POOL, .max_args = 0 },
	.usage = "ls",
	.summary = "List the named sessions: backend, kernel, state, idle time, front ends "
		   "attached, idle limit, the kernel's memory in use, the cell running.",
	.help = "A session whose host is gone shows as 'gone' (cellbox kill NAME removes what "
		"it left).\n",
};

/* The one session running when no name is given; NULL after saying why there is not one. */
static char *only_session(const struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir), *name = NULL;
	struct named_info *v = NULL;
	size_t n = runtime ? named_list(runtime, &v) : 0, live = 0;
	struct strbuf names = STRBUF_INIT;

	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].state, "gone")) {
			live++;
			strbuf_addf(&names, "%s%s", names.len ? ", " : "", v[i].name);
			if (!name)
				name = xstrdup(v[i].name);
		}
	if (live != 1) {
		if (!live)
			msg_error("attach: no named session is running (cellbox ls)");
		else
			msg_error("attach: which one? %s", names.buf);
		free(name);
		name = NULL;
	}
	named_info_free(v, n);
	strbuf_release(&names);
	free(runtime);
	return name;
}

static int attach_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	char *only = args->argc ? NULL : only_session(cfg);
	const char *name = args->argc ? args->argv[0] : only;
	struct session *s;
	int rc;

	if (!name)
		return EXIT_USAGE;
	if (isatty(0) && isatty(1) && !cli_has(args, "repl")) {
		struct tui_named named = { NULL, name, { 0, NULL }, cli_has(args, "read-only") };

		rc = tui_run(cfg, NULL, &named);
		free(only);
		return rc;
	}
	cli_catch_sigint();
	s = cli_open_named(cfg, NULL, name, NULL, cli_has(args, "read-only"));
	free(only);
	if (!s)
		return EXIT_NO_KERNEL;
	return cmd_repl_session(s, cfg);
}

static const struct cli_option attach_options[] = {
	{ .name = "read-only", .value = CLI_SWITCH,
	  .help = "watch: see every cell and output, run nothing" },
	{ .name = "repl", .value = CLI_SWITCH,
	  .help = "the line REPL rather than the full-screen UI (the default off a terminal)" },
	{ 0 },
};

const struct cli_command cmd_attach_entry = {
	.name = "attach",
	.run = attach_exec,
	.spec = { .options = attach_options, .settings = CONFIG_FOR_PLOTS | CONFIG_FOR_TUI,
		  .min_args = 0,
		  .max_args = 1 },
	.usage = "attach [--read-only] [--repl] [NAME]",
	.summary = "Join the named session NAME: the full-screen UI on a terminal, else the REPL.",
	.help = "Without NAME: the one named session running (an error names them when there are\n"
		"several). The cells that ran before (the last 200) are shown first, then every\n"
		"cell any front end runs, as it runs. :detach, Ctrl-D or closing the terminal leave\n"
		"the session running.\n",
};

static int kill_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	struct strbuf err = STRBUF_INIT;
	int rc = EXIT_OK;

	for (int i = 0; i < args->argc; i++) {
		strbuf_reset(&err);
		if (!runtime || named_kill(runtime, args->argv[i], &err) < 0) {
			msg_error("%s", err.len ? err.buf : "no runtime directory");
			rc = EXIT_USAGE;
		}
	}
	strbuf_release(&err);
	free(runtime);
	return rc;
}

const struct cli_command cmd_kill_entry = {
	.name = "kill",
	.run = kill_exec,
	.spec = { .settings = CONFIG_FOR_POOL, .min_args = 1, .max_args = -1 },
	.usage = "kill NAME...",
	.summary = "End named sessions: their kernels are killed, their hosts leave.",
};

static int fork_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	char *made = args->argc > 1 ? NULL : named_generate(), *text;
	const char *name = made ? made : args->argv[1];
	struct strbuf err = STRBUF_INIT;
	struct named_forked f;
	int rc = EXIT_OK;

	if (!named_name_ok(name)) {
		msg_error("'%s' cannot name a session (letters, digits, '.', '_', '-')", name);
		rc = EXIT_USAGE;
	} else if (named_setup_fork(cfg, args->argv[0], name, cli_session_mask(), &f, &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_USAGE;
	} else {
		text = named_forked_text(args->argv[0], name, &f);
		cli_printf(stdout, "%s (cellbox attach %s)\n", text, name);
		free(text);
	}
	strbuf_release(&err);
	free(made);
	return rc;
}

const struct cli_command cmd_fork_entry = {
	.name = "fork",
	.run = fork_exec,
	.spec = { .settings = CONFIG_FOR_POOL, .min_args = 1, .max_args = 2 },
	.usage = "fork NAME [NEW]",
	.summary = "Fork named session NAME into a new named session NEW: a copy of its live kernel, "
		   "or a re-run of its cells said as one.",
	.help = "A local kernel: the new session's kernel is a copy of NAME's kernel process, made\n"
		"when its running cell (if any) ends: the same variables, imports and objects in\n"
		"memory, independent from then on. NEW is a generated name when not given. A local kernel is forked in\n"
		"place: both see the same files (it has no file sandbox of its own), and the copy\n"
		"lives in NAME's kernel's process namespace: when NAME ends first, its kernel is\n"
		"stopped, not killed, until its copies have ended. A container's kernel under gVisor\n"
		"is forked through a memory checkpoint (checkpoint --memory): NAME pauses, is made\n"
		"again from it, then NEW; front ends attached to NAME are left detached. Any other\n"
		"container's kernel (runc: no memory checkpoint here) is forked by re-running: NAME's\n"
		"cells since its kernel started run again in a fresh kernel of NEW (its backend,\n"
		"kernel, runtime and image NAME's), NAME untouched. That is not a memory copy, and\n"
		"is said so: what the cells read from outside (clocks, random numbers, files they\n"
		"did not write) may differ. The same as :fork in a front end and MCP session_fork.\n",
};
