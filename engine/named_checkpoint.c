/*
 * Checkpoints of named sessions as this machine can make them: the cells the session's kernel
 * ran since it started, written to a file, and a restore that runs them again in a fresh
 * kernel. Not a memory checkpoint (CRIU does not run on this kernel, and runc containers and
 * local kernels have no other way): it says so, in the file and to the user. A checkpoint
 * file is outside input when it is restored: read without blocking (a regular file, within
 * NAMED_CKPT_MAX), every member type-checked, the cells capped. See named.h.
 */
#include "named_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "util.h"

int named_checkpoint(const char *runtime, const char *name, const char *path,
		     size_t *ncells, struct strbuf *err)
{
	cJSON *msg = cJSON_CreateObject(), *r;
	const cJSON *cells;
	int rc;

	cJSON_AddStringToObject(msg, "t", "cells");
	if (!(r = named_ask(runtime, name, msg, 60.0, err)))
		return -1;
	cells = cJSON_GetObjectItemCaseSensitive(r, "cells");
	if (!named_str(r, "name"))
		cJSON_AddStringToObject(r, "name", name);
	*ncells = (size_t)cJSON_GetArraySize(cells);
	rc = named_checkpoint_write(path, r, cells, err);
	cJSON_Delete(r);
	return rc;
}

int named_checkpoint_write(const char *path, const cJSON *status, const cJSON *cells,
			   struct strbuf *err)
{
	cJSON *out = cJSON_CreateObject();
	const char *kernel = named_str(status, "kernel"), *backend = named_str(status, "backend");
	char *text;
	int rc;

	cJSON_AddNumberToObject(out, "cellbox_checkpoint", NAMED_CKPT_VERSION);
	cJSON_AddStringToObject(out, "kind", "rerun");
	cJSON_AddStringToObject(out, "note", "the kernel's memory is not in this file: restoring "
				"runs these cells again in a fresh kernel");
	cJSON_AddStringToObject(out, "name", named_str(status, "name") ? named_str(status, "name")
				: "");
	cJSON_AddStringToObject(out, "kernel", kernel ? kernel : "python");
	cJSON_AddStringToObject(out, "backend", backend ? backend : "");
	cJSON_AddNumberToObject(out, "created", clock_wall());
	cJSON_AddItemToObject(out, "cells", cJSON_IsArray(cells) ? cJSON_Duplicate(cells, 1)
			      : cJSON_CreateArray());
	text = cJSON_Print(out);
	rc = fsutil_write_atomic(path, text, strlen(text), 0600, err) == 0 ? 0 : -1;
	cJSON_free(text);
	cJSON_Delete(out);
	return rc;
}

/* The file at `path` into `out`: a regular file, not blocking, at most NAMED_CKPT_MAX. */
static int read_file(const char *path, struct strbuf *out, struct strbuf *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	int rc = -1;

	if (fd < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		strbuf_addf(err, "'%s' is not a checkpoint file (not a regular file)", path);
	else if (st.st_size > NAMED_CKPT_MAX)
		strbuf_addf(err, "'%s' is not a checkpoint file (over %u MiB)", path,
			    NAMED_CKPT_MAX >> 20);
	else if (strbuf_read_fd(out, fd, NAMED_CKPT_MAX + 1) < 0 || out->len > NAMED_CKPT_MAX)
		strbuf_addf(err, "cannot read '%s'", path);
	else
		rc = 0;
	close(fd);
	return rc;
}

int named_checkpoint_parse(const char *text, size_t len, const char *what,
			   struct named_ckpt *ck, struct strbuf *err)
{
	const cJSON *v, *cells, *cell;
	cJSON *root;
	size_t bytes = 0, n = 0;
	int rc = -1;

	memset(ck, 0, sizeof(*ck));
	root = cJSON_ParseWithLength(text, len);
	v = cJSON_GetObjectItemCaseSensitive(root, "cellbox_checkpoint");
	if (!cJSON_IsObject(root) || !cJSON_IsNumber(v)) {
		strbuf_addf(err, "'%s' is not a checkpoint file of cellbox", what);
		goto out;
	}
	if (v->valuedouble != NAMED_CKPT_VERSION || !named_str(root, "kind") ||
	    strcmp(named_str(root, "kind"), "rerun")) {
		strbuf_addf(err, "'%s': a checkpoint this cellbox cannot restore (version or kind)",
			    what);
		goto out;
	}
	cells = cJSON_GetObjectItemCaseSensitive(root, "cells");
	if (!cJSON_IsArray(cells) || cJSON_GetArraySize(cells) > NAMED_RERUN_CELLS) {
		strbuf_addf(err, "'%s': its cells are not a list of at most %d", what,
			    NAMED_RERUN_CELLS);
		goto out;
	}
	ck->code = xcalloc((size_t)cJSON_GetArraySize(cells) + 1, sizeof(*ck->code));
	cJSON_ArrayForEach(cell, cells) {
		const char *code = named_str(cell, "code");

		if (!code || !utf8_valid(code, strlen(code), NULL) ||
		    (bytes += strlen(code)) > NAMED_RERUN_BYTES) {
			strbuf_addf(err, "'%s': cell %zu is not text (or the cells pass %u MiB)", what,
				    n + 1, NAMED_RERUN_BYTES >> 20);
			goto out;
		}
		ck->code[n++] = xstrdup(code);
	}
	ck->ncells = n;
	if (named_str(root, "name") && named_name_ok(named_str(root, "name")))
		ck->name = xstrdup(named_str(root, "name"));
	if (named_str(root, "kernel"))
		ck->kernel = xstrdup(named_str(root, "kernel"));
	rc = 0;
out:
	if (rc < 0)
		named_checkpoint_free(ck);
	cJSON_Delete(root);
	return rc;
}

/* A re-run cell's end: whether it raised. */
static void on_rerun_done(struct session *s, const struct session_event *ev, void *data)
{
	(void)s;
	if (ev->type == SESSION_EV_DONE && ev->done.status != SESSION_STATUS_OK)
		++*(int *)data;
}

size_t named_checkpoint_rerun(struct session *s, const struct named_ckpt *ck, double timeout,
			      int (*wait)(struct session *s, unsigned long id),
			      void (*each)(size_t i, size_t n), int *raised, struct strbuf *err)
{
	for (size_t i = 0; i < ck->ncells; i++) {
		unsigned long id;

		if (each)
			each(i, ck->ncells);
		id = session_execute(s, ck->code[i], 0, timeout, on_rerun_done, raised, err);
		if (!id) {
			strbuf_addf(err, " (cell %zu of %zu)", i + 1, ck->ncells);
			return i;
		}
		if (wait && wait(s, id)) {
			strbuf_addf(err, "%scell %zu of %zu stopped", err->len ? "; " : "", i + 1,
				    ck->ncells);
			return i;
		}
		while (!wait && session_pending(s, id))
			session_wait(s, id);
	}
	return ck->ncells;
}

int named_checkpoint_load(const char *path, struct named_ckpt *ck, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	int rc;

	memset(ck, 0, sizeof(*ck));
	rc = read_file(path, &text, err) < 0 ? -1 :
	     named_checkpoint_parse(text.buf, text.len, path, ck, err);
	strbuf_release(&text);
	return rc;
}

void named_checkpoint_free(struct named_ckpt *ck)
{
	for (size_t i = 0; ck->code && ck->code[i]; i++)
		free(ck->code[i]);
	free(ck->code);
	free(ck->name);
	free(ck->kernel);
	memset(ck, 0, sizeof(*ck));
}
