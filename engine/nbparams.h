#ifndef CELLBOX_NBPARAMS_H
#define CELLBOX_NBPARAMS_H

/*
 * Notebook parameters as papermill gives them (`papermill -p NAME VALUE`, `-r`, `-f
 * params.yaml`), for `cellbox replay`: the values keep papermill's types, the injected cell
 * holds the text papermill's translators write (papermill/translators.py, 2.6: PythonTranslator
 * without black, which papermill does not require; RTranslator), and it goes where
 * papermill's parameterize_notebook() puts it.
 *
 *	struct nbparam p;
 *	nbparams_init(&p);
 *	nbparams_load_yaml(&p, text, len, "params.yaml", &err);	// -f: the file's mapping
 *	nbparams_set(&p, "alpha", "0.5", NBPARAM_TYPED, &err);	// -p: 0.5 is a float
 *	nbparams_inject(nb, &p, "python", &err);			// the cell, the metadata
 *	nbparams_release(&p);
 *
 * Values are parsed as papermill does: `-p` by its cli._resolve_type (True, False and None
 * exactly; then what Python's int() and float() take; else the text), `-f` as PyYAML's
 * safe loader without dates (papermill's NoDatesSafeLoader: YAML 1.1 booleans yes/no/on/off,
 * 0x and 0 octal ints, 1:30 sexagesimals, .inf). The YAML file is outside input: at most
 * NBPARAMS_YAML_MAX bytes, NBPARAMS_DEPTH_MAX levels, one document whose top is a mapping (or
 * empty); aliases, merge keys and tags other than !!str are refused. Names assigned must be
 * identifiers, so a key never writes code into the cell.
 */

#include <cjson/cJSON.h>
#include "nbparams_value.h"
#include "util.h"


/* How nbparams_set() takes the value. */
enum nbparam_how {
	NBPARAM_TYPED,		/* papermill -p */
	NBPARAM_RAW,		/* papermill -r: the text as it is */
};

/* Set `name` (a later value replaces an earlier one in its place). -1 with `err`. */
int nbparams_set(struct nbparam *p, const char *name, const char *value, enum nbparam_how how,
		 struct strbuf *err);
/* Add the mapping of YAML `text` (a file `name`) to the parameters. -1 with `err`. */
int nbparams_load_yaml(struct nbparam *p, const char *text, size_t len, const char *name,
		       struct strbuf *err);
/*
 * Append the cell's text for `language` ("python" or "R", as language_info.name): "# Parameters"
 * then one assignment a line. -1 with `err` for another language.
 */
int nbparams_codify(const struct nbparam *p, const char *language, struct strbuf *out,
		    struct strbuf *err);
/* The parameters as JSON (metadata.papermill.parameters). */
cJSON *nbparams_json(const struct nbparam *p);
/*
 * Put the cell into the notebook as papermill does: in place of the first cell tagged
 * injected-parameters, else after the first tagged parameters, else first; its tag
 * injected-parameters; metadata.papermill.parameters set. Returns how many cells are tagged
 * parameters (0: it went first; more than 1: the first was taken), or -1 with `err`.
 */
int nbparams_inject(cJSON *nb, const struct nbparam *p, const char *language,
		    struct strbuf *err);

#endif
