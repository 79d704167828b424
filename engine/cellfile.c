/*
 * Cell files as cJSON trees: metadata, the nbformat reader and its checks, reading, loading
 * and saving a file, where a notebook's cells are. Lines and cells are cellfile_cells.c, the
 * notebook writer cellfile_json.c, the percent format cellfile_percent.c (see cellfile.h).
 */
#include "cellfile.h"
#include "usage.h"
#include "cellfile_int.h"
#include "numconv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- notebook metadata ---- */

/* Set obj[key] to a copy of v. */
static void set_member(cJSON *obj, const char *key, const cJSON *v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	cJSON_AddItemToObject(obj, key, cJSON_Duplicate(v, 1));
}

/* The object member `key` of obj, made when missing or not an object. */
static cJSON *object_member(cJSON *obj, const char *key)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsObject(m)) {
		cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
		m = cJSON_AddObjectToObject(obj, key);
	}
	return m;
}

void cellfile_set_kernel(cJSON *nb, const cJSON *kernel_info)
{
	const cJSON *li = cJSON_GetObjectItemCaseSensitive(kernel_info, "language_info");
	const cJSON *ks = cJSON_GetObjectItemCaseSensitive(kernel_info, "kernelspec");
	cJSON *md = object_member(nb, "metadata");
	const cJSON *have = cJSON_GetObjectItemCaseSensitive(md, "kernelspec");
	const char *lang = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(have, "language"));
	const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ks, "language"));

	if (cJSON_IsObject(li))
		set_member(md, "language_info", li);
	if (cJSON_IsObject(ks) && (!cJSON_IsObject(have) || !lang || !want || strcmp(lang, want)))
		set_member(md, "kernelspec", ks);
}

void cellfile_iso_time(double t, struct strbuf *out)
{
	/* (a stamp read back from a history file is outside input) */
	time_t sec = (time_t)(t = seconds_clamp(t));
	long usec = (long)((t - (double)sec) * 1e6 + 0.5);
	struct tm tm;
	char buf[32];

	if (usec >= 1000000) {
		sec++;
		usec -= 1000000;
	}
	gmtime_r(&sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	strbuf_addf(out, "%s.%06ldZ", buf, usec);
}

void cellfile_set_timing(cJSON *cell, double started, double finished)
{
	static const char *const keys[] = {
		"iopub.status.busy", "iopub.execute_input", "shell.execute_reply",
		"iopub.status.idle",
	};
	cJSON *md = object_member(cell, "metadata"), *ex;
	struct strbuf t = STRBUF_INIT;

	cJSON_DeleteItemFromObjectCaseSensitive(md, "execution");
	ex = cJSON_AddObjectToObject(md, "execution");
	strbuf_init(&t, 0);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		strbuf_reset(&t);
		cellfile_iso_time(i < 2 ? started : finished, &t);
		cJSON_AddStringToObject(ex, keys[i], t.buf);
	}
	strbuf_release(&t);
}

void cellfile_set_usage(cJSON *cell, const struct usage *u)
{
	cJSON *md = object_member(cell, "metadata"), *cb = object_member(md, "cellbox");

	cJSON_DeleteItemFromObjectCaseSensitive(cb, "usage");
	cJSON_AddItemToObject(cb, "usage", usage_to_json(u));
}

/* ---- nbformat ---- */

/* Say where in `text` the parser stopped, as line:column. */
static void json_position(const char *text, const char *at, struct strbuf *err)
{
	int line = 1, col = 1;

	for (const char *p = text; p < at; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	strbuf_addf(err, "%d:%d", line, col);
}

/* Whether `v` is a string or a list of strings. */
static int is_text(const cJSON *v)
{
	const cJSON *c;

	if (cJSON_IsString(v))
		return 1;
	if (!cJSON_IsArray(v))
		return 0;
	cJSON_ArrayForEach(c, v)
		if (!cJSON_IsString(c))
			return 0;
	return 1;
}

int cellfile_check_cell(cJSON *cell, int index, const char *name, struct strbuf *err)
{
	const char *type = cellfile_cell_type(cell);
	const cJSON *outs, *o;
	int added = 0;

	if (!cJSON_IsObject(cell)) {
		strbuf_addf(err, "%s: cell %d is not an object", name, index);
		return -1;
	}
	if (strcmp(type, "code") && strcmp(type, "markdown") && strcmp(type, "raw")) {
		strbuf_addf(err, "%s: cell %d: cell_type %s", name, index,
			    *type ? "must be code, markdown or raw" : "is missing");
		return -1;
	}
	if (!is_text(cJSON_GetObjectItemCaseSensitive(cell, "source"))) {
		strbuf_addf(err, "%s: cell %d: source is missing or not text", name, index);
		return -1;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(cell, "metadata"))) {
		strbuf_addf(err, "%s: cell %d: metadata is missing or not an object", name, index);
		return -1;
	}
	if (!cJSON_GetObjectItemCaseSensitive(cell, "id")) {
		cJSON_AddItemToObject(cell, "id", cellfile_new_id());
		added = 1;
	}
	if (strcmp(type, "code"))
		return added;
	outs = cJSON_GetObjectItemCaseSensitive(cell, "outputs");
	if (!cJSON_IsArray(outs)) {
		strbuf_addf(err, "%s: cell %d: outputs is missing or not a list", name, index);
		return -1;
	}
	cJSON_ArrayForEach(o, outs)
		if (!cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "output_type"))) {
			strbuf_addf(err, "%s: cell %d: an output has no output_type", name, index);
			return -1;
		}
	if (!cJSON_GetObjectItemCaseSensitive(cell, "execution_count"))
		cJSON_AddNullToObject(cell, "execution_count");
	return added;
}

cJSON *cellfile_parse_ipynb(const char *text, size_t len, const char *name, struct strbuf *err)
{
	const char *end = NULL;
	cJSON *nb = cJSON_ParseWithLengthOpts(text, len, &end, 0), *cells, *cell;
	const cJSON *major, *minor;
	int k = 0, added_ids = 0;

	if (!nb) {
		strbuf_addf(err, "%s:", name);
		json_position(text, end ? end : text, err);
		strbuf_addstr(err, ": not valid JSON");
		return NULL;
	}
	major = cJSON_GetObjectItemCaseSensitive(nb, "nbformat");
	minor = cJSON_GetObjectItemCaseSensitive(nb, "nbformat_minor");
	cells = cJSON_GetObjectItemCaseSensitive(nb, "cells");
	if (!cJSON_IsObject(nb)) {
		strbuf_addf(err, "%s: not a notebook (the top level is not an object)", name);
		goto bad;
	}
	if (!cJSON_IsNumber(major)) {
		strbuf_addf(err, "%s: not a notebook (no nbformat field)", name);
		goto bad;
	}
	if (major->valuedouble != 4) {
		strbuf_addf(err, "%s: nbformat %g is not supported (only 4)", name, major->valuedouble);
		goto bad;
	}
	if (!cJSON_IsNumber(minor)) {
		strbuf_addf(err, "%s: nbformat_minor is missing", name);
		goto bad;
	}
	if (!cJSON_IsArray(cells)) {
		strbuf_addf(err, "%s: cells is missing or not a list", name);
		goto bad;
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(nb, "metadata"))) {
		strbuf_addf(err, "%s: metadata is missing or not an object", name);
		goto bad;
	}
	cJSON_ArrayForEach(cell, cells) {
		int rc = cellfile_check_cell(cell, ++k, name, err);
		if (rc < 0)
			goto bad;
		added_ids |= rc;
	}
	/* Cell ids are nbformat 4.5: a 4.0-4.4 notebook that got them is upgraded, as nbformat does. */
	if (added_ids && minor->valuedouble < 5)
		cJSON_ReplaceItemInObjectCaseSensitive(nb, "nbformat_minor", cJSON_CreateNumber(5));
	return nb;
bad:
	cJSON_Delete(nb);
	return NULL;
}

/* Whether `path` ends with `ext`. */
static int has_ext(const char *path, const char *ext)
{
	size_t l = strlen(path), e = strlen(ext);
	return l >= e && !strcmp(path + l - e, ext);
}

int cellfile_read(const char *path, struct strbuf *text, struct strbuf *err)
{
	/* Opened without blocking, so a FIFO or a device is refused, never waited on. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), rc;
	struct stat st;

	if (fd < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		strbuf_addf(err, "cannot read '%s': it is %s, not a regular file (a cell file)", path,
			    S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory" :
			    S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
			    S_ISSOCK(st.st_mode) ? "a socket" : "not a file");
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	rc = strbuf_read_fd(text, fd, CELLFILE_MAX);
	if (rc < 0)
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
	close(fd);
	if (rc < 0)
		return -1;
	return utf8_check_text(text->buf, text->len, path, err);
}

cJSON *cellfile_load(const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	cJSON *nb = NULL;
	const char *first;

	if (cellfile_read(path, &text, err) == 0) {
		first = text.buf + strspn(text.buf, " \t\r\n");
		if (has_ext(path, ".ipynb") || (*first == '{' && !has_ext(path, ".py")))
			nb = cellfile_parse_ipynb(text.buf, text.len, path, err);
		else
			nb = cellfile_parse_percent(text.buf, text.len);
	}
	strbuf_release(&text);
	return nb;
}

int cellfile_save(const cJSON *nb, const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	int rc;

	if (has_ext(path, ".ipynb"))
		cellfile_write_ipynb(nb, &text);
	else
		cellfile_write_percent(nb, &text);
	rc = fsutil_write_atomic(path, text.buf, text.len, 0644, err);
	strbuf_release(&text);
	return rc;
}

/* ---- where a notebook's cells are, without parsing them ---- */

/* Skip white space. */
static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Skip the JSON string starting at p ('"'); the position after it, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Skip one JSON value (not checked: its parser does that); the position after it, or NULL. */
static const char *skip_value(const char *p, const char *end)
{
	int depth = 0;

	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && !strchr(",}] \t\r\n", *p))
			p++;
		return p;
	}
	while (p < end) {
		if (*p == '"') {
			p = skip_string(p, end);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
		p++;
	}
	return NULL;
}

int cellfile_ipynb_cells(const char *text, size_t len, struct cellfile_cells *out)
{
	const char *p = text, *end = text + len;

	memset(out, 0, sizeof(*out));
	p = skip_ws(p, end);
	if (p == end || *p++ != '{')
		return -1;
	for (;;) {
		const char *key, *kend;

		p = skip_ws(p, end);
		if (p == end || *p != '"')
			goto bad;
		key = p + 1;
		kend = skip_string(p, end);
		if (!kend)
			goto bad;
		p = skip_ws(kend, end);
		if (p == end || *p++ != ':')
			goto bad;
		p = skip_ws(p, end);
		if (kend - key - 1 == 5 && !memcmp(key, "cells", 5)) {
			if (p == end || *p != '[')
				goto bad;
			out->open = (size_t)(p - text);
			for (p++;;) {
				const char *v;
				p = skip_ws(p, end);
				if (p < end && *p == ']' && !out->n)
					break;
				v = skip_value(p, end);
				if (!v)
					goto bad;
				out->cells = xrealloc(out->cells, (out->n + 1) * sizeof(*out->cells));
				out->cells[out->n].off = (size_t)(p - text);
				out->cells[out->n].len = (size_t)(v - p);
				out->n++;
				p = skip_ws(v, end);
				if (p < end && *p == ',') {
					p++;
					continue;
				}
				if (p < end && *p == ']')
					break;
				goto bad;
			}
			out->close = (size_t)(p - text);	/* at the ']' */
			return 0;
		}
		p = skip_value(p, end);
		if (!p)
			goto bad;
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		goto bad;	/* the end of the object, or junk: no cells */
	}
bad:
	cellfile_cells_release(out);
	return -1;
}

void cellfile_cells_release(struct cellfile_cells *c)
{
	free(c->cells);
	memset(c, 0, sizeof(*c));
}
