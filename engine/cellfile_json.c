/*
 * cellfile's notebook writer: nbformat's layout, JSON as Python's json.dumps writes it (keys
 * sorted, an indent, ensure_ascii off), sources and text outputs as line lists (see cellfile.h).
 */
#include "cellfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON as Python's json.dumps(sort_keys=True, indent=1, ensure_ascii=False) ---- */

/* Append a JSON string literal. */
static void write_string(const char *s, struct strbuf *out)
{
	strbuf_addch(out, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': strbuf_addstr(out, "\\\""); break;
		case '\\': strbuf_addstr(out, "\\\\"); break;
		case '\n': strbuf_addstr(out, "\\n"); break;
		case '\r': strbuf_addstr(out, "\\r"); break;
		case '\t': strbuf_addstr(out, "\\t"); break;
		case '\b': strbuf_addstr(out, "\\b"); break;
		case '\f': strbuf_addstr(out, "\\f"); break;
		default:
			if (*p < 0x20)
				strbuf_addf(out, "\\u%04x", *p);
			else
				strbuf_addch(out, (char)*p);
		}
	}
	strbuf_addch(out, '"');
}

/*
 * Append a number as Python prints an int or a float's repr. A number too big for a double
 * (1e999 in a notebook) was read as an infinity: it is written as 1e999, which JSON allows and
 * which reads back as the same infinity here and in Python (Python would write Infinity, which
 * is not JSON and which cJSON refuses). A NaN cannot come from JSON; it is written as null.
 */
static void write_number(double d, struct strbuf *out)
{
	char buf[64];

	if (isnan(d) || isinf(d)) {
		strbuf_addstr(out, isnan(d) ? "null" : d > 0 ? "1e999" : "-1e999");
		return;
	}
	if (d == floor(d) && fabs(d) < 1e16) {
		strbuf_addf(out, "%.0f", d);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	strbuf_addstr(out, buf);
}

/* Compare object members by key, as sort_keys does (UTF-8 byte order = code point order). */
static int cmp_keys(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	return strcmp(x->string, y->string);
}

/* Append a newline and the indentation of `level`. */
static void newline(int indent, int level, struct strbuf *out)
{
	strbuf_addch(out, '\n');
	for (int i = 0; i < indent * level; i++)
		strbuf_addch(out, ' ');
}

/* Append one value at nesting `level`. */
static void write_value(const cJSON *v, int indent, int level, struct strbuf *out)
{
	const cJSON *c;
	size_t n = 0, k = 0;

	if (cJSON_IsString(v)) {
		write_string(v->valuestring, out);
	} else if (cJSON_IsNumber(v)) {
		write_number(v->valuedouble, out);
	} else if (cJSON_IsBool(v)) {
		strbuf_addstr(out, cJSON_IsTrue(v) ? "true" : "false");
	} else if (cJSON_IsArray(v)) {
		if (!v->child) {
			strbuf_addstr(out, "[]");
			return;
		}
		strbuf_addch(out, '[');
		cJSON_ArrayForEach(c, v) {
			if (c != v->child)
				strbuf_addch(out, ',');
			newline(indent, level + 1, out);
			write_value(c, indent, level + 1, out);
		}
		newline(indent, level, out);
		strbuf_addch(out, ']');
	} else if (cJSON_IsObject(v)) {
		const cJSON **items;

		cJSON_ArrayForEach(c, v)
			n++;
		if (!n) {
			strbuf_addstr(out, "{}");
			return;
		}
		items = xmalloc(n * sizeof(*items));
		cJSON_ArrayForEach(c, v)
			items[k++] = c;
		qsort(items, n, sizeof(*items), cmp_keys);
		strbuf_addch(out, '{');
		for (k = 0; k < n; k++) {
			if (k)
				strbuf_addch(out, ',');
			newline(indent, level + 1, out);
			write_string(items[k]->string, out);
			strbuf_addstr(out, ": ");
			write_value(items[k], indent, level + 1, out);
		}
		free(items);
		newline(indent, level, out);
		strbuf_addch(out, '}');
	} else {
		strbuf_addstr(out, "null");
	}
}

void cellfile_write_json(const cJSON *v, int indent, struct strbuf *out)
{
	write_value(v, indent, 0, out);
}

/* ---- notebooks ---- */

/* Replace a string member by its list of lines, as nbformat's split_lines does. */
static void split_member(cJSON *obj, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsString(v))
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cellfile_lines(v->valuestring));
}

/* nbformat's split_lines(): sources, streams and text mimes as line lists. */
static void split_lines(cJSON *nb)
{
	cJSON *cell, *out, *m;

	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		split_member(cell, "source");
		cJSON_ArrayForEach(out, cJSON_GetObjectItemCaseSensitive(cell, "outputs")) {
			cJSON *data = cJSON_GetObjectItemCaseSensitive(out, "data");
			split_member(out, "text");
			/* Only a mapping has mime names (a list from elsewhere is left as it
			 * is). Replacing a member frees it: step on before that. */
			for (m = cJSON_IsObject(data) ? data->child : NULL; m;) {
				cJSON *next = m->next;
				if (cJSON_IsString(m) && (!strncmp(m->string, "text/", 5) ||
							  !strcmp(m->string, "application/javascript") ||
							  !strcmp(m->string, "image/svg+xml")))
					split_member(data, m->string);
				m = next;
			}
		}
	}
}

void cellfile_write_ipynb(const cJSON *nb, struct strbuf *out)
{
	cJSON *copy = cJSON_Duplicate(nb, 1);

	split_lines(copy);
	cellfile_write_json(copy, 1, out);
	strbuf_addch(out, '\n');
	cJSON_Delete(copy);
}
