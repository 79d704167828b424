/* Files into and out of the sandbox, through the channel: one way for every front end. */
#include "files.h"
#include "cellrun.h"
#include "wall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_UNCAPPED ((size_t)1 << 40)	/* what the helper copies when the quota is the cap */

/* The last path component. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* Say "cannot copy SRC into|out of the sandbox: " before `err` (`unnamed`: unless it names SRC). */
static void err_prefix(struct strbuf *err, const char *src, const char *way, int unnamed)
{
	struct strbuf msg = STRBUF_INIT;

	if (!err->len || (unnamed && strstr(err->buf, src)))
		return;
	strbuf_addf(&msg, "cannot copy '%s' %s the sandbox: %s", src, way, err->buf);
	strbuf_reset(err);
	strbuf_addstr(err, msg.buf);
	strbuf_release(&msg);
}

void files_parse_spec(const char *spec, char **src, char **dst)
{
	const char *colon = strchr(spec, ':');

	*src = colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
	*dst = colon && colon[1] ? xstrdup(colon + 1) : NULL;
}

/* The helper cell of `body` with s and d the strings `from` and `to`, and n the digits `n`. */
static char *helper_code(struct session *s, const char *body, const char *from, const char *to,
			 const char *n)
{
	const struct kernel_def *k = session_kernel(s);
	const char *names[] = { "s", "d", n ? "n" : NULL, NULL }, *values[3];
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	char *code;

	kernel_literal(&a, from);
	kernel_literal(&b, to);
	values[0] = a.buf;
	values[1] = b.buf;
	values[2] = n;
	code = k->helper_cell(body, names, values);
	strbuf_release(&a);
	strbuf_release(&b);
	return code;
}

int files_in_begin(struct session *s, const void *data, size_t len, const char *dst,
		   struct files_move *m, struct strbuf *err)
{
	char rnd[17], *staged;

	memset(m, 0, sizeof(*m));
	if (!session_kernel(s)->helper_cell) {
		strbuf_addf(err, "the kernel %s cannot copy files (no helper cells in its language)",
			    session_kernel(s)->name);
		return -1;
	}
	/* Staged in the host part, which the kernel reads but cannot change, under a name it
	   cannot guess; ours to remove (files_move_release). */
	random_hex(rnd, 8);
	m->name = xasprintf("files/copy-in-%s", rnd);
	if (session_write_file(s, m->name, data, len, err) < 0) {
		free(m->name);
		m->name = NULL;
		return -1;
	}
	staged = xasprintf("%s/host/%s", session_channel_dir(s), m->name);
	m->code = helper_code(s, session_kernel(s)->copy_in, staged, dst, NULL);
	free(staged);
	return 0;
}

int files_out_begin(struct session *s, const char *src, size_t max, struct files_move *m,
		    struct strbuf *err)
{
	char rnd[17], n[32], *staged;

	memset(m, 0, sizeof(*m));
	if (!session_kernel(s)->helper_cell) {
		strbuf_addf(err, "the kernel %s cannot copy files (no helper cells in its language)",
			    session_kernel(s)->name);
		return -1;
	}
	m->out = 1;
	m->max = max;
	/* Staged in the kernel part, under a name it cannot guess; taken by the wall's rules. */
	random_hex(rnd, 8);
	m->name = xasprintf("copy-out-%s", rnd);
	staged = xasprintf("%s/kernel/out/%s", session_channel_dir(s), m->name);
	snprintf(n, sizeof(n), "%zu", max ? max : OUT_UNCAPPED);
	m->code = helper_code(s, session_kernel(s)->copy_out, src, staged, n);
	free(staged);
	return 0;
}

int files_out_end(struct session *s, struct files_move *m, struct strbuf *data, const char *dst,
		  struct strbuf *err)
{
	int rc;

	if (!m->out || !m->name) {
		strbuf_addstr(err, "nothing was copied out");
		return -1;
	}
	rc = session_take_file(s, m->name, m->max, dst, data, err);	/* and removes it */
	free(m->name);
	m->name = NULL;
	return rc;
}

void files_move_release(struct session *s, struct files_move *m)
{
	if (s && m->name && m->out)
		session_take_file(s, m->name, 0, NULL, NULL, NULL);
	else if (s && m->name)
		session_remove_file(s, m->name);
	free(m->code);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

int files_copy_in(struct session *s, const char *src, const char *dst, struct strbuf *err)
{
	struct files_move m = { 0 };
	struct strbuf data = STRBUF_INIT;
	struct stat st;
	int rc = -1;

	if (stat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "cannot copy '%s' in: it is a directory (copy files)", src);
		goto out;
	}
	if (strbuf_read_file(&data, src, STRBUF_DEFAULT_MAX / 2) < 0) {
		strbuf_addf(err, "cannot read '%s': %s", src, strerror(errno));
		goto out;
	}
	if (files_in_begin(s, data.buf, data.len, dst ? dst : base_name(src), &m, err) < 0)
		goto out;
	rc = cellrun_silent(s, m.code, err);
out:
	if (rc < 0)
		err_prefix(err, src, "into", 1);
	files_move_release(s, &m);
	strbuf_release(&data);
	return rc;
}

int files_copy_out(struct session *s, const char *src, const char *dst, struct strbuf *err)
{
	struct files_move m = { 0 };
	char *target = NULL;
	struct stat st;
	int rc = -1;

	if (files_out_begin(s, src, 0, &m, err) < 0 || cellrun_silent(s, m.code, err) < 0)
		goto out;
	if (!dst)
		target = xstrdup(base_name(src));
	else if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
		target = xasprintf("%s/%s", dst, base_name(src));
	else
		target = xstrdup(dst);
	rc = files_out_end(s, &m, NULL, target, err);
out:
	if (rc < 0)
		err_prefix(err, src, "out of", 0);
	files_move_release(s, &m);
	free(target);
	return rc;
}
