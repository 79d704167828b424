/*
 * A notebook open for editing: reading it, its cells and their changes, recovering it. Its file
 * (format, identity, writing, the recovery file) is notebook_save.c (notebook_priv.h).
 */
#include "notebook.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notebook_priv.h"
#include "numconv.h"
#include "outmodel.h"

/* Whether `path` ends with `ext`. */
static int has_ext(const char *path, const char *ext)
{
	size_t l = strlen(path), e = strlen(ext);
	return l >= e && !strcmp(path + l - e, ext);
}

void notebook_init(struct notebook *nb)
{
	memset(nb, 0, sizeof(*nb));
	strbuf_init(&nb->text, 0);
}

/* Free one cell. */
static void cell_free(struct nb_cell *c)
{
	if (!c)
		return;
	cJSON_Delete(c->json);
	free(c->source);
	free(c->ran);
	outmodel_cell_free(c->view);
	free(c);
}

/* Forget the cells and the percent text (the file's name stays). */
static void cells_clear(struct notebook *nb)
{
	for (size_t i = 0; i < nb->ncells; i++)
		cell_free(nb->cells[i]);
	nb->ncells = 0;
	cJSON_Delete(nb->root);
	nb->root = NULL;
	strbuf_release(&nb->text);
	cellfile_percent_map_release(&nb->map);
	strbuf_release(&nb->raw);
	cellfile_cells_release(&nb->spans);
	nb->parsed = 0;
	nb->added_ids = 0;
}

void notebook_release(struct notebook *nb)
{
	cells_clear(nb);
	free(nb->cells);
	for (size_t i = 0; i < nb->ntrash; i++) {
		cJSON_Delete(nb->trash[i].json);
		free(nb->trash[i].ran);
	}
	for (size_t i = 0; i < nb->nclip; i++)
		cJSON_Delete(nb->clip[i]);
	free(nb->clip);
	free(nb->path);
	memset(nb, 0, sizeof(*nb));
}

/* Whether a code cell has outputs or a count: what it shows came from its source. */
static int has_run(const cJSON *cell)
{
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(cell, "outputs");
	return cJSON_GetArraySize(outs) > 0 ||
	       cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cell, "execution_count"));
}

/* Whether the cell's metadata asks for its outputs hidden (Jupyter's two ways). */
static int hidden_outputs(const cJSON *cell)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(cell, "metadata");
	const cJSON *jup = cJSON_GetObjectItemCaseSensitive(md, "jupyter");
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(md, "collapsed")) ||
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(jup, "outputs_hidden"));
}

/* Make room for one more cell at `at`. */
static void make_room(struct notebook *nb, size_t at)
{
	if (nb->ncells == nb->alloc) {
		nb->alloc = nb->alloc ? 2 * nb->alloc : 64;
		nb->cells = xrealloc(nb->cells, nb->alloc * sizeof(*nb->cells));
	}
	memmove(nb->cells + at + 1, nb->cells + at, (nb->ncells - at) * sizeof(*nb->cells));
	nb->ncells++;
}

/* Put cell tree `json` (taken over) at `at`; the new cell. */
static struct nb_cell *cell_put(struct notebook *nb, size_t at, cJSON *json, int orig)
{
	struct nb_cell *c = xcalloc(1, sizeof(*c));

	c->json = json;
	c->source = cellfile_join(cJSON_GetObjectItemCaseSensitive(json, "source"));
	c->ran = !strcmp(cellfile_cell_type(json), "code") && has_run(json) ?
		 xstrdup(c->source) : NULL;
	c->orig = orig;
	c->collapsed = hidden_outputs(json);
	make_room(nb, at);
	nb->cells[at] = c;
	return c;
}

/* Take the cells of tree `root` (taken over) as the notebook's. */
static void take_tree(struct notebook *nb, cJSON *root, int percent_orig)
{
	cJSON *cells = cJSON_DetachItemFromObjectCaseSensitive(root, "cells"), *cell;
	int k = 0;

	nb->root = root;
	while (cells && (cell = cells->child)) {
		cJSON_DetachItemViaPointer(cells, cell);
		cell_put(nb, nb->ncells, cell, percent_orig ? k : -1);
		k++;
	}
	cJSON_Delete(cells);
	if (!nb->ncells)
		cell_put(nb, 0, cellfile_add_cell(NULL, "code", ""), -1);
}

/* Parse the cells that wait, up to the `upto`th; -1 with `err` at the first bad one. */
static int parse_cells(struct notebook *nb, size_t upto, const char *name, struct strbuf *err)
{
	for (; nb->parsed < upto && nb->parsed < nb->spans.n; nb->parsed++) {
		const struct cellfile_range *r = &nb->spans.cells[nb->parsed];
		cJSON *cell = cJSON_ParseWithLength(nb->raw.buf + r->off, r->len);
		int rc = cell ? cellfile_check_cell(cell, (int)nb->parsed + 1, name, err) : -1;

		if (rc < 0) {
			cJSON_Delete(cell);
			return -1;
		}
		nb->added_ids |= rc;
		cell_put(nb, nb->ncells, cell, -1);
	}
	return 0;
}

/*
 * A notebook's text: the top level without its cells parsed at once, the first `first` cells
 * too; the others wait in nb->raw. -1 (nothing kept) when that does not work out: the whole
 * parse then says what is wrong.
 */
static int parse_first(struct notebook *nb, const struct strbuf *text, const char *name,
		       size_t first, struct strbuf *err)
{
	struct strbuf rest = STRBUF_INIT, quiet = STRBUF_INIT;
	cJSON *root;

	if (cellfile_ipynb_cells(text->buf, text->len, &nb->spans) < 0)
		return -1;
	strbuf_add(&rest, text->buf, nb->spans.open + 1);
	strbuf_add(&rest, text->buf + nb->spans.close, text->len - nb->spans.close);
	root = cellfile_parse_ipynb(rest.buf, rest.len, name, &quiet);
	strbuf_release(&rest);
	strbuf_release(&quiet);
	if (!root) {
		cellfile_cells_release(&nb->spans);
		return -1;
	}
	cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(root, "cells"));
	nb->root = root;
	strbuf_add(&nb->raw, text->buf, text->len);
	if (parse_cells(nb, first, name, err) < 0) {
		cells_clear(nb);
		strbuf_reset(err);
		return -1;
	}
	return 0;
}

int notebook_open_rest(struct notebook *nb, struct strbuf *err)
{
	const cJSON *minor;

	if (!nb->raw.len)
		return 0;
	if (parse_cells(nb, nb->spans.n, nb->path, err) < 0) {
		cJSON *whole;
		strbuf_reset(err);
		whole = cellfile_parse_ipynb(nb->raw.buf, nb->raw.len, nb->path, err);
		if (!whole)
			return -1;
		/* The parts did not parse but the whole does: take the whole. */
		cells_clear(nb);
		take_tree(nb, whole, 0);
		return 0;
	}
	minor = cJSON_GetObjectItemCaseSensitive(nb->root, "nbformat_minor");
	if (nb->added_ids && cJSON_IsNumber(minor) && minor->valuedouble < 5)
		cJSON_ReplaceItemInObjectCaseSensitive(nb->root, "nbformat_minor",
						       cJSON_CreateNumber(5));
	if (!nb->ncells)
		cell_put(nb, 0, cellfile_add_cell(NULL, "code", ""), -1);
	strbuf_release(&nb->raw);
	cellfile_cells_release(&nb->spans);
	nb->parsed = 0;
	return 0;
}

size_t notebook_total(const struct notebook *nb)
{
	return nb->raw.len ? nb->ncells + (nb->spans.n - nb->parsed) : nb->ncells;
}

/* Parse `text` (taken over when percent) as the notebook's format, the first `first` cells
   of a notebook now (all: SIZE_MAX). 0 or -1 with `err`. */
static int parse_text(struct notebook *nb, struct strbuf *text, const char *name,
		      size_t first, struct strbuf *err)
{
	cJSON *root;

	if (nb->format == NB_IPYNB) {
		if (parse_first(nb, text, name, first, err) == 0) {
			strbuf_release(text);
			return first == SIZE_MAX ? notebook_open_rest(nb, err) : 0;
		}
		root = cellfile_parse_ipynb(text->buf, text->len, name, err);
		if (!root)
			return -1;
		take_tree(nb, root, 0);
		strbuf_release(text);
		return 0;
	}
	root = cellfile_parse_percent_map(text->buf, text->len, &nb->map);
	nb->text = *text;
	strbuf_init(text, 0);
	take_tree(nb, root, 1);
	if (nb->map.ncells != nb->ncells)	/* (an empty text made one cell of its own) */
		for (size_t i = 0; i < nb->ncells; i++)
			nb->cells[i]->orig = -1;
	return 0;
}

int notebook_open(struct notebook *nb, const char *path, struct strbuf *err)
{
	int rc = notebook_open_first(nb, path, SIZE_MAX, err);

	return rc < 0 ? rc : notebook_open_rest(nb, err) < 0 ? -1 : rc;
}

int notebook_open_first(struct notebook *nb, const char *path, size_t first, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	const char *start;
	struct stat st;

	cells_clear(nb);
	free(nb->path);
	nb->path = xstrdup(path);
	nb->format = notebook_format_of(path);
	nb->dirty = nb->is_new = 0;
	if (stat(path, &st) < 0 && errno == ENOENT) {
		nb->is_new = 1;
		nb->have_stat = 0;
		take_tree(nb, cellfile_new_notebook(), 0);
		return 1;
	}
	if (cellfile_read(path, &text, err) < 0) {
		strbuf_release(&text);
		return -1;
	}
	/* As cellfile_load decides: JSON is a notebook unless the name says .py. */
	start = text.buf + strspn(text.buf, " \t\r\n");
	if (*start == '{' && !has_ext(path, ".py"))
		nb->format = NB_IPYNB;
	if (parse_text(nb, &text, path, first, err) < 0) {
		strbuf_release(&text);
		return -1;
	}
	notebook_note_stat(nb);
	return 0;
}

const char *notebook_cell_type(const struct nb_cell *c)
{
	return cellfile_cell_type(c->json);
}

int notebook_cell_count(const struct nb_cell *c)
{
	long long n;

	return json_integer(cJSON_GetObjectItemCaseSensitive(c->json, "execution_count"), 1,
			    INT_MAX, &n) ? (int)n : 0;
}

int notebook_cell_changed(const struct nb_cell *c)
{
	return c->ran && strcmp(c->ran, c->source) != 0;
}

void notebook_cell_stale(struct nb_cell *c)
{
	c->rows_width = 0;
}

/* The notebook changed. */
static void touched(struct notebook *nb)
{
	nb->dirty = 1;
	nb->changed_at = clock_now();
}

size_t notebook_insert(struct notebook *nb, size_t at, const char *type, const char *source)
{
	if (at > nb->ncells)
		at = nb->ncells;
	cell_put(nb, at, cellfile_add_cell(NULL, type, source), -1);
	touched(nb);
	return at;
}

void notebook_delete(struct notebook *nb, size_t at)
{
	struct nb_cell *c;

	if (at >= nb->ncells)
		return;
	c = nb->cells[at];
	if (nb->ntrash == NOTEBOOK_TRASH_MAX) {
		cJSON_Delete(nb->trash[0].json);
		free(nb->trash[0].ran);
		memmove(nb->trash, nb->trash + 1, (NOTEBOOK_TRASH_MAX - 1) * sizeof(nb->trash[0]));
		nb->ntrash--;
	}
	nb->trash[nb->ntrash].json = c->json;
	nb->trash[nb->ntrash].ran = c->ran;
	nb->trash[nb->ntrash].at = at;
	nb->ntrash++;
	c->json = NULL;
	c->ran = NULL;
	cell_free(c);
	memmove(nb->cells + at, nb->cells + at + 1, (nb->ncells - at - 1) * sizeof(*nb->cells));
	nb->ncells--;
	if (!nb->ncells)	/* as Jupyter: deleting the last cell leaves an empty one */
		cell_put(nb, 0, cellfile_add_cell(NULL, "code", ""), -1);
	touched(nb);
}

long notebook_undelete(struct notebook *nb)
{
	size_t at;
	struct nb_cell *c;

	if (!nb->ntrash)
		return -1;
	nb->ntrash--;
	at = nb->trash[nb->ntrash].at;
	if (at > nb->ncells)
		at = nb->ncells;
	c = cell_put(nb, at, nb->trash[nb->ntrash].json, -1);
	free(c->ran);
	c->ran = nb->trash[nb->ntrash].ran;
	touched(nb);
	return (long)at;
}

size_t notebook_move(struct notebook *nb, size_t at, int dir)
{
	size_t to;
	struct nb_cell *c;

	if (at >= nb->ncells || (dir < 0 && at == 0) || (dir > 0 && at + 1 >= nb->ncells))
		return at;
	to = dir < 0 ? at - 1 : at + 1;
	c = nb->cells[at];
	nb->cells[at] = nb->cells[to];
	nb->cells[to] = c;
	touched(nb);
	return to;
}

/* The cell changed: the notebook has something to save, the view to draw again. */
static void changed(struct notebook *nb, struct nb_cell *c)
{
	c->rows_width = 0;
	touched(nb);
}

void notebook_set_type(struct notebook *nb, size_t at, const char *type)
{
	struct nb_cell *c;
	cJSON *j;

	if (at >= nb->ncells || !strcmp(notebook_cell_type(nb->cells[at]), type))
		return;
	c = nb->cells[at];
	j = c->json;
	cJSON_ReplaceItemInObjectCaseSensitive(j, "cell_type", cJSON_CreateString(type));
	if (!strcmp(type, "code")) {
		cJSON_AddNullToObject(j, "execution_count");
		cJSON_AddArrayToObject(j, "outputs");
	} else {
		cJSON_DeleteItemFromObjectCaseSensitive(j, "execution_count");
		cJSON_DeleteItemFromObjectCaseSensitive(j, "outputs");
		free(c->ran);
		c->ran = NULL;
		outmodel_cell_free(c->view);
		c->view = NULL;
	}
	c->orig = -1;		/* its marker line says another type: written anew */
	changed(nb, c);
}

void notebook_set_source(struct notebook *nb, size_t at, const char *source)
{
	struct nb_cell *c;

	if (at >= nb->ncells || !strcmp(nb->cells[at]->source, source))
		return;
	c = nb->cells[at];
	cJSON_ReplaceItemInObjectCaseSensitive(c->json, "source", cellfile_lines(source));
	free(c->source);
	c->source = xstrdup(source);
	c->edited = 1;
	changed(nb, c);
}

void notebook_set_outputs(struct notebook *nb, size_t at, cJSON *outputs, int count)
{
	struct nb_cell *c;

	if (at >= nb->ncells || strcmp(notebook_cell_type(nb->cells[at]), "code")) {
		cJSON_Delete(outputs);
		return;
	}
	c = nb->cells[at];
	cJSON_ReplaceItemInObjectCaseSensitive(c->json, "outputs",
					       outputs ? outputs : cJSON_CreateArray());
	cJSON_ReplaceItemInObjectCaseSensitive(c->json, "execution_count", count > 0 ?
					       cJSON_CreateNumber(count) : cJSON_CreateNull());
	free(c->ran);
	c->ran = xstrdup(c->source);
	changed(nb, c);
}

void notebook_clear_outputs(struct notebook *nb, size_t at)
{
	struct nb_cell *c;

	if (at >= nb->ncells || strcmp(notebook_cell_type(nb->cells[at]), "code"))
		return;
	c = nb->cells[at];
	if (!has_run(c->json) && !c->view)
		return;
	cJSON_ReplaceItemInObjectCaseSensitive(c->json, "outputs", cJSON_CreateArray());
	cJSON_ReplaceItemInObjectCaseSensitive(c->json, "execution_count", cJSON_CreateNull());
	free(c->ran);
	c->ran = NULL;
	outmodel_cell_free(c->view);
	c->view = NULL;
	changed(nb, c);
}

void notebook_copy(struct notebook *nb, size_t at, int cut)
{
	if (at >= nb->ncells)
		return;
	for (size_t i = 0; i < nb->nclip; i++)
		cJSON_Delete(nb->clip[i]);
	nb->clip = xrealloc(nb->clip, sizeof(*nb->clip));
	nb->clip[0] = cJSON_Duplicate(nb->cells[at]->json, 1);
	nb->nclip = 1;
	if (cut)
		notebook_delete(nb, at);
}

size_t notebook_paste(struct notebook *nb, size_t at)
{
	if (at > nb->ncells)
		at = nb->ncells;
	for (size_t i = 0; i < nb->nclip; i++) {
		cJSON *copy = cJSON_Duplicate(nb->clip[i], 1);
		cJSON *fresh = cellfile_add_cell(NULL, "raw", "");

		cJSON_ReplaceItemInObjectCaseSensitive(copy, "id", cJSON_DetachItemFromObjectCaseSensitive(
								     fresh, "id"));
		cJSON_Delete(fresh);
		cell_put(nb, at + i, copy, -1);
	}
	if (nb->nclip)
		touched(nb);
	return nb->nclip;
}

long notebook_find(const struct notebook *nb, size_t from, int dir, const char *text)
{
	size_t n = nb->ncells;

	if (!*text || !n)
		return -1;
	for (size_t k = 1; k <= n; k++) {
		size_t i = dir < 0 ? (from + n - k % n) % n : (from + k) % n;
		if (strcasestr(nb->cells[i]->source, text))
			return (long)i;
	}
	return -1;
}

/* ---- recovery ---- */

int notebook_recover(struct notebook *nb, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	char *path = notebook_recovery_path(nb);
	char *keep = xstrdup(nb->path);
	enum nb_format format = nb->format;
	int is_new = nb->is_new, have = nb->have_stat, rc = -1;
	struct notebook fresh;

	if (cellfile_read(path, &text, err) < 0)
		goto out;
	notebook_init(&fresh);
	fresh.path = keep;
	fresh.format = format;
	keep = NULL;
	if (parse_text(&fresh, &text, path, SIZE_MAX, err) < 0) {
		notebook_release(&fresh);
		goto out;
	}
	/* The recovered cells in place of the file's; the file's identity stays. */
	cells_clear(nb);
	free(nb->cells);
	nb->cells = fresh.cells;
	nb->ncells = fresh.ncells;
	nb->alloc = fresh.alloc;
	nb->root = fresh.root;
	nb->text = fresh.text;
	nb->map = fresh.map;
	free(fresh.path);
	nb->is_new = is_new;
	nb->have_stat = have;
	touched(nb);
	rc = 0;
out:
	strbuf_release(&text);
	free(keep);
	free(path);
	return rc;
}
