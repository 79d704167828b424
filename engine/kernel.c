/* The kernels a session can run: Python on IPython, R. */
#include "kernel.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern const unsigned char runner_zip[], runner_r[];
extern const size_t runner_zip_len, runner_r_len;

/* "import a, b" */
static char *python_preimport(const char *list)
{
	return xasprintf("import %s", list);
}

/* "library(a); library(b)" without the packages' start-up messages */
static char *r_preimport(const char *list)
{
	struct strbuf code = STRBUF_INIT;
	char *copy = xstrdup(list), *save = NULL;

	strbuf_addstr(&code, "suppressPackageStartupMessages({");
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
		strbuf_addf(&code, "library(%s); ", t);
	strbuf_addstr(&code, "})");
	free(copy);
	return strbuf_detach(&code, NULL);
}

void kernel_literal(struct strbuf *sb, const char *s)
{
	cJSON *str = cJSON_CreateString(s);
	char *text = cJSON_PrintUnformatted(str);

	strbuf_addstr(sb, text);
	cJSON_free(text);
	cJSON_Delete(str);
}

/* exec(body, {names: values}): the user's namespace sees nothing of it. */
static char *python_helper_cell(const char *body, const char *const *names,
				const char *const *values)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "exec(");
	kernel_literal(&sb, body);
	strbuf_addstr(&sb, ", {");
	for (size_t i = 0; names[i]; i++)
		strbuf_addf(&sb, "%s'%s': %s", i ? ", " : "", names[i], values[i]);
	strbuf_addstr(&sb, "})\n");
	return strbuf_detach(&sb, NULL);
}

/* local({names <- values; body}): the global environment sees nothing of it. */
static char *r_helper_cell(const char *body, const char *const *names, const char *const *values)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "local({\n");
	for (size_t i = 0; names[i]; i++)
		strbuf_addf(&sb, "%s <- %s\n", names[i], values[i]);
	strbuf_addf(&sb, "%sinvisible()})\n", body);
	return strbuf_detach(&sb, NULL);
}

/*
 * The variables pane's listing in Python: builtins and IPython by name (the user's may hide
 * them); sizes shallow (nbytes, pandas' memory_usage without deep: a frame of strings is not
 * walked after every cell).
 */
static const char python_vars_list[] =
	"def __cellbox_vars():\n"
	"    import builtins as b, sys, json\n"
	"    from IPython import get_ipython\n"
	"    type, len, str, any, all, int, tuple = b.type, b.len, b.str, b.any, b.all, b.int, b.tuple\n"
	"    ns, hidden = get_ipython().user_ns, get_ipython().user_ns_hidden\n"
	"    mod = type(sys)\n"
	"    own = ('In', 'Out', 'exit', 'quit', 'get_ipython')\n"
	"    plain = (b.list, tuple, b.dict, b.set, b.frozenset, str, b.bytes, b.bytearray, b.range)\n"
	"    cut = lambda s: str(s)[:256].encode('utf-8', 'replace').decode('utf-8')\n"
	"    names = b.sorted(k for k in b.list(ns) if type(k) is str and k[:1] != '_'\n"
	"                     and k not in own and not (k in hidden and hidden[k] is ns[k])\n"
	"                     and type(ns[k]) is not mod)\n"
	"    out = []\n"
	"    for k in names[:500]:\n"
	"        v = ns.get(k)\n"
	"        t = type(v)\n"
	"        e = {'name': cut(k), 'type': '?'}\n"
	"        try:\n"
	"            e['type'] = cut(t.__name__)\n"
	"            mro = t.__mro__\n"
	"            if any(t is p for p in plain):\n"
	"                e['len'] = len(v)\n"
	"            elif any('shape' in c.__dict__ for c in mro):\n"
	"                s = v.shape\n"
	"                if type(s) is tuple and len(s) <= 32 and all(type(i) is int for i in s):\n"
	"                    e['shape'] = b.list(s)\n"
	"            n = None\n"
	"            if any('nbytes' in c.__dict__ for c in mro):\n"
	"                n = v.nbytes\n"
	"            elif any('memory_usage' in c.__dict__ for c in mro):\n"
	"                n = int(v.memory_usage(deep=False).sum())\n"
	"            e['size'] = n if type(n) is int else sys.getsizeof(v)\n"
	"        except Exception:\n"
	"            pass\n"
	"        out.append(e)\n"
	"    b.print(json.dumps({'cellbox_vars': out, 'count': len(names)}))\n"
	"try:\n"
	"    __cellbox_vars()\n"
	"finally:\n"
	"    del __cellbox_vars\n";

/* The value of one name in Python: reprlib's repr with wide limits (no list of a million). */
static char *python_vars_value(const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "def __cellbox_value(k):\n"
		      "    import builtins as b, reprlib\n"
		      "    from IPython import get_ipython\n"
		      "    r = reprlib.Repr()\n"
		      "    r.maxlevel = 6\n"
		      "    r.maxdict = r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = 1000\n"
		      "    r.maxdeque = r.maxarray = 1000\n"
		      "    r.maxstring = r.maxlong = r.maxother = 65536\n"
		      "    b.print(r.repr(get_ipython().user_ns[k])[:65536])\n"
		      "try:\n"
		      "    __cellbox_value(");
	kernel_literal(&sb, name);
	strbuf_addstr(&sb, ")\nfinally:\n    del __cellbox_value\n");
	return strbuf_detach(&sb, NULL);
}

/* The listing in R: ls() of the global environment, class(), dim() or length(), object.size(). */
static const char r_vars_list[] =
	"local({\n"
	"  q <- function(s) {\n"
	"    s <- enc2utf8(as.character(s)[1L])\n"
	"    if (is.na(s) || !validUTF8(s)) return(\"\\\"?\\\"\")\n"
	"    cp <- utf8ToInt(s)\n"
	"    if (length(cp) > 256L) cp <- cp[1:256]\n"
	"    ch <- intToUtf8(cp, multiple = TRUE)\n"
	"    bad <- cp < 32L | cp == 34L | cp == 92L | (cp >= 127L & cp < 160L)\n"
	"    ch[bad] <- sprintf(\"\\\\u%04x\", cp[bad])\n"
	"    paste0(\"\\\"\", paste(ch, collapse = \"\"), \"\\\"\")\n"
	"  }\n"
	"  e <- globalenv()\n"
	"  n <- ls(e, sorted = TRUE)\n"
	"  rows <- character(0)\n"
	"  for (k in n[seq_len(min(length(n), 500L))]) {\n"
	"    v <- tryCatch(get(k, envir = e, inherits = FALSE), error = function(err) NULL)\n"
	"    cl <- tryCatch(class(v)[1L], error = function(err) \"?\")\n"
	"    d <- tryCatch(dim(v), error = function(err) NULL)\n"
	"    f <- paste0(\"{\\\"name\\\":\", q(k), \",\\\"type\\\":\", q(cl))\n"
	"    if (is.numeric(d) && length(d) <= 32L && !anyNA(d)) {\n"
	"      f <- paste0(f, \",\\\"shape\\\":[\", paste(format(d, scientific = FALSE), "
	"collapse = \",\"), \"]\")\n"
	"    } else if (is.atomic(v) || is.list(v)) {\n"
	"      f <- paste0(f, \",\\\"len\\\":\", format(length(v), scientific = FALSE))\n"
	"    }\n"
	"    sz <- tryCatch(as.numeric(utils::object.size(v)), error = function(err) NA)\n"
	"    if (is.finite(sz)) f <- paste0(f, \",\\\"size\\\":\", format(sz, scientific = FALSE))\n"
	"    rows <- c(rows, paste0(f, \"}\"))\n"
	"  }\n"
	"  cat(\"{\\\"cellbox_vars\\\":[\", paste(rows, collapse = \",\"), \"],\\\"count\\\":\", "
	"length(n), \"}\\n\", sep = \"\")\n"
	"})\n";

/* The value of one name in R: what print() shows, cut at 64 KiB. */
static char *r_vars_value(const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "local({\n  k <- ");
	kernel_literal(&sb, name);
	strbuf_addstr(&sb, "\n"
		      "  v <- get(k, envir = globalenv(), inherits = FALSE)\n"
		      "  s <- paste(utils::capture.output(print(v)), collapse = \"\\n\")\n"
		      "  if (nchar(s, type = \"bytes\") > 65536L) s <- substr(s, 1L, 65536L)\n"
		      "  cat(s, \"\\n\", sep = \"\")\n"
		      "  invisible()\n"
		      "})\n");
	return strbuf_detach(&sb, NULL);
}

static const struct kernel_def kernels[] = {
	{
		.name = "python",
		.aliases = "python3|ipython|py",
		.language = "python",
		.kernelspec = "python3",
		.display_name = "Python 3 (ipykernel)",
		.extensions = ".py",
		.runner = "runner.zip",
		.code = runner_zip,
		.code_len = &runner_zip_len,
		.interpreter = CELLBOX_DEFAULT_PYTHON,
		.uses = KERNEL_USES_PYTHON,
		.policy = 1,
		.pip = 1,
		.container_exec = "python3",
		.image = "cellbox-python",
		.indent = "    ",
		.openers = ":",
		.blank_line_ends_cell = 1,
		.preimport = python_preimport,
		.helper_cell = python_helper_cell,
		.vars_list = python_vars_list,
		.vars_value = python_vars_value,
		.copy_in = "import os, shutil\n"
			   "d = os.path.expanduser(d)\n"
			   "if os.path.isdir(d):\n"
			   "    raise IsADirectoryError('%r is a directory' % d)\n"
			   "os.makedirs(os.path.dirname(os.path.abspath(d)), exist_ok=True)\n"
			   "shutil.copyfile(s, d)\n",
		.copy_out = "import os, stat\n"
			    "s = os.path.expanduser(s)\n"
			    "with open(s, 'rb') as f:\n"
			    "    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):\n"
			    "        raise IsADirectoryError('%r is not a regular file' % s)\n"
			    "    with open(d, 'xb') as o:\n"
			    "        while n >= 0:\n"
			    "            b = f.read(min(n + 1, 1 << 20))\n"
			    "            if not b:\n"
			    "                break\n"
			    "            o.write(b)\n"
			    "            n -= len(b)\n",
	},
	{
		.name = "r",
		.aliases = "ir|rscript",
		.language = "R",
		.kernelspec = "ir",
		.display_name = "R",
		.extensions = ".R|.r",
		.runner = "runner.R",
		.code = runner_r,
		.code_len = &runner_r_len,
		.interpreter = CELLBOX_DEFAULT_RSCRIPT,
		.uses = KERNEL_USES_RSCRIPT,
		.container_exec = "Rscript",
		.image = "cellbox-r",
		.interrupt_group = 1,
		.wake_stdin = 1,
		/* no packages before the runner forks its helpers: they stay small (runner.R) */
		.env = { "R_DEFAULT_PACKAGES", "NULL" },
		.indent = "  ",
		.openers = "{([",
		.closers = "})]",
		.preimport = r_preimport,
		.helper_cell = r_helper_cell,
		.vars_list = r_vars_list,
		.vars_value = r_vars_value,
		.copy_in = "d <- path.expand(d)\n"
			   "if (dir.exists(d)) stop(\"'\", d, \"' is a directory\", call. = FALSE)\n"
			   "dir.create(dirname(normalizePath(d, mustWork = FALSE)), recursive = TRUE, "
			   "showWarnings = FALSE)\n"
			   "ok <- withCallingHandlers(file.copy(s, d, overwrite = TRUE), warning = "
			   "function(w) stop(conditionMessage(w), call. = FALSE))\n"
			   "if (!ok) stop(\"cannot write '\", d, \"'\", call. = FALSE)\n",
		.copy_out = "s <- path.expand(s)\n"
			    "if (!file.exists(s) || dir.exists(s)) stop(\"no such file: '\", s, \"'\", "
			    "call. = FALSE)\n"
			    "i <- file(s, \"rb\")\n"
			    "o <- file(d, \"wb\")\n"
			    "tryCatch(repeat {\n"
			    "  b <- readBin(i, \"raw\", min(n + 1, 1048576))\n"
			    "  if (!length(b)) break\n"
			    "  writeBin(b, o)\n"
			    "  n <- n - length(b)\n"
			    "  if (n < 0) break\n"
			    "}, finally = { close(i); close(o) })\n",
	},
};

/* Whether `word` is one of the '|'-separated `list` (any case). */
static int in_list(const char *list, const char *word, int icase)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !(icase ? strncasecmp(p, word, n) : strncmp(p, word, n)))
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

/*
 * Bridged kernels (`jupyter:NAME`): the Python runner starts the kernelspec NAME where it runs
 * and serves it through the channel (runner/bridge.py). What cellbox does in the kernel's own
 * language (the policy, copy-in and copy-out cells, the variables pane, pip, preimports) is
 * not there for it.
 */
#define BRIDGE_PREFIX "jupyter:"
#define EXISTING_PREFIX "existing:"	/* and an absolute connection file: --existing */
#define BRIDGE_MAX 8			/* bridged kernels a process knows at once */

/* Whether `spec` may name a kernelspec: 1 to 64 of [A-Za-z0-9._-] (Jupyter's own rule). */
static int spec_name_ok(const char *spec)
{
	size_t n = strlen(spec);

	if (!n || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((spec[i] >= 'a' && spec[i] <= 'z') || (spec[i] >= 'A' && spec[i] <= 'Z') ||
		      (spec[i] >= '0' && spec[i] <= '9') || strchr("._-", spec[i])))
			return 0;
	return 1;
}

static const struct kernel_def *bridged(const char *name)
{
	static struct kernel_def made[BRIDGE_MAX];
	static size_t nmade;
	int existing = !strncmp(name, EXISTING_PREFIX, strlen(EXISTING_PREFIX));
	const char *spec = name + strlen(existing ? EXISTING_PREFIX : BRIDGE_PREFIX);
	struct kernel_def *k;

	if (existing ? spec[0] != '/' || strlen(spec) > 4096 || strpbrk(spec, "\n\r") :
		       !spec_name_ok(spec))
		return NULL;
	for (size_t i = 0; i < nmade; i++)
		if (!strcmp(made[i].name, name))
			return &made[i];
	if (nmade == BRIDGE_MAX)
		return NULL;
	k = &made[nmade++];
	*k = (struct kernel_def){
		.name = xstrdup(name),
		.runner = kernels[0].runner,
		.code = kernels[0].code,
		.code_len = kernels[0].code_len,
		.interpreter = kernels[0].interpreter,
		.uses = KERNEL_USES_PYTHON,
		.container_exec = kernels[0].container_exec,
		.image = kernels[0].image,
		.env = { "CELLBOX_BRIDGE", NULL },
		.indent = "    ",
		.openers = "",
		.blank_line_ends_cell = 1,
	};
	k->kernelspec = xstrdup(existing ? "existing" : spec);
	k->language = k->display_name = k->kernelspec;
	k->env[1] = k->name + (existing ? 0 : strlen(BRIDGE_PREFIX));	/* what the runner starts */
	k->local_only = existing;
	return k;
}

int kernel_bridged(const struct kernel_def *k)
{
	return k->env[0] && !strcmp(k->env[0], "CELLBOX_BRIDGE");
}

const struct kernel_def *kernel_find(const char *name)
{
	if (!name)
		return NULL;
	if (!strncasecmp(name, BRIDGE_PREFIX, strlen(BRIDGE_PREFIX)) ||
	    !strncmp(name, EXISTING_PREFIX, strlen(EXISTING_PREFIX)))
		return bridged(name);
	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++)
		if (!strcasecmp(kernels[i].name, name) || in_list(kernels[i].aliases, name, 1))
			return &kernels[i];
	return NULL;
}

const struct kernel_def *kernel_default(void)
{
	return &kernels[0];
}

const struct kernel_def *kernel_for_path(const char *path)
{
	const char *dot = path ? strrchr(path, '.') : NULL;

	if (!dot || strchr(dot, '/'))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++)
		if (in_list(kernels[i].extensions, dot, 0))
			return &kernels[i];
	return NULL;
}

/* The string `key` of object `obj`, or NULL. */
static const char *string_of(const cJSON *obj, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

const struct kernel_def *kernel_for_notebook(const cJSON *nb)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(nb, "metadata");
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(md, "kernelspec");
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(md, "language_info");
	const char *names[] = { string_of(spec, "name"), string_of(spec, "language"),
				string_of(info, "name") };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		const struct kernel_def *k = NULL;

		if (!names[i])
			continue;
		for (size_t j = 0; j < ARRAY_SIZE(kernels) && !k; j++)
			if (!strcasecmp(names[i], kernels[j].kernelspec) ||
			    !strcasecmp(names[i], kernels[j].language))
				k = &kernels[j];
		if (!k)
			k = kernel_find(names[i]);
		if (k)
			return k;
	}
	/*
	 * A kernelspec of a language cellbox has no kernel for (Octave's, Julia's): the
	 * installed one of that name, bridged, rather than Python running another language.
	 */
	if (names[0] && spec_name_ok(names[0])) {
		char *name = xasprintf(BRIDGE_PREFIX "%s", names[0]);
		const struct kernel_def *k = bridged(name);

		free(name);
		return k;
	}
	return NULL;
}

const struct kernel_def *kernel_for_file(const char *path, const cJSON *nb)
{
	const struct kernel_def *k = nb ? kernel_for_notebook(nb) : NULL;

	return k ? k : kernel_for_path(path);
}

void kernel_describe_notebook(const struct kernel_def *k, cJSON *nb)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(nb, "metadata"), *o;

	if (!cJSON_IsObject(md))
		return;
	if (!cJSON_GetObjectItemCaseSensitive(md, "kernelspec")) {
		o = cJSON_AddObjectToObject(md, "kernelspec");
		cJSON_AddStringToObject(o, "display_name", k->display_name);
		cJSON_AddStringToObject(o, "language", k->language);
		cJSON_AddStringToObject(o, "name", k->kernelspec);
	}
	if (!cJSON_GetObjectItemCaseSensitive(md, "language_info")) {
		o = cJSON_AddObjectToObject(md, "language_info");
		cJSON_AddStringToObject(o, "name", k->language);
	}
}

void kernel_list(struct strbuf *out, int bridged_too)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++)
		strbuf_addf(out, "%s%s", i ? ", " : "", kernels[i].name);
	if (bridged_too)
		strbuf_addstr(out, ", jupyter:NAME (an installed kernelspec)");
}
