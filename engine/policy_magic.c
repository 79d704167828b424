/* The policy's reading of magics and escapes, as IPython runs them (see policy_scan.h). */
#include "policy_scan.h"
#include "policy_ipython.h"

#include <string.h>

/* The call a magic of one argument is read as: %%writefile F is open("F", "w"). */
static const struct {
	const char *open, *close;
} forms[] = {
	[MAGIC_WRITE] = { "open(", ", \"w\")" },
	[MAGIC_READ] = { "open(", ")" },
	[MAGIC_CHDIR] = { "os.chdir(", ")" },
	[MAGIC_ENV] = { "os.environ[", "]" },
};

/* The first character of p..end that is not a space or a tab (or end). */
static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Where the word at p ends: its first space or tab (or end). */
static const char *word_end(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

/*
 * A magic as IPython runs it: `name` with its `args` (args_off: their offset in `f` when
 * they are a slice of it, else NO_OFF) and, for a cell magic, its `body` (at body_off).
 */
void policy_magic_scan(struct scan *sc, const struct frag *f, size_t off, int cell,
		const char *name, size_t nn, const char *args, size_t na, size_t args_off,
		const char *body, size_t nb, size_t body_off)
{
	const struct ipython_magic *m = policy_ipython_magic_find(name, nn, cell);
	struct strbuf sb = STRBUF_INIT, what = STRBUF_INIT;

	if (!m)
		return;		/* IPython's display magics and the user's own: nothing to check */
	strbuf_addf(&what, "%s%.*s", cell ? "%%" : "%", (int)nn, name);
	switch (m->kind) {
	case MAGIC_SHELL:
		/* The command the shell gets: the alias's own name first (%ls -l is `ls -l`). */
		if (m->named)
			strbuf_addf(&sb, "%.*s ", (int)nn, name);
		strbuf_add(&sb, args, na);
		if (cell) {
			if (sb.len)
				strbuf_addch(&sb, '\n');
			strbuf_add(&sb, body, nb);
		}
		policy_scan_form(sc, f, off, "os.system(", sb.buf, sb.len, ")");
		break;
	case MAGIC_CODE:
		if (args_off != NO_OFF)
			policy_scan_slice(sc, f, args_off, args_off + na, 1);
		else
			policy_scan_made(sc, f, off, args, na, 1);
		if (cell) {
			if (body_off != NO_OFF)
				policy_scan_slice(sc, f, body_off, body_off + nb, 1);
			else
				policy_scan_made(sc, f, off, body, nb, 1);
		}
		break;
	case MAGIC_RUN: {
		const char *p = args, *end = args + na;

		policy_scan_form(sc, f, off, "exec(open(", args, na, ").read())");
		/* %run -m MODULE runs a module: an import. */
		while (p < end) {
			const char *w = skip_blanks(p, end);
			p = word_end(w, end);
			if (p - w == 2 && !memcmp(w, "-m", 2)) {
				const char *mod = skip_blanks(p, end);
				p = word_end(mod, end);
				policy_scan_module(sc, f, off, mod, (size_t)(p - mod), what.buf, what.len);
				break;
			}
		}
		break;
	}
	case MAGIC_WRITE:
	case MAGIC_READ:
	case MAGIC_CHDIR:
	case MAGIC_ENV:
		policy_scan_form(sc, f, off, forms[m->kind].open, args, na, forms[m->kind].close);
		break;
	case MAGIC_IMPORT:
		if (m->modules) {
			for (const char *mod = m->modules; *mod; mod += strlen(mod) + 1)
				policy_scan_module(sc, f, off, mod, strlen(mod), what.buf, what.len);
		} else {
			const char *mod = skip_blanks(args, args + na), *e = word_end(mod, args + na);
			strbuf_addf(&what, " %.*s", (int)(e - mod), mod);
			policy_scan_module(sc, f, off, mod, (size_t)(e - mod), what.buf, what.len);
		}
		break;
	case MAGIC_DYNAMIC:
		policy_scan_dynamic(sc, f, off, what.buf, what.len, m->why);
		break;
	}
	strbuf_release(&sb);
	strbuf_release(&what);
}

/*
 * An escaped line f->text[a..b) (`!cmd`, `!!cmd`, `%magic args`, `,f a b`, `;f a b`, `/f a b`,
 * `?obj`), read as IPython's EscapedCommand transforms it.
 */
void policy_magic_escape(struct scan *sc, const struct frag *f, size_t a, size_t b)
{
	struct strbuf line = STRBUF_INIT, made = STRBUF_INIT;
	const char *s = f->text;
	int joined = 0;
	const char *content, *sp;
	size_t n;

	/* Backslash-continued pieces are joined with a space, as IPython assembles them. */
	for (size_t i = a; i < b; i++) {
		size_t back = line.len;
		if (s[i] == '\n') {
			while (back && line.buf[back - 1] == '\r')
				back--;
			if (back && line.buf[back - 1] == '\\')
				back--;
			line.len = back;
			line.buf[back] = '\0';
			while (line.len && (line.buf[line.len - 1] == ' ' || line.buf[line.len - 1] == '\t'))
				line.buf[--line.len] = '\0';
			strbuf_addch(&line, ' ');
			joined = 1;
			continue;
		}
		strbuf_addch(&line, s[i]);
	}
	while (line.len && line.buf[line.len - 1] && strchr(" \t\r\f\v", line.buf[line.len - 1]))
		line.buf[--line.len] = '\0';
	if (line.len >= 2 && (!strncmp(line.buf, "!!", 2) || !strncmp(line.buf, "??", 2)))
		n = 2;
	else
		n = 1;
	content = line.buf + n;
	switch (line.buf[0]) {
	case '!':
		policy_scan_form(sc, f, a, "os.system(", content, strlen(content), ")");
		break;
	case '%': {
		size_t nn, na;

		sp = strchr(content, ' ');
		nn = sp ? (size_t)(sp - content) : strlen(content);
		na = sp ? strlen(sp + 1) : 0;
		policy_magic_scan(sc, f, a, 0, content, nn, sp ? sp + 1 : "", na,
			  sp && !joined ? a + 1 + nn + 1 : NO_OFF, NULL, 0, NO_OFF);
		break;
	}
	case ',':
	case ';':
	case '/': {
		/* IPython pastes the text in as it is: `;f a" + b` is f("a" + b"). */
		size_t nn;
		const char *args;
		int first = 1;

		sp = strchr(content, ' ');
		nn = sp ? (size_t)(sp - content) : strlen(content);
		args = sp ? sp + 1 : "";
		strbuf_add(&made, content, nn);
		if (line.buf[0] == ';') {
			strbuf_addf(&made, "(\"%s\")", args);
		} else {
			strbuf_addstr(&made, line.buf[0] == ',' ? "(\"" : "(");
			for (const char *w = args; *w;) {
				size_t wl;
				w += strspn(w, " \t\n\r\f\v");
				wl = strcspn(w, " \t\n\r\f\v");
				if (!wl)
					break;
				if (!first)
					strbuf_addstr(&made, line.buf[0] == ',' ? "\", \"" : ", ");
				strbuf_add(&made, w, wl);
				first = 0;
				w += wl;
			}
			strbuf_addstr(&made, line.buf[0] == ',' ? "\")" : ")");
		}
		policy_scan_made(sc, f, a, made.buf, made.len, 0);
		break;
	}
	default:
		break;		/* ? and ??: help, which runs nothing */
	}
	strbuf_release(&line);
	strbuf_release(&made);
}

