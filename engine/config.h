#ifndef CELLBOX_CONFIG_H
#define CELLBOX_CONFIG_H

/*
 * Settings, from the lowest precedence to the highest: built-in defaults, the config file
 * ($CELLBOX_CONFIG, else $XDG_CONFIG_HOME/cellbox/config, else ~/.config/cellbox/config),
 * CELLBOX_* environment variables, then command-line flags (the front end calls config_set).
 *
 * The file is `key = value` lines; `#` starts a comment; `-` and `_` in keys are the same.
 */

#include "util.h"

struct cellbox_config {
	char *backend;			/* backend = local */
	char *kernel;			/* kernel = python | r; NULL: the cell file's, else python */
	char *python;			/* python = /usr/bin/python3 */
	char *rscript;			/* rscript = /usr/bin/Rscript (the R kernel) */
	double timeout;			/* timeout = 0 (seconds per cell, 0 = none) */
	double startup_timeout;		/* startup-timeout = 30 */
	double interrupt_grace;		/* interrupt-grace = 2 */
	unsigned long long memory;	/* memory = 0 (none), e.g. 1g */
	char *runtime_dir;		/* runtime-dir = $XDG_RUNTIME_DIR/cellbox */
	int pool;			/* pool = no: take kernels from `cellbox pool serve` */
	char *pool_name;		/* pool-name = default */
	char *pool_strategy;		/* pool-strategy = wait | fail-fast | temporary */
	double pool_timeout;		/* pool-timeout = 30 (seconds a wait may last) */
	/* Container backends (docker, podman); NULL / 0 = the hardened default. */
	char *image;			/* image = cellbox-python:p<protocol> */
	char *network;			/* network = none */
	double cpus;			/* cpus = 1 */
	unsigned long long pids;	/* pids = 256 */
	int read_only;			/* read-only = true (1), false (0) */
	char *cap_drop;			/* cap-drop = ALL ("none" drops nothing) */
	char *security_opt;		/* security-opt = no-new-privileges ("none") */
	char *user;			/* user = uid[:gid] */
	char *docker_host;		/* docker-host = $DOCKER_HOST */
	char *graphics;			/* graphics = auto | sixel | blocks | none */
	unsigned long long history_size;	/* history-size = 1000 (cells kept; 0 = off) */
	double history_days;			/* history-days = 0 (no age limit) */
	char *theme;			/* theme = dark (the full-screen UI's colours) */
	char *source;			/* the config file that was read, or NULL */
};

/* Fill in defaults, then read the file and the environment. Returns 0 or -1 with `err`. */
int config_load(struct cellbox_config *cfg, struct strbuf *err);
/* Set defaults only (tests, embedders). */
void config_defaults(struct cellbox_config *cfg);
/* Set one key from text; -1 with `err` naming the key for a bad key or value. */
int config_set(struct cellbox_config *cfg, const char *key, const char *value,
	       struct strbuf *err);
/* Parse config file text; `name` is used in error messages ("FILE:LINE: ..."). */
int config_parse(struct cellbox_config *cfg, const char *text, const char *name,
		 struct strbuf *err);
void config_release(struct cellbox_config *cfg);
/* Print every key with its value, its environment variable and what it does. */
void config_describe(const struct cellbox_config *cfg, struct strbuf *out);

#endif
