#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef CELLBOX_DEFAULT_PYTHON
#define CELLBOX_DEFAULT_PYTHON "/usr/bin/python3"
#endif

enum config_type { CFG_STRING, CFG_SECONDS, CFG_SIZE };

struct config_key {
	const char *name;
	const char *env;
	enum config_type type;
	size_t offset;
	const char *help;
};

#define KEY(n, e, t, field, h) \
	{ .name = n, .env = e, .type = t, .offset = offsetof(struct cellbox_config, field), .help = h }

static const struct config_key keys[] = {
	KEY("backend", "CELLBOX_BACKEND", CFG_STRING, backend,
	    "where the kernel runs: local"),
	KEY("python", "CELLBOX_PYTHON", CFG_STRING, python,
	    "interpreter of the local backend (needs IPython)"),
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
	KEY("theme", "CELLBOX_THEME", CFG_STRING, theme,
	    "colour theme of the full-screen UI: dark, light, high-contrast, monochrome"),
};

void config_defaults(struct cellbox_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = xstrdup("local");
	cfg->python = xstrdup(CELLBOX_DEFAULT_PYTHON);
	cfg->startup_timeout = 30;
	cfg->interrupt_grace = 2;
}

void config_release(struct cellbox_config *cfg)
{
	free(cfg->backend);
	free(cfg->python);
	free(cfg->runtime_dir);
	free(cfg->theme);
	free(cfg->source);
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
	}
	return 0;
}

/* Trim white space at both ends, in place. */
static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int config_parse(struct cellbox_config *cfg, const char *text, const char *name,
		 struct strbuf *err)
{
	char *copy = xstrdup(text), *line, *next;
	int lineno = 0, rc = 0;

	for (line = copy; line && rc == 0; line = next) {
		char *eq, *hash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		line = trim(line);
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			strbuf_addf(err, "%s:%d: expected 'key = value'", name, lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		{
			struct strbuf why = STRBUF_INIT;
			if (config_set(cfg, trim(line), trim(eq + 1), &why) < 0) {
				strbuf_addf(err, "%s:%d: %s", name, lineno, why.buf);
				rc = -1;
			}
			strbuf_release(&why);
		}
	}
	free(copy);
	return rc;
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
		const char *v = getenv(keys[i].env);
		struct strbuf why = STRBUF_INIT;

		if (v && *v && config_set(cfg, keys[i].name, v, &why) < 0) {
			strbuf_addf(err, "%s: %s", keys[i].env, why.buf);
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
		case CFG_STRING: {
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
		}
		strbuf_addf(out, "  %-16s %-20s %-24s %s\n", keys[i].name, val.buf, keys[i].env,
			    keys[i].help);
		strbuf_release(&val);
	}
}
