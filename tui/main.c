/* cellbox: command-line dispatch. */
#include "cli.h"
#include "backend.h"
#include "files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphics.h"
#include "printer.h"

const char *cli_progname = "cellbox";
volatile sig_atomic_t cli_sigint;

static int cmd_config(int argc, char **argv, struct cellbox_config *cfg);
static int cmd_version(int argc, char **argv, struct cellbox_config *cfg);
static int cmd_gc(int argc, char **argv, struct cellbox_config *cfg);

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
		.name = "pool",
		.run = cmd_pool,
		.usage = "pool serve [--min N] [--max N] [...] | pool status [--json] | pool stop",
		.summary = "keep warm kernels ready for --pool (pooled mode)",
		.help = "  serve               keep kernels warm (foreground; --detach to background it)\n"
			"    --min N           kernels kept ready (default 1)\n"
			"    --max N           ready + leased at most (default 4)\n"
			"    --no-prewarm      start the first kernel only when a client asks\n"
			"    --idle-timeout S  retire ready kernels above --min idle S s (default 300)\n"
			"    --max-age S       replace ready kernels older than S s (default 3600)\n"
			"    --health-interval S  ping ready kernels every S s (default 30)\n"
			"    --preimport LIST  import these before a kernel is leased: numpy, pandas\n"
			"    --detach          run in the background, log to the pool's daemon.log\n"
			"  status [--json]     kernels, leases, ages and health\n"
			"  stop                stop the daemon (its ready kernels go with it)\n"
			"\n"
			"Clients: --pool on tui, repl, run and replay (or pool = yes) lease a warm\n"
			"kernel; --pool-strategy says what happens when none is free: wait (up to\n"
			"--pool-timeout), fail-fast (exit 5), temporary (a fresh kernel of its own).\n"
			"--pool-name picks the pool for clients and the daemon alike.\n",
	},
	{
		.name = "replay",
		.run = cmd_replay,
		.usage = "replay [OPTIONS] FILE.py|FILE.R|FILE.ipynb|SESSION",
		.summary = "run the code cells of a cell file headless in a fresh session",
		.help = "  FILE is a percent-format script (# %% cells), a notebook, or a recorded\n"
			"  session (its history.jsonl or its id from 'history list'). A .R file, an\n"
			"  R notebook (kernelspec ir) or an R session runs on the R kernel.\n"
			"  -o, --output OUT.ipynb  write the executed notebook with its outputs\n"
			"  --json            print a JSON report (per cell status, duration, outputs)\n"
			"  --check           compare the outputs with those stored in the notebook\n"
			"                    (addresses and timings normalised, images by size)\n"
			"  -k, --keep-going  go on after a failing cell\n"
			"  --plots DIR       save captured plots as DIR/plot-N.png\n"
			"  --max-output SIZE output a cell keeps in the notebook (default 32m; the\n"
			"                    transcript shows the first 1 MiB of each cell)\n"
			"  --no-progress     no progress bar on stderr (drawn only on a terminal)\n"
			"  Cells tagged raises-exception may fail; skip-execution cells are skipped.\n"
			"\n"
			"Exit codes: as 'run', and 6 when --check found a difference.\n",
	},
	{
		.name = "history",
		.run = cmd_history,
		.usage = "history list | show N | search REGEX | export FILE [--session ID]",
		.summary = "the recorded cells of every session: list, show, search, export",
		.help = "  Every cell run by 'run' and 'repl' is recorded under\n"
			"  $XDG_STATE_HOME/cellbox/sessions/<id>/ (history-size cells are kept).\n"
			"  export writes the newest session (or --session ID) as FILE.py or\n"
			"  FILE.ipynb; in the REPL, ':export FILE' does the same for the session.\n",
	},
	{
		.name = "config",
		.run = cmd_config,
		.usage = "config",
		.summary = "show the settings in force and where they can be set",
		.help = "",
	},
	{
		.name = "gc",
		.run = cmd_gc,
		.usage = "gc [--backend docker|podman]",
		.summary = "remove the containers of cellbox sessions whose process died",
		.help = "  Every container cellbox starts is labelled with the pid of its cellbox;\n"
			"  gc removes those whose process is gone (and their channel directories).\n"
			"  A docker or podman session does the same once when it starts.\n",
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
static int sigint_caught;	/* cli_catch_sigint() ran: wait_mask means something */

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
	sigint_caught = 1;
	/* A parent may hand us SIGINT blocked (test runners do): let it in while we wait. */
	sigdelset(&wait_mask, SIGINT);
}

const sigset_t *cli_wait_mask(void)
{
	return &wait_mask;
}

/* The --copy-in and --copy-out flags, in order. */
static const char *copy_in[64], *copy_out[64];
static size_t n_copy_in, n_copy_out;

struct session *cli_open_session(const struct cellbox_config *cfg)
{
	return cli_open_session_cb(cfg, NULL, NULL);
}

struct session *cli_open_session_cb(const struct cellbox_config *cfg, session_state_fn on_state,
				    void *data)
{
	struct session_opts so;
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	char *runtime = NULL, *pool = NULL;

	cli_session_opts(cfg, &so);
	so.on_state = on_state;
	so.state_data = data;
	if (cfg->pool) {
		runtime = session_runtime_dir(cfg->runtime_dir);
		pool = pool_dir_path(runtime, cfg->pool_name);
		so.pool_dir = pool;
		so.pool_timeout = cfg->pool_timeout;
		pool_strategy_parse(cfg->pool_strategy, &so.pool_strategy);
	}
	s = session_open(&so, &err);
	if (!s) {
		cli_error("cannot start the kernel: %s", err.buf);
	} else {
		if (sigint_caught)
			session_set_sigmask(s, &wait_mask);
		if (session_pool_note(s))
			cli_error("note: %s", session_pool_note(s));
	}
	for (size_t i = 0; s && i < n_copy_in; i++) {
		char *src, *dst;

		files_parse_spec(copy_in[i], &src, &dst);
		strbuf_reset(&err);
		if (files_copy_in(s, src, dst, &err) < 0) {
			cli_error("%s", err.buf);
			session_close(s);
			s = NULL;
		}
		free(src);
		free(dst);
	}
	strbuf_release(&err);
	free(runtime);
	free(pool);
	return s;
}

int cli_close_session(struct session *s)
{
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	if (!s)
		return 0;
	for (size_t i = 0; i < n_copy_out && session_state(s) != SESSION_DEAD; i++) {
		char *src, *dst;

		files_parse_spec(copy_out[i], &src, &dst);
		strbuf_reset(&err);
		if (files_copy_out(s, src, dst, &err) < 0) {
			cli_error("%s", err.buf);
			rc = -1;
		}
		free(src);
		free(dst);
	}
	session_close(s);
	strbuf_release(&err);
	return rc;
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

void cli_setup_graphics(const struct cellbox_config *cfg, struct printer *pr,
			struct graphics_line *gl)
{
	enum graphics_mode want = GRAPHICS_AUTO;

	graphics_mode_parse(cfg->graphics, &want);
	if (want == GRAPHICS_NONE || (want == GRAPHICS_AUTO && !isatty(1)))
		return;
	graphics_line_init(gl, want, -1, cli_want_color(1));
	pr->plot_hook = graphics_line_plot;
	pr->plot_data = gl;
}

static const struct {
	const char *flag;
	const char *key;
	const char *arg;
	const char *help;
} common_options[] = {
	{ "--backend", "backend", "NAME", "where the kernel runs: local (default), docker, podman" },
	{ "--kernel", "kernel", "NAME", "the kernel's language: python (default), r" },
	{ "--lang", "kernel", "NAME", "the same (llm-sandbox's name)" },
	{ "--python", "python", "PATH", "interpreter of the local backend" },
	{ "--rscript", "rscript", "PATH", "Rscript of the R kernel on the local backend" },
	{ "--timeout", "timeout", "S", "interrupt a cell after S seconds (0 = never)" },
	{ "--memory", "memory", "SIZE", "memory limit of the kernel (512m, 1g; 0 = none)" },
	{ "--startup-timeout", "startup-timeout", "S", "wait at most S seconds for the kernel" },
	{ "--runtime-dir", "runtime-dir", "DIR", "where session channels live" },
	{ "--pool", "pool", NULL, "take a warm kernel from 'cellbox pool serve'" },
	{ "--pool-name", "pool-name", "NAME", "which pool (default: default)" },
	{ "--pool-strategy", "pool-strategy", "S", "none free: wait, fail-fast or temporary" },
	{ "--pool-timeout", "pool-timeout", "S", "wait at most S seconds for a pooled kernel" },
	{ "--image", "image", "IMAGE", "container image of the kernel (docker, podman)" },
	{ "--network", "network", "MODE", "container network: none (default), bridge" },
	{ "--cpus", "cpus", "N", "container CPU limit (default 1)" },
	{ "--pids", "pids", "N", "container process limit (default 256)" },
	{ "--read-only", "read-only", "BOOL", "read-only container root (default true)" },
	{ "--cap-drop", "cap-drop", "LIST", "capabilities to drop (default ALL; none)" },
	{ "--security-opt", "security-opt", "LIST", "default no-new-privileges; none" },
	{ "--user", "user", "UID[:GID]", "container user (default ours, 1000 for root)" },
	{ "--graphics", "graphics", "MODE", "plots: auto, sixel, blocks or none" },
};

int cli_common_option(int argc, char **argv, int *i, struct cellbox_config *cfg)
{
	const char *arg = argv[*i];

	if (!strcmp(arg, "--copy-in") || !strcmp(arg, "--copy-out")) {
		int in = !strcmp(arg, "--copy-in");
		size_t *n = in ? &n_copy_in : &n_copy_out;

		if (*i + 1 >= argc) {
			cli_error("%s needs a value (SRC[:DST])", arg);
			return -1;
		}
		if (*n >= ARRAY_SIZE(copy_in)) {
			cli_error("%s: at most %zu files", arg, ARRAY_SIZE(copy_in));
			return -1;
		}
		(in ? copy_in : copy_out)[(*n)++] = argv[++*i];
		return 1;
	}

	for (size_t k = 0; k < ARRAY_SIZE(common_options); k++) {
		size_t n = strlen(common_options[k].flag);
		const char *value;
		struct strbuf err = STRBUF_INIT;
		int rc;

		if (strncmp(arg, common_options[k].flag, n) || (arg[n] && arg[n] != '='))
			continue;
		if (!common_options[k].arg) {
			value = "yes";	/* a flag without a value */
		} else if (arg[n] == '=') {
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
		snprintf(left, sizeof(left), "%s %s", common_options[k].flag,
			 common_options[k].arg ? common_options[k].arg : "");
		fprintf(f, "  %-26s %s\n", left, common_options[k].help);
	}
	fprintf(f, "  %-26s %s\n", "--copy-in SRC[:DST]", "copy a host file into the sandbox at start");
	fprintf(f, "  %-26s %s\n", "--copy-out SRC[:DST]", "copy a sandbox file out at the end");
	fprintf(f, "  %-26s %s\n", "-h, --help", "show help");
}

void cli_kernel_from_file(struct cellbox_config *cfg, const char *path, const cJSON *nb)
{
	const struct kernel_def *k = nb ? kernel_for_notebook(nb) : NULL;

	if (cfg->kernel)
		return;
	if (!k)
		k = kernel_for_path(path);
	if (k)
		cfg->kernel = xstrdup(k->name);
}

void cli_session_opts(const struct cellbox_config *cfg, struct session_opts *o)
{
	const struct kernel_def *k = cfg->kernel ? kernel_find(cfg->kernel) : kernel_default();

	memset(o, 0, sizeof(*o));
	o->backend = cfg->backend;
	o->kernel = cfg->kernel;
	o->python = k && !strcmp(k->name, "r") ? cfg->rscript : cfg->python;
	o->runtime_dir = cfg->runtime_dir;
	o->startup_timeout = cfg->startup_timeout;
	o->interrupt_grace = cfg->interrupt_grace;
	o->memory = cfg->memory;
	o->sandbox.image = cfg->image;
	o->sandbox.network = cfg->network;
	o->sandbox.cpus = cfg->cpus;
	o->sandbox.pids = cfg->pids;
	o->sandbox.writable_root = !cfg->read_only;
	o->sandbox.cap_drop = cfg->cap_drop && !strcmp(cfg->cap_drop, "none") ? "" : cfg->cap_drop;
	o->sandbox.security_opt = cfg->security_opt && !strcmp(cfg->security_opt, "none") ? "" :
				  cfg->security_opt;
	o->sandbox.user = cfg->user;
	o->sandbox.host = cfg->docker_host;
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
		"A terminal front end for persistent, sandboxed IPython and R sessions.\n"
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

static int cmd_gc(int argc, char **argv, struct cellbox_config *cfg)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	const char *engine;
	int n;

	for (int i = 1; i < argc; i++) {
		int rc = cli_common_option(argc, argv, &i, cfg);
		if (rc < 0)
			return EXIT_USAGE;
		if (rc == 0) {
			cli_error("gc: unknown argument '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	engine = strcmp(cfg->backend, "podman") ? "docker" : "podman";
	n = backend_docker_gc(engine, cfg->docker_host, &out, &err);
	if (n < 0) {
		cli_error("gc: %s", err.buf);
		strbuf_release(&err);
		return EXIT_NO_KERNEL;
	}
	if (out.len)
		fputs(out.buf, stdout);
	printf("%d container%s removed\n", n, n == 1 ? "" : "s");
	strbuf_release(&out);
	strbuf_release(&err);
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
