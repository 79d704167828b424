/* Python syntax highlighting, one line at a time (R: highlight_r.c). */
#include "highlight.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static int r_code;	/* highlight_set_language("R") */

void highlight_set_language(const char *language)
{
	r_code = language && !strcasecmp(language, "R");
}

#include "pylex.h"

static const char *const builtins[] = {
	"abs", "all", "any", "bool", "bytes", "callable", "chr", "dict", "dir", "divmod",
	"enumerate", "filter", "float", "format", "frozenset", "getattr", "hasattr", "hash",
	"help", "hex", "id", "input", "int", "isinstance", "issubclass", "iter", "len", "list",
	"map", "max", "min", "next", "object", "open", "ord", "pow", "print", "range", "repr",
	"reversed", "round", "self", "set", "setattr", "slice", "sorted", "str", "sum", "super",
	"tuple", "type", "vars", "zip", "Exception", "ValueError", "TypeError", "KeyError",
};

static const char *const class_names[HL_NCLASSES] = {
	"text", "keyword", "builtin", "string", "number", "comment", "decorator", "magic",
};

const char *highlight_class_name(enum hl_class c)
{
	return c < HL_NCLASSES ? class_names[c] : "text";
}

/* Whether word s[0..n) is in the list. */
static int in_list(const char *s, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && !memcmp(list[i], s, n))
			return 1;
	return 0;
}

static int is_word(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

/* Fill cls[a..b) with class c. */
static void fill(unsigned char *cls, size_t a, size_t b, enum hl_class c)
{
	memset(cls + a, c, b - a);
}

/* The state a triple-quoted string left open at the end of the line stands for. */
static int open_state(char quote)
{
	return quote == '\'' ? HL_STATE_TRIPLE_SINGLE : HL_STATE_TRIPLE_DOUBLE;
}

int highlight_line(const char *s, size_t len, int state, unsigned char *cls)
{
	struct pylex lx;
	struct py_token t;
	size_t i = 0, first;
	int open;

	if (r_code)
		return highlight_line_r(s, len, state, cls);
	if (len)
		fill(cls, 0, len, HL_TEXT);
	if (state != HL_STATE_NORMAL) {
		char q = state == HL_STATE_TRIPLE_SINGLE ? '\'' : '"';
		size_t end = pylex_string_end(s, len, 0, q, PY_STR_TRIPLE, &open);
		fill(cls, 0, end, HL_STRING);
		if (open)
			return state;
		i = end;
	}
	first = i;
	while (first < len && (s[first] == ' ' || s[first] == '\t'))
		first++;
	if (i == 0 && first < len && (s[first] == '%' || s[first] == '!')) {
		fill(cls, first, len, HL_MAGIC);
		return HL_STATE_NORMAL;
	}
	/* The tokenizer the policy reads cells with; offsets are relative to s + i. */
	pylex_init(&lx, s + i, len - i);
	while (pylex_next(&lx, &t) != PY_END) {
		size_t a = i + t.start, b = i + t.end;

		switch (t.type) {
		case PY_COMMENT:
			fill(cls, a, b, HL_COMMENT);
			break;
		case PY_STRING:
			fill(cls, a, b, HL_STRING);
			if ((t.flags & PY_STR_OPEN) && (t.flags & PY_STR_TRIPLE))
				return open_state(t.quote);
			break;
		case PY_NUMBER:
			fill(cls, a, b, HL_NUMBER);
			break;
		case PY_NAME:
			if (pylex_is_keyword(s + a, b - a))
				fill(cls, a, b, HL_KEYWORD);
			else if ((a == 0 || s[a - 1] != '.') &&
				 in_list(s + a, b - a, builtins, sizeof(builtins) / sizeof(*builtins)))
				fill(cls, a, b, HL_BUILTIN);
			break;
		case PY_OP:
			if (s[a] == '@' && a == first) {
				size_t j = a + 1;
				while (j < len && (is_word((unsigned char)s[j]) || s[j] == '.'))
					j++;
				fill(cls, a, j, HL_DECORATOR);
				lx.pos = j - i;
			}
			break;
		default:
			break;
		}
	}
	return HL_STATE_NORMAL;
}
