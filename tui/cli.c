/* What the commands share: argument parsing and help from the tables, sessions, signals. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "graphics.h"
#include "ipycolors.h"
#include "lastclose.h"
#include "printer.h"

const char *cli_progname = "cellbox";
volatile sig_atomic_t cli_sigint;
volatile sig_atomic_t cli_sigterm;

/* Help: the left column's width and the line width. */
#define HELP_LEFT 28
#define HELP_WIDTH 92

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cli_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- tables ---------------------------------------------------------------------------- */

/* The name of entry `i` of a table whose entries start with their name. */
static const char *name_at(const void *table, size_t i, size_t size)
{
	return *(const char *const *)((const char *)table + i * size);
}

size_t cli_count_entries(const void *table, size_t size)
{
	size_t n = 0;

	while (table && name_at(table, n, size))
		n++;
	return n;
}

int cli_find(const char *word, const void *table, size_t n, size_t size, const char *what,
	     struct strbuf *err)
{
	size_t len = strlen(word);
	int found = -1, matches = 0;

	for (size_t i = 0; i < n && name_at(table, i, size); i++) {
		const char *name = name_at(table, i, size);

		if (!strcmp(name, word))
			return (int)i;
		if (len && !strncmp(name, word, len)) {
			found = (int)i;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	if (!matches) {
		strbuf_addf(err, "unknown %s '%s'", what, word);
		return -1;
	}
	strbuf_addf(err, "ambiguous %s '%s':", what, word);
	for (size_t i = 0, k = 0; i < n && name_at(table, i, size); i++)
		if (!strncmp(name_at(table, i, size), word, len))
			strbuf_addf(err, "%s %s", k++ ? "," : "", name_at(table, i, size));
	return -1;
}

/* ---- parsing --------------------------------------------------------------------------- */

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
	size_t nkeys, nown = cli_count_entries(spec->options, sizeof(*spec->options));
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
	const char *a = argv[*i], *value = NULL, *shown;
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
		size_t n = cli_count_entries(spec->options, sizeof(*spec->options));

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
			strbuf_addf(err, "--%s needs a value (%s)", shown,
				    f.own >= 0 ? spec->options[f.own].arg : f.key->arg);
			return -1;
		}
		value = argv[++*i];
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
			cli_error("%s: %s (see '%s %s --help')", path, err.buf, cli_progname, path);
			goto out;
		}
	}
	if (args->argc < spec->min_args || (spec->max_args >= 0 && args->argc > spec->max_args)) {
		cli_error("%s: %s (see '%s %s --help')", path,
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
	size_t n = cli_count_entries(o, sizeof(*o));

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

/* ---- help ------------------------------------------------------------------------------ */

/* Print `text` from column `col` (already reached), wrapped at HELP_WIDTH to `indent`. */
static void put_wrapped(FILE *f, int col, int indent, const char *text)
{
	const char *p = text;

	while (*p) {
		size_t word = strcspn(p, " ");

		if (col > indent && col + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, word, f);
		col += (int)word;
		p += word;
		p += strspn(p, " ");
	}
	fputc('\n', f);
}

/* One option line: the left part, then its help at HELP_LEFT. */
static void put_option(FILE *f, int indent, const char *left, const char *help)
{
	int col = fprintf(f, "%*s%s", indent, "", left);

	if (col >= HELP_LEFT - 1) {
		fprintf(f, "\n%*s", HELP_LEFT, "");
		col = HELP_LEFT;
	} else {
		col += fprintf(f, "%*s", HELP_LEFT - col, "");
	}
	put_wrapped(f, col, HELP_LEFT, help);
}

void cli_help_settings(unsigned scope, FILE *f)
{
	size_t n;
	const struct config_key *keys = config_keys(&n);

	for (size_t i = 0; i < n; i++) {
		char left[64], *help;

		if (!(keys[i].scope & scope))
			continue;
		snprintf(left, sizeof(left), "--%s%s%s%s%s", keys[i].name,
			 keys[i].flag_alias ? ", --" : "",
			 keys[i].flag_alias ? keys[i].flag_alias : "", keys[i].arg ? " " : "",
			 keys[i].arg ? keys[i].arg : "");
		help = keys[i].dflt && keys[i].arg && strcmp(keys[i].dflt, "0") ?
		       xasprintf("%s (default: %s)", keys[i].help, keys[i].dflt) :
		       xstrdup(keys[i].help);
		put_option(f, 2, left, help);
		free(help);
	}
}

/* The own options of a spec, `indent` columns in. */
static void help_options(const struct cli_spec *spec, int indent, FILE *f)
{
	size_t n = cli_count_entries(spec->options, sizeof(*spec->options));

	for (size_t i = 0; i < n; i++) {
		const struct cli_option *o = &spec->options[i];
		char left[80];
		int k = 0;

		if (o->short_name)
			k = snprintf(left, sizeof(left), "-%c, ", o->short_name);
		snprintf(left + k, sizeof(left) - (size_t)k, "--%s%s%s", o->name,
			 o->value != CLI_SWITCH ? " " : "", o->value != CLI_SWITCH ? o->arg : "");
		put_option(f, indent, left, o->help);
	}
}

void cli_help(const struct cli_command *cmd, const char *path, FILE *f)
{
	size_t nsub = cli_count_entries(cmd->subcommands, sizeof(*cmd->subcommands));
	unsigned settings = cmd->spec.settings;

	fprintf(f, "Usage: %s %s\n\n", cli_progname, cmd->usage);
	put_wrapped(f, 0, 0, cmd->summary);
	if (cli_count_entries(cmd->spec.options, sizeof(*cmd->spec.options))) {
		fprintf(f, "\nOptions:\n");
		help_options(&cmd->spec, 2, f);
	}
	if (nsub)
		fprintf(f, "\nSubcommands:\n");
	for (size_t i = 0; i < nsub; i++) {
		const struct cli_command *sub = &cmd->subcommands[i];
		put_option(f, 2, sub->usage, sub->summary);
		help_options(&sub->spec, 4, f);
		settings |= sub->spec.settings;
	}
	if (settings) {
		fprintf(f, "\nSettings (flags beat CELLBOX_* variables and the config file: see '%s "
			"config'):\n", cli_progname);
		cli_help_settings(settings, f);
	}
	put_option(f, 2, "-h, --help", "show this help");
	if (cmd->help) {
		fputc('\n', f);
		fputs(cmd->help, f);
	}
	if (cmd->exit_codes) {
		struct strbuf codes = STRBUF_INIT;

		reason_describe_exit_codes("\n  ", &codes);
		fprintf(f, "\nExit codes:\n  %s\n", codes.buf);
		strbuf_release(&codes);
	}
	(void)path;
}

/* ---- signals --------------------------------------------------------------------------- */

/* Record a Ctrl-C (or a SIGTERM, SIGHUP: leave) for the command to act on. */
static void on_sigint(int sig)
{
	if (sig == SIGINT)
		cli_sigint = 1;
	else
		cli_sigterm = sig;
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
	/* SIGTERM and SIGHUP end the command the same way: the kernel stopped, nothing left. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &wait_mask);
	sigint_caught = 1;
	/* A parent may hand us SIGINT blocked (test runners do): let it in while we wait. */
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGHUP);
}

const sigset_t *cli_wait_mask(void)
{
	return &wait_mask;
}

/* ---- sessions -------------------------------------------------------------------------- */

void cli_kernel_from_file(struct cellbox_config *cfg, const char *path, const cJSON *nb)
{
	const struct kernel_def *k = nb ? kernel_for_notebook(nb) : NULL;

	if (cfg->session.kernel)
		return;
	if (!k)
		k = kernel_for_path(path);
	if (k)
		cfg->session.kernel = xstrdup(k->name);
}

void cli_session_opts(const struct cellbox_config *cfg, struct session_opts *o)
{
	*o = cfg->session;
	o->pool_dir = NULL;
	o->on_state = NULL;
	o->state_data = NULL;
}

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
	so.policy = cli_policy(cfg, &err);	/* loaded (and checked) with the settings */
	strbuf_reset(&err);
	if (cli_prepare_libraries(cfg, &so) < 0) {
		strbuf_release(&err);
		return NULL;
	}
	if (cfg->pool) {
		runtime = session_runtime_dir(so.runtime_dir);
		pool = pool_dir_path(runtime, cfg->pool_name);
		so.pool_dir = pool;
	}
	s = session_open(&so, &err);
	if (!s) {
		cli_error("cannot start the kernel: %s", err.buf);
	} else if (cli_verify_libraries(cfg, s) < 0) {
		session_close(s);
		s = NULL;
	} else {
		if (sigint_caught)
			session_set_sigmask(s, &wait_mask);
		if (session_pool_note(s))
			cli_error("note: %s", session_pool_note(s));
	}
	for (size_t i = 0; s && i < cfg->copy_in.n; i++) {
		char *src, *dst;

		files_parse_spec(cfg->copy_in.items[i], &src, &dst);
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

int cli_close_session(struct session *s, const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	if (!s)
		return 0;
	for (size_t i = 0; i < cfg->copy_out.n && session_state(s) != SESSION_DEAD && !cli_sigterm;
	     i++) {
		char *src, *dst;

		files_parse_spec(cfg->copy_out.items[i], &src, &dst);
		strbuf_reset(&err);
		if (files_copy_out(s, src, dst, &err) < 0) {
			cli_error("%s", err.buf);
			rc = -1;
		}
		free(src);
		free(dst);
	}
	lastclose_exiting();	/* every caller exits next: its inotify's last close is not waited for */
	session_close(s);
	strbuf_release(&err);
	return rc;
}

int cli_wait(struct session *s, unsigned long id)
{
	int interrupted = 0;

	for (;;) {
		if (cli_sigterm)
			return CLI_TERMINATED;	/* the caller closes the session and leaves */
		if (cli_sigint) {
			cli_sigint = 0;
			interrupted = 1;
			session_interrupt(s);
		}
		if (session_wait(s, id) == 0)
			return interrupted;
	}
}

/* ---- terminals and files --------------------------------------------------------------- */

int cli_want_color(int fd)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");

	return isatty(fd) && !(nc && *nc) && !(term && !strcmp(term, "dumb"));
}

void cli_setup_graphics(const struct cellbox_config *cfg, struct session *s,
			struct printer *pr, struct graphics_line *gl)
{
	enum graphics_mode want = GRAPHICS_AUTO;
	enum blocks_kind blocks = BLOCKS_AUTO;
	struct strbuf err = STRBUF_INIT;

	graphics_mode_parse(cfg->graphics, &want);
	blocks_kind_parse(cfg->blocks, &blocks);
	if (want == GRAPHICS_NONE || (want == GRAPHICS_AUTO && !isatty(1))) {
		graphics_line_init(gl, GRAPHICS_NONE, blocks, 1, 0);	/* the environment's hints */
	} else {
		graphics_line_init(gl, want, blocks, -1, cli_want_color(1));
		pr->plot_hook = graphics_line_plot;
		pr->plot_data = gl;
	}
	if ((pr->flags & PRINTER_COLOR) && gl->tc.light == 1 &&
	    ipycolors_apply(s, ipycolors_for_background(1), &err) < 0)
		cli_error("cannot set IPython's colours: %s", err.buf);
	strbuf_release(&err);
}

int cli_read_code(const char *path, struct strbuf *code)
{
	struct strbuf err = STRBUF_INIT;
	size_t nonblank = 0;
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
	if (text_check(code->buf, code->len, shown, &err) < 0) {
		cli_error("%s", err.buf);
		strbuf_release(&err);
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

/* Whether `code` is `exit` or `quit` (called or not), as IPython ends a terminal there. */
int cli_code_is_exit(const char *code)
{
	const char *p = code + strspn(code, " \t\n");
	size_t n = strlen(p);

	while (n && strchr(" \t\n", p[n - 1]))
		n--;
	if (n != 4 && n != 6)
		return 0;
	return (!strncmp(p, "exit", 4) || !strncmp(p, "quit", 4)) &&
	       (n == 4 || !strncmp(p + 4, "()", 2));
}
