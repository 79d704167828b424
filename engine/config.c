#include "config.h"
#include "kernel.h"
#include "protocol.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Offsets of the fields the rows set. */
#define FIELD(f) offsetof(struct cellbox_config, f)
#define SESSION(f) offsetof(struct cellbox_config, session.f)
#define SANDBOX(f) offsetof(struct cellbox_config, session.sandbox.f)

static const struct config_key keys[] = {
	{ .name = "backend", .type = CFG_STRING, .offset = SESSION(backend),
	  .scope = CONFIG_FOR_KERNEL | CONFIG_FOR_ENGINE, .arg = "NAME", .env = "CELLBOX_BACKEND",
	  .alias = "BACKEND", .dflt = BACKEND_DEFAULT,
	  .help = "where the kernel runs: local (no sandbox: your own user on this machine), "
		  "docker or podman (a hardened container)" },
	{ .name = "kernel", .type = CFG_KERNEL, .offset = SESSION(kernel),
	  .scope = CONFIG_FOR_KERNEL, .arg = "NAME", .flag_alias = "lang", .env = "CELLBOX_KERNEL",
	  .help = "the kernel: python, r, or jupyter:NAME, any installed Jupyter kernel "
		  "(default: the cell file's, else python)" },
	{ .name = "python", .type = CFG_STRING, .offset = SESSION(python),
	  .scope = CONFIG_FOR_KERNEL, .arg = "PATH", .env = "CELLBOX_PYTHON",
	  .dflt = CELLBOX_DEFAULT_PYTHON, .help = "interpreter of the local backend (needs IPython)" },
	{ .name = "rscript", .type = CFG_STRING, .offset = SESSION(rscript),
	  .scope = CONFIG_FOR_KERNEL, .arg = "PATH", .env = "CELLBOX_RSCRIPT",
	  .dflt = CELLBOX_DEFAULT_RSCRIPT,
	  .help = "Rscript of the R kernel on the local backend (needs jsonlite)" },
	{ .name = "timeout", .type = CFG_SECONDS, .offset = FIELD(timeout),
	  .scope = CONFIG_FOR_CELLS, .arg = "S", .env = "CELLBOX_TIMEOUT", .dflt = "0",
	  .help = "seconds a cell may run before it is interrupted (0 = no limit)" },
	{ .name = "startup-timeout", .type = CFG_SECONDS, .offset = SESSION(startup_timeout),
	  .scope = CONFIG_FOR_KERNEL, .arg = "S", .env = "CELLBOX_STARTUP_TIMEOUT", .dflt = "30",
	  .help = "seconds to wait for a kernel to become ready" },
	{ .name = "interrupt-grace", .type = CFG_SECONDS, .offset = SESSION(interrupt_grace),
	  .env = "CELLBOX_INTERRUPT_GRACE", .dflt = "2",
	  .help = "seconds a cell may ignore an interrupt before the kernel is restarted" },
	{ .name = "memory", .type = CFG_SIZE, .offset = SESSION(memory),
	  .scope = CONFIG_FOR_KERNEL, .arg = "SIZE", .env = "CELLBOX_MEMORY", .dflt = "0",
	  .help = "memory limit of the kernel, e.g. 512m or 1g (0 = none; containers: 1g)" },
	{ .name = "runtime-dir", .type = CFG_STRING, .offset = SESSION(runtime_dir),
	  .scope = CONFIG_FOR_KERNEL | CONFIG_FOR_POOL | CONFIG_FOR_ENGINE, .arg = "DIR",
	  .env = "CELLBOX_RUNTIME_DIR",
	  .help = "where session channels live ($XDG_RUNTIME_DIR/cellbox, else the tmpfs "
		  "/dev/shm/cellbox-UID, else /tmp/cellbox-UID)" },
	{ .name = "pool", .type = CFG_BOOL, .offset = FIELD(pool),
	  .scope = CONFIG_FOR_CELLS, .env = "CELLBOX_POOL", .dflt = "no",
	  .help = "take a warm kernel from the pool daemon ('cellbox pool serve')" },
	{ .name = "pool-name", .type = CFG_STRING, .offset = FIELD(pool_name),
	  .scope = CONFIG_FOR_CELLS | CONFIG_FOR_POOL, .arg = "NAME", .env = "CELLBOX_POOL_NAME",
	  .dflt = "default", .help = "which pool, for its clients and its daemon alike" },
	{ .name = "pool-strategy", .type = CFG_ENUM, .offset = SESSION(pool_strategy),
	  .scope = CONFIG_FOR_CELLS, .arg = "HOW", .env = "CELLBOX_POOL_STRATEGY", .dflt = "wait",
	  .choices = "wait|fail-fast|temporary",	/* enum pool_strategy, in order */
	  .help = "when the pool is exhausted: wait, fail-fast or temporary" },
	{ .name = "pool-timeout", .type = CFG_SECONDS, .offset = SESSION(pool_timeout),
	  .scope = CONFIG_FOR_CELLS, .arg = "S", .env = "CELLBOX_POOL_TIMEOUT", .dflt = "30",
	  .help = "seconds to wait for a free pooled kernel" },
	{ .name = "image", .type = CFG_STRING, .offset = SANDBOX(image),
	  .scope = CONFIG_FOR_KERNEL, .arg = "IMAGE", .env = "CELLBOX_IMAGE",
	  .help = "container image of the kernel (default " CELLBOX_KERNEL_IMAGE ", for R "
		  CELLBOX_KERNEL_IMAGE_R ")" },
	{ .name = "network", .type = CFG_STRING, .offset = SANDBOX(network),
	  .scope = CONFIG_FOR_KERNEL, .arg = "MODE", .env = "CELLBOX_NETWORK",
	  .alias = "SANDBOX_NETWORK_MODE",
	  .help = "container network: none (default), bridge, host, or allow:HOST[:PORT],... (a "
		  "proxy lets the sandbox reach those hosts and no other; docs/egress.md)" },
	{ .name = "egress-hosts", .type = CFG_STRING, .offset = SANDBOX(egress_hosts),
	  .scope = CONFIG_FOR_KERNEL, .arg = "FILE", .env = "CELLBOX_EGRESS_HOSTS",
	  .help = "a hosts file (ADDRESS NAME...) the egress proxy resolves listed names by before "
		  "the host's resolver" },
	{ .name = "cpus", .type = CFG_NUMBER, .offset = SANDBOX(cpus),
	  .scope = CONFIG_FOR_KERNEL, .arg = "N", .env = "CELLBOX_CPUS", .alias = "SANDBOX_CPU_COUNT",
	  .help = "CPU limit of the container in CPUs (0 = 1)" },
	{ .name = "pids", .type = CFG_SIZE, .offset = SANDBOX(pids),
	  .scope = CONFIG_FOR_KERNEL, .arg = "N", .env = "CELLBOX_PIDS",
	  .help = "processes the container may have (0 = 256)" },
	{ .name = "home-size", .type = CFG_SIZE, .offset = SANDBOX(home_size),
	  .scope = CONFIG_FOR_KERNEL, .arg = "SIZE", .env = "CELLBOX_HOME_SIZE",
	  .help = "size of the container's working directory, a tmpfs at /home/cellbox (0 = 512m)" },
	{ .name = "read-only", .type = CFG_NOT_BOOL, .offset = SANDBOX(writable_root),
	  .scope = CONFIG_FOR_KERNEL, .arg = "BOOL", .env = "CELLBOX_READ_ONLY",
	  .alias = "SANDBOX_READ_ONLY", .dflt = "true",
	  .help = "read-only container root file system (true/false)" },
	{ .name = "cap-drop", .type = CFG_STRING, .offset = SANDBOX(cap_drop),
	  .scope = CONFIG_FOR_KERNEL, .arg = "LIST", .env = "CELLBOX_CAP_DROP",
	  .alias = "SANDBOX_CAP_DROP", .help = "capabilities to drop, comma-separated (ALL; none)" },
	{ .name = "security-opt", .type = CFG_STRING, .offset = SANDBOX(security_opt),
	  .scope = CONFIG_FOR_KERNEL, .arg = "LIST", .env = "CELLBOX_SECURITY_OPT",
	  .alias = "SANDBOX_SECURITY_OPT",
	  .help = "container security options (no-new-privileges; none)" },
	{ .name = "user", .type = CFG_STRING, .offset = SANDBOX(user),
	  .scope = CONFIG_FOR_KERNEL, .arg = "UID[:GID]", .env = "CELLBOX_USER",
	  .help = "container user uid[:gid] (default: ours, 1879048192 for root)" },
	{ .name = "runtime", .type = CFG_STRING, .offset = SANDBOX(runtime),
	  .scope = CONFIG_FOR_KERNEL, .arg = "NAME", .env = "CELLBOX_RUNTIME",
	  .alias = "SANDBOX_RUNTIME",
	  .help = "OCI runtime of the container: the engine's default (runc), or runsc for gVisor" },
	{ .name = "channel-quota", .type = CFG_SIZE, .offset = SESSION(channel_quota),
	  .scope = CONFIG_FOR_KERNEL, .arg = "SIZE", .env = "CELLBOX_CHANNEL_QUOTA", .dflt = "1g",
	  .help = "bytes a session's kernels may put on the host through the channel (their "
		  "files there, each copy of their plots and files, across restarts); past it the "
		  "kernel is stopped" },
	{ .name = "output-limit", .type = CFG_SIZE, .offset = SESSION(output_limit),
	  .scope = CONFIG_FOR_CELLS, .arg = "SIZE", .env = "CELLBOX_OUTPUT_LIMIT", .dflt = "2g",
	  .help = "bytes of output one cell may send; past it the rest is dropped and the cell "
		  "interrupted" },
	{ .name = "channel", .type = CFG_CHOICE, .offset = SANDBOX(channel),
	  .scope = CONFIG_FOR_KERNEL, .arg = "MODE", .env = "CELLBOX_CHANNEL", .dflt = "auto",
	  .choices = "auto|shared|stream",
	  .help = "how a container reaches its channel: shared (a directory of this host mounted "
		  "in it), stream (its files kept in the sandbox and carried over one connection "
		  "of the engine), auto (shared through a unix socket, stream over tcp:// and "
		  "ssh://)" },
	{ .name = "docker-host", .type = CFG_STRING, .offset = SANDBOX(host),
	  .scope = CONFIG_FOR_KERNEL | CONFIG_FOR_ENGINE, .arg = "HOST",
	  .env = "CELLBOX_DOCKER_HOST",
	  .help = "the container engine: unix:///path, tcp://host:port (TLS with "
		  "DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) or ssh://[user@]host[:port] (default: "
		  "$DOCKER_HOST, else the current docker context, else the local socket)" },
	{ .name = "theme", .type = CFG_STRING, .offset = FIELD(theme),
	  .scope = CONFIG_FOR_TUI, .arg = "NAME", .env = "CELLBOX_THEME", .dflt = "auto",
	  .help = "colour theme of the full-screen UI: auto (light or dark by the terminal's "
		  "background), dark, light, high-contrast, monochrome, or a NAME.theme in "
		  "$XDG_CONFIG_HOME/cellbox/themes" },
	{ .name = "run-after-error", .type = CFG_BOOL, .offset = FIELD(run_after_error),
	  .scope = CONFIG_FOR_TUI, .env = "CELLBOX_RUN_AFTER_ERROR", .dflt = "no",
	  .help = "notebook: cells queued behind a cell that fails run anyway (Jupyter drops them)" },
	{ .name = "editing-mode", .type = CFG_ENUM, .offset = FIELD(editing_mode),
	  .scope = CONFIG_FOR_TUI, .arg = "MODE", .env = "CELLBOX_EDITING_MODE", .dflt = "emacs",
	  .choices = "emacs|vi",	/* enum config_editing, in order */
	  .help = "the cell editor's keys: emacs (readline's and IPython's) or vi (normal and "
		  "insert modes, as IPython's editing_mode = vi)" },
	{ .name = "osc52", .type = CFG_ENUM, .offset = FIELD(osc52),
	  .scope = CONFIG_FOR_TUI, .arg = "WHEN", .env = "CELLBOX_OSC52", .dflt = "auto",
	  .choices = "auto|on|off",	/* enum config_osc52, in order */
	  .help = "the editor's copies go to the terminal's clipboard too (OSC 52, up to 1 MiB): "
		  "auto (in tmux, kitty, xterm, WezTerm, iTerm2, foot, ghostty, mintty), on, off" },
	{ .name = "graphics", .type = CFG_CHOICE, .offset = FIELD(graphics),
	  .scope = CONFIG_FOR_PLOTS, .arg = "MODE", .env = "CELLBOX_GRAPHICS", .dflt = "auto",
	  .choices = "auto|kitty|kitty-unicode|iterm|sixel|blocks|none",
	  .help = "how plots are drawn: auto, kitty, kitty-unicode, iterm, sixel, blocks or none" },
	{ .name = "blocks", .type = CFG_CHOICE, .offset = FIELD(blocks),
	  .scope = CONFIG_FOR_PLOTS, .arg = "KIND", .env = "CELLBOX_BLOCKS", .dflt = "auto",
	  .choices = "auto|sextant|quadrant|half",
	  .help = "characters of block plots: auto, sextant, quadrant, half (the upper half block)" },
	{ .name = "history-size", .type = CFG_SIZE, .offset = FIELD(history_size),
	  .env = "CELLBOX_HISTORY_SIZE", .dflt = "1000",
	  .help = "cells kept in the history; older sessions are pruned (0 = record nothing)" },
	{ .name = "history-days", .type = CFG_SECONDS, .offset = FIELD(history_days),
	  .env = "CELLBOX_HISTORY_DAYS", .dflt = "0",
	  .help = "days a recorded session is kept (0 = no age limit)" },
	{ .name = "history-plots-size", .type = CFG_SIZE, .offset = FIELD(history_plots_size),
	  .env = "CELLBOX_HISTORY_PLOTS_SIZE", .dflt = "256m",
	  .help = "bytes of plots the history keeps, all sessions together; past it the oldest "
		  "are dropped, their cells noting it (0 = no cap)" },
	{ .name = "copy-in", .type = CFG_LIST, .offset = FIELD(copy_in),
	  .scope = CONFIG_FOR_CELLS, .arg = "SRC[:DST]",
	  .help = "copy a host file into the sandbox when the session starts (repeatable)" },
	{ .name = "copy-out", .type = CFG_LIST, .offset = FIELD(copy_out),
	  .scope = CONFIG_FOR_CELLS, .arg = "SRC[:DST]",
	  .help = "copy a sandbox file to the host when the session ends (repeatable)" },
	{ .name = "policy", .type = CFG_STRING, .offset = FIELD(policy),
	  .scope = CONFIG_FOR_CELLS | CONFIG_FOR_CHECK, .arg = "NAME|FILE", .env = "CELLBOX_POLICY",
	  .help = "security policy checked before each cell: none, a preset or FILE.policy "
		  "('cellbox check --list' names them)" },
	{ .name = "libraries", .type = CFG_STRING, .offset = FIELD(libraries),
	  .scope = CONFIG_FOR_KERNEL, .arg = "LIST", .env = "CELLBOX_LIBRARIES",
	  .help = "packages pip installs before the first cell (once, cached), e.g. numpy,pandas" },
	{ .name = "wheelhouse", .type = CFG_STRING, .offset = FIELD(wheelhouse),
	  .scope = CONFIG_FOR_KERNEL, .arg = "DIR", .env = "CELLBOX_WHEELHOUSE",
	  .help = "directory of wheels the libraries install from, offline" },
	{ .name = "libraries-shared", .type = CFG_BOOL, .offset = FIELD(libraries_shared),
	  .scope = CONFIG_FOR_KERNEL, .env = "CELLBOX_LIBRARIES_SHARED",
	  .help = "containers: use (and make) library images shared with other users who say so "
		  "(default: each user's own)" },
	{ .name = "mcp-max-message", .type = CFG_SIZE, .offset = FIELD(mcp.max_message),
	  .scope = CONFIG_FOR_MCP, .arg = "SIZE", .env = "CELLBOX_MCP_MAX_MESSAGE", .dflt = "64m",
	  .help = "largest MCP message read or written; a longer one is refused" },
	{ .name = "mcp-output-max", .type = CFG_SIZE, .offset = FIELD(mcp.output_max),
	  .scope = CONFIG_FOR_MCP, .arg = "SIZE", .env = "CELLBOX_MCP_OUTPUT_MAX", .dflt = "1m",
	  .help = "stdout (and stderr) of a cell a tool result keeps; the rest is cut" },
	{ .name = "mcp-file-max", .type = CFG_SIZE, .offset = FIELD(mcp.file_max),
	  .scope = CONFIG_FOR_MCP, .arg = "SIZE", .env = "CELLBOX_MCP_FILE_MAX", .dflt = "16m",
	  .help = "largest file file_put and file_get move, and largest plot sent" },
	{ .name = "mcp-max-sessions", .type = CFG_SIZE, .offset = FIELD(mcp.max_sessions),
	  .scope = CONFIG_FOR_MCP, .arg = "N", .env = "CELLBOX_MCP_MAX_SESSIONS", .dflt = "8",
	  .help = "sandboxes one MCP client may have at once (execute_code's included)" },
	{ .name = "mcp-backends", .type = CFG_STRING, .offset = FIELD(mcp.backends),
	  .scope = CONFIG_FOR_MCP, .arg = "LIST", .env = "CELLBOX_MCP_BACKENDS",
	  .help = "backends an MCP client may ask session_open for besides the configured one "
		  "(comma-separated; default none)" },
};

_Static_assert(sizeof(enum pool_strategy) == sizeof(int), "CFG_ENUM writes an int");

const struct config_key *config_keys(size_t *n)
{
	*n = ARRAY_SIZE(keys);
	return keys;
}

void config_defaults(struct cellbox_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		struct strbuf err = STRBUF_INIT;

		if (keys[i].dflt && config_set(cfg, keys[i].name, keys[i].dflt, &err) < 0)
			fprintf(stderr, "cellbox: bad built-in default: %s\n", err.buf);
		strbuf_release(&err);
	}
}

void config_release(struct cellbox_config *cfg)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		char *field = (char *)cfg + keys[i].offset;

		if (keys[i].type == CFG_STRING || keys[i].type == CFG_CHOICE ||
		    keys[i].type == CFG_KERNEL)
			free(*(char **)field);
		else if (keys[i].type == CFG_LIST)
			strlist_release((struct strlist *)field);
	}
	free(cfg->source);
	memset(cfg, 0, sizeof(*cfg));
}

const struct config_key *config_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *a = keys[i].name, *b = name;

		while (*a && (*a == *b || (*a == '-' && *b == '_')))
			a++, b++;
		if ((!*a && !*b) || (keys[i].flag_alias && !strcmp(keys[i].flag_alias, name)))
			return &keys[i];
	}
	return NULL;
}

/* The index of `value` among a row's '|'-separated choices, or -1. */
static int choice_index(const char *choices, const char *value)
{
	size_t n = strlen(value);
	int i = 0;

	for (const char *c = choices; n && c; i++) {
		if (!strncmp(c, value, n) && (!c[n] || c[n] == '|'))
			return i;
		c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
	}
	return -1;
}

/* Parse a boolean: 1, 0, or -1 when it is not one. */
static int parse_bool(const char *value)
{
	if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1") ||
	    !strcasecmp(value, "on"))
		return 1;
	if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0") ||
	    !strcasecmp(value, "off"))
		return 0;
	return -1;
}

int config_set_value(struct cellbox_config *cfg, const struct config_key *k, const char *value,
		     struct strbuf *err)
{
	char *field = (char *)cfg + k->offset;
	int i;

	switch (k->type) {
	case CFG_STRING:
	case CFG_LIST:
		if (!*value) {
			strbuf_addstr(err, "empty value");
			return -1;
		}
		if (k->type == CFG_LIST) {
			strlist_append((struct strlist *)field, value);
		} else {
			free(*(char **)field);
			*(char **)field = xstrdup(value);
		}
		break;
	case CFG_CHOICE:
	case CFG_ENUM:
		i = choice_index(k->choices, value);
		if (i < 0) {
			strbuf_addf(err, "'%s' is not one of %s", value, k->choices);
			return -1;
		}
		if (k->type == CFG_ENUM) {
			*(int *)field = i;
		} else {
			free(*(char **)field);
			*(char **)field = xstrdup(value);
		}
		break;
	case CFG_KERNEL: {
		const struct kernel_def *kd = kernel_find(value);

		if (!kd) {
			strbuf_addf(err, "there is no kernel '%s' (there are: ", value);
			kernel_list(err, 1);
			strbuf_addch(err, ')');
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(kd->name);
		break;
	}
	case CFG_SECONDS:
		if (parse_seconds(value, (double *)field) < 0) {
			strbuf_addf(err, "'%s' is not a number of seconds", value);
			return -1;
		}
		break;
	case CFG_SIZE:
		if (parse_size(value, (unsigned long long *)field) < 0) {
			strbuf_addf(err, "'%s' is not a size (like 512m or 1g)", value);
			return -1;
		}
		break;
	case CFG_NUMBER:
		if (parse_seconds(value, (double *)field) < 0) {
			strbuf_addf(err, "'%s' is not a non-negative number", value);
			return -1;
		}
		break;
	case CFG_BOOL:
	case CFG_NOT_BOOL:
		i = parse_bool(value);
		if (i < 0) {
			strbuf_addf(err, "'%s' is not true or false", value);
			return -1;
		}
		*(int *)field = k->type == CFG_NOT_BOOL ? !i : i;
		break;
	}
	return 0;
}

int config_set(struct cellbox_config *cfg, const char *key, const char *value,
	       struct strbuf *err)
{
	const struct config_key *k = config_find(key);
	struct strbuf why = STRBUF_INIT;
	int rc;

	if (!k) {
		strbuf_addf(err, "unknown setting '%s'", key);
		return -1;
	}
	rc = config_set_value(cfg, k, value, &why);
	if (rc < 0)
		strbuf_addf(err, "%s: %s", k->name, why.buf);
	strbuf_release(&why);
	return rc;
}

/* One `key = value` of the config file. */
static int config_pair(char *key, char *value, struct strbuf *why, void *data)
{
	return config_set(data, key, value, why);
}

int config_parse(struct cellbox_config *cfg, const char *text, const char *name,
		 struct strbuf *err)
{
	return parse_kv(text, name, "key = value", config_pair, cfg, err);
}

/* The config file's path by the rules in config.h. */
static char *config_path(void)
{
	const char *p = getenv("CELLBOX_CONFIG"), *home;

	if (p && *p)
		return xstrdup(p);
	p = getenv("XDG_CONFIG_HOME");
	if (p && *p)
		return xasprintf("%s/cellbox/config", p);
	home = getenv("HOME");
	return home ? xasprintf("%s/.config/cellbox/config", home) : NULL;
}

int config_load(struct cellbox_config *cfg, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	char *path;
	int rc = 0;

	config_defaults(cfg);
	path = config_path();
	if (path && strbuf_read_file(&text, path, 1u << 20) == 0) {
		cfg->source = xstrdup(path);
		rc = config_parse(cfg, text.buf, path, err);
	} else if (path && errno != ENOENT) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		rc = -1;
	}
	free(path);
	strbuf_release(&text);
	for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(keys); i++) {
		const char *env = keys[i].env, *v = env ? getenv(env) : NULL;
		struct strbuf why = STRBUF_INIT;

		if ((!v || !*v) && keys[i].alias) {
			env = keys[i].alias;
			v = getenv(env);
		}
		if (v && *v && config_set_value(cfg, &keys[i], v, &why) < 0) {
			strbuf_addf(err, "%s: %s", env, why.buf);
			rc = -1;
		}
		strbuf_release(&why);
	}
	return rc;
}

/* Append the `n`th of '|'-separated choices. */
static void add_choice(struct strbuf *sb, const char *choices, int n)
{
	const char *c = choices;

	while (n-- > 0 && c)
		c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
	if (c)
		strbuf_add(sb, c, strcspn(c, "|"));
	else
		strbuf_addstr(sb, "?");
}

void config_describe(const struct cellbox_config *cfg, struct strbuf *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *field = (const char *)cfg + keys[i].offset;
		struct strbuf val = STRBUF_INIT;

		switch (keys[i].type) {
		case CFG_STRING:
		case CFG_CHOICE:
		case CFG_KERNEL: {
			const char *v = *(char *const *)field;
			strbuf_addstr(&val, v ? v : "(default)");
			break;
		}
		case CFG_ENUM:
			add_choice(&val, keys[i].choices, *(const int *)field);
			break;
		case CFG_SECONDS:
		case CFG_NUMBER:
			strbuf_addf(&val, "%g", *(const double *)field);
			break;
		case CFG_SIZE:
			strbuf_addf(&val, "%llu", *(const unsigned long long *)field);
			break;
		case CFG_BOOL:
		case CFG_NOT_BOOL: {
			int on = *(const int *)field;
			strbuf_addstr(&val, (keys[i].type == CFG_NOT_BOOL ? !on : on) ? "true" : "false");
			break;
		}
		case CFG_LIST: {
			const struct strlist *l = (const struct strlist *)field;
			for (size_t k = 0; k < l->n; k++)
				strbuf_addf(&val, "%s%s", k ? " " : "", l->items[k]);
			if (!l->n)
				strbuf_addstr(&val, "(none)");
			break;
		}
		}
		strbuf_addf(out, "  %-16s %-20s %-24s %s\n", keys[i].name, val.buf,
			    keys[i].env ? keys[i].env : "(flags only)", keys[i].help);
		strbuf_release(&val);
	}
}
