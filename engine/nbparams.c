/* Notebook parameters as papermill gives them: values, the injected cell (nbparams.h). */
#include "nbparams.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellfile.h"
#include "nbparams_value.h"

static const char *digitpart(const char *s)
{
	const char *p = s;

	if (*p < '0' || *p > '9')
		return s;
	for (p++; (*p >= '0' && *p <= '9') || (*p == '_' && p[1] >= '0' && p[1] <= '9'); p++)
		;
	return p;
}

/* Python's str.strip() of ASCII whitespace: [*b, *e). */
static void strip(const char **b, const char **e)
{
	while (*b < *e && strchr(" \t\n\r\f\v", **b))
		(*b)++;
	while (*e > *b && strchr(" \t\n\r\f\v", (*e)[-1]))
		(*e)--;
}

/* Python's int(s) into `v`: 1 when it takes `s`, 0 when not, -1 past the digits cap. */
static int python_int(const char *s, struct nbparam *v)
{
	const char *b = s, *e = s + strlen(s), *end;
	struct nbparam_bigint big;
	int neg = 0;

	strip(&b, &e);
	if (b < e && (*b == '+' || *b == '-'))
		neg = *b++ == '-';
	end = digitpart(b);
	if (end == b || end != e)
		return 0;
	nbparams_value_bigint_init(&big);
	for (; b < e; b++)
		if (*b != '_' && nbparams_value_bigint_muladd(&big, 10, (unsigned)(*b - '0')) < 0)
			return -1;
	nbparams_value_bigint_set(v, &big, neg);
	return 1;
}

/* Python's float(s) into `v`: 1 when it takes `s`, else 0. */
static int python_float(const char *s, struct nbparam *v)
{
	const char *b = s, *e = s + strlen(s), *p, *q;
	struct strbuf clean = STRBUF_INIT;
	int neg = 0;
	size_t len;

	strip(&b, &e);
	if (b < e && (*b == '+' || *b == '-'))
		neg = *b++ == '-';
	len = (size_t)(e - b);
	if ((len == 3 && !strncasecmp(b, "inf", 3)) || (len == 8 && !strncasecmp(b, "infinity", 8))) {
		nbparams_value_set_float(v, neg ? -INFINITY : INFINITY);
		return 1;
	}
	if (len == 3 && !strncasecmp(b, "nan", 3)) {
		nbparams_value_set_float(v, NAN);
		return 1;
	}
	/* digitpart ["." [digitpart]] | "." digitpart, then [e [sign] digitpart] */
	p = digitpart(b);
	if (p < e && *p == '.') {
		q = digitpart(p + 1);
		if (p == b && q == p + 1)
			return 0;
		p = q;
	} else if (p == b) {
		return 0;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		q = p + 1;
		if (q < e && (*q == '+' || *q == '-'))
			q++;
		p = digitpart(q);
		if (p == q)
			return 0;
	}
	if (p != e)
		return 0;
	if (neg)
		strbuf_addch(&clean, '-');
	for (p = b; p < e; p++)
		if (*p != '_')
			strbuf_addch(&clean, *p);
	nbparams_value_set_float(v, nbparams_value_strtod(clean.buf));
	strbuf_release(&clean);
	return 1;
}

int nbparams_set(struct nbparam *p, const char *name, const char *value, enum nbparam_how how,
		 struct strbuf *err)
{
	struct nbparam v;
	size_t bad;
	int r;

	if (nbparams_value_name_ok(name, err) < 0)
		return -1;
	if (!utf8_valid(value, strlen(value), &bad)) {
		strbuf_addf(err, "the value of parameter '%s' is not UTF-8 (byte %zu)", name, bad);
		return -1;
	}
	memset(&v, 0, sizeof(v));
	v.key = xstrdup(name);
	v.key_is_str = 1;
	if (how == NBPARAM_RAW) {
		v.type = NBPARAM_STR;
		v.text = xstrdup(value);
	} else if (!strcmp(value, "True") || !strcmp(value, "False")) {
		v.type = NBPARAM_BOOL;
		v.text = xstrdup(value);
	} else if (!strcmp(value, "None")) {
		v.type = NBPARAM_NONE;
	} else if ((r = python_int(value, &v)) < 0) {
		strbuf_addf(err, "the value of parameter '%s' has more than %d digits", name,
			    NBPARAMS_INT_DIGITS_MAX);
		nbparams_release(&v);
		return -1;
	} else if (!r && !python_float(value, &v)) {
		v.type = NBPARAM_STR;
		v.text = xstrdup(value);
	}
	nbparams_value_dict_put(p, &v);
	return 0;
}

/* ---- the cell's text (papermill/translators.py) ---- */

/* Translator.translate_escaped_str: unicode_escape, then " as \". */
static void escaped_str(const char *s, struct strbuf *out)
{
	const unsigned char *c = (const unsigned char *)s;

	strbuf_addch(out, '"');
	while (*c) {
		unsigned cp = *c;
		int n = cp < 0x80 ? 1 : cp < 0xe0 ? 2 : cp < 0xf0 ? 3 : 4;

		if (n > 1) {
			cp &= 0x3f >> (n - 1);
			for (int i = 1; i < n && c[i]; i++)
				cp = cp << 6 | (c[i] & 0x3f);
		}
		for (int i = 0; i < n && *c; i++)
			c++;
		if (cp >= 0x10000)
			strbuf_addf(out, "\\U%08x", cp);
		else if (cp >= 0x100)
			strbuf_addf(out, "\\u%04x", cp);
		else if (cp == '\\')
			strbuf_addstr(out, "\\\\");
		else if (cp == '\t')
			strbuf_addstr(out, "\\t");
		else if (cp == '\n')
			strbuf_addstr(out, "\\n");
		else if (cp == '\r')
			strbuf_addstr(out, "\\r");
		else if (cp < 0x20 || cp >= 0x7f)
			strbuf_addf(out, "\\x%02x", cp);
		else if (cp == '"')
			strbuf_addstr(out, "\\\"");
		else
			strbuf_addch(out, (char)cp);
	}
	strbuf_addch(out, '"');
}

/* translate_str of a dict's key: a string escaped, anything else as '"{}"'.format(k). */
static void dict_key(const struct nbparam *v, struct strbuf *out)
{
	if (v->key_is_str)
		escaped_str(v->key, out);
	else
		strbuf_addf(out, "\"%s\"", v->key);
}

/* Translator.translate for PythonTranslator (r = 0) or RTranslator (r = 1). */
static void translate(const struct nbparam *v, int r, struct strbuf *out)
{
	switch (v->type) {
	case NBPARAM_NONE:
		strbuf_addstr(out, r ? "NULL" : "None");
		break;
	case NBPARAM_BOOL:
		strbuf_addstr(out, r ? (!strcmp(v->text, "True") ? "TRUE" : "FALSE") : v->text);
		break;
	case NBPARAM_INT:
		strbuf_addstr(out, v->text);
		break;
	case NBPARAM_FLOAT:
		if (r || isfinite(v->number))
			strbuf_addstr(out, v->text);
		else
			strbuf_addstr(out, isnan(v->number) ? "float('nan')" :
					   v->number < 0 ? "float('-inf')" : "float('inf')");
		break;
	case NBPARAM_STR:
		escaped_str(v->text, out);
		break;
	case NBPARAM_LIST:
	case NBPARAM_DICT:
		strbuf_addstr(out, r ? "list(" : v->type == NBPARAM_LIST ? "[" : "{");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				strbuf_addstr(out, ", ");
			if (v->type == NBPARAM_DICT) {
				dict_key(&v->items[i], out);
				strbuf_addstr(out, r ? " = " : ": ");
			}
			translate(&v->items[i], r, out);
		}
		strbuf_addstr(out, r ? ")" : v->type == NBPARAM_LIST ? "]" : "}");
		break;
	}
}

int nbparams_codify(const struct nbparam *p, const char *language, struct strbuf *out,
		    struct strbuf *err)
{
	int r;

	/* papermill_translators: registered by kernel name or language; these two here. */
	if (!strcmp(language, "python"))
		r = 0;
	else if (!strcmp(language, "R"))
		r = 1;
	else {
		strbuf_addf(err, "no parameter translator for language '%s'", language);
		return -1;
	}
	strbuf_addstr(out, "# Parameters\n");
	for (size_t i = 0; i < p->n; i++) {
		const char *name = p->items[i].key;

		while (r && *name == '_')	/* RTranslator.assign: no leading _ in R */
			name++;
		strbuf_addf(out, "%s = ", name);
		translate(&p->items[i], r, out);
		strbuf_addch(out, '\n');
	}
	return 0;
}

/* ---- into the notebook ---- */

static cJSON *to_json(const struct nbparam *v)
{
	cJSON *j;

	switch (v->type) {
	case NBPARAM_NONE:
		return cJSON_CreateNull();
	case NBPARAM_BOOL:
		return cJSON_CreateBool(!strcmp(v->text, "True"));
	case NBPARAM_INT:
		return cJSON_CreateNumber(nbparams_value_strtod(v->text));
	case NBPARAM_FLOAT:
		return isfinite(v->number) ? cJSON_CreateNumber(v->number) : cJSON_CreateNull();
	case NBPARAM_STR:
		return cJSON_CreateString(v->text);
	case NBPARAM_LIST:
		j = cJSON_CreateArray();
		for (size_t i = 0; i < v->n; i++)
			cJSON_AddItemToArray(j, to_json(&v->items[i]));
		return j;
	case NBPARAM_DICT:
		j = cJSON_CreateObject();
		for (size_t i = 0; i < v->n; i++)
			cJSON_AddItemToObject(j, v->items[i].key, to_json(&v->items[i]));
		return j;
	}
	return cJSON_CreateNull();
}

cJSON *nbparams_json(const struct nbparam *p)
{
	return to_json(p);
}

/*
 * Insert `item` before the `at`th item of `array` (or at the end). Not cJSON_InsertItemInArray:
 * Debian 12's cJSON 1.7.15+deb12u4 refuses every insert before the last item (ins=0 for
 * [1,2] at 1) and the cell went nowhere.
 */
static void insert_at(cJSON *array, int at, cJSON *item)
{
	cJSON *after = cJSON_GetArrayItem(array, at);

	if (!after) {
		cJSON_AddItemToArray(array, item);
		return;
	}
	item->next = after;
	item->prev = after->prev;	/* the child's prev is the last item */
	if (after == array->child)
		array->child = item;
	else
		item->prev->next = item;
	after->prev = item;
}

int nbparams_inject(cJSON *nb, const struct nbparam *p, const char *language,
		    struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	cJSON *cells = cJSON_GetObjectItemCaseSensitive(nb, "cells"), *cell, *md, *pm;
	int at = -1, injected = -1, tagged = 0, i = 0;

	if (nbparams_codify(p, language, &text, err) < 0) {
		strbuf_release(&text);
		return -1;
	}
	cJSON_ArrayForEach(cell, cells) {
		if (cellfile_has_tag(cell, "parameters") && tagged++ == 0)
			at = i;
		if (injected < 0 && cellfile_has_tag(cell, "injected-parameters"))
			injected = i;
		i++;
	}
	cell = cellfile_add_cell(NULL, "code", text.buf);
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(cell, "metadata"), "tags",
			      cJSON_CreateStringArray((const char *[]){ "injected-parameters" }, 1));
	if (injected >= 0)
		cJSON_ReplaceItemInArray(cells, injected, cell);
	else
		insert_at(cells, at + 1, cell);	/* -1: first */
	md = cJSON_GetObjectItemCaseSensitive(nb, "metadata");
	if (!cJSON_IsObject(md)) {
		cJSON_DeleteItemFromObjectCaseSensitive(nb, "metadata");
		md = cJSON_AddObjectToObject(nb, "metadata");
	}
	pm = cJSON_GetObjectItemCaseSensitive(md, "papermill");
	if (!cJSON_IsObject(pm)) {
		cJSON_DeleteItemFromObjectCaseSensitive(md, "papermill");
		pm = cJSON_AddObjectToObject(md, "papermill");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(pm, "parameters");
	cJSON_AddItemToObject(pm, "parameters", nbparams_json(p));
	strbuf_release(&text);
	return tagged;
}
