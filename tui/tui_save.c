/* Saving and loading cells as percent .py (and writing a bare .ipynb). */
#include "tui_save.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether `s` ends with `suffix`. */
static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* A notebook holding the cells, without outputs. */
static char *notebook(const char *const *cells, size_t n)
{
	cJSON *nb = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(nb, "cells"), *md;
	char *text;

	for (size_t i = 0; i < n; i++) {
		cJSON *c = cJSON_CreateObject(), *src = cJSON_CreateArray();
		const char *p = cells[i];
		char id[32];

		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
			char *line = xstrndup(p, len);
			cJSON_AddItemToArray(src, cJSON_CreateString(line));
			free(line);
			p += len;
		}
		snprintf(id, sizeof(id), "cell-%zu", i + 1);
		cJSON_AddStringToObject(c, "cell_type", "code");
		cJSON_AddNullToObject(c, "execution_count");
		cJSON_AddStringToObject(c, "id", id);
		cJSON_AddObjectToObject(c, "metadata");
		cJSON_AddArrayToObject(c, "outputs");
		cJSON_AddItemToObject(c, "source", src);
		cJSON_AddItemToArray(arr, c);
	}
	md = cJSON_AddObjectToObject(nb, "metadata");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "kernelspec"), "name", "python3");
	cJSON_AddNumberToObject(nb, "nbformat", 4);
	cJSON_AddNumberToObject(nb, "nbformat_minor", 5);
	text = cJSON_Print(nb);
	cJSON_Delete(nb);
	return text;
}

int tui_save_cells(const char *path, const char *const *cells, size_t n, struct strbuf *msg)
{
	struct strbuf out = STRBUF_INIT;
	char *tmp = xasprintf("%s.tmp", path);
	int fd = -1, rc = -1;

	if (ends_with(path, ".ipynb")) {
		char *text = notebook(cells, n);
		strbuf_addstr(&out, text);
		strbuf_addch(&out, '\n');
		free(text);
	} else {
		for (size_t i = 0; i < n; i++)
			strbuf_addf(&out, "%s# %%%%\n%s\n", i ? "\n" : "", cells[i]);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, out.buf, out.len) < 0 || close(fd) < 0) {
		strbuf_addf(msg, "cannot write '%s': %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) < 0) {
		strbuf_addf(msg, "cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	strbuf_release(&out);
	return rc;
}

/* Add cell text s[0..len), trimmed of blank lines at both ends, when it is not empty. */
static void add_cell(char ***cells, size_t *n, const char *s, size_t len)
{
	while (len && (s[0] == '\n'))
		s++, len--;
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	if (!len)
		return;
	*cells = xrealloc(*cells, (*n + 1) * sizeof(**cells));
	(*cells)[(*n)++] = xstrndup(s, len);
}

int tui_load_cells(const char *path, char ***cells, size_t *n, struct strbuf *msg)
{
	struct strbuf text = STRBUF_INIT;
	const char *p, *start;
	int markdown = 0;

	*cells = NULL;
	*n = 0;
	if (strbuf_read_file(&text, path, 64u << 20) < 0) {
		strbuf_addf(msg, "cannot read '%s': %s", path, strerror(errno));
		strbuf_release(&text);
		return -1;
	}
	p = start = text.buf;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len >= 4 && !strncmp(p, "# %%", 4)) {
			if (!markdown)
				add_cell(cells, n, start, (size_t)(p - start));
			markdown = strstr(p, "[markdown]") && strstr(p, "[markdown]") < p + len;
			start = p + len + (nl ? 1 : 0);
		}
		p += len + (nl ? 1 : 0);
	}
	if (!markdown)
		add_cell(cells, n, start, (size_t)(p - start));
	strbuf_release(&text);
	if (!*n) {
		strbuf_addf(msg, "'%s' has no code cells", path);
		return -1;
	}
	return 0;
}
