/* Python syntax highlighting, one line at a time (R: highlight_r.c). */
#include "highlight.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static int r_code;	/* hl_set_language("R") */

void hl_set_language(const char *language)
{
	r_code = language && !strcasecmp(language, "R");
}

static const char *const keywords[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
	"if", "import", "in", "is", "lambda", "match", "case", "nonlocal", "not", "or", "pass",
	"raise", "return", "try", "while", "with", "yield",
};

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

const char *hl_class_name(enum hl_class c)
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

/*
 * Scan a string body from s[i] to its closing quote `q` (tripled when `triple`). Returns the
 * index after the closing quote, or len when the string runs on (*open set).
 */
static size_t scan_string(const char *s, size_t len, size_t i, char q, int triple, int *open)
{
	*open = 0;
	while (i < len) {
		if (s[i] == '\\') {
			i += 2;
			continue;
		}
		if (s[i] == q) {
			if (!triple)
				return i + 1;
			if (i + 2 < len + 0 && s[i + 1] == q && s[i + 2] == q)
				return i + 3;
		}
		i++;
	}
	*open = triple;	/* a single-quoted string ends with its line */
	return len;
}

int hl_line(const char *s, size_t len, int state, unsigned char *cls)
{
	size_t i = 0, first;
	int open;

	if (r_code)
		return hl_line_r(s, len, state, cls);
	if (len)
		fill(cls, 0, len, HL_TEXT);
	if (state != HL_STATE_NORMAL) {
		char q = state == HL_STATE_TRIPLE_SINGLE ? '\'' : '"';
		size_t end = scan_string(s, len, 0, q, 1, &open);
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
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '#') {
			fill(cls, i, len, HL_COMMENT);
			return HL_STATE_NORMAL;
		}
		if (c == '\'' || c == '"') {
			int triple = i + 2 < len && s[i + 1] == (char)c && s[i + 2] == (char)c;
			size_t end = scan_string(s, len, i + (triple ? 3 : 1), (char)c, triple, &open);
			fill(cls, i, end, HL_STRING);
			if (open)
				return c == '\'' ? HL_STATE_TRIPLE_SINGLE : HL_STATE_TRIPLE_DOUBLE;
			i = end;
			continue;
		}
		if (c == '@' && i == first) {
			size_t j = i + 1;
			while (j < len && (is_word((unsigned char)s[j]) || s[j] == '.'))
				j++;
			fill(cls, i, j, HL_DECORATOR);
			i = j;
			continue;
		}
		if (isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)s[i + 1]))) {
			size_t j = i;
			while (j < len && (isalnum((unsigned char)s[j]) || s[j] == '.' || s[j] == '_'))
				j++;
			fill(cls, i, j, HL_NUMBER);
			i = j;
			continue;
		}
		if (is_word(c)) {
			size_t j = i;
			while (j < len && is_word((unsigned char)s[j]))
				j++;
			/* A string prefix such as f"..." or rb'...': let the quote colour it. */
			if (j < len && (s[j] == '\'' || s[j] == '"') && j - i <= 2) {
				size_t k;
				for (k = i; k < j && strchr("rRbBfFuU", s[k]); k++)
					;
				if (k == j) {
					int triple = j + 2 < len && s[j + 1] == s[j] && s[j + 2] == s[j];
					size_t end = scan_string(s, len, j + (triple ? 3 : 1), s[j], triple,
								 &open);
					fill(cls, i, end, HL_STRING);
					if (open)
						return s[j] == '\'' ? HL_STATE_TRIPLE_SINGLE
								    : HL_STATE_TRIPLE_DOUBLE;
					i = end;
					continue;
				}
			}
			if (in_list(s + i, j - i, keywords, sizeof(keywords) / sizeof(*keywords)))
				fill(cls, i, j, HL_KEYWORD);
			else if ((i == 0 || s[i - 1] != '.') &&
				 in_list(s + i, j - i, builtins, sizeof(builtins) / sizeof(*builtins)))
				fill(cls, i, j, HL_BUILTIN);
			i = j;
			continue;
		}
		i++;
	}
	return HL_STATE_NORMAL;
}
