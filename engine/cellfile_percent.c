/*
 * cellfile's percent format (jupytext's `# %%` scripts): the reader, with where each cell is
 * in the text, and the writers of a script and of one cell (see cellfile.h).
 */
#include "cellfile.h"

#include <stdlib.h>
#include <string.h>

/* Whether `line` is a `# %%` marker; *rest is what follows it. */
static int percent_marker(const char *line, const char **rest)
{
	const char *p = line + strspn(line, " \t");

	if (*p++ != '#')
		return 0;
	p += strspn(p, " \t");
	if (strncmp(p, "%%", 2))
		return 0;
	p += 2;
	p += strspn(p, "%");
	if (*p && *p != ' ' && *p != '\t')
		return 0;
	*rest = p + strspn(p, " \t");
	return 1;
}

/* Whether `line` is a commented magic or shell command (`# %time`, `#!ls`), as jupytext says. */
static const char *commented_magic(const char *line)
{
	const char *p = line + strspn(line, " \t"), *body;

	if (*p != '#')
		return NULL;
	body = p + 1;
	if (*body == ' ')
		body++;
	if (body[0] == '%' && (body[1] == '%' ? body[2] : body[1]) &&
	    strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
		   body[1] == '%' ? body[2] : body[1]))
		return body;
	if (body[0] == '!' && body[1] && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.~$/{", body[1]))
		return body;
	return NULL;
}

/* Parse the text after a marker into the cell type, title and metadata. */
static void parse_marker(const char *rest, const char **type, cJSON *md)
{
	struct strbuf title = STRBUF_INIT;
	const char *p = rest;

	*type = "code";
	strbuf_init(&title, 0);
	while (*p) {
		const char *end, *eq;
		size_t wl;

		p += strspn(p, " \t");
		if (!*p)
			break;
		if (*p == '{') {
			const char *pe = NULL;
			cJSON *j = cJSON_ParseWithOpts(p, &pe, 0);
			if (cJSON_IsObject(j)) {
				cJSON *c;
				while ((c = j->child)) {
					cJSON_DetachItemViaPointer(j, c);
					cJSON_DeleteItemFromObjectCaseSensitive(md, c->string);
					cJSON_AddItemToObject(md, c->string, c);
				}
				cJSON_Delete(j);
				p = pe;
				continue;
			}
			cJSON_Delete(j);
		}
		wl = strcspn(p, " \t");
		if ((wl == 10 && !strncmp(p, "[markdown]", 10)) || (wl == 4 && !strncmp(p, "[md]", 4))) {
			*type = "markdown";
			p += wl;
			continue;
		}
		if (wl == 5 && !strncmp(p, "[raw]", 5)) {
			*type = "raw";
			p += wl;
			continue;
		}
		eq = memchr(p, '=', wl);
		if (eq && eq > p && strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") ==
		    (size_t)(eq - p)) {
			char *key = xstrndup(p, (size_t)(eq - p));
			const char *v = eq + 1, *ve = NULL;
			cJSON *val = NULL;

			if (*v == '[' || *v == '{' || *v == '"')
				val = cJSON_ParseWithOpts(v, &ve, 0);
			if (!val) {
				size_t vl = strcspn(v, " \t");
				char *word = xstrndup(v, vl);
				val = cJSON_Parse(word);
				if (!val || cJSON_IsObject(val) || cJSON_IsArray(val)) {
					cJSON_Delete(val);
					val = cJSON_CreateString(word);
				}
				free(word);
				ve = v + vl;
			}
			cJSON_DeleteItemFromObjectCaseSensitive(md, key);
			cJSON_AddItemToObject(md, key, val);
			free(key);
			p = ve;
			continue;
		}
		end = p + wl;
		if (title.len)
			strbuf_addch(&title, ' ');
		strbuf_add(&title, p, (size_t)(end - p));
		p = end;
	}
	if (title.len)
		cJSON_AddStringToObject(md, "title", title.buf);
	strbuf_release(&title);
}

/* Turn the lines of one cell into its source and add the cell. */
static void percent_cell(cJSON *nb, const char *type, cJSON *md, char **lines, size_t n)
{
	struct strbuf src = STRBUF_INIT;
	cJSON *cell;
	int code = !strcmp(type, "code");

	while (n && !lines[n - 1][strspn(lines[n - 1], " \t")])
		n--;	/* blank lines before the next marker separate cells */
	strbuf_init(&src, 0);
	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i], *m;

		if (i)
			strbuf_addch(&src, '\n');
		if (!code) {
			if (l[0] == '#')
				l += l[1] == ' ' ? 2 : 1;
		} else if ((m = commented_magic(l))) {
			strbuf_add(&src, l, strspn(l, " \t"));
			l = m;
		}
		strbuf_addstr(&src, l);
	}
	cell = cellfile_add_cell(nb, type, src.buf);
	if (md)
		cJSON_ReplaceItemInObjectCaseSensitive(cell, "metadata", md);
	strbuf_release(&src);
}

/* Parse percent text; with `map`, also where its header and each cell are in the text. */
static cJSON *parse_percent(const char *text, size_t len, struct cellfile_percent_map *map)
{
	cJSON *nb = cellfile_new_notebook(), *md = NULL;
	char *copy = xstrndup(text, len), *p = copy;
	char **lines = NULL;
	size_t n = 0, alloc = 0, start = 0, i;
	const char *type = "code";
	int seen_marker = 0;

	/* Split into lines, dropping the '\n' and a '\r' before it. */
	while (*p) {
		char *nl = strchr(p, '\n');
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			lines = xrealloc(lines, alloc * sizeof(*lines));
		}
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		p = nl + 1;
	}
	i = 0;
	/* The commented YAML header, "# ---" ... "# ---", is not a cell. */
	if (n && !strcmp(lines[0], "# ---")) {
		for (size_t k = 1; k < n && lines[k][0] == '#'; k++)
			if (!strcmp(lines[k], "# ---")) {
				i = k + 1;
				break;
			}
	}
	while (i < n && !lines[i][strspn(lines[i], " \t")])
		i++;
	start = i;
	if (map) {
		memset(map, 0, sizeof(*map));
		map->header = i < n ? (size_t)(lines[i] - copy) : len;
	}
	for (; i <= n; i++) {
		const char *rest = "";

		if (i < n && !percent_marker(lines[i], &rest))
			continue;
		/* Text before the first marker is a cell when it is not blank. */
		if (seen_marker || i > start) {
			percent_cell(nb, type, md, lines + start, i - start);
			if (map) {
				size_t from = seen_marker ? (size_t)(lines[start - 1] - copy) :
					      (size_t)(lines[start] - copy);
				size_t to = i < n ? (size_t)(lines[i] - copy) : len;
				map->cells = xrealloc(map->cells,
						      (map->ncells + 1) * sizeof(*map->cells));
				map->cells[map->ncells].off = from;
				map->cells[map->ncells].len = to - from;
				map->cells[map->ncells].marker = seen_marker;
				map->ncells++;
			}
		}
		md = NULL;
		if (i == n)
			break;
		seen_marker = 1;
		md = cJSON_CreateObject();
		parse_marker(rest, &type, md);
		start = i + 1;
	}
	cJSON_Delete(md);
	free(lines);
	free(copy);
	return nb;
}

cJSON *cellfile_parse_percent(const char *text, size_t len)
{
	return parse_percent(text, len, NULL);
}

cJSON *cellfile_parse_percent_map(const char *text, size_t len, struct cellfile_percent_map *map)
{
	return parse_percent(text, len, map);
}

void cellfile_percent_map_release(struct cellfile_percent_map *map)
{
	free(map->cells);
	memset(map, 0, sizeof(*map));
}

/* Append a source as comment lines. */
static void write_commented(const char *src, struct strbuf *out)
{
	const char *p = src;

	while (*p) {
		size_t l = strcspn(p, "\n");
		strbuf_addstr(out, l ? "# " : "#");
		strbuf_add(out, p, l);
		strbuf_addch(out, '\n');
		p += l + (p[l] == '\n');
	}
}

void cellfile_write_percent_cell(const cJSON *cell, struct strbuf *out)
{
	const char *type = cellfile_cell_type(cell);
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(cell, "metadata"), *m;
	char *src = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
	const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, "title"));

	strbuf_addstr(out, "# %%");
	if (title)
		strbuf_addf(out, " %s", title);
	if (!strcmp(type, "markdown"))
		strbuf_addstr(out, " [markdown]");
	else if (!strcmp(type, "raw"))
		strbuf_addstr(out, " [raw]");
	cJSON_ArrayForEach(m, md) {
		char *v;
		/* Run-time metadata stays out of a script, as jupytext leaves it out. */
		if (!strcmp(m->string, "title") || !strcmp(m->string, "execution") ||
		    !strcmp(m->string, "ExecuteTime"))
			continue;
		v = cJSON_PrintUnformatted(m);
		strbuf_addf(out, " %s=%s", m->string, v);
		cJSON_free(v);
	}
	strbuf_addch(out, '\n');
	if (strcmp(type, "code")) {
		write_commented(src, out);
	} else {
		const char *p = src;
		while (*p) {
			size_t l = strcspn(p, "\n"), ws = strspn(p, " \t");
			if (ws < l && (p[ws] == '%' || p[ws] == '!')) {
				strbuf_add(out, p, ws);
				strbuf_addstr(out, "# ");
				strbuf_add(out, p + ws, l - ws);
			} else {
				strbuf_add(out, p, l);
			}
			strbuf_addch(out, '\n');
			p += l + (p[l] == '\n');
		}
	}
	free(src);
}

void cellfile_write_percent(const cJSON *nb, struct strbuf *out)
{
	const cJSON *cell;
	int first = 1;

	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
		if (!first)
			strbuf_addch(out, '\n');
		first = 0;
		cellfile_write_percent_cell(cell, out);
	}
}
