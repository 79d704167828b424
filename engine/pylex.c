/* A Python tokenizer (see pylex.h). */
#include "pylex.h"

#include <string.h>

#include "pylex_fold.h"

static const char *const keywords[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
	"if", "import", "in", "is", "lambda", "match", "case", "nonlocal", "not", "or", "pass",
	"raise", "return", "try", "while", "with", "yield",
};

/* Operators of three and two characters, longest first; one-character ones are below. */
static const char *const ops3[] = { "**=", "//=", ">>=", "<<=", "...", };
static const char *const ops2[] = {
	"**", "//", ">>", "<<", "<=", ">=", "==", "!=", "->", "+=", "-=", "*=", "/=", "%=", "&=",
	"|=", "^=", "@=", ":=",
};
static const char ops1[] = "+-*/%@&|^~<>()[]{},:;.=";

const char *pylex_fold(const char *s, size_t len, size_t i, size_t *n, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s + i;
	size_t lo = 0, hi = sizeof(nfkc_folds) / sizeof(*nfkc_folds);
	unsigned cp;

	*n = 1;
	if (u[0] < 0x80)
		return NULL;
	if ((u[0] & 0xe0) == 0xc0 && i + 1 < len) {
		cp = (u[0] & 0x1fu) << 6 | (u[1] & 0x3fu);
		*n = 2;
	} else if ((u[0] & 0xf0) == 0xe0 && i + 2 < len) {
		cp = (u[0] & 0x0fu) << 12 | (u[1] & 0x3fu) << 6 | (u[2] & 0x3fu);
		*n = 3;
	} else if ((u[0] & 0xf8) == 0xf0 && i + 3 < len) {
		cp = (u[0] & 0x07u) << 18 | (u[1] & 0x3fu) << 12 | (u[2] & 0x3fu) << 6 | (u[3] & 0x3fu);
		*n = 4;
	} else {
		return NULL;
	}
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct nfkc_fold *f = &nfkc_folds[mid];

		if (cp < f->first) {
			hi = mid;
		} else if (cp > f->last) {
			lo = mid + 1;
		} else if (f->one) {
			*out_len = strlen(f->ascii);
			return f->ascii;
		} else {
			*out_len = 1;
			return f->ascii + (cp - f->first);
		}
	}
	return NULL;
}

int pylex_is_keyword(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(keywords) / sizeof(*keywords); i++)
		if (strlen(keywords[i]) == n && !memcmp(keywords[i], name, n))
			return 1;
	return 0;
}

static int is_word(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c >= 0x80;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The PY_STR_* flags of string prefix p[0..n), or -1 when it is not one Python accepts. */
static int prefix_flags(const char *p, size_t n)
{
	unsigned flags = 0, seen = 0;

	if (n > 2)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned f;

		switch (p[i] | 0x20) {
		case 'r': f = PY_STR_RAW; break;
		case 'b': f = PY_STR_BYTES; break;
		case 'f': case 't': f = PY_STR_F; break;
		case 'u': f = 1u << 8; break;
		default: return -1;
		}
		if (seen & f)
			return -1;
		seen |= f;
		flags |= f & 0xff;
	}
	/* u stands alone; b does not go with f. */
	if ((seen & (1u << 8)) && n > 1)
		return -1;
	if ((flags & PY_STR_BYTES) && (flags & PY_STR_F))
		return -1;
	return (int)flags;
}

/* The end of a line break at s[i] ("\n" or "\r\n"): its length, 0 when there is none. */
static size_t newline_at(const char *s, size_t len, size_t i)
{
	if (i < len && s[i] == '\n')
		return 1;
	if (i + 1 < len && s[i] == '\r' && s[i + 1] == '\n')
		return 2;
	return 0;
}

/* Step over the escape whose backslash is at s[i]; returns the offset after it. */
static size_t skip_escape(const char *s, size_t len, size_t i, unsigned flags)
{
	size_t nl = newline_at(s, len, i + 1);

	if (nl)
		return i + 1 + nl;
	if (i + 1 >= len)
		return len;
	/* In an f-string a backslash never escapes a brace: "\{x}" still has a field. */
	if ((flags & PY_STR_F) && s[i + 1] == '{')
		return i + 1;
	if ((flags & PY_STR_F) && !(flags & PY_STR_RAW) && s[i + 1] == 'N' && i + 2 < len &&
	    s[i + 2] == '{') {
		const char *close = memchr(s + i + 3, '}', len - i - 3);
		return close ? (size_t)(close - s) + 1 : len;
	}
	return i + 2;
}

/*
 * Scan one f-string replacement field whose code starts at `i` (after its `{`): returns the
 * offset after the closing `}`, or where the field breaks off (the end of the line of a
 * one-quote string, or `len`).
 */
static size_t field_end(const char *s, size_t len, size_t i, unsigned flags)
{
	int depth = 0;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n' && !(flags & PY_STR_TRIPLE))
			return i;
		if (c == '#') {
			while (i < len && s[i] != '\n')
				i++;
			continue;
		}
		if (is_word(c) || c == '\'' || c == '"') {
			size_t j = i;
			int pf = 0;

			while (j < len && is_word((unsigned char)s[j]))
				j++;
			if (j < len && (s[j] == '\'' || s[j] == '"') &&
			    (pf = prefix_flags(s + i, j - i)) >= 0) {
				char q = s[j];
				int triple = j + 2 < len && s[j + 1] == q && s[j + 2] == q, open;
				unsigned nf = (unsigned)pf | (triple ? PY_STR_TRIPLE : 0);

				i = pylex_string_end(s, len, j + (triple ? 3 : 1), q, nf, &open);
				if (open)
					return i;
				continue;
			}
			i = j > i ? j : i + 1;
			continue;
		}
		if (c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == ')' || c == ']') && depth > 0)
			depth--;
		else if (c == '}' && depth-- == 0)
			return i + 1;
		i++;
	}
	return len;
}

size_t pylex_string_end(const char *s, size_t len, size_t i, char quote, unsigned flags,
			int *open)
{
	int triple = !!(flags & PY_STR_TRIPLE);

	*open = 0;
	while (i < len) {
		char c = s[i];

		if (c == '\\') {
			i = skip_escape(s, len, i, flags);
			continue;
		}
		if (c == '\n' && !triple) {
			*open = 1;
			return i;
		}
		if ((flags & PY_STR_F) && c == '{') {
			if (i + 1 < len && s[i + 1] == '{') {
				i += 2;
				continue;
			}
			i = field_end(s, len, i + 1, flags);
			continue;
		}
		if (c == quote) {
			if (!triple)
				return i + 1;
			if (i + 2 < len && s[i + 1] == quote && s[i + 2] == quote)
				return i + 3;
		}
		i++;
	}
	*open = 1;
	return len;
}

int pylex_fstring_field(const char *s, const struct py_token *t, size_t *pos, size_t *fs,
			size_t *fe)
{
	size_t i = *pos, end = t->body_end;

	if (!(t->flags & PY_STR_F))
		return 0;
	while (i < end) {
		if (s[i] == '\\') {
			i = skip_escape(s, end, i, t->flags);
			continue;
		}
		if (s[i] == '{') {
			size_t e;

			if (i + 1 < end && s[i + 1] == '{') {
				i += 2;
				continue;
			}
			e = field_end(s, end, i + 1, t->flags);
			*fs = i + 1;
			*fe = e > i + 1 && e <= end && s[e - 1] == '}' ? e - 1 : e;
			*pos = e;
			return 1;
		}
		i++;
	}
	*pos = end;
	return 0;
}

void pylex_init(struct pylex *lx, const char *s, size_t len)
{
	memset(lx, 0, sizeof(*lx));
	lx->s = s;
	lx->len = len;
	lx->line_first = 1;
}

size_t pylex_skip_line(struct pylex *lx)
{
	const char *s = lx->s;
	size_t i = lx->pos;

	for (;;) {
		size_t eol = i;

		while (eol < lx->len && s[eol] != '\n')
			eol++;
		if (eol < lx->len && eol > i) {
			size_t back = eol;
			if (back > i && s[back - 1] == '\r')
				back--;
			if (back > i && s[back - 1] == '\\') {
				i = eol + 1;
				continue;
			}
		}
		lx->pos = eol;
		lx->line_has_tokens = 1;
		lx->line_first = 0;
		return eol;
	}
}

/* Make a string token whose prefix starts at `start` and whose opening quote is at `q`. */
static void lex_string(struct pylex *lx, struct py_token *t, size_t start, size_t q,
		       unsigned flags)
{
	const char *s = lx->s;
	char quote = s[q];
	int triple = q + 2 < lx->len && s[q + 1] == quote && s[q + 2] == quote, open;
	size_t body = q + (triple ? 3 : 1), end;

	if (triple)
		flags |= PY_STR_TRIPLE;
	end = pylex_string_end(s, lx->len, body, quote, flags, &open);
	t->type = PY_STRING;
	t->start = start;
	t->end = end;
	t->flags = flags | (open ? PY_STR_OPEN : 0);
	t->body = body;
	t->body_end = open ? end : end - (triple ? 3 : 1);
	t->quote = quote;
	lx->pos = end;
}

/* An operator at the current position: its length (0 when none). */
static size_t op_len(const char *s, size_t len, size_t i)
{
	for (size_t k = 0; k < sizeof(ops3) / sizeof(*ops3); k++)
		if (i + 3 <= len && !memcmp(s + i, ops3[k], 3))
			return 3;
	for (size_t k = 0; k < sizeof(ops2) / sizeof(*ops2); k++)
		if (i + 2 <= len && !memcmp(s + i, ops2[k], 2))
			return 2;
	return s[i] && strchr(ops1, s[i]) ? 1 : 0;
}

/* A number: digits, a fraction, an exponent with its sign, underscores, j, 0x... */
static size_t number_end(const char *s, size_t len, size_t i)
{
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if ((c == 'e' || c == 'E') && i + 1 < len && (s[i + 1] == '+' || s[i + 1] == '-') &&
		    i + 2 < len && is_digit((unsigned char)s[i + 2])) {
			i += 3;
			continue;
		}
		if (is_word(c) || c == '.')
			i++;
		else
			break;
	}
	return i;
}

enum py_tok pylex_next(struct pylex *lx, struct py_token *t)
{
	const char *s = lx->s;

	memset(t, 0, sizeof(*t));
	for (;;) {
		size_t i = lx->pos, nl;
		unsigned char c;

		while (i < lx->len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f' ||
				       (s[i] == '\r' && !newline_at(s, lx->len, i))))
			i++;
		lx->pos = i;
		t->start = t->end = i;
		if (i >= lx->len) {
			if (lx->line_has_tokens && lx->depth == 0) {
				lx->line_has_tokens = 0;
				lx->line_first = 1;
				return t->type = PY_NEWLINE;
			}
			return t->type = PY_END;
		}
		c = (unsigned char)s[i];
		if (c == '\\' && (nl = newline_at(s, lx->len, i + 1))) {
			lx->pos = i + 1 + nl;	/* a continuation: the logical line goes on */
			continue;
		}
		if ((nl = newline_at(s, lx->len, i))) {
			lx->pos = i + nl;
			t->end = lx->pos;
			if (lx->depth == 0 && lx->line_has_tokens) {
				t->type = PY_NEWLINE;
				lx->line_has_tokens = 0;
			} else {
				t->type = PY_NL;
			}
			if (lx->depth == 0)
				lx->line_first = 1;
			return t->type;
		}
		break;
	}

	size_t i = lx->pos;
	unsigned char c = (unsigned char)s[i];

	t->line_first = lx->line_first;
	lx->line_first = 0;
	if (c == '#') {
		while (i < lx->len && s[i] != '\n' && !newline_at(s, lx->len, i))
			i++;
		t->type = PY_COMMENT;
		t->end = lx->pos = i;
		return t->type;
	}
	lx->line_has_tokens = 1;
	if (c == '\'' || c == '"') {
		lex_string(lx, t, i, i, 0);
		return t->type;
	}
	if (is_digit(c) || (c == '.' && i + 1 < lx->len && is_digit((unsigned char)s[i + 1]))) {
		t->type = PY_NUMBER;
		t->end = lx->pos = number_end(s, lx->len, i);
		return t->type;
	}
	if (is_word(c)) {
		size_t j = i;
		int pf;

		while (j < lx->len && is_word((unsigned char)s[j]))
			j++;
		if (j < lx->len && (s[j] == '\'' || s[j] == '"') &&
		    (pf = prefix_flags(s + i, j - i)) >= 0) {
			lex_string(lx, t, i, j, (unsigned)pf);
			return t->type;
		}
		t->type = PY_NAME;
		t->end = lx->pos = j;
		return t->type;
	}
	{
		size_t n = op_len(s, lx->len, i);

		if (n) {
			if (n == 1 && strchr("([{", c))
				lx->depth++;
			else if (n == 1 && strchr(")]}", c) && lx->depth > 0)
				lx->depth--;
			t->type = PY_OP;
			t->end = lx->pos = i + n;
			return t->type;
		}
	}
	t->type = PY_ERROR;
	t->end = lx->pos = i + 1;
	return t->type;
}
