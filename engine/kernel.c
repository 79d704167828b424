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
		.copy_in = { "(lambda os, sh, s, d: (os.makedirs(os.path.dirname(os.path.abspath(d)), "
			     "exist_ok=True), sh.copyfile(s, d)))(__import__('os'), "
			     "__import__('shutil'), ", ", ", ")\n" },
		.copy_out = { "__import__('shutil').copyfile(", ", ", ")\n" },
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
		.preimport = r_preimport,
		.copy_in = { "local({s <- ", "; d <- ", "\n"
			     "dir.create(dirname(normalizePath(d, mustWork = FALSE)), recursive = TRUE, "
			     "showWarnings = FALSE)\n"
			     "ok <- withCallingHandlers(file.copy(s, d, overwrite = TRUE), warning = "
			     "function(w) stop(conditionMessage(w), call. = FALSE))\n"
			     "if (!ok) stop(\"cannot write '\", d, \"'\", call. = FALSE)\n"
			     "invisible()})\n" },
		.copy_out = { "local({s <- ", "; d <- ", "\n"
			      "if (!file.exists(s) || dir.exists(s)) stop(\"no such file: '\", s, \"'\", "
			      "call. = FALSE)\n"
			      "if (!file.copy(s, d, overwrite = TRUE)) stop(\"cannot read '\", s, \"'\", "
			      "call. = FALSE)\n"
			      "invisible()})\n" },
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

const struct kernel_def *kernel_find(const char *name)
{
	if (!name)
		return NULL;
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
	return NULL;
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

void kernel_list(struct strbuf *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++)
		strbuf_addf(out, "%s%s", i ? ", " : "", kernels[i].name);
}
