/*
 * The policy's reader (policy_check in policy.h): fragments, their views (comments blanked;
 * string contents blanked too in the code view), tokens, and the patterns run over the views.
 * IPython's syntax is read as IPython transforms it; see policy_scan.h for the files.
 */
#include "policy_scan.h"
#include "policy_ipython.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 12			/* fragments within fragments */
#define MAX_NEST 64			/* f-strings within f-string fields */
#define MAX_VIOLATIONS 1000
#define MAX_CELL (16u << 20)
#define MAX_WHAT 72

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
	if (f->map)
		return f->map[off <= f->len ? off : f->len];
	return f->exact ? f->base + off : f->base;
}

/* Record a violation at fragment offset `off`; `what` is the code it is about. */
void policy_scan_add(struct scan *sc, const struct frag *f, size_t off, enum policy_kind kind,
		size_t rule, enum policy_severity sev, const char *what, size_t n,
		const char *description)
{
	struct policy_verdict *v = sc->v;
	struct policy_violation *x;
	struct strbuf w = STRBUF_INIT;
	unsigned line, col;

	position(sc, root_offset(f, off), &line, &col);
	if (f->map && what >= f->text && what + n <= f->text + f->len) {
		/* Names folded: show the cell's own code, and the names as Python reads them. */
		size_t a = root_offset(f, (size_t)(what - f->text));
		size_t b = root_offset(f, (size_t)(what - f->text) + n);

		if (b > a && (b - a != n || memcmp(sc->root + a, what, n))) {
			struct strbuf sb = STRBUF_INIT;

			strbuf_add(&sb, sc->root + a, b - a > MAX_WHAT ? MAX_WHAT : b - a);
			strbuf_addstr(&sb, " (read as ");
			strbuf_add(&sb, what, n > MAX_WHAT ? MAX_WHAT : n);
			strbuf_addch(&sb, ')');
			sc->what_buf = sb;
			what = sc->what_buf.buf;
			n = sc->what_buf.len;
		}
	} else if (!f->exact && f->origin) {
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
void policy_scan_dynamic(struct scan *sc, const struct frag *f, size_t off, const char *what,
			size_t n, const char *description)
{
	policy_scan_add(sc, f, off, POLICY_V_DYNAMIC, 0, sc->p->dynamic, what, n, description);
}

/* Check an imported module name against the restricted ones (a module covers its submodules). */
void policy_scan_module(struct scan *sc, const struct frag *f, size_t off, const char *name,
			 size_t n, const char *what, size_t wn)
{
	for (size_t i = 0; i < sc->p->nmodules; i++) {
		const struct policy_module *m = &sc->p->modules[i];
		size_t mn = strlen(m->name);

		if (n >= mn && !memcmp(name, m->name, mn) && (n == mn || name[mn] == '.'))
			policy_scan_add(sc, f, off, POLICY_V_MODULE, i, m->severity, what, wn, m->description);
	}
}

/* ---- fragments ---- */

/* Read made text as a fragment; its findings are placed at `off` of `f`. */
void policy_scan_made(struct scan *sc, const struct frag *f, size_t off, const char *text,
		      size_t len, int ipython)
{
	struct frag sub = { text, len, ipython, 0, root_offset(f, off), f->depth + 1, NULL, NULL,
			    f->origin, f->origin_len, NULL };

	if (f->exact) {
		/* What it stands for: the cell's code from `off` to the end of its line. */
		size_t e = off;
		while (e < f->len && f->text[e] != '\n')
			e++;
		sub.origin = f->text + off;
		sub.origin_len = e - off;
	}
	policy_scan_frag(sc, &sub);
}

/* Read f->text[a..b) as a fragment of its own. */
void policy_scan_slice(struct scan *sc, const struct frag *f, size_t a, size_t b, int ipython)
{
	struct frag sub = { f->text + a, b - a, ipython, f->exact, f->exact ? f->base + a : f->base,
			    f->depth + 1, NULL, NULL, f->origin, f->origin_len,
			    f->map ? f->map + a : NULL };

	policy_scan_frag(sc, &sub);
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
void policy_scan_form(struct scan *sc, const struct frag *f, size_t off, const char *form,
		      const char *arg, size_t n, const char *tail)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, form);
	add_repr(&sb, arg, n);
	strbuf_addstr(&sb, tail);
	policy_scan_made(sc, f, off, sb.buf, sb.len, 0);
	strbuf_release(&sb);
}

/* ---- tokens ---- */

/* The next token, with offsets made relative to the fragment (`base` of the range). */
enum py_tok policy_scan_next(struct pylex *lx, struct py_token *t, size_t base)
{
	enum py_tok type = pylex_next(lx, t);

	t->start += base;
	t->end += base;
	t->body += base;
	t->body_end += base;
	return type;
}

/* The next token that is not a comment or a line break inside brackets. */
enum py_tok policy_scan_next_code(struct pylex *lx, struct py_token *t, size_t base)
{
	enum py_tok type;

	do
		type = policy_scan_next(lx, t, base);
	while (type == PY_COMMENT || type == PY_NL);
	return type;
}

int policy_scan_is_text(const struct frag *f, const struct py_token *t, const char *s)
{
	size_t n = strlen(s);
	return t->end - t->start == n && !memcmp(f->text + t->start, s, n);
}

int policy_scan_is_op(const struct frag *f, const struct py_token *t, const char *s)
{
	return t->type == PY_OP && policy_scan_is_text(f, t, s);
}

/* Blank f's views over [a, b): `both` for comments and escapes, else only the code view. */
void policy_scan_blank(struct frag *f, size_t a, size_t b, int both)
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
/* ---- reading a fragment ---- */

/* Blank a string's contents in the code view; an f-string's fields are code, read as such. */
static void mask_string(struct scan *sc, struct frag *f, const struct py_token *t)
{
	size_t pos = t->body, last = t->body, fs, fe;

	if (!(t->flags & PY_STR_F)) {
		policy_scan_blank(f, t->body, t->body_end, 0);
		return;
	}
	if (++sc->nest > MAX_NEST) {
		policy_scan_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "f-strings nested too deep to check");
		sc->nest--;
		return;
	}
	while (pylex_fstring_field(f->text, t, &pos, &fs, &fe)) {
		policy_scan_blank(f, last, fs - 1, 0);
		policy_scan_range(sc, f, fs, fe, 0);
		last = fe;
	}
	policy_scan_blank(f, last, t->body_end, 0);
	sc->nest--;
}

/* Whether t starts an IPython escape (it is the first token of its logical line). */
static int is_escape(const struct frag *f, const struct py_token *t)
{
	if (t->type == PY_ERROR)
		return policy_scan_is_text(f, t, "!") || policy_scan_is_text(f, t, "?");
	return t->type == PY_OP && t->end - t->start == 1 && f->text[t->start] &&
	       strchr("%,;/", f->text[t->start]);
}

/* Read the tokens of f->text[start..end): escapes (when allowed), strings, names. */
void policy_scan_range(struct scan *sc, struct frag *f, size_t start, size_t end, int escapes)
{
	struct pylex lx;
	struct py_token t, prev, prev2;
	int eq_seen = 0;

	memset(&prev, 0, sizeof(prev));
	memset(&prev2, 0, sizeof(prev2));
	prev.type = prev2.type = PY_NEWLINE;
	pylex_init(&lx, f->text + start, end - start);
	while (policy_scan_next(&lx, &t, start) != PY_END) {
		if (t.type == PY_COMMENT) {
			policy_scan_blank(f, t.start, t.end, 1);
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

			policy_scan_blank(f, t.start, e, 1);
			policy_magic_escape(sc, f, t.start, e);
			prev.type = prev2.type = PY_NEWLINE;
			continue;
		}
		if (escapes && !eq_seen && lx.depth == 0 && policy_scan_is_op(f, &t, "=")) {
			/* x = %magic and x = !cmd: IPython looks after the first `=` of the line. */
			struct pylex look = lx, look2;
			struct py_token n1, n2;

			eq_seen = 1;
			policy_scan_next(&look, &n1, start);
			look2 = look;
			if ((policy_scan_is_op(f, &n1, "%") && policy_scan_next(&look2, &n2, start) == PY_NAME) ||
			    (n1.type == PY_ERROR && policy_scan_is_text(f, &n1, "!"))) {
				size_t e;

				lx = look;
				e = pylex_skip_line(&lx) + start;
				policy_scan_blank(f, n1.start, e, 1);
				policy_magic_escape(sc, f, n1.start, e);
				prev.type = prev2.type = PY_NEWLINE;
				continue;
			}
		}
		if (t.type == PY_STRING)
			mask_string(sc, f, &t);
		else if (t.type == PY_NAME)
			policy_code_name(sc, f, &lx, start, &t, &prev, &prev2);
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
			policy_scan_add(sc, f, ov[0], POLICY_V_PATTERN, i, pt->severity, f->text + ov[0],
			    ov[1] - ov[0], pt->description);
			off = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
			while (off < f->len && ((unsigned char)subject[off] & 0xc0) == 0x80)
				off++;
		}
	}
}

struct fold {
	struct strbuf text;		/* the fragment with its names in NFKC form */
	size_t *map;			/* for each byte of it, the fragment's offset it stands for */
	size_t alloc, done;		/* map's room; how much of the fragment is copied */
	int changed;
};

/* Copy the fragment's text up to `upto` unchanged. */
static void fold_copy(const struct frag *f, struct fold *fd, size_t upto)
{
	for (; fd->done < upto; fd->done++) {
		if (fd->text.len + 1 > fd->alloc) {
			fd->alloc = 2 * fd->alloc + 64;
			fd->map = xrealloc(fd->map, fd->alloc * sizeof(*fd->map));
		}
		fd->map[fd->text.len] = fd->done;
		strbuf_addch(&fd->text, f->text[fd->done]);
	}
}

/* Fold the names of f->text[a..b) (and of the f-string fields in it) as Python reads them. */
static void fold_range(const struct frag *f, struct fold *fd, size_t a, size_t b, int depth)
{
	struct pylex lx;
	struct py_token t;

	pylex_init(&lx, f->text + a, b - a);
	while (pylex_next(&lx, &t) != PY_END) {
		if (t.type == PY_NAME) {
			for (size_t i = a + t.start; i < a + t.end;) {
				size_t n, ol;
				const char *ascii = pylex_fold(f->text, a + t.end, i, &n, &ol);

				if (!ascii) {
					i += n;
					continue;
				}
				fold_copy(f, fd, i);
				for (size_t k = 0; k < ol; k++) {
					if (fd->text.len + 1 > fd->alloc) {
						fd->alloc = 2 * fd->alloc + 64;
						fd->map = xrealloc(fd->map, fd->alloc * sizeof(*fd->map));
					}
					fd->map[fd->text.len] = i;
					strbuf_addch(&fd->text, ascii[k]);
				}
				fd->done = i += n;
				fd->changed = 1;
			}
		} else if (t.type == PY_STRING && (t.flags & PY_STR_F) && depth < 64) {
			size_t pos = t.body, fs, fe;

			while (pylex_fstring_field(f->text + a, &t, &pos, &fs, &fe))
				fold_range(f, fd, a + fs, a + fe, depth + 1);
		}
	}
}

/*
 * Names written with characters Python folds to ASCII (`ｏｓ` is `os`): read the fragment with
 * them folded, positions mapped back. Returns the folded text (and sets f's text and map), or
 * NULL when there is nothing to fold.
 */
static char *fold_names(struct frag *f, size_t **map)
{
	struct fold fd = { STRBUF_INIT, NULL, 0, 0, 0 };
	size_t i;

	for (i = 0; i < f->len && (unsigned char)f->text[i] < 0x80; i++)
		;
	if (i == f->len)
		return NULL;
	fold_range(f, &fd, 0, f->len, 0);
	if (!fd.changed) {
		strbuf_release(&fd.text);
		free(fd.map);
		return NULL;
	}
	fold_copy(f, &fd, f->len);
	fd.map = xrealloc(fd.map, (fd.text.len + 1) * sizeof(*fd.map));
	fd.map[fd.text.len] = f->len;
	/* The map holds offsets of f: make them offsets of the cell. */
	for (i = 0; i <= fd.text.len; i++)
		fd.map[i] = root_offset(f, fd.map[i]);
	f->len = fd.text.len;
	f->text = fd.text.buf;
	*map = fd.map;
	f->map = fd.map;
	return strbuf_detach(&fd.text, NULL);
}

void policy_scan_frag(struct scan *sc, struct frag *f)
{
	const char *given = f->text;
	const size_t *given_map = f->map;
	size_t given_len = f->len, *map = NULL;
	char *work = NULL, *folded;
	struct ipython_magic_at at;

	if (f->depth > MAX_DEPTH) {
		policy_scan_dynamic(sc, f, 0, f->text, f->len, "code nested too deep to check");
		return;
	}
	if (f->ipython) {
		work = xmalloc(f->len + 1);
		memcpy(work, f->text, f->len);
		work[f->len] = '\0';
		policy_ipython_blank_prompts(work, f->len);
		f->text = work;
	}
	folded = fold_names(f, &map);
	f->code = xmalloc(f->len + 1);
	f->lit = xmalloc(f->len + 1);
	memcpy(f->code, f->text, f->len);
	memcpy(f->lit, f->text, f->len);
	f->code[f->len] = f->lit[f->len] = '\0';
	if (f->ipython && policy_ipython_cell_magic(f->text, f->len, &at)) {
		/* The whole cell is the magic's: none of it is Python as it stands. */
		policy_scan_blank(f, 0, f->len, 1);
		policy_magic_scan(sc, f, at.name - 2, 1, f->text + at.name, at.name_len, f->text + at.args,
			  at.args_len, at.args, f->text + at.body, at.body_len, at.body);
	} else {
		if (f->ipython && policy_ipython_automagic(f->text, f->len, &at))
			policy_magic_scan(sc, f, at.name, 0, f->text + at.name, at.name_len,
				  f->text + at.args, at.args_len, at.args, NULL, 0, NO_OFF);
		policy_scan_range(sc, f, 0, f->len, f->ipython);
	}
	match_patterns(sc, f);
	free(f->code);
	free(f->lit);
	f->code = f->lit = NULL;
	f->text = given;
	f->len = given_len;
	f->map = given_map;
	free(work);
	free(folded);
	free(map);
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
	struct frag f = { code, len, 1, 1, 0, 0, NULL, NULL, NULL, 0, NULL };

	memset(v, 0, sizeof(*v));
	if (len > MAX_CELL) {
		policy_scan_add(&sc, &f, 0, POLICY_V_DYNAMIC, 0, POLICY_HIGH, code, 0,
		    "the cell is larger than 16 MiB: too large to check");
		free(sc.lines);
		return;
	}
	sc.md = pcre2_match_data_create(16, NULL);
	policy_scan_frag(&sc, &f);
	pcre2_match_data_free(sc.md);
	free(sc.lines);
	if (v->n > 1)
		qsort(v->v, v->n, sizeof(*v->v), by_place);
}

