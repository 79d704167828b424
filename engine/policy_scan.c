/*
 * The policy's analysis of a cell (policy_check in policy.h): IPython's syntax read as IPython
 * transforms it, imports and dynamic code found in the tokens, patterns run over views of the
 * code where comments (and, for most patterns, string contents) are blanked.
 *
 * A cell is read as fragments: the cell itself, then what it hides from a plain reading (the
 * code of a string given to exec, the command of `!cmd` as os.system("cmd"), the code of
 * %time). A fragment is a slice of the cell (its positions are exact) or made text (whose
 * findings are placed at the construct it came from).
 */
#include "policy.h"
#include "policy_ipython.h"
#include "pylex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 12			/* fragments within fragments */
#define MAX_NEST 64			/* f-strings within f-string fields */
#define MAX_VIOLATIONS 1000
#define MAX_CELL (16u << 20)
#define MAX_WHAT 72

struct scan {
	const struct policy *p;
	const char *root;		/* the cell */
	size_t root_len;
	size_t *lines;			/* offsets where the cell's lines start */
	size_t nlines;
	struct policy_verdict *v;
	pcre2_match_data *md;
	int nest;
	struct strbuf what_buf;		/* add()'s scratch */
};

struct frag {
	const char *text;
	size_t len;
	int ipython;			/* IPython's syntax (else plain Python: exec's code) */
	int exact;			/* text[i] is root[base + i]; else findings go to `base` */
	size_t base;
	int depth;
	char *code;			/* comments and string contents blanked */
	char *lit;			/* comments blanked */
	const char *origin;		/* made text: the code of the cell it stands for */
	size_t origin_len;
};

/* Names that run code or import modules named at run time. */
static const char *const dynamic_builtins[] = { "exec", "eval", "compile", "__import__", "execfile" };

/* ---- violations and positions ---- */

/* Where root offset `off` is: 1-based line and column (in characters). */
static void position(struct scan *sc, size_t off, unsigned *line, unsigned *col)
{
	size_t lo = 0, hi, start, chars = 0;

	if (!sc->lines) {
		size_t n = 1;
		for (size_t i = 0; i < sc->root_len; i++)
			n += sc->root[i] == '\n';
		sc->lines = xmalloc(n * sizeof(*sc->lines));
		sc->lines[sc->nlines++] = 0;
		for (size_t i = 0; i < sc->root_len; i++)
			if (sc->root[i] == '\n')
				sc->lines[sc->nlines++] = i + 1;
	}
	if (off > sc->root_len)
		off = sc->root_len;
	hi = sc->nlines;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (sc->lines[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	start = sc->lines[lo];
	for (size_t i = start; i < off; i++)
		chars += ((unsigned char)sc->root[i] & 0xc0) != 0x80;
	*line = (unsigned)lo + 1;
	*col = (unsigned)chars + 1;
}

/* The cell offset of fragment offset `off`. */
static size_t root_offset(const struct frag *f, size_t off)
{
	return f->exact ? f->base + off : f->base;
}

/* Record a violation at fragment offset `off`; `what` is the code it is about. */
static void add(struct scan *sc, const struct frag *f, size_t off, enum policy_kind kind,
		size_t rule, enum policy_severity sev, const char *what, size_t n,
		const char *description)
{
	struct policy_verdict *v = sc->v;
	struct policy_violation *x;
	struct strbuf w = STRBUF_INIT;
	unsigned line, col;

	position(sc, root_offset(f, off), &line, &col);
	if (!f->exact && f->origin) {
		/* Made text: name the cell's code, and how it was read. */
		struct strbuf sb = STRBUF_INIT;
		size_t ml = f->len > MAX_WHAT ? MAX_WHAT : f->len;

		strbuf_add(&sb, f->origin, f->origin_len > MAX_WHAT ? MAX_WHAT : f->origin_len);
		strbuf_addstr(&sb, " (read as ");
		strbuf_add(&sb, f->text, ml);
		strbuf_addstr(&sb, ml < f->len ? "...)" : ")");
		what = sb.buf;
		n = sb.len;
		sc->what_buf = sb;	/* freed below */
	}
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i].kind == kind && v->v[i].rule == rule && v->v[i].line == line &&
		    v->v[i].column == col) {
			strbuf_release(&sc->what_buf);
			return;
		}
	if (v->n >= MAX_VIOLATIONS) {
		strbuf_release(&sc->what_buf);
		return;
	}
	for (size_t i = 0; i < n && w.len < 3 * MAX_WHAT; i++) {
		unsigned char c = (unsigned char)what[i];
		strbuf_addch(&w, c < 0x20 || c == 0x7f ? ' ' : c);
	}
	if (n > 3 * MAX_WHAT) {
		while (w.len && ((unsigned char)w.buf[w.len - 1] & 0xc0) == 0x80)
			w.buf[--w.len] = '\0';	/* never cut a character in two */
		if (w.len)
			w.buf[--w.len] = '\0';
		strbuf_addstr(&w, "...");
	}
	if (v->n == v->alloc) {
		v->alloc = v->alloc ? 2 * v->alloc : 8;
		v->v = xrealloc(v->v, v->alloc * sizeof(*v->v));
	}
	x = &v->v[v->n++];
	x->kind = kind;
	x->rule = rule;
	x->severity = sev;
	x->line = line;
	x->column = col;
	x->what = strbuf_detach(&w, NULL);
	x->description = xstrdup(description);
	if (policy_blocks(sc->p, sev))
		v->blocked = 1;
	strbuf_release(&sc->what_buf);
}

/* Report dynamic code at fragment offset `off`. */
static void add_dynamic(struct scan *sc, const struct frag *f, size_t off, const char *what,
			size_t n, const char *description)
{
	add(sc, f, off, POLICY_V_DYNAMIC, 0, sc->p->dynamic, what, n, description);
}

/* Check an imported module name against the restricted ones (a module covers its submodules). */
static void check_module(struct scan *sc, const struct frag *f, size_t off, const char *name,
			 size_t n, const char *what, size_t wn)
{
	for (size_t i = 0; i < sc->p->nmodules; i++) {
		const struct policy_module *m = &sc->p->modules[i];
		size_t mn = strlen(m->name);

		if (n >= mn && !memcmp(name, m->name, mn) && (n == mn || name[mn] == '.'))
			add(sc, f, off, POLICY_V_MODULE, i, m->severity, what, wn, m->description);
	}
}

/* ---- fragments ---- */

static void scan_frag(struct scan *sc, struct frag *f);

/* Read made text as a fragment; its findings are placed at `off` of `f`. */
static void scan_made(struct scan *sc, const struct frag *f, size_t off, const char *text,
		      size_t len, int ipython)
{
	struct frag sub = { text, len, ipython, 0, root_offset(f, off), f->depth + 1, NULL, NULL,
			    f->origin, f->origin_len };

	if (f->exact) {
		/* What it stands for: the cell's code from `off` to the end of its line. */
		size_t e = off;
		while (e < f->len && f->text[e] != '\n')
			e++;
		sub.origin = f->text + off;
		sub.origin_len = e - off;
	}
	scan_frag(sc, &sub);
}

/* Read f->text[a..b) as a fragment of its own. */
static void scan_slice(struct scan *sc, const struct frag *f, size_t a, size_t b, int ipython)
{
	struct frag sub = { f->text + a, b - a, ipython, f->exact, f->exact ? f->base + a : f->base,
			    f->depth + 1, NULL, NULL, f->origin, f->origin_len };

	scan_frag(sc, &sub);
}

/* Append s[0..n) as a Python string literal. */
static void add_repr(struct strbuf *sb, const char *s, size_t n)
{
	strbuf_addch(sb, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\' || c == '"')
			strbuf_addf(sb, "\\%c", c);
		else if (c == '\n')
			strbuf_addstr(sb, "\\n");
		else if (c < 0x20 || c == 0x7f)
			strbuf_addf(sb, "\\x%02x", c);
		else
			strbuf_addch(sb, c);
	}
	strbuf_addch(sb, '"');
}

/* Read `form(repr(arg)tail` (such as os.system("cmd")) as made Python at `off`. */
static void scan_form(struct scan *sc, const struct frag *f, size_t off, const char *form,
		      const char *arg, size_t n, const char *tail)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, form);
	add_repr(&sb, arg, n);
	strbuf_addstr(&sb, tail);
	scan_made(sc, f, off, sb.buf, sb.len, 0);
	strbuf_release(&sb);
}

/* ---- IPython: magics and escapes ---- */

/*
 * A magic as IPython runs it: `name` with its `args` (args_off: their offset in `f` when
 * they are a slice of it, else NO_OFF) and, for a cell magic, its `body` (at body_off).
 */
#define NO_OFF ((size_t)-1)
static void run_magic(struct scan *sc, const struct frag *f, size_t off, int cell,
		      const char *name, size_t nn, const char *args, size_t na, size_t args_off,
		      const char *body, size_t nb, size_t body_off)
{
	const struct ipython_magic *m = ipython_magic_find(name, nn, cell);
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
		scan_form(sc, f, off, "os.system(", sb.buf, sb.len, ")");
		break;
	case MAGIC_CODE:
		if (args_off != NO_OFF)
			scan_slice(sc, f, args_off, args_off + na, 1);
		else
			scan_made(sc, f, off, args, na, 1);
		if (cell) {
			if (body_off != NO_OFF)
				scan_slice(sc, f, body_off, body_off + nb, 1);
			else
				scan_made(sc, f, off, body, nb, 1);
		}
		break;
	case MAGIC_RUN: {
		const char *p = args, *end = args + na;

		scan_form(sc, f, off, "exec(open(", args, na, ").read())");
		/* %run -m MODULE runs a module: an import. */
		while (p < end) {
			const char *w = p;
			while (w < end && (*w == ' ' || *w == '\t'))
				w++;
			p = w;
			while (p < end && *p != ' ' && *p != '\t')
				p++;
			if (p - w == 2 && !memcmp(w, "-m", 2)) {
				const char *mod = p;
				while (mod < end && (*mod == ' ' || *mod == '\t'))
					mod++;
				p = mod;
				while (p < end && *p != ' ' && *p != '\t')
					p++;
				check_module(sc, f, off, mod, (size_t)(p - mod), what.buf, what.len);
				break;
			}
		}
		break;
	}
	case MAGIC_WRITE:
		scan_form(sc, f, off, "open(", args, na, ", \"w\")");
		break;
	case MAGIC_READ:
		scan_form(sc, f, off, "open(", args, na, ")");
		break;
	case MAGIC_CHDIR:
		scan_form(sc, f, off, "os.chdir(", args, na, ")");
		break;
	case MAGIC_ENV:
		scan_form(sc, f, off, "os.environ[", args, na, "]");
		break;
	case MAGIC_IMPORT:
		if (m->modules) {
			for (const char *mod = m->modules; *mod; mod += strlen(mod) + 1)
				check_module(sc, f, off, mod, strlen(mod), what.buf, what.len);
		} else {
			const char *mod = args, *end = args + na, *e;
			while (mod < end && (*mod == ' ' || *mod == '\t'))
				mod++;
			for (e = mod; e < end && *e != ' ' && *e != '\t'; e++)
				;
			strbuf_addf(&what, " %.*s", (int)(e - mod), mod);
			check_module(sc, f, off, mod, (size_t)(e - mod), what.buf, what.len);
		}
		break;
	case MAGIC_DYNAMIC:
		add_dynamic(sc, f, off, what.buf, what.len, m->why);
		break;
	}
	strbuf_release(&sb);
	strbuf_release(&what);
}

/*
 * An escaped line f->text[a..b) (`!cmd`, `!!cmd`, `%magic args`, `,f a b`, `;f a b`, `/f a b`,
 * `?obj`), read as IPython's EscapedCommand transforms it.
 */
static void run_escape(struct scan *sc, const struct frag *f, size_t a, size_t b)
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
	while (line.len && strchr(" \t\r\f\v", line.buf[line.len - 1]))
		line.buf[--line.len] = '\0';
	if (line.len >= 2 && (!strncmp(line.buf, "!!", 2) || !strncmp(line.buf, "??", 2)))
		n = 2;
	else
		n = 1;
	content = line.buf + n;
	switch (line.buf[0]) {
	case '!':
		scan_form(sc, f, a, "os.system(", content, strlen(content), ")");
		break;
	case '%': {
		size_t nn, na;

		sp = strchr(content, ' ');
		nn = sp ? (size_t)(sp - content) : strlen(content);
		na = sp ? strlen(sp + 1) : 0;
		run_magic(sc, f, a, 0, content, nn, sp ? sp + 1 : "", na,
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
		scan_made(sc, f, a, made.buf, made.len, 0);
		break;
	}
	default:
		break;		/* ? and ??: help, which runs nothing */
	}
	strbuf_release(&line);
	strbuf_release(&made);
}

/* ---- tokens ---- */

/* The next token, with offsets made relative to the fragment (`base` of the range). */
static enum py_tok next(struct pylex *lx, struct py_token *t, size_t base)
{
	enum py_tok type = pylex_next(lx, t);

	t->start += base;
	t->end += base;
	t->body += base;
	t->body_end += base;
	return type;
}

/* The next token that is not a comment or a line break inside brackets. */
static enum py_tok next_code(struct pylex *lx, struct py_token *t, size_t base)
{
	enum py_tok type;

	do
		type = next(lx, t, base);
	while (type == PY_COMMENT || type == PY_NL);
	return type;
}

static int is_text(const struct frag *f, const struct py_token *t, const char *s)
{
	size_t n = strlen(s);
	return t->end - t->start == n && !memcmp(f->text + t->start, s, n);
}

static int is_op(const struct frag *f, const struct py_token *t, const char *s)
{
	return t->type == PY_OP && is_text(f, t, s);
}

/* Blank f's views over [a, b): `both` for comments and escapes, else only the code view. */
static void blank(struct frag *f, size_t a, size_t b, int both)
{
	for (size_t i = a; i < b && i < f->len; i++) {
		if (f->text[i] == '\n')
			continue;
		f->code[i] = ' ';
		if (both)
			f->lit[i] = ' ';
	}
}

/*
 * Decode a string literal token into `out` (UTF-8). Returns 1 when the value is the token's
 * body byte for byte, 0 when escapes changed it, -1 when it cannot be known here (\N{...},
 * an f-string with fields, an unclosed string).
 */
static int decode_string(const struct frag *f, const struct py_token *t, struct strbuf *out)
{
	const char *s = f->text;
	int same = 1;

	if (t->flags & PY_STR_OPEN)
		return -1;
	for (size_t i = t->body; i < t->body_end; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned long cp = 0;
		int digits = 0, base = 0;

		if ((t->flags & PY_STR_F) && (c == '{' || c == '}'))
			return -1;
		if (c != '\\' || (t->flags & PY_STR_RAW)) {
			strbuf_addch(out, c);
			continue;
		}
		same = 0;
		if (++i >= t->body_end)
			return -1;
		c = (unsigned char)s[i];
		switch (c) {
		case '\n': continue;
		case '\r': if (i + 1 < t->body_end && s[i + 1] == '\n') i++; continue;
		case 'a': strbuf_addch(out, '\a'); continue;
		case 'b': strbuf_addch(out, '\b'); continue;
		case 'f': strbuf_addch(out, '\f'); continue;
		case 'n': strbuf_addch(out, '\n'); continue;
		case 'r': strbuf_addch(out, '\r'); continue;
		case 't': strbuf_addch(out, '\t'); continue;
		case 'v': strbuf_addch(out, '\v'); continue;
		case '\\': case '\'': case '"': strbuf_addch(out, c); continue;
		case 'x': digits = 2; base = 16; break;
		case 'u': digits = (t->flags & PY_STR_BYTES) ? 0 : 4; base = 16; break;
		case 'U': digits = (t->flags & PY_STR_BYTES) ? 0 : 8; base = 16; break;
		case 'N': return -1;
		default:
			if (c >= '0' && c <= '7') {
				digits = 3;
				base = 8;
				i--;
				break;
			}
			strbuf_addch(out, '\\');	/* an unknown escape stays as it is */
			strbuf_addch(out, c);
			continue;
		}
		if (!digits) {
			strbuf_addch(out, '\\');
			strbuf_addch(out, c);
			continue;
		}
		{
			int got = 0;
			while (got < digits && i + 1 < t->body_end) {
				char d = s[i + 1];
				int v = d >= '0' && d <= '9' ? d - '0' : (d | 0x20) >= 'a' &&
					(d | 0x20) <= 'f' ? (d | 0x20) - 'a' + 10 : 99;
				if (v >= base)
					break;
				cp = cp * (unsigned long)base + (unsigned long)v;
				i++;
				got++;
			}
			if (!got || (base == 16 && got < digits))
				return -1;
		}
		if (cp < 0x80 || (t->flags & PY_STR_BYTES)) {
			strbuf_addch(out, (int)(cp & 0xff));
		} else if (cp < 0x800) {
			strbuf_addch(out, (int)(0xc0 | (cp >> 6)));
			strbuf_addch(out, (int)(0x80 | (cp & 0x3f)));
		} else if (cp < 0x10000) {
			strbuf_addch(out, (int)(0xe0 | (cp >> 12)));
			strbuf_addch(out, (int)(0x80 | ((cp >> 6) & 0x3f)));
			strbuf_addch(out, (int)(0x80 | (cp & 0x3f)));
		} else if (cp < 0x110000) {
			strbuf_addch(out, (int)(0xf0 | (cp >> 18)));
			strbuf_addch(out, (int)(0x80 | ((cp >> 12) & 0x3f)));
			strbuf_addch(out, (int)(0x80 | ((cp >> 6) & 0x3f)));
			strbuf_addch(out, (int)(0x80 | (cp & 0x3f)));
		} else {
			return -1;
		}
	}
	return same;
}

/* A call's first argument when it is string literals only. */
struct literal {
	struct strbuf value;
	size_t start;		/* the first string token */
	size_t body, body_end;	/* when `exact`: the value is text[body..body_end) */
	int exact;
};

/*
 * After a call's `(` (lx just past it): read the first argument (or keyword `kw`) when it is
 * adjacent string literals, maybe in parentheses. Returns 1 with *lit filled, 0 when the
 * argument is something else, -1 when the call has no argument. lx is left where it stopped.
 */
static int first_literal(const struct frag *f, struct pylex *lx, size_t base, const char *kw,
			 struct literal *lit)
{
	struct py_token t;
	int parens = 0, strings = 0, rc;

	strbuf_init(&lit->value, 0);
	lit->exact = 0;
	next_code(lx, &t, base);
	if (is_op(f, &t, ")"))
		return -1;
	if (kw && t.type == PY_NAME && is_text(f, &t, kw)) {
		struct pylex save = *lx;
		struct py_token eq;
		next_code(lx, &eq, base);
		if (!is_op(f, &eq, "=")) {
			*lx = save;
		} else {
			next_code(lx, &t, base);
		}
	}
	while (is_op(f, &t, "(")) {
		parens++;
		next_code(lx, &t, base);
	}
	lit->start = t.start;
	while (t.type == PY_STRING) {
		rc = decode_string(f, &t, &lit->value);
		if (rc < 0)
			return 0;
		lit->exact = strings == 0 && rc == 1;
		lit->body = t.body;
		lit->body_end = t.body_end;
		strings++;
		next_code(lx, &t, base);
	}
	if (strings != 1)
		lit->exact = 0;
	while (parens && is_op(f, &t, ")")) {
		parens--;
		next_code(lx, &t, base);
	}
	return strings && !parens && (is_op(f, &t, ",") || is_op(f, &t, ")") || is_op(f, &t, "]"));
}

/* Parse `import a.b as c, d` (lx past `import`); advances lx to its end. */
static void parse_import(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
			 size_t start)
{
	struct py_token t;

	for (;;) {
		struct pylex save;
		size_t a, e;

		if (next_code(lx, &t, base) != PY_NAME)
			return;
		a = e = t.start;
		for (;;) {
			e = t.end;
			save = *lx;
			next_code(lx, &t, base);
			if (!is_op(f, &t, "."))
				break;
			if (next_code(lx, &t, base) != PY_NAME)
				return;
		}
		check_module(sc, f, a, f->text + a, e - a, f->text + start, e - start);
		if (t.type == PY_NAME && is_text(f, &t, "as")) {
			next_code(lx, &t, base);	/* the alias */
			save = *lx;
			next_code(lx, &t, base);
		}
		if (!is_op(f, &t, ",")) {
			*lx = save;
			return;
		}
	}
}

/* Parse `from X import a, (b as c), *` (lx past `from`); a `from` of another kind is left. */
static void parse_from(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
		       size_t start)
{
	struct pylex look = *lx, save;
	struct py_token t;
	struct strbuf full = STRBUF_INIT;
	size_t a = 0, e = 0, last, names[256], name_len[256], nnames = 0;
	int level = 0, builtins;

	next_code(&look, &t, base);
	while (is_op(f, &t, ".") || is_op(f, &t, "...")) {
		level += (int)(t.end - t.start);
		next_code(&look, &t, base);
	}
	if (t.type == PY_NAME && !is_text(f, &t, "import")) {
		a = t.start;
		for (;;) {
			e = t.end;
			next_code(&look, &t, base);
			if (!is_op(f, &t, "."))
				break;
			if (next_code(&look, &t, base) != PY_NAME)
				return;
		}
	}
	if (t.type != PY_NAME || !is_text(f, &t, "import"))
		return;		/* `raise E from e`, `yield from g` */
	*lx = look;
	last = t.end;
	builtins = e - a == 8 && !memcmp(f->text + a, "builtins", 8);
	save = *lx;
	if (next_code(lx, &t, base) == PY_OP && is_op(f, &t, "("))
		save = *lx;
	else
		*lx = save;
	for (;;) {
		if (next_code(lx, &t, base) == PY_OP && is_op(f, &t, "*")) {
			last = t.end;
			break;
		}
		if (t.type != PY_NAME) {
			if (is_op(f, &t, ")"))
				last = t.end;
			else
				*lx = save;
			break;
		}
		last = t.end;
		if (nnames < ARRAY_SIZE(names)) {
			names[nnames] = t.start;
			name_len[nnames++] = t.end - t.start;
		}
		for (size_t k = 0; builtins && k < ARRAY_SIZE(dynamic_builtins); k++)
			if (is_text(f, &t, dynamic_builtins[k]))
				add_dynamic(sc, f, t.start, f->text + start, t.end - start,
					    "a builtin that runs code, taken under a name of its own");
		save = *lx;
		next_code(lx, &t, base);
		if (t.type == PY_NAME && is_text(f, &t, "as")) {
			next_code(lx, &t, base);
			last = t.end;
			save = *lx;
			next_code(lx, &t, base);
		}
		if (is_op(f, &t, ",")) {
			save = *lx;
			continue;
		}
		if (is_op(f, &t, ")"))
			last = t.end;
		else
			*lx = save;
		break;
	}
	if (level || e == a)
		return;		/* relative: a cell has no package to be relative to */
	/* The module, and each name as the submodule it may be; one violation a rule. */
	check_module(sc, f, a, f->text + a, e - a, f->text + start, last - start);
	for (size_t k = 0; k < nnames; k++) {
		strbuf_reset(&full);
		strbuf_addf(&full, "%.*s.%.*s", (int)(e - a), f->text + a, (int)name_len[k],
			    f->text + names[k]);
		check_module(sc, f, a, full.buf, full.len, f->text + start, last - start);
	}
	strbuf_release(&full);
}

/* ---- calls that run code or import by name ---- */

/* The literal argument of a call whose `(` lx is at: 1 with *lit (released by the caller). */
static int call_literal(const struct frag *f, struct pylex *lx, size_t base, const char *kw,
			struct literal *lit)
{
	struct py_token t;

	if (next_code(lx, &t, base) != PY_OP || !is_op(f, &t, "(")) {
		strbuf_init(&lit->value, 0);
		return -2;	/* not a call */
	}
	return first_literal(f, lx, base, kw, lit);
}

/* Read a literal's code (exec, eval, run_cell of a string) as a fragment. */
static void scan_literal(struct scan *sc, const struct frag *f, const struct literal *lit,
			 int ipython)
{
	if (lit->exact)
		scan_slice(sc, f, lit->body, lit->body_end, ipython);
	else
		scan_made(sc, f, lit->start, lit->value.buf, lit->value.len, ipython);
}

/* The code from `a` to where lx stopped, for messages. */
static size_t span(const struct frag *f, const struct pylex *lx, size_t base, size_t a)
{
	size_t e = lx->pos + base;
	return e > a && e <= f->len ? e - a : 0;
}

/* exec, eval, compile, __import__ (t), not an attribute of anything but builtins. */
static void on_builtin(struct scan *sc, const struct frag *f, struct pylex *lx, size_t base,
		       const struct py_token *t)
{
	struct pylex look = *lx;
	struct py_token n;
	struct literal lit;
	int is_import = is_text(f, t, "__import__"), rc;

	next_code(&look, &n, base);
	if (is_op(f, &n, "="))
		return;		/* exec=... as a keyword argument or a new binding */
	look = *lx;
	rc = call_literal(f, &look, base, is_import ? "name" : "source", &lit);
	if (rc == -2) {
		add_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "a builtin that runs code, taken as a value (it can be called under "
			    "another name)");
	} else if (rc == 1 && is_import) {
		check_module(sc, f, t->start, lit.value.buf, lit.value.len, f->text + t->start,
			     span(f, &look, base, t->start));
	} else if (rc == 1 && !is_text(f, t, "execfile")) {
		scan_literal(sc, f, &lit, 0);
	} else if (rc == 0 || rc == 1) {
		add_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
			    is_import ? "an import of a name computed at run time (the import hook "
					"checks it)"
				      : "code computed at run time");
	}
	strbuf_release(&lit.value);
}

/* importlib.import_module(...), import_module(...), runpy.run_module(...): `t` is the callee. */
static void on_import_call(struct scan *sc, const struct frag *f, struct pylex *look, size_t base,
			   size_t at, int by_path)
{
	struct literal lit;
	int rc = call_literal(f, look, base, "name", &lit);

	if (rc == 1 && !by_path)
		check_module(sc, f, at, lit.value.buf, lit.value.len, f->text + at,
			     span(f, look, base, at));
	else if (rc == 0 || rc == 1)
		add_dynamic(sc, f, at, f->text + at, span(f, look, base, at),
			    by_path ? "code read from a file at run time"
				    : "an import of a name computed at run time (the import hook "
				      "checks it)");
	strbuf_release(&lit.value);
}

/* `NAME . attr`: the attribute's token when lx is at such a dot. */
static int attribute(const struct frag *f, struct pylex *lx, size_t base, struct py_token *attr)
{
	struct py_token t;

	return next_code(lx, &t, base) == PY_OP && is_op(f, &t, ".") &&
	       next_code(lx, attr, base) == PY_NAME;
}

/* The IPython shell's methods that run commands or code. */
static void on_get_ipython(struct scan *sc, const struct frag *f, struct pylex *lx, size_t base,
			   const struct py_token *t)
{
	struct pylex look = *lx;
	struct py_token a, b, m;
	struct literal l1, l2, l3;
	int rc = -3;

	strbuf_init(&l1.value, 0);
	strbuf_init(&l2.value, 0);
	strbuf_init(&l3.value, 0);
	if (next_code(&look, &a, base) != PY_OP || !is_op(f, &a, "(") ||
	    next_code(&look, &b, base) != PY_OP || !is_op(f, &b, ")") ||
	    !attribute(f, &look, base, &m)) {
		add_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "the IPython shell taken as a value: what its system() and run_cell() "
			    "run is not followed");
		return;
	}
	if (is_text(f, &m, "system") || is_text(f, &m, "system_raw") ||
	    is_text(f, &m, "system_piped") || is_text(f, &m, "getoutput")) {
		strbuf_release(&l1.value);
		rc = call_literal(f, &look, base, "cmd", &l1);
		scan_form(sc, f, t->start, "os.system(", rc == 1 ? l1.value.buf : "",
			  rc == 1 ? l1.value.len : 0, ")");
		if (rc == 0)
			add_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "a shell command computed at run time");
	} else if (is_text(f, &m, "run_line_magic") || is_text(f, &m, "run_cell_magic")) {
		int cell = is_text(f, &m, "run_cell_magic");

		strbuf_release(&l1.value);
		rc = call_literal(f, &look, base, "magic_name", &l1);
		if (rc == 1)
			rc = first_literal(f, &look, base, NULL, &l2);
		else
			strbuf_init(&l2.value, 0);
		if (rc == 1 && cell)
			rc = first_literal(f, &look, base, NULL, &l3);
		else
			strbuf_init(&l3.value, 0);
		if (rc == 1)
			run_magic(sc, f, t->start, cell, l1.value.buf, l1.value.len, l2.value.buf,
				  l2.value.len, NO_OFF, l3.value.buf, l3.value.len, NO_OFF);
		else if (rc == 0)
			add_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "a magic computed at run time");
	} else if (is_text(f, &m, "run_cell") || is_text(f, &m, "run_cell_async") ||
		   is_text(f, &m, "ex") || is_text(f, &m, "ev") || is_text(f, &m, "run_code") ||
		   is_text(f, &m, "runcode") || is_text(f, &m, "run_source")) {
		strbuf_release(&l1.value);
		rc = call_literal(f, &look, base, "raw_cell", &l1);
		if (rc == 1)
			scan_literal(sc, f, &l1, is_text(f, &m, "run_cell") ||
						 is_text(f, &m, "run_cell_async"));
		else if (rc == 0)
			add_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "code computed at run time");
	} else if (!is_text(f, &m, "run_line_magic")) {
		/* Other attributes (user_ns, display_pub, ...): nothing runs through them here. */
		static const char *const risky[] = {
			"register_magic_function", "define_macro", "set_hook", "set_custom_exc",
			"push", "safe_execfile", "safe_execfile_ipy", "safe_run_module", "magic",
			"find_line_magic", "find_cell_magic", "find_magic", "alias_manager",
			"magics_manager", "input_transformers_post", "input_transformer_manager",
			"prefilter_manager", "system", "kernel", "events", "ast_transformers",
		};
		for (size_t k = 0; k < ARRAY_SIZE(risky); k++)
			if (is_text(f, &m, risky[k]))
				add_dynamic(sc, f, t->start, f->text + t->start,
					    m.end - t->start, "IPython machinery that runs code the "
					    "policy does not see");
	}
	strbuf_release(&l1.value);
	strbuf_release(&l2.value);
	strbuf_release(&l3.value);
}

/* A name token: imports, and the calls that run code or import by name. */
static void on_name(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
		    const struct py_token *t, const struct py_token *prev,
		    const struct py_token *prev2)
{
	int attr = prev->type == PY_OP && is_op(f, prev, ".");
	int of_builtins = attr && prev2->type == PY_NAME &&
			  (is_text(f, prev2, "builtins") || is_text(f, prev2, "__builtins__"));
	int defined = prev->type == PY_NAME && (is_text(f, prev, "def") || is_text(f, prev, "class"));
	struct pylex look = *lx;
	struct py_token m;

	if (is_text(f, t, "import")) {
		parse_import(sc, f, lx, base, t->start);
		return;
	}
	if (is_text(f, t, "from")) {
		parse_from(sc, f, lx, base, t->start);
		return;
	}
	if ((attr && !of_builtins) || defined)
		return;
	for (size_t k = 0; k < ARRAY_SIZE(dynamic_builtins); k++)
		if (is_text(f, t, dynamic_builtins[k])) {
			on_builtin(sc, f, lx, base, t);
			return;
		}
	if (is_text(f, t, "get_ipython")) {
		on_get_ipython(sc, f, lx, base, t);
	} else if (is_text(f, t, "import_module")) {
		on_import_call(sc, f, &look, base, t->start, 0);
	} else if (is_text(f, t, "importlib") && attribute(f, &look, base, &m) &&
		   (is_text(f, &m, "import_module") || is_text(f, &m, "__import__"))) {
		on_import_call(sc, f, &look, base, t->start, 0);
	} else if (is_text(f, t, "runpy") && attribute(f, &look, base, &m) &&
		   (is_text(f, &m, "run_module") || is_text(f, &m, "run_path"))) {
		on_import_call(sc, f, &look, base, t->start, is_text(f, &m, "run_path"));
	} else if (is_text(f, t, "sys") && attribute(f, &look, base, &m) &&
		   is_text(f, &m, "modules")) {
		struct pylex at = look;
		struct py_token n;
		struct literal lit;
		int rc = -3;

		next_code(&at, &n, base);
		if (is_op(f, &n, "[")) {
			rc = first_literal(f, &at, base, NULL, &lit);
		} else if (n.type == PY_OP && is_op(f, &n, ".") && attribute(f, &look, base, &m) &&
			   (is_text(f, &m, "get") || is_text(f, &m, "pop") ||
			    is_text(f, &m, "setdefault"))) {
			rc = call_literal(f, &look, base, NULL, &lit);
			at = look;
		}
		if (rc == 1)
			check_module(sc, f, t->start, lit.value.buf, lit.value.len, f->text + t->start,
				     span(f, &at, base, t->start));
		else if (rc == 0)
			add_dynamic(sc, f, t->start, f->text + t->start, span(f, &at, base, t->start),
				    "a module taken from sys.modules by a name computed at run time");
		if (rc != -3)
			strbuf_release(&lit.value);
	}
}

/* ---- reading a fragment ---- */

static void scan_range(struct scan *sc, struct frag *f, size_t start, size_t end, int escapes);

/* Blank a string's contents in the code view; an f-string's fields are code, read as such. */
static void mask_string(struct scan *sc, struct frag *f, const struct py_token *t)
{
	size_t pos = t->body, last = t->body, fs, fe;

	if (!(t->flags & PY_STR_F)) {
		blank(f, t->body, t->body_end, 0);
		return;
	}
	if (++sc->nest > MAX_NEST) {
		add_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "f-strings nested too deep to check");
		sc->nest--;
		return;
	}
	while (pylex_fstring_field(f->text, t, &pos, &fs, &fe)) {
		blank(f, last, fs - 1, 0);
		scan_range(sc, f, fs, fe, 0);
		last = fe;
	}
	blank(f, last, t->body_end, 0);
	sc->nest--;
}

/* Whether t starts an IPython escape (it is the first token of its logical line). */
static int is_escape(const struct frag *f, const struct py_token *t)
{
	if (t->type == PY_ERROR)
		return is_text(f, t, "!") || is_text(f, t, "?");
	return t->type == PY_OP && t->end - t->start == 1 && strchr("%,;/", f->text[t->start]);
}

/* Read the tokens of f->text[start..end): escapes (when allowed), strings, names. */
static void scan_range(struct scan *sc, struct frag *f, size_t start, size_t end, int escapes)
{
	struct pylex lx;
	struct py_token t, prev, prev2;
	int eq_seen = 0;

	memset(&prev, 0, sizeof(prev));
	memset(&prev2, 0, sizeof(prev2));
	prev.type = prev2.type = PY_NEWLINE;
	pylex_init(&lx, f->text + start, end - start);
	while (next(&lx, &t, start) != PY_END) {
		if (t.type == PY_COMMENT) {
			blank(f, t.start, t.end, 1);
			continue;
		}
		if (t.type == PY_NL)
			continue;
		if (t.type == PY_NEWLINE) {
			prev.type = prev2.type = PY_NEWLINE;
			eq_seen = 0;
			continue;
		}
		if (t.line_first)
			eq_seen = 0;
		if (escapes && t.line_first && is_escape(f, &t)) {
			size_t e = pylex_skip_line(&lx) + start;

			blank(f, t.start, e, 1);
			run_escape(sc, f, t.start, e);
			prev.type = prev2.type = PY_NEWLINE;
			continue;
		}
		if (escapes && !eq_seen && lx.depth == 0 && is_op(f, &t, "=")) {
			/* x = %magic and x = !cmd: IPython looks after the first `=` of the line. */
			struct pylex look = lx, look2;
			struct py_token n1, n2;

			eq_seen = 1;
			next(&look, &n1, start);
			look2 = look;
			if ((is_op(f, &n1, "%") && next(&look2, &n2, start) == PY_NAME) ||
			    (n1.type == PY_ERROR && is_text(f, &n1, "!"))) {
				size_t e;

				lx = look;
				e = pylex_skip_line(&lx) + start;
				blank(f, n1.start, e, 1);
				run_escape(sc, f, n1.start, e);
				prev.type = prev2.type = PY_NEWLINE;
				continue;
			}
		}
		if (t.type == PY_STRING)
			mask_string(sc, f, &t);
		else if (t.type == PY_NAME)
			on_name(sc, f, &lx, start, &t, &prev, &prev2);
		prev2 = prev;
		prev = t;
	}
}

/* Run the policy's patterns over the fragment's views. */
static void match_patterns(struct scan *sc, const struct frag *f)
{
	for (size_t i = 0; i < sc->p->npatterns && sc->v->n < MAX_VIOLATIONS; i++) {
		const struct policy_pattern *pt = &sc->p->patterns[i];
		const char *subject = pt->strings ? f->lit : f->code;
		PCRE2_SIZE off = 0;

		while (off <= f->len && sc->v->n < MAX_VIOLATIONS) {
			PCRE2_SIZE *ov;
			int rc = pcre2_match(pt->code, (PCRE2_SPTR)subject, f->len, off, 0, sc->md,
					     NULL);

			if (rc < 0)
				break;
			ov = pcre2_get_ovector_pointer(sc->md);
			add(sc, f, ov[0], POLICY_V_PATTERN, i, pt->severity, f->text + ov[0],
			    ov[1] - ov[0], pt->description);
			off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
			while (off < f->len && ((unsigned char)subject[off] & 0xc0) == 0x80)
				off++;
		}
	}
}

static void scan_frag(struct scan *sc, struct frag *f)
{
	const char *given = f->text;
	char *work = NULL;
	struct ipython_magic_at at;

	if (f->depth > MAX_DEPTH) {
		add_dynamic(sc, f, 0, f->text, f->len, "code nested too deep to check");
		return;
	}
	if (f->ipython) {
		work = xmalloc(f->len + 1);
		memcpy(work, f->text, f->len);
		work[f->len] = '\0';
		ipython_blank_prompts(work, f->len);
		f->text = work;
	}
	f->code = xmalloc(f->len + 1);
	f->lit = xmalloc(f->len + 1);
	memcpy(f->code, f->text, f->len);
	memcpy(f->lit, f->text, f->len);
	f->code[f->len] = f->lit[f->len] = '\0';
	if (f->ipython && ipython_cell_magic(f->text, f->len, &at)) {
		/* The whole cell is the magic's: none of it is Python as it stands. */
		blank(f, 0, f->len, 1);
		run_magic(sc, f, at.name - 2, 1, f->text + at.name, at.name_len, f->text + at.args,
			  at.args_len, at.args, f->text + at.body, at.body_len, at.body);
	} else {
		if (f->ipython && ipython_automagic(f->text, f->len, &at))
			run_magic(sc, f, at.name, 0, f->text + at.name, at.name_len,
				  f->text + at.args, at.args_len, at.args, NULL, 0, NO_OFF);
		scan_range(sc, f, 0, f->len, f->ipython);
	}
	match_patterns(sc, f);
	free(f->code);
	free(f->lit);
	f->code = f->lit = NULL;
	f->text = given;
	free(work);
}

/* Order violations by place, then kind and rule. */
static int by_place(const void *a, const void *b)
{
	const struct policy_violation *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->column != y->column)
		return x->column < y->column ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

void policy_check(const struct policy *p, const char *code, size_t len,
		  struct policy_verdict *v)
{
	struct scan sc = { .p = p, .root = code, .root_len = len, .v = v };
	struct frag f = { code, len, 1, 1, 0, 0, NULL, NULL, NULL, 0 };

	memset(v, 0, sizeof(*v));
	if (len > MAX_CELL) {
		add(&sc, &f, 0, POLICY_V_DYNAMIC, 0, POLICY_HIGH, code, 0,
		    "the cell is larger than 16 MiB: too large to check");
		free(sc.lines);
		return;
	}
	sc.md = pcre2_match_data_create(16, NULL);
	scan_frag(&sc, &f);
	pcre2_match_data_free(sc.md);
	free(sc.lines);
	qsort(v->v, v->n, sizeof(*v->v), by_place);
}
