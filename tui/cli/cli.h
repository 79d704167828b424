#ifndef CELLBOX_CLI_H
#define CELLBOX_CLI_H

/*
 * What the front-end commands share: the shape of a command and its argument spec, the
 * parser (cli_parse.c) and --help (cli_help.c) made from those and from the settings table
 * (config.h), signals (cli_signal.c), sessions opened with the settings (cli_session.c), and
 * outside text printed sanitised (cli_text.c), and the rest (cli.c).
 *
 * A command is a table entry in the style of tmux's cmd_entry: its own options and how many
 * positional arguments it takes (`spec`), which settings flags apply to it (CONFIG_FOR_*),
 * and its handler. main() finds the command (a unique prefix of its name will do), parses
 * argv with cli_parse() into a struct cli_args and the configuration, and calls the handler,
 * which reads what it was given with cli_has() and cli_value() and never walks argv.
 */

#include <signal.h>
#include <stdio.h>
#include "config.h"
#include "cellcmd.h"
#include "msg.h"
#include "table.h"
#include "reason.h"
#include "session.h"

struct named_idle;

/*
 * Exit codes: those of a request's outcome come from the reason table (reason.h: EXIT_OK ...
 * EXIT_INTERRUPTED, reason_exit_code()); this one is replay's own.
 */
enum {
	EXIT_CHECK_FAILED = 6,	/* replay --check: outputs differ from the stored ones */
};

/* How a command's own option takes its value (checked by the parser). */
enum cli_value {
	CLI_SWITCH,		/* no value */
	CLI_TEXT,		/* any text */
	CLI_SECONDS,		/* a non-negative number of seconds */
	CLI_SIZE,		/* a size above 0: 512m, 1g */
	CLI_COUNT,		/* a whole number from 0 to 1000 */
	CLI_CHOICE,		/* one of `choices` */
	CLI_PAIR,		/* two words (-p NAME VALUE); `many` only: cli_pair_at() */
};

/* One option of a command's own (the settings flags come from config.h's table). */
struct cli_option {
	const char *name;	/* the long name, without "--" */
	char short_name;	/* -X as well, or 0 */
	enum cli_value value;
	const char *arg;	/* the value's name in help ("DIR") */
	const char *help;
	const char *choices;	/* CLI_CHOICE: the values, '|' between ("size|pixels") */
	int many;		/* may be given more than once: every value kept (cli_value_at) */
};

#define CLI_MAX_OPTIONS 24
#define CLI_MAX_MANY 64		/* values kept of the options that may be repeated */

/* What a command takes. */
struct cli_spec {
	const struct cli_option *options;	/* its own, ended by an entry without a name */
	unsigned settings;			/* CONFIG_FOR_*: the settings flags it takes */
	int min_args, max_args;			/* positional arguments; max -1 = any number */
};

/* What cli_parse() found for a command's own options and arguments. */
struct cli_args {
	const struct cli_spec *spec;
	const char *values[CLI_MAX_OPTIONS];	/* per option: its value ("" for a switch) or NULL */
	struct {
		int option;			/* the index of a `many` option */
		const char *value;
		const char *second;		/* CLI_PAIR: the second word */
	} many[CLI_MAX_MANY];			/* their values, in the order given */
	size_t nmany;
	int argc;				/* the positional arguments, in order */
	char **argv;
};

struct cli_command {
	const char *name;
	int (*run)(const struct cli_args *args, struct cellbox_config *cfg);
	struct cli_spec spec;
	const char *usage;	/* "run [OPTIONS] FILE | -c CODE" */
	const char *summary;	/* one line */
	const char *help;	/* notes after the options, or NULL */
	int exit_codes;		/* its help lists the exit codes of the reason table */
	/* serve, status, stop of `pool`: ended by an entry without a name; NULL = none */
	const struct cli_command *subcommands;
};

/* The commands in their own files (main.c lists them all). */
extern const struct cli_command cmd_run_entry, cmd_repl_entry, cmd_replay_entry,
	cmd_history_entry, cmd_pool_entry, cmd_check_entry, cmd_mcp_entry, cmd_tui_entry,
	cmd_kernel_entry, cmd_ls_entry, cmd_attach_entry, cmd_kill_entry, cmd_fork_entry, cmd_checkpoint_entry,
	cmd_restore_entry;
/* Find the command argv names, parse its arguments and the settings, run it: main(). */
int cli_main(int argc, char **argv);

extern const char *cli_progname;
/* Set by the SIGINT handler; the command decides what an interrupt means. */
extern volatile sig_atomic_t cli_sigint;
/* The SIGTERM or SIGHUP that arrived (0: none): the command closes its session and exits
   with 128 + it (cli_exit_terminated). */
extern volatile sig_atomic_t cli_sigterm;
#define cli_exit_terminated() (128 + cli_sigterm)

/*
 * Parse the arguments of command `path` ("run", "pool serve") by `spec`: its own options
 * into `args`, the settings flags it takes into `cfg` (config_set), the rest as positional
 * arguments. Long options may be shortened to a unique prefix, `--name=value` and `-cVALUE`
 * work, "--" ends the options. Returns 0, or -1 after printing what is wrong.
 */
int cli_parse(const struct cli_spec *spec, const char *path, int argc, char **argv,
	      struct cellbox_config *cfg, struct cli_args *args);
/* Whether own option `name` was given. */
int cli_has(const struct cli_args *args, const char *name);
/* The value of own option `name` (the last one given), or NULL. */
const char *cli_value(const struct cli_args *args, const char *name);
/* The `k`th value (from 0) of own option `name`, given more than once (`many`); NULL past it. */
const char *cli_value_at(const struct cli_args *args, const char *name, size_t k);
/* The `k`th pair of CLI_PAIR option `name`: its first word, the second in *second; NULL past it. */
const char *cli_pair_at(const struct cli_args *args, const char *name, size_t k,
			const char **second);
/* Typed values of options the parser checked; `dflt` when not given. */
double cli_seconds(const struct cli_args *args, const char *name, double dflt);
unsigned long long cli_size(const struct cli_args *args, const char *name,
			    unsigned long long dflt);
int cli_count(const struct cli_args *args, const char *name, int dflt);

/* Print the help of command `path`: usage, its options, the settings it takes, notes. */
void cli_help(const struct cli_command *cmd, const char *path, FILE *f);
/* Print the settings flags of `scope` (CONFIG_FOR_*) with their help. */
void cli_help_settings(unsigned scope, FILE *f);

/*
 * When no kernel was asked for (flag, CELLBOX_KERNEL, config), take the one cell file `path`
 * asks for: a notebook's kernelspec or language_info (`nb`, may be NULL), else the file's
 * extension (".R"). Nothing when neither says.
 */
void cli_kernel_from_file(struct cellbox_config *cfg, const char *path, const cJSON *nb);
/*
 * Catch SIGINT into cli_sigint (SIGTERM, SIGHUP into cli_sigterm) and keep them blocked except
 * while the command waits (see cli_wait_mask), so that none can arrive between checking the
 * flag and sleeping.
 */
void cli_catch_sigint(void);
/* The signal mask to sleep with: the one we started with, SIGINT let in. */
const sigset_t *cli_wait_mask(void);
/* The mask a session's waits sleep with: cli_wait_mask() once cli_catch_sigint() ran, else NULL. */
const sigset_t *cli_session_mask(void);
/*
 * Open a session with the settings (setup_open: policy, libraries, pool, --copy-in); NULL
 * after printing why. A note about the pool is printed too.
 */
struct session *cli_open_session(const struct cellbox_config *cfg);
/*
 * Named sessions (cli_named.c; named.h): the session `name` started (its host owning it from
 * then on; `idle`: when it ends by itself, NULL never), or the session `attach` joined
 * (`read_only`: to watch); cli_open_session() when neither is given. NULL after printing why.
 */
struct session *cli_open_named(const struct cellbox_config *cfg, const char *name,
			       const char *attach, const struct named_idle *idle, int read_only);
/* --ttl and --ttl-checkpoint into `idle` (the file's path made absolute). 0, or -1 after saying why. */
int cli_named_idle(const struct cli_args *args, struct named_idle *idle);
/* The options that go with it, in a command's table: CLI_NAMED_OPTIONS, */
#define CLI_NAMED_OPTIONS							\
	{ .name = "name", .value = CLI_TEXT, .arg = "NAME",			\
	  .help = "start a named session: it runs on when this front end leaves "	\
		  "(cellbox ls, attach, kill)" },				\
	{ .name = "attach", .value = CLI_TEXT, .arg = "NAME",			\
	  .help = "join the named session NAME instead of starting one" },	\
	{ .name = "ttl", .value = CLI_SECONDS, .arg = "SECONDS",		\
	  .help = "with --name: end the session after this long idle with nobody attached" }, \
	CLI_TTL_CHECKPOINT_OPTION
#define CLI_TTL_CHECKPOINT_OPTION						\
	{ .name = "ttl-checkpoint", .value = CLI_TEXT, .arg = "FILE",		\
	  .help = "with --ttl: write the session's checkpoint to FILE before the idle limit "	\
		  "ends it (cellbox restore FILE)" }
/* The REPL on session `s` (cmd_repl.c), which it closes (detaches from) at the end. */
int cmd_repl_session(struct session *s, struct cellbox_config *cfg);
/*
 * --existing FILE (cli_session.c): the session's kernel is the one of connection file FILE,
 * which someone else started (no sandbox: the local backend only). 0 (nothing for NULL), or
 * -1 after saying why not.
 */
int cli_existing(struct cellbox_config *cfg, const char *file);
#define CLI_EXISTING_OPTION							\
	{ .name = "existing", .value = CLI_TEXT, .arg = "FILE",			\
	  .help = "attach to the running Jupyter kernel of connection file FILE, as "	\
		  "jupyter-console does (not a sandbox: only --backend local)" }
/* Leaving a named session: say that it runs on, and how to get back to it. */
void cli_named_left(struct session *s);
/*
 * Print the cells other front ends run in the session (and those before it attached) with
 * `pr`; their execution counts move `*next_count` (may be NULL) on.
 */
struct printer;
void cli_named_watch(struct session *s, struct printer *pr, int *next_count);
/*
 * Close a session from cli_open_session(), first copying out the --copy-out files.
 * Returns -1 when a copy failed (after printing why), else 0. NULL is fine.
 */
int cli_close_session(struct session *s, const struct cellbox_config *cfg);
/*
 * Wait for request `id`, turning Ctrl-C into an interrupt of the kernel. Returns 1 when the
 * user pressed Ctrl-C during the wait (the request has still ended), else 0; CLI_TERMINATED
 * when a SIGTERM or SIGHUP came (the request may still run: close the session and leave).
 */
enum { CLI_TERMINATED = 2 };
int cli_wait(struct session *s, unsigned long id);
/*
 * The security policy of the settings (--policy, policy, CELLBOX_POLICY), loaded once; NULL
 * for none, or with `err` set when it cannot be read.
 */
const struct policy *cli_policy(const struct cellbox_config *cfg, struct strbuf *err);
/* Load the policy of the settings now: -1 after printing why it cannot be. */
int cli_check_policy(const struct cellbox_config *cfg);
/* Check the libraries setting (names as requirements): -1 after printing why. */
int cli_check_libraries(const struct cellbox_config *cfg);
/*
 * Check what the settings of a command (those `spec` takes) need beyond their type: that the
 * policy loads, that the libraries are requirements and none is a module the policy blocks.
 * -1 after printing why (a bad argument: nothing was started).
 */
int cli_check_settings(const struct cli_spec *spec, const struct cellbox_config *cfg);
/* Read a cell file (or "-" for stdin) as UTF-8 text; -1 after printing why. */
int cli_read_code(const char *path, struct strbuf *code);
/* Whether output to `fd` should carry colours (a terminal, and NO_COLOR unset). */
int cli_want_color(int fd);
/*
 * Text cellbox did not write (code from a file or the history, names, the kernel's words) on
 * its way to the terminal, always through the sanitiser (sanitize.h, SAN_NO_CR):
 *
 *   | function       | what it prints                                               |
 *   |----------------|--------------------------------------------------------------|
 *   | cli_put_text   | `text` as it is, sanitised                                   |
 *   | cli_printf     | a formatted line, the whole of it sanitised (ours has no ESC) |
 *   | cli_first_line | (returns) the sanitised first line of `text`, cut at `max`   |
 *   |                | bytes on a character boundary; *more when something was left |
 *   | cli_put_json   | cJSON_Print's text with C1 controls and bytes that are not   |
 *   |                | UTF-8 written as \u escapes (cJSON escapes only C0)          |
 */
void cli_put_text(FILE *f, const char *text);
void cli_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *cli_first_line(const char *text, size_t max, struct strbuf *out, int *more);
void cli_put_json(const cJSON *o);
struct printer;
struct lineplot;
/*
 * Let `pr` draw plots inline on stdout by the graphics setting: auto asks the terminal
 * (only when stdout is one), the other modes are used as told, none keeps text lines. When
 * `pr` prints colours and the terminal's background is light (its answer to OSC 11, else
 * COLORFGBG), the kernel of `s` gets IPython's LightBG colour scheme.
 */
void cli_setup_graphics(const struct cellbox_config *cfg, struct session *s,
			struct printer *pr, struct lineplot *gl);

#endif
