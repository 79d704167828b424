/*
 * Parameters from a YAML file (papermill -f), read as PyYAML's SafeLoader without dates
 * reads it (papermill's NoDatesSafeLoader): libyaml's events, PyYAML's implicit resolvers for
 * plain scalars, its constructors for the values. The file is outside input (nbparams.h).
 */
#include "nbparams.h"
#include "nbparams_value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define YAML_TAG_STR "tag:yaml.org,2002:str"

/* PyYAML's implicit resolvers (resolver.py), in its order; the timestamp one is papermill's gone. */
static const struct resolver {
	enum nbparam_type type;	/* NBPARAM_DICT: a tag PyYAML's safe constructor refuses here */
	const char *what;
	const char *re;
} resolvers[] = {
	{ NBPARAM_BOOL, "bool", "^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE"
				"|on|On|ON|off|Off|OFF)$" },
	{ NBPARAM_FLOAT, "float", "^(?:[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?"
				  "|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
				  "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*"
				  "|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$" },
	{ NBPARAM_INT, "int", "^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)"
			      "|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$" },
	{ NBPARAM_DICT, "merge key (<<)", "^(?:<<)$" },
	{ NBPARAM_NONE, "null", "^(?:~|null|Null|NULL|)$" },
	{ NBPARAM_DICT, "value (=)", "^(?:=)$" },
};

struct reader {
	yaml_parser_t parser;
	const char *name;
	struct strbuf *err;
	size_t nodes;
	pcre2_code *re[sizeof(resolvers) / sizeof(resolvers[0])];
	pcre2_match_data *md;
};

/* Say what is wrong at the event's line. */
static int fail(struct reader *R, const yaml_event_t *ev, const char *what)
{
	strbuf_addf(R->err, "%s:%zu: %s", R->name, ev ? ev->start_mark.line + 1 : 0, what);
	return -1;
}

/* The next event; -1 with libyaml's words. */
static int next(struct reader *R, yaml_event_t *ev)
{
	if (yaml_parser_parse(&R->parser, ev))
		return 0;
	strbuf_addf(R->err, "%s:%zu: %s%s%s", R->name, R->parser.problem_mark.line + 1,
		    R->parser.problem ? R->parser.problem : "not YAML",
		    R->parser.context ? " " : "", R->parser.context ? R->parser.context : "");
	return -1;
}

/* construct_yaml_int: the text the int resolver took. */
static int construct_int(struct reader *R, const yaml_event_t *ev, const char *s,
			 struct nbparam *v)
{
	struct nbparam_bigint big;
	unsigned base = 10;
	int neg = *s == '-', digits = 0;

	if (*s == '-' || *s == '+')
		s++;
	nbparams_value_bigint_init(&big);
	if (s[0] == '0' && (s[1] == 'b' || s[1] == 'x')) {
		base = s[1] == 'b' ? 2 : 16;
		s += 2;
	} else if (s[0] == '0' && s[1]) {
		base = 8;
	} else if (strchr(s, ':')) {
		/* sexagesimal, Horner's way: 1:30:00 is (1 * 60 + 30) * 60 + 0 */
		for (; *s && *s != ':'; s++)
			if (*s != '_' && nbparams_value_bigint_muladd(&big, 10, (unsigned)(*s - '0')) < 0)
				return fail(R, ev, "int with more digits than Python prints (4300)");
		while (*s == ':') {
			unsigned part = 0;
			for (s++; *s >= '0' && *s <= '9'; s++)
				part = part * 10 + (unsigned)(*s - '0');
			if (nbparams_value_bigint_muladd(&big, 60, part) < 0)
				return fail(R, ev, "int with more digits than Python prints (4300)");
		}
		nbparams_value_bigint_set(v, &big, neg);
		return 0;
	}
	for (; *s; s++) {
		unsigned d;
		if (*s == '_')
			continue;
		d = *s <= '9' ? (unsigned)(*s - '0') : (unsigned)((*s | 0x20) - 'a' + 10);
		if (nbparams_value_bigint_muladd(&big, base, d) < 0)
			return fail(R, ev, "int with more digits than Python prints (4300)");
		digits++;
	}
	if (!digits)
		return fail(R, ev, "int without digits");	/* 0x_ : int('', 16) fails */
	nbparams_value_bigint_set(v, &big, neg);
	return 0;
}

/* construct_yaml_float. */
static void construct_float(const char *text, struct nbparam *v)
{
	struct strbuf s = STRBUF_INIT;
	const char *c = text;
	double sign = 1, d;

	for (; *c; c++)
		if (*c != '_')
			strbuf_addch(&s, (char)(*c >= 'A' && *c <= 'Z' ? *c | 0x20 : *c));
	c = s.buf;
	if (*c == '-')
		sign = -1;
	if (*c == '-' || *c == '+')
		c++;
	if (!strcmp(c, ".inf")) {
		d = sign * INFINITY;
	} else if (!strcmp(c, ".nan")) {
		d = NAN;
	} else if (strchr(c, ':')) {
		/* digits reversed, base 1, 60, 3600 ... (float(part) each) */
		double base = 1;
		const char *end = c + strlen(c), *p = end;

		d = 0;
		while (p > c) {
			const char *q = p;
			char part[64];

			while (q > c && q[-1] != ':')
				q--;
			snprintf(part, sizeof(part), "%.*s", (int)(p - q), q);
			d += nbparams_value_strtod(part) * base;
			base *= 60;
			p = q > c ? q - 1 : c;
		}
		d *= sign;
	} else {
		d = sign * nbparams_value_strtod(c);
	}
	nbparams_value_set_float(v, d);
	strbuf_release(&s);
}

/* A scalar event into `v` (its key left alone). */
static int scalar(struct reader *R, const yaml_event_t *ev, struct nbparam *v)
{
	const char *text = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;
	size_t len = ev->data.scalar.length;

	if (strlen(text) != len)
		return fail(R, ev, "a NUL byte in a value");
	if (tag && strcmp(tag, "!") && strcmp(tag, YAML_TAG_STR)) {
		struct strbuf m = STRBUF_INIT;
		strbuf_addstr(&m, "a tag other than !!str (");
		for (const char *c = tag; *c && c - tag < 60; c++)
			strbuf_addch(&m, (unsigned char)*c < 0x20 ? '?' : *c);
		strbuf_addch(&m, ')');
		fail(R, ev, m.buf);
		strbuf_release(&m);
		return -1;
	}
	if (!tag && ev->data.scalar.plain_implicit) {
		for (size_t i = 0; i < sizeof(resolvers) / sizeof(resolvers[0]); i++) {
			if (pcre2_match(R->re[i], (PCRE2_SPTR)text, len, 0, 0, R->md, NULL) < 0)
				continue;
			switch (resolvers[i].type) {
			case NBPARAM_BOOL:
				v->type = NBPARAM_BOOL;
				v->text = xstrdup(strchr("yYtToO", text[0]) &&
						  strcmp(text, "off") && strcmp(text, "Off") &&
						  strcmp(text, "OFF") ? "True" : "False");
				return 0;
			case NBPARAM_FLOAT:
				construct_float(text, v);
				return 0;
			case NBPARAM_INT:
				return construct_int(R, ev, text, v);
			case NBPARAM_NONE:
				v->type = NBPARAM_NONE;
				return 0;
			default: {
				struct strbuf m = STRBUF_INIT;
				strbuf_addf(&m, "a YAML %s is not taken", resolvers[i].what);
				fail(R, ev, m.buf);
				strbuf_release(&m);
				return -1;
			}
			}
		}
	}
	v->type = NBPARAM_STR;
	v->text = xstrdup(text);
	return 0;
}

static int node(struct reader *R, yaml_event_t *ev, int depth, struct nbparam *v);

/* The Python str() of a scalar key as PyYAML constructs it; -1 for a list or dict key. */
static int key_of(struct reader *R, yaml_event_t *ev, struct nbparam *item)
{
	struct nbparam k;

	if (ev->type != YAML_SCALAR_EVENT)
		return fail(R, ev, "a key that is a list or a mapping");
	memset(&k, 0, sizeof(k));
	if (scalar(R, ev, &k) < 0) {
		nbparams_release(&k);
		return -1;
	}
	item->key_is_str = k.type == NBPARAM_STR;
	item->key = xstrdup(k.type == NBPARAM_NONE ? "None" : k.text);
	if (k.type == NBPARAM_BOOL) {
		item->key_eq = xstrdup(!strcmp(k.text, "True") ? "1" : "0");
	} else if (k.type == NBPARAM_FLOAT && isfinite(k.number) && k.number == floor(k.number)) {
		char num[400];
		snprintf(num, sizeof(num), "%.0f", k.number == 0 ? 0.0 : k.number);
		item->key_eq = xstrdup(num);
	}
	nbparams_release(&k);
	return 0;
}

/* The items up to the end event of the list or mapping `v` opened. */
static int items(struct reader *R, int depth, struct nbparam *v)
{
	int rc = 0;

	for (;;) {
		yaml_event_t ev, val;
		struct nbparam item;

		if (next(R, &ev) < 0)
			return -1;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		memset(&item, 0, sizeof(item));
		if (v->type == NBPARAM_LIST) {
			rc = node(R, &ev, depth + 1, &item);
			yaml_event_delete(&ev);
			if (rc == 0)
				*nbparams_value_push(v) = item;
			else
				nbparams_release(&item);
		} else {
			rc = key_of(R, &ev, &item);
			yaml_event_delete(&ev);
			if (rc == 0 && (rc = next(R, &val)) == 0) {
				rc = node(R, &val, depth + 1, &item);
				yaml_event_delete(&val);
			}
			if (rc == 0)
				nbparams_value_dict_put(v, &item);
			else
				nbparams_release(&item);
		}
		if (rc < 0)
			return -1;
	}
}

/* One node starting at event `ev` (still the caller's) into `v`. */
static int node(struct reader *R, yaml_event_t *ev, int depth, struct nbparam *v)
{
	const char *tag = NULL;

	if (++R->nodes > NBPARAMS_NODES_MAX)
		return fail(R, ev, "more than 100000 values");
	if (depth > NBPARAMS_DEPTH_MAX)
		return fail(R, ev, "nested deeper than 32 levels");
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return scalar(R, ev, v);
	case YAML_ALIAS_EVENT:
		return fail(R, ev, "aliases (*name) are not taken");
	case YAML_SEQUENCE_START_EVENT:
		tag = (const char *)ev->data.sequence_start.tag;
		v->type = NBPARAM_LIST;
		break;
	case YAML_MAPPING_START_EVENT:
		tag = (const char *)ev->data.mapping_start.tag;
		v->type = NBPARAM_DICT;
		break;
	default:
		return fail(R, ev, "not a value");
	}
	if (tag && strcmp(tag, "!") && strcmp(tag, "tag:yaml.org,2002:seq") &&
	    strcmp(tag, "tag:yaml.org,2002:map"))
		return fail(R, ev, "a tag on a list or mapping");
	return items(R, depth, v);
}

/* The one document: its top is a mapping (or nothing). */
static int document(struct reader *R, struct nbparam *p)
{
	yaml_event_t ev;
	struct nbparam top;
	struct strbuf why = STRBUF_INIT;
	int rc;

	do {	/* STREAM_START, DOCUMENT_START */
		if (next(R, &ev) < 0)
			return -1;
		if (ev.type == YAML_STREAM_END_EVENT) {	/* an empty file: {} */
			yaml_event_delete(&ev);
			return 0;
		}
		rc = ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT;
		if (rc)
			yaml_event_delete(&ev);
	} while (rc);
	memset(&top, 0, sizeof(top));
	rc = node(R, &ev, 1, &top);
	if (rc == 0 && top.type != NBPARAM_DICT && top.type != NBPARAM_NONE)
		rc = fail(R, &ev, "the parameters are not a mapping (name: value lines)");
	yaml_event_delete(&ev);
	for (int k = 0; rc == 0 && k < 2; k++) {	/* DOCUMENT_END, STREAM_END */
		if (next(R, &ev) < 0) {
			rc = -1;
			break;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT)
			rc = fail(R, &ev, "more than one document (---)");
		yaml_event_delete(&ev);
	}
	for (size_t i = 0; rc == 0 && i < top.n; i++)
		if (!top.items[i].key_is_str || nbparams_value_name_ok(top.items[i].key, &why) < 0) {
			strbuf_addf(R->err, "%s: %s", R->name, top.items[i].key_is_str ? why.buf :
				    "a parameter's name is not text");
			rc = -1;
		}
	if (rc == 0) {
		for (size_t i = 0; i < top.n; i++)
			nbparams_value_dict_put(p, &top.items[i]);
		top.n = 0;
	}
	nbparams_release(&top);
	strbuf_release(&why);
	return rc;
}

int nbparams_load_yaml(struct nbparam *p, const char *text, size_t len, const char *name,
		       struct strbuf *err)
{
	struct reader R;
	int rc = -1;
	size_t bad;

	if (len > NBPARAMS_YAML_MAX) {
		strbuf_addf(err, "%s: bigger than %zu bytes", name, NBPARAMS_YAML_MAX);
		return -1;
	}
	if (memchr(text, '\0', len) || !utf8_valid(text, len, &bad)) {
		strbuf_addf(err, "%s: not UTF-8 text", name);
		return -1;
	}
	memset(&R, 0, sizeof(R));
	R.name = name;
	R.err = err;
	for (size_t i = 0; i < sizeof(resolvers) / sizeof(resolvers[0]); i++) {
		int code;
		PCRE2_SIZE off;
		R.re[i] = pcre2_compile((PCRE2_SPTR)resolvers[i].re, PCRE2_ZERO_TERMINATED, 0,
					&code, &off, NULL);
		if (!R.re[i])
			abort();	/* the table's own patterns */
	}
	R.md = pcre2_match_data_create(4, NULL);
	if (!yaml_parser_initialize(&R.parser))
		abort();
	yaml_parser_set_input_string(&R.parser, (const unsigned char *)text, len);
	rc = document(&R, p);
	yaml_parser_delete(&R.parser);
	pcre2_match_data_free(R.md);
	for (size_t i = 0; i < sizeof(resolvers) / sizeof(resolvers[0]); i++)
		pcre2_code_free(R.re[i]);
	return rc;
}
