/*
 * A notebook's file: its format and identity, writing it in the format read (tmp + rename, the
 * file on disk checked), autosave and the recovery file.
 */
#include "notebook.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "notebook_priv.h"

/* ---- the file ---- */

/* Whether `path` ends with `ext`. */
static int has_ext(const char *path, const char *ext)
{
	size_t l = strlen(path), e = strlen(ext);
	return l >= e && !strcmp(path + l - e, ext);
}

/* The format a file name asks for. */
enum nb_format notebook_format_of(const char *path)
{
	return has_ext(path, ".ipynb") ? NB_IPYNB : NB_PERCENT;
}

/* Remember the file's identity, to see later whether someone else changed it. */
void notebook_note_stat(struct notebook *nb)
{
	struct stat st;

	nb->have_stat = stat(nb->path, &st) == 0;
	if (nb->have_stat) {
		nb->dev = st.st_dev;
		nb->ino = st.st_ino;
		nb->size = st.st_size;
		nb->mtime = st.st_mtim;
	}
}

/* ---- writing ---- */

/* The notebook as nbformat writes it: the cells put back into the tree for the write. */
static void write_ipynb(const struct notebook *nb, struct strbuf *out)
{
	cJSON *cells = cJSON_CreateArray();

	for (size_t i = 0; i < nb->ncells; i++)
		cJSON_AddItemReferenceToArray(cells, nb->cells[i]->json);
	cJSON_AddItemToObject(nb->root, "cells", cells);
	cellfile_write_ipynb(nb->root, out);
	cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(nb->root, "cells"));
}

/* Make `out` end with a blank line before the next cell (unless it is empty). */
static void blank_line(struct strbuf *out)
{
	if (!out->len)
		return;
	if (out->buf[out->len - 1] != '\n')
		strbuf_addch(out, '\n');
	if (out->len < 2 || out->buf[out->len - 2] != '\n')
		strbuf_addch(out, '\n');
}

/*
 * The notebook as a percent script: the header as read, then each cell as read when it did
 * not change (its marker line, blank lines and all), else as cellfile writes it. A cell read
 * without a marker (text before the first one) can only be written as read in first place.
 */
static void write_percent(const struct notebook *nb, struct strbuf *out)
{
	int prev = -2;		/* the file index of the cell written before, -1: not as read */

	if (nb->map.header <= nb->text.len)
		strbuf_add(out, nb->text.buf, nb->map.header);
	for (size_t i = 0; i < nb->ncells; i++) {
		const struct nb_cell *c = nb->cells[i];
		int o = c->orig;
		const struct cellfile_percent_span *sp =
			o >= 0 && (size_t)o < nb->map.ncells ? &nb->map.cells[o] : NULL;

		if (sp && !sp->marker && (i > 0 || c->edited))
			sp = NULL;
		if (sp && c->edited && sp->off + sp->len <= nb->text.len) {
			/* Only its source changed: its marker line and blank lines as they were. */
			const char *t = nb->text.buf + sp->off, *nl = memchr(t, '\n', sp->len);
			size_t marker = nl ? (size_t)(nl - t) + 1 : sp->len, end = sp->len, body;
			struct strbuf cell = STRBUF_INIT;

			while (end > marker && t[end - 1] == '\n' && end >= 2 && t[end - 2] == '\n')
				end--;		/* the blank lines after its last line */
			if (!((prev >= 0 && prev == o - 1) || (prev == -2 && o == 0)))
				blank_line(out);
			strbuf_add(out, t, marker);
			cellfile_write_percent_cell(c->json, &cell);
			body = strcspn(cell.buf, "\n");
			if (cell.buf[body])
				strbuf_addstr(out, cell.buf + body + 1);
			strbuf_add(out, t + end, sp->len - end);
			strbuf_release(&cell);
			prev = o;
		} else if (sp && sp->off + sp->len <= nb->text.len) {
			/* Next to the cell it followed in the file, it carries its own blank lines. */
			if (!((prev >= 0 && prev == o - 1) || (prev == -2 && o == 0)))
				blank_line(out);
			strbuf_add(out, nb->text.buf + sp->off, sp->len);
			prev = o;
		} else {
			blank_line(out);
			cellfile_write_percent_cell(c->json, out);
			prev = -1;
		}
	}
}

void notebook_serialize(const struct notebook *nb, struct strbuf *out)
{
	if (nb->format == NB_IPYNB)
		write_ipynb(nb, out);
	else
		write_percent(nb, out);
}

int notebook_disk_changed(const struct notebook *nb)
{
	struct stat st;

	if (stat(nb->path, &st) < 0)
		return nb->have_stat;	/* gone (or unreadable) since */
	return !nb->have_stat || st.st_dev != nb->dev || st.st_ino != nb->ino ||
	       st.st_size != nb->size || st.st_mtim.tv_sec != nb->mtime.tv_sec ||
	       st.st_mtim.tv_nsec != nb->mtime.tv_nsec;
}

/* After a percent save: what was written is the text read, cell i its span i. */
static void percent_rebase(struct notebook *nb, struct strbuf *written)
{
	cJSON *again;

	strbuf_release(&nb->text);
	cellfile_percent_map_release(&nb->map);
	nb->text = *written;
	strbuf_init(written, 0);
	again = cellfile_parse_percent_map(nb->text.buf, nb->text.len, &nb->map);
	cJSON_Delete(again);
	for (size_t i = 0; i < nb->ncells; i++) {
		nb->cells[i]->orig = nb->map.ncells == nb->ncells ? (int)i : -1;
		nb->cells[i]->edited = 0;
	}
}

int notebook_save(struct notebook *nb, const char *path, int force, struct strbuf *err)
{
	struct strbuf data = STRBUF_INIT;
	const char *target = path ? path : nb->path;
	int other = path && strcmp(path, nb->path);
	mode_t mode = 0644;
	struct stat st;
	int rc = -1;

	if (!other && !force && !nb->is_new && notebook_disk_changed(nb)) {
		strbuf_addf(err, "'%s' changed on disk since it was read: ':w!' writes over it, "
			    "':e!' reads it again", target);
		return -2;
	}
	if (stat(target, &st) == 0)
		mode = st.st_mode & 07777;
	if (other) {
		notebook_discard_recovery(nb);
		free(nb->path);
		nb->path = xstrdup(path);
		nb->format = notebook_format_of(path);
		nb->is_new = 1;
	}
	strbuf_init(&data, 0);
	notebook_serialize(nb, &data);
	if (fsutil_write_atomic(nb->path, data.buf, data.len, mode, err) < 0)
		goto out;
	notebook_note_stat(nb);
	nb->dirty = 0;
	nb->is_new = 0;
	notebook_discard_recovery(nb);
	if (nb->format == NB_PERCENT)
		percent_rebase(nb, &data);
	rc = 0;
out:
	strbuf_release(&data);
	return rc;
}

/* ---- recovery ---- */

char *notebook_recovery_path(const struct notebook *nb)
{
	char *copy = xstrdup(nb->path), *copy2 = xstrdup(nb->path);
	char *path = xasprintf("%s/.%s.cellbox-recover", dirname(copy), basename(copy2));

	free(copy);
	free(copy2);
	return path;
}

int notebook_autosave(struct notebook *nb, struct strbuf *err)
{
	struct strbuf data = STRBUF_INIT;
	char *path;
	int rc;

	if (!nb->dirty)
		return 0;
	path = notebook_recovery_path(nb);
	notebook_serialize(nb, &data);
	rc = fsutil_write_atomic(path, data.buf, data.len, 0600, err);
	if (rc == 0)
		nb->autosaved_at = clock_now();
	strbuf_release(&data);
	free(path);
	return rc;
}

int notebook_has_recovery(const struct notebook *nb)
{
	char *path = notebook_recovery_path(nb);
	struct stat st, file;
	int rc = lstat(path, &st) == 0 && S_ISREG(st.st_mode);

	if (rc && stat(nb->path, &file) == 0)
		rc = st.st_mtim.tv_sec > file.st_mtim.tv_sec ||
		     (st.st_mtim.tv_sec == file.st_mtim.tv_sec &&
		      st.st_mtim.tv_nsec >= file.st_mtim.tv_nsec);
	free(path);
	return rc;
}

void notebook_discard_recovery(const struct notebook *nb)
{
	char *path = notebook_recovery_path(nb);

	unlink(path);
	free(path);
}
