/* R syntax highlighting, one line at a time (highlight_set_language("R")). */
#include "highlight.h"

#include <ctype.h>
#include <string.h>

/*
 * The state carried between lines: 0 = code; a string left open on its line (R strings may
 * span lines) is R_DQ or R_SQ; an open raw string r"--(...)--" is R_RAW + (its quote's
 * index * 3 + its closing bracket's index) * R_RAW_DASHES + the number of dashes (at most
 * R_RAW_DASHES - 1).
 */
enum {
	R_DQ = 16,
	R_SQ = 17,
	R_RAW = 32,
	R_RAW_DASHES = 32,
};

static const char *const keywords[] = {
	"if", "else", "repeat", "while", "function", "for", "in", "next", "break", "TRUE",
	"FALSE", "NULL", "Inf", "NaN", "NA", "NA_integer_", "NA_real_", "NA_complex_",
	"NA_character_", "return", "T", "F",
};

static const char *const builtins[] = {
	"library", "require", "print", "cat", "c", "list", "data.frame", "matrix", "vector",
	"length", "sum", "mean", "paste", "paste0", "invisible", "stop", "warning", "message",
	"tryCatch", "lapply", "sapply", "vapply", "apply", "seq", "seq_len", "seq_along", "rep",
	"is.null", "names", "nrow", "ncol", "plot", "hist", "lines", "points", "head", "tail",
	"str", "summary", "factor", "as.character", "as.numeric", "as.integer", "nchar",
	"sprintf", "format", "round", "max", "min", "range", "which", "ifelse", "switch",
	"exists", "get", "assign", "environment", "new.env", "setwd", "getwd", "source",
	"readLines", "writeLines", "readRDS", "saveRDS", "rnorm", "runif", "sample",
};

static const char raw_close[] = ")]}";

/* Whether word s[0..n) is in the list. */
static int in_list(const char *s, size_t n, const char *const *list, size_t count)
{
	for (size_t i = 0; i < count; i++)
		if (strlen(list[i]) == n && !memcmp(list[i], s, n))
			return 1;
	return 0;
}

/* A character of an R name: letters, digits, '.', '_' (and any byte of UTF-8). */
static int is_name(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c >= 0x80;
}

static void fill(unsigned char *cls, size_t a, size_t b, enum hl_class c)
{
	memset(cls + a, c, b - a);
}

/* Scan a quoted string body from s[i] to quote `q`: the index after it, or len if open. */
static size_t scan_quoted(const char *s, size_t len, size_t i, char q, int *open)
{
	while (i < len) {
		if (s[i] == '\\') {
			i += 2;
			continue;
		}
		if (s[i] == q) {
			*open = 0;
			return i + 1;
		}
		i++;
	}
	*open = 1;
	return len;
}

/* Scan a raw string body for `close` + `dashes` dashes + the quote `q`. */
static size_t scan_raw(const char *s, size_t len, size_t i, char close, int dashes, char q,
		       int *open)
{
	for (; i < len; i++) {
		int d = 0;

		if (s[i] != close)
			continue;
		while (i + 1 + (size_t)d < len && s[i + 1 + d] == '-' && d < dashes)
			d++;
		if (d == dashes && i + 1 + (size_t)d < len && s[i + 1 + d] == q) {
			*open = 0;
			return i + 2 + (size_t)d;
		}
	}
	*open = 1;
	return len;
}

/* A raw string's opening r"--( at s[i]: its length, with the closing bracket and dashes. */
static size_t raw_open(const char *s, size_t len, size_t i, char *close, int *dashes)
{
	size_t j = i + 2;
	int d = 0;
	const char *b;

	if (i + 2 >= len || (s[i] != 'r' && s[i] != 'R') || (s[i + 1] != '"' && s[i + 1] != '\''))
		return 0;
	while (j < len && s[j] == '-' && d < R_RAW_DASHES - 1) {
		j++;
		d++;
	}
	if (j >= len || !(b = strchr("([{", s[j])) || !s[j])
		return 0;
	*close = raw_close[b - "([{"];
	*dashes = d;
	return j + 1 - i;
}

int highlight_line_r(const char *s, size_t len, int state, unsigned char *cls)
{
	size_t i = 0;
	int open;

	if (len)
		fill(cls, 0, len, HL_TEXT);
	if (state == R_DQ || state == R_SQ) {
		i = scan_quoted(s, len, 0, state == R_DQ ? '"' : '\'', &open);
		fill(cls, 0, i, HL_STRING);
		if (open)
			return state;
	} else if (state >= R_RAW && state < R_RAW + 6 * R_RAW_DASHES) {
		int k = (state - R_RAW) / R_RAW_DASHES, dashes = (state - R_RAW) % R_RAW_DASHES;

		i = scan_raw(s, len, 0, raw_close[k % 3], dashes, k / 3 ? '\'' : '"', &open);
		fill(cls, 0, i, HL_STRING);
		if (open)
			return state;
	}
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		char close;
		int dashes;
		size_t n;

		if (c == '#') {
			fill(cls, i, len, HL_COMMENT);
			return 0;
		}
		if ((n = raw_open(s, len, i, &close, &dashes))) {
			size_t end = scan_raw(s, len, i + n, close, dashes, s[i + 1], &open);
			fill(cls, i, end, HL_STRING);
			if (open)
				return R_RAW + ((s[i + 1] == '\'') * 3 +
						(int)(strchr(raw_close, close) - raw_close)) *
					       R_RAW_DASHES + dashes;
			i = end;
			continue;
		}
		if (c == '"' || c == '\'') {
			size_t end = scan_quoted(s, len, i + 1, (char)c, &open);
			fill(cls, i, end, HL_STRING);
			if (open)
				return c == '"' ? R_DQ : R_SQ;
			i = end;
			continue;
		}
		if (c == '`') {				/* a quoted name */
			size_t end = i + 1;
			while (end < len && s[end] != '`')
				end++;
			i = end < len ? end + 1 : len;
			continue;
		}
		if (c == '%') {				/* %in%, %>%, %% */
			size_t end = i + 1;
			while (end < len && s[end] != '%' && s[end] != ' ')
				end++;
			if (end < len && s[end] == '%') {
				fill(cls, i, end + 1, HL_BUILTIN);
				i = end + 1;
				continue;
			}
			i++;
			continue;
		}
		if (isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)s[i + 1]) &&
				   (i == 0 || !is_name((unsigned char)s[i - 1])))) {
			size_t j = i;
			if (c == '0' && i + 1 < len && (s[i + 1] == 'x' || s[i + 1] == 'X'))
				j += 2;
			while (j < len && (isalnum((unsigned char)s[j]) || s[j] == '.' ||
					   ((s[j] == '-' || s[j] == '+') && j > i &&
					    (s[j - 1] == 'e' || s[j - 1] == 'E'))))
				j++;
			fill(cls, i, j, HL_NUMBER);
			i = j;
			continue;
		}
		if (is_name(c)) {
			size_t j = i;
			while (j < len && is_name((unsigned char)s[j]))
				j++;
			if (in_list(s + i, j - i, keywords, sizeof(keywords) / sizeof(*keywords)))
				fill(cls, i, j, HL_KEYWORD);
			else if ((i == 0 || s[i - 1] != '$') && j < len && s[j] == '(' &&
				 in_list(s + i, j - i, builtins, sizeof(builtins) / sizeof(*builtins)))
				fill(cls, i, j, HL_BUILTIN);
			i = j;
			continue;
		}
		i++;
	}
	return 0;
}
