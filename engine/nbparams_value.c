/*
 * The values of notebook parameters (nbparams_value.h): built, named, their floats and big ints
 * as Python writes them. Both readers (nbparams.c's -p, nbparams_yaml.c's files) make them here.
 */
#include "nbparams_value.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nbparams_init(struct nbparam *p)
{
	memset(p, 0, sizeof(*p));
	p->type = NBPARAM_DICT;
}

void nbparams_release(struct nbparam *p)
{
	for (size_t i = 0; i < p->n; i++)
		nbparams_release(&p->items[i]);
	free(p->items);
	free(p->key);
	free(p->key_eq);
	free(p->text);
	memset(p, 0, sizeof(*p));
}

struct nbparam *nbparams_value_push(struct nbparam *list)
{
	if (list->n == list->alloc) {
		list->alloc = list->alloc ? 2 * list->alloc : 4;
		list->items = xrealloc(list->items, list->alloc * sizeof(*list->items));
	}
	memset(&list->items[list->n], 0, sizeof(*list->items));
	return &list->items[list->n++];
}

void nbparams_value_dict_put(struct nbparam *dict, struct nbparam *item)
{
	for (size_t i = 0; i < dict->n; i++) {
		struct nbparam *old = &dict->items[i];

		if (old->key_is_str != item->key_is_str ||
		    strcmp(old->key_eq ? old->key_eq : old->key, item->key_eq ? item->key_eq : item->key))
			continue;
		/* Python's dict: the new value in the old key's place, the old key kept. */
		free(item->key);
		free(item->key_eq);
		item->key = old->key;
		item->key_eq = old->key_eq;
		old->key = old->key_eq = NULL;
		nbparams_release(old);
		*old = *item;
		return;
	}
	*nbparams_value_push(dict) = *item;
}

int nbparams_value_name_ok(const char *name, struct strbuf *err)
{
	const char *c = name;

	if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_')
		for (c++; (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			  (*c >= '0' && *c <= '9'); c++)
			;
	if (c != name && !*c && c - name <= 256)
		return 0;
	strbuf_addstr(err, "parameter name '");
	for (c = name; *c && c - name < 40; c++)
		strbuf_addch(err, (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c);
	strbuf_addstr(err, "' is not a name (letters, digits and _, not first a digit)");
	return -1;
}

/* ---- numbers as Python has them ---- */

static locale_t c_locale(void)
{
	static locale_t c;

	if (!c)
		c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	return c;
}

double nbparams_value_strtod(const char *s)
{
	locale_t old = uselocale(c_locale());
	double d = strtod(s, NULL);

	uselocale(old);
	return d;
}

void nbparams_float_repr(double d, struct strbuf *out)
{
	char buf[64], digits[32];
	int p, exp, nd = 0, decpt;
	locale_t old;
	const char *c;

	if (isnan(d)) {
		strbuf_addstr(out, "nan");
		return;
	}
	if (isinf(d)) {
		strbuf_addstr(out, d < 0 ? "-inf" : "inf");
		return;
	}
	/* The fewest digits that read back (Python's repr, float_repr_style 'short'). */
	old = uselocale(c_locale());
	for (p = 0; p < 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	uselocale(old);
	c = buf;
	if (*c == '-') {
		strbuf_addch(out, '-');
		c++;
	}
	for (; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			digits[nd++] = *c;
	exp = atoi(c + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	decpt = exp + 1;
	if (decpt <= -4 || decpt > 16) {
		strbuf_addch(out, digits[0]);
		if (nd > 1)
			strbuf_addf(out, ".%s", digits + 1);
		strbuf_addf(out, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
	} else if (decpt <= 0) {
		strbuf_addstr(out, "0.");
		for (int i = 0; i < -decpt; i++)
			strbuf_addch(out, '0');
		strbuf_addstr(out, digits);
	} else if (decpt >= nd) {
		strbuf_addstr(out, digits);
		for (int i = nd; i < decpt; i++)
			strbuf_addch(out, '0');
		strbuf_addstr(out, ".0");
	} else {
		strbuf_add(out, digits, (size_t)decpt);
		strbuf_addf(out, ".%s", digits + decpt);
	}
}

void nbparams_value_set_float(struct nbparam *v, double d)
{
	struct strbuf sb = STRBUF_INIT;

	v->type = NBPARAM_FLOAT;
	v->number = d;
	nbparams_float_repr(d, &sb);
	v->text = strbuf_detach(&sb, NULL);
}

int nbparams_value_bigint_init(struct nbparam_bigint *b)
{
	memset(b, 0, sizeof(*b));
	return 0;
}

int nbparams_value_bigint_muladd(struct nbparam_bigint *b, unsigned base, unsigned add)
{
	unsigned carry = add;

	/* Little-endian decimal digits: b = b * base + add. */
	for (size_t i = 0; i < b->n; i++) {
		unsigned v = b->d[i] * base + carry;
		b->d[i] = (unsigned char)(v % 10);
		carry = v / 10;
	}
	while (carry) {
		if (b->n >= NBPARAMS_INT_DIGITS_MAX)
			return -1;
		b->d[b->n++] = (unsigned char)(carry % 10);
		carry /= 10;
	}
	return 0;
}

void nbparams_value_bigint_set(struct nbparam *v, const struct nbparam_bigint *b, int negative)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = b->n;

	while (n && !b->d[n - 1])
		n--;
	if (!n) {
		strbuf_addch(&sb, '0');
	} else {
		if (negative)
			strbuf_addch(&sb, '-');
		while (n--)
			strbuf_addch(&sb, (char)('0' + b->d[n]));
	}
	v->type = NBPARAM_INT;
	v->text = strbuf_detach(&sb, NULL);
}

/* Digits (and single '_' between them) from `s`: Python's digitpart. Returns the end. */
