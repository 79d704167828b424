/* Command lines parsed by a command's spec and the settings table. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An option a command takes: one of its own, or a settings flag. */
struct found {
	int own;			/* index of the command's own option, or -1 */
	const struct config_key *key;	/* the setting, when not own */
};

/* Whether setting `k` is a flag of `spec`. */
static int takes_setting(const struct cli_spec *spec, const struct config_key *k)
{
	return (k->scope & spec->settings) != 0;
}

/*
 * Find long option `name` (`len` bytes) among the command's own and the settings it takes:
 * the exact name, else the one it begins. 0, or -1 with `err` set.
 */
static int find_long(const struct cli_spec *spec, const char *name, size_t len,
		     struct found *f, struct strbuf *err)
{
	size_t nkeys, nown = table_count(spec->options, sizeof(*spec->options));
	const struct config_key *keys = config_keys(&nkeys);
	struct strbuf cands = STRBUF_INIT;
	int matches = 0;

	f->own = -1;
	f->key = NULL;
	for (int exact = 1; exact >= 0 && !matches; exact--) {
		for (size_t i = 0; i < nown; i++) {
			const char *o = spec->options[i].name;
			if (!strncmp(o, name, len) && (!exact || !o[len])) {
				f->own = (int)i;
				strbuf_addf(&cands, "%s --%s", matches++ ? "," : "", o);
			}
		}
		for (size_t i = 0; i < nkeys; i++) {
			const char *o = keys[i].name, *a = keys[i].flag_alias;
			if (!takes_setting(spec, &keys[i]))
				continue;
			if ((!strncmp(o, name, len) && (!exact || !o[len])) ||
			    (a && !strncmp(a, name, len) && (!exact || !a[len]))) {
				f->key = &keys[i];
				f->own = -1;
				strbuf_addf(&cands, "%s --%s", matches++ ? "," : "", o);
			}
		}
	}
	if (matches != 1)
		strbuf_addf(err, "%s option '--%.*s'%s%s", matches ? "ambiguous" : "unknown",
			    (int)len, name, matches ? ":" : "", matches ? cands.buf : "");
	strbuf_release(&cands);
	return matches == 1 ? 0 : -1;
}

/* Check the value of own option `o`; -1 with `err` saying why it is not one. */
static int check_value(const struct cli_option *o, const char *v, struct strbuf *err)
{
	double d;
	unsigned long long size;
	char *end;
	long n;

	switch (o->value) {
	case CLI_SECONDS:
		if (parse_seconds(v, &d) < 0) {
			strbuf_addf(err, "--%s: '%s' is not a number of seconds", o->name, v);
			return -1;
		}
		break;
	case CLI_SIZE:
		if (parse_size(v, &size) < 0 || !size) {
			strbuf_addf(err, "--%s: '%s' is not a size such as 32m", o->name, v);
			return -1;
		}
		break;
	case CLI_COUNT:
		n = strtol(v, &end, 10);
		if (!*v || *end || n < 0 || n > 1000) {
			strbuf_addf(err, "--%s: '%s' is not a number from 0 to 1000", o->name, v);
			return -1;
		}
		break;
	case CLI_CHOICE: {
		size_t len = strlen(v);
		for (const char *c = o->choices; c && *c; c += strcspn(c, "|"), c += *c == '|')
			if (len && strcspn(c, "|") == len && !strncmp(c, v, len))
				return 0;
		strbuf_addf(err, "--%s: '%s' is not one of %s", o->name, v, o->choices);
		return -1;
	}
	default:
		break;
	}
	return 0;
}

/* Take one option (argv[*i], maybe with the next word as its value). 0, or -1 with `err`. */
static int take_option(const struct cli_spec *spec, int argc, char **argv, int *i,
		       struct cellbox_config *cfg, struct cli_args *args, struct strbuf *err)
{
	const char *a = argv[*i], *value = NULL, *second = NULL, *shown;
	struct found f = { -1, NULL };
	int needs_value;

	if (a[1] == '-') {
		const char *name = a + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);

		if (find_long(spec, name, len, &f, err) < 0)
			return -1;
		if (eq)
			value = eq + 1;
	} else {
		size_t n = table_count(spec->options, sizeof(*spec->options));

		for (size_t k = 0; k < n; k++)
			if (spec->options[k].short_name && spec->options[k].short_name == a[1])
				f.own = (int)k;
		if (f.own < 0) {
			strbuf_addf(err, "unknown option '-%c'", a[1]);
			return -1;
		}
		if (a[2])
			value = a + 2;
	}
	if (f.own >= 0) {
		const struct cli_option *o = &spec->options[f.own];
		needs_value = o->value != CLI_SWITCH;
		shown = o->name;
		if (!needs_value && value) {
			strbuf_addf(err, "--%s takes no value", o->name);
			return -1;
		}
	} else {
		needs_value = f.key->arg != NULL;
		shown = f.key->name;
		if (!needs_value && !value)
			value = "yes";	/* a switch: --pool */
	}
	if (needs_value && !value) {
		if (*i + 1 >= argc) {
			strbuf_addf(err, "--%s needs %s (%s)", shown,
				    f.own >= 0 && spec->options[f.own].value == CLI_PAIR ?
				    "two values" : "a value",
				    f.own >= 0 ? spec->options[f.own].arg : f.key->arg);
			return -1;
		}
		value = argv[++*i];
	}
	if (f.own >= 0 && spec->options[f.own].value == CLI_PAIR) {
		if (*i + 1 >= argc) {
			strbuf_addf(err, "--%s needs two values (%s)", shown, spec->options[f.own].arg);
			return -1;
		}
		second = argv[++*i];
	}
	if (f.own >= 0) {
		if (check_value(&spec->options[f.own], value ? value : "", err) < 0)
			return -1;
		args->values[f.own] = value ? value : "";
		if (spec->options[f.own].many) {
			if (args->nmany >= CLI_MAX_MANY) {
				strbuf_addf(err, "--%s: at most %d times", shown, CLI_MAX_MANY);
				return -1;
			}
			args->many[args->nmany].option = f.own;
			args->many[args->nmany].second = second;
			args->many[args->nmany++].value = args->values[f.own];
		}
		return 0;
	}
	if (config_set_value(cfg, f.key, value, err) < 0) {
		struct strbuf msg = STRBUF_INIT;

		strbuf_addf(&msg, "--%s: %s", f.key->name, err->buf);
		strbuf_reset(err);
		strbuf_addstr(err, msg.buf);
		strbuf_release(&msg);
		return -1;
	}
	return 0;
}

int cli_parse(const struct cli_spec *spec, const char *path, int argc, char **argv,
	      struct cellbox_config *cfg, struct cli_args *args)
{
	struct strbuf err = STRBUF_INIT;
	int options_done = 0, rc = -1;

	memset(args, 0, sizeof(*args));
	args->spec = spec;
	args->argv = argv;	/* the positional ones move to the front, in order */
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!options_done && !strcmp(a, "--")) {
			options_done = 1;
		} else if (options_done || a[0] != '-' || !a[1]) {
			args->argv[args->argc++] = argv[i];
		} else if (take_option(spec, argc, argv, &i, cfg, args, &err) < 0) {
			msg_error("%s: %s (see '%s %s --help')", path, err.buf, cli_progname, path);
			goto out;
		}
	}
	if (args->argc < spec->min_args || (spec->max_args >= 0 && args->argc > spec->max_args)) {
		msg_error("%s: %s (see '%s %s --help')", path,
			  args->argc < spec->min_args ? "too few arguments" : "too many arguments",
			  cli_progname, path);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&err);
	return rc;
}

/* The index of own option `name`, or -1. */
static int own_index(const struct cli_args *args, const char *name)
{
	const struct cli_option *o = args->spec ? args->spec->options : NULL;
	size_t n = table_count(o, sizeof(*o));

	for (size_t i = 0; i < n; i++)
		if (!strcmp(o[i].name, name))
			return (int)i;
	return -1;
}

int cli_has(const struct cli_args *args, const char *name)
{
	return cli_value(args, name) != NULL;
}

const char *cli_value(const struct cli_args *args, const char *name)
{
	int i = own_index(args, name);

	return i >= 0 ? args->values[i] : NULL;
}

const char *cli_value_at(const struct cli_args *args, const char *name, size_t k)
{
	int i = own_index(args, name);

	for (size_t m = 0; i >= 0 && m < args->nmany; m++)
		if (args->many[m].option == i && !k--)
			return args->many[m].value;
	return NULL;
}

const char *cli_pair_at(const struct cli_args *args, const char *name, size_t k,
			const char **second)
{
	int i = own_index(args, name);

	for (size_t m = 0; i >= 0 && m < args->nmany; m++)
		if (args->many[m].option == i && !k--) {
			*second = args->many[m].second;
			return args->many[m].value;
		}
	return NULL;
}

double cli_seconds(const struct cli_args *args, const char *name, double dflt)
{
	const char *v = cli_value(args, name);
	double d = dflt;

	if (v)
		parse_seconds(v, &d);
	return d;
}

unsigned long long cli_size(const struct cli_args *args, const char *name,
			    unsigned long long dflt)
{
	const char *v = cli_value(args, name);
	unsigned long long n = dflt;

	if (v)
		parse_size(v, &n);
	return n;
}

int cli_count(const struct cli_args *args, const char *name, int dflt)
{
	const char *v = cli_value(args, name);

	return v ? (int)strtol(v, NULL, 10) : dflt;
}
