#ifndef CELLBOX_VARLIST_H
#define CELLBOX_VARLIST_H

/*
 * The variables pane's listing, as the kernel sent it (kernel.h: vars_list): one line of JSON
 * in the helper cell's stdout, {"cellbox_vars": [{"name", "type", "shape": [ints] | "len": n,
 * "size": n}], "count": N}. The kernel writes it, so it is read as hostile: at most
 * VARLIST_TEXT_MAX bytes are parsed, VARLIST_MAX entries kept, an entry without a string name
 * skipped, every other field of the wrong type dropped, sizes and counts only when they are
 * whole numbers in range; what is shown (name, type, shape) is sanitised (no control
 * character, newline or tab; valid UTF-8) and capped. The name as the kernel spelled it is
 * kept too (`raw`, for asking for the value), when it is valid UTF-8 without a NUL.
 */

#include <stddef.h>
#include "util.h"

#define VARLIST_MAX 500			/* entries kept */
#define VARLIST_TEXT_MAX (512u << 10)	/* bytes of the helper's output read */
#define VARLIST_NAME_MAX 256		/* bytes of a name (shown and raw) */
#define VARLIST_TYPE_MAX 64		/* bytes of a type's name shown */
#define VARLIST_DIMS_MAX 8		/* dimensions of a shape shown */

struct var_entry {
	char *name;		/* sanitised, for the screen */
	char *raw;		/* the kernel's spelling, to ask for the value; NULL: none usable */
	char *type;		/* sanitised; "?" when not given */
	char shape[160];		/* "(3, 4)", "len 3", "" */
	long long size;		/* bytes; -1: not given */
};

struct varlist {
	struct var_entry *v;
	size_t n;
	long long count;	/* the names the kernel has (may be more than n) */
};

/*
 * Parse the helper's stdout `text` (len bytes; the JSON may follow other lines). 0, or -1
 * with `err` (nothing in `vl` then). `vl` is replaced, released first.
 */
int varlist_parse(struct varlist *vl, const char *text, size_t len, struct strbuf *err);
void varlist_release(struct varlist *vl);
/* A size for people: "96 B", "1.5 KiB", "3.2 MiB" (`n` < 0: "?"). */
void varlist_size_text(long long n, char *buf, size_t len);

#endif
