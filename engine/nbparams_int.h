#ifndef CELLBOX_NBPARAMS_INT_H
#define CELLBOX_NBPARAMS_INT_H

/* What nbparams.c shares with nbparams_yaml.c: values built, names checked, big ints. */

#include "nbparams.h"

/* A new zeroed item at the end of a list or dict. */
struct nbparam *nbparam_push(struct nbparam *list);
/* Put `item` (its key set) into `dict`: an item of that key is replaced in its place. */
void nbparam_dict_put(struct nbparam *dict, struct nbparam *item);
/* 0 when `name` is an identifier, else -1 with `err`. */
int nbparam_name_ok(const char *name, struct strbuf *err);
/* `v` becomes the float `d` (its text Python's repr). */
void nbparam_set_float(struct nbparam *v, double d);
/* strtod in the C locale. */
double nbparam_strtod(const char *s);

/* A non-negative int of up to NBPARAMS_INT_DIGITS_MAX decimal digits. */
struct nbparam_bigint {
	unsigned char d[NBPARAMS_INT_DIGITS_MAX];	/* least significant first */
	size_t n;
};
int nbparam_bigint_init(struct nbparam_bigint *b);
/* b = b * base + add; -1 past the digits cap. */
int nbparam_bigint_muladd(struct nbparam_bigint *b, unsigned base, unsigned add);
/* `v` becomes the int `b` (negated when `negative`). */
void nbparam_bigint_set(struct nbparam *v, const struct nbparam_bigint *b, int negative);

#endif
