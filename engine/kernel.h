#ifndef CELLBOX_KERNEL_H
#define CELLBOX_KERNEL_H

/*
 * The kernels a session can run, one row each: the only place that knows them. Each speaks
 * the channel protocol (kernels/PROTOCOL.md); the session takes from its row which runner to
 * write into the channel and how to start it, the front ends take the names, the notebook
 * metadata and the file extension.
 *
 *	const struct kernel_def *k = kernel_find("R");		// "r"
 *	k->runner, k->interpreter, k->container_exec, k->image ...
 */

#include <stddef.h>
#include <cjson/cJSON.h>
#include "util.h"

/* The interpreters the local backend runs when no setting names one: the engine is built with
 * the configured ones (engine/meson.build); these stand where it is not. */
#ifndef CELLBOX_DEFAULT_PYTHON
#define CELLBOX_DEFAULT_PYTHON "/usr/bin/python3"
#endif
#ifndef CELLBOX_DEFAULT_RSCRIPT
#define CELLBOX_DEFAULT_RSCRIPT "/usr/bin/Rscript"
#endif

/* Which interpreter setting of the session (session_opts) starts a kernel on the local backend. */
enum kernel_interpreter {
	KERNEL_USES_PYTHON,	/* session_opts.python, the `python` setting */
	KERNEL_USES_RSCRIPT,	/* session_opts.rscript, the `rscript` setting */
};

struct kernel_def {
	const char *name;		/* "python", "r": --kernel, the `kernel` setting */
	const char *aliases;		/* other names accepted, '|' between (llm-sandbox's lang) */
	const char *language;		/* the notebook's language_info.name: "python", "R" */
	const char *kernelspec;		/* kernelspec.name as Jupyter names it: "python3", "ir" */
	const char *display_name;	/* kernelspec.display_name */
	const char *extensions;		/* percent files of this language, '|' between: ".R|.r" */
	const char *runner;		/* the runner's file name in the channel */
	const unsigned char *code;	/* the runner, embedded at build time */
	const size_t *code_len;
	const char *interpreter;	/* the local backend's interpreter (the default) */
	enum kernel_interpreter uses;	/* the setting that names another one */
	const char *container_exec;	/* the interpreter in the container image, on its PATH */
	const char *image;		/* the image's repository; the tag is p<protocol> */
	int interrupt_group;		/* SIGINT goes to the kernel's process group, as a
					   terminal's Ctrl-C: its child processes stop too */
	int wake_stdin;			/* it has no inotify: in a container it is woken by a
					   byte on its stdin (else by the host/wake FIFO) */
	const char *env[2];		/* a variable (name, value) the kernel starts with */
	const char *indent;		/* one level of indentation in the editor */
	const char *openers;		/* a line ending in one of these indents the next */
	const char *closers;		/* typed first on a line, one of these takes one
					   indent level back (R's }); NULL = none */
	/*
	 * The security policy reads this language (its reader is Python's and IPython's, its
	 * import hook is the Python runner's): a session of a kernel without it refuses any
	 * policy but none.
	 */
	int policy;
	int pip;			/* `libraries` installs pip packages for it */
	int local_only;			/* it reaches a kernel of this machine that cellbox did
					   not start (--existing): no backend with images */
	int blank_line_ends_cell;	/* a line REPL runs an unfinished cell at a blank line
					   (IPython's rule); else only a complete one runs */
	/* Code that imports a comma-separated list of modules (the pool's --preimport). */
	char *(*preimport)(const char *list);
	/*
	 * The helper cells of files.h, as code of the language that reads the variables s, d and n:
	 * copy_in puts the staged file s at the path d (relative to the working directory, "~"
	 * expanded; an existing directory is an error); copy_out copies at most n + 1 bytes of the
	 * file s (a missing one or a directory is an error) into the new file d, so the host sees
	 * whether there were more than n. helper_cell() wraps such code into a cell that gives it the
	 * variables `names` (NULL-ended) with `values` (literals of the language: kernel_literal(),
	 * digits) and leaves the user's namespace alone. The caller frees the cell.
	 */
	const char *copy_in, *copy_out;
	char *(*helper_cell)(const char *body, const char *const *names, const char *const *values);
	/*
	 * The variables pane (tui/ui/ui_vars.c), cells sent as the user's are (the policy reads
	 * them: no exec, no os), that leave the user's namespace as they found it. vars_list
	 * prints one line of JSON, {"cellbox_vars": [{"name", "type", "shape": [ints] or "len",
	 * "size"}], "count": N}: the user's names (at most 500, sorted; not those starting with
	 * '_', nor the shell's own, nor modules), their type, a shape or a length only where it is
	 * cheap (builtin containers, a `shape` of the class that is a tuple of ints) and bytes.
	 * vars_value() is the code that prints the value of `name` (any bytes: it goes in as a
	 * literal) as the language shows it, cut at about 64 KiB; the caller frees it.
	 */
	const char *vars_list;
	char *(*vars_value)(const char *name);
};

/* Append `s` as a string literal of every kernel's language (a JSON string is one). */
void kernel_literal(struct strbuf *sb, const char *s);
/* The kernel called `name` (or one of its aliases, any case); NULL when there is none. */
const struct kernel_def *kernel_find(const char *name);
/* The kernel used when nothing says which: python. */
const struct kernel_def *kernel_default(void);
/* The kernel a cell file's name asks for (percent files: ".R" is R); NULL when it says none. */
const struct kernel_def *kernel_for_path(const char *path);
/*
 * The kernel a notebook's metadata asks for: kernelspec.name or .language, else
 * language_info.name; a kernelspec.name cellbox has no kernel for is the installed kernelspec
 * of that name, bridged (jupyter:NAME). NULL when it names none.
 */
const struct kernel_def *kernel_for_notebook(const cJSON *nb);
/*
 * The kernel a cell file asks for: its notebook's metadata (`nb`, may be NULL), else its name
 * (kernel_for_path). NULL when neither says.
 */
const struct kernel_def *kernel_for_file(const char *path, const cJSON *nb);
/* Give a notebook that has none the kernelspec and language_info of kernel `k`. */
void kernel_describe_notebook(const struct kernel_def *k, cJSON *nb);
/*
 * Append the kernels' names, "python, r", for messages; with `bridged_too`, and that any
 * installed Jupyter kernel is "jupyter:NAME".
 */
void kernel_list(struct strbuf *out, int bridged_too);
/*
 * Whether `k` is another Jupyter kernel served through the Python runner's bridge
 * (`jupyter:NAME`, `existing:FILE`): kernel_find() makes such rows when asked for one.
 */
int kernel_bridged(const struct kernel_def *k);

#endif
