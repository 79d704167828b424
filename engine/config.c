#include "config.h"
#include "kernel.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef CELLBOX_DEFAULT_PYTHON
#define CELLBOX_DEFAULT_PYTHON "/usr/bin/python3"
#endif
#ifndef CELLBOX_DEFAULT_RSCRIPT
#define CELLBOX_DEFAULT_RSCRIPT "/usr/bin/Rscript"
#endif

enum config_type { CFG_STRING, CFG_SECONDS, CFG_SIZE, CFG_NUMBER, CFG_BOOL, CFG_CHOICE,
		   CFG_KERNEL };

struct config_key {
	const char *name;
	const char *env;
	enum config_type type;
	size_t offset;
	const char *help;
	const char *alias;	/* llm-sandbox's variable for the same thing, lower precedence */
	const char *choices;	/* CFG_CHOICE: the values allowed, '|' between */
};

#define KEY(n, e, t, field, h) \
	{ .name = n, .env = e, .type = t, .offset = offsetof(struct cellbox_config, field), .help = h }
#define KEYA(n, e, t, field, h, a) \
	{ .name = n, .env = e, .type = t, .offset = offsetof(struct cellbox_config, field), \
	  .help = h, .alias = a }

static const struct config_key keys[] = {
	KEY("backend", "CELLBOX_BACKEND", CFG_STRING, backend,
	    "where the kernel runs: local, docker, podman"),
	KEY("kernel", "CELLBOX_KERNEL", CFG_KERNEL, kernel,
	    "the kernel's language: python, r (default: the cell file's, else python)"),
	KEY("python", "CELLBOX_PYTHON", CFG_STRING, python,
	    "interpreter of the local backend (needs IPython)"),
	KEY("rscript", "CELLBOX_RSCRIPT", CFG_STRING, rscript,
	    "Rscript of the R kernel on the local backend (needs jsonlite)"),
	KEY("timeout", "CELLBOX_TIMEOUT", CFG_SECONDS, timeout,
	    "seconds a cell may run before it is interrupted (0 = no limit)"),
	KEY("startup-timeout", "CELLBOX_STARTUP_TIMEOUT", CFG_SECONDS, startup_timeout,
	    "seconds to wait for a kernel to become ready"),
	KEY("interrupt-grace", "CELLBOX_INTERRUPT_GRACE", CFG_SECONDS, interrupt_grace,
	    "seconds a cell may ignore an interrupt before the kernel is restarted"),
	KEY("memory", "CELLBOX_MEMORY", CFG_SIZE, memory,
	    "memory limit of the kernel, e.g. 512m or 1g (0 = none)"),
	KEY("runtime-dir", "CELLBOX_RUNTIME_DIR", CFG_STRING, runtime_dir,
	    "where session channels live"),
	KEY("pool", "CELLBOX_POOL", CFG_BOOL, pool,
	    "take warm kernels from the pool daemon (yes/no)"),
	KEY("pool-name", "CELLBOX_POOL_NAME", CFG_STRING, pool_name,
	    "which pool ('cellbox pool serve --name')"),
	{ .name = "pool-strategy", .env = "CELLBOX_POOL_STRATEGY", .type = CFG_CHOICE,
	  .offset = offsetof(struct cellbox_config, pool_strategy),
	  .help = "when the pool is exhausted: wait, fail-fast or temporary",
	  .choices = "wait|fail-fast|temporary" },
	KEY("pool-timeout", "CELLBOX_POOL_TIMEOUT", CFG_SECONDS, pool_timeout,
	    "seconds to wait for a free pooled kernel"),
	KEYA("image", "CELLBOX_IMAGE", CFG_STRING, image,
	     "container image of the kernel (default cellbox-python:p<protocol>)", NULL),
	KEYA("network", "CELLBOX_NETWORK", CFG_STRING, network,
	     "container network: none (default), bridge, host", "SANDBOX_NETWORK_MODE"),
	KEYA("cpus", "CELLBOX_CPUS", CFG_NUMBER, cpus,
	     "CPU limit of the container in CPUs (0 = 1)", "SANDBOX_CPU_COUNT"),
	KEYA("pids", "CELLBOX_PIDS", CFG_SIZE, pids,
	     "processes the container may have (0 = 256)", NULL),
	KEYA("read-only", "CELLBOX_READ_ONLY", CFG_BOOL, read_only,
	     "read-only container root file system (true/false)", "SANDBOX_READ_ONLY"),
	KEYA("cap-drop", "CELLBOX_CAP_DROP", CFG_STRING, cap_drop,
	     "capabilities to drop, comma-separated (ALL; none)", "SANDBOX_CAP_DROP"),
	KEYA("security-opt", "CELLBOX_SECURITY_OPT", CFG_STRING, security_opt,
	     "container security options (no-new-privileges; none)", "SANDBOX_SECURITY_OPT"),
	KEYA("user", "CELLBOX_USER", CFG_STRING, user,
	     "container user uid[:gid] (default: ours, 1000 for root)", NULL),
	KEYA("docker-host", "CELLBOX_DOCKER_HOST", CFG_STRING, docker_host,
	     "engine socket, unix:///path or tcp://host:port ($DOCKER_HOST)", NULL),
	KEY("theme", "CELLBOX_THEME", CFG_STRING, theme,
	    "colour theme of the full-screen UI: dark, light, high-contrast, monochrome"),
	{ .name = "graphics", .env = "CELLBOX_GRAPHICS", .type = CFG_CHOICE,
	  .offset = offsetof(struct cellbox_config, graphics),
	  .help = "how plots are drawn: auto, sixel, blocks (half-blocks) or none",
	  .choices = "auto|sixel|blocks|none" },
	KEY("history-size", "CELLBOX_HISTORY_SIZE", CFG_SIZE, history_size,
	    "cells kept in the history; older sessions are pruned (0 = record nothing)"),
	KEY("history-days", "CELLBOX_HISTORY_DAYS", CFG_SECONDS, history_days,
	    "days a recorded session is kept (0 = no age limit)"),
};

void config_defaults(struct cellbox_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = xstrdup("local");
	cfg->python = xstrdup(CELLBOX_DEFAULT_PYTHON);
	cfg->rscript = xstrdup(CELLBOX_DEFAULT_RSCRIPT);
	cfg->startup_timeout = 30;
	cfg->interrupt_grace = 2;
	cfg->pool_name = xstrdup("default");
	cfg->pool_strategy = xstrdup("wait");
	cfg->pool_timeout = 30;
	cfg->read_only = 1;
	cfg->graphics = xstrdup("auto");
	cfg->history_size = 1000;
}

void config_release(struct cellbox_config *cfg)
{
	free(cfg->backend);
	free(cfg->python);
	free(cfg->rscript);
	free(cfg->kernel);
	free(cfg->runtime_dir);
	free(cfg->pool_name);
	free(cfg->pool_strategy);
	free(cfg->image);
	free(cfg->network);
	free(cfg->cap_drop);
	free(cfg->security_opt);
	free(cfg->user);
	free(cfg->docker_host);
	free(cfg->theme);
	free(cfg->source);
	free(cfg->graphics);
	memset(cfg, 0, sizeof(*cfg));
}

/* Find a key, treating '-' and '_' alike. */
static const struct config_key *find_key(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *a = keys[i].name, *b = name;

		while (*a && (*a == *b || (*a == '-' && *b == '_')))
			a++, b++;
		if (!*a && !*b)
			return &keys[i];
	}
	return NULL;
}

int config_set(struct cellbox_config *cfg, const char *key, const char *value,
	       struct strbuf *err)
{
	const struct config_key *k = find_key(key);
	char *field;

	if (!k) {
		strbuf_addf(err, "unknown setting '%s'", key);
		return -1;
	}
	field = (char *)cfg + k->offset;
	switch (k->type) {
	case CFG_STRING:
		if (!*value) {
			strbuf_addf(err, "%s: empty value", k->name);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		break;
	case CFG_CHOICE: {
		size_t n = strlen(value);
		const char *c = k->choices;

		while (c && (strncmp(c, value, n) || (c[n] && c[n] != '|')))
			c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
		if (!n || !c) {
			strbuf_addf(err, "%s: '%s' is not one of %s", k->name, value, k->choices);
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(value);
		break;
	}
	case CFG_KERNEL: {
		const struct kernel_def *kd = kernel_find(value);

		if (!kd) {
			strbuf_addf(err, "%s: there is no kernel '%s' (there are: ", k->name, value);
			kernel_list(err);
			strbuf_addch(err, ')');
			return -1;
		}
		free(*(char **)field);
		*(char **)field = xstrdup(kd->name);
		break;
	}
	case CFG_SECONDS:
		if (parse_seconds(value, (double *)field) < 0) {
			strbuf_addf(err, "%s: '%s' is not a number of seconds", k->name, value);
			return -1;
		}
		break;
	case CFG_SIZE:
		if (parse_size(value, (unsigned long long *)field) < 0) {
			strbuf_addf(err, "%s: '%s' is not a size (like 512m or 1g)", k->name, value);
			return -1;
		}
		break;
	case CFG_NUMBER:
		if (parse_seconds(value, (double *)field) < 0) {
			strbuf_addf(err, "%s: '%s' is not a non-negative number", k->name, value);
			return -1;
		}
		break;
	case CFG_BOOL:
		if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1") ||
		    !strcasecmp(value, "on")) {
			*(int *)field = 1;
		} else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") ||
			   !strcmp(value, "0") || !strcasecmp(value, "off")) {
			*(int *)field = 0;
		} else {
			strbuf_addf(err, "%s: '%s' is not true or false", k->name, value);
			return -1;
		}
		break;
	}
	return 0;
}

/* One `key = value` of the config file. */
static int config_pair(char *key, char *value, struct strbuf *why, void *data)
{
	return config_set(data, key, value, why);
}

int config_parse(struct cellbox_config *cfg, const char *text, const char *name,
		 struct strbuf *err)
{
	return kv_parse(text, name, "key = value", config_pair, cfg, err);
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
		const char *v = getenv(keys[i].env), *env = keys[i].env;
		struct strbuf why = STRBUF_INIT;

		if ((!v || !*v) && keys[i].alias) {
			env = keys[i].alias;
			v = getenv(env);
		}
		if (v && *v && config_set(cfg, keys[i].name, v, &why) < 0) {
			strbuf_addf(err, "%s: %s", env, why.buf);
			rc = -1;
		}
		strbuf_release(&why);
	}
	return rc;
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
		case CFG_SECONDS:
			strbuf_addf(&val, "%g", *(const double *)field);
			break;
		case CFG_SIZE:
			strbuf_addf(&val, "%llu", *(const unsigned long long *)field);
			break;
		case CFG_NUMBER:
			strbuf_addf(&val, "%g", *(const double *)field);
			break;
		case CFG_BOOL:
			strbuf_addstr(&val, *(const int *)field ? "true" : "false");
			break;
		}
		strbuf_addf(out, "  %-16s %-20s %-24s %s\n", keys[i].name, val.buf, keys[i].env,
			    keys[i].help);
		strbuf_release(&val);
	}
}
