#ifndef CELLBOX_POLICY_H
#define CELLBOX_POLICY_H

/*
 * The security policy: what a cell may not do, checked on the host before the cell is sent,
 * and (for imports) again inside the kernel. It is a tripwire that catches careless and
 * common code, not a wall: the container is the wall.
 *
 * A policy is llm-sandbox's SecurityPolicy: patterns (PCRE2, each with a description and a
 * severity), restricted modules (name, description, severity) and a threshold; a violation
 * at or above the threshold blocks the cell (a threshold of SAFE blocks nothing). Policies
 * are small data files, NAME.policy:
 *
 *	# comments and blank lines are skipped
 *	description = Strict, for production applications
 *	threshold = MEDIUM		# SAFE, LOW, MEDIUM or HIGH
 *	dynamic = LOW			# the severity of dynamic code (default LOW)
 *	module os HIGH Operating system interface
 *	pattern HIGH System command execution
 *	    \bos\.system\s*\(
 *	pattern LOW strings File write operations
 *	    \bopen\s*\([^)]*['"][wa]['"][^)]*\)
 *
 * A `pattern` line is followed by its regular expression on the next line, verbatim (leading
 * and trailing blanks dropped). Patterns are compiled once, when the file is read; one that
 * does not compile is an error naming the file and the line.
 *
 * How a cell is read (policy_check), in the form IPython will run it:
 *  - a real Python tokenizer (pylex.h) blanks comments and the contents of string literals, so
 *    a `#` in a string hides nothing and commented code is not counted; a pattern marked
 *    `strings` looks inside literals too. f-string fields are code;
 *  - restricted modules are found in every import form: `import a, os`, `import os.path as
 *    p`, `from os import system`, `from os.path import *`, `__import__("os")`,
 *    `importlib.import_module("os")`, `sys.modules["os"]` (a module matches its submodules);
 *  - dynamic code is reported as such (at the policy's `dynamic` severity): `exec`, `eval`,
 *    `compile`, `__import__` and `import_module` of a value computed at run time, or taken as
 *    a value. Of a string literal they are read as the code (or module) the literal holds;
 *  - IPython's syntax is read as IPython transforms it (prompts stripped, `%%cell` magics,
 *    `!cmd`, `!!cmd`, `x = !cmd`, `%magic`, `x = %magic`, `,f a`, `;f a`, `/f a`, and
 *    automagic: a one-line `ls -l` or `rm x`). A shell command is checked as
 *    `os.system("CMD")`; `%time`, `%timeit`, `%prun`, `%debug`, `%%capture` and their kin
 *    check their code; `%run F` is `exec(open("F").read())`; `%%writefile F` is
 *    `open("F", "w")`; `%cd D` is `os.chdir("D")`; `%env` is `os.environ`; `%load_ext M`
 *    imports M; magics that run what cannot be seen (`%rerun`, `%macro`, `%edit`,
 *    `%alias_magic`, `%autocall`, `%rehashx`) are dynamic code.
 *
 * Positions are 1-based lines and columns (in characters) of the cell. What an analysis
 * cannot see (names built at run time, attributes fetched by getattr, code read from files)
 * the runtime import hook partly covers; the rest is the container's job.
 */

#include <stddef.h>
#include <cjson/cJSON.h>
#include "util.h"

enum policy_severity {
	POLICY_SAFE,
	POLICY_LOW,
	POLICY_MEDIUM,
	POLICY_HIGH,
};

struct policy_pattern {
	char *regex;			/* as written in the file */
	char *description;
	enum policy_severity severity;
	int strings;			/* also looks inside string literals */
	unsigned line;			/* where the file gives the regex */
	void *code;			/* the compiled pcre2_code */
};

struct policy_module {
	char *name;			/* dotted: "os", "os.path" */
	char *description;
	enum policy_severity severity;
};

struct policy {
	char *name;			/* "production" (the file's name without .policy) */
	char *source;			/* the file it was read from */
	char *description;
	enum policy_severity threshold;
	enum policy_severity dynamic;	/* the severity of dynamic code */
	struct policy_pattern *patterns;
	size_t npatterns;
	struct policy_module *modules;
	size_t nmodules;
};

enum policy_kind {
	POLICY_V_PATTERN,		/* `rule` indexes patterns */
	POLICY_V_MODULE,		/* `rule` indexes modules */
	POLICY_V_DYNAMIC,		/* code the analysis cannot follow */
};

struct policy_violation {
	enum policy_kind kind;
	size_t rule;
	enum policy_severity severity;
	unsigned line, column;		/* 1-based, in the cell */
	char *what;			/* the code: "import os", the matched text, "exec(...)" */
	char *description;		/* the rule's description, or what the dynamic code is */
};

struct policy_verdict {
	struct policy_violation *v;
	size_t n, alloc;
	int blocked;			/* a violation at or above the threshold */
};

/*
 * Read a policy: NAME (looked up as NAME.policy in $XDG_CONFIG_HOME/cellbox/policies, beside
 * the executable, and in the install's share/cellbox/policies) or a FILE (a path with a `/`
 * or ending in .policy). NULL with `err` set ("no policy 'x' (the presets are ...)",
 * "FILE:LINE: ..."). policy_free() releases it.
 */
struct policy *policy_load(const char *name_or_file, struct strbuf *err);
/* Parse policy text; `name` is used in messages ("NAME:LINE: ..."). */
struct policy *policy_parse(const char *text, const char *name, struct strbuf *err);
void policy_free(struct policy *p);
/* Whether the argument of --policy means no policy ("none", "off", ""). */
int policy_is_none(const char *name_or_file);
/* The directories policy_load() looks in, in order; NULL-terminated, free with the strings. */
char **policy_dirs(void);
/* Append the names of the policies found in policy_dirs(), ", " between. */
void policy_list(struct strbuf *out);

/* Check a cell (UTF-8 text) against the policy; the verdict is the caller's to release. */
void policy_check(const struct policy *p, const char *code, size_t len,
		  struct policy_verdict *v);
void policy_verdict_release(struct policy_verdict *v);
/* Whether a violation of severity `s` blocks under the policy. */
int policy_blocks(const struct policy *p, enum policy_severity s);

const char *policy_severity_name(enum policy_severity s);
/* Parse SAFE, LOW, MEDIUM or HIGH (any case); -1 when it is none of them. */
int policy_severity_parse(const char *s, size_t n, enum policy_severity *out);

/*
 * The verdict as lines for people: one per violation, "  LINE:COL  SEVERITY  module os:
 * Operating system interface (import os)", those below the threshold marked as not blocking.
 */
void policy_verdict_lines(const struct policy *p, const struct policy_verdict *v,
			  struct strbuf *out);
/* One sentence: "blocked by policy 'production' (blocks MEDIUM and above): 2 violations". */
void policy_verdict_summary(const struct policy *p, const struct policy_verdict *v,
			    struct strbuf *out);
/*
 * llm-sandbox's is_safe() as JSON: {safe, policy, threshold, violations: [{line, column,
 * kind, rule, severity, description, code, blocking}]}.
 */
cJSON *policy_verdict_json(const struct policy *p, const struct policy_verdict *v);
/*
 * The error event of a blocked cell, as the kernel would send it: {type: "error", ename:
 * "SecurityViolation", evalue, traceback: [lines], violations: [...]}.
 */
cJSON *policy_error_event(const struct policy *p, const struct policy_verdict *v);
/*
 * The modules the kernel's import hook refuses (those whose severity blocks), as the
 * `policy` request of the runner: {modules: [{name, description, severity}], policy: NAME}.
 * NULL when the policy blocks no module.
 */
cJSON *policy_hook_request(const struct policy *p);

#endif
