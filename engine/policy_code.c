/* The policy's reader: imports in every form, and the calls that run code or import by name. */
#include "policy_scan.h"

#include <stdlib.h>
#include <string.h>

static const char *const dynamic_builtins[] = { "exec", "eval", "compile", "__import__", "execfile" };

int policy_code_decode(const struct frag *f, const struct py_token *t, struct strbuf *out)
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


/*
 * After a call's `(` (lx just past it): read the first argument (or keyword `kw`) when it is
 * adjacent string literals, maybe in parentheses. Returns 1 with *lit filled, 0 when the
 * argument is something else, -1 when the call has no argument. lx is left where it stopped.
 */
int policy_code_first_literal(const struct frag *f, struct pylex *lx, size_t base, const char *kw,
			 struct literal *lit)
{
	struct py_token t;
	int parens = 0, strings = 0, rc;

	strbuf_init(&lit->value, 0);
	lit->exact = 0;
	policy_scan_next_code(lx, &t, base);
	if (policy_scan_is_op(f, &t, ")"))
		return -1;
	if (kw && t.type == PY_NAME && policy_scan_is_text(f, &t, kw)) {
		struct pylex save = *lx;
		struct py_token eq;
		policy_scan_next_code(lx, &eq, base);
		if (!policy_scan_is_op(f, &eq, "=")) {
			*lx = save;
		} else {
			policy_scan_next_code(lx, &t, base);
		}
	}
	while (policy_scan_is_op(f, &t, "(")) {
		parens++;
		policy_scan_next_code(lx, &t, base);
	}
	lit->start = t.start;
	while (t.type == PY_STRING) {
		rc = policy_code_decode(f, &t, &lit->value);
		if (rc < 0)
			return 0;
		lit->exact = strings == 0 && rc == 1;
		lit->body = t.body;
		lit->body_end = t.body_end;
		strings++;
		policy_scan_next_code(lx, &t, base);
	}
	if (strings != 1)
		lit->exact = 0;
	while (parens && policy_scan_is_op(f, &t, ")")) {
		parens--;
		policy_scan_next_code(lx, &t, base);
	}
	return strings && !parens && (policy_scan_is_op(f, &t, ",") || policy_scan_is_op(f, &t, ")") || policy_scan_is_op(f, &t, "]"));
}

/* Parse `import a.b as c, d` (lx past `import`); advances lx to its end. */
static void parse_import(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
			 size_t start)
{
	struct py_token t;

	for (;;) {
		struct pylex save;
		size_t a, e;

		if (policy_scan_next_code(lx, &t, base) != PY_NAME)
			return;
		a = e = t.start;
		for (;;) {
			e = t.end;
			save = *lx;
			policy_scan_next_code(lx, &t, base);
			if (!policy_scan_is_op(f, &t, "."))
				break;
			if (policy_scan_next_code(lx, &t, base) != PY_NAME)
				return;
		}
		policy_scan_module(sc, f, a, f->text + a, e - a, f->text + start, e - start);
		if (t.type == PY_NAME && policy_scan_is_text(f, &t, "as")) {
			policy_scan_next_code(lx, &t, base);	/* the alias */
			save = *lx;
			policy_scan_next_code(lx, &t, base);
		}
		if (!policy_scan_is_op(f, &t, ",")) {
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

	policy_scan_next_code(&look, &t, base);
	while (policy_scan_is_op(f, &t, ".") || policy_scan_is_op(f, &t, "...")) {
		level += (int)(t.end - t.start);
		policy_scan_next_code(&look, &t, base);
	}
	if (t.type == PY_NAME && !policy_scan_is_text(f, &t, "import")) {
		a = t.start;
		for (;;) {
			e = t.end;
			policy_scan_next_code(&look, &t, base);
			if (!policy_scan_is_op(f, &t, "."))
				break;
			if (policy_scan_next_code(&look, &t, base) != PY_NAME)
				return;
		}
	}
	if (t.type != PY_NAME || !policy_scan_is_text(f, &t, "import"))
		return;		/* `raise E from e`, `yield from g` */
	*lx = look;
	last = t.end;
	builtins = e - a == 8 && !memcmp(f->text + a, "builtins", 8);
	save = *lx;
	if (policy_scan_next_code(lx, &t, base) == PY_OP && policy_scan_is_op(f, &t, "("))
		save = *lx;
	else
		*lx = save;
	for (;;) {
		if (policy_scan_next_code(lx, &t, base) == PY_OP && policy_scan_is_op(f, &t, "*")) {
			last = t.end;
			break;
		}
		if (t.type != PY_NAME) {
			if (policy_scan_is_op(f, &t, ")"))
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
			if (policy_scan_is_text(f, &t, dynamic_builtins[k]))
				policy_scan_dynamic(sc, f, t.start, f->text + start, t.end - start,
					    "a builtin that runs code, taken under a name of its own");
		save = *lx;
		policy_scan_next_code(lx, &t, base);
		if (t.type == PY_NAME && policy_scan_is_text(f, &t, "as")) {
			policy_scan_next_code(lx, &t, base);
			last = t.end;
			save = *lx;
			policy_scan_next_code(lx, &t, base);
		}
		if (policy_scan_is_op(f, &t, ",")) {
			save = *lx;
			continue;
		}
		if (policy_scan_is_op(f, &t, ")"))
			last = t.end;
		else
			*lx = save;
		break;
	}
	if (level || e == a)
		return;		/* relative: a cell has no package to be relative to */
	/* The module, and each name as the submodule it may be; one violation a rule. */
	policy_scan_module(sc, f, a, f->text + a, e - a, f->text + start, last - start);
	for (size_t k = 0; k < nnames; k++) {
		strbuf_reset(&full);
		strbuf_addf(&full, "%.*s.%.*s", (int)(e - a), f->text + a, (int)name_len[k],
			    f->text + names[k]);
		policy_scan_module(sc, f, a, full.buf, full.len, f->text + start, last - start);
	}
	strbuf_release(&full);
}

/* ---- calls that run code or import by name ---- */

/* The literal argument of a call whose `(` lx is at: 1 with *lit (released by the caller). */
static int scan_call_literal(const struct frag *f, struct pylex *lx, size_t base, const char *kw,
			struct literal *lit)
{
	struct py_token t;

	if (policy_scan_next_code(lx, &t, base) != PY_OP || !policy_scan_is_op(f, &t, "(")) {
		strbuf_init(&lit->value, 0);
		return -2;	/* not a call */
	}
	return policy_code_first_literal(f, lx, base, kw, lit);
}

/* Read a literal's code (exec, eval, run_cell of a string) as a fragment. */
static void scan_literal_code(struct scan *sc, const struct frag *f, const struct literal *lit,
			 int ipython)
{
	if (lit->exact)
		policy_scan_slice(sc, f, lit->body, lit->body_end, ipython);
	else
		policy_scan_made(sc, f, lit->start, lit->value.buf, lit->value.len, ipython);
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
	int is_import = policy_scan_is_text(f, t, "__import__"), rc;

	policy_scan_next_code(&look, &n, base);
	if (policy_scan_is_op(f, &n, "="))
		return;		/* exec=... as a keyword argument or a new binding */
	look = *lx;
	rc = scan_call_literal(f, &look, base, is_import ? "name" : "source", &lit);
	if (rc == -2) {
		policy_scan_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "a builtin that runs code, taken as a value (it can be called under "
			    "another name)");
	} else if (rc == 1 && is_import) {
		policy_scan_module(sc, f, t->start, lit.value.buf, lit.value.len, f->text + t->start,
			     span(f, &look, base, t->start));
	} else if (rc == 1 && !policy_scan_is_text(f, t, "execfile")) {
		scan_literal_code(sc, f, &lit, 0);
	} else if (rc == 0 || rc == 1) {
		policy_scan_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
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
	int rc = scan_call_literal(f, look, base, "name", &lit);

	if (rc == 1 && !by_path)
		policy_scan_module(sc, f, at, lit.value.buf, lit.value.len, f->text + at,
			     span(f, look, base, at));
	else if (rc == 0 || rc == 1)
		policy_scan_dynamic(sc, f, at, f->text + at, span(f, look, base, at),
			    by_path ? "code read from a file at run time"
				    : "an import of a name computed at run time (the import hook "
				      "checks it)");
	strbuf_release(&lit.value);
}

/* `NAME . attr`: the attribute's token when lx is at such a dot. */
static int attribute(const struct frag *f, struct pylex *lx, size_t base, struct py_token *attr)
{
	struct py_token t;

	return policy_scan_next_code(lx, &t, base) == PY_OP && policy_scan_is_op(f, &t, ".") &&
	       policy_scan_next_code(lx, attr, base) == PY_NAME;
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
	if (policy_scan_next_code(&look, &a, base) != PY_OP || !policy_scan_is_op(f, &a, "(") ||
	    policy_scan_next_code(&look, &b, base) != PY_OP || !policy_scan_is_op(f, &b, ")") ||
	    !attribute(f, &look, base, &m)) {
		policy_scan_dynamic(sc, f, t->start, f->text + t->start, t->end - t->start,
			    "the IPython shell taken as a value: what its system() and run_cell() "
			    "run is not followed");
		return;
	}
	if (policy_scan_is_text(f, &m, "system") || policy_scan_is_text(f, &m, "system_raw") ||
	    policy_scan_is_text(f, &m, "system_piped") || policy_scan_is_text(f, &m, "getoutput")) {
		strbuf_release(&l1.value);
		rc = scan_call_literal(f, &look, base, "cmd", &l1);
		policy_scan_form(sc, f, t->start, "os.system(", rc == 1 ? l1.value.buf : "",
			  rc == 1 ? l1.value.len : 0, ")");
		if (rc == 0)
			policy_scan_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "a shell command computed at run time");
	} else if (policy_scan_is_text(f, &m, "run_line_magic") || policy_scan_is_text(f, &m, "run_cell_magic")) {
		int cell = policy_scan_is_text(f, &m, "run_cell_magic");

		strbuf_release(&l1.value);
		rc = scan_call_literal(f, &look, base, "magic_name", &l1);
		if (rc == 1)
			rc = policy_code_first_literal(f, &look, base, NULL, &l2);
		else
			strbuf_init(&l2.value, 0);
		if (rc == 1 && cell)
			rc = policy_code_first_literal(f, &look, base, NULL, &l3);
		else
			strbuf_init(&l3.value, 0);
		if (rc == 1)
			policy_magic_scan(sc, f, t->start, cell, l1.value.buf, l1.value.len, l2.value.buf,
				  l2.value.len, NO_OFF, l3.value.buf, l3.value.len, NO_OFF);
		else if (rc == 0)
			policy_scan_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "a magic computed at run time");
	} else if (policy_scan_is_text(f, &m, "run_cell") || policy_scan_is_text(f, &m, "run_cell_async") ||
		   policy_scan_is_text(f, &m, "ex") || policy_scan_is_text(f, &m, "ev") || policy_scan_is_text(f, &m, "run_code") ||
		   policy_scan_is_text(f, &m, "runcode") || policy_scan_is_text(f, &m, "run_source")) {
		strbuf_release(&l1.value);
		rc = scan_call_literal(f, &look, base, "raw_cell", &l1);
		if (rc == 1)
			scan_literal_code(sc, f, &l1, policy_scan_is_text(f, &m, "run_cell") ||
						 policy_scan_is_text(f, &m, "run_cell_async"));
		else if (rc == 0)
			policy_scan_dynamic(sc, f, t->start, f->text + t->start, span(f, &look, base, t->start),
				    "code computed at run time");
	} else if (!policy_scan_is_text(f, &m, "run_line_magic")) {
		/* Other attributes (user_ns, display_pub, ...): nothing runs through them here. */
		static const char *const risky[] = {
			"register_magic_function", "define_macro", "set_hook", "set_custom_exc",
			"push", "safe_execfile", "safe_execfile_ipy", "safe_run_module", "magic",
			"find_line_magic", "find_cell_magic", "find_magic", "alias_manager",
			"magics_manager", "input_transformers_post", "input_transformer_manager",
			"prefilter_manager", "system", "kernel", "events", "ast_transformers",
		};
		for (size_t k = 0; k < ARRAY_SIZE(risky); k++)
			if (policy_scan_is_text(f, &m, risky[k]))
				policy_scan_dynamic(sc, f, t->start, f->text + t->start,
					    m.end - t->start, "IPython machinery that runs code the "
					    "policy does not see");
	}
	strbuf_release(&l1.value);
	strbuf_release(&l2.value);
	strbuf_release(&l3.value);
}

/* A name token: imports, and the calls that run code or import by name. */
void policy_code_name(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
		    const struct py_token *t, const struct py_token *prev,
		    const struct py_token *prev2)
{
	int attr = prev->type == PY_OP && policy_scan_is_op(f, prev, ".");
	int of_builtins = attr && prev2->type == PY_NAME &&
			  (policy_scan_is_text(f, prev2, "builtins") || policy_scan_is_text(f, prev2, "__builtins__"));
	int defined = prev->type == PY_NAME && (policy_scan_is_text(f, prev, "def") || policy_scan_is_text(f, prev, "class"));
	struct pylex look = *lx;
	struct py_token m;

	if (policy_scan_is_text(f, t, "import")) {
		parse_import(sc, f, lx, base, t->start);
		return;
	}
	if (policy_scan_is_text(f, t, "from")) {
		parse_from(sc, f, lx, base, t->start);
		return;
	}
	if ((attr && !of_builtins) || defined)
		return;
	for (size_t k = 0; k < ARRAY_SIZE(dynamic_builtins); k++)
		if (policy_scan_is_text(f, t, dynamic_builtins[k])) {
			on_builtin(sc, f, lx, base, t);
			return;
		}
	if (policy_scan_is_text(f, t, "get_ipython")) {
		on_get_ipython(sc, f, lx, base, t);
	} else if (policy_scan_is_text(f, t, "import_module")) {
		on_import_call(sc, f, &look, base, t->start, 0);
	} else if (policy_scan_is_text(f, t, "importlib") && attribute(f, &look, base, &m) &&
		   (policy_scan_is_text(f, &m, "import_module") || policy_scan_is_text(f, &m, "__import__"))) {
		on_import_call(sc, f, &look, base, t->start, 0);
	} else if (policy_scan_is_text(f, t, "runpy") && attribute(f, &look, base, &m) &&
		   (policy_scan_is_text(f, &m, "run_module") || policy_scan_is_text(f, &m, "run_path"))) {
		on_import_call(sc, f, &look, base, t->start, policy_scan_is_text(f, &m, "run_path"));
	} else if (policy_scan_is_text(f, t, "sys") && attribute(f, &look, base, &m) &&
		   policy_scan_is_text(f, &m, "modules")) {
		struct pylex at = look;
		struct py_token n;
		struct literal lit;
		int rc = -3;

		strbuf_init(&lit.value, 0);
		policy_scan_next_code(&at, &n, base);
		if (policy_scan_is_op(f, &n, "[")) {
			strbuf_release(&lit.value);
			rc = policy_code_first_literal(f, &at, base, NULL, &lit);
		} else if (n.type == PY_OP && policy_scan_is_op(f, &n, ".") && attribute(f, &look, base, &m) &&
			   (policy_scan_is_text(f, &m, "get") || policy_scan_is_text(f, &m, "pop") ||
			    policy_scan_is_text(f, &m, "setdefault"))) {
			strbuf_release(&lit.value);
			rc = scan_call_literal(f, &look, base, NULL, &lit);
			at = look;
		}
		if (rc == 1)
			policy_scan_module(sc, f, t->start, lit.value.buf, lit.value.len, f->text + t->start,
				     span(f, &at, base, t->start));
		else if (rc == 0)
			policy_scan_dynamic(sc, f, t->start, f->text + t->start, span(f, &at, base, t->start),
				    "a module taken from sys.modules by a name computed at run time");
		else
			policy_scan_dynamic(sc, f, t->start, f->text + t->start, m.end - t->start,
				    "sys.modules taken as a whole: any module is reachable through it "
				    "without an import");
		strbuf_release(&lit.value);
	}
}

