#ifndef CELLBOX_NBCHECK_H
#define CELLBOX_NBCHECK_H

/*
 * `replay --check`: compare a cell's new outputs with the ones stored in the notebook, the way
 * nbval does, without alarms for what always differs between two runs:
 *
 * - consecutive stream outputs are one stream (a kernel may split a stream, and stdout and
 *   stderr interleave by timing): their stdout and their stderr text are compared, with
 *   `\r` and backspace applied (nbclient stores them raw, cellbox and JupyterLab applied);
 * - in all text: ANSI colours dropped; addresses (0x7f...), timings (12.3 ms), %timeit's run
 *   and loop counts (and its "slowest run took ..." note), uuids, and cell file names (/tmp/ipykernel_<pid>/<hash>.py,
 *   <ipython-input-N-hash>, "Cell In [n]" / "Input In [n]") replaced by placeholders, then
 *   each --check-ignore REGEX match by "<ignored>";
 * - errors by ename and evalue; rich outputs by their mime types, text/plain, text/html,
 *   markdown, latex, javascript and JSON; images by format and pixel size within
 *   `tolerance` pixels, and with `pixels` also by their pixels (at most 1% of them off by
 *   more than 16 levels); svg and pdf by presence;
 * - nbval's markers: `# NBVAL_SKIP` (or tag nbval-skip) cells are not run,
 *   `# NBVAL_IGNORE_OUTPUT` (nbval-ignore-output) are run but not compared,
 *   `# NBVAL_RAISES_EXCEPTION` (nbval-raises-exception, raises-exception) must raise,
 *   `# NBVAL_CHECK_OUTPUT` (nbval-check-output) are the only ones compared in `lax` mode.
 *
 *	struct nbcheck c;
 *	nbcheck_init(&c);
 *	nbcheck_add_ignore(&c, "seed=\\d+", &err);
 *	differ = nbcheck_cell(&c, cell, stored_outputs, fresh_outputs, index, stdout);
 *	nbcheck_release(&c);
 */

#include <stdio.h>
#include <cjson/cJSON.h>
#include "util.h"

/* nbval markers of a cell (nbcheck_markers). */
enum {
	CHECK_SKIP = 1 << 0,		/* NBVAL_SKIP: do not run */
	CHECK_IGNORE = 1 << 1,		/* NBVAL_IGNORE_OUTPUT: run, do not compare */
	CHECK_RAISES = 1 << 2,		/* NBVAL_RAISES_EXCEPTION: must raise */
	CHECK_OUTPUT = 1 << 3,		/* NBVAL_CHECK_OUTPUT: compared in lax mode */
};

#define CHECK_TOLERANCE 2	/* pixels an image's width or height may differ by */

struct nbcheck {
	int pixels;		/* compare images pixel by pixel too */
	int lax;		/* compare only NBVAL_CHECK_OUTPUT cells */
	int tolerance;		/* pixels, CHECK_TOLERANCE by default */
	void **ignore;		/* compiled --check-ignore patterns */
	size_t nignore;
	void *builtin[12];	/* the placeholders' patterns */
};

void nbcheck_init(struct nbcheck *c);
void nbcheck_release(struct nbcheck *c);
/* Add a --check-ignore pattern (PCRE2). -1 with `err` when it does not compile. */
int nbcheck_add_ignore(struct nbcheck *c, const char *regex, struct strbuf *err);
/* The nbval markers of a cell: comment lines of its source and its tags. */
unsigned nbcheck_markers(const cJSON *cell);
/*
 * Compare the cell's `stored` and `fresh` outputs (nbformat lists); print what differs to `f`
 * as "--- check: cell N ..." and a line diff. `raised`: the cell ended with an error. Returns
 * 1 when they differ (or a must-raise cell did not raise), else 0.
 */
int nbcheck_cell(struct nbcheck *c, const cJSON *cell, const cJSON *stored, const cJSON *fresh,
	       int raised, int index, FILE *f);

#endif
