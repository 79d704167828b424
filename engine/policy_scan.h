#ifndef CELLBOX_POLICY_SCAN_H
#define CELLBOX_POLICY_SCAN_H

/*
 * The policy's reader, inside (policy_check in policy.h is its one entry): a cell is read as
 * fragments, the cell itself and what it hides from a plain reading (the code of a string
 * given to exec, the command of `!cmd` read as os.system("cmd"), the code of %time). A
 * fragment is a slice of the cell (its positions are exact) or made text (its findings are
 * placed at the construct it came from). Three files share this: policy_scan.c (fragments,
 * tokens, patterns), policy_code.c (imports and calls), policy_magic.c (magics, escapes, by
 * what policy_ipython.h knows of IPython).
 */

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "policy.h"
#include "pylex.h"

#define NO_OFF ((size_t)-1)		/* an argument that is not a slice of the fragment */

struct scan {
	const struct policy *p;
	const char *root;		/* the cell */
	size_t root_len;
	size_t *lines;			/* offsets where the cell's lines start */
	size_t nlines;
	struct policy_verdict *v;
	pcre2_match_data *md;
	int nest;
	struct strbuf what_buf;		/* policy_scan_add()'s scratch */
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
	const size_t *map;		/* names folded: text[i] stands for root[map[i]] */
};

/* Names that run code or import modules named at run time. */
/* A call's first argument when it is string literals only. */
struct literal {
	struct strbuf value;
	size_t start;		/* the first string token */
	size_t body, body_end;	/* when `exact`: the value is text[body..body_end) */
	int exact;
};

/* Record a violation at fragment offset `off`; `what` is the code it is about. */
void policy_scan_add(struct scan *sc, const struct frag *f, size_t off, enum policy_kind kind,
	      size_t rule, enum policy_severity sev, const char *what, size_t n,
	      const char *description);
/* Report dynamic code at fragment offset `off`, at the policy's `dynamic` severity. */
void policy_scan_dynamic(struct scan *sc, const struct frag *f, size_t off, const char *what, size_t n,
		  const char *description);
/* Check an imported module name against the restricted ones (a module covers its submodules). */
void policy_scan_module(struct scan *sc, const struct frag *f, size_t off, const char *name, size_t n,
		 const char *what, size_t wn);
/* Read made text as a fragment; its findings are placed at `off` of `f`. */
void policy_scan_made(struct scan *sc, const struct frag *f, size_t off, const char *text, size_t len,
	       int ipython);
/* Read f->text[a..b) as a fragment of its own. */
void policy_scan_slice(struct scan *sc, const struct frag *f, size_t a, size_t b, int ipython);
/* Read `form(repr(arg)tail` (such as os.system("cmd")) as made Python at `off`. */
void policy_scan_form(struct scan *sc, const struct frag *f, size_t off, const char *form,
	       const char *arg, size_t n, const char *tail);
/* Read a whole fragment: its views, its tokens, the policy's patterns. */
void policy_scan_frag(struct scan *sc, struct frag *f);
/* Read the tokens of f->text[start..end): escapes (when allowed), strings, names. */
void policy_scan_range(struct scan *sc, struct frag *f, size_t start, size_t end, int escapes);

/* The next token, with offsets made relative to the fragment (`base` of the range). */
enum py_tok policy_scan_next(struct pylex *lx, struct py_token *t, size_t base);
/* The next token that is not a comment or a line break inside brackets. */
enum py_tok policy_scan_next_code(struct pylex *lx, struct py_token *t, size_t base);
int policy_scan_is_text(const struct frag *f, const struct py_token *t, const char *s);
int policy_scan_is_op(const struct frag *f, const struct py_token *t, const char *s);
/* Blank f's views over [a, b): `both` for comments and escapes, else only the code view. */
void policy_scan_blank(struct frag *f, size_t a, size_t b, int both);

/* Decode a string literal: 1 when it is its body byte for byte, 0 escaped, -1 unknowable. */
int policy_code_decode(const struct frag *f, const struct py_token *t, struct strbuf *out);
/*
 * After a call's `(`: read the first argument (or keyword `kw`) when it is adjacent string
 * literals. 1 with *lit filled (released by the caller), 0 when it is something else, -1
 * when there is no argument.
 */
int policy_code_first_literal(const struct frag *f, struct pylex *lx, size_t base, const char *kw,
		       struct literal *lit);
/* A name token: imports, and the calls that run code or import by name (policy_code.c). */
void policy_code_name(struct scan *sc, struct frag *f, struct pylex *lx, size_t base,
	       const struct py_token *t, const struct py_token *prev,
	       const struct py_token *prev2);
/*
 * A magic as IPython runs it (policy_magic.c): `name` with its `args` (args_off: where they
 * are in `f`, or NO_OFF) and, for a cell magic, its `body` (at body_off).
 */
void policy_magic_scan(struct scan *sc, const struct frag *f, size_t off, int cell, const char *name,
		size_t nn, const char *args, size_t na, size_t args_off, const char *body,
		size_t nb, size_t body_off);
/* An escaped line f->text[a..b) (`!cmd`, `%magic`, `,f a`, ...), as IPython reads it. */
void policy_magic_escape(struct scan *sc, const struct frag *f, size_t a, size_t b);

#endif
