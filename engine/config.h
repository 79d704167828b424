#ifndef CELLBOX_CONFIG_H
#define CELLBOX_CONFIG_H

/*
 * Settings, from the lowest precedence to the highest: built-in defaults, the config file
 * ($CELLBOX_CONFIG, else $XDG_CONFIG_HOME/cellbox/config, else ~/.config/cellbox/config),
 * CELLBOX_* environment variables (then llm-sandbox's names for the same things), then
 * command-line flags (the front end calls config_set).
 *
 * The file is `key = value` lines; `#` starts a comment; `-` and `_` in keys are the same.
 *
 * One table (config.c) is the single source of every setting: each row names the key, its
 * type and field, its environment variables, its default, its help line and which commands
 * take it as a flag (--KEY). The defaults, the environment, the flag parser, --help and
 * `cellbox config` are all made from it: a new setting is one row plus its use. What opens
 * a session lives in `session` (session.h), read by the engine as it is.
 */

#include "session.h"
#include "util.h"

struct cellbox_config {
	/*
	 * How sessions start their kernel: backend, kernel, python, rscript, runtime-dir, startup-timeout,
	 * interrupt-grace, memory, pool-strategy, pool-timeout, and sandbox (image, network,
	 * cpus, pids, read-only, cap-drop, security-opt, user, docker-host). Strings are owned.
	 */
	struct session_opts session;
	double timeout;			/* timeout = 0 (seconds per cell, 0 = none) */
	int pool;			/* pool = no: take kernels from `cellbox pool serve` */
	char *pool_name;		/* pool-name = default */
	char *graphics;			/* graphics = auto | kitty | kitty-unicode | iterm | sixel |
					   blocks | none */
	char *blocks;			/* blocks = auto | sextant | quadrant | half */
	unsigned long long history_size;	/* history-size = 1000 (cells kept; 0 = off) */
	double history_days;			/* history-days = 0 (no age limit) */
	unsigned long long history_plots_size;	/* history-plots-size = 256m (bytes of the
						   store's plots; 0 = no cap) */
	char *theme;			/* theme = auto (the full-screen UI's colours) */
	int run_after_error;		/* run-after-error = no (notebook: run what is queued) */
	int editing_mode;		/* editing-mode = emacs | vi (enum config_editing) */
	int osc52;			/* osc52 = auto | on | off (enum config_osc52) */
	struct strlist copy_in;		/* --copy-in SRC[:DST], in order */
	struct strlist copy_out;	/* --copy-out SRC[:DST] */
	char *policy;			/* policy = none | NAME | FILE.policy (security policy) */
	char *libraries;		/* libraries = numpy,pandas (installed before the first cell) */
	char *wheelhouse;		/* wheelhouse = DIR of wheels: libraries install offline */
	int libraries_shared;		/* libraries-shared: derived images shared between users */
	char *source;			/* the config file that was read, or NULL */
	struct {			/* `cellbox mcp` */
		unsigned long long max_message;	/* mcp-max-message = 64m, either way */
		unsigned long long output_max;	/* mcp-output-max = 1m of stdout (stderr) kept */
		unsigned long long file_max;	/* mcp-file-max = 16m: a file, a plot */
		unsigned long long max_sessions;	/* mcp-max-sessions = 8 */
		char *backends;			/* mcp-backends: others a client may ask for */
	} mcp;
};

/* The full-screen UI's editor: its keys (editing-mode), copies to the terminal (osc52). */
enum config_editing { CONFIG_EDITING_EMACS, CONFIG_EDITING_VI };
enum config_osc52 { CONFIG_OSC52_AUTO, CONFIG_OSC52_ON, CONFIG_OSC52_OFF };

/*
 * Which commands take a setting as a flag (config_key.scope); a command says which of these
 * it takes. A setting without any is set by the file and the environment only.
 */
enum {
	CONFIG_FOR_KERNEL = 1 << 0,	/* starting a kernel: tui, repl, run, replay, pool serve */
	CONFIG_FOR_CELLS = 1 << 1,	/* running cells of one's own: tui, repl, run, replay */
	CONFIG_FOR_POOL = 1 << 2,	/* naming a pool: the above and pool status, pool stop */
	CONFIG_FOR_ENGINE = 1 << 3,	/* talking to a container engine: gc */
	CONFIG_FOR_PLOTS = 1 << 4,	/* drawing plots on the terminal: tui, repl, run */
	CONFIG_FOR_TUI = 1 << 5,	/* the full-screen UI */
	CONFIG_FOR_CHECK = 1 << 6,	/* reading code against the security policy: check */
	CONFIG_FOR_MCP = 1 << 7,	/* the MCP server */
	CONFIG_FOR_ALL = (1 << 8) - 1,
};

enum config_type {
	CFG_STRING,
	CFG_CHOICE,	/* a string, one of `choices` */
	CFG_ENUM,	/* an int (an enum): the index of the value in `choices` */
	CFG_SECONDS,	/* a double, seconds */
	CFG_NUMBER,	/* a double */
	CFG_SIZE,	/* an unsigned long long: "512m", "1g" */
	CFG_BOOL,	/* an int: true/yes/on/1 or false/no/off/0 */
	CFG_NOT_BOOL,	/* an int holding the opposite of the value (read-only -> writable_root) */
	CFG_LIST,	/* a struct strlist: every value is appended */
	CFG_KERNEL,	/* a string: a kernel's name (kernel.h; its aliases are taken, the name kept) */
};

/* One row of the table. */
struct config_key {
	const char *name;	/* in the file and `cellbox config`; the flag is --NAME */
	enum config_type type;
	size_t offset;		/* of the field in struct cellbox_config */
	unsigned scope;		/* CONFIG_FOR_*: the commands that take --NAME; 0 = no flag */
	const char *arg;	/* the flag's value in help ("NAME"); NULL: a switch (sets "yes") */
	const char *flag_alias;	/* another name of the key and its flag (llm-sandbox's); NULL */
	const char *env;	/* CELLBOX_...; NULL = none */
	const char *alias;	/* llm-sandbox's variable for the same thing, lower precedence */
	const char *dflt;	/* the default, as the file would say it; NULL = unset (0) */
	const char *choices;	/* CFG_CHOICE, CFG_ENUM: the values, '|' between */
	const char *help;	/* one line: what it does */
};

/* The table, in the order --help and `cellbox config` show it. */
const struct config_key *config_keys(size_t *n);
/* The row of `name` ('-' and '_' alike), or NULL. */
const struct config_key *config_find(const char *name);

/* Fill in defaults, then read the file and the environment. Returns 0 or -1 with `err`. */
int config_load(struct cellbox_config *cfg, struct strbuf *err);
/* Set defaults only (tests, embedders). */
void config_defaults(struct cellbox_config *cfg);
/* Set one key from text; -1 with `err` naming the key for a bad key or value. */
int config_set(struct cellbox_config *cfg, const char *key, const char *value,
	       struct strbuf *err);
/*
 * Set the setting of row `k` from text; -1 with `err` about the value alone (the caller says
 * where it came from: a flag, a variable).
 */
int config_set_value(struct cellbox_config *cfg, const struct config_key *k, const char *value,
		     struct strbuf *err);
/* Parse config file text; `name` is used in error messages ("FILE:LINE: ..."). */
int config_parse(struct cellbox_config *cfg, const char *text, const char *name,
		 struct strbuf *err);
void config_release(struct cellbox_config *cfg);
/* Print every key with its value, its environment variable and what it does. */
void config_describe(const struct cellbox_config *cfg, struct strbuf *out);

#endif
