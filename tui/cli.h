#ifndef CELLBOX_CLI_H
#define CELLBOX_CLI_H

/* What the front-end commands share: the command table, common options, signals. */

#include <signal.h>
#include <stdio.h>
#include "config.h"
#include "pool.h"
#include "session.h"

/* Exit codes of every command (documented in --help and the README). */
enum {
	EXIT_OK = 0,
	EXIT_CELL_ERROR = 1,	/* the code raised an exception */
	EXIT_USAGE = 2,		/* bad arguments or input: nothing was run */
	EXIT_TIMEOUT = 3,	/* a cell ran past --timeout */
	EXIT_KERNEL_DIED = 4,	/* the kernel died during the run */
	EXIT_NO_KERNEL = 5,	/* the kernel could not be started */
	EXIT_CHECK_FAILED = 6,	/* replay --check: outputs differ from the stored ones */
	EXIT_INTERRUPTED = 130,	/* the user pressed Ctrl-C */
};

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv, struct cellbox_config *cfg);
	const char *usage;
	const char *summary;
	const char *help;	/* the command's options */
};

extern const char *cli_progname;
/* Set by the SIGINT handler; the command decides what an interrupt means. */
extern volatile sig_atomic_t cli_sigint;

/*
 * Try to take argv[*i] (and its value) as an option every command accepts: --backend,
 * --python, --timeout, --memory, --startup-timeout, --runtime-dir, the container settings
 * --graphics and --copy-in / --copy-out (repeatable; done by cli_open_session / cli_close_session).
 * Returns 1 when taken,
 * 0 when it is not a common option, -1 after printing an error.
 */
int cli_common_option(int argc, char **argv, int *i, struct cellbox_config *cfg);
/* Print the common options' help. */
void cli_common_help(FILE *f);
/* Session options from the configuration. */
/*
 * When no kernel was asked for (flag, CELLBOX_KERNEL, config), take the one cell file `path`
 * asks for: a notebook's kernelspec or language_info (`nb`, may be NULL), else the file's
 * extension (".R"). Nothing when neither says.
 */
void cli_kernel_from_file(struct cellbox_config *cfg, const char *path, const cJSON *nb);
void cli_session_opts(const struct cellbox_config *cfg, struct session_opts *o);
/*
 * Catch SIGINT into cli_sigint and keep it blocked except while the command waits (see
 * cli_wait_mask), so that a Ctrl-C can never arrive between checking the flag and sleeping.
 */
void cli_catch_sigint(void);
/* The signal mask to sleep with: the one we started with, SIGINT let in. */
const sigset_t *cli_wait_mask(void);
/*
 * Open a session with the front end's settings (backend, sandbox, pool, --copy-in); NULL
 * after printing why. `on_state` (may be NULL) hears of kernel state changes.
 */
struct session *cli_open_session(const struct cellbox_config *cfg);
struct session *cli_open_session_cb(const struct cellbox_config *cfg, session_state_fn on_state,
				    void *data);
/*
 * Close a session from cli_open_session(), first copying out the --copy-out files.
 * Returns -1 when a copy failed (after printing why), else 0. NULL is fine.
 */
int cli_close_session(struct session *s);
/*
 * Wait for request `id`, turning Ctrl-C into an interrupt of the kernel. Returns 1 when the
 * user pressed Ctrl-C during the wait (the request has still ended), else 0.
 */
int cli_wait(struct session *s, unsigned long id);
/* Print "cellbox: " + message to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Read a cell file (or "-" for stdin) as UTF-8 text; -1 after printing why. */
int cli_read_code(const char *path, struct strbuf *code);
/* Whether output to `fd` should carry colours (a terminal, and NO_COLOR unset). */
int cli_want_color(int fd);
struct printer;
struct graphics_line;
/*
 * Let `pr` draw plots inline on stdout by the graphics setting: auto asks the terminal
 * (only when stdout is one), sixel or blocks are used as told, none keeps text lines.
 */
void cli_setup_graphics(const struct cellbox_config *cfg, struct printer *pr,
			struct graphics_line *gl);

int cmd_run(int argc, char **argv, struct cellbox_config *cfg);
int cmd_repl(int argc, char **argv, struct cellbox_config *cfg);
int cmd_pool(int argc, char **argv, struct cellbox_config *cfg);
int cmd_replay(int argc, char **argv, struct cellbox_config *cfg);
int cmd_history(int argc, char **argv, struct cellbox_config *cfg);
int cmd_tui(int argc, char **argv, struct cellbox_config *cfg);

#endif
