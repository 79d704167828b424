/*
 * The security policy: its files, its model and what the runner's import hook is told. Its
 * severities and verdicts in words and JSON are policy_verdict.c, the analysis policy_scan.c.
 */
#include "policy.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CELLBOX_POLICIES_DIR
#define CELLBOX_POLICIES_DIR "/usr/local/share/cellbox/policies"
#endif

#define MAX_POLICY_FILE (1u << 20)
#define MAX_RULES 4096

int policy_is_none(const char *name)
{
	return !name || !*name || !strcmp(name, "none") || !strcmp(name, "off");
}

void policy_free(struct policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->npatterns; i++) {
		free(p->patterns[i].regex);
		free(p->patterns[i].description);
		pcre2_code_free(p->patterns[i].code);
	}
	for (size_t i = 0; i < p->nmodules; i++) {
		free(p->modules[i].name);
		free(p->modules[i].description);
	}
	free(p->patterns);
	free(p->modules);
	free(p->name);
	free(p->source);
	free(p->description);
	free(p);
}

/* The next blank-separated word of *p (advanced past it); its length, 0 at the end. */
static size_t next_word(const char **p, const char **word)
{
	const char *s = *p + strspn(*p, " \t");
	size_t n = strcspn(s, " \t");

	*word = s;
	*p = s + n;
	return n;
}

/* Whether s[0..n) is a dotted module name: identifiers joined by dots. */
static int valid_module(const char *s, size_t n)
{
	int start = 1;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (start)
				return 0;
			start = 1;
		} else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   c >= 0x80 || (!start && c >= '0' && c <= '9')) {
			start = 0;
		} else {
			return 0;
		}
	}
	return !start;
}

/* Compile one pattern; -1 with the PCRE2 message in `why`. */
static int compile_pattern(struct policy_pattern *pt, struct strbuf *why)
{
	int code;
	PCRE2_SIZE off;
	PCRE2_UCHAR msg[256];

	pt->code = pcre2_compile((PCRE2_SPTR)pt->regex, PCRE2_ZERO_TERMINATED,
				 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &off,
				 NULL);
	if (!pt->code) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		strbuf_addf(why, "invalid pattern '%s': %s at offset %zu", pt->regex, (char *)msg,
			    (size_t)off);
		return -1;
	}
	pcre2_jit_compile(pt->code, PCRE2_JIT_COMPLETE);	/* faster when it can; fine if not */
	return 0;
}

/* Parse one `module NAME SEVERITY DESCRIPTION` line (after the word). */
static int parse_module(struct policy *p, const char *rest, struct strbuf *why)
{
	const char *name, *sev;
	size_t nn = next_word(&rest, &name), ns = next_word(&rest, &sev);
	struct policy_module *m;
	enum policy_severity s;

	if (!valid_module(name, nn)) {
		strbuf_addf(why, "'%.*s' is not a module name (expected 'module NAME SEVERITY "
			    "DESCRIPTION')", (int)nn, name);
		return -1;
	}
	if (policy_severity_parse(sev, ns, &s) < 0) {
		strbuf_addf(why, "'%.*s' is not a severity (SAFE, LOW, MEDIUM or HIGH)", (int)ns, sev);
		return -1;
	}
	p->modules = xrealloc(p->modules, (p->nmodules + 1) * sizeof(*p->modules));
	m = &p->modules[p->nmodules++];
	m->name = xstrndup(name, nn);
	m->severity = s;
	m->description = xstrdup(rest + strspn(rest, " \t"));
	return 0;
}

/* Parse one `pattern SEVERITY [strings] DESCRIPTION` line (after the word). */
static int parse_pattern_head(struct policy *p, const char *rest, struct strbuf *why)
{
	const char *sev, *word, *after;
	size_t ns = next_word(&rest, &sev), nw;
	struct policy_pattern *pt;
	enum policy_severity s;
	int strings = 0;

	if (policy_severity_parse(sev, ns, &s) < 0) {
		strbuf_addf(why, "'%.*s' is not a severity (expected 'pattern SEVERITY [strings] "
			    "DESCRIPTION')", (int)ns, sev);
		return -1;
	}
	after = rest;
	nw = next_word(&after, &word);
	if (nw == 7 && !strncmp(word, "strings", 7)) {
		strings = 1;
		rest = after;
	}
	p->patterns = xrealloc(p->patterns, (p->npatterns + 1) * sizeof(*p->patterns));
	pt = &p->patterns[p->npatterns++];
	memset(pt, 0, sizeof(*pt));
	pt->severity = s;
	pt->strings = strings;
	pt->description = xstrdup(rest + strspn(rest, " \t"));
	return 0;
}

/* Set `key = value`. */
static int parse_setting(struct policy *p, const char *key, size_t nk, const char *value,
			 struct strbuf *why)
{
	enum policy_severity s;

	if (nk == 11 && !strncmp(key, "description", 11)) {
		free(p->description);
		p->description = xstrdup(value);
	} else if ((nk == 9 && !strncmp(key, "threshold", 9)) ||
		   (nk == 7 && !strncmp(key, "dynamic", 7))) {
		if (policy_severity_parse(value, strlen(value), &s) < 0) {
			strbuf_addf(why, "%.*s: '%s' is not a severity (SAFE, LOW, MEDIUM or HIGH)",
				    (int)nk, key, value);
			return -1;
		}
		if (nk == 9)
			p->threshold = s;
		else
			p->dynamic = s;
	} else {
		strbuf_addf(why, "unknown setting '%.*s' (description, threshold, dynamic)", (int)nk,
			    key);
		return -1;
	}
	return 0;
}

struct policy *policy_parse(const char *text, const char *name, struct strbuf *err)
{
	struct policy *p = xcalloc(1, sizeof(*p));
	struct strbuf line = STRBUF_INIT, why = STRBUF_INIT;
	const char *s = text;
	unsigned lineno = 0;
	int want_regex = 0, rc = -1;

	p->threshold = POLICY_MEDIUM;
	p->dynamic = POLICY_LOW;
	while (*s) {
		size_t n = strcspn(s, "\n");
		char *l, *hash;

		lineno++;
		strbuf_reset(&line);
		strbuf_add(&line, s, n);
		s += n + (s[n] == '\n');
		l = parse_trim(line.buf);
		if (want_regex) {
			struct policy_pattern *pt = &p->patterns[p->npatterns - 1];

			want_regex = 0;
			if (!*l) {
				strbuf_addstr(&why, "a pattern line needs its regular expression on the "
					      "next line");
				goto fail;
			}
			pt->regex = xstrdup(l);
			pt->line = lineno;
			if (compile_pattern(pt, &why) < 0)
				goto fail;
			continue;
		}
		if (!*l || *l == '#')
			continue;
		if (p->npatterns + p->nmodules >= MAX_RULES) {
			strbuf_addf(&why, "more than %d rules", MAX_RULES);
			goto fail;
		}
		if (!strncmp(l, "module", 6) && (l[6] == ' ' || l[6] == '\t')) {
			if (parse_module(p, l + 6, &why) < 0)
				goto fail;
		} else if (!strncmp(l, "pattern", 7) && (l[7] == ' ' || l[7] == '\t')) {
			if (parse_pattern_head(p, l + 7, &why) < 0)
				goto fail;
			want_regex = 1;
		} else if (strchr(l, '=')) {
			char *eq = strchr(l, '='), *value = eq + 1;
			size_t nk;

			*eq = '\0';
			nk = strlen(parse_trim(l));
			/* A trailing comment on a setting line. */
			hash = strchr(value, '#');
			if (hash)
				*hash = '\0';
			if (parse_setting(p, parse_trim(l), nk, parse_trim(value), &why) < 0)
				goto fail;
		} else {
			strbuf_addf(&why, "expected 'module NAME SEVERITY DESCRIPTION', 'pattern SEVERITY "
				    "[strings] DESCRIPTION' or 'key = value', not '%.40s'", l);
			goto fail;
		}
	}
	if (want_regex) {
		lineno++;
		strbuf_addstr(&why, "a pattern line needs its regular expression on the next line");
		goto fail;
	}
	rc = 0;
fail:
	if (rc < 0) {
		strbuf_addf(err, "%s:%u: %s", name, lineno, why.buf);
		policy_free(p);
		p = NULL;
	}
	strbuf_release(&line);
	strbuf_release(&why);
	return p;
}

/* The directory of the running executable, or NULL. */
static char *exe_dir(void)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xstrdup(buf);
}

char **policy_dirs(void)
{
	char **dirs = xcalloc(6, sizeof(*dirs));
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char *exe = exe_dir();
	int k = 0;

	if (xdg && *xdg)
		dirs[k++] = xasprintf("%s/cellbox/policies", xdg);
	else if (home && *home)
		dirs[k++] = xasprintf("%s/.config/cellbox/policies", home);
	if (exe) {
		/* The build tree (build/tui/cellbox, build/engine/policies) and a relocated install. */
		dirs[k++] = xasprintf("%s/../engine/policies", exe);
		dirs[k++] = xasprintf("%s/../share/cellbox/policies", exe);
		free(exe);
	}
	dirs[k++] = xstrdup(CELLBOX_POLICIES_DIR);
	dirs[k] = NULL;
	return dirs;
}

/* Free a policy_dirs() list. */
static void free_dirs(char **dirs)
{
	for (char **d = dirs; *d; d++)
		free(*d);
	free(dirs);
}

/* Order names. */
static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void policy_list(struct strbuf *out)
{
	char **dirs = policy_dirs(), **names = NULL;
	struct strbuf seen = STRBUF_INIT;
	size_t count = 0;

	strbuf_addch(&seen, ',');
	for (char **d = dirs; *d; d++) {
		DIR *dir = opendir(*d);
		struct dirent *e;

		while (dir && (e = readdir(dir))) {
			size_t n = strlen(e->d_name);
			char key[300];

			if (n <= 7 || n > 200 || strcmp(e->d_name + n - 7, ".policy"))
				continue;
			snprintf(key, sizeof(key), ",%.*s,", (int)(n - 7), e->d_name);
			if (strstr(seen.buf, key))
				continue;
			strbuf_addstr(&seen, key + 1);
			names = xrealloc(names, (count + 1) * sizeof(*names));
			names[count++] = xstrndup(e->d_name, n - 7);
		}
		if (dir)
			closedir(dir);
	}
	if (count > 1)
		qsort(names, count, sizeof(*names), by_name);
	for (size_t i = 0; i < count; i++) {
		strbuf_addf(out, "%s%s", i ? ", " : "", names[i]);
		free(names[i]);
	}
	free(names);
	strbuf_release(&seen);
	free_dirs(dirs);
}

/* Read and parse one file; NULL with `err` set. */
static struct policy *load_file(const char *path, const char *name, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	struct policy *p = NULL;

	if (strbuf_read_file(&text, path, MAX_POLICY_FILE) < 0) {
		strbuf_addf(err, "cannot read policy '%s': %s", path, strerror(errno));
	} else if (memchr(text.buf, '\0', text.len) || !utf8_valid(text.buf, text.len, NULL)) {
		strbuf_addf(err, "policy '%s' is not UTF-8 text", path);
	} else if ((p = policy_parse(text.buf, path, err))) {
		p->name = xstrdup(name);
		p->source = xstrdup(path);
	}
	strbuf_release(&text);
	return p;
}

struct policy *policy_load(const char *arg, struct strbuf *err)
{
	size_t n = strlen(arg);
	char **dirs;
	struct policy *p = NULL;

	if (strchr(arg, '/') || (n > 7 && !strcmp(arg + n - 7, ".policy"))) {
		const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
		size_t bn = strlen(base);
		char *name = xstrndup(base, bn > 7 && !strcmp(base + bn - 7, ".policy") ? bn - 7 : bn);

		p = load_file(arg, name, err);
		free(name);
		return p;
	}
	if (!n || strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n) {
		strbuf_addf(err, "'%s' is not a policy name (letters, digits, '-' and '_'; or give "
			    "a FILE.policy)", arg);
		return NULL;
	}
	dirs = policy_dirs();
	for (char **d = dirs; *d; d++) {
		char *path = xasprintf("%s/%s.policy", *d, arg);

		if (access(path, F_OK) == 0) {
			p = load_file(path, arg, err);
			free(path);
			free_dirs(dirs);
			return p;
		}
		free(path);
	}
	free_dirs(dirs);
	strbuf_addf(err, "no policy '%s' (the policies there are: ", arg);
	n = err->len;
	policy_list(err);
	if (err->len == n)
		strbuf_addstr(err, "none");
	strbuf_addstr(err, "; or give a FILE.policy)");
	return NULL;
}

cJSON *policy_hook_request(const struct policy *p)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "modules");
	int any = 0;

	cJSON_AddStringToObject(o, "policy", p->name);
	for (size_t i = 0; i < p->nmodules; i++) {
		cJSON *m;

		if (!policy_blocks(p, p->modules[i].severity))
			continue;
		m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "name", p->modules[i].name);
		cJSON_AddStringToObject(m, "description", p->modules[i].description);
		cJSON_AddStringToObject(m, "severity", policy_severity_name(p->modules[i].severity));
		cJSON_AddItemToArray(arr, m);
		any = 1;
	}
	if (!any) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
