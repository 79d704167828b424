#ifndef CELLBOX_POLICY_IPYTHON_H
#define CELLBOX_POLICY_IPYTHON_H

/*
 * What the policy knows of IPython (8.x): which magics run shell commands, code, files or
 * imports, and the cleanup IPython does to a cell before it reads it (prompts stripped, the
 * first non-blank line tested for `%%`, one-line cells tried as automagic). Internal to the
 * policy's reader (policy_scan.c, policy_magic.c); it knows nothing of the reader.
 */

#include <stddef.h>

enum magic_kind {
	MAGIC_SHELL,		/* runs a shell command: checked as os.system("CMD") */
	MAGIC_CODE,		/* runs its argument (and cell) as code: %time, %%capture */
	MAGIC_RUN,		/* runs a file: exec(open("F").read()) */
	MAGIC_WRITE,		/* writes a file: open("F", "w") */
	MAGIC_READ,		/* reads a file: open("F") */
	MAGIC_CHDIR,		/* os.chdir("D") */
	MAGIC_ENV,		/* os.environ["..."] */
	MAGIC_IMPORT,		/* imports its argument (or `modules`) */
	MAGIC_DYNAMIC,		/* runs what the policy cannot see */
};

struct ipython_magic {
	const char *name;
	int cell;		/* a %% magic */
	enum magic_kind kind;
	int named;		/* MAGIC_SHELL: the command starts with the magic's name (%ls -l) */
	const char *modules;	/* MAGIC_IMPORT: fixed modules, NUL between, double NUL at the end */
	const char *why;	/* MAGIC_DYNAMIC: what it does */
};

/* The magic `name[0..n)` of IPython's own that runs something, or NULL. */
const struct ipython_magic *policy_ipython_magic_find(const char *name, size_t n, int cell);

/*
 * Blank (with spaces, in place) the `>>> `/`... ` and `In [n]: `/`...: ` prompts IPython strips
 * from a pasted cell: when the first line has one, or the second line does.
 */
void policy_ipython_blank_prompts(char *text, size_t len);

/* Offsets in the cell of a magic's parts. */
struct ipython_magic_at {
	size_t name, name_len;
	size_t args, args_len;
	size_t body, body_len;		/* cell magics */
};

/* Whether the cell is a `%%name line` cell magic (its first non-blank line), and where. */
int policy_ipython_cell_magic(const char *text, size_t len, struct ipython_magic_at *at);
/*
 * Whether IPython's automagic may read the cell as a line magic: one non-blank line whose
 * first word names one of IPython's magics that run something (`ls -l`, `time f()`), not
 * assigned to (`ls = 1`). Whether a variable shadows the name is not known here, so the cell
 * is read both ways.
 */
int policy_ipython_automagic(const char *text, size_t len, struct ipython_magic_at *at);

#endif
