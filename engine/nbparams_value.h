#ifndef CELLBOX_NBPARAMS_VALUE_H
#define CELLBOX_NBPARAMS_VALUE_H

/*
 * A notebook parameter's value (nbparams.h says what they are for): what the readers of -p
 * values and of YAML files build, and the injected cell is written from.
 */

#include <stddef.h>
#include "util.h"

#define NBPARAMS_YAML_MAX ((size_t)1 << 20)
#define NBPARAMS_DEPTH_MAX 32
#define NBPARAMS_NODES_MAX 100000
/* Python's own cap on the digits of an int converted to text (sys.int_info). */
#define NBPARAMS_INT_DIGITS_MAX 4300

enum nbparam_type {
	NBPARAM_NONE, NBPARAM_BOOL, NBPARAM_INT, NBPARAM_FLOAT, NBPARAM_STR,
	NBPARAM_LIST, NBPARAM_DICT,
};

/* One value; a dict's items carry their keys. */
struct nbparam {
	enum nbparam_type type;
	char *key;		/* an item of a dict: its key as Python's str() of it */
	int key_is_str;		/* the key was a string (else an int, a bool ... as text) */
	char *key_eq;		/* not a string: the number Python compares (True and 1.0 are 1) */
	char *text;		/* STR: the string; INT: its decimal digits; FLOAT: Python's repr;
				   BOOL: "True" or "False" */
	double number;		/* FLOAT */
	struct nbparam *items;	/* LIST, DICT */
	size_t n, alloc;
};

/* An empty dict of parameters. */
void nbparams_init(struct nbparam *p);
void nbparams_release(struct nbparam *p);
/* Append Python's repr() of a float (shortest text that reads back: 0.1, 1e-05, 1e+16). */
void nbparams_float_repr(double d, struct strbuf *out);
/* A new zeroed item at the end of a list or dict. */
struct nbparam *nbparams_value_push(struct nbparam *list);
/* Put `item` (its key set) into `dict`: an item of that key is replaced in its place. */
void nbparams_value_dict_put(struct nbparam *dict, struct nbparam *item);
/* 0 when `name` is an identifier, else -1 with `err`. */
int nbparams_value_name_ok(const char *name, struct strbuf *err);
/* `v` becomes the float `d` (its text Python's repr). */
void nbparams_value_set_float(struct nbparam *v, double d);
/* strtod in the C locale. */
double nbparams_value_strtod(const char *s);

/* A non-negative int of up to NBPARAMS_INT_DIGITS_MAX decimal digits. */
struct nbparam_bigint {
	unsigned char d[NBPARAMS_INT_DIGITS_MAX];	/* least significant first */
	size_t n;
};
int nbparams_value_bigint_init(struct nbparam_bigint *b);
/* b = b * base + add; -1 past the digits cap. */
int nbparams_value_bigint_muladd(struct nbparam_bigint *b, unsigned base, unsigned add);
/* `v` becomes the int `b` (negated when `negative`). */
void nbparams_value_bigint_set(struct nbparam *v, const struct nbparam_bigint *b, int negative);

#endif
